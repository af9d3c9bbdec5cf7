"""Mutants of the buffer table (DIGEST § 5.5-5.7): the buffer count each layout row fixes and
every field of a handle, read the buffer-protocol way."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hypothesis import strategies as st

from hurray_decl.hurray.strategies.mutants import mutant
from hurray_decl.hurray.strategies.patching import assembled, patched, resized
from hurray_decl.hurray.strategies.tensor import (
    DATA,
    PRIVATE_DEVICE,
    WITH_DATA,
    layouts_in,
    placements,
    tensor_descriptors,
)
from hurray_decl.hurray.strategies.values import pow2
from hurray_decl.hurray.tables.codes import Device, MemoryClass, SyncMode
from hurray_decl.hurray.tables.tags import INVALID_TAGS, PRIVATE_TAGS
from hurray_decl.hurray.tensor import BufferHandle, TensorDescriptor, write_tensor_descriptor
from hurray_decl.hurray.tensor.buffers import MIN_ALIGNMENT, PRIVATE_MEMORY_CLASSES
from hurray_decl.hurray.tensor.context import check_descriptor
from hurray_decl.hurray.tensor.layouts import LAYOUTS

BYTES = range(256)


def handle_field(field: str, values: Callable[[st.DrawFn, TensorDescriptor, int], int | bytes],
                 base: st.SearchStrategy[TensorDescriptor] = DATA,
                 which: Callable[[TensorDescriptor], list[int]] | None = None) -> st.SearchStrategy[bytes]:
    """A valid descriptor with ``field`` of one handle (chosen among ``which(d)``) replaced."""
    @st.composite
    def build(draw: st.DrawFn) -> bytes:
        d = draw(base)
        i = draw(st.sampled_from(which(d) if which is not None else list(range(len(d.buffers)))))
        return patched(write_tensor_descriptor(d), f"buffers[{i}].{field}", values(draw, d, i))
    return build()


def on(devices: Sequence[int]) -> st.SearchStrategy[TensorDescriptor]:
    """Valid descriptors with buffers, placed on one of ``devices``."""
    return tensor_descriptors(layout=WITH_DATA, placement=placements(devices))


def _from(values: Sequence[int] | st.SearchStrategy[int]) -> Callable[[st.DrawFn, TensorDescriptor, int], int]:
    pool = values if isinstance(values, st.SearchStrategy) else st.sampled_from(list(values))
    return lambda draw, d, i: draw(pool)


# ================================================================ the buffer count


@mutant("HT-BUFT-02")
@st.composite
def _no_buffers(draw: st.DrawFn) -> bytes:
    d = draw(tensor_descriptors(layout=WITH_DATA, quantized=False))
    return assembled(d.replace(buffers=()))


def _extra_handles(draw: st.DrawFn, d: TensorDescriptor, count: int) -> tuple[BufferHandle, ...]:
    like = d.buffers[0] if d.buffers else BufferHandle()
    return tuple(resized(like, draw(st.integers(0, 64))) for _ in range(count))


def _count_mutant(kinds: tuple[str, ...], quantized: bool, fewer: bool) -> Callable[[], st.SearchStrategy[bytes]]:
    """More handles than the layout (and scheme) own, or, with ``fewer``, some left out."""
    @st.composite
    def build(draw: st.DrawFn) -> bytes:
        d = draw(tensor_descriptors(layout=kinds, quantized=quantized))
        if fewer:
            return assembled(d.replace(buffers=d.buffers[:draw(st.integers(1, len(d.buffers) - 1))]))
        return assembled(d.replace(buffers=d.buffers + _extra_handles(draw, d, draw(st.integers(1, 3)))))
    return build


_BY_COUNT_CODE: dict[str, list[Any]] = {}
for _row in LAYOUTS:
    _BY_COUNT_CODE.setdefault(_row.count_code, []).append(_row)
for _code, _rows in _BY_COUNT_CODE.items():  # the buffer-count rule of each layout row, from the row
    mutant(_code)(_count_mutant(tuple(row.name for row in _rows), False, _rows[0].category == "indirect"))


@mutant("HT-BUFT-05")
def _quantized_count() -> st.SearchStrategy[bytes]:
    return _count_mutant(layouts_in("dense"), True, False)()  # the dense layouts drawn quantized


# ================================================================ handle fields


@mutant("HT-BUFT-12")
def _alignment_not_pow2() -> st.SearchStrategy[bytes]:
    return handle_field("alignment", _from(st.integers(0, 2**32 - 1).filter(lambda v: v == 0 or v & (v - 1))))


def _non_empty(d: TensorDescriptor) -> list[int]:
    return [i for i, h in enumerate(d.buffers) if h.byte_size]


@mutant("HT-BUFT-13")
def _alignment_small() -> st.SearchStrategy[bytes]:
    return handle_field("alignment", _from(pow2(0, MIN_ALIGNMENT.bit_length() - 2)), DATA.filter(_non_empty),
                        _non_empty)


@mutant("HT-BUFT-14")
def _device_invalid() -> st.SearchStrategy[bytes]:
    return handle_field("device_tag", _from([t for t in INVALID_TAGS if not Device.has(t)]))


_RESERVED_DEVICES = [t for t in BYTES if not Device.has(t) and t not in PRIVATE_TAGS and t not in INVALID_TAGS]


@mutant("HT-BUFT-15")
def _device_reserved() -> st.SearchStrategy[bytes]:
    return handle_field("device_tag", _from(_RESERVED_DEVICES))


@mutant("HT-BUFT-17")
def _sync_unknown() -> st.SearchStrategy[bytes]:
    return handle_field("sync_mode", _from([v for v in BYTES if not SyncMode.has(v)]))


@mutant("HT-BUFT-18")
def _cpu_sync() -> st.SearchStrategy[bytes]:
    return handle_field("sync_mode", _from([v for v in SyncMode.codes() if v != SyncMode.PRODUCER_SYNCED]),
                        on([Device.CPU]))


_RESERVED_CLASSES = [v for v in BYTES if not MemoryClass.has(v) and v not in PRIVATE_TAGS]


@mutant("HT-BUFT-19")
def _class_reserved() -> st.SearchStrategy[bytes]:
    return handle_field("memory_class", _from(_RESERVED_CLASSES))


@mutant("HT-BUFT-20")
def _class_private_public_device() -> st.SearchStrategy[bytes]:
    return handle_field("memory_class", _from(PRIVATE_TAGS), on(Device.codes()))


@mutant("HT-BUFT-21")
def _class_private_unagreed() -> st.SearchStrategy[bytes]:
    unagreed = st.sampled_from(PRIVATE_TAGS).filter(lambda v: v not in PRIVATE_MEMORY_CLASSES)
    return handle_field("memory_class", _from(unagreed), on([PRIVATE_DEVICE]))


_MISSING = {int(dev): sorted(set(MemoryClass.codes()) - dev.memory_classes) for dev in Device}
# a private device: STANDARD or private
_MISSING[PRIVATE_DEVICE] = sorted(set(MemoryClass.codes()) - {MemoryClass.STANDARD})


@mutant("HT-BUFT-22")
def _class_pair() -> st.SearchStrategy[bytes]:
    return handle_field("memory_class", lambda draw, d, i: draw(st.sampled_from(_MISSING[d.buffers[i].device_tag])),
                        on([dev for dev, classes in _MISSING.items() if classes]))


@mutant("HT-BUFT-23")
def _handle_reserved() -> st.SearchStrategy[bytes]:
    return handle_field("reserved", lambda draw, d, i: draw(st.binary(min_size=1, max_size=1).filter(any)))


def moved_device(draw: st.DrawFn, h: BufferHandle) -> int:
    """Another device that offers ``h``'s memory class and its sync_mode."""
    devices = [int(dev) for dev in Device if h.memory_class in dev.memory_classes and dev != h.device_tag
               and not (dev == Device.CPU and h.sync_mode)]
    if h.memory_class == MemoryClass.STANDARD and h.device_tag != PRIVATE_DEVICE:
        devices.append(PRIVATE_DEVICE)
    return draw(st.sampled_from(devices))


def _non_parameter(d: TensorDescriptor) -> list[int]:
    params = {p.index for p in check_descriptor(d).params}
    return [i for i in range(1, len(d.buffers)) if i not in params]


@mutant("HT-BUFT-24")
def _colocated_device() -> st.SearchStrategy[bytes]:
    return handle_field("device_tag", lambda draw, d, i: moved_device(draw, d.buffers[i]),
                        tensor_descriptors(layout=layouts_in("sparse", "indirect")), _non_parameter)


@mutant("HT-BUFT-25")
def _colocated_class() -> st.SearchStrategy[bytes]:
    devices = [int(dev) for dev in Device if len(dev.memory_classes) > 1]
    base = tensor_descriptors(layout=layouts_in("sparse", "indirect") + ("row_major",),
                              placement=placements(devices)).filter(lambda d: len(d.buffers) > 1)
    return handle_field("memory_class", lambda draw, d, i: draw(st.sampled_from(sorted(
        {int(c) for c in Device(d.buffers[i].device_tag).memory_classes} - {d.buffers[i].memory_class}))), base,
        lambda d: list(range(1, len(d.buffers))))
