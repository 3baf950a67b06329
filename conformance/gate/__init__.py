"""The gate: ``kconform run``'s runner and pytest plugin, its profiles and expectations, and the reports it writes."""
