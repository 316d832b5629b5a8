"""Fixtures shared by the unit tests."""

from tests.lab.serving import fake_sections  # noqa: F401 - a fixture, found by name
