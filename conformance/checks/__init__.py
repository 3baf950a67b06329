"""Checkers and what they judge: pure functions over observations and recorded histories, and the evidence they keep."""
