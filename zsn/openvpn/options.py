"""Which options OpenVPN takes, with how many parameters, and the values it checks as it
reads a config: what add_option (src/openvpn/options.c) refuses with "Options error".

The counts are those of OpenVPN 2.6.14 as Debian 12 builds it for Linux, measured on
that binary (each option with 0 to 7 parameters, ``--show-curves`` after the config so
nothing starts) and read against its options.c: an option it does not know here (the
Windows ones, ``iproute``) or with a count outside its range is "Unrecognized option or
missing or extra parameter(s)". The values are the enumerations add_option itself
checks (``proto``, ``topology``, ``key-direction`` ...); numbers it reads with atoi and
names it resolves later are not refusals at this stage. When the openvpn binary is
installed, zsn also asks it (`zsn.openvpn.refusals`).
"""

from __future__ import annotations

MEASURED_ON = "2.6.14"
UNBOUNDED = 15
"""MAX_PARMS (16) less the option's own name: what 'no upper bound' allows."""

_COUNTS: dict[tuple[int, int | None], str] = {
    (0, 0): (
        "allow-pull-fqdn allow-recursive-routing auth-nocache auth-user-pass-optional "
        "block-ipv6 ccd-exclusive client client-cert-not-required client-to-client "
        "comp-noadapt disable disable-occ down-pre duplicate-cn errors-to-stderr fast-io "
        "float help ifconfig-noexec ifconfig-nowarn machine-readable-output "
        "management-client management-client-auth management-forget-disconnect "
        "management-hold management-query-passwords management-query-proxy "
        "management-query-remote management-signal management-up-down mktun mlock mtu-test "
        "multihome mute-replay-warnings no-name-remapping no-replay nobind opt-verify "
        "passtos persist-key persist-local-ip persist-remote-ip persist-tun ping-timer-rem "
        "pkcs11-id-management pull push-peer-info push-reset remote-random "
        "remote-random-hostname rmtun route-noexec route-nopull show-ciphers show-curves "
        "show-digests show-engines show-groups show-tls single-session suppress-timestamps "
        "tcp-nodelay test-crypto tls-client tls-exit tls-server tun-ipv6 up-delay "
        "up-restart username-as-common-name version vlan-tagging"),
    (0, 1): (
        "askpass auth-user-pass bind comp-lzo compress daemon engine explicit-exit-notify "
        "ip-remote-hint max-routes preresolve show-gateway syslog verify-client-cert"),
    (0, 2): (
        "mssfix replay-window route-delay show-pkcs11-ids"),
    (0, 3): (
        "genkey"),
    (0, None): (
        "auth-gen-token compat-names disable-dco echo force-tls-key-material-export "
        "http-proxy-retry management-external-key mtu-dynamic parameter pkcs11-cert-private "
        "pkcs11-protected-authentication redirect-gateway redirect-private remote-cert-ku "
        "socket-flags socks-proxy-retry"),
    (1, 1): (
        "allow-compression auth auth-gen-token-secret auth-retry auth-token auth-token-user "
        "bcast-buffers ca capath cd cert chroot cipher client-config-dir client-connect "
        "client-crresponse client-disconnect config connect-retry-max connect-timeout "
        "crl-verify data-ciphers data-ciphers-fallback dev dev-node dev-type dh down "
        "ecdh-curve extra-certs gremlin group hand-window http-proxy-timeout "
        "ifconfig-ipv6-pool ipchange iroute-ipv6 key key-direction learn-address link-mtu "
        "lladdr local log log-append lport management-client-group management-client-user "
        "management-external-cert management-log-cache mark max-clients max-packet-size "
        "max-routes-per-client memstats mode mtu-disc mute ncp-ciphers nice ns-cert-type "
        "peer-fingerprint peer-id ping ping-exit ping-restart pkcs11-id pkcs11-pin-cache "
        "pkcs12 port proto proto-force push push-continuation push-remove rcvbuf remap-usr1 "
        "remote-cert-eku remote-cert-tls reneg-bytes reneg-pkts replay-persist resolv-retry "
        "route-gateway route-ipv6-gateway route-method route-metric route-pre-down route-up "
        "rport script-security server-ipv6 server-poll-timeout session-timeout shaper "
        "sndbuf status-version tcp-queue-limit tls-cert-profile tls-cipher tls-ciphersuites "
        "tls-crypt-v2-verify tls-export-cert tls-groups tls-timeout tls-verify "
        "tls-version-max tmp-dir topology tran-window tun-mtu-extra txqueuelen udp-mtu up "
        "user verb vlan-accept vlan-pvid writepid x509-track"),
    (1, 2): (
        "auth-user-pass-verify compat-mode connect-retry connection dhcp-option fragment "
        "ifconfig-ipv6-push ifconfig-pool-persist inactive iroute prng reneg-sec secret "
        "setenv setenv-safe stale-routes-check status tls-auth tls-crypt tls-crypt-v2 "
        "tls-version-min tun-mtu tun-mtu-max verify-hash verify-x509-name"),
    (1, 3): (
        "http-proxy-option remote route-ipv6 socks-proxy"),
    (1, 4): (
        "http-proxy route"),
    (1, None): (
        "bind-dev dns http-proxy-user-pass ignore-unknown-option key-derivation msg-channel "
        "pkcs11-private-mode pkcs11-providers plugin protocol-flags providers "
        "x509-username-field"),
    (2, 2): (
        "connect-freq connect-freq-initial hash-size ifconfig ifconfig-ipv6 "
        "ifconfig-push-constraint keepalive pull-filter static-challenge"),
    (2, 3): (
        "http-proxy-override ifconfig-pool ifconfig-push management port-share server"),
    (2, None): (
        "keying-material-exporter"),
    (4, 4): (
        "client-nat"),
}
COUNTS: dict[str, tuple[int, int]] = {
    name: (low, UNBOUNDED if high is None else high)
    for (low, high), names in _COUNTS.items() for name in names.split()}
"""Option -> the fewest and most parameters OpenVPN takes."""
SPECIAL_COUNTS: dict[str, dict[int, frozenset[str] | None]] = {
    "server-bridge": {0: None, 1: frozenset({"nogw"}), 4: None},
    "crl-verify": {1: None, 2: frozenset({"dir"})},
}
"""Options whose count depends on a value: count -> what the last parameter must be
(None: anything). ``server-bridge`` alone is DHCP-proxy mode, ``crl-verify FILE dir``."""
INLINE_OPTIONS = frozenset({
    "auth-gen-token-secret", "auth-user-pass", "ca", "cert", "connection", "crl-verify",
    "dh", "extra-certs", "http-proxy-user-pass", "key", "peer-fingerprint", "pkcs12",
    "secret", "tls-auth", "tls-crypt", "tls-crypt-v2", "verify-hash"})
"""Options OpenVPN takes as an inline ``<option>`` block (OPT_P_INLINE)."""
REMOVED = {
    "compat-names": "was removed in OpenVPN 2.5",
    "no-name-remapping": "was removed in OpenVPN 2.5",
    "mtu-dynamic": "has been replaced by --fragment",
}
PROTOCOLS = frozenset({
    "udp", "tcp", "tcp-server", "tcp-client", "udp4", "tcp4", "tcp4-server", "tcp4-client",
    "udp6", "tcp6", "tcp6-server", "tcp6-client"})
"""socket.c's proto_names."""
TLS_VERSIONS = frozenset({"1.0", "1.1", "1.2", "1.3"})
CHOICES: dict[tuple[str, int], frozenset[str]] = {
    ("proto", 1): PROTOCOLS, ("proto-force", 1): PROTOCOLS, ("remote", 3): PROTOCOLS,
    ("topology", 1): frozenset({"net30", "p2p", "subnet"}),
    ("mode", 1): frozenset({"p2p", "server"}),
    ("comp-lzo", 1): frozenset({"yes", "no", "adaptive"}),
    ("compress", 1): frozenset({"stub", "stub-v2", "migrate", "lzo", "lz4", "lz4-v2"}),
    ("allow-compression", 1): frozenset({"yes", "no", "asym"}),
    ("key-direction", 1): frozenset({"0", "1"}),
    ("tls-auth", 2): frozenset({"0", "1"}), ("secret", 2): frozenset({"0", "1"}),
    ("remote-cert-tls", 1): frozenset({"client", "server"}),
    ("ns-cert-type", 1): frozenset({"client", "server"}),
    ("verify-x509-name", 2): frozenset({"subject", "name", "name-prefix"}),
    ("tls-version-min", 1): TLS_VERSIONS, ("tls-version-min", 2): frozenset({"or-highest"}),
    ("tls-version-max", 1): TLS_VERSIONS,
    ("pull-filter", 1): frozenset({"accept", "ignore", "reject"}),
    ("verify-client-cert", 1): frozenset({"none", "optional", "require"}),
    ("remap-usr1", 1): frozenset({"SIGHUP", "SIGTERM"}),
    ("auth-user-pass-verify", 2): frozenset({"via-env", "via-file"}),
    ("vlan-accept", 1): frozenset({"tagged", "untagged", "all"}),
    ("status-version", 1): frozenset({"1", "2", "3"}),
}
"""(option, parameter) -> the values add_option accepts there."""
SERVER_ONLY = (
    "ifconfig-pool", "ifconfig-pool-persist", "ifconfig-ipv6-pool", "hash-size",
    "learn-address", "client-connect", "client-crresponse", "client-disconnect",
    "client-config-dir", "ccd-exclusive", "client-to-client", "duplicate-cn", "connect-freq",
    "username-as-common-name", "auth-user-pass-optional", "opt-verify",
    "auth-user-pass-verify", "auth-gen-token", "port-share", "stale-routes-check",
    "vlan-tagging", "force-tls-key-material-export", "client-cert-not-required")
"""Options options_postprocess_verify_ce refuses outside ``--mode server``."""
