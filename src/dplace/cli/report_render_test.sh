#!/usr/bin/env bash
# The HTML report of `dplace bench` renders in headless Chromium: the page's own check sets
# data-rendered="ok <charts> charts <bars> bars" on <body> once every chart has a layout box, and a
# screenshot of it is not blank.
set -u
DPLACE=${DPLACE:-build/release/dplace}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
CHROMIUM=$(command -v chromium || command -v chromium-browser) || {
  echo "FAIL: chromium not found (scripts/install_deps.sh installs it)"
  exit 1
}
mkdir "$TMP/models"
cp testdata/onnx/gru_opset13.onnx "$TMP/models/"
# 1 model x forward/training x 3 clusters = 6 workloads of 10 placers: 6 tables, 6 bar charts
# (60 bars) and 6 timelines.
"$DPLACE" bench --suite models --models "$TMP/models" --time-limit 0.1 --json \
  --report "$TMP/report.html" >"$TMP/bench.json" || {
  echo "FAIL: bench exited $?"
  exit 1
}
bars=$(/usr/bin/python3 -c "import json; d=json.load(open('$TMP/bench.json')); print(sum(len(w['results']) for w in d['workloads']))")
flags=(--headless --no-sandbox --disable-gpu --user-data-dir="$TMP/profile")
state=$(timeout 120 "$CHROMIUM" "${flags[@]}" --dump-dom "file://$TMP/report.html" 2>/dev/null |
  grep -o 'data-rendered="[^"]*"')
if [[ $state != "data-rendered=\"ok 12 charts $bars bars\"" ]]; then
  echo "FAIL: page check says '$state', want 12 charts and $bars bars"
  exit 1
fi
timeout 120 "$CHROMIUM" "${flags[@]}" --window-size=1200,1600 --screenshot="$TMP/shot.png" \
  "file://$TMP/report.html" >/dev/null 2>&1
size=$(stat -c %s "$TMP/shot.png" 2>/dev/null || echo 0)
if ((size < 20000)); then
  echo "FAIL: screenshot is $size bytes: blank or missing"
  exit 1
fi
echo "report renders: $state, screenshot $size bytes"
