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
    """The project's private schemes (0xF0, 0xF1) are registered by the code that reads or writes
    them; each test leaves the registry as it found it, so that tests listing every registered
    scheme see the built-in ones only."""
    engine = sys.modules.get("hurray_decl.hurray.quantization")  # nothing is imported here that was not
    before = {tag: None if engine is None else engine.SCHEMES.get(tag) for tag in PROJECT_TAGS}
    yield
    engine = sys.modules.get("hurray_decl.hurray.quantization")
    for tag in PROJECT_TAGS:
        if before[tag] is None and engine is not None and engine.SCHEMES.get(tag) is not None:
            engine.unregister_private_scheme(tag)


PRIVATE_TAG = 0xF0
"""hurray_decl.hurray.schemes.ggml_super_block.TAG (tests/test_private_scheme.py checks it)."""
PROJECT_TAGS = (PRIVATE_TAG, 0xF1)
"""The tags of hurray_decl.hurray.quantization.PROJECT_SCHEMES (tests/convert/test_ggml_codebook.py checks them)."""
