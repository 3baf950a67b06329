"""The TLA+ models and their TLC configurations, shipped as package data."""
