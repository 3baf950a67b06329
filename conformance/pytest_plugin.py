"""pytest plugin (entry point ``pytest11: kconform``): profiles and suite options for any pytest run.

Loading it registers the Hypothesis profiles, so ``--hypothesis-profile quick|default|thorough``
works in a user's own pytest run as in ours; without that flag ``KCONFORM_PROFILE`` decides.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

from conformance.profiles import profile_from_env, register_profiles

register_profiles()


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("hypothesis_profile", None) is None:
        settings.load_profile(profile_from_env())
