"""The Spark harness: pipeline adapters run as real streaming queries, in a driver of their own or on a
standalone cluster."""
