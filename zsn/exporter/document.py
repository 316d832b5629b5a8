"""`zsn --export`: one versioned snapshot of every section, as JSON or Prometheus text.

Sections are the registered domains (`zsn.domains`); each one's provider module is
imported only when asked for, so the headless path stays lean (it never imports
Textual or Rich). A provider module exposes:

- ``present(host) -> bool``: whether the section exists on this host;
- ``collect(host, *, include_secrets) -> dict``: JSON-ready data, with an
  ``"errors"`` list when only part could be read; counters, never rates that need a
  second reading;
- ``prometheus(data) -> list[MetricFamily]``: metrics from the collected data;
- optionally ``begin_sampling(host) -> Callable[[], dict]``, for a section whose
  JSON carries rates from two readings: it takes the first one before any section is
  read and returns what finishes the section, so the window overlaps the others.
  With ``sample_rates`` False (Prometheus: a scraper takes rates from counters
  itself) `collect` is used instead and nothing waits out a window.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, NamedTuple

from zsn import __version__
from zsn.domains import ExportFace, domain, domains, export_face
from zsn.errors import ValidationError, ZsnError, did_you_mean
from zsn.exporter.prometheus import MetricFamily, render
from zsn.system import files
from zsn.system.files import describe_os_error
from zsn.system.host import Host

SCHEMA_VERSION = 1


class ExportResult(NamedTuple):
    """One snapshot: the document to print and the errors met reading it."""

    document: dict[str, Any]
    errors: list[str]
    """Every section's errors as one-line messages prefixed by the section."""
    durations: dict[str, float] = {}
    """Seconds each section's reading took."""


def sections() -> list[str]:
    """Every section's name, in registry order."""
    return [each.name for each in domains()]


def _provider(section: str) -> ExportFace:
    return export_face(domain(section))


def check_sections(requested: Sequence[str]) -> list[str]:
    """The sections asked for, each once; an unknown one is refused (bad input)."""
    known_sections = sections()
    unknown = [name for name in requested if name not in known_sections]
    if unknown:
        known = ", ".join(sorted(known_sections))
        raise ValidationError(f"unknown section {unknown[0]!r}"
                              f"{did_you_mean(unknown[0], known_sections)} (known: {known})")
    return list(dict.fromkeys(requested))


def collect(host: Host, requested: list[str], *, include_secrets: bool = False,
            sample_rates: bool = True) -> ExportResult:
    """Collect `requested` sections, or every section present on `host` when none is named."""
    chosen = check_sections(requested)
    if not chosen:
        chosen = [name for name in sections() if _provider(name).present(host)]
    document: dict[str, Any] = {
        "zsn": {"version": __version__, "schema": SCHEMA_VERSION},
        "host": {"hostname": files.read_hostname(host), "time": int(time.time())},
    }
    readers: dict[str, Callable[[], Any]] = {}
    for name in chosen:
        provider = _provider(name)
        begin = getattr(provider, "begin_sampling", None) if sample_rates else None
        if begin is None:
            readers[name] = partial(provider.collect, host, include_secrets=include_secrets)
            continue
        started = _read_section(partial(begin, host))
        readers[name] = started if callable(started) else partial(dict, started)
    errors: list[str] = []
    durations: dict[str, float] = {}
    for name, read in readers.items():
        started = time.monotonic()
        data = _read_section(read)
        durations[name] = time.monotonic() - started
        document[name] = data
        errors.extend(f"{name}: {message}" for message in data.get("errors", ()))
    return ExportResult(document, errors, durations)


def _read_section(read: Callable[[], Any]) -> Any:
    """`read()`, or the section's error entry when it could not be read at all."""
    try:
        return read()
    except ZsnError as exc:  # say so, go on with the other sections
        return {"errors": [str(exc)]}
    except OSError as exc:
        return {"errors": [describe_os_error(exc)]}


def to_json(result: ExportResult, pretty: bool = False) -> str:
    """Compact JSON (one line) for scripts; indented for a person at a terminal.

    Indenting switches `json` to its pure-Python encoder, several times slower
    on a big server's snapshot, so only a terminal gets it.
    """
    if pretty:
        return json.dumps(result.document, indent=2) + "\n"
    # A tree of dicts and lists built for this snapshot: no cycle to look for.
    return json.dumps(result.document, separators=(",", ":"), check_circular=False) + "\n"


def collector_families(readings: list[tuple[str, bool, float]]) -> list[MetricFamily]:
    """Each section's success and duration, and zsn's build: the same lines from
    `zsn serve` and from an export written for the textfile collector, so one alert
    rule watches both. `readings` are (section, complete, seconds)."""
    success = MetricFamily("zsn_collector_success", "gauge",
                           "1 when the collector read its section completely (within its "
                           "deadline, for zsn serve), else 0.")
    duration = MetricFamily("zsn_collector_duration_seconds", "gauge",
                            "Seconds the collector's reading took (its deadline when it "
                            "missed it).")
    for name, complete, seconds in readings:
        labels = {"collector": name}
        success.add(labels, int(complete))
        duration.add(labels, round(seconds, 6))
    build = MetricFamily("zsn_build_info", "gauge",
                         "zsn's version (value 1) and the Python running it.")
    build.add({"version": __version__, "python": ".".join(map(str, sys.version_info[:3]))}, 1)
    return [success, duration, build]


def to_prometheus(result: ExportResult) -> str:
    families: list[MetricFamily] = []
    readings = []
    for name in sections():
        if name in result.document:
            data = result.document[name]
            families.extend(_provider(name).prometheus(data))
            readings.append((name, not data.get("errors"), result.durations.get(name, 0.0)))
    return render(families + collector_families(readings))
