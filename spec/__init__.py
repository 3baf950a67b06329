"""The requirements (one Markdown file per area) and the TLA+ models, shipped as package data."""
