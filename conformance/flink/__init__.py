"""Flink's own Kafka connector under kconform's checkers: real Flink jobs in a local MiniCluster.

``versions`` pins each ``flink-connector-kafka`` release with the Flink it runs on; ``resolve`` builds the harness
(``jvm/flink-harness``) for one release on demand; ``job`` describes one job run; ``harness`` runs it and reads
back what it did; ``history`` turns what each subtask recorded into the reads the pipeline checkers judge.
"""
