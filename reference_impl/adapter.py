"""The reference implementation's protocol-level adapter (``kconform run`` uses it by default).

Each method hands the suite one mechanism of the pure core. Broken variants of this adapter
(``kconform.conformance.mutants.protocol``) override exactly one method each, which is how the suite proves that
every invariant catches a real bug class.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .assignment import Owner, owner, plan
from .commit import ExactlyOnceSink, NamingStrategy, SinkCheckpoint
from .discovery import Metadata, PartitionDiscoverer, Subscription, ZeroPartitionsPolicy
from .kafka_strategies import ASSIGNORS, Assignment, Group, KafkaPartitioner, StickyPartitioner
from .ports import TransactionalLog
from .restore import RestoreVariant, SourceCheckpoint, SourceJob
from .types import SubtaskIndex, TopicPartition


@dataclass(frozen=True)
class ReferenceAdapter:
    """The reference core, in one restore variant and one naming strategy."""

    name: str = "reference"
    restore_variant: RestoreVariant = RestoreVariant.UNION_FILTER
    naming: NamingStrategy = NamingStrategy.INCREMENTING
    discovery_of_zero: ZeroPartitionsPolicy = ZeroPartitionsPolicy.IGNORE
    capabilities: frozenset[str] = frozenset(
        {
            "assignment",
            "discovery",
            "regex-subscription",
            "partition-growth",
            "source-state",
            "rescale",
            "offset-commit",
            "exactly-once-sink",
            "sink-close",
            "keyed-sink-placement",
            "group-assignment",
        }
    )
    assignment_strategies: frozenset[str] = frozenset(ASSIGNORS)
    """The consumer-group assignors ``assign_group`` offers, by Kafka's protocol names."""
    owner: Owner = owner
    """Who owns a partition: Flink's assigner, or a connector's own (discovery and restore place by it too)."""

    def assign(self, topic: str, partition: int, parallelism: int) -> int:
        return self.owner(TopicPartition(topic, partition), parallelism)

    def plan(self, partitions: Sequence[TopicPartition], parallelism: int) -> dict[TopicPartition, int]:
        """The whole plan at once: the core's ``assignment.plan``, as the Spark source plans each batch; with
        another assigner (``owner``, or a subclass's ``assign``), that assigner partition by partition."""
        if type(self).assign is not ReferenceAdapter.assign or self.owner is not owner:
            return {tp: self.assign(tp.topic, tp.partition, parallelism) for tp in partitions}
        return dict(plan(partitions, parallelism).owner_of())

    def discoverer(
        self, subscription: Subscription, subtask: int, parallelism: int, on_zero: ZeroPartitionsPolicy
    ) -> PartitionDiscoverer:
        return PartitionDiscoverer(subscription, SubtaskIndex(subtask), parallelism, on_zero, owner=self.owner)

    def source(
        self, subscription: Subscription, parallelism: int, initial_offset: int, keep_unsubscribed: bool
    ) -> SourceJob:
        return SourceJob(
            subscription,
            parallelism,
            self.restore_variant,
            keep_unsubscribed,
            self.discovery_of_zero,
            initial_offset,
            self.owner,
        )

    def restore_source(
        self,
        checkpoint: SourceCheckpoint,
        parallelism: int,
        subscription: Subscription,
        metadata: Metadata,
        keep_unsubscribed: bool,
        initial_offset: int,
    ) -> SourceJob:
        return SourceJob.restore(
            checkpoint,
            parallelism,
            subscription,
            metadata,
            self.restore_variant,
            keep_unsubscribed,
            self.discovery_of_zero,
            initial_offset,
            self.owner,
        )

    def sink(self, log: TransactionalLog, prefix: str, parallelism: int) -> ExactlyOnceSink:
        return ExactlyOnceSink(log, prefix, parallelism, self.naming)

    def recover_sink(
        self, log: TransactionalLog, prefix: str, parallelism: int, checkpoint: SinkCheckpoint
    ) -> ExactlyOnceSink:
        return ExactlyOnceSink.recover(log, prefix, parallelism, checkpoint, self.naming)

    def initial_sink_checkpoint(self, parallelism: int) -> SinkCheckpoint:
        return ExactlyOnceSink.initial_checkpoint(parallelism)

    def partitioner(self) -> KafkaPartitioner:
        """A fresh partitioner, as a new sink writer has: Java's, keyless records sticky."""
        return StickyPartitioner()

    def assign_group(self, strategy: str, group: Group) -> Assignment:
        return ASSIGNORS[strategy](group)


ADAPTER = ReferenceAdapter()
FLIP27_POOLING = ReferenceAdapter(
    name="reference-flip27-pooling",
    restore_variant=RestoreVariant.SPLIT_REDISTRIBUTION,
    naming=NamingStrategy.POOLING,
)
"""The other variants of every option, so ``make test`` runs the suite on both."""
