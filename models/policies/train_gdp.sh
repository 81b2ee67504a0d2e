#!/usr/bin/env bash
# Reproduces models/policies/gdp.pt, GDP's pre-trained policy: generates its training graphs (seeds
# 1 and 2 of the five families of docs/families.md: 16 forward graphs of each with seed 1, 8
# training steps of each with seed 2, listed by hash in gdp_train.sha256; seed 3 is held out for the
# benchmark) and trains with PPO on one core on 120 graphs x 2 clusters (k80x4, v100x8-nvlink; the
# other clusters are for testing how the policy transfers), 1,500 updates of 8 episodes (4 samples
# of 2 problems), the learning rate falling from 3e-3 to 1e-4. With a constant rate and the default
# entropy bonus (0.01) the policy left its good phase after about 1,700 updates: once every sample
# of a problem is the same, the entropy bonus is the only gradient, and Adam's normalisation makes
# it a full-size step. Extra arguments go to dplace train.
# Usage: bash models/policies/train_gdp.sh [DPLACE] [OUT] [TRAIN ARGS...]
set -euo pipefail
dplace=${1:-build/release/dplace}
out=${2:-models/policies/gdp.pt}
graphs=$(mktemp -d)
trap 'rm -rf "$graphs"' EXIT
source "$(dirname "$0")/training_graphs.sh"
training_graphs "$dplace" "$graphs/forward" "$graphs/training" 16 8
OMP_NUM_THREADS=1 "$dplace" train --method gdp --graphs "$graphs/forward" --graphs "$graphs/training" \
  --cluster k80x4 --cluster v100x8-nvlink \
  --updates "${UPDATES:-1500}" --episodes 8 --seed 1 --hidden 64 --lr 3e-3 --lr-end 1e-4 \
  --entropy 0.001 --algorithm ppo --out "$out" --log "${out%.pt}_curve.csv" "${@:3}"
