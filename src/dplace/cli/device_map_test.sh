#!/usr/bin/env bash
# device_map exports that accelerate accepts, on five models exported from PyTorch (testdata/torch):
# every key names a module (or a root parameter) of the model, no key is another's ancestor, and
# every state_dict key has exactly one key as its prefix. Checked against the model's own key lists
# (committed beside the export); where Debian's python3-torch is installed, also against the model
# itself (tools/check_device_map.py: model.get_submodule on every key).
set -u
DPLACE=${DPLACE:-build/release/dplace}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0
failed=0
torch_checked=0

check_keys() {  # KEYS_JSON MAP_JSON -> one line: "ok" or what is wrong
  /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
keys = json.load(open(sys.argv[1])); dm = json.load(open(sys.argv[2]))
modules = set(keys["modules"]) | {""}
state = keys["state_dict"]
unresolved = [k for k in dm if k not in modules and k not in state]
nested = [(a, b) for a in dm for b in dm if a != b and (a == "" or b.startswith(a + "."))]
uncovered = [k for k in state
             if sum(m == "" or k == m or k.startswith(m + ".") for m in dm) != 1]
if unresolved or nested or uncovered:
    print(f"unresolved {unresolved[:3]}, nested {nested[:3]}, uncovered {uncovered[:3]} "
          f"({len(uncovered)} of {len(state)})")
else:
    print("ok")
PY
}

for model in resnet50 vit_b_16 mobilenet_v3_large gpt2_small lstm_seq2seq; do
  for placer in random metis m_etf; do
    map="$TMP/$model.$placer.json"
    if ! "$DPLACE" place --graph "testdata/torch/$model.onnx" --training --cluster v100x8-nvlink \
        --placer "$placer" --export device_map="$map" >/dev/null 2>"$TMP/err"; then
      echo "FAIL: $model $placer: place exited non-zero: $(cat "$TMP/err")"
      failed=$((failed + 1))
      continue
    fi
    verdict=$(check_keys "testdata/torch/$model.keys.json" "$map")
    if [[ $verdict == ok ]]; then passed=$((passed + 1)); else
      echo "FAIL: $model $placer: $verdict"
      failed=$((failed + 1))
    fi
    /usr/bin/python3 tools/check_device_map.py "$model" "$map" >"$TMP/torch" 2>&1
    rc=$?
    if [[ $rc -eq 0 ]]; then torch_checked=$((torch_checked + 1)); passed=$((passed + 1))
    elif [[ $rc -ne 77 ]]; then
      echo "FAIL: $model $placer (torch): $(cat "$TMP/torch")"
      failed=$((failed + 1))
    fi
  done
done
[[ $torch_checked -eq 0 ]] && echo "python3-torch is not installed: checked against the committed key lists only"
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
