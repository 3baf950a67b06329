"""kconform: the import package that ships the repository's top-level folders under one name.

``kconform.conformance``, ``kconform.reference_impl``, ``kconform.spec`` and ``kconform.fixtures`` are the
folders of the same name beside this one, mapped by ``[tool.setuptools] package-dir`` in pyproject.toml, so
an installed kconform cannot collide with a user's own ``conformance/`` folder, and a wheel carries the
spec, TLA+ models and fixtures the suite reads.
"""
