#!/usr/bin/env bash
# Makes sure a Redis server binary (Debian's redis-server) is installed for bench:peers, which
# starts its own private server with appendfsync always. Idempotent and quick when present.
set -euo pipefail

if ! command -v redis-server > /dev/null; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "ensure-redis: redis-server is missing; run as root (apt-get install redis-server)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends redis-server > /dev/null
  # The bench starts its own server: Debian's service is not needed.
  (service redis-server stop || true) > /dev/null 2>&1
  echo "ensure-redis: installed $(redis-server --version | cut -d' ' -f3)"
fi
