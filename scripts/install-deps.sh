#!/usr/bin/env bash
# Installs the Debian 12 packages faultline builds, tests and benchmarks with. Idempotent: only
# what is missing is installed. Needs root (or sudo).
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config
  libboost-dev libre2-dev prometheus-cpp-dev libspdlog-dev libyaml-cpp-dev libyaml-dev libsqlite3-dev
  libcurl4-openssl-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
  libvectorscan-dev
  clang-14 libclang-rt-14-dev
  python3 ripgrep mtail time logrotate
  prometheus prometheus-alertmanager yamllint dpkg-dev strace
  chromium
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
