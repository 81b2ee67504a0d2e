#!/usr/bin/env bash
# `pip install --no-build-isolation .` (offline, Debian's setuptools) into a fresh venv installs
# dplace for that Python: imported from outside the source tree, from the venv's site-packages,
# with its extension, it loads a graph and places it; the `dplace` command runs, of the package's
# version. Usage: pip_install_test.sh SOURCE BUILD
set -euo pipefail
src=$1 build=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
/usr/bin/python3 -m venv --system-site-packages "$TMP/venv"
DPLACE_BUILD_DIR="$build" "$TMP/venv/bin/pip" install --no-build-isolation --no-deps --no-index \
  -q "$src" >"$TMP/pip.log" 2>&1 || { cat "$TMP/pip.log"; exit 1; }
cd "$TMP"
"$TMP/venv/bin/python" - "$TMP" "$src" <<'PY'
import os
import sys

import dplace

venv, src = sys.argv[1], sys.argv[2]
assert os.path.realpath(dplace.__file__).startswith(os.path.realpath(venv) + "/"), dplace.__file__
problem = dplace.load_problem(os.path.join(src, "models", "resnet50.onnx"), "k80x4")
result = dplace.place(problem, "single")
assert result.feasible and result.value > 0, result
import dplace.torch  # noqa: E402,F401  (the front end installs with the package)
assert dplace.__version__.count(".") == 2, dplace.__version__
print("installed at", os.path.dirname(dplace.__file__), "placed", problem.num_ops, "ops")
PY
# The command-line program installs as the `dplace` command, of the package's version.
version=$("$TMP/venv/bin/python" -c 'import dplace; print(dplace.__version__)')
[[ $("$TMP/venv/bin/dplace" --version) == "dplace $version" ]] ||
  { echo "dplace --version: '$("$TMP/venv/bin/dplace" --version)', not 'dplace $version'"; exit 1; }
"$TMP/venv/bin/dplace" info --graph "$src/models/resnet50.onnx" >/dev/null
"$TMP/venv/bin/pip" uninstall -y -q dplace
