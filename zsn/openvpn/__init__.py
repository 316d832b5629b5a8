"""OpenVPN connections run as systemd units: configs, live state, DNS hook, lint."""
