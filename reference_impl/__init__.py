"""kconform's reference implementation: a pure core of Flink-style Kafka connector semantics.

Discovery, assignment, union-state restore and the transactional commit protocol are pure
functions or small state machines over the ports in ``kconform.reference_impl.ports``.
"""
