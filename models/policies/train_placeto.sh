#!/usr/bin/env bash
# Reproduces models/policies/placeto.pt: generates the training graphs (seeds 1 and 2 of the five
# families of docs/families.md, listed by hash in placeto_train.sha256; seed 3 is held out for the
# benchmark) and trains on them on one core, on 60 graphs x 3 clusters, in two stages
# (docs/learned.md, "Learning inside the search"):
#  1. imitation of the search: each problem labelled with mcmc's best placement at 4,000
#     evaluations (cached in $LABELS when set), episodes from the label and from the searches'
#     start moved by up to 32 random unit moves, 300 updates of 8 episodes, lr 3e-3;
#  2. REINFORCE from a mix of starts (random, fastest device, the searches' start moved by up to 32
#     random unit moves, so that keeping the start earns nothing), 100 updates of 8 episodes,
#     lr 1e-3, discount 0.9.
# (The policy bundled before was REINFORCE from the searches' start alone, 213 updates: it learned
# to keep its start.) Extra arguments go to both dplace train runs.
# Usage: bash models/policies/train_placeto.sh [DPLACE] [OUT] [TRAIN ARGS...]
set -euo pipefail
dplace=${1:-build/release/dplace}
out=${2:-models/policies/placeto.pt}
graphs=$(mktemp -d)
trap 'rm -rf "$graphs"' EXIT
source "$(dirname "$0")/training_graphs.sh"
training_graphs "$dplace" "$graphs" "$graphs" 8 4
train=("$dplace" train --method placeto --graphs "$graphs" --cluster k80x4
  --cluster v100x8-nvlink --cluster hetero --episodes 8 --seed 1 --perturb 32)
OMP_NUM_THREADS=1 "${train[@]}" --updates "${IMITATION_UPDATES:-300}" --lr 3e-3 --lr-end 3e-3 \
  --imitate 4000 --labels "${LABELS:-$graphs/labels}" --out "$graphs/imitation.pt" \
  --log "${out%.pt}_imitation_curve.csv" "${@:3}"
OMP_NUM_THREADS=1 "${train[@]}" --updates "${UPDATES:-100}" --lr 1e-3 --lr-end 1e-3 \
  --discount 0.9 --mixed-starts --init "$graphs/imitation.pt" --out "$out" \
  --log "${out%.pt}_curve.csv" "${@:3}"
