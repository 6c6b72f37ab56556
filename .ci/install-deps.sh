#!/usr/bin/env bash
# Installs what paraplan needs to build and test from Debian 12's archive, skipping what is there.
# Runs apt-get through sudo when not root. --browser adds chromium, which the HTML reports' test
# loads them in (CI passes it; without chromium that test is skipped).
set -euo pipefail
packages=(
  cmake ninja-build g++ pkg-config python3
  libboost-filesystem-dev libboost-program-options-dev libboost-dev
  libtomlplusplus-dev libspdlog-dev nlohmann-json3-dev
  libgtest-dev libbenchmark-dev
  libprotobuf-dev protobuf-compiler
  libopenmpi-dev openmpi-bin libopenblas-dev
  clang libclang-rt-14-dev
  libjs-d3
  pybind11-dev python3-dev
)
if [[ ${1:-} == --browser ]]; then
  packages+=(chromium)
elif [[ $# -gt 0 ]]; then
  echo "usage: $0 [--browser]" >&2
  exit 2
fi
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
as_root=()
[[ $(id -u) -eq 0 ]] || as_root=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -q || echo "install-deps: apt-get update failed; trying the cached package lists"
"${as_root[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
