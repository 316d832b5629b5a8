#!/usr/bin/env bash
# Install everything the tests need (Debian packages, the QEMU kernel lab, then zsn
# and its test dependencies into .venv), check style and types, and run the suite.
# Needs root: the integration tests build network namespaces and run daemons.
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -k uapi`, or
# `bash scripts/test.sh -m 'not kernel'` to run everything but the QEMU guests.
# ZSN_KERNEL_LAB=no installs no kernel lab (no QEMU, no kernel, no zfs-dkms, apt's
# sources left as they are) and runs everything but the guests.
# Every step is idempotent: a second run installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

DEBIAN_PACKAGES=(
    python3 python3-venv python3-pip   # a Python >= 3.11 with venv (Debian 12 has 3.11)
    iproute2 iputils-ping              # namespaces, veth, ping through tunnels
    wireguard-go wireguard-tools       # userspace WireGuard (no kernel module here), wg, wg-quick
    iptables                           # PostUp/PostDown FORWARD and NAT rules in the WireGuard lab
    openvpn easy-rsa                   # OpenVPN lab
    systemd-container debootstrap      # a real systemd in a container for D-Bus tests
    systemd                            # systemd-analyze calendar/verify of zsn's scrub timers
    zbar-tools                         # decodes rendered QR codes
    tmux                               # terminal-level checks
    strace                             # kills zsn at each write step; traces every --dry-run
    util-linux                         # unshare, mount, setpriv: private /run/wireguard, non-root runs
    wpasupplicant dbus                 # WLAN: wpa_supplicant (wired driver), wpa_passphrase,
                                       # a private dbus-daemon for the iwd agent tests
                                       # and for links' NetworkManager stand-in
    netplan.io                         # links: netplan files checked with libnetplan
    prometheus                         # zsn serve: a real Prometheus scrapes it; promtool checks
                                       # web configs, alert rules and metrics text
    ansible-core                       # contrib/ansible/zsn.fact run by Ansible's setup module;
                                       # the collection's plays (ansible-playbook) and
                                       # ansible-test sanity (its venvs: python3-venv's ensurepip)
    openssh-server openssh-client      # try/rollback: zsn inside a real SSH session a change cuts
    radvd                              # try/rollback: an IPv6 router the gateway scenario needs
    nftables                           # WireGuard access rules: nft -j, the table zsn loads
    iperf3                             # access rules lab: forwarding with and without the policy
)

# The QEMU kernel lab (tests/lab/kernel.py): Debian's own kernel, with the modules a
# CI kernel lacks (wireguard, bonding, 8021q, dummy, mac80211_hwsim, zfs), booted with
# the host's root read-only, so every program a guest test runs is installed here.
# A new guest test group adds the packages it runs to this list.
LAB_PACKAGES=(
    qemu-system-x86 qemu-utils                    # the VM (software emulation)
    linux-image-amd64 linux-headers-amd64         # the guest kernel and what dkms builds against
    zfs-dkms zfsutils-linux                       # zfs.ko for it (contrib), zpool/zfs
    busybox-static kmod udev                      # virtme-ng's guest init, modprobe
    ethtool dbus iproute2 iputils-ping            # links, namespaces, ping
    wireguard-tools                               # group wireguard: wg
    dmsetup util-linux                            # group zfs: dm delay disks over loop devices
    smartmontools                                 # group zfs: smartctl on QEMU's SMART disks
    systemd                                       # group zfs: systemd-analyze verify of a scrub timer
    netplan.io                                    # group links: netplan generate
    hostapd wpasupplicant iw iwd                  # WLAN over mac80211_hwsim
    systemd                                       # group wlan: systemd-journald, journalctl,
                                                  # systemd-cat (iwd logs into the journal)
    openssh-server openssh-client                 # groups tryback, zfs_send: sshd, ssh
    netcat-openbsd                                # bench/zfs_send.py: nc against --via tcp
    sanoid                                        # group zfs_send: sanoid's own snapshots and
                                                  # its sample config; bench/zfs_prune.py
    openvpn                                       # group serve: a client and its server
)
# The config corpus (tests/corpus) compares zsn's reading of interfaces files with each
# ifupdown implementation's own ifquery. The three packages conflict, so each is unpacked
# (not installed) into its own folder; tests/lab/dialects.py runs them from there.
DIALECT_PACKAGES=(ifupdown ifupdown2 ifupdown-ng)
DIALECTS_DIR=${ZSN_DIALECTS_DIR:-/var/cache/zsn-lab/dialects}

unpack_dialects() {
    local package version target debs
    for package in "${DIALECT_PACKAGES[@]}"; do
        version=$(apt-cache policy "$package" | awk '/Candidate:/ { print $2 }')
        target="$DIALECTS_DIR/$package"
        [ -n "$version" ] && [ "$(cat "$target/VERSION" 2>/dev/null)" = "$version" ] && continue
        debs=$(mktemp -d)
        (cd "$debs" && apt-get download -qq "$package=$version" >/dev/null 2>&1) \
            || { apt_quiet update; (cd "$debs" && apt-get download -qq "$package=$version"); }
        rm -rf "$target"
        mkdir -p "$target"
        dpkg-deb -x "$debs"/*.deb "$target/root"
        if [ "$package" = ifupdown2 ]; then
            # ifupdown2 finds its config next to its package when /etc has none.
            mv "$target/root/usr/share/ifupdown2" "$target/ifupdown2"
            cp -r "$target/root/etc" "$target/ifupdown2/etc"
        fi
        echo "$version" > "$target/VERSION"
        rm -rf "$debs"
    done
}

# virtme-ng (`vng`) boots the kernel. It is a host tool, not a zsn dependency: it gets
# a venv of its own, shared by every checkout (tests/lab/kernel.py looks there).
VIRTME_NG_VERSION=1.42
LAB_VENV=${ZSN_LAB_VENV:-/var/cache/zsn-lab/virtme-ng}

APT_OPTIONS=(-o DPkg::Lock::Timeout=900 -qq)

# apt quietly; its output only when it fails.
apt_quiet() {
    local log
    log=$(mktemp)
    if ! DEBIAN_FRONTEND=noninteractive apt-get "${APT_OPTIONS[@]}" "$@" >"$log" 2>&1; then
        tail -n 40 "$log" >&2
        rm -f "$log"
        return 1
    fi
    rm -f "$log"
}

missing_packages() {
    # One dpkg-query for the lot; it prints no status for a package it does not know.
    comm -23 <(printf '%s\n' "$@" | sort -u) \
        <(dpkg-query -W -f='${Package} ${Status}\n' "$@" 2>/dev/null \
              | awk '$NF == "installed" { print $1 }' | sort -u)
}

# zfs-dkms is in Debian's contrib component, off by default.
enable_contrib() {
    local deb822=/etc/apt/sources.list.d/debian.sources
    if [ -f "$deb822" ] && grep -q '^Components:' "$deb822" \
            && grep '^Components:' "$deb822" | grep -vq '\bcontrib\b'; then
        sed -i -E '/^Components:/{/\bcontrib\b/!s/$/ contrib/}' "$deb822"
    fi
    if [ -f /etc/apt/sources.list ]; then
        sed -i -E '/^deb(-src)?\s/{/\scontrib(\s|$)/!s/\smain(\s|$)/ main contrib\1/}' \
            /etc/apt/sources.list
    fi
}

# The newest Debian amd64 kernel with zfs.ko built (what tests/lab/kernel.py boots).
lab_kernel_with_zfs() {
    local image version
    for image in $(ls /boot/vmlinuz-*-amd64 2>/dev/null | sort -V -r); do
        version=${image#/boot/vmlinuz-}
        if [ -f "/lib/modules/$version/updates/dkms/zfs.ko" ]; then
            echo "$version"
            return 0
        fi
    done
    return 1
}

KERNEL_LAB=${ZSN_KERNEL_LAB:-yes}
WANTED_PACKAGES=("${DEBIAN_PACKAGES[@]}")
[ "$KERNEL_LAB" = no ] || WANTED_PACKAGES+=("${LAB_PACKAGES[@]}")

vng_installed() {
    compgen -G "$LAB_VENV/lib/python3*/site-packages/virtme_ng-$VIRTME_NG_VERSION.dist-info" \
        >/dev/null && [ -x "$LAB_VENV/bin/vng" ]
}

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    started=$EPOCHREALTIME
    mapfile -t missing < <(missing_packages "${WANTED_PACKAGES[@]}")
    if [ "${#missing[@]}" -gt 0 ]; then
        echo "installing Debian packages: ${missing[*]}"
        case " ${missing[*]} " in *" zfs-dkms "*) enable_contrib ;; esac
        apt_quiet update
        # Tests start the daemons they need themselves (sshd, openvpn, hostapd ...): a
        # package must not start one on the machine as it installs (Debian's policy-rc.d).
        policy=/usr/sbin/policy-rc.d
        made_policy=
        if [ ! -e "$policy" ]; then
            printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy" && made_policy=1
        fi
        install_status=0
        apt_quiet install -y "${missing[@]}" || install_status=$?
        [ -z "$made_policy" ] || rm -f "$policy"
        [ "$install_status" -eq 0 ] || exit "$install_status"
    fi
    if [ "$KERNEL_LAB" != no ] && ! lab_kernel_with_zfs >/dev/null; then
        # zfs-dkms builds for kernels with headers at install time; build for any
        # non-RT amd64 kernel installed since (zfs-dkms refuses PREEMPT_RT kernels).
        for image in /boot/vmlinuz-*-amd64; do
            version=${image#/boot/vmlinuz-}
            case "$version" in *-rt-*) continue ;; esac
            [ -d "/lib/modules/$version/build" ] || continue
            dkms autoinstall -k "$version" >/dev/null 2>&1 || true
        done
        lab_kernel_with_zfs >/dev/null \
            || echo "kernel lab: no /boot/vmlinuz-*-amd64 has updates/dkms/zfs.ko" >&2
    fi
    unpack_dialects
    if [ "$KERNEL_LAB" != no ] && ! vng_installed; then
        echo "installing virtme-ng $VIRTME_NG_VERSION into $LAB_VENV"
        rm -rf "$LAB_VENV"
        mkdir -p "$(dirname "$LAB_VENV")"
        python3 -m venv "$LAB_VENV"
        "$LAB_VENV/bin/python" -m pip install -q "virtme-ng==$VIRTME_NG_VERSION"
    fi
    awk -v from="$started" -v to="$EPOCHREALTIME" \
        'BEGIN { printf "install (Debian packages, kernel lab): %.1f s\n", to - from }'
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
echo "== import contracts"
.venv/bin/lint-imports
echo "== pytest"
if [ "$KERNEL_LAB" = no ]; then
    exec .venv/bin/python -m pytest -ra -m 'not kernel' "$@"
fi
exec .venv/bin/python -m pytest -ra "$@"
