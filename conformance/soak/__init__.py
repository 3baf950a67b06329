"""``kconform soak``: seeded fault schedules over a multi-batch exactly-once query on a real broker.

``schedule`` draws the faults (pure, no I/O); ``faults`` applies them to the broker, the topics and
a driver's checkpoint; ``runner`` runs one schedule end to end and judges its history; ``command``
is the verb (progress, summary table, saved failures). Nothing is imported here, so
``kconform.conformance.soak.schedule`` imports nothing heavy and nothing circular.
"""
