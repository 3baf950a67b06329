"""The gate: ``kconform run``'s command (``run_command``), orchestration (``runner``), settings (``options``), result
model (``results``), pytest collector and plugin, its profiles and expectations, and the reports it writes."""
