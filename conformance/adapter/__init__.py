"""How an implementation plugs into the suite: ``interface`` (what an adapter provides: its protocols, capabilities
and contract), ``loader`` (``--adapter module:attr``, contract 1's shim) and ``guard`` (every call the suite makes)."""
