#!/usr/bin/env bash
# Installs heartwheel's build, test and benchmark dependencies from Debian's packages (Debian 12).
# Idempotent: does nothing when everything is already installed.
# Boost is 1.81 (libboost1.81-dev: Boost.Asio and Beast for heartwheel's Boost flavour, and Boost.Test),
# which replaces Debian's default 1.74 dev packages (docs/design.md, "One source, two Asios").
# python3-munkres comes before python3-matplotlib: matplotlib's fonttools then needs no scipy, whose
# pythran would pull Boost 1.74 back in. chromium, chromium-driver and python3-selenium: a browser as the
# WebSocket chat's client (test/e2e/test_browser.py, the demo's browser scene).
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git
  libasio-dev libssl-dev openssl
  libboost1.81-dev libboost-test1.81-dev libbenchmark-dev
  libtomlplusplus-dev libcli11-dev
  libevent-dev libuv1-dev libev-dev
  clang libclang-rt-14-dev
  python3 python3-websockets python3-munkres python3-matplotlib procps iproute2 nftables netcat-openbsd valgrind
  sslscan prometheus haproxy
  mosquitto mosquitto-clients python3-paho-mqtt nginx-light wrk
  chromium chromium-driver python3-selenium
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "installing: ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
