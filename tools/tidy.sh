#!/bin/bash
# clang-tidy (the repository's .clang-tidy) on the C++ sources a change touched: the files given,
# else the .cc files changed in the last commit and not committed yet (all of src/ when there is
# no previous commit). Every finding of the checks .clang-tidy lists is an error.
#   bash tools/tidy.sh [BUILD_DIR] [FILE...]   BUILD_DIR holds compile_commands.json (build/release)
set -u
cd "$(dirname "$0")/.."
build=${1:-build/release}
shift || true
if [[ ! -f $build/compile_commands.json ]]; then
  echo "tidy: $build/compile_commands.json missing: configure the build first" >&2
  exit 2
fi
files=("$@")
if ((${#files[@]} == 0)); then
  if git rev-parse -q --verify HEAD~1 >/dev/null; then
    mapfile -t files < <({ git diff --name-only HEAD~1 HEAD; git diff --name-only HEAD; git ls-files -o --exclude-standard; } |
      sort -u | grep -E '^(src|bench|fuzz|python)/.*\.cc$')
  else
    mapfile -t files < <(git ls-files 'src/*.cc')
  fi
fi
# Sources that include LibTorch (learn/'s policy.h and what includes it) are left out: clang 14
# cannot parse LibTorch 1.13's headers (c10::IValue is incomplete to it); GCC's -Werror checks them.
existing=()
for f in "${files[@]}"; do
  [[ -f $f ]] || continue
  grep -q -E '#include (<torch/|"dplace/learn/(policy|rollout)\.h")' "$f" && continue
  existing+=("$f")
done
if ((${#existing[@]} == 0)); then
  echo "tidy: no C++ source changed"
  exit 0
fi
# GCC's precompiled headers (learn/) are not clang's: the commands without them (every such
# source includes what it needs itself); nor GCC's LTO flags (pybind11's, on the Python module).
commands=$(mktemp -d)
trap 'rm -rf "$commands"' EXIT
sed -E 's# -include [^ ]*cmake_pch\.hxx##g; s# -Winvalid-pch##g; s# -fno-fat-lto-objects##g' \
  "$build/compile_commands.json" \
  >"$commands/compile_commands.json"
# GCC's warning flags that clang does not know are not findings.
printf '%s\n' "${existing[@]}" |
  xargs -P 2 -n 4 clang-tidy -p "$commands" --quiet --warnings-as-errors='*' \
    --extra-arg=-Wno-unknown-warning-option 2>&1 |
  grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$|^Suppressed [0-9]+ warnings|^Use -header-filter|^Error while processing'
status=${PIPESTATUS[1]}
if ((status != 0)); then
  echo "tidy: findings in ${#existing[@]} files checked (see above)"
  exit 1
fi
echo "tidy: ${#existing[@]} files clean"
