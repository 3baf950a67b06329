"""The reference implementation's protocol-level adapter (``kconform run`` uses it by default).

Each method hands the suite one mechanism of the pure core. Broken variants of this adapter
(``kconform.conformance.mutants.protocol``) override exactly one method each, which is how the suite proves that
every invariant catches a real bug class.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from .assignment import Owner, owner, plan
from .commit import ExactlyOnceSink, NamingStrategy, SinkCheckpoint, refuse_shared_prefixes
from .configs import (
    CONTRACT_VERSION,
    DiscovererConfig,
    GroupStartConfig,
    RecoveryConfig,
    RestoreConfig,
    SinkConfig,
    SourceConfig,
)
from .discovery import PartitionDiscoverer, ZeroPartitionsPolicy
from .group_start import committed_start
from .kafka_strategies import ASSIGNORS, Assignment, Group, KafkaPartitioner, StickyPartitioner
from .restore import RestoreVariant, SourceJob
from .types import SubtaskIndex, TopicPartition


@dataclass(frozen=True)
class ReferenceAdapter:
    """The reference core, in one restore variant and one naming strategy."""

    contract_version: ClassVar[int] = CONTRACT_VERSION
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
            "read-committed-source",
            "rescale",
            "offset-commit",
            "exactly-once-sink",
            "sink-close",
            "sink-job",
            "naming-switch",
            "keyed-sink-placement",
            "group-assignment",
            "group-offsets-start",
        }
    )
    assignment_strategies: frozenset[str] = frozenset(ASSIGNORS)
    """The consumer-group assignors ``assign_group`` offers, by Kafka's protocol names."""
    owner: Owner = owner
    """Who owns a partition: Flink's assigner, or a connector's own (discovery and restore place by it too)."""
    job_class: type[SourceJob] = SourceJob
    """The source job fresh and restored sources run (a source mutant puts its broken one here)."""

    def assign(self, topic: str, partition: int, parallelism: int) -> int:
        return self.owner(TopicPartition(topic, partition), parallelism)

    def plan(self, partitions: Sequence[TopicPartition], parallelism: int) -> dict[TopicPartition, int]:
        """The whole plan at once (capability ``assignment-plan``, which ``ADAPTER`` declares): the core's
        ``assignment.plan``, as the Spark source plans each batch; with another ``owner``, that owner's."""
        if self.owner is not owner:
            return {tp: self.owner(tp, parallelism) for tp in partitions}
        return dict(plan(partitions, parallelism).owner_of())

    def discoverer(self, config: DiscovererConfig) -> PartitionDiscoverer:
        subtask = SubtaskIndex(config.subtask)
        return PartitionDiscoverer(config.subscription, subtask, config.parallelism, config.on_zero, owner=self.owner)

    def source(self, config: SourceConfig) -> SourceJob:
        return self.job_class(
            config.subscription,
            config.parallelism,
            self.restore_variant,
            config.keep_unsubscribed,
            self.discovery_of_zero,
            config.initial_offset,
            self.owner,
            config.isolation,
        )

    def restore_source(self, config: RestoreConfig) -> SourceJob:
        return self.job_class.restore(
            config.checkpoint,
            config.parallelism,
            config.subscription,
            config.metadata,
            self.restore_variant,
            config.keep_unsubscribed,
            self.discovery_of_zero,
            config.initial_offset,
            self.owner,
            config.isolation,
        )

    def group_start(self, config: GroupStartConfig) -> dict[TopicPartition, int]:
        return committed_start(config.group, config.partitions, config.committed, config.fallback)

    def sink(self, config: SinkConfig) -> ExactlyOnceSink:
        return ExactlyOnceSink(config.log, config.prefix, config.parallelism, config.naming or self.naming)

    def sinks(self, configs: Sequence[SinkConfig]) -> list[ExactlyOnceSink]:
        """The exactly-once sinks of one job, started together: refused when one has no prefix or shares one."""
        refuse_shared_prefixes([config.prefix for config in configs])
        return [self.sink(config) for config in configs]

    def recover_sink(self, config: RecoveryConfig) -> ExactlyOnceSink:
        naming = config.naming or self.naming
        return ExactlyOnceSink.recover(config.log, config.prefix, config.parallelism, config.checkpoint, naming)

    def initial_sink_checkpoint(self, parallelism: int) -> SinkCheckpoint:
        return ExactlyOnceSink.initial_checkpoint(parallelism)

    def partitioner(self) -> KafkaPartitioner:
        """A fresh partitioner, as a new sink writer has: Java's, keyless records sticky."""
        return StickyPartitioner()

    def assign_group(self, strategy: str, group: Group) -> Assignment:
        return ASSIGNORS[strategy](group)


ADAPTER = ReferenceAdapter(capabilities=ReferenceAdapter.capabilities | {"assignment-plan"})
"""The reference core; it also hands the suite its whole-list plan, so the plan the Spark source uses is judged.
A subclass that changes ``assign`` plans partition by partition unless it declares ``assignment-plan`` too."""
FLIP27_POOLING = ReferenceAdapter(
    name="reference-flip27-pooling",
    restore_variant=RestoreVariant.SPLIT_REDISTRIBUTION,
    naming=NamingStrategy.POOLING,
)
"""The other variants of every option, so ``make test`` runs the suite on both."""
