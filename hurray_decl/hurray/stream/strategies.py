"""Hypothesis strategies for Hurray streams: valid streams, and one mutant generator per HS
reader rule (needs the ``hypothesis`` package).

Valid streams
    ``stream_tensors()`` draws :class:`~.frames.TensorItem` values (a descriptor of every
    layout with buffers from :func:`~hurray_decl.hurray.strategies.tensor_descriptors`, its
    contents from :func:`~hurray_decl.hurray.strategies.buffers_for`, every sync_mode 0x00);
    ``stream_composites()`` group and partition composites, nested; ``streams()`` draws
    ``(bytes, items)``, the bytes written by :class:`~.writer.StreamWriter`.

Mutants
    :data:`STREAM_MUTANTS` holds one generator per HS reader rule that refuses bytes, keyed by
    rule; each draws a :class:`StreamCase` (the stream's bytes, the rule a strict reader raises,
    the reader options the case needs, the items before the refusal). The case starts from a
    drawn valid stream and changes one thing the rule governs, located through the declarations
    (the preamble's field offsets, the descriptor's trace), never by a hand-written offset.
    :data:`STREAM_ACCEPTS` holds, per acceptance rule, a generator of valid streams that show
    what the rule accepts; :data:`STREAM_PROPERTIES` names the rules that are properties of
    reading (timing, allocation, the dead state), checked by the fuzz target's oracle and by
    the tests, not by a mutant.
"""

from __future__ import annotations

import io
import itertools
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from hurray_decl.hurray.strategies import buffers_for, invalid_tensor_descriptors, placements, tensor_descriptors
from hurray_decl.hurray.strategies.patching import patched
from hurray_decl.hurray.strategies.tensor import WITH_DATA
from hurray_decl.hurray.stream.frames import (
    CONTAINER_MAGIC,
    DESCRIPTOR_LIMIT,
    MAX_DEPTH,
    MIN_DESCRIPTOR,
    PREFIX_FIELDS,
    PREFIX_RULES,
    CompositeItem,
    Item,
    TensorItem,
)
from hurray_decl.hurray.stream.writer import StreamWriter
from hurray_decl.hurray.tables.codes import CompositionRule, Device
from hurray_decl.hurray.tensor import BufferHandle, TensorDescriptor, write_tensor_descriptor
from hurray_decl.hurray.tensor.header import MAGIC
from hurray_decl.hurray.tensor.layouts import CompositeHead
from hurray_decl.hurray.tensor.sections import CompositeMember, Shard

GROUP, PARTITION = CompositionRule.GROUP, CompositionRule.PARTITION
F32 = 0x03


@dataclass(frozen=True)
class StreamCase:
    """A stream a strict reader refuses with ``rule`` after ``before`` items (``options`` are
    :func:`~.reader.read_stream` keyword arguments the case needs; empty for the default reader)."""

    data: bytes
    rule: str
    options: dict[str, Any] = field(default_factory=dict)
    before: int = 0


def write(items: list[Item]) -> bytes:
    sink = io.BytesIO()
    with StreamWriter(sink) as writer:
        for item in items:
            writer.write_item(item)
    return sink.getvalue()


def frame_bytes(item: Item) -> list[bytes]:
    """Each frame of ``item`` as it is written, pre-order."""
    if isinstance(item, CompositeItem):
        out = [write_tensor_descriptor(item.head)]
        for member in item.members:
            out += frame_bytes(member)
        return out
    return [write_tensor_descriptor(item.descriptor) + b"".join(bytes(b) for b in item.buffers)]


# ---------------------------------------------------------------- valid streams

_PUBLIC = placements(sorted(Device)).map(lambda where: (where[0], 0, where[2]))
"""(device_tag, sync_mode, memory_class) with sync_mode 0x00 (HS-SYNC-01), public devices only."""


@st.composite
def stream_tensors(draw: st.DrawFn, /, **options: Any) -> TensorItem:
    """A plain tensor and buffers every reader accepts in a stream (``options`` go to tensor_descriptors)."""
    options.setdefault("layout", WITH_DATA)
    options.setdefault("placement", _PUBLIC)
    d = draw(tensor_descriptors(**options))
    return TensorItem(d, draw(buffers_for(d)))


def _f32(values: bytes, shape: tuple[int, ...], **sections: Any) -> TensorItem:
    d = TensorDescriptor(type_tag=F32, shape=shape, buffers=(BufferHandle(byte_size=len(values)),), **sections)
    return TensorItem(d, (values,))


def _head(rule: int, shape: tuple[int, ...], count: int) -> TensorDescriptor:
    return TensorDescriptor(type_tag=F32, shape=shape, layout=CompositeHead(composition_rule=rule, member_count=count))


@st.composite
def partitions(draw: st.DrawFn) -> CompositeItem:
    """A 1-D float32 partition: its index space cut into consecutive shards."""
    cuts = sorted(draw(st.sets(st.integers(1, 11), max_size=3)))
    bounds = [0, *cuts, 12]
    members = tuple(_f32(draw(st.binary(min_size=4 * (b - a), max_size=4 * (b - a))), (b - a,),
                         shard=Shard(parent_shape=(12,), shard_offset=(a,)))
                    for a, b in itertools.pairwise(bounds))
    return CompositeItem(_head(PARTITION, (12,), len(members)), members)


def groups(depth: int = 3) -> st.SearchStrategy[CompositeItem]:
    """Group composites of plain tensors and nested groups, at most ``depth`` heads deep."""
    leaf = stream_tensors(composite_member=False)
    if depth <= 1:
        members = st.lists(leaf, max_size=3)
    else:
        members = st.lists(st.one_of(leaf, groups(depth - 1), partitions()), max_size=3)
    return members.map(lambda ms: CompositeItem(_head(GROUP, (2,), len(ms)), tuple(ms)))


def stream_composites() -> st.SearchStrategy[CompositeItem]:
    return st.one_of(partitions(), groups())


def stream_items() -> st.SearchStrategy[list[Item]]:
    return st.lists(st.one_of(stream_tensors(), stream_tensors(), stream_composites()), max_size=4)


def streams() -> st.SearchStrategy[tuple[bytes, list[Item]]]:
    """(bytes, items) of a valid stream."""
    return stream_items().map(lambda items: (write(items), items))


@st.composite
def _frames(draw: st.DrawFn, least: int = 1) -> list[bytes]:
    """The frames of a valid stream of plain tensors, at least ``least`` of them."""
    items = draw(st.lists(stream_tensors(), min_size=least, max_size=4))
    return [frame for item in items for frame in frame_bytes(item)]


def _length(frame: bytes) -> int:
    at = PREFIX_FIELDS["descriptor_length"]
    return int(struct.unpack_from("<I", frame, at)[0])


def _set(frame: bytes, name: str, value: int | bytes) -> bytes:
    """A prefix field of ``frame`` replaced: offsets from the preamble's declaration."""
    at = PREFIX_FIELDS[name]
    raw = value if isinstance(value, bytes) else (
        struct.pack("<I", value) if name == "descriptor_length" else struct.pack("<B", value))
    return frame[:at] + raw + frame[at + len(raw):]


# ---------------------------------------------------------------- mutants

STREAM_MUTANTS: dict[str, Callable[[], st.SearchStrategy[StreamCase]]] = {}
"""HS reader rule -> a factory of the strategy drawing streams that break it."""


def stream_mutant(rule: str) -> Callable[[Callable[[], st.SearchStrategy[StreamCase]]], Any]:
    def register(fn: Callable[[], st.SearchStrategy[StreamCase]]) -> Any:
        if rule in STREAM_MUTANTS:
            raise ValueError(f"{rule} has two stream mutant generators")
        STREAM_MUTANTS[rule] = fn
        return fn
    return register


@stream_mutant("HS-FRM-04")
@st.composite
def _truncated(draw: st.DrawFn) -> StreamCase:
    """A valid stream cut inside one of its frames (prefix, descriptor or buffer)."""
    frames = draw(_frames())
    k = draw(st.integers(0, len(frames) - 1))
    cut = draw(st.integers(1, len(frames[k]) - 1))
    return StreamCase(b"".join(frames[:k]) + frames[k][:cut], "HS-FRM-04", before=k)


@stream_mutant("HS-FRM-05")
@st.composite
def _bad_magic(draw: st.DrawFn) -> StreamCase:
    """A frame's magic changed, or zero padding between two frames (HS-FRM-01)."""
    frames = draw(_frames())
    k = draw(st.integers(0, len(frames) - 1))
    if draw(st.booleans()):
        magic = draw(st.binary(min_size=4, max_size=4).filter(lambda m: m != MAGIC))
        frames[k] = _set(frames[k], "magic", magic)
    else:
        frames[k] = bytes(draw(st.integers(1, 16))) + frames[k]
    return StreamCase(b"".join(frames), "HS-FRM-05", before=k)


@stream_mutant("HS-FRM-06")
@st.composite
def _short_length(draw: st.DrawFn) -> StreamCase:
    frames = draw(_frames())
    k = draw(st.integers(0, len(frames) - 1))
    frames[k] = _set(frames[k], "descriptor_length", draw(st.integers(0, MIN_DESCRIPTOR - 1)))
    return StreamCase(b"".join(frames), "HS-FRM-06", before=k)


@stream_mutant("HS-FRM-07")
@st.composite
def _long_length(draw: st.DrawFn) -> StreamCase:
    """descriptor_length above the default limit, or above a smaller limit the reader is given."""
    frames = draw(_frames())
    k = draw(st.integers(0, len(frames) - 1))
    if draw(st.booleans()):
        frames[k] = _set(frames[k], "descriptor_length", draw(st.integers(DESCRIPTOR_LIMIT + 1, 2**32 - 1)))
        return StreamCase(b"".join(frames), "HS-FRM-07", before=k)
    limit = _length(frames[k]) - draw(st.integers(1, _length(frames[k]) - 10))
    if any(_length(f) > limit for f in frames[:k]):
        k = next(i for i, f in enumerate(frames) if _length(f) > limit)
    return StreamCase(b"".join(frames), "HS-FRM-07", {"descriptor_limit": limit}, before=k)


@stream_mutant("HS-FRM-08")
@st.composite
def _big_buffer(draw: st.DrawFn) -> StreamCase:
    """A byte_size above the reader's buffer limit, or a huge byte_size and end of input (HS-FRM-04)."""
    if draw(st.booleans()):
        item = draw(stream_tensors().filter(lambda t: any(h.byte_size for h in t.descriptor.buffers)))
        limit = max(h.byte_size for h in item.descriptor.buffers) - 1
        return StreamCase(write([item]), "HS-FRM-08", {"buffer_limit": limit})
    # dense data may be larger than the layout addresses: only the claim is huge, the descriptor valid
    item = draw(stream_tensors(layout="row_major", quantized=False).filter(
        lambda t: t.descriptor.buffers[0].byte_size > 0))
    raw = write_tensor_descriptor(item.descriptor)
    huge = patched(raw, "buffers[0].byte_size", draw(st.integers(2**40, 2**63)))
    body = b"".join(bytes(b) for b in item.buffers)
    return StreamCase(huge + body, "HS-FRM-04")


_PREFIX_OR_SHORT = set(PREFIX_RULES) | {"HT-HDR-08", "HT-HDR-10", "HT-HDR-02", "HT-HDR-03"}
"""Descriptor rules a stream reader meets on the prefix, or that a cut-short descriptor breaks."""


def _descriptor_mutant(data: bytes) -> bool:
    if len(data) < 10 or not MIN_DESCRIPTOR <= _length(data) <= min(len(data), DESCRIPTOR_LIMIT):
        return False
    return data[PREFIX_FIELDS["version_major"]] == 1


@stream_mutant("HS-FRM-09")
@st.composite
def _bad_descriptor(draw: st.DrawFn) -> StreamCase:
    """Valid frames, then a descriptor a descriptor mutant breaks (any HT/HQ/HE reader rule)."""
    frames = draw(_frames(0)) if draw(st.booleans()) else []
    data, _ = draw(invalid_tensor_descriptors().filter(
        lambda case: case[1] not in _PREFIX_OR_SHORT and _descriptor_mutant(case[0])))
    return StreamCase(b"".join(frames) + data[:_length(data)], "HS-FRM-09", before=len(frames))


@stream_mutant("HS-FRM-12")
@st.composite
def _container(draw: st.DrawFn) -> StreamCase:
    return StreamCase(CONTAINER_MAGIC + draw(st.binary(max_size=64)), "HS-FRM-12")


@stream_mutant("HS-VER-02")
@st.composite
def _major(draw: st.DrawFn) -> StreamCase:
    frames = draw(_frames())
    k = draw(st.integers(0, len(frames) - 1))
    frames[k] = _set(frames[k], "version_major", draw(st.one_of(st.just(0), st.integers(2, 255))))
    return StreamCase(b"".join(frames), "HS-VER-02", before=k)


@stream_mutant("HS-CMP-02")
@st.composite
def _torn(draw: st.DrawFn) -> StreamCase:
    """A composite cut at a frame boundary after its head and before its last member."""
    composite = draw(stream_composites().filter(lambda c: len(c.members) > 0))
    frames = frame_bytes(composite)
    cut = draw(st.integers(1, len(frames) - 1))
    return StreamCase(b"".join(frames[:cut]), "HS-CMP-02")


@stream_mutant("HS-CMP-03")
@st.composite
def _bad_member(draw: st.DrawFn) -> StreamCase:
    """A partition whose shards overlap or leave a gap, or a group member with a composite-member section."""
    if draw(st.booleans()):
        part = draw(partitions().filter(lambda c: len(c.members) > 1))
        k = draw(st.integers(1, len(part.members) - 1))
        member = part.members[k]
        if not isinstance(member, TensorItem) or member.descriptor.shard is None:
            raise TypeError("partitions() draws tensors with shards")
        offset = member.descriptor.shard.shard_offset[0]
        moved = draw(st.integers(0, 12 - member.descriptor.shape[0]).filter(lambda o: o != offset))
        shard = Shard(parent_shape=(12,), shard_offset=(moved,))
        members = list(part.members)
        members[k] = TensorItem(member.descriptor.replace(shard=shard), member.buffers)
        frames = frame_bytes(CompositeItem(part.head, tuple(members)))
    else:
        leaf = _f32(bytes(8), (2,), composite_member=CompositeMember(member_role=0))
        frames = frame_bytes(CompositeItem(_head(GROUP, (2,), 1), (leaf,)))
    return StreamCase(b"".join(frames), "HS-CMP-03")


@stream_mutant("HS-CMP-04")
@st.composite
def _deep(draw: st.DrawFn) -> StreamCase:
    depth = draw(st.integers(MAX_DEPTH + 1, MAX_DEPTH + 4))
    heads = [write_tensor_descriptor(_head(GROUP, (2,), 1)) for _ in range(depth)]
    leaf = frame_bytes(_f32(bytes(8), (2,)))
    return StreamCase(b"".join(heads + leaf), "HS-CMP-04")


@stream_mutant("HS-SYNC-01")
@st.composite
def _synced(draw: st.DrawFn) -> StreamCase:
    """A non-CPU buffer with sync_mode event or consumer-stream: a valid descriptor, not in a stream."""
    item = draw(stream_tensors(placement=st.tuples(st.just(0x01), st.sampled_from([1, 2]), st.just(0))))
    frames = draw(_frames(0)) if draw(st.booleans()) else []
    return StreamCase(b"".join(frames + frame_bytes(item)), "HS-SYNC-01", before=len(frames))


# ---------------------------------------------------------------- acceptance rules


@st.composite
def _lookalike(draw: st.DrawFn) -> bytes:
    """A buffer whose bytes are a valid frame prefix (HS-FRM-11): still data."""
    inner = write_tensor_descriptor(draw(stream_tensors()).descriptor)[:16]
    return write([_f32(inner, (4,))])


@st.composite
def _newer_minor(draw: st.DrawFn) -> bytes:
    """A frame of minor version > 0 with unknown trailing descriptor bytes (HS-VER-03), then more frames."""
    item = draw(stream_tensors())
    extra = draw(st.binary(min_size=1, max_size=8))
    d = item.descriptor.replace(version_minor=draw(st.integers(1, 255)), trailing=extra)
    raw: bytes = write_tensor_descriptor(d)
    return raw + b"".join(bytes(b) for b in item.buffers) + b"".join(draw(_frames(0)))


@st.composite
def _devices(draw: st.DrawFn) -> bytes:
    """Buffers on non-CPU devices, producer-synced (HS-SYNC-02)."""
    where = st.sampled_from([d for d in sorted(Device) if d != 0]).map(lambda device: (device, 0, 0))
    return write(draw(st.lists(stream_tensors(placement=where), min_size=1, max_size=3)))


STREAM_ACCEPTS: dict[str, Callable[[], st.SearchStrategy[bytes]]] = {
    "HS-FRM-01": lambda: streams().map(lambda s: s[0]),
    "HS-FRM-02": lambda: streams().map(lambda s: s[0]),
    "HS-FRM-03": lambda: st.just(b""),
    "HS-FRM-11": _lookalike,
    "HS-VER-01": _newer_minor,
    "HS-VER-03": _newer_minor,
    "HS-CMP-01": lambda: st.lists(stream_composites(), min_size=1, max_size=2).map(lambda cs: write(list(cs))),
    "HS-CMP-07": lambda: st.lists(stream_composites(), min_size=1, max_size=2).map(lambda cs: write(list(cs))),
    "HS-SYNC-02": _devices,
}
"""Acceptance rules: a generator of valid streams showing what each accepts."""

STREAM_PROPERTIES: dict[str, str] = {
    "HS-FRM-10": "the dead state: every call after a refusal raises the same error (fuzz oracle, tests)",
    "HS-FRM-13": "timing: a refusal needs no byte after those revealing the fault (fuzz oracle, tests)",
    "HS-FRM-14": "timing: an item is returned before any byte of the next frame is asked for (fuzz oracle, tests)",
    "HS-CMP-05": "allocation: member_count sizes nothing (tests, the HS-CMP-02 mutants claim huge counts)",
}
"""Reader rules that are properties of reading, not of bytes: no mutant, checked as said."""


def invalid_streams(rule: str | None = None, *, default_reader: bool = False) -> st.SearchStrategy[StreamCase]:
    """Stream mutants of ``rule`` (default: every rule). ``default_reader``: only cases the
    default reader settings refuse (no options), for an external reader."""
    rules = sorted(STREAM_MUTANTS) if rule is None else [rule]
    strategy = st.one_of([STREAM_MUTANTS[r]() for r in rules])
    return strategy.filter(lambda case: not case.options) if default_reader else strategy


__all__ = [
    "STREAM_ACCEPTS",
    "STREAM_MUTANTS",
    "STREAM_PROPERTIES",
    "StreamCase",
    "draw_cases",
    "frame_bytes",
    "invalid_streams",
    "partitions",
    "stream_composites",
    "stream_items",
    "stream_tensors",
    "streams",
]


def draw_cases(count: int, seed: int, rules: list[str] | None = None) -> list[Any]:
    """``count`` stream cases for ``hurray-decl fuzz --kind stream``: a quarter valid streams, the
    rest mutants spread over the HS rules (or only ``rules``), each refused by the default reader
    settings, reproducibly from ``seed`` (see :func:`hurray_decl.hurray.fuzz.spread_cases`)."""
    from hurray_decl.hurray.fuzz import draw_examples, spread_cases

    def valid(n: int, bucket_seed: int) -> list[bytes]:
        return [data for data, _ in draw_examples(streams(), n, bucket_seed)]

    def mutants(rule: str, n: int, bucket_seed: int) -> list[bytes]:
        return [case.data for case in draw_examples(invalid_streams(rule, default_reader=True), n, bucket_seed)]

    return spread_cases(count, seed, rules, STREAM_MUTANTS, "hurray_decl.hurray.stream.strategies.STREAM_MUTANTS",
                        valid, mutants)
