#!/usr/bin/env bash
# examples/http_server beside Debian's nginx for HTTP/1.1 keep-alive (bench/http/nginx.py): bytes per
# idle kept-alive connection, requests per second and CPU per request under wrk and for clients that
# pause between requests, keep-alive close lateness and slowloris, alternated rounds, medians;
# writes docs/http_nginx.json and docs/benchmarks.md's "http_nginx" section. Usage: bash bench/http/nginx.sh [--connections N] [--rounds R]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
export HEARTWHEEL_BUILD=${HEARTWHEEL_BUILD:-$root/build}
[[ -x $HEARTWHEEL_BUILD/examples/http_server && -x /usr/sbin/nginx && -x /usr/bin/wrk ]] || {
  bash "$root/scripts/install-deps.sh"
  bash "$root/scripts/build.sh" "$HEARTWHEEL_BUILD"
}
python3 "$root/bench/http/nginx.py" "$@" | python3 "$root/bench/put_section.py" http_nginx
