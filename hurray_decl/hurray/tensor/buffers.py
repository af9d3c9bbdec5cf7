"""The buffer table (DIGEST § 5.5, § 5.6): buffer_count, then 16-byte handles read the
buffer-protocol way (HD-09): byte_size, alignment, device_tag, sync_mode, memory_class, reserved.
"""

from __future__ import annotations

from typing import Any, ClassVar

import construct as cs

from hurray_decl.declare.schema import OrderedStruct, Rule, zero_bytes
from hurray_decl.hurray.tables.codes import PRIVATE_SPAN, Device, MemoryClass, SyncMode, alternatives, legend, span
from hurray_decl.hurray.tables.tags import is_private
from hurray_decl.hurray.tensor.common import Section, permissive
from hurray_decl.registry import Table

MIN_ALIGNMENT = 64
MAX_BUFFERS = 255

PRIVATE_MEMORY_CLASSES: Table[int, str] = Table("private memory class", "HT-BUFT-21")
"""Private memory classes agreed out of band (HD-23); empty unless a caller registers one."""


def _device_not_reserved(value: int, _: Any) -> bool:
    return Device.has(value) or is_private(value) or value == 0xFF


def _class_known(value: int, _: Any) -> bool:
    return MemoryClass.has(value) or is_private(value)


def _class_on_private_device(value: int, ctx: Any) -> bool:
    return not is_private(value) or is_private(ctx.device_tag)


def _class_registered(value: int, ctx: Any) -> bool:
    return not is_private(value) or value in PRIVATE_MEMORY_CLASSES or permissive(ctx)


def valid_pair(device: int, memory_class: int) -> bool:
    """Whether (device_tag, memory_class) is in the per-device matrix."""
    if is_private(device):
        return memory_class == MemoryClass.STANDARD or is_private(memory_class)
    return memory_class in _MEMORY_CLASSES.get(device, ())


_MEMORY_CLASSES = {int(device): device.memory_classes for device in Device}
"""Each device's memory classes by its tag (a lookup, not an enum call per handle)."""


HANDLE_ORDER = ("HT-BUFT-23", "HT-BUFT-14", "HT-BUFT-15", "HT-BUFT-17", "HT-BUFT-19", "HT-BUFT-20", "HT-BUFT-21",
                "HT-BUFT-12", "HT-BUFT-13", "HT-BUFT-18", "HT-BUFT-22")
"""DIGEST Appendix A step 12: reserved byte, device, sync_mode, memory class, alignment, CPU sync,
then the per-device pair."""

_CPU_SYNC = f"{SyncMode.PRODUCER_SYNCED.hex} on {Device.CPU.title}"

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
        _device_not_reserved, "HT-BUFT-15", f"{span(Device)} or private {PRIVATE_SPAN}", "reserved device tag"),
        int(Device.CPU))
    * f"{legend(Device)}, {PRIVATE_SPAN} private",
    "sync_mode" / cs.Default(Rule(
        Rule(cs.Int8ul, lambda v, _: SyncMode.has(v), "HT-BUFT-17", alternatives(SyncMode),
             "unknown sync_mode"),
        lambda v, ctx: ctx.device_tag != Device.CPU or v == SyncMode.PRODUCER_SYNCED, "HT-BUFT-18", _CPU_SYNC,
        "CPU buffers are producer-synced"), int(SyncMode.PRODUCER_SYNCED))
    * f"{legend(SyncMode)}; {_CPU_SYNC}",
    "memory_class" / cs.Default(Rule(Rule(Rule(Rule(
        cs.Int8ul, _class_known, "HT-BUFT-19", f"{span(MemoryClass)} or private {PRIVATE_SPAN}",
        "reserved or invalid memory class"),
        _class_on_private_device, "HT-BUFT-20", "a public class on a public device",
        "a private memory class needs a private device"),
        _class_registered, "HT-BUFT-21", "a registered private memory class",
        "private memory class not agreed out of band"),
        lambda v, ctx: valid_pair(ctx.device_tag, v), "HT-BUFT-22", "a pair from the per-device table",
        "this device does not offer this memory class"), int(MemoryClass.STANDARD))
    * f"{legend(MemoryClass)}, {PRIVATE_SPAN} private",
    "reserved" / zero_bytes(1, "HT-BUFT-23") * "_reserved: one zero byte",
    order=HANDLE_ORDER,
)
"""One 16-byte buffer handle (HT-BUFT-01)."""

_CLASS_AT = [field.name for field in HANDLE.subcons].index("memory_class")


def rule_inputs(values: tuple[Any, ...]) -> tuple[Any, ...]:
    """What the rules of :data:`HANDLE` read of one handle's values (in wire order): every field
    but byte_size, which HT-BUFT-13 reads only as zero or not. A handle with the same inputs as
    one the declaration accepted is accepted too, if :func:`verdict_kept` says so of that one."""
    return (values[0] == 0, *values[1:])


def verdict_kept(values: tuple[Any, ...]) -> bool:
    """Whether the declaration's verdict on a handle's :func:`rule_inputs` holds for every later
    handle with those inputs: not for a private memory class, whose verdict also depends on the
    registry and the mode (HT-BUFT-21)."""
    return not is_private(values[_CLASS_AT])


BUFFER_COUNT = "buffer_count" / cs.Int8ul * "number of handles that follow; 0 only for a composite head"


class BufferHandle(Section):
    """One entry of the buffer table."""

    rule: ClassVar[str] = "HT-BUFT-01"
    wire_name: ClassVar[str] = "buffers"

    declaration: ClassVar[cs.Construct] = HANDLE  # the model's fields are derived from it

    def wire_declaration(self) -> cs.Construct:
        return HANDLE
