"""The machine's state for monitoring: every export section as a versioned document.

- `document`: ``zsn --export`` (JSON or Prometheus text, to stdout or a textfile);
- `prometheus`: the Prometheus text format (what every domain's ``prometheus(data)``
  returns, and what both faces write);
- `serve`: ``zsn serve``, the long-running exporter, with `collectors` (one per
  section, kept warm between scrapes) and `webconfig` (TLS and basic auth).

Nothing here names a domain (sections come from `zsn.domains`) or imports Textual or
Rich. A domain imports only `prometheus` from this package.
"""
