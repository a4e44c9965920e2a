#!/usr/bin/env bash
# Makes sure Debian's Chromium is installed for the console's browser tests
# (test/e2e/console-browser.test.ts drives it with playwright-core; no browser is downloaded).
# Idempotent and quick when it is present. Prints the executable's path on stdout.
# CHROMIUM_PATH names another executable (then nothing is installed).
set -euo pipefail

if [ -n "${CHROMIUM_PATH:-}" ]; then
  if [ -x "${CHROMIUM_PATH}" ]; then echo "${CHROMIUM_PATH}"; exit 0; fi
  echo "ensure-chromium: CHROMIUM_PATH=${CHROMIUM_PATH} is not an executable file" >&2
  exit 1
fi

executable=/usr/bin/chromium
if [ ! -x "${executable}" ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "ensure-chromium: ${executable} is missing; run as root (apt-get install chromium) or set CHROMIUM_PATH" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  # A fresh image has no package lists: read them once.
  if ! compgen -G '/var/lib/apt/lists/*_Packages*' > /dev/null; then apt-get update -qq; fi
  if ! apt-get install -y -qq --no-install-recommends chromium > /dev/null; then
    # Stale lists (a package version the mirror no longer has): refresh and try once more.
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends chromium > /dev/null
  fi
  echo "ensure-chromium: installed $("${executable}" --version 2>/dev/null || echo chromium)" >&2
fi
echo "${executable}"
