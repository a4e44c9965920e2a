#!/usr/bin/env bash
# Makes sure PostgreSQL server binaries (initdb, pg_ctl, postgres) are installed for the store
# tests and benchmark (test/helpers/postgres.ts starts private servers from them), and PgBouncer
# for the tests through a transaction-mode pooler (scripts/ensure-pgbouncer.sh). Idempotent and
# quick when they are present. The server binaries are not needed when DATABASE_URL points at a
# server.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

have_postgres() {
  if [ -n "${PG_BIN:-}" ] && [ -x "${PG_BIN}/initdb" ]; then return 0; fi
  compgen -G '/usr/lib/postgresql/*/bin/initdb' > /dev/null
}

if ! have_postgres; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "ensure-postgres: PostgreSQL server binaries are missing; run as root (apt-get install postgresql) or set PG_BIN / DATABASE_URL" >&2
    exit 1
  fi

  # Tests start their own servers: skip Debian's default cluster.
  mkdir -p /etc/postgresql-common/createcluster.d
  echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.d/ttc-no-main-cluster.conf

  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends postgresql > /dev/null
  compgen -G '/usr/lib/postgresql/*/bin/initdb' > /dev/null
  echo "ensure-postgres: installed $(ls -d /usr/lib/postgresql/*/bin | tail -1)"
fi

bash "${here}/ensure-pgbouncer.sh"
