#!/bin/bash
# Does every placer keep --time-limit (within 10% + 1 s) and a bounded memory on inputs built to
# break them? Stress inputs: a 100,000-op chain (throughput and step), a 20,000-op chain and a
# 4-op graph on a 1,024-device cluster, the bundled NMT with --training, and the PipeDream
# profiles; generated training graphs of 3,000 and 51,000 ops for the learned placers and options
# that enlarge the work. For each (input, placer): the placer's own search time, the whole
# command's wall time and peak RSS. Exits 1 if a search time (on the generated graphs, a wall
# time) passes the bound.
#   bash bench/time_limits.sh [SECONDS]     (default 2; DPLACE= the binary)
set -u
LIMIT=${1:-2}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DPLACE=${DPLACE:-$ROOT/build/release/dplace}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

chain() {  # chain N FILE: N ops in a line, varied times and sizes
  awk -v n="$1" 'BEGIN {
    printf "{\"format\":\"dplace-graph/1\",\"ops\":[";
    for (i = 0; i < n; i++) printf "%s{\"name\":\"op%d\",\"time_s\":{\"gpu\":%g,\"cpu\":0.001},\"outputs\":[%d],\"param_bytes\":100000}", (i ? "," : ""), i, 1e-4 * (1 + i % 7), 1e6 * (1 + i % 5);
    printf "],\"edges\":[";
    for (i = 0; i + 1 < n; i++) printf "%s{\"from\":\"op%d\",\"to\":\"op%d\"}", (i ? "," : ""), i, i + 1;
    print "]}" }' >"$2"
}
chain 100000 "$TMP/chain100k.json"
chain 20000 "$TMP/chain20k.json"
cat >"$TMP/four.json" <<'JSON'
{"format":"dplace-graph/1","ops":[{"name":"a","flops":1e9,"outputs":["1MiB"]},{"name":"b","flops":2e9,"outputs":["1MiB"]},
 {"name":"c","flops":3e9,"outputs":["1MiB"]},{"name":"d","flops":4e9}],
 "edges":[{"from":"a","to":"b"},{"from":"b","to":"c"},{"from":"c","to":"d"}]}
JSON
cat >"$TMP/big1024.json" <<'JSON'
{"format":"dplace-cluster/1","name":"gpu1023","devices":[
 {"name":"gpu","count":1023,"kind":"gpu","memory":"16GiB","peak_flops":1.5e13,"memory_bandwidth":"900GB/s"},
 {"name":"cpu0","kind":"cpu","memory":"512GiB","peak_flops":1e12,"memory_bandwidth":"100GB/s"}],
 "default_link":{"bandwidth":"10GB/s","latency":"10us"}}
JSON

ALL=$("$DPLACE" placers | awk '{print $1}' | grep -v '^expert$')
EXACT="dp pipedream ilp ilp_contiguous"  # the paper's model only: throughput and latency
STEP=$(for p in $ALL; do [[ " $EXACT " == *" $p "* ]] || echo "$p"; done)
bound=$(awk -v l="$LIMIT" 'BEGIN { print 1.1 * l + 1 }')
worst=0 failed=0
printf "%-24s %-15s %9s %9s %8s\n" input placer search_s wall_s rss_MiB
run() {  # run LABEL PLACERS ARGS...
  local label=$1 placers=$2
  shift 2
  for p in $placers; do
    /usr/bin/time -f "%e %M" -o "$TMP/time" "$DPLACE" place "$@" --placer "$p" --time-limit "$LIMIT" \
      --json >"$TMP/out.json" 2>"$TMP/err"
    local rc=$?
    read -r wall rss < <(tail -1 "$TMP/time")
    local search
    search=$(grep -o '"search_time_s": *[0-9.e+-]*' "$TMP/out.json" | head -1 | sed 's/.*: *//')
    if [[ $rc -ne 0 || -z $search ]]; then
      printf "%-24s %-15s exit %d: %s\n" "$label" "$p" "$rc" "$(head -c 100 "$TMP/err")"
      [[ $rc -eq 2 ]] || failed=1
      continue
    fi
    printf "%-24s %-15s %9.3f %9.2f %8d\n" "$label" "$p" "$search" "$wall" $((rss / 1024))
    if awk -v s="$search" -v b="$bound" 'BEGIN { exit !(s > b) }'; then failed=1; fi
    worst=$(awk -v s="$search" -v w="$worst" 'BEGIN { print (s > w ? s : w) }')
  done
}
run chain100k-throughput "$ALL" --graph "$TMP/chain100k.json" --cluster v100x8-nvlink --objective throughput
run chain100k-step "$STEP" --graph "$TMP/chain100k.json" --cluster v100x8-nvlink
run chain20k-1024gpus "$ALL" --graph "$TMP/chain20k.json" --cluster "$TMP/big1024.json" --objective throughput
run four-ops-1024gpus "$STEP" --graph "$TMP/four.json" --cluster "$TMP/big1024.json"
run four-ops-1024gpus-latency "$EXACT" --graph "$TMP/four.json" --cluster "$TMP/big1024.json" --objective latency
run nmt-training "$STEP" --graph "$ROOT/models/nmt.onnx" --training --cluster v100x8-nvlink
run nmt-throughput "$EXACT" --graph "$ROOT/models/nmt.onnx" --cluster v100x8-nvlink --objective throughput
for f in "$ROOT"/testdata/pipedream-profiles/*.graph.txt; do
  run "$(basename "$f" .graph.txt)" "$EXACT" --graph "$f" --cluster v100x8-nvlink --objective throughput
done
# Generated training graphs (3,000 and 51,000 ops): the learned placers, a search whose starts
# include them, and options that make the work larger (never the time longer). Here the whole
# command's wall time is held to the bound too: loading and preparing count against the limit.
"$DPLACE" gen layered --set ops=1000 --set width=16 --training --out "$TMP/g3k" --quiet
"$DPLACE" gen layered --set ops=17000 --set width=32 --training --out "$TMP/g51k" --quiet
walls() {  # walls LABEL GRAPH PLACER [OPT...]
  local label=$1 graph=$2 placer=$3
  shift 3
  local opts=()
  for o in "$@"; do opts+=(--opt "$o"); done
  /usr/bin/time -f "%e %M" -o "$TMP/time" "$DPLACE" place --graph "$graph" --cluster v100x8-nvlink \
    --placer "$placer" "${opts[@]}" --time-limit "$LIMIT" --json >"$TMP/out.json" 2>"$TMP/err"
  local rc=$?
  read -r wall rss < <(tail -1 "$TMP/time")
  local search
  search=$(grep -o '"search_time_s": *[0-9.e+-]*' "$TMP/out.json" | head -1 | sed 's/.*: *//')
  printf "%-24s %-15s %9s %9.2f %8d %s\n" "$label" "$placer" "${search:-exit $rc}" "$wall" \
    $((rss / 1024)) "$*"
  if [[ $rc -ne 0 ]] || awk -v s="$wall" -v b="$bound" 'BEGIN { exit !(s > b) }'; then failed=1; fi
  worst=$(awk -v s="${search:-0}" -v w="$worst" 'BEGIN { print (s > w ? s : w) }')
}
for g in g3k g51k; do
  graph=$(ls "$TMP/$g"/*.json)
  for p in placeto gdp colocrl hdp mcmc local_search; do walls "$g" "$graph" "$p"; done
  walls "$g" "$graph" mcmc mcmc.start=placeto,gdp,colocrl,hdp
  walls "$g" "$graph" placeto placeto.max_units=100000
  walls "$g" "$graph" placeto placeto.fine_tune=true
  walls "$g" "$graph" colocrl colocrl.hidden=1024
  walls "$g" "$graph" hdp hdp.samples=1
done
echo "time limit $LIMIT s: longest search $worst s, bound 1.1 x limit + 1 = $bound s"
exit $failed
