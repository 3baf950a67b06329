"""Broken implementations the suite must kill: protocol and pipeline mutants, and mutation testing of the pure core."""
