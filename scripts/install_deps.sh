#!/usr/bin/env bash
# Installs the Debian packages dplace needs to build and test. Idempotent: does nothing when every
# package is already present, so `make run` and `make test` stay fast on a prepared machine.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev libbenchmark-dev
  clang-format clang-tidy python3 python3-torch python3-torchvision python3-onnx
  python3-dev python3-numpy python3-pytest pybind11-dev
  libscotch-dev libmetis-dev coinor-libcbc-dev libonnx-dev libprotobuf-dev protobuf-compiler zlib1g-dev
  chromium
  libtorch-dev libopenblas0-pthread libopenmpi-dev openmpi-bin
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0

echo "install_deps: installing ${missing[*]}" >&2
sudo=""
[[ $(id -u) -ne 0 ]] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
