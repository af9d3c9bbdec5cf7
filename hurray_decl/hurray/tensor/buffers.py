"""The buffer table (DIGEST § 5.5, § 5.6): buffer_count, then 16-byte handles read the
buffer-protocol way (HD-09): byte_size, alignment, device_tag, sync_mode, memory_class, reserved.
"""

from __future__ import annotations

from typing import Any, ClassVar

import construct as cs

from hurray_decl.registry import Table
from hurray_decl.hurray.tables.tags import is_private
from hurray_decl.declare.schema import OrderedStruct, Rule, zero_bytes
from hurray_decl.hurray.tensor.common import Section, permissive

HANDLE_LENGTH = 8 + 4 + 1 + 1 + 1 + 1  # byte_size, alignment, device, sync, class, reserved
MIN_ALIGNMENT = 64
MAX_BUFFERS = 255

CPU = 0x00
DEVICES = {0x00: "CPU", 0x01: "CUDA", 0x02: "ROCm", 0x03: "Metal", 0x04: "Vulkan", 0x05: "WebGPU",
           0x06: "Hexagon", 0x07: "Level Zero", 0x08: "OpenCL"}
SYNC_MODES = {0x00: "producer-synced", 0x01: "event", 0x02: "consumer-stream"}
STANDARD, HOST_PINNED, UNIFIED, PEER = 0x00, 0x01, 0x02, 0x03
MEMORY_CLASSES = {STANDARD: "STANDARD", HOST_PINNED: "HOST_PINNED", UNIFIED: "UNIFIED", PEER: "PEER"}

_ALL = frozenset(MEMORY_CLASSES)
_NO_PEER = frozenset({STANDARD, HOST_PINNED, UNIFIED})
DEVICE_CLASSES: dict[int, frozenset[int]] = {
    0x00: _NO_PEER, 0x01: _ALL, 0x02: _ALL, 0x03: _NO_PEER, 0x04: _ALL,
    0x05: frozenset({STANDARD}), 0x06: _NO_PEER, 0x07: _ALL, 0x08: _NO_PEER,
}
"""Public memory classes each public device accepts (the per-device matrix of § 5.6)."""

PRIVATE_MEMORY_CLASSES: Table[int, str] = Table("private memory class", "HT-BUFT-21")
"""Private memory classes agreed out of band (HD-23); empty unless a caller registers one."""


def _device_not_reserved(value: int, _: Any) -> bool:
    return value in DEVICES or is_private(value) or value == 0xFF


def _class_known(value: int, _: Any) -> bool:
    return value in MEMORY_CLASSES or is_private(value)


def _class_on_private_device(value: int, ctx: Any) -> bool:
    return not is_private(value) or is_private(ctx.device_tag)


def _class_registered(value: int, ctx: Any) -> bool:
    return not is_private(value) or value in PRIVATE_MEMORY_CLASSES or permissive(ctx)


def valid_pair(device: int, memory_class: int) -> bool:
    """Whether (device_tag, memory_class) is in the per-device matrix."""
    if is_private(device):
        return memory_class == STANDARD or is_private(memory_class)
    allowed = DEVICE_CLASSES.get(device)
    return allowed is not None and memory_class in allowed


HANDLE_ORDER = ("HT-BUFT-23", "HT-BUFT-14", "HT-BUFT-15", "HT-BUFT-17", "HT-BUFT-19", "HT-BUFT-20", "HT-BUFT-21",
                "HT-BUFT-12", "HT-BUFT-13", "HT-BUFT-18", "HT-BUFT-22")
"""DIGEST Appendix A step 12: reserved byte, device, sync_mode, memory class, alignment, CPU sync,
then the per-device pair."""

HANDLE = OrderedStruct(
    "byte_size" / cs.Default(cs.Int64ul, 0) * "bytes in the buffer; 0 means an empty buffer",
    "alignment" / cs.Default(Rule(
        Rule(cs.Int32ul, lambda v, _: v > 0 and v & (v - 1) == 0, "HT-BUFT-12", "a power of two",
             "alignment is not a power of two"),
        lambda v, ctx: ctx.byte_size == 0 or v >= MIN_ALIGNMENT, "HT-BUFT-13", f">= {MIN_ALIGNMENT}",
        "a non-empty buffer needs 64-byte alignment"), MIN_ALIGNMENT)
    * "power of two; >= 64 for a non-empty buffer",
    "device_tag" / cs.Default(Rule(
        Rule(cs.Int8ul, lambda v, _: v != 0xFF, "HT-BUFT-14", "a device tag", "0xFF is never a device"),
        _device_not_reserved, "HT-BUFT-15", "0x00-0x08 or private 0xF0-0xFE", "reserved device tag"), CPU)
    * "0x00 CPU, 0x01 CUDA, 0x02 ROCm, 0x03 Metal, 0x04 Vulkan, 0x05 WebGPU, 0x06 Hexagon, "
      "0x07 Level Zero, 0x08 OpenCL, 0xF0-0xFE private",
    "sync_mode" / cs.Default(Rule(
        Rule(cs.Int8ul, lambda v, _: v in SYNC_MODES, "HT-BUFT-17", "0x00, 0x01 or 0x02",
             "unknown sync_mode"),
        lambda v, ctx: ctx.device_tag != CPU or v == 0, "HT-BUFT-18", "0x00 on CPU",
        "CPU buffers are producer-synced"), 0)
    * "0x00 producer-synced, 0x01 event, 0x02 consumer-stream; 0x00 on CPU",
    "memory_class" / cs.Default(Rule(Rule(Rule(Rule(
        cs.Int8ul, _class_known, "HT-BUFT-19", "0x00-0x03 or private 0xF0-0xFE",
        "reserved or invalid memory class"),
        _class_on_private_device, "HT-BUFT-20", "a public class on a public device",
        "a private memory class needs a private device"),
        _class_registered, "HT-BUFT-21", "a registered private memory class",
        "private memory class not agreed out of band"),
        lambda v, ctx: valid_pair(ctx.device_tag, v), "HT-BUFT-22", "a pair from the per-device table",
        "this device does not offer this memory class"), STANDARD)
    * "0x00 STANDARD, 0x01 HOST_PINNED, 0x02 UNIFIED, 0x03 PEER, 0xF0-0xFE private",
    "reserved" / zero_bytes(1, "HT-BUFT-23") * "_reserved: one zero byte",
    order=HANDLE_ORDER,
)
"""One 16-byte buffer handle (HT-BUFT-01)."""

BUFFER_COUNT = "buffer_count" / cs.Int8ul * "number of handles that follow; 0 only for a composite head"


class BufferHandle(Section):
    """One entry of the buffer table."""

    rule: ClassVar[str] = "HT-BUFT-01"
    wire_name: ClassVar[str] = "buffers"

    declaration: ClassVar[cs.Construct] = HANDLE  # the model's fields are derived from it

    def wire_declaration(self) -> cs.Construct:
        return HANDLE
