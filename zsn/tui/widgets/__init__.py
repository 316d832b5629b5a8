"""Widgets shared by panes and screens."""
