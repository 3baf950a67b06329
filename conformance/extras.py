"""Which optional parts of kconform are installed here.

A core install (``pip install kconform``) runs the protocol level only; the pipeline level needs
PySpark and the Kafka client, which the ``pipeline`` extra brings. Asking for that level without
them is ERROR (could not check) naming the fix, never a requirement's failure.
"""

from __future__ import annotations

from importlib.util import find_spec
from typing import Final

PIPELINE_MODULES: Final = ("pyspark", "pandas", "numpy", "pyarrow", "confluent_kafka")
"""What the pipeline level imports that the core install leaves out."""
PIPELINE_FIX: Final = (
    "install kconform with its pipeline extra from the wheel or checkout it came from (no kconform release is on "
    "a package index): pip install 'path/to/kconform-<version>-py3-none-any.whl[pipeline]', or -e "
    "'path/to/kconform[pipeline]'"
)
PIPELINE_SKIP: Final = f"the pipeline level needs the pipeline extra (PySpark, confluent-kafka): {PIPELINE_FIX}"


def pipeline_missing() -> str | None:
    """Why the pipeline level cannot run here, naming the fix; ``None`` when it can."""
    missing = [name for name in PIPELINE_MODULES if find_spec(name) is None]
    return f"{', '.join(missing)} not installed: {PIPELINE_SKIP}" if missing else None


def needs_pipeline_extra(error: ImportError) -> bool:
    """Whether ``error`` is a module of the pipeline extra missing (so the fix is installing it)."""
    return (error.name or "").partition(".")[0] in PIPELINE_MODULES
