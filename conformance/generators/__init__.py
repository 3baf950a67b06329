"""Hypothesis strategies for Kafka-shaped inputs and consumer groups, shared by the suite and the project tests."""
