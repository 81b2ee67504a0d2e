#!/usr/bin/env bash
# Reproduces models/policies/gdp.pt, GDP's pre-trained policy: generates its training graphs (seeds
# 1 and 2 of the five families of docs/families.md: 16 forward graphs of each with seed 1, 8
# training steps of each with seed 2, listed by hash in gdp_train.sha256; seed 3 is held out for the
# benchmark) and trains with PPO on one core on 120 graphs x 2 clusters (k80x4, v100x8-nvlink; the
# other clusters are for testing how the policy transfers). The learning rate is constant, so a run
# cut short by --seconds and one with its update count (UPDATES) are the same. Extra arguments go
# to dplace train.
# Usage: bash models/policies/train_gdp.sh [DPLACE] [OUT] [TRAIN ARGS...]
set -euo pipefail
dplace=${1:-build/release/dplace}
out=${2:-models/policies/gdp.pt}
graphs=$(mktemp -d)
trap 'rm -rf "$graphs"' EXIT
for family in enas_cnn enas_rnn nmt nasnet layered; do
  "$dplace" gen "$family" --count 16 --seed 1 --out "$graphs/forward" --quiet
  "$dplace" gen "$family" --count 8 --seed 2 --training --out "$graphs/training" --quiet
done
OMP_NUM_THREADS=1 "$dplace" train --method gdp --graphs "$graphs/forward" --graphs "$graphs/training" \
  --cluster k80x4 --cluster v100x8-nvlink \
  --updates "${UPDATES:-0}" --episodes 8 --seed 1 --hidden 64 --lr 3e-3 --lr-end 3e-3 \
  --algorithm ppo --out "$out" --log "${out%.pt}_curve.csv" "${@:3}"
