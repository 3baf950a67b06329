"""Drawn workloads: what applications, operators and faults do to a real component, drawn by Hypothesis as
data, run against it, recorded as a history and judged by pure checkers (Jepsen's generator and nemesis).

``clients``: real Kafka producers and consumers (confluent-kafka, the release this interpreter imports).
"""
