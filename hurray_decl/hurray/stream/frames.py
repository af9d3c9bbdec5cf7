"""What the reader and the writer of Hurray streams share (STREAM-FORMAT.md § 2-4): the items,
the reader's limits, the rules a descriptor's own refusals become in a stream, and the paths
errors carry.

A stream adds no bytes of its own: a frame is a tensor descriptor (the declaration of
:mod:`hurray_decl.hurray.tensor.descriptor`) followed by its buffers in table order, so the
only stream-level facts are declared here as the limits and the code map below.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from hurray_decl.declare.schema import field_offsets
from hurray_decl.hurray.tensor.header import HEADER_LENGTH, PREAMBLE, PREAMBLE_LENGTH
from hurray_decl.hurray.tensor.model import TensorDescriptor

DESCRIPTOR_LIMIT = 16 * 1024 * 1024
"""The default descriptor limit (HS-FRM-07): the reference's DEFAULT_MAX_DESCRIPTOR_BYTES."""
CHUNK = 1 << 20
"""Buffer storage grows by at most this many bytes per read (HS-FRM-08)."""
MAX_DEPTH = 8
"""Composite heads nest at most this deep, readers and writers alike (HS-CMP-04, HS-D05: the depth
composite.md states, which the container's HF-DATA-17 uses too)."""
MIN_DESCRIPTOR = HEADER_LENGTH
"""The smallest descriptor_length a prefix may carry (HS-FRM-06): the fixed header."""
PREFIX_LENGTH = PREAMBLE_LENGTH
"""magic, versions and descriptor_length: the bytes every prefix check needs (HS-D03)."""
PREFIX_FIELDS = {name: at for name, (at, _) in field_offsets(PREAMBLE).items()}
"""Where each prefix field sits in a frame, from the preamble's declaration."""
CONTAINER_MAGIC = b"HRRYFILE"
"""The first 8 bytes of a ``.hrry`` container, which a stream reader refuses (HS-FRM-12)."""

PREFIX_RULES = {"HT-HDR-04": "HS-FRM-05", "HT-HDR-05": "HS-VER-02", "HT-HDR-06": "HS-VER-02",
                "HT-HDR-07": "HS-FRM-06"}
"""A refusal of the preamble's declaration (magic, major, descriptor_length >= 20), read on the
10-byte prefix, under the stream rule that times it; any other descriptor refusal is HS-FRM-09."""
DESCRIPTOR_RULE = "HS-FRM-09"
COMPOSITE_RULES = ("HS-CMP-03", "HS-CMP-04", "HS-CMP-02")
"""(member or close-time check, depth, torn) for :class:`~hurray_decl.hurray.container.composite.CompositeWalk`."""


class TensorItem(NamedTuple):
    """One plain tensor of a stream: its descriptor and its buffers' bytes, in table order (the
    reader's are bytearrays, kept as they grew with the bytes that arrived)."""

    descriptor: TensorDescriptor
    buffers: tuple[bytes | bytearray, ...]


class CompositeItem(NamedTuple):
    """A composite: its head (layout 0x0B, no buffers) and its members, each an item (HS-CMP-07)."""

    head: TensorDescriptor
    members: tuple[Item, ...]


Item = TensorItem | CompositeItem


_NUMBER = re.compile(r"^\d+$")


def dotted(path: str) -> str:
    """A descriptor error path in the stream's dotted form: ``descriptor -> buffers -> 1 -> byte_size``
    becomes ``descriptor.buffers[1].byte_size``; ``[3]`` (an element) stays an index."""
    out = ""
    for part in path.split(" -> "):
        if _NUMBER.match(part):
            out += f"[{part}]"
        elif part.startswith("[") and part.endswith("]"):
            out += part
        else:
            out += ("." if out else "") + part
    return out


def frame_path(frame: int, rest: str = "") -> str:
    """``frame[2]``, or ``frame[2].<rest>``."""
    return f"frame[{frame}]" + (f".{rest}" if rest else "")


__all__ = ["CHUNK", "COMPOSITE_RULES", "CONTAINER_MAGIC", "DESCRIPTOR_LIMIT", "MAX_DEPTH", "CompositeItem", "Item",
           "TensorItem", "dotted", "frame_path"]
