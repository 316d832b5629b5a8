#!/usr/bin/env bash
# Install everything the tests need (Debian packages, then zsn and its test
# dependencies into .venv), check style and types, and run the whole suite.
# Needs root: the integration tests build network namespaces and run daemons.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -k uapi`.
set -euo pipefail
cd "$(dirname "$0")/.."

DEBIAN_PACKAGES=(
    python3 python3-venv python3-pip   # a Python >= 3.11 with venv (Debian 12 has 3.11)
    iproute2 iputils-ping              # namespaces, veth, ping through tunnels
    wireguard-go wireguard-tools       # userspace WireGuard (no kernel module here), wg, wg-quick
    iptables                           # PostUp/PostDown FORWARD and NAT rules in the WireGuard lab
    openvpn easy-rsa                   # OpenVPN lab
    systemd-container debootstrap      # a real systemd in a container for D-Bus tests
    zbar-tools                         # decodes rendered QR codes
    tmux                               # terminal-level checks
)

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    missing=()
    for package in "${DEBIAN_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
            || missing+=("$package")
    done
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "installing Debian packages: ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'

echo "== ruff"
.venv/bin/ruff check .
echo "== mypy"
.venv/bin/mypy
echo "== pytest"
exec .venv/bin/python -m pytest -ra "$@"
