"""The GGUF file layout declared once, and checked against the file before anything is read from it.

A ``.gguf`` file (gguf-py ``GGUFWriter``, llama.cpp) is a header (magic, version, tensor and
KV counts), ``kv_count`` key-value entries, ``tensor_count`` tensor infos (name, dimensions,
GGML type, offset), padding to ``general.alignment`` and the tensor data. :data:`GGUF_HEADER`,
:data:`KV_HEAD`, :data:`SCALARS`, :data:`ARRAY_HEAD` and :data:`TENSOR_INFO` are the Construct
declarations of those parts; :func:`open_gguf` parses them from the file (never from a copy of
it) and checks every count and size against the bytes that are there before it is used, so
that no claim in the file drives an allocation, a loop or a read past the end:

* counts (KV entries, tensor infos, array elements) against the bytes left, by their smallest
  encoding; string lengths against the bytes left; ``n_dims`` against Hurray's rank limit;
* dimensions: their product (in Python integers) below 2**63, the first (contiguous) one a
  multiple of the GGML type's block, the tensor's bytes computed from the type's block size;
* each tensor's data inside the file, at a multiple of the alignment from the data start.

Arrays of fixed-width elements are checked as one span (booleans as one NumPy view), string
arrays in one pass over their lengths, nested arrays without recursion; their values are read
only when asked (:meth:`GgufKV.value`). Tensor data are NumPy views of one read-only memory map
(:meth:`GgufFile.tensor_data`), which :meth:`GgufFile.release` lets the system page out again.

GGUF has no rules of its own in RULES.md. Each check raises the code of the rule that governs
the same structure in a ``.hrry`` container, the converter's target, with a path that starts at
``gguf`` and the byte offset in the file: HF-HDR-03 magic, HF-HDR-01 byte order, HF-HDR-04/05
version, HF-HDR-18 a file shorter than the header, HF-HDR-11 ``general.alignment``, HF-IDX-09
tensor infos past the end, HF-IDX-12/13 tensor names, HF-META-07 KV entries past the end,
HF-META-10/11 keys, HF-META-14 booleans, HF-META-16 value types, HF-DATA-06 tensor alignment,
HF-DATA-13 tensor data past the end; HE-03 an unknown GGML type, HT-HDR-13 a rank above 64,
HQ-MX-08 a row that is not whole blocks, HX-01 a size past 2**63.
"""

from __future__ import annotations

import io
import mmap
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import construct as cs
import numpy as np
from construct.core import stream_size, stream_tell
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFValueType

from hurray_decl.declare.schema import Rule
from hurray_decl.errors import HurrayDeclError, RuleViolation, TruncatedError
from hurray_decl.hurray.container.declarations import CountWithin, utf8

__all__ = [
    "ARRAY_HEAD",
    "DEFAULT_ALIGNMENT",
    "GGUF_HEADER",
    "GGUF_MAGIC",
    "HEADER_LENGTH",
    "KV_HEAD",
    "MAX_RANK",
    "SCALARS",
    "TENSOR_INFO",
    "GgufFile",
    "GgufKV",
    "GgufTensorInfo",
    "open_gguf",
]

GGUF_MAGIC = b"GGUF"
VERSIONS = (2, 3)
"""The GGUF versions with 64-bit counts and lengths (version 1 had 32-bit ones)."""
DEFAULT_ALIGNMENT = 32
"""The data alignment when ``general.alignment`` is absent (GGUF_DEFAULT_ALIGNMENT)."""
ALIGNMENT_KEY = "general.alignment"
MAX_RANK = 64
"""The largest n_dims converted: Hurray's rank limit (HT-HDR-13); GGML itself writes at most 4."""
LIMIT = 1 << 63
"""Sizes and element counts stay below 2**63 (HX-01)."""

V = GGUFValueType


LENGTH = cs.Int64ul
"""A string's length field."""
_LENGTH = struct.Struct(LENGTH.fmtstr)


def _string(what: str, length_code: str, utf8_code: str | None = None) -> cs.Struct:
    """A GGUF string: u64 length, then that many bytes (UTF-8 checked when ``utf8_code`` is given)."""
    data: cs.Construct = cs.Bytes(cs.this.length)
    if utf8_code is not None:
        data = Rule(data, lambda v, _: utf8(v), utf8_code, "well-formed UTF-8", f"{what} is not well-formed UTF-8")
    return cs.Struct(
        "length" / CountWithin(LENGTH, 1, length_code, f"{what}'s length") * "u64 byte length",
        "bytes" / data * "the bytes",
    )


def _known(enum: Any) -> Any:
    values = {int(v) for v in enum}
    return lambda v, _: v in values


GGUF_HEADER = cs.Struct(
    "magic" / Rule(cs.Bytes(4), lambda v, _: v == GGUF_MAGIC, "HF-HDR-03", GGUF_MAGIC, "not a GGUF file")
    * '47 47 55 46 ("GGUF")',
    "version" / Rule(Rule(Rule(
        cs.Int32ul, lambda v, _: v & 0xFFFF != 0, "HF-HDR-01", "a little-endian version",
        "a GGUF file of the other byte order (big-endian); only little-endian files are read"),
        lambda v, _: v >= VERSIONS[0], "HF-HDR-05", f">= {VERSIONS[0]}",
        "GGUF version 1 (32-bit counts) is not read"),
        lambda v, _: v <= VERSIONS[-1], "HF-HDR-04", f"<= {VERSIONS[-1]}", "a newer GGUF version than this reader")
    * "u32 GGUF version: 2 or 3",
    "tensor_count" / CountWithin(cs.Int64ul, 8 + 4 + 4 + 8, "HF-IDX-09", "tensor_count tensor infos")
    * "u64 number of tensor infos",
    "kv_count" / CountWithin(cs.Int64ul, 8 + 4 + 1, "HF-META-07", "kv_count KV entries")
    * "u64 number of KV entries",
)
"""The 24-byte header."""

HEADER_LENGTH = GGUF_HEADER.sizeof()

VALUE_TYPE = Rule(cs.Int32ul, _known(V), "HF-META-16", f"0 .. {max(V)}", "an unknown GGUF value type")

SCALARS: dict[int, cs.Construct] = {
    V.UINT8: cs.Int8ul, V.INT8: cs.Int8sl, V.UINT16: cs.Int16ul, V.INT16: cs.Int16sl,
    V.UINT32: cs.Int32ul, V.INT32: cs.Int32sl, V.FLOAT32: cs.Float32l, V.UINT64: cs.Int64ul,
    V.INT64: cs.Int64sl, V.FLOAT64: cs.Float64l,
    V.BOOL: Rule(cs.Int8ul, lambda v, _: v in (0, 1), "HF-META-14", "0x00 or 0x01", "a GGUF bool is not 0 or 1"),
    V.STRING: _string("a string value", "HF-META-07"),
}
"""The payload of every value type but ARRAY (also the elements of an array)."""

FIXED = {tag: con.sizeof() for tag, con in SCALARS.items() if tag != V.STRING}
"""The size of each fixed-width value type."""
_KIND = {**dict.fromkeys("BHLQ", "u"), **dict.fromkeys("bhlq", "i"), **dict.fromkeys("efd", "f")}
DTYPES = {tag: np.dtype("u1" if tag == V.BOOL else f"<{_KIND[SCALARS[tag].fmtstr[-1]]}{size}")
          for tag, size in FIXED.items()}
"""Each fixed-width type as a NumPy dtype (its declaration's struct format and size; never the
platform's C sizes: struct's standard ``<L`` is 4 bytes, NumPy's ``L`` a C long)."""
SMALLEST = {**FIXED, V.STRING: 8, V.ARRAY: 4 + 8}
"""The smallest encoding of each value type: bounds a count by the bytes left."""

ARRAY_HEAD = cs.Struct(
    "element_type" / VALUE_TYPE * "u32 element value type (ARRAY nests)",
    "count" / CountWithin(cs.Int64ul, lambda ctx: SMALLEST[ctx.element_type], "HF-META-07", "an array count")
    * "u64 number of elements",
)
"""An array value's head; ``count`` payloads of ``element_type`` follow."""

_TYPE = struct.Struct(VALUE_TYPE.subcon.fmtstr)
"""A value type (KV_HEAD's, ARRAY_HEAD's), read by struct on the fast path."""
_ARRAY_HEAD_SIZE = ARRAY_HEAD.sizeof()

KV_HEAD = cs.Struct(
    "key" / _string("a KV key", "HF-META-07", "HF-META-10") * "the key, UTF-8",
    "value_type" / VALUE_TYPE * "u32 value type",
)
"""A KV entry's head; the payload of ``value_type`` follows."""

_GGML_CODES = {int(t) for t in GGML_QUANT_SIZES}
GGML_TYPE = Rule(cs.Int32ul, lambda v, _: v in _GGML_CODES, "HE-03", "a GGML type of gguf.GGMLQuantizationType",
                 "an unknown GGML type")

TENSOR_INFO = cs.Struct(
    "name" / _string("a tensor name", "HF-IDX-09", "HF-IDX-12") * "the tensor's name, UTF-8, unique",
    "n_dims" / Rule(cs.Int32ul, lambda v, _: v <= MAX_RANK, "HT-HDR-13", f"<= {MAX_RANK}",
                    "more dimensions than a Hurray tensor has") * "u32 number of dimensions",
    "dims" / cs.Array(cs.this.n_dims, cs.Int64ul) * "u64 ne[i], ne[0] contiguous",
    "ggml_type" / GGML_TYPE * "u32 GGML type",
    "offset" / cs.Int64ul * "u64 offset of the data from the data start; a multiple of the alignment",
)
"""One tensor info."""


@dataclass(frozen=True)
class GgufKV:
    """One KV entry: where its payload lies; the value is read from the file when asked."""

    key: str
    value_type: int
    offset: int               # of the entry
    payload: int              # offset of the payload
    end: int
    element_type: int | None = None  # arrays: the element type and count
    count: int = 0
    file: GgufFile | None = field(default=None, repr=False, compare=False)

    @property
    def type_name(self) -> str:
        name = V(self.value_type).name
        return name if self.element_type is None else f"{name}[{V(self.element_type).name}]"

    def value(self) -> Any:
        """The value: a number, bool or str; an array of fixed-width elements as a NumPy array
        (a view of the file), of strings as a list of str, of arrays as a list of those."""
        if self.file is None:
            raise RuleViolation("HF-META-12", "this entry is detached from its file", path=f"gguf -> {self.key}")
        return self.file.value_at(self.value_type, self.payload)

    def raw(self) -> memoryview:
        """The payload's bytes as they are in the file (after the value type; arrays from their
        element type), checked when the file was opened: a view, nothing copied."""
        if self.file is None:
            raise RuleViolation("HF-META-12", "this entry is detached from its file", path=f"gguf -> {self.key}")
        return memoryview(self.file.mapped())[self.payload:self.end]


@dataclass(frozen=True)
class GgufTensorInfo:
    """One tensor info, checked: NumPy-order shape, GGML type name, absolute data offset and size."""

    name: str
    ggml_type: int
    dims: tuple[int, ...]     # as stored: ne[0] (contiguous) first
    offset: int               # absolute, in the file
    nbytes: int
    info_offset: int

    @property
    def type_name(self) -> str:
        return GGMLQuantizationType(self.ggml_type).name

    @property
    def shape(self) -> tuple[int, ...]:
        """NumPy order: the contiguous dimension last."""
        return tuple(reversed(self.dims))

    @property
    def elements(self) -> int:
        count = 1
        for n in self.dims:
            count *= n
        return count


def _read(stream: BinaryIO, declaration: cs.Construct, where: str, **params: Any) -> Any:
    """Parse ``declaration`` at the stream's position; errors name ``where`` and their file offset."""
    start = stream_tell(stream, None)
    try:
        return declaration.parse_stream(stream, **params)
    except HurrayDeclError as err:
        raise err.rebased(0, where) from None
    except cs.StreamError:
        raise TruncatedError("HF-META-07" if where.startswith("gguf -> kv") else "HF-IDX-09",
                             "the GGUF file ends inside this field", path=where, offset=start,
                             expected=f"more than {stream_size(stream) - start} bytes") from None


class GgufFile:
    """A checked GGUF file: version, KV entries, tensor infos, and its bytes as one memory map."""

    def __init__(self, source: str | os.PathLike[str] | bytes) -> None:
        self.path = None if isinstance(source, bytes) else Path(source)
        with (io.BytesIO(source) if isinstance(source, bytes) else Path(source).open("rb")) as handle:
            self.size = len(source) if isinstance(source, bytes) else os.fstat(handle.fileno()).st_size
            if self.size < HEADER_LENGTH:
                head = handle.read(len(GGUF_MAGIC))
                if head != GGUF_MAGIC:
                    raise RuleViolation("HF-HDR-03", "not a GGUF file", path="gguf -> magic", offset=0, actual=head,
                                        expected=GGUF_MAGIC)
                raise TruncatedError("HF-HDR-18", "a GGUF file is at least its 24-byte header", path="gguf",
                                     offset=self.size, actual=self.size, expected=f">= {HEADER_LENGTH} bytes")
            header = _read(handle, GGUF_HEADER, "gguf")
            self._map: mmap.mmap | bytes = (source if isinstance(source, bytes)
                                            else mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ))
            self.version: int = header.version
            self.kv: dict[str, GgufKV] = {}
            at = stream_tell(handle, None)
            for i in range(header.kv_count):
                entry = self._kv_fast(at, i)
                if entry is None:  # something to refuse, or to read by the declaration: it decides
                    handle.seek(at)
                    entry = self._kv(handle, i)
                at = entry.end
                if entry.key in self.kv:
                    raise RuleViolation("HF-META-11", "two KV entries have the same key",
                                        path=f"gguf -> kv[{i}] -> key", offset=entry.offset, actual=entry.key)
                self.kv[entry.key] = entry
            handle.seek(at)
            infos = [(stream_tell(handle, None), _read(handle, TENSOR_INFO, f"gguf -> tensors[{i}]"))
                     for i in range(header.tensor_count)]
            self.alignment = self._alignment(handle)
            end = stream_tell(handle, None)
        self.data_start = -(-end // self.alignment) * self.alignment
        self.tensors: list[GgufTensorInfo] = []
        names: set[str] = set()
        for i, (at, info) in enumerate(infos):
            tensor = self._tensor(i, at, info)
            if tensor.name in names:
                raise RuleViolation("HF-IDX-13", "two tensors have the same name",
                                    path=f"gguf -> tensors[{i}] -> name", offset=at, actual=tensor.name)
            names.add(tensor.name)
            self.tensors.append(tensor)

    # --- the metadata -------------------------------------------------------------------------

    def _kv(self, handle: BinaryIO, i: int) -> GgufKV:
        where = f"gguf -> kv[{i}]"
        offset = stream_tell(handle, None)
        head = _read(handle, KV_HEAD, where)
        key = head.key.bytes.decode("utf-8")
        payload = stream_tell(handle, None)
        element, count = None, 0
        if head.value_type == V.ARRAY:
            array = _read(handle, ARRAY_HEAD, f"{where} -> value")
            element, count = array.element_type, array.count
            self._skip_elements(handle, element, count, f"{where} -> value")
        else:
            self._skip_elements(handle, head.value_type, 1, f"{where} -> value")
        return GgufKV(key, head.value_type, offset, payload, stream_tell(handle, None), element, count, self)

    def _kv_fast(self, p: int, i: int) -> GgufKV | None:
        """The entry at ``p`` read with struct over the mapped bytes, every check of :meth:`_kv` made
        on the way, or None at the first thing it would refuse or that is not a plain case (a key
        that is not UTF-8, an unknown type, a nested array, a count or length past the bytes left,
        a bool not 0 or 1): :meth:`_kv` then reads the entry by its declaration, with its error."""
        data, size = self._map, self.size
        if size - p < _LENGTH.size:
            return None
        key_end = p + _LENGTH.size + _LENGTH.unpack_from(data, p)[0]
        if key_end + _TYPE.size > size:
            return None
        try:
            key = str(data[p + _LENGTH.size:key_end], "utf-8")
        except UnicodeDecodeError:
            return None
        value_type = _TYPE.unpack_from(data, key_end)[0]
        payload = key_end + _TYPE.size
        element, count, kind, left, start = None, 0, value_type, 1, payload
        if value_type == V.ARRAY:
            if size - payload < _ARRAY_HEAD_SIZE:
                return None
            element, count = _TYPE.unpack_from(data, payload)[0], _LENGTH.unpack_from(data, payload + _TYPE.size)[0]
            start = payload + _ARRAY_HEAD_SIZE
            if element == V.ARRAY or element not in SMALLEST or count * SMALLEST[element] > size - start:
                return None
            kind, left = element, count
        elif value_type not in SMALLEST:
            return None
        if kind in FIXED:
            end = start + FIXED[kind] * left
            if end > size:
                return None
            if kind == V.BOOL and left and int(np.frombuffer(data, np.uint8, left, start).max()) > 1:
                return None
        else:  # strings: one pass over their lengths, each within the bytes left
            end = start
            for _ in range(left):
                if size - end < _LENGTH.size:
                    return None
                end += _LENGTH.size + _LENGTH.unpack_from(data, end)[0]
                if end > size:
                    return None
        return GgufKV(key, value_type, p, payload, end, element, count, self)

    def _skip_elements(self, handle: BinaryIO, value_type: int, count: int, where: str) -> None:
        """Walk ``count`` payloads of ``value_type`` (arrays nest: a stack, not recursion), checking
        each length and count against the bytes left; fixed-width runs are one step."""
        pending = [(value_type, count)]
        while pending:
            kind, left = pending.pop()
            if not left:
                continue
            at = stream_tell(handle, None)
            if kind in FIXED:
                span = FIXED[kind] * left
                if span > self.size - at:
                    raise TruncatedError("HF-META-07", "the values run past the end of the GGUF file", path=where,
                                         offset=at, actual=left, expected=f"<= {(self.size - at) // FIXED[kind]}")
                if kind == V.BOOL:
                    flags = np.frombuffer(handle.read(span), dtype=np.uint8)
                    if (flags > 1).any():
                        j = int(np.flatnonzero(flags > 1)[0])
                        raise RuleViolation("HF-META-14", "a GGUF bool is not 0 or 1", path=where, offset=at + j,
                                            actual=int(flags[j]), expected="0x00 or 0x01")
                else:
                    handle.seek(span, os.SEEK_CUR)
            elif kind == V.STRING:
                end = at
                for start, length in self.strings(at, left, where):
                    end = start + length
                handle.seek(end)
            else:  # an array of arrays: each element is a head and its own elements
                pending.append((kind, left - 1))
                head = _read(handle, ARRAY_HEAD, where)
                pending.append((head.element_type, head.count))

    def strings(self, at: int, count: int, where: str) -> Iterator[tuple[int, int]]:
        """``(start, length)`` of ``count`` strings from ``at``: one pass over their lengths, each
        checked against the bytes left before the next is read."""
        data, size, pos = self.mapped(), self.size, at
        for _ in range(count):
            if size - pos < _LENGTH.size:
                raise TruncatedError("HF-META-07", "the GGUF file ends inside a string's length", path=where,
                                     offset=pos, expected=f"{_LENGTH.size} bytes")
            (length,) = _LENGTH.unpack_from(data, pos)
            pos += _LENGTH.size
            if length > size - pos:
                raise TruncatedError("HF-META-07", "a string's length cannot fit in the bytes left", path=where,
                                     offset=pos - _LENGTH.size, actual=length, expected=f"<= {size - pos}")
            yield pos, length
            pos += length

    def _alignment(self, handle: BinaryIO) -> int:
        entry = self.kv.get(ALIGNMENT_KEY)
        if entry is None:
            return DEFAULT_ALIGNMENT
        value = self.value_at(entry.value_type, entry.payload, handle) if entry.value_type == V.UINT32 else None
        if not isinstance(value, int) or value <= 0 or value & (value - 1):
            raise RuleViolation("HF-HDR-11", f"{ALIGNMENT_KEY} is a uint32 power of two",
                                path=f"gguf -> {ALIGNMENT_KEY}", offset=entry.payload,
                                actual=value if value is not None else entry.type_name, expected="a power of two")
        return value

    def _tensor(self, i: int, at: int, info: Any) -> GgufTensorInfo:
        where = f"gguf -> tensors[{i}]"
        dims = tuple(int(n) for n in info.dims)
        block, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(info.ggml_type)]
        name = info.name.bytes.decode("utf-8")
        nonzero = 1
        for n in dims:
            nonzero *= max(n, 1)
        if nonzero >= LIMIT:
            raise RuleViolation("HX-01", "the tensor's element count is past 2**63", path=f"{where} -> dims",
                                offset=at, actual=list(dims), expected="a product below 2**63")
        count = nonzero if all(dims) else 0
        if dims and dims[0] % block:
            raise RuleViolation("HQ-MX-08", f"a {GGMLQuantizationType(info.ggml_type).name} row is whole blocks of "
                                f"{block} elements", path=f"{where} -> dims[0]", offset=at, actual=dims[0],
                                expected=f"a multiple of {block}")
        nbytes = count // block * type_size
        if info.offset % self.alignment:
            raise RuleViolation("HF-DATA-06", "tensor data start on a multiple of the alignment",
                                path=f"{where} -> offset", offset=at, actual=info.offset,
                                expected=f"a multiple of {self.alignment}")
        start = self.data_start + info.offset
        if start + nbytes > self.size:
            raise TruncatedError("HF-DATA-13", "the tensor's data run past the end of the GGUF file",
                                 path=f"{where} -> offset", offset=at, actual=f"{nbytes} bytes at {start}",
                                 expected=f"an end <= {self.size}")
        return GgufTensorInfo(name, info.ggml_type, dims, start, nbytes, at)

    def value_at(self, value_type: int, payload: int, handle: BinaryIO | None = None) -> Any:
        """Decode the (already checked) value of ``value_type`` at ``payload``."""
        if handle is None:
            with io.BytesIO(self._map) if isinstance(self._map, bytes) else Path(str(self.path)).open("rb") as own:
                return self.value_at(value_type, payload, own)
        back = stream_tell(handle, None)
        handle.seek(payload)
        try:
            return self._value(handle, value_type)
        finally:
            handle.seek(back)

    def _value(self, handle: BinaryIO, value_type: int) -> Any:
        if value_type == V.STRING:
            return SCALARS[V.STRING].parse_stream(handle).bytes.decode("utf-8", "replace")
        if value_type == V.BOOL:
            return bool(SCALARS[V.BOOL].parse_stream(handle))
        if value_type in FIXED:
            return SCALARS[value_type].parse_stream(handle)
        head = ARRAY_HEAD.parse_stream(handle)
        if head.element_type in FIXED:
            values = np.frombuffer(handle.read(FIXED[head.element_type] * head.count), DTYPES[head.element_type])
            return values.astype(bool) if head.element_type == V.BOOL else values
        if head.element_type == V.STRING:
            data, end = self.mapped(), stream_tell(handle, None)
            texts = []
            for start, length in self.strings(end, head.count, "gguf"):
                texts.append(bytes(data[start:start + length]).decode("utf-8", "replace"))
                end = start + length
            handle.seek(end)
            return texts
        return [self._value(handle, head.element_type) for _ in range(head.count)]

    # --- the data -------------------------------------------------------------------------------

    def mapped(self) -> mmap.mmap | bytes:
        return self._map

    def tensor_data(self, tensor: GgufTensorInfo) -> np.ndarray:
        """The tensor's bytes: a read-only uint8 view of the file's memory map (nothing copied)."""
        if not tensor.nbytes:
            return np.empty(0, dtype=np.uint8)
        return np.frombuffer(self.mapped(), dtype=np.uint8, count=tensor.nbytes, offset=tensor.offset)

    def release(self, tensor: GgufTensorInfo) -> None:
        """Let the system drop the pages of ``tensor``'s data from this process (they are read again
        from the file if the data are used later): a tensor-by-tensor reader stays bounded."""
        if not isinstance(self._map, mmap.mmap) or not tensor.nbytes or not hasattr(mmap, "MADV_DONTNEED"):
            return
        page = mmap.PAGESIZE
        start = tensor.offset // page * page
        self._map.madvise(mmap.MADV_DONTNEED, start, min(self.size, tensor.offset + tensor.nbytes) - start)

    def __iter__(self) -> Iterator[GgufTensorInfo]:
        return iter(self.tensors)


def open_gguf(path: str | os.PathLike[str] | bytes) -> GgufFile:
    """Parse and check the header, KV entries and tensor infos (see the module's documentation).

    Refusals are :class:`~hurray_decl.errors.FormatError` with a RULES.md code, a path from
    ``gguf`` and the byte offset; a missing or unreadable file raises ``OSError``. ``path`` may
    also be the file's bytes.
    """
    return GgufFile(path)

