"""The client workload: drawn schedules of producers, consumers, operators and broker faults on a real Kafka.

``settings`` draws client settings from the release's own definitions, ``schedule`` the operations (pure
data), ``history`` is what a run records, ``driver`` runs a schedule with confluent-kafka (the only I/O), and
``kconform.conformance.checks.client_workload_checkers`` judges the history.
"""
