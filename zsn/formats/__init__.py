"""File formats more than one domain writes (systemd's unit files, sysctl.d): each
module is that format's one reader and one renderer (`zsn.meaning`)."""
