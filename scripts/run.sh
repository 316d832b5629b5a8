#!/usr/bin/env bash
# Install zsn into .venv (first run only, or when asked with ZSN_REINSTALL=1)
# and start it. Arguments go to zsn, e.g. `bash scripts/run.sh --export`.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! python3 -m venv --help >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
fi
if [ ! -x .venv/bin/zsn ] || [ "${ZSN_REINSTALL:-0}" = 1 ]; then
    python3 -m venv .venv
    .venv/bin/python -m pip install -q --upgrade pip
    .venv/bin/python -m pip install -q .
fi
exec .venv/bin/zsn "$@"
