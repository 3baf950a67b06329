"""The conformance suite: pytest modules whose test names carry requirement id and level.

Run with ``kconform run --adapter module:attr`` or ``pytest --pyargs conformance.suite
--kconform-adapter module:attr``. Each test draws its inputs with Hypothesis, asks the adapter,
and hands the observation to a pure checker in ``conformance.checkers``.
"""
