#!/usr/bin/env bash
# The settling table (docs/learned.md): the learned placers (gdp, placeto, fine-tuning), mcmc and
# local_search guided by the bundled gdp policy's proposal, and plain mcmc and local_search, at 64,
# 1,000 and 10,000 evaluations (at most 10 s) and 1, 2 and 10 s, with ladders of plain and guided
# mcmc, on the learned suite (bench/suites/learned.json) on each CLUSTER (one bench process per
# cluster, side by side: each placer runs on one core); then plain mcmc again with seed 2 for its
# run-to-run spread. Writes OUT/*.json and prints bench/settle.py's tables.
# With --parts ("The parts at equal budgets, and the gap that remains"): instead mcmc with the
# bandit's control (mcmc.control=bandit), mcmc and local_search guided by the hand-set and the
# learned move scorer (guide=hand, guide=learned), each against plain mcmc and local_search at
# 1,000 and 10,000 evaluations and 1, 2 and 10 s; the tables then add each bundled model's gap to
# the lower bound after 10 s (about 31 minutes on two cores).
# Usage: bash bench/settle.sh [--parts] OUT [CLUSTER...]   (default clusters: k80x4 v100x8-nvlink)
set -euo pipefail
dplace=${DPLACE:-build/release/dplace}
parts=0
if [[ ${1:-} == --parts ]]; then parts=1; shift; fi
out=$1
shift
if (($#)); then clusters=("$@"); else clusters=(k80x4 v100x8-nvlink); fi
mkdir -p "$out"
regimes=()
if ((parts)); then
  for b in 1000 10000 1s 2s 10s; do
    for part in bandit hand learned; do regimes+=(--regimes "$part-$b"); done
  done
  for r in equal-1000 equal-10000 search-1s search-2s search-10s; do regimes+=(--regimes "$r"); done
  placers=(--placers mcmc --placers local_search)
  seed2=(equal-1000 equal-10000 search-1s search-2s search-10s)
else
  for r in zero-shot guided-64 equal-1000 guided-1000 equal-10000 guided-10000 search-1s guided-1s \
    search-2s guided-2s search-10s guided-10s plain-curve guided-curve; do regimes+=(--regimes "$r"); done
  placers=(--placers gdp --placers placeto --placers mcmc --placers local_search)
  seed2=(equal-1000 equal-10000 search-2s search-10s)
fi
for c in "${clusters[@]}"; do
  "$dplace" bench --suite learned "${regimes[@]}" "${placers[@]}" --filter "@$c" --json >"$out/seed1@$c.json" &
done
wait
for c in "${clusters[@]}"; do
  "$dplace" bench --suite learned --seed 2 "${seed2[@]/#/--regimes=}" --placers mcmc --filter "@$c" \
    --json >"$out/seed2@$c.json" &
done
wait
/usr/bin/python3 "$(dirname "$0")/settle.py" "$out"/seed1@*.json "$out"/seed2@*.json
