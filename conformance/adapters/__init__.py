"""Shipped pipeline adapters, for connectors judged as they are
(``--adapter kconform.conformance.adapters.NAME:ADAPTER``).

Each module maps the suite's ``SourceSpec`` and ``SinkSpec`` onto one connector's own options and
declares only the capabilities the connector offers; its known deviations live beside it, in
``NAME.expectations.toml``, and its verdicts in ``docs/verdicts/``.
"""
