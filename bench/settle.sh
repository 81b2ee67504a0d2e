#!/usr/bin/env bash
# The settling table (docs/learned.md): the learned placers (gdp, placeto, fine-tuning), mcmc and
# local_search guided by the bundled gdp policy's proposal, and plain mcmc and local_search, at 64,
# 1,000 and 10,000 evaluations (at most 10 s) and 1, 2 and 10 s, with ladders of plain and guided
# mcmc, on the learned suite (bench/suites/learned.json) on each CLUSTER (one bench process per
# cluster, side by side: each placer runs on one core); then plain mcmc again with seed 2 for its
# run-to-run spread. Writes OUT/*.json and prints bench/settle.py's tables.
# Usage: bash bench/settle.sh OUT [CLUSTER...]   (default clusters: k80x4 v100x8-nvlink)
set -euo pipefail
dplace=${DPLACE:-build/release/dplace}
out=$1
shift
if (($#)); then clusters=("$@"); else clusters=(k80x4 v100x8-nvlink); fi
mkdir -p "$out"
regimes=()
for r in zero-shot guided-64 equal-1000 guided-1000 equal-10000 guided-10000 search-1s guided-1s \
  search-2s guided-2s search-10s guided-10s plain-curve guided-curve; do regimes+=(--regimes "$r"); done
placers=(--placers gdp --placers placeto --placers mcmc --placers local_search)
for c in "${clusters[@]}"; do
  "$dplace" bench --suite learned "${regimes[@]}" "${placers[@]}" --filter "@$c" --json >"$out/seed1@$c.json" &
done
wait
for c in "${clusters[@]}"; do
  "$dplace" bench --suite learned --seed 2 --regimes equal-1000 --regimes equal-10000 \
    --regimes search-2s --regimes search-10s --placers mcmc --filter "@$c" --json >"$out/seed2@$c.json" &
done
wait
/usr/bin/python3 "$(dirname "$0")/settle.py" "$out"/seed1@*.json "$out"/seed2@*.json
