"""JSON text read with a fixed bound on its nesting, before any parser recurses into it.

Python's ``json`` module recurses once per nested array or object and fails with a
``RecursionError`` near the interpreter's limit (which depends on the caller's own stack); a
document nested deeper than :data:`MAX_DEPTH` is refused here first, at a depth that does not
depend on who calls. The depth is counted in bounded chunks with NumPy, string contents left
out, so a long document costs no per-character Python.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hurray_decl.lazy_modules import numpy as np

MAX_DEPTH = 200
"""The deepest nesting of arrays and objects read: the depth pydantic's JSON parser allows too,
so a document nests alike whichever way a model reads it."""

CHUNK = 1 << 20
"""Bytes of text counted at a time."""

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


class TooDeep(ValueError):
    """A JSON text nests arrays and objects deeper than :data:`MAX_DEPTH`."""


def depth(text: str | bytes) -> int:
    """The deepest nesting of arrays and objects in ``text`` (string contents not counted)."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    bare = _STRING.sub(b'""', raw)
    deepest = level = 0
    for start in range(0, len(bare), CHUNK):
        chunk = np.frombuffer(bare, dtype=np.uint8, count=min(CHUNK, len(bare) - start), offset=start)
        steps = (np.isin(chunk, (0x5B, 0x7B)).astype(np.int64) - np.isin(chunk, (0x5D, 0x7D)))
        if not steps.any():
            continue
        levels = np.cumsum(steps) + level
        deepest = max(deepest, int(levels.max()))
        level = int(levels[-1])
    return deepest


def loads(text: str | bytes) -> Any:
    """``json.loads(text)``, refusing a nesting deeper than :data:`MAX_DEPTH` first
    (:class:`TooDeep`, a ValueError like json's own errors)."""
    found = depth(text)
    if found > MAX_DEPTH:
        raise TooDeep(f"arrays and objects nest {found} deep, more than the {MAX_DEPTH} levels read")
    return json.loads(text)


__all__ = ["MAX_DEPTH", "TooDeep", "depth", "loads"]
