"""The Hurray stream reader and writer (STREAM-FORMAT.md): the conformance vectors, every source
kind, arrival timing, allocation, the writer's duties."""

from __future__ import annotations

import io
import json
import os
import socket
import struct
import threading
import tracemalloc
from pathlib import Path

import pytest

from hurray_decl.errors import HurrayDeclError
from hurray_decl.hurray.stream import CompositeItem, StreamWriter, TensorItem, read_stream, write_stream
from hurray_decl.hurray.stream.frames import PREFIX_FIELDS
from hurray_decl.hurray.stream.reader import StreamReader, iter_stream
from hurray_decl.hurray.tensor import BufferHandle, TensorDescriptor, write_tensor_descriptor
from hurray_decl.hurray.tensor.layouts import CompositeHead
from hurray_decl.hurray.tensor.reader import field_positions
from tests.helpers import covers, raises_rule

VECTORS = Path(__file__).resolve().parents[1] / "conformance" / "hurray" / "streams"
MANIFEST = json.loads((VECTORS / "manifest.json").read_text(encoding="utf-8"))["vectors"]


def vector(name: str) -> bytes:
    return (VECTORS / name).read_bytes()


def kinds(items) -> str:
    return ",".join("C" if isinstance(i, CompositeItem) else "T" for i in items)


def drain(source, **options):
    """(items, error) of reading ``source`` to its end or its refusal."""
    reader = read_stream(source, **options)
    items = []
    try:
        for item in reader:
            items.append(item)
    except HurrayDeclError as err:
        return items, err, reader
    return items, None, reader


class Trickle:
    """A file-like source handing out at most ``step`` bytes per read, recording every request."""

    def __init__(self, data: bytes, step: int = 3) -> None:
        self.data, self.step, self.at, self.asked = data, step, 0, []

    def read(self, count: int) -> bytes:
        self.asked.append(self.at + count)  # the furthest byte this request could reach
        part = self.data[self.at:self.at + min(count, self.step)]
        self.at += len(part)
        return part


def f32(values, shape=None, **fields) -> TensorItem:
    data = struct.pack(f"<{len(values)}f", *values)
    d = TensorDescriptor(type_tag=0x03, shape=tuple(shape or (len(values),)),
                         buffers=(BufferHandle(byte_size=len(data)),), **fields)
    return TensorItem(d, (data,))


# ---------------------------------------------------------------- the vectors


@covers("HS-FRM-01", "HS-FRM-02", "HS-FRM-03", "HS-FRM-11", "HS-VER-01", "HS-VER-03", "HS-CMP-01", "HS-SYNC-02")
@pytest.mark.parametrize("entry", MANIFEST, ids=lambda e: e["file"])
def test_every_vector_gets_its_manifest_verdict(entry):
    data = vector(entry["file"])
    assert len(data) == entry["size"]
    for source in (data, io.BytesIO(data), Trickle(data, 1), Trickle(data, 7)):
        items, err, _ = drain(source)
        if entry["expect"] == "valid":
            assert err is None, err
            assert kinds(items) == entry["items"]
        else:
            assert err is not None and err.code == entry["rule"], err
            assert len(items) == entry["items_before_reject"]


@pytest.mark.parametrize("name, code, offset, path", [
    ("i01-truncated-prefix.stream", "HS-FRM-04", 5, "frame[0].prefix"),
    ("i02-truncated-descriptor.stream", "HS-FRM-04", 30, "frame[0].descriptor"),
    ("i03-truncated-buffer.stream", "HS-FRM-04", 153, "frame[0].buffer[2]"),
    ("i04-partial-frame-after-tensor.stream", "HS-FRM-04", 78, "frame[1].prefix"),
    ("i05-zero-padding-between-frames.stream", "HS-FRM-05", 69, "frame[1].descriptor.magic"),
    ("i06-descriptor-length-9.stream", "HS-FRM-06", 6, "frame[0].descriptor.descriptor_length"),
    ("i08-descriptor-length-huge.stream", "HS-FRM-07", 6, "frame[0].descriptor.descriptor_length"),
    ("i09-descriptor-length-plus-8.stream", "HS-FRM-09", 6, "frame[0].descriptor.descriptor_length"),
    ("i10-bad-magic.stream", "HS-FRM-05", 0, "frame[0].descriptor.magic"),
    ("i12-container-file.stream", "HS-FRM-12", 0, "frame[0].descriptor.magic"),
    ("i13-major-2-then-valid.stream", "HS-VER-02", 4, "frame[0].descriptor.version_major"),
    ("i14-torn-composite.stream", "HS-CMP-02", 0, "frame[0]"),
    ("i15-partition-overlap.stream", "HS-CMP-03", 274, "frame[2]"),
    ("i17-buffer-size-2pow40.stream", "HS-FRM-04", 69, "frame[0].buffer[0]"),
    ("i19-nested-depth-9.stream", "HS-CMP-04", 360, "frame[8]"),
    ("i20-sync-event-cuda.stream", "HS-SYNC-01", 50, "frame[0].descriptor.buffers[0].sync_mode"),
])
def test_refusals_name_their_rule_path_and_stream_offset(name, code, offset, path):
    with raises_rule(code, offset=offset) as info:
        list(read_stream(vector(name)))
    assert info.value.path == path


@covers("HS-FRM-13")
def test_prefix_faults_are_refused_on_ten_bytes():
    """i11 claims 16 MiB and sends 6 bytes more: the reader refuses after the prefix and never asks
    for the rest; HRRYFILE is refused after 8 bytes."""
    source = Trickle(vector("i11-bad-magic-long-length.stream"))
    with raises_rule("HS-FRM-05", offset=PREFIX_FIELDS["magic"]):
        list(read_stream(source))
    assert source.at == 10 and max(source.asked) == 10
    container = Trickle(vector("i12-container-file.stream"), 100)
    with raises_rule("HS-FRM-12"):
        list(read_stream(container))
    assert container.at == 8


@covers("HS-FRM-13")
def test_descriptor_faults_are_refused_before_any_buffer_byte():
    data = vector("i20-sync-event-cuda.stream")
    source = Trickle(data, 1000)
    with raises_rule("HS-SYNC-01"):
        list(read_stream(source))
    length = struct.unpack_from("<I", data, PREFIX_FIELDS["descriptor_length"])[0]
    assert source.at == length  # the descriptor, and not one buffer byte


@covers("HS-FRM-10")
def test_a_refused_stream_is_dead():
    """i13: a major-2 frame then a valid one; the reader never skips to it, and raises the same error again."""
    reader = read_stream(vector("i13-major-2-then-valid.stream"))
    with raises_rule("HS-VER-02") as first:
        next(reader)
    for _ in range(2):
        with raises_rule("HS-VER-02") as again:
            next(reader)
        assert again.value is first.value
    assert reader.position == 10


@covers("HS-FRM-14")
def test_an_item_is_returned_without_reading_the_next_frame():
    data = vector("v03-three-tensors.stream")
    source = io.BytesIO(data)
    reader = read_stream(source)
    ends = []
    for _ in reader:
        ends.append(source.tell())
    starts = [0]
    for _ in range(2):
        at = starts[-1]
        d = read_stream(data[at:])
        item = next(d)
        starts.append(at + d.position)
        assert isinstance(item, TensorItem)
    assert ends == [starts[1], starts[2], len(data)]


@covers("HS-CMP-07")
def test_composites_are_one_item_with_their_members_in_order():
    items, err, _ = drain(vector("v13-nested-depth-8.stream"))
    assert err is None and len(items) == 1
    depth, item = 0, items[0]
    while isinstance(item, CompositeItem):
        assert isinstance(item.head.layout, CompositeHead) and len(item.members) == 1
        depth, item = depth + 1, item.members[0]
    assert depth == 8 and struct.unpack("<2f", item.buffers[0]) == (0.5, -0.5)
    part = drain(vector("v11-composite-partition.stream"))[0][0]
    assert [bytes(m.buffers[0]) for m in part.members] == [bytes(range(128)), bytes(range(128, 256))]


@covers("HS-VER-03")
def test_a_newer_minor_is_read_and_its_buffers_start_at_descriptor_length():
    first = drain(vector("v14-descriptor-minor-1.stream"))[0][0]
    assert first.descriptor.version_minor == 1 and len(first.descriptor.trailing) == 4
    assert struct.unpack("<4f", first.buffers[0]) == (1, 2, 3, 4)


# ---------------------------------------------------------------- sources


def test_sockets_are_read_with_recv_into():
    data = vector("v12-overlay-then-tensor.stream") + vector("v10-csr-three-buffers.stream")
    left, right = socket.socketpair()
    with left, right:
        left.sendall(data)
        left.shutdown(socket.SHUT_WR)
        items, err, reader = drain(right)
    assert err is None and kinds(items) == "C,T,T" and reader.position == len(data)


def test_a_source_without_read_is_an_argument_error():
    with raises_rule("ARGUMENT"):
        read_stream(42)


def _frames(*items) -> list[bytes]:
    return [write_stream([item]) for item in items]


@covers("HS-FRM-13", "HS-FRM-14")
def test_through_a_pipe_each_item_arrives_before_the_next_frame_is_sent():
    """The writer thread sends a frame, then waits until the reader holds its item: a reader that
    needed a byte of the next frame would never get it (the wait times out and the test fails)."""
    frames = _frames(f32([1, 2]), f32([3]), f32([4, 5, 6]))
    frames[2] = b"HRRZ" + frames[2][4:]  # frame 2 is refused on its prefix
    r, w = os.pipe()
    got = [threading.Event() for _ in frames]
    sent: list[int] = []
    refused = threading.Event()

    def produce():
        with os.fdopen(w, "wb", buffering=0) as sink:
            for index, frame in enumerate(frames):
                sent.append(index)  # counted before it goes out: at most index + 1 frames sent so far
                sink.write(frame)
                if index < 2 and not got[index].wait(20):
                    return  # the reader did not yield: stop, the test fails below
            refused.wait(20)  # the end of input only after the refusal arrived

    thread = threading.Thread(target=produce)
    thread.start()
    seen = []
    with os.fdopen(r, "rb", buffering=0) as source:
        reader = read_stream(source)
        try:
            for item in reader:
                seen.append((len(sent), bytes(item.buffers[0])))
                got[len(seen) - 1].set()
        except HurrayDeclError as err:
            assert err.code == "HS-FRM-05" and err.path == "frame[2].descriptor.magic"
            assert thread.is_alive()  # the writer still holds the pipe open: no end of input yet
            refused.set()
    thread.join()
    assert [count for count, _ in seen] == [1, 2]  # item k read while only k+1 frames were sent
    assert seen[1][1] == struct.pack("<f", 3)


# ---------------------------------------------------------------- allocation


@covers("HS-FRM-08")
def test_a_huge_byte_size_then_end_of_input_is_a_truncation_without_allocation():
    d = TensorDescriptor(type_tag=0x03, shape=(4,), buffers=(BufferHandle(byte_size=1 << 62),))
    data = write_tensor_descriptor(d) + bytes(16)
    tracemalloc.start()
    try:
        with raises_rule("HS-FRM-04", offset=len(data), path="frame[0].buffer[0]"):
            list(read_stream(Trickle(data, 4096)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20


@covers("HS-FRM-08", "HS-CMP-05")
def test_member_count_sizes_nothing():
    tracemalloc.start()
    try:
        with raises_rule("HS-CMP-02"):
            list(read_stream(vector("i16-member-count-huge.stream")))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20


@covers("HS-FRM-08")
def test_memory_grows_with_the_largest_buffer_not_the_stream():
    """48 MiB of frames of 8 MiB each, read through a file-like source and dropped as they come:
    the peak stays within one buffer and a few MiB (a second buffer kept would be 8 MiB more)."""
    size = 8 << 20
    frame = write_stream([TensorItem(TensorDescriptor(type_tag=0x11, shape=(size,),
                                                      buffers=(BufferHandle(byte_size=size),)), (bytes(size),))])

    class Repeat:
        def __init__(self, times: int) -> None:
            self.left, self.view, self.at = times, memoryview(frame), 0

        def read(self, count: int) -> bytes:
            if self.at == len(self.view):
                if self.left == 1:
                    return b""
                self.left, self.at = self.left - 1, 0
            part = self.view[self.at:self.at + count]
            self.at += len(part)
            return bytes(part)

    source = Repeat(6)
    count = 0
    tracemalloc.start()
    try:
        for item in read_stream(source):
            count += 1
            del item
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == 6
    assert peak < size + (4 << 20)


@covers("HS-FRM-07", "HS-FRM-01-S")
def test_the_descriptor_limit_is_configurable():
    data = vector("v01-one-tensor.stream")
    with raises_rule("HS-FRM-07", offset=PREFIX_FIELDS["descriptor_length"]):
        list(read_stream(data, descriptor_limit=52))
    assert len(list(read_stream(data, descriptor_limit=53))) == 1


@covers("HS-FRM-08", "HS-FRM-01-S")
def test_a_buffer_limit_refuses_before_the_buffer_is_read():
    data = vector("v03-three-tensors.stream")
    source = Trickle(data, 1000)
    reader = read_stream(source, buffer_limit=8)
    first = data[:struct.unpack_from("<I", data, PREFIX_FIELDS["descriptor_length"])[0]]
    at = field_positions(first)["descriptor -> buffers -> 0 -> byte_size"]
    with raises_rule("HS-FRM-08", path="frame[0].descriptor.buffers[0].byte_size", offset=at):
        next(reader)
    assert source.at == len(first)  # the first descriptor, none of its data bytes


class Repeated:
    """A file-like source: ``data`` given ``times`` times over, never held more than once."""

    def __init__(self, data: bytes, times: int) -> None:
        self.view, self.left, self.at = memoryview(data), times, 0

    def read(self, count: int) -> bytes:
        if self.at == len(self.view):
            if self.left <= 1:
                return b""
            self.left, self.at = self.left - 1, 0
        part = self.view[self.at:self.at + count]
        self.at += len(part)
        return bytes(part)


def traced_after(reader, marks: tuple[int, ...]) -> dict[int, int]:
    """The memory tracemalloc counts (after a collection) once each of ``marks`` items were read."""
    import gc

    seen: dict[int, int] = {}
    tracemalloc.start()
    try:
        for count, item in enumerate(reader, 1):
            del item
            if count in marks:
                gc.collect()
                seen[count] = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return seen


def test_the_reader_keeps_nothing_per_frame_seen():
    """Its state is the item being read: 5,000 more frames (tensors, then composites of two members)
    cost no memory; it used to keep every frame's start (about 117 bytes each)."""
    tensor = write_stream([f32([1.0, 2.0])])
    composite = vector("v12-overlay-then-tensor.stream")  # an overlay of two members, then a tensor
    for data, per in ((tensor, 1), (composite, 2)):
        reader = read_stream(Repeated(data, 6000 // per))
        seen = traced_after(reader, (1000, 6000))
        assert sorted(seen) == [1000, 6000]
        assert seen[6000] - seen[1000] < 16 << 10, seen  # 5,000 frames at 117 bytes would be 585 KB
        assert len(reader.starts) <= 4 and reader.frames == 6000 // per * (4 if per == 2 else 1)


def test_each_item_knows_where_it_started():
    data = vector("v12-overlay-then-tensor.stream")  # frames at 0 (head), 53, 178, then the tensor at 291
    reader = read_stream(data)
    assert isinstance(next(reader), CompositeItem) and (reader.item_frame, reader.item_start) == (0, 0)
    assert sorted(reader.starts.values()) == [0, 53, 178]
    assert isinstance(next(reader), TensorItem) and (reader.item_frame, reader.item_start) == (3, 291)
    assert reader.starts == {"frame[3]": 291}


def test_advance_reads_one_frame_at_a_time():
    reader = read_stream(vector("v12-overlay-then-tensor.stream"))
    seen = []
    while not reader.ended:
        item = reader.advance()
        seen.append(None if item is None else type(item).__name__)
        assert reader.frames == min(len(seen), 4)
    assert seen == [None, None, "CompositeItem", "TensorItem", None]
    assert reader.advance() is None and list(reader) == []
    again = read_stream(vector("v12-overlay-then-tensor.stream"))
    assert [None if i is None else type(i).__name__ for i in again.frame_by_frame()] == seen
    assert again.ended and list(again.frame_by_frame()) == []


def test_advance_after_a_refusal_raises_it_again():
    reader = read_stream(vector("i14-torn-composite.stream"))
    with pytest.raises(HurrayDeclError) as first:
        while not reader.ended:
            reader.advance()
    with pytest.raises(HurrayDeclError) as again:
        reader.advance()
    assert again.value is first.value and first.value.code == "HS-CMP-02"


@covers("HS-FRM-08")
def test_the_buffer_limit_counts_what_the_open_composite_holds():
    """A partition's two 128-byte members: each fits a 200-byte limit, both do not; refused at the
    second member's byte_size, before any of its data arrives."""
    data = vector("v11-composite-partition.stream")  # head at 0, members at 53 and 274, 128 bytes each
    assert len(list(read_stream(data, buffer_limit=256))) == 1
    second = data[274:274 + 93]
    at = 274 + field_positions(second)["descriptor -> buffers -> 0 -> byte_size"]
    source = Trickle(data, 1000)
    with raises_rule("HS-FRM-08", path="frame[2].descriptor.buffers[0].byte_size", offset=at) as err:
        list(read_stream(source, buffer_limit=255))
    assert "held at once" in err.value.detail and err.value.actual == "256 bytes"
    assert source.at == 274 + 93  # the second member's descriptor, none of its data
    reader = read_stream(data + data, buffer_limit=128 + 127)
    with raises_rule("HS-FRM-08"):
        next(reader)
    assert len(list(read_stream(data + data, buffer_limit=256))) == 2  # the first item's bytes are let go


@covers("HS-FRM-08")
def test_the_buffers_of_one_frame_count_together():
    item = TensorItem(TensorDescriptor(type_tag=0x11, shape=(4,), buffers=(BufferHandle(byte_size=4),)), (bytes(4),))
    data = vector("v10-csr-three-buffers.stream")
    sizes = [h.byte_size for h in next(read_stream(data)).descriptor.buffers]
    assert len(sizes) == 3 and all(sizes)
    limit = sum(sizes) - 1
    assert max(sizes) <= limit
    with raises_rule("HS-FRM-08", path="frame[0].descriptor.buffers[2].byte_size"):
        list(read_stream(data, buffer_limit=limit))
    assert len(list(read_stream(data, buffer_limit=limit + 1))) == 1
    assert len(list(read_stream(write_stream([item]), buffer_limit=4))) == 1


def test_skipped_buffers_are_not_held():
    """keep_buffers=False: a 32 MiB buffer crosses the reader a chunk at a time; items carry no bytes."""
    size = 32 << 20
    frame = write_stream([TensorItem(TensorDescriptor(type_tag=0x11, shape=(size,),
                                                      buffers=(BufferHandle(byte_size=size),)), (bytes(size),))])
    tracemalloc.start()
    try:
        items = list(read_stream(Repeated(frame, 2), check_buffers=False, keep_buffers=False))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [i.buffers for i in items] == [(), ()] and items[0].descriptor.buffers[0].byte_size == size
    assert peak < 4 << 20, peak
    for source in (frame[:-1], io.BytesIO(frame[:-1])):
        with raises_rule("HS-FRM-04", path="frame[0].buffer[0]", offset=len(frame) - 1):
            list(read_stream(source, check_buffers=False, keep_buffers=False))
    assert len(list(read_stream(frame, check_buffers=False, keep_buffers=False))) == 1


def test_checked_buffers_are_kept():
    with pytest.raises(HurrayDeclError, match="keep_buffers"):
        read_stream(b"", keep_buffers=False)


@pytest.mark.parametrize("name, detail, actual, expected", [
    ("i01-truncated-prefix.stream", "the input ends inside the prefix of a frame", "5 bytes", "10 bytes"),
    ("i02-truncated-descriptor.stream", "the input ends inside the descriptor of a frame", "30 bytes", "53 bytes"),
    ("i03-truncated-buffer.stream", "the input ends inside the buffer of a frame", "20 bytes", "24 bytes"),
    ("i08-descriptor-length-huge.stream", "descriptor_length above the reader's descriptor limit", 4294967280,
     "<= 16777216"),
    ("i12-container-file.stream", "a .hrry container, not a stream", b"HRRYFILE", "a frame: HRRY then a version byte"),
    ("i06-descriptor-length-9.stream", "the prefix breaks HT-HDR-07: descriptor_length cannot hold the fixed header",
     9, ">= 20"),
])
def test_refusals_say_what_is_wrong(name, detail, actual, expected):
    with pytest.raises(HurrayDeclError) as info:
        list(read_stream(vector(name)))
    assert (info.value.detail, info.value.actual, info.value.expected) == (detail, actual, expected)


@pytest.mark.parametrize("buffer, at, rule", [(1, 8, "HT-LAY-32"), (2, 24, "HT-LAY-28")])
def test_a_buffer_content_refusal_is_at_its_buffer_in_the_stream(buffer, at, rule):
    """v10 (CSR, buffers of 8, 16 and 24 bytes after a 109-byte descriptor): a bad index or pointer
    is refused at the start of its buffer in the stream, under HS-FRM-09 naming the rule."""
    data = bytearray(vector("v10-csr-three-buffers.stream"))
    sizes = {1: 16, 2: 24}
    data[109 + at:109 + at + sizes[buffer]] = b"\xff" * sizes[buffer]
    with raises_rule("HS-FRM-09", offset=109 + at, path=f"frame[0].buffer[{buffer}][0]") as info:
        list(read_stream(bytes(data)))
    assert info.value.detail.startswith(f"the buffers break {rule}: ")
    assert len(list(read_stream(bytes(data), check_buffers=False))) == 1  # only the contents are wrong


def test_descriptors_are_strict_unless_permissive():
    data = bytearray(vector("v01-one-tensor.stream"))
    data[field_positions(bytes(data[:53]))["descriptor -> type_tag"]] = 0x7E  # an unassigned type tag
    with raises_rule("HS-FRM-09", path="frame[0].descriptor.type_tag") as info:
        list(read_stream(bytes(data)))
    assert info.value.detail == "the descriptor breaks HE-03: unrecognised type tag"
    assert len(list(read_stream(bytes(data), permissive=True))) == 1
    assert len(list(iter_stream(bytes(data), permissive=True))) == 1
    with raises_rule("HS-FRM-09"):
        list(iter_stream(bytes(data)))


def test_skipped_buffers_count_against_the_limit_from_zero():
    """keep_buffers=False holds no bytes between frames: a buffer exactly at the limit is read, one
    byte more is refused, frame after frame."""
    data = vector("v03-three-tensors.stream")  # three float32[4] tensors of 16 bytes
    options = {"check_buffers": False, "keep_buffers": False}
    assert len(list(read_stream(data, buffer_limit=16, **options))) == 3
    with raises_rule("HS-FRM-08", path="frame[0].descriptor.buffers[0].byte_size") as info:
        list(read_stream(data, buffer_limit=15, **options))
    assert info.value.detail == "a buffer above the reader's buffer limit" and info.value.actual == "16 bytes"
    assert info.value.expected == "<= 15 bytes"


def test_a_new_reader_has_read_nothing():
    """read_stream's defaults and StreamReader's are the same: strict, buffers checked and kept."""
    for reader in (read_stream(vector("v01-one-tensor.stream")), StreamReader(vector("v01-one-tensor.stream"))):
        assert (reader.partial, reader.frames, reader.position, reader.held) == ((0, 0, b""), 0, 0, 0)
        assert (reader.item_frame, reader.item_start, reader.ended, reader.error) == (0, 0, False, None)
        assert (reader.permissive, reader.check_buffers, reader.keep_buffers, reader.buffer_limit) == (
            False, True, True, None)
        assert reader.descriptor_limit == 16 << 20


@pytest.mark.parametrize("source, options, argument, detail, actual, expected", [
    (42, {}, "source", "a stream is read from bytes or an object with read() or recv_into()", "int",
     "bytes, a binary file, a pipe or a socket"),
    (b"", {"buffer_limit": -1}, "buffer_limit", "a byte count, or None for no limit", -1, ">= 0 or None"),
    (b"", {"buffer_limit": 1.5}, "buffer_limit", "a byte count, or None for no limit", 1.5, ">= 0 or None"),
    (b"", {"descriptor_limit": 9}, "descriptor_limit", "a byte count that can hold a prefix", 9, ">= 10"),
    (b"", {"keep_buffers": False}, "keep_buffers",
     "buffers are checked on their contents: keep them, or pass check_buffers=False", False, True),
])
def test_arguments_are_refused_by_name(source, options, argument, detail, actual, expected):
    with raises_rule("ARGUMENT") as info:
        read_stream(source, **options)
    assert (info.value.path, info.value.detail, info.value.actual, info.value.expected) == (
        argument, detail, actual, expected)


class _Overfull:
    def read(self, count: int) -> bytes:
        return b"H" * (count + 1)


class _NonBlocking:
    def read(self, count: int) -> None:
        return None


@pytest.mark.parametrize("source, detail, actual, expected", [
    (_Overfull(), "read(n) returned more than n bytes", 2, 1),
    (_NonBlocking(), "a stream is read from a blocking source", "read() returned None",
     "bytes, or b'' at end of input"),
])
def test_a_source_breaking_its_contract_is_an_argument_error(source, detail, actual, expected):
    with raises_rule("ARGUMENT") as info:
        list(read_stream(source))
    assert (info.value.path, info.value.detail, info.value.actual, info.value.expected) == (
        "source", detail, actual, expected)


def test_the_module_exports_its_names():
    from hurray_decl.hurray.stream import reader as module

    assert module.__all__ == ["Source", "StreamReader", "iter_stream", "read_stream"]
    assert all(callable(getattr(module, name)) for name in module.__all__)


# ---------------------------------------------------------------- the writer


@covers("HS-WR-02", "HS-VER-04")
def test_the_writer_writes_frames_and_nothing_else():
    for name in ("v01-one-tensor.stream", "v03-three-tensors.stream", "v10-csr-three-buffers.stream",
                 "v11-composite-partition.stream", "v12-overlay-then-tensor.stream", "v13-nested-depth-8.stream"):
        data = vector(name)
        assert write_stream(list(read_stream(data))) == data
    sink = io.BytesIO()
    with StreamWriter(sink):
        pass
    assert sink.getvalue() == b""


def test_the_writer_refuses_a_newer_minor():
    item = next(iter(read_stream(vector("v14-descriptor-minor-1.stream"))))
    sink = io.BytesIO()
    with raises_rule("HS-VER-04"):
        StreamWriter(sink).write(*item)
    assert sink.getvalue() == b""


@covers("HS-WR-01")
@pytest.mark.parametrize("buffers", [(), (bytes(8), bytes(8)), (bytes(7),)])
def test_a_frame_whose_buffers_do_not_fit_writes_nothing(buffers):
    d = f32([1, 2]).descriptor
    sink = io.BytesIO()
    writer = StreamWriter(sink)
    with raises_rule("HS-WR-01"):
        writer.write(d, buffers)
    assert sink.getvalue() == b"" and writer.frames == 0
    writer.write(d, (bytes(8),))  # a refused frame does not poison the writer
    assert len(sink.getvalue()) == len(write_tensor_descriptor(d)) + 8


@covers("HS-SYNC-01")
def test_the_writer_refuses_event_synced_buffers():
    d = TensorDescriptor(type_tag=0x03, shape=(2,), buffers=(BufferHandle(byte_size=8, device_tag=1, sync_mode=1),))
    sink = io.BytesIO()
    with raises_rule("HS-SYNC-01", path="frame[0].descriptor.buffers[0].sync_mode"):
        StreamWriter(sink).write(d, (bytes(8),))
    assert sink.getvalue() == b""


def _head(rule: int, shape, count: int) -> TensorDescriptor:
    return TensorDescriptor(type_tag=0x03, shape=tuple(shape),
                            layout=CompositeHead(composition_rule=rule, member_count=count))


@covers("HS-CMP-06")
def test_a_composite_is_checked_whole_before_its_first_byte():
    leaf = f32([0.5, -0.5])
    chain = leaf
    for _ in range(9):
        chain = CompositeItem(_head(3, (2,), 1), (chain,))
    bad = [
        CompositeItem(_head(3, (2,), 2), (leaf,)),  # member_count 2, one member
        chain,  # 9 levels
        CompositeItem(_head(3, (2,), 1), (TensorItem(leaf.descriptor, (bytes(4),)),)),  # a member's buffer
    ]
    for composite in bad:
        sink = io.BytesIO()
        writer = StreamWriter(sink)
        with pytest.raises(HurrayDeclError) as info:
            writer.write_composite(composite)
        assert info.value.code in ("HS-CMP-06", "HS-WR-01")
        assert sink.getvalue() == b""
    eight = chain.members[0]
    sink = io.BytesIO()
    StreamWriter(sink).write_composite(eight)
    assert kinds(read_stream(sink.getvalue())) == "C"


@covers("HS-CMP-06")
def test_a_partition_that_overlaps_is_not_written():
    part = next(iter(read_stream(vector("v11-composite-partition.stream"))))
    second = part.members[1]
    moved = second.descriptor.replace(shard=second.descriptor.shard.model_copy(update={"shard_offset": (0, 3)}))
    sink = io.BytesIO()
    with raises_rule("HS-CMP-06"):
        StreamWriter(sink).write_composite(
            CompositeItem(part.head, (part.members[0], TensorItem(moved, second.buffers))))
    assert sink.getvalue() == b""


@covers("HS-WR-04")
def test_a_sink_failing_part_way_poisons_the_writer():
    class Failing(io.RawIOBase):
        def __init__(self, room: int) -> None:
            self.room, self.taken = room, b""

        def writable(self) -> bool:
            return True

        def write(self, data) -> int:
            if not self.room:
                raise OSError(28, "No space left on device")
            part = bytes(data[:self.room])
            self.room -= len(part)
            self.taken += part
            return len(part)

    sink = Failing(60)
    writer = StreamWriter(sink)
    item = f32([1, 2, 3, 4])
    with raises_rule("HS-WR-04"):
        writer.write(*item)
    assert 0 < len(sink.taken) < 69
    sink.room = 1000
    with raises_rule("HS-WR-04"):
        writer.write(*item)
    assert len(sink.taken) == 60


@covers("HS-WR-03")
def test_the_writer_adds_no_statistics():
    """The writer computes no statistics: a descriptor without them goes out with HAS_STATISTICS clear."""
    data = write_stream([f32([1, 2, 3])])
    flags = struct.unpack_from("<I", data, field_positions(data)["descriptor -> flags"])[0]
    assert flags & 0x08 == 0 and data[53:] == struct.pack("<3f", 1, 2, 3)


@covers("HS-WR-01-S")
def test_finish_is_idempotent_and_ends_the_stream():
    sink = io.BytesIO()
    with StreamWriter(sink) as writer:
        writer.write(*f32([1.0]))
    writer.finish()
    with raises_rule("HS-WR-01-S"):
        writer.write(*f32([2.0]))
    assert len(list(read_stream(sink.getvalue()))) == 1
    with raises_rule("HS-CMP-06"):  # a head goes through write_composite, with its members
        StreamWriter(io.BytesIO()).write(_head(3, (2,), 0), ())


def test_write_sockets_with_sendall():
    left, right = socket.socketpair()
    with left, right:
        writer = StreamWriter(left)
        writer.write(*f32([1, 2]))
        writer.finish()
        left.shutdown(socket.SHUT_WR)
        items = list(read_stream(right))
    assert struct.unpack("<2f", items[0].buffers[0]) == (1, 2)


def test_the_depth_limit_is_the_containers():
    """HS-D05 takes the depth composite.md states; the container's HF-DATA-17 takes the same."""
    from hurray_decl.hurray.container.declarations import MAX_COMPOSITE_DEPTH
    from hurray_decl.hurray.stream.frames import MAX_DEPTH

    assert MAX_DEPTH == MAX_COMPOSITE_DEPTH == 8
