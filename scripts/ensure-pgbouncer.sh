#!/usr/bin/env bash
# Makes sure the pgbouncer binary is installed for the tests that run the PostgreSQL store through
# a transaction-mode pooler (test/helpers/pgbouncer.ts starts private PgBouncers from it,
# on free loopback ports, as the test user, each with its own ini and userlist in a temp dir).
# Debian's package is used as is (1.18 on bookworm); its system service is never started and is
# left disabled. Idempotent and quick when pgbouncer is present; PGBOUNCER_BIN overrides.
set -euo pipefail

if [ -n "${PGBOUNCER_BIN:-}" ] && [ -x "${PGBOUNCER_BIN}" ]; then exit 0; fi
if [ -x /usr/sbin/pgbouncer ] || command -v pgbouncer > /dev/null 2>&1; then exit 0; fi

if [ "$(id -u)" -ne 0 ]; then
  echo "ensure-pgbouncer: pgbouncer is missing; run as root (apt-get install pgbouncer) or set PGBOUNCER_BIN" >&2
  exit 1
fi

# The package's maintainer scripts start its service (port 6432) through invoke-rc.d or
# deb-systemd-invoke, which both ask /usr/sbin/policy-rc.d first: deny every start for the
# duration of the install, unless the machine already has a policy of its own (Docker images do).
policy=/usr/sbin/policy-rc.d
if [ ! -e "${policy}" ]; then
  printf '#!/bin/sh\n# temporary, scripts/ensure-pgbouncer.sh: no service starts while installing\nexit 101\n' > "${policy}"
  chmod 755 "${policy}"
  trap 'rm -f "${policy}"' EXIT
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends pgbouncer > /dev/null

# Not at boot either: the tests start their own PgBouncers.
if command -v deb-systemd-helper > /dev/null 2>&1; then deb-systemd-helper disable pgbouncer.service > /dev/null 2>&1 || true; fi
if command -v update-rc.d > /dev/null 2>&1; then update-rc.d pgbouncer disable > /dev/null 2>&1 || true; fi

command -v pgbouncer > /dev/null || [ -x /usr/sbin/pgbouncer ]
echo "ensure-pgbouncer: installed $(/usr/sbin/pgbouncer --version | head -1)"
