#!/bin/bash
# The layers of src/dplace, lowest first; folders on one line are siblings. A file may include its
# own folder and the layers below it, never a sibling or a layer above. Tests (*_test.cc,
# test_*.h) may also include io (to load test data) and the test helpers of lower layers.
#   bash tools/check_layers.sh     exits 1 and names each file and include that breaks the rule
set -u
cd "$(dirname "$0")/../src/dplace"
LAYERS=(
  "base"
  "graph hw sched"
  "cost"
  "sim job"
  "place io"
  "learn"
  "registry"
  "run"
  "report"
  "cli"
)
declare -A rank
for i in "${!LAYERS[@]}"; do
  for d in ${LAYERS[$i]}; do rank[$d]=$i; done
done
bad=0
for dir in */; do
  dir=${dir%/}
  if [[ -z ${rank[$dir]+x} ]]; then
    echo "src/dplace/$dir: not in tools/check_layers.sh's list of layers"
    bad=1
    continue
  fi
  while IFS= read -r -d '' file; do
    test_file=0
    [[ $file == *_test.cc || $(basename "$file") == test_*.h ]] && test_file=1
    while IFS= read -r inc; do
      other=${inc#dplace/}
      other=${other%%/*}
      [[ $other == "$dir" ]] && continue
      if [[ -z ${rank[$other]+x} ]]; then
        echo "src/dplace/$file: includes $inc, not in a listed layer"
        bad=1
      elif ((rank[$other] < rank[$dir])); then
        continue
      elif ((test_file)) && [[ $other == io ]]; then
        continue
      else
        echo "src/dplace/$file: includes $inc ($other is not below $dir)"
        bad=1
      fi
    done < <(grep -oE '^#include "dplace/[a-z_]+/[^"]+"' "$file" | sed 's/#include "//; s/"$//')
  done < <(find "$dir" \( -name '*.cc' -o -name '*.h' \) -print0 | sort -z)
done
[[ $bad -eq 0 ]] && echo "layers: no include goes up or sideways"
exit $bad
