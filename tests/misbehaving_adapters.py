"""Adapters that misbehave the ways user adapters do; tests/test_misbehaving_adapter.py runs the suite on them."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from kconform.conformance.spark.pipeline import KconformKafkaAdapter
from kconform.reference_impl.adapter import ReferenceAdapter


@dataclass(frozen=True)
class Raises(ReferenceAdapter):
    def assign(self, topic: str, partition: int, parallelism: int) -> int:
        raise RuntimeError("connector bug: lookup table not loaded")


@dataclass(frozen=True)
class NegativeIndex(ReferenceAdapter):
    def assign(self, topic: str, partition: int, parallelism: int) -> int:
        return -1


@dataclass(frozen=True)
class Hangs(ReferenceAdapter):
    def assign(self, topic: str, partition: int, parallelism: int) -> int:
        threading.Event().wait()  # blocks forever, as a deadlocked client would
        return 0


RAISES = Raises(name="raises")
NEGATIVE_INDEX = NegativeIndex(name="negative-index")
HANGS = Hangs(name="hangs")


@dataclass(frozen=True)
class ReadStreamRaises(KconformKafkaAdapter):
    def read_stream(self, spark: Any, source: Any) -> Any:
        raise RuntimeError("connector bug: no such format 'kafka2'")


@dataclass(frozen=True)
class PipelineWithoutMethods:
    """Declares the pipeline level but implements neither level."""

    name: str = "pipeline-without-methods"
    capabilities: frozenset[str] = frozenset({"pipeline"})


READ_STREAM_RAISES = ReadStreamRaises(name="read-stream-raises")
PIPELINE_WITHOUT_METHODS = PipelineWithoutMethods()
