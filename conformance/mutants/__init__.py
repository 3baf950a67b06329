"""Broken implementations the suite must kill: protocol and pipeline mutants, each registered beside its bug."""
