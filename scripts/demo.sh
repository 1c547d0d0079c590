#!/usr/bin/env bash
# The README's demo command: installs what is needed, builds, and runs the demo.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/install-deps.sh"
bash "$root/scripts/build.sh" "$root/build"
exec python3 "$root/scripts/demo.py"
