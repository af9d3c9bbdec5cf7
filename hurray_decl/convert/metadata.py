"""Model metadata between GGUF KV entries, ``.hrry`` container KV and ONNX ``metadata_props``, losslessly.

GGUF has thirteen value types (eight integer widths, two float widths, bool, string, array, and
arrays of arrays); the container has seven tags (string, int64, uint64, float64, bool, bytes and
one-level arrays, FILE-FORMAT.md § 5.3); ``metadata_props`` holds strings. Every GGUF entry keeps
its key and its value in the nearest container type (:data:`CONTAINER_TAG`), and its GGUF type is
recorded in one more entry, :data:`VALUE_TYPES_KEY`: an array of strings ``"TYPE key"`` in the GGUF
order (``TYPE`` is ``UINT32``, ``ARRAY[FLOAT32]``, ``ARRAY[ARRAY]`` ...; type names hold no space).

* integers of every width become int64 (signed) or uint64 (unsigned); float32 becomes float64,
  widened exactly (a NaN keeps its payload, moved bit for bit); bool and float64 stay as they are;
* a string is a container string when it is well-formed UTF-8, otherwise a byte sequence;
* an array of scalars is a container array of the element's container type (strings: byte
  sequences when any element is not UTF-8);
* an array of arrays, which the container cannot nest (HF-META-15), is a byte sequence holding
  the array's GGUF encoding (element type u32, count u64, then the elements, little-endian).

Back to GGUF, a key listed in :data:`VALUE_TYPES_KEY` gets its recorded type (the value must fit
it); any other key its container type's counterpart (:data:`GGUF_TYPE`). The GGML type of each
tensor that came from GGUF is recorded likewise in :data:`TENSOR_TYPES_KEY` (``"Q5_0 name"``), so
that codes that several GGUF types hold (5-bit codes in int8 storage: Q5_0 or Q8_0) go back to
the type they came from.

``metadata_props`` (:func:`to_metadata_props`) holds each container entry as ``key`` -> text:
strings as themselves, every other value as JSON (integers exact; floats as the 16 hex digits of
their bits; byte sequences as hex; arrays as JSON lists of those), with the container tag of every
non-string entry in :data:`PROPS_TYPES_KEY` (a JSON object ``{key: "int64", ...}``), so that
:func:`from_metadata_props` gives back the same container entries.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import construct as cs
import numpy as np

from hurray_decl.errors import ArgumentError
from hurray_decl.hurray.container import KVValue
from hurray_decl.hurray.tables.codes import KVTag

if TYPE_CHECKING:
    from hurray_decl.convert.gguf_file import GgufFile

__all__ = [
    "CONTAINER_TAG",
    "GGUF_TYPE",
    "MISSING_TENSORS_KEY",
    "PROPS_TYPES_KEY",
    "RESERVED_KEYS",
    "TENSOR_TYPES_KEY",
    "VALUE_TYPES_KEY",
    "GgufEntry",
    "check_gguf_entries",
    "container_kv",
    "from_metadata_props",
    "gguf_entries",
    "gguf_file_entries",
    "missing_kv",
    "missing_tensors",
    "tensor_types",
    "to_metadata_props",
    "write_gguf_entries",
]

VALUE_TYPES_KEY = "hurray_decl.gguf.value_types"
"""The container key listing ``"TYPE key"`` for every entry that came from GGUF, in GGUF order."""
TENSOR_TYPES_KEY = "hurray_decl.gguf.tensor_types"
"""The container key listing ``"GGML_TYPE name"`` for every tensor that came from GGUF."""
PROPS_TYPES_KEY = "hurray_decl.kv_types"
"""The ``metadata_props`` key holding the container tag of every non-string entry (JSON)."""
MISSING_TENSORS_KEY = "hurray_decl.missing_tensors"
"""The key a partial model (``convert --partial``) lists the tensors it lacks under:
``"CODE TYPE name"`` (the rule that refused the tensor, its source type, its name). An ordinary
entry, so it goes on into every format the model is converted to (GGUF: ARRAY[STRING])."""
RESERVED_KEYS = (VALUE_TYPES_KEY, TENSOR_TYPES_KEY, PROPS_TYPES_KEY)

# GGUF value types (gguf.GGUFValueType), by name: the NumPy type of the scalars.
_SCALARS: dict[str, str] = {"UINT8": "<u1", "INT8": "<i1", "UINT16": "<u2", "INT16": "<i2", "UINT32": "<u4",
                            "INT32": "<i4", "FLOAT32": "<f4", "BOOL": "?", "UINT64": "<u8", "INT64": "<i8",
                            "FLOAT64": "<f8"}
_CODES = {"UINT8": 0, "INT8": 1, "UINT16": 2, "INT16": 3, "UINT32": 4, "INT32": 5, "FLOAT32": 6, "BOOL": 7,
          "STRING": 8, "ARRAY": 9, "UINT64": 10, "INT64": 11, "FLOAT64": 12}
"""GGUF's value type codes (the GGUF specification; gguf.GGUFValueType has the same numbers)."""
_NAMES = {code: name for name, code in _CODES.items()}

CONTAINER_TAG: dict[str, KVTag] = {
    **{name: KVTag.UINT64 for name in ("UINT8", "UINT16", "UINT32", "UINT64")},
    **{name: KVTag.INT64 for name in ("INT8", "INT16", "INT32", "INT64")},
    "FLOAT32": KVTag.FLOAT64, "FLOAT64": KVTag.FLOAT64, "BOOL": KVTag.BOOL, "STRING": KVTag.STRING,
}
"""The container tag holding each GGUF scalar type (strings that are not UTF-8: BYTES)."""
GGUF_TYPE: dict[int, str] = {KVTag.STRING: "STRING", KVTag.INT64: "INT64", KVTag.UINT64: "UINT64",
                             KVTag.FLOAT64: "FLOAT64", KVTag.BOOL: "BOOL", KVTag.BYTES: "ARRAY[UINT8]"}
"""The GGUF type of a container value no GGUF type was recorded for (arrays: ``ARRAY[`` element ``]``)."""

# --- the GGUF value encoding, for arrays of arrays --------------------------------------------------

_GGUF_STRING = cs.Prefixed(cs.Int64ul, cs.GreedyBytes)
_GGUF_ARRAY: cs.Construct = cs.Struct(
    "type" / cs.Int32ul,
    "count" / cs.Int64ul,
    "items" / cs.Array(cs.this.count, cs.Switch(cs.this.type, {
        **{_CODES[name]: field for name, field in (
            ("UINT8", cs.Int8ul), ("INT8", cs.Int8sl), ("UINT16", cs.Int16ul), ("INT16", cs.Int16sl),
            ("UINT32", cs.Int32ul), ("INT32", cs.Int32sl), ("FLOAT32", cs.Float32l), ("UINT64", cs.Int64ul),
            ("INT64", cs.Int64sl), ("FLOAT64", cs.Float64l))},
        _CODES["BOOL"]: cs.Flag,
        _CODES["STRING"]: _GGUF_STRING,
        _CODES["ARRAY"]: cs.LazyBound(lambda: _GGUF_ARRAY),
    })),
)
"""A GGUF array payload (GGUF specification, ``gguf_metadata_value_t``): element type, count, elements."""


def _nested(payload: bytes, key: str) -> Any:
    """A GGUF array payload as nested Python lists ``(type name, items)``."""
    try:
        parsed = _GGUF_ARRAY.parse(payload)
    except (cs.ConstructError, KeyError) as exc:
        raise ArgumentError(f"kv -> {key!r}", f"the GGUF array encoding of {key!r} does not parse: {exc}") from None

    def plain(node: Any) -> tuple[str, list[Any]]:
        name = _NAMES.get(int(node.type))
        if name is None:
            raise ArgumentError(f"kv -> {key!r}", "an unknown GGUF value type in an array", actual=int(node.type))
        items = [plain(i) if name == "ARRAY" else i for i in node["items"]]
        return name, items

    return plain(parsed)


# --- GGUF entries ------------------------------------------------------------------------------


@dataclass(frozen=True)
class GgufEntry:
    """One GGUF KV entry: ``type`` is a GGUF type name, ``ARRAY[T]`` for arrays; ``value`` is a
    Python int, float, bool or bytes (strings), a NumPy array (numeric and bool arrays), a list of
    bytes (string arrays), or the GGUF encoding of an array of arrays (bytes)."""

    key: str
    type: str
    value: Any

    @property
    def element(self) -> str | None:
        return self.type[6:-1] if self.type.startswith("ARRAY[") else None


def gguf_file_entries(layout: GgufFile) -> list[GgufEntry]:
    """The KV entries of a checked GGUF layout (:func:`hurray_decl.convert.gguf_file.open_gguf`), in file order.

    Each value is taken from the entry's payload bytes (:meth:`~hurray_decl.convert.gguf_file.GgufKV.raw`),
    whose counts and lengths the layout checked against the file: exact, for every type and any
    nesting; numeric arrays are copied out of the file's memory map in one NumPy step.
    """
    from hurray_decl.convert.gguf_file import ARRAY_HEAD, LENGTH

    head, length = ARRAY_HEAD.sizeof(), LENGTH.sizeof()  # an array's element type and count; a string's length
    data = layout.mapped()
    entries = []
    for entry in layout.kv.values():
        key, raw = entry.key, entry.raw()
        name = _NAMES.get(entry.value_type)
        if name in _SCALARS:
            scalar = np.frombuffer(raw, _SCALARS[name], count=1)
            entries.append(GgufEntry(key, name, _widen(scalar)[0] if name == "FLOAT32" else scalar[0].item()))
        elif name == "STRING":
            entries.append(GgufEntry(key, name, bytes(raw[length:])))
        elif name == "ARRAY":
            element = _NAMES.get(entry.element_type if entry.element_type is not None else -1)
            if element in _SCALARS:
                values = np.frombuffer(raw, _SCALARS[element], count=entry.count, offset=head).copy()
                entries.append(GgufEntry(key, f"ARRAY[{element}]", values))
            elif element == "STRING":
                spans = layout.strings(entry.payload + head, entry.count, f"gguf -> {key}")
                entries.append(GgufEntry(key, "ARRAY[STRING]", [bytes(data[at:at + n]) for at, n in spans]))
            elif element == "ARRAY":
                entries.append(GgufEntry(key, "ARRAY[ARRAY]", bytes(raw)))
            else:
                raise ArgumentError(f"kv -> {key!r}", "an unknown GGUF array element type", actual=entry.element_type)
        else:
            raise ArgumentError(f"kv -> {key!r}", "an unknown GGUF value type", actual=entry.value_type)
    for item in entries:
        if item.key in RESERVED_KEYS:
            raise ArgumentError(f"kv -> {item.key!r}", "this key is the one the conversion records GGUF types "
                                "under", actual=item.key)
    return entries


def _widen(raw: Any) -> list[float]:
    """float32 values (their bits) as Python floats, exactly; a NaN keeps sign and payload bit for bit."""
    bits = np.asarray(raw).reshape(-1).view("<u4").astype(np.uint64)
    wide = np.asarray(raw).reshape(-1).view("<f4").astype(np.float64)
    nan = np.isnan(wide)
    if nan.any():  # sign, all-ones exponent, the 23 payload bits at the top of the 52
        made = ((bits & 0x80000000) << 32) | np.uint64(0x7FF0000000000000) | ((bits & 0x7FFFFF) << 29)
        wide = np.where(nan, made.view(np.float64), wide)
    return wide.tolist()


def _narrow(values: Sequence[float], key: str) -> list[float]:
    """float64 values that are float32 values: the inverse of :func:`_widen` (else refused)."""
    wide = np.asarray(values, dtype=np.float64).reshape(-1)
    bits = wide.view(np.uint64)
    nan = np.isnan(wide)
    with np.errstate(over="ignore"):
        narrow = wide.astype(np.float32)
    exact = (narrow.astype(np.float64) == wide) | (nan & ((bits & np.uint64((1 << 29) - 1)) == 0))
    if not exact.all():
        j = int(np.flatnonzero(~exact)[0])
        raise ArgumentError(f"kv -> {key!r}", "a value recorded as GGUF FLOAT32 is not a float32 value",
                            actual=repr(float(wide[j])), expected="a float32 value")
    return wide.tolist()


# --- GGUF <-> container ----------------------------------------------------------------------------


def _text(raw: bytes) -> str | None:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _container_value(entry: GgufEntry) -> KVValue:
    element = entry.element
    if entry.type == "STRING":
        text = _text(entry.value)
        return KVValue.scalar(KVTag.BYTES, entry.value) if text is None else KVValue.scalar(KVTag.STRING, text)
    if entry.type in CONTAINER_TAG:
        return KVValue.scalar(CONTAINER_TAG[entry.type], entry.value)
    if element == "STRING":
        texts = [_text(v) for v in entry.value]
        if any(t is None for t in texts):
            return KVValue(tag=KVTag.ARRAY, element_tag=KVTag.BYTES, value=tuple(entry.value))
        return KVValue(tag=KVTag.ARRAY, element_tag=KVTag.STRING, value=tuple(texts))
    if element == "ARRAY":
        return KVValue(tag=KVTag.BYTES, value=entry.value)
    if element in CONTAINER_TAG:
        values = _widen(entry.value) if element == "FLOAT32" else entry.value.tolist()
        return KVValue(tag=KVTag.ARRAY, element_tag=CONTAINER_TAG[element], value=tuple(values))
    raise ArgumentError(f"kv -> {entry.key!r}", "an unknown GGUF type", actual=entry.type)


def container_kv(entries: Sequence[GgufEntry], tensors: Sequence[tuple[str, str]] = ()) -> dict[str, KVValue]:
    """Container KV entries for GGUF entries (and ``(name, GGML type)`` of the tensors converted)."""
    kv = {e.key: _container_value(e) for e in entries}
    if entries:
        kv[VALUE_TYPES_KEY] = KVValue(tag=KVTag.ARRAY, element_tag=KVTag.STRING,
                                      value=tuple(f"{e.type} {e.key}" for e in entries))
    if tensors:
        kv[TENSOR_TYPES_KEY] = KVValue(tag=KVTag.ARRAY, element_tag=KVTag.STRING,
                                       value=tuple(f"{t} {n}" for n, t in tensors))
    return kv


def missing_kv(missing: Sequence[tuple[str, str, str]]) -> dict[str, KVValue]:
    """The :data:`MISSING_TENSORS_KEY` entry of a partial model: ``(code, type, name)`` of each missing tensor."""
    return {MISSING_TENSORS_KEY: KVValue(tag=KVTag.ARRAY, element_tag=KVTag.STRING,
                                         value=tuple(f"{code} {kind} {name}" for code, kind, name in missing))}


def missing_tensors(kv: Mapping[str, KVValue]) -> list[tuple[str, str, str]]:
    """``(code, type, name)`` of each tensor a partial model lists as missing (:data:`MISSING_TENSORS_KEY`)."""
    found = []
    for rest, code in _pairs(kv, MISSING_TENSORS_KEY).items():  # {"TYPE name": code}
        kind, _, name = rest.partition(" ")
        found.append((code, kind, name))
    return found


def _pairs(kv: Mapping[str, KVValue], key: str) -> dict[str, str]:
    """``{name: TYPE}`` from a recorded ``"TYPE name"`` list."""
    if key not in kv:
        return {}
    value = kv[key]
    if value.tag != KVTag.ARRAY or value.element_tag != KVTag.STRING:
        raise ArgumentError(f"kv -> {key!r}", "an array of strings \"TYPE name\"", actual=KVTag(value.tag).name)
    pairs = {}
    for item in value.value:
        kind, _, name = item.partition(" ")
        if not name:
            raise ArgumentError(f"kv -> {key!r}", "each element is \"TYPE name\"", actual=item)
        pairs[name] = kind
    return pairs


def tensor_types(kv: Mapping[str, KVValue]) -> dict[str, str]:
    """The GGML type recorded for each tensor name (:data:`TENSOR_TYPES_KEY`), or nothing."""
    return _pairs(kv, TENSOR_TYPES_KEY)


def _fits(name: str, values: Sequence[Any], key: str) -> Any:
    """Container values checked against a GGUF scalar type, as the GGUF writer takes them."""
    if name == "BOOL":
        if not all(isinstance(v, bool) for v in values):
            raise ArgumentError(f"kv -> {key!r}", "a GGUF BOOL value is a bool", expected="bool")
        return list(values)
    if name in ("FLOAT32", "FLOAT64"):
        if not all(isinstance(v, float) for v in values):
            raise ArgumentError(f"kv -> {key!r}", f"a GGUF {name} value is a float", expected="float64")
        return _narrow(values, key) if name == "FLOAT32" else list(values)
    info = np.iinfo(_SCALARS[name])
    if not all(isinstance(v, int) and not isinstance(v, bool) and info.min <= v <= info.max for v in values):
        raise ArgumentError(f"kv -> {key!r}", f"a value does not fit GGUF {name}", expected=f"{info.min} .. {info.max}")
    return list(values)


def _gguf_value(key: str, value: KVValue, kind: str | None) -> GgufEntry:
    tag = value.tag
    if kind is None:
        kind = (f"ARRAY[{GGUF_TYPE[value.array_tag]}]" if tag == KVTag.ARRAY and value.array_tag != KVTag.BYTES
                else GGUF_TYPE.get(tag, ""))
    element = kind[6:-1] if kind.startswith("ARRAY[") else None
    if kind == "STRING" and tag in (KVTag.STRING, KVTag.BYTES):
        return GgufEntry(key, kind, value.value.encode("utf-8") if tag == KVTag.STRING else bytes(value.value))
    if kind in _SCALARS and tag == CONTAINER_TAG[kind]:
        return GgufEntry(key, kind, _fits(kind, [value.value], key)[0])
    if element == "ARRAY" and tag == KVTag.BYTES:
        return GgufEntry(key, kind, bytes(value.value))
    if element == "UINT8" and tag == KVTag.BYTES:
        return GgufEntry(key, kind, np.frombuffer(bytes(value.value), np.uint8))
    if element == "STRING" and tag == KVTag.ARRAY and value.array_tag in (KVTag.STRING, KVTag.BYTES):
        return GgufEntry(key, kind, [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in value.value])
    if element in _SCALARS and tag == KVTag.ARRAY and value.array_tag == CONTAINER_TAG[element]:
        return GgufEntry(key, kind, np.array(_fits(element, value.value, key), dtype=_SCALARS[element]))
    raise ArgumentError(f"kv -> {key!r}", f"a container {KVTag(tag).name.lower()} value has no GGUF {kind or 'type'} "
                        "form", actual=KVTag(tag).name, expected=kind or None)


def gguf_entries(kv: Mapping[str, KVValue]) -> tuple[list[GgufEntry], list[tuple[str, ArgumentError]]]:
    """GGUF entries for container KV (the recorded GGUF types kept), and the entries that have no GGUF form."""
    types = _pairs(kv, VALUE_TYPES_KEY)
    entries, refused = [], []
    for key, value in kv.items():
        if key in RESERVED_KEYS:
            continue
        try:
            entries.append(_gguf_value(key, value, types.get(key)))
        except ArgumentError as err:
            refused.append((key, err))
    return entries, refused


# --- writing GGUF entries with gguf's writer --------------------------------------------------------


def _writable_nested(node: tuple[str, list[Any]], key: str) -> list[Any]:
    """An array of arrays as the nested lists gguf's writer packs (it infers inner element types:
    int INT32, float FLOAT32, bool BOOL, str STRING, list ARRAY; an empty array it refuses)."""
    inferred = {"INT32", "FLOAT32", "BOOL", "STRING", "ARRAY"}
    kind, items = node
    if kind not in inferred or not items:
        raise ArgumentError(f"kv -> {key!r}", "gguf's writer writes arrays inside arrays only of INT32, FLOAT32, "
                            "BOOL, STRING or arrays, and never empty ones", actual=f"{kind}[{len(items)}]")
    if kind == "ARRAY":
        return [_writable_nested(i, key) for i in items]
    if kind == "STRING":
        texts = [_text(i) for i in items]
        if any(t is None for t in texts):  # bytes would be read as a UINT8 array
            raise ArgumentError(f"kv -> {key!r}", "gguf's writer writes strings inside arrays of arrays only when "
                                "they are UTF-8")
        return texts
    if kind == "FLOAT32":
        return _widen(np.array(items, dtype="<f4"))
    return list(items)


def write_gguf_entries(writer: Any, entries: Sequence[GgufEntry]) -> None:
    """Add ``entries`` to a ``gguf.GGUFWriter`` with their GGUF types, in their order.

    The writer adds ``general.architecture`` itself when it is made; that entry is dropped first
    (``writer.kv_data``), so the file holds exactly ``entries``, in their order.
    """
    from gguf import GGUFValueType

    writer.kv_data[0].clear()
    for entry in entries:
        element = entry.element
        value = entry.value
        if entry.type == "STRING":
            writer.add_key_value(entry.key, value, GGUFValueType.STRING)
        elif entry.type in _SCALARS:
            writer.add_key_value(entry.key, value, GGUFValueType[entry.type])
        elif element is not None:
            if element == "ARRAY":
                items = _writable_nested(_nested(value, entry.key), entry.key)
            elif element == "STRING":
                items = list(value)
            elif element == "FLOAT32":
                items = _widen(np.asarray(value, "<f4"))
            else:
                items = np.asarray(value).tolist()
            if not items:
                raise ArgumentError(f"kv -> {entry.key!r}", "gguf's writer refuses an empty array", actual=0,
                                    expected="at least one element")
            writer.add_key_value(entry.key, items, GGUFValueType.ARRAY, sub_type=GGUFValueType[element])
        else:
            raise ArgumentError(f"kv -> {entry.key!r}", "an unknown GGUF type", actual=entry.type)


def check_gguf_entries(entries: Sequence[GgufEntry]) -> list[tuple[str, ArgumentError]]:
    """The entries gguf's writer cannot write (empty arrays, arrays of arrays of other types)."""
    refused = []
    for entry in entries:
        try:
            if entry.element == "ARRAY":
                _writable_nested(_nested(entry.value, entry.key), entry.key)
            elif entry.element is not None and len(entry.value) == 0:
                raise ArgumentError(f"kv -> {entry.key!r}", "gguf's writer refuses an empty array", actual=0,
                                    expected="at least one element")
        except ArgumentError as err:
            refused.append((entry.key, err))
    return refused


# --- container <-> metadata_props -------------------------------------------------------------------


def _float_text(value: float) -> str:
    return struct.pack("<d", value).hex()


def _float_value(text: Any, key: str) -> float:
    if not isinstance(text, str) or len(text) != 16:
        raise ArgumentError(f"metadata_props -> {key!r}", "a float is the 16 hex digits of its bits", actual=text)
    try:
        return float(struct.unpack("<d", bytes.fromhex(text))[0])
    except ValueError:
        raise ArgumentError(f"metadata_props -> {key!r}", "a float is the 16 hex digits of its bits",
                            actual=text) from None


def _json_item(tag: int, value: Any) -> Any:
    if tag == KVTag.FLOAT64:
        return _float_text(value)
    if tag == KVTag.BYTES:
        return bytes(value).hex()
    return value


def to_metadata_props(kv: Mapping[str, KVValue]) -> list[tuple[str, str]]:
    """``(key, text)`` pairs for ONNX ``metadata_props`` holding container KV entries (see the module text)."""
    props, tags = [], {}
    for key, value in kv.items():
        if key == PROPS_TYPES_KEY:
            raise ArgumentError(f"kv -> {key!r}", "this key is the one the conversion records KV tags under")
        if value.tag == KVTag.STRING:
            props.append((key, value.value))
            continue
        if value.tag == KVTag.ARRAY:
            tags[key] = f"array[{KVTag(value.array_tag).name.lower()}]"
            text = json.dumps([_json_item(value.array_tag, v) for v in value.value])
        else:
            tags[key] = KVTag(value.tag).name.lower()
            text = json.dumps(_json_item(value.tag, value.value))
        props.append((key, text))
    if tags:
        props.append((PROPS_TYPES_KEY, json.dumps(tags)))
    return props


_TAG_NAMES = {KVTag(t).name.lower(): KVTag(t) for t in (KVTag.INT64, KVTag.UINT64, KVTag.FLOAT64, KVTag.BOOL,
                                                       KVTag.BYTES, KVTag.STRING)}


def _from_json(tag: KVTag, item: Any, key: str) -> Any:
    if tag == KVTag.FLOAT64:
        return _float_value(item, key)
    if tag == KVTag.BYTES:
        try:
            return bytes.fromhex(item)
        except (TypeError, ValueError):
            raise ArgumentError(f"metadata_props -> {key!r}", "a byte sequence is hex", actual=item) from None
    return item


def from_metadata_props(props: Iterable[tuple[str, str]]) -> dict[str, KVValue]:
    """Container KV entries from ``metadata_props`` pairs: the inverse of :func:`to_metadata_props`
    (a key without a recorded tag is a string, as any ONNX producer's entries are)."""
    pairs = list(props)
    tags: dict[str, Any] = {}
    for key, text in pairs:
        if key == PROPS_TYPES_KEY:
            try:
                recorded = json.loads(text)
            except ValueError:
                recorded = None
            if not isinstance(recorded, dict):
                raise ArgumentError(f"metadata_props -> {key!r}", "the recorded KV tags are a JSON object",
                                    actual=text[:40])
            tags = recorded
    kv = {}
    for key, text in pairs:
        if key == PROPS_TYPES_KEY:
            continue
        kind = tags.get(key)
        if kind is None:
            kv[key] = KVValue(tag=KVTag.STRING, value=text)
            continue
        array = isinstance(kind, str) and kind.startswith("array[") and kind.endswith("]")
        tag = _TAG_NAMES.get(kind[6:-1] if array else kind) if isinstance(kind, str) else None
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if tag is None or (array and not isinstance(value, list)):
            raise ArgumentError(f"metadata_props -> {key!r}", "a recorded KV tag and its JSON value do not agree",
                                actual=kind)
        try:
            if array:
                kv[key] = KVValue(tag=KVTag.ARRAY, element_tag=tag, value=tuple(_from_json(tag, v, key) for v in value))
            else:
                kv[key] = KVValue(tag=tag, value=_from_json(tag, value, key))
        except ArgumentError:
            raise
        except ValueError as exc:  # pydantic's ValidationError: a value of the wrong kind for its tag
            raise ArgumentError(f"metadata_props -> {key!r}", f"the value does not fit its tag {kind}: {exc}") from None
    return kv
