import os
import sys

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
settings.register_profile("dev", max_examples=200, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_configure(config):
    config.addinivalue_line("markers", "rules(*ids): the RULES.md rules a test proves by acceptance or exact value")


@pytest.fixture(autouse=True)
def _no_private_scheme_left():
    """The project's private scheme (0xF0) is registered by the conversions that write or read it;
    each test leaves the registry as it found it, so that tests listing every registered scheme
    see the built-in ones only."""
    engine = sys.modules.get("hurray_decl.hurray.quantization")  # nothing is imported here that was not
    before = None if engine is None else engine.SCHEMES.get(PRIVATE_TAG)
    yield
    engine = sys.modules.get("hurray_decl.hurray.quantization")
    if before is None and engine is not None and engine.SCHEMES.get(PRIVATE_TAG) is not None:
        engine.unregister_private_scheme(PRIVATE_TAG)


PRIVATE_TAG = 0xF0
"""hurray_decl.hurray.schemes.ggml_super_block.TAG (tests/test_private_scheme.py checks it)."""
