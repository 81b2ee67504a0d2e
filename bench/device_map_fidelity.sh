#!/usr/bin/env bash
# Exported device maps run under an emulation of accelerate's dispatch on this CPU, five models:
# each map dplace accepts runs with the model's outputs and its measured step within 15% of the
# predicted sequential step; each it refuses fails with eager PyTorch's error. Run alone (no other
# load): the ratios are timings. Usage: bench/device_map_fidelity.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
DPLACE_FIDELITY=1 PYTHONPATH="$build/python" /usr/bin/python3 -m pytest -q -s \
  python/tests/test_device_map_runtime.py 2>&1 | grep -E "ratio|refused|maps ran|passed|failed"
