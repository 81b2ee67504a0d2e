#!/usr/bin/env bash
# Reproduces models/policies/placeto.pt: generates the training graphs (seeds 1 and 2 of the five
# families of docs/families.md, listed by hash in placeto_train.sha256; seed 3 is held out for the
# benchmark) and trains on them on one core, 213 updates of 8 episodes on 60 graphs x 3 clusters
# (the bundled policy: 856 CPU s; the learning rate is constant, so a run cut short by --seconds
# and this one with its update count are the same). Extra arguments go to dplace train.
# Usage: bash models/policies/train_placeto.sh [DPLACE] [OUT] [TRAIN ARGS...]
set -euo pipefail
dplace=${1:-build/release/dplace}
out=${2:-models/policies/placeto.pt}
graphs=$(mktemp -d)
trap 'rm -rf "$graphs"' EXIT
source "$(dirname "$0")/training_graphs.sh"
training_graphs "$dplace" "$graphs" "$graphs" 8 4
OMP_NUM_THREADS=1 "$dplace" train --method placeto --graphs "$graphs" \
  --cluster k80x4 --cluster v100x8-nvlink --cluster hetero \
  --updates "${UPDATES:-213}" --episodes 8 --seed 1 --lr 3e-3 --lr-end 3e-3 --discount 0.9 \
  --out "$out" --log "${out%.pt}_curve.csv" "${@:3}"
