"""``kconform soak``: seeded fault schedules over a multi-batch exactly-once query on a real broker.

``schedule`` draws the faults (pure, no I/O).
"""
