"""A drawn workload over a Flink job's whole life: topics, subscription, start, sink, and runs restored from each
other's savepoints with records written, partitions added and topics created between them and subtask failures
inside them (``schedule``: pure data and its Hypothesis strategies; ``conformance/suite/test_flink_workload.py``
runs a schedule in the Flink harness and judges it).
"""
