#!/usr/bin/env bash
# Reproduces models/policies/gdp.pt, GDP's pre-trained policy: generates its training graphs (seeds
# 1 and 2 of the five families of docs/families.md: 16 forward graphs of each with seed 1, 8
# training steps of each with seed 2, listed by hash in gdp_train.sha256; seed 3 is held out for the
# benchmark) and trains on one core on 120 graphs x 2 clusters (k80x4, v100x8-nvlink; the other
# clusters are for testing how the policy transfers) in two stages (docs/learned.md, "Learning
# inside the search"):
#  1. imitation of the search: each problem labelled with mcmc's best placement at 4,000
#     evaluations (cached in $LABELS when set), episodes from the label and from the searches'
#     start moved by up to 32 random unit moves, 600 updates of 8 episodes, lr 3e-3 to 3e-4;
#  2. PPO from a mix of starts (random, fastest device, the searches' start moved by up to 32 random
#     unit moves, so that keeping the start earns nothing), 300 updates of 8 episodes (4 samples of
#     2 problems), lr 1e-3 to 1e-4, entropy bonus 0.001.
# (The policy bundled before was PPO from the searches' start alone, 1,500 updates: it learned to
# keep its start.) Extra arguments go to both dplace train runs.
# Usage: bash models/policies/train_gdp.sh [DPLACE] [OUT] [TRAIN ARGS...]
set -euo pipefail
dplace=${1:-build/release/dplace}
out=${2:-models/policies/gdp.pt}
graphs=$(mktemp -d)
trap 'rm -rf "$graphs"' EXIT
source "$(dirname "$0")/training_graphs.sh"
training_graphs "$dplace" "$graphs/forward" "$graphs/training" 16 8
train=("$dplace" train --method gdp --graphs "$graphs/forward" --graphs "$graphs/training"
  --cluster k80x4 --cluster v100x8-nvlink --episodes 8 --seed 1 --hidden 64 --perturb 32)
OMP_NUM_THREADS=1 "${train[@]}" --updates "${IMITATION_UPDATES:-600}" --lr 3e-3 --lr-end 3e-4 \
  --imitate 4000 --labels "${LABELS:-$graphs/labels}" --out "$graphs/imitation.pt" \
  --log "${out%.pt}_imitation_curve.csv" "${@:3}"
OMP_NUM_THREADS=1 "${train[@]}" --updates "${UPDATES:-300}" --lr 1e-3 --lr-end 1e-4 \
  --entropy 0.001 --algorithm ppo --mixed-starts --init "$graphs/imitation.pt" --out "$out" \
  --log "${out%.pt}_curve.csv" "${@:3}"
