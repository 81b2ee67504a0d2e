#!/usr/bin/env bash
# Guided against plain search (docs/learned.md, "Learning inside the search"): on the held-out
# generated graphs (seed 3, one of each of the five families) on k80x4 and v100x8-nvlink, three
# seeds each, SEARCH (mcmc or local_search) with and without SEARCH.proposal=POLICY (and, for mcmc,
# mcmc.proposal_share=SHARE; give - for local_search) at each budget (an evaluation count, or Ns
# for seconds). Prints per budget the geometric mean of guided / plain, its range, and the plain
# search's own run-to-run spread (per row, its worst seed over its best). GRAPHS="a.onnx b.onnx"
# replaces the generated graphs (ONNX models placed as training steps).
# Usage: bash bench/guided_search.sh SEARCH POLICY SHARE BUDGET... (e.g. mcmc gdp 0.2 1000 2s)
set -euo pipefail
dplace=${DPLACE:-build/release/dplace}
search=$1 policy=$2 share=$3
shift 3
guide=(--opt "$search.proposal=$policy")
[[ $share == - ]] || guide+=(--opt "$search.proposal_share=$share")
graphs=$(mktemp -d)
trap 'rm -rf "$graphs"' EXIT
if [[ -n ${GRAPHS:-} ]]; then
  read -r -a files <<<"$GRAPHS"
else
  for family in enas_cnn enas_rnn nmt nasnet layered; do
    "$dplace" gen "$family" --count 1 --seed 3 --out "$graphs" --quiet
  done
  files=("$graphs"/*.json)
fi
value() { "$dplace" place "$@" --json 2>/dev/null | /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['best']['value'])"; }
for budget in "$@"; do
  if [[ $budget == *s ]]; then limit=(--time-limit "${budget%s}"); else limit=(--evaluations "$budget"); fi
  rows=$(for g in "${files[@]}"; do for c in k80x4 v100x8-nvlink; do for seed in 1 2 3; do
    base=(--graph "$g" --cluster "$c" --placer "$search" "${limit[@]}" --seed "$seed")
    [[ $g == *.onnx ]] && base+=(--training)
    echo "$(basename "${g%.*}")@$c $seed $(value "${base[@]}") $(value "${base[@]}" "${guide[@]}")"
  done; done; done)
  /usr/bin/python3 -c "
import collections, math, sys
rows = [l.split() for l in sys.stdin.read().strip().splitlines()]
ratio = [float(r[3]) / float(r[2]) for r in rows]
by = collections.defaultdict(list)
for r in rows: by[r[0]].append(float(r[2]))
spread = [max(v) / min(v) for v in by.values()]
g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))
print(f'budget $budget: guided/plain geomean {g(ratio):.4f} (rows {len(ratio)}, {min(ratio):.3f}-{max(ratio):.3f}); plain run-to-run spread geomean {g(spread):.4f}, worst {max(spread):.3f}')
" <<<"$rows"
done
