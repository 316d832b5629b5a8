"""zsn: network and storage plumbing of a Linux box, in a terminal UI and a headless export."""

__version__ = "0.1.0"
