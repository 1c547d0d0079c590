#!/usr/bin/env bash
# The peers' toolchains, for the benchmark only (not the test command): Go, Netty 4.1 and a JDK from
# Debian's packages; Node comes with the machine (Debian's nodejs otherwise).
set -euo pipefail
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
need=()
command -v go >/dev/null || need+=(golang-go)
[ -e /usr/share/java/netty-handler.jar ] || need+=(libnetty-java)
command -v javac >/dev/null || need+=(default-jdk-headless)
command -v node >/dev/null || need+=(nodejs)
if [ ${#need[@]} -gt 0 ]; then
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${need[@]}"
fi
