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


def _registry_as_found():
    """Leave the project's private schemes (0xF0, 0xF1) registered only if they were before."""
    engine = sys.modules.get("hurray_decl.hurray.quantization")  # nothing is imported here that was not
    before = {tag: None if engine is None else engine.SCHEMES.get(tag) for tag in PROJECT_TAGS}
    yield
    engine = sys.modules.get("hurray_decl.hurray.quantization")
    for tag in PROJECT_TAGS:
        if before[tag] is None and engine is not None and engine.SCHEMES.get(tag) is not None:
            engine.unregister_private_scheme(tag)


@pytest.fixture(autouse=True)
def _no_private_scheme_left():
    """The project's private schemes are registered by the code that reads or writes them
    (``hd.open`` among it); each test leaves the registry as it found it, so that tests listing
    every registered scheme see the built-in ones only."""
    yield from _registry_as_found()


@pytest.fixture(autouse=True, scope="module")
def _no_private_scheme_left_by_a_module():
    """The same for a module's fixtures (a module-scoped fixture that opens a file registers them
    before its first test, which then finds them registered)."""
    yield from _registry_as_found()


PRIVATE_TAG = 0xF0
"""hurray_decl.hurray.schemes.ggml_super_block.TAG (tests/test_private_scheme.py checks it)."""
PROJECT_TAGS = (PRIVATE_TAG, 0xF1)
"""The tags of hurray_decl.hurray.quantization.PROJECT_SCHEMES (tests/convert/test_ggml_codebook.py checks them)."""
