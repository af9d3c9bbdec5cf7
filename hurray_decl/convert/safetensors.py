"""safetensors files in and out, with the ``safetensors`` package (extra ``[safetensors]``).

:data:`DTYPES` is the one table between the two type spaces: each safetensors dtype code, the
Hurray element type holding its values bit for bit, and the dtype name the package's writer
takes. Every safetensors dtype with a Hurray counterpart converts, losslessly:

* the integer, bool, float16/32/64, bfloat16 and complex64 types as themselves;
* ``F8_E4M3`` (``float8_e4m3fn``) as ``float8_e4m3``, ``F8_E5M2`` as ``float8_e5m2``, ``F8_E8M0``
  (``float8_e8m0fnu``) as ``float8_e8m0`` (whose 0x00 and 0xFF bytes Hurray refuses, HE-26);
* ``F4`` (``float4_e2m1fn_x2``: two values a byte, element 2k in the low nibble, as HE-14) as
  ``float4_e2m1``;
* ``F8_E4M3FNUZ`` and ``F8_E5M2FNUZ`` have no Hurray type (their NaN and bias differ from
  HE-23 / HE-24) and are refused by those rules.

Without the package, reading and writing raise ``ModuleNotFoundError`` (the command line names
the package to install). Reading goes through :class:`safetensors.safe_open`, which checks the header (offsets, sizes,
dtypes) before anything here sees it; each tensor is read when asked for: its bytes, at the
offsets of the header the package has checked, into a new array (one copy, no mapping left
resident), viewed as its type (float8 and F4 too, which the package's NumPy API cannot build).
``__metadata__`` (string keys and values) is kept in the file's order.

:func:`metadata_to_kv` and :func:`kv_to_metadata` map ``__metadata__`` to container KV entries and
back: each key as itself, each string value as a KV string, so a file's metadata comes back as it
was. A KV value that is not a string (from another source) is written as its JSON text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from hurray_decl.errors import ArgumentError, RuleViolation, UnsupportedError
from hurray_decl.hurray.tables import storage
from hurray_decl.hurray.values import Tensor

__all__ = [
    "DTYPES",
    "SafetensorsDtype",
    "SafetensorsFile",
    "ShardedSafetensors",
    "from_hurray",
    "index_text",
    "is_index",
    "is_safetensors",
    "iterate_arrays",
    "kv_to_metadata",
    "metadata_to_kv",
    "open_safetensors",
    "shard_plan",
    "to_hurray",
    "write_safetensors",
    "write_safetensors_stream",
]


@dataclass(frozen=True)
class SafetensorsDtype:
    """One safetensors dtype: its header code, the Hurray element type (None: no counterpart,
    refused by ``rule``), and the dtype name ``safetensors.serialize_file`` takes."""

    code: str
    element: str | None
    writer_name: str
    rule: str | None = None
    per_byte: int = 1
    """Values a byte in the file (F4: two, packed as Hurray packs 4-bit types, HE-14)."""


DTYPES = {row.code: row for row in (
    SafetensorsDtype("BOOL", "bool", "bool"),
    SafetensorsDtype("U8", "uint8", "uint8"), SafetensorsDtype("I8", "int8", "int8"),
    SafetensorsDtype("U16", "uint16", "uint16"), SafetensorsDtype("I16", "int16", "int16"),
    SafetensorsDtype("U32", "uint32", "uint32"), SafetensorsDtype("I32", "int32", "int32"),
    SafetensorsDtype("U64", "uint64", "uint64"), SafetensorsDtype("I64", "int64", "int64"),
    SafetensorsDtype("F16", "float16", "float16"), SafetensorsDtype("BF16", "bfloat16", "bfloat16"),
    SafetensorsDtype("F32", "float32", "float32"), SafetensorsDtype("F64", "float64", "float64"),
    SafetensorsDtype("C64", "complex64", "complex64"),
    SafetensorsDtype("F8_E4M3", "float8_e4m3", "float8_e4m3fn"),
    SafetensorsDtype("F8_E5M2", "float8_e5m2", "float8_e5m2"),
    SafetensorsDtype("F8_E8M0", "float8_e8m0", "float8_e8m0fnu"),
    SafetensorsDtype("F4", "float4_e2m1", "float4_e2m1fn_x2", per_byte=2),
    SafetensorsDtype("F8_E4M3FNUZ", None, "float8_e4m3fnuz", "HE-23"),
    SafetensorsDtype("F8_E5M2FNUZ", None, "float8_e5m2fnuz", "HE-24"),
)}
"""Every safetensors dtype, by its header code."""

_BY_ELEMENT = {row.element: row for row in DTYPES.values() if row.element is not None}
_HEADER_LENGTH = 8
"""A safetensors file starts with the byte length of its JSON header, u64 little-endian."""


def is_safetensors(head: bytes) -> bool:
    """Whether the first bytes look like a safetensors file: a u64 header length, then ``{``."""
    if len(head) < _HEADER_LENGTH + 1 or head[_HEADER_LENGTH:_HEADER_LENGTH + 1] != b"{":
        return False
    return int.from_bytes(head[:_HEADER_LENGTH], "little") >= 2


def _dtype_row(code: str, name: str) -> SafetensorsDtype:
    row = DTYPES.get(code)
    if row is None:
        raise UnsupportedError("HE-03", f"{name}: the safetensors dtype {code} is not one this converter knows",
                               path=f"{name} -> dtype", actual=code, expected=", ".join(DTYPES))
    if row.element is None:
        raise UnsupportedError(row.rule or "HE-03", f"{name}: {code} has no Hurray element type (Hurray's float8 "
                               "types are the OCP E4M3FN and E5M2 ones)", path=f"{name} -> dtype", actual=code,
                               expected=", ".join(c for c, r in DTYPES.items() if r.element))
    return row


@dataclass(frozen=True)
class Entry:
    """A tensor of the file: its name, dtype row, shape (in elements) and byte range in the data."""

    name: str
    code: str
    shape: tuple[int, ...]
    begin: int
    end: int


class SafetensorsFile:
    """A safetensors file opened by :func:`open_safetensors`: names in file order, metadata, and
    each tensor's values read on demand (:meth:`array`). A context manager."""

    def __init__(self, path: Path) -> None:
        from safetensors import SafetensorError, safe_open  # the [safetensors] extra

        self.path = path
        try:
            self._handle = safe_open(str(path), framework="numpy", backend="pread")
            self._opened = self._handle.__enter__()
        except SafetensorError as err:
            raise ArgumentError("source", f"{path} is not a valid safetensors file: {err}", actual=str(path)) from None
        self._file = path.open("rb")
        header_size = int.from_bytes(self._file.read(_HEADER_LENGTH), "little")  # checked by safe_open
        header = json.loads(self._file.read(header_size))
        self._data_start = _HEADER_LENGTH + header_size
        raw_metadata = header.pop("__metadata__", None) or {}
        self.metadata: dict[str, str] = dict(raw_metadata)
        entries = [Entry(name, info["dtype"], tuple(int(n) for n in info["shape"]), *map(int, info["data_offsets"]))
                   for name, info in header.items()]
        self.entries = {e.name: e for e in sorted(entries, key=lambda e: e.begin)}
        if set(self.entries) != set(self._opened.keys()) or self.metadata != dict(self._opened.metadata() or {}):
            raise ArgumentError("source", f"{path}: the header read here disagrees with the safetensors package's",
                                actual=str(path))

    @property
    def names(self) -> list[str]:
        """The tensors' names in the order of their data in the file."""
        return list(self.entries)

    def element(self, name: str) -> str:
        """The Hurray element type of tensor ``name`` (refused by rule when there is none)."""
        return _dtype_row(self.entries[name].code, name).element or ""

    def array(self, name: str) -> np.ndarray:
        """Tensor ``name``'s values, same bits: NumPy and ``ml_dtypes`` types (F4 unpacked to one
        ``float4_e2m1fn`` a value)."""
        if name not in self.entries:
            raise ArgumentError("name", f"{self.path} has no tensor {name!r}", actual=name)
        entry = self.entries[name]
        row = _dtype_row(entry.code, name)
        element = row.element or ""
        target = storage.value_dtype(element)
        storage.check_output_size(entry.shape, target.itemsize, f"reading {name}")
        raw = self._bytes(entry)
        count = int(np.prod(entry.shape, dtype=np.int64))
        if row.per_byte > 1:
            raw = storage.unpack_codes(raw, 8 // row.per_byte, count)
        return raw.view(target).reshape(entry.shape)

    def _bytes(self, entry: Entry) -> np.ndarray:
        """A tensor's bytes read into a new array: one copy, no mapping left resident (the
        package checked the header's offsets against the file at open)."""
        data = np.empty(entry.end - entry.begin, np.uint8)
        view, done = data.data, 0
        self._file.seek(self._data_start + entry.begin)
        while done < data.size:
            got = self._file.readinto(view[done:])
            if not got:
                raise ArgumentError("source", f"{self.path} ended inside {entry.name} (shortened since it was "
                                    "opened)", actual=self._data_start + entry.begin + done,
                                    expected=self._data_start + entry.end)
            done += got
        return data

    def close(self) -> None:
        self._handle.__exit__(None, None, None)
        self._file.close()

    def __enter__(self) -> SafetensorsFile:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()


INDEX_SUFFIX = ".safetensors.index.json"
"""The Hugging Face name of a sharded model's index (``model.safetensors.index.json``)."""


class ShardedSafetensors(SafetensorsFile):
    """A sharded model read through its index (``model.safetensors.index.json``: ``weight_map``
    from each tensor name to the shard holding it, ``metadata``) as one file: the shards'
    tensors in shard order (the shards sorted by name), each shard in its file order.

    Every shard's header is read and checked against the index before any tensor is: a shard
    missing (CV-SHD-01), a tensor the index names absent from its shard (CV-SHD-02), a tensor in
    two shards or in a shard the index does not assign it to (CV-SHD-03), an index that is not
    one (CV-SHD-04), and shards whose ``__metadata__`` disagree (CV-SHD-06) are refused. Values
    are then read shard by shard: one shard is open at a time. :attr:`metadata` is the shards'
    ``__metadata__``, then the index's ``metadata`` as ``safetensors.index.<key>`` (JSON text for
    non-strings) but for ``total_size``, which only restates the shards' data size."""

    def __init__(self, path: Path) -> None:  # the shards, not one file: SafetensorsFile.__init__ is not called
        self.path = path
        weight_map, index_metadata = _read_index(path)
        self.shards = sorted(set(weight_map.values()))
        for shard in self.shards:
            if not (path.parent / shard).is_file():
                raise RuleViolation("CV-SHD-01", f"{path.name} names the shard {shard}, which is not in {path.parent}",
                                    path=f"{path.name} -> weight_map", actual=shard, expected="an existing file")
        holders: dict[str, list[str]] = {}
        self.entries = {}
        self.owner: dict[str, str] = {}
        metadata: dict[str, str] = {}
        for shard in self.shards:
            with SafetensorsFile(path.parent / shard) as opened:
                for key, value in opened.metadata.items():
                    if metadata.setdefault(key, value) != value:
                        raise RuleViolation("CV-SHD-06", f"the shards' __metadata__ disagree on {key!r}",
                                            path=f"{shard} -> __metadata__ -> {key}", actual=value,
                                            expected=metadata[key])
                for name, entry in opened.entries.items():
                    holders.setdefault(name, []).append(shard)
                    self.entries.setdefault(name, entry)
                    self.owner.setdefault(name, shard)
        for name, shards in holders.items():
            if len(shards) > 1:
                raise RuleViolation("CV-SHD-03", f"the tensor {name} is in two shards", path=f"{shards[1]} -> {name}",
                                    actual=", ".join(shards), expected="one shard")
            if weight_map.get(name) != shards[0]:
                raise RuleViolation("CV-SHD-03", f"{shards[0]} holds {name}, which {path.name} "
                                    + ("assigns to " + weight_map[name] if name in weight_map else "does not list"),
                                    path=f"{shards[0]} -> {name}", actual=shards[0], expected=weight_map.get(name))
        for name, shard in weight_map.items():
            if name not in holders:
                raise RuleViolation("CV-SHD-02", f"{path.name} names the tensor {name}, which {shard} does not hold",
                                    path=f"{path.name} -> weight_map -> {name}", actual=shard,
                                    expected=f"a shard holding {name}")
        for key, value in index_metadata.items():
            if key != "total_size":
                metadata[f"safetensors.index.{key}"] = value if isinstance(value, str) else json.dumps(value)
        self.metadata = metadata
        self._current: SafetensorsFile | None = None

    @property
    def open_shard(self) -> str | None:
        """The file name of the one shard open now (None before the first read)."""
        return self._current.path.name if self._current is not None else None

    def array(self, name: str) -> np.ndarray:
        """Tensor ``name``'s values, from its shard (opened now, the previous one closed)."""
        if name not in self.owner:
            raise ArgumentError("name", f"{self.path} has no tensor {name!r}", actual=name)
        shard = self.path.parent / self.owner[name]
        if self._current is None or self._current.path != shard:
            self.close()
            self._current = SafetensorsFile(shard)
        return self._current.array(name)

    def close(self) -> None:
        if self._current is not None:
            self._current.close()
            self._current = None


def _read_index(path: Path) -> tuple[dict[str, str], dict[str, Any]]:
    """An index's ``weight_map`` and ``metadata``, checked (CV-SHD-04)."""
    where = path.name
    try:
        index = json.loads(path.read_bytes())
    except (OSError, ValueError) as err:
        raise RuleViolation("CV-SHD-04", f"{where} is not a JSON index: {err}", path=where, actual=str(path),
                            expected="a JSON object with a weight_map") from None
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict):
        raise RuleViolation("CV-SHD-04", f"{where} has no weight_map object", path=f"{where} -> weight_map",
                            actual=type(weight_map).__name__, expected="an object of tensor names to shard files")
    for name, shard in weight_map.items():
        if not isinstance(shard, str) or not shard or Path(shard).name != shard or shard in (".", ".."):
            raise RuleViolation("CV-SHD-04", f"{where} gives {name} a shard that is not a file name in its folder",
                                path=f"{where} -> weight_map -> {name}", actual=shard,
                                expected="a plain file name beside the index")
    metadata = index.get("metadata", {})
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise RuleViolation("CV-SHD-04", f"{where}'s metadata is not an object", path=f"{where} -> metadata",
                            actual=type(metadata).__name__, expected="an object")
    return weight_map, metadata


def shard_plan(sizes: Sequence[tuple[str, int]], max_size: int, stem: str) -> dict[str, list[str]]:
    """Shard file name (``<stem>-%05d-of-%05d.safetensors``, as Hugging Face names them) -> the
    names of its tensors: the tensors in order, a new shard when the next one would take the
    shard's data past ``max_size`` bytes (a tensor larger than that alone in its shard)."""
    groups: list[list[str]] = []
    used = 0
    for name, size in sizes:
        if not groups or (used + size > max_size and groups[-1]):
            groups.append([])
            used = 0
        groups[-1].append(name)
        used += size
    return {f"{stem}-{k + 1:05d}-of-{len(groups):05d}.safetensors": names for k, names in enumerate(groups)}


def index_text(plan: Mapping[str, Sequence[str]], total_size: int) -> str:
    """The index of a sharded model (``<stem>.safetensors.index.json``): ``metadata.total_size``
    (the tensors' bytes) and ``weight_map``, each tensor's shard."""
    weight_map = {name: shard for shard, names in plan.items() for name in names}
    return json.dumps({"metadata": {"total_size": total_size}, "weight_map": weight_map}, indent=2) + "\n"


def is_index(path: str | Path) -> bool:
    """Whether ``path`` is named as a sharded model's index."""
    return str(path).lower().endswith(INDEX_SUFFIX)


def open_safetensors(path: str | Path) -> SafetensorsFile:
    """Open a safetensors file (its header checked by the ``safetensors`` package), or a sharded
    model by its index (:class:`ShardedSafetensors`)."""
    return ShardedSafetensors(Path(path)) if is_index(path) else SafetensorsFile(Path(path))


def metadata_to_kv(metadata: Mapping[str, str]) -> dict[str, str]:
    """``__metadata__`` as container KV entries: the same keys, the same strings, the same order."""
    return {str(k): str(v) for k, v in metadata.items()}


def kv_to_metadata(kv: Mapping[str, Any]) -> dict[str, str]:
    """Container KV entries as ``__metadata__``: strings as they are, other values as JSON text."""
    out = {}
    for key, value in kv.items():
        if isinstance(value, str):
            out[key] = value
        else:
            out[key] = json.dumps(value, default=_json_value)
    return out


def _json_value(value: Any) -> Any:
    """What JSON has no type for in KV values: bytes, as hex text."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    raise TypeError(f"{type(value).__name__} is not a KV value")


def _spec(name: str, values: np.ndarray) -> tuple[Any, np.ndarray]:
    """The package's ``TensorSpec`` for ``values`` and the array whose memory it points at."""
    from safetensors import TensorSpec

    element = storage.element_of_dtype(values.dtype)
    if element is None or element not in _BY_ELEMENT:
        raise UnsupportedError("HE-03", f"{name}: {values.dtype} has no safetensors dtype", path=f"{name} -> dtype",
                               actual=str(values.dtype), expected=", ".join(str(e) for e in _BY_ELEMENT))
    row = _BY_ELEMENT[element]
    shape = tuple(int(n) for n in values.shape)
    per = row.per_byte
    if per > 1:  # F4: the package counts x2 units in the last dimension and doubles it in the header
        if not shape or shape[-1] % per:
            raise UnsupportedError("HE-15", f"{name}: safetensors F4 packs the last dimension in pairs",
                                   path=f"{name} -> shape", actual=list(shape), expected="an even last dimension")
        data = np.frombuffer(storage.pack_codes(storage.codes_of_values(values, element), 8 // per), dtype=np.uint8)
        shape = shape[:-1] + (shape[-1] // per,)
    else:
        data = np.ascontiguousarray(values)
        if data.dtype.byteorder == ">":
            data = data.astype(data.dtype.newbyteorder("<"))
    return TensorSpec(dtype=row.writer_name, shape=shape, data_ptr=data.ctypes.data, data_len=data.nbytes), data


def write_safetensors(path: str | Path, tensors: Iterable[tuple[str, Any]],
                      metadata: Mapping[str, str] | None = None) -> None:
    """Write named arrays (NumPy or ``ml_dtypes`` types of :data:`DTYPES`) and ``metadata`` with
    ``safetensors.serialize_file``. The package orders tensors by dtype alignment then name; it
    writes ``__metadata__`` in its own (hash) order, so a file with more than one metadata key
    differs between two writes of the same contents in that order only."""
    from safetensors import SafetensorError, serialize_file  # the [safetensors] extra

    specs, alive = {}, []
    for name, values in tensors:
        if name in specs or name == "__metadata__":
            raise ArgumentError("tensors", f"the tensor name {name!r} is used twice or reserved", actual=name)
        specs[name], data = _spec(name, np.asarray(values))
        alive.append(data)
    try:
        serialize_file(specs, str(path), metadata=dict(metadata) if metadata else None)
    except SafetensorError as err:
        raise ArgumentError("tensors", f"safetensors refused the tensors: {err}") from None
    del alive


def write_safetensors_stream(stream: Any, planned: Sequence[tuple[str, str, tuple[int, ...]]],
                             arrays: Iterable[np.ndarray], metadata: Mapping[str, str] | None = None) -> None:
    """Write a safetensors file to the binary ``stream`` one tensor at a time: the header from
    ``planned`` (name, Hurray element type, shape of each tensor, in file order), then each array
    of ``arrays`` as it comes (its element type and shape checked against the plan), so that only
    one tensor is held at a time. The header's data offsets follow the plan's order, contiguous
    from 0, and the header is padded with spaces to a multiple of 8 bytes, as the package's writer
    pads it. Only the types of one value a byte or more are written here (not F4)."""
    header: dict[str, Any] = {"__metadata__": dict(metadata)} if metadata else {}
    start = 0
    for name, element, shape in planned:
        row = _BY_ELEMENT.get(element)
        if row is None or row.per_byte > 1:
            raise UnsupportedError("HE-03", f"{name}: {element} is not written here", path=f"{name} -> dtype",
                                   actual=element)
        if name in header:
            raise ArgumentError("tensors", f"the tensor name {name!r} is used twice or reserved", actual=name)
        size = int(np.prod(shape, dtype=np.int64)) * storage.dtype(element).itemsize
        header[name] = {"dtype": row.code, "shape": list(shape), "data_offsets": [start, start + size]}
        start += size
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    stream.write(len(text).to_bytes(_HEADER_LENGTH, "little") + text)
    for (name, element, shape), values in zip(planned, arrays, strict=True):
        values = np.ascontiguousarray(values)
        if storage.element_of_dtype(values.dtype) != element or tuple(values.shape) != tuple(shape):
            raise ArgumentError("tensors", f"{name}: the array is not the planned {element} {list(shape)}",
                                actual=f"{values.dtype} {list(values.shape)}")
        if values.dtype.byteorder == ">":
            values = values.astype(values.dtype.newbyteorder("<"))
        stream.write(values.reshape(-1).view(np.uint8).data)


def iterate_arrays(source: SafetensorsFile) -> Iterator[tuple[str, np.ndarray]]:
    """Every tensor of an open file as (name, values), in file order, one at a time."""
    for name in source.names:
        yield name, source.array(name)


def to_hurray(name: str, values: np.ndarray) -> Tensor:
    """A safetensors tensor's values as an unquantized row-major Hurray tensor, same bits."""
    return Tensor.from_numpy(values, name=name)


def from_hurray(tensor: Tensor, dequantize: str | None = None) -> np.ndarray:
    """An unquantized Hurray tensor's values for :func:`write_safetensors`; a quantized one has no
    plain safetensors form (GPTQ/AWQ are read, not written, here) and is refused, unless
    ``dequantize`` names the type to write its dequantized values in (float32, float16 or
    bfloat16: float32 values rounded to nearest, ties to even)."""
    if tensor.descriptor.quantization is not None and dequantize is not None:
        values = np.asarray(tensor.numpy(), np.float32)
        return values if dequantize == "float32" else values.astype(storage.dtype(dequantize))
    if tensor.descriptor.quantization is not None:
        raise UnsupportedError("HT-SEC-01", f"{tensor.name or 'the tensor'} is quantized; safetensors holds plain "
                               "tensors (--dequantize writes its values)", path="descriptor -> quantization",
                               actual=type(tensor.descriptor.quantization).__name__, expected="no quantization")
    return tensor.numpy()
