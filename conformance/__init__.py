"""kconform's conformance suite: adapters, checkers, generators, runner and reports."""
