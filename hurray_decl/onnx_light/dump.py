"""Annotated hex dumps of onnx-light inputs, in the rows and JSON format of :mod:`hurray_decl.hurray.dump`.

Every byte is named once, in order:

* the protobuf framing, by the generated descriptors (:mod:`.protowire`): each field's key
  (field number, wire type), length prefix and value, nested messages by their ``.proto`` field
  names (``struct_type.structure.field[6].type.struct_type.structure.field[1]...``), packed
  repeated values one row each;
* the ``raw_data`` of every encoded value, decoded by its payload declaration: a portable value
  through :func:`~hurray_decl.onnx_light.wire.payload_schema` (``raw_data.reserved``,
  ``raw_data.permutation[3]``, ``raw_data.runs[1].blocks[7].scale``, ``...codebook[2]``,
  ``...codes``), an ORT value through its :class:`~hurray_decl.onnx_light.ort.OrtGeometry`
  (``raw_data.B[col][group]``, ``raw_data.scales[col][group]``, ``raw_data.zero_points[col]``),
  a compact value as its reserved byte and local bytes, named by the full layout when the
  model that declares its parameter set is at hand.

The verdict is the codec's own (:func:`~hurray_decl.onnx_light.inputs.check`). For an invalid
input the rows run up to the end of the failing field, whose row carries the error's offset
(so the renderers mark it with the OL code), and the bytes after it follow as undecoded rows.
That offset is the verdict's: :func:`check_input`, which ``validate``, ``decode`` and
``dequantize`` use, raises the error with it, so every command gives one code, path and offset.
"""

from __future__ import annotations

import re
from dataclasses import fields as dataclass_fields
from operator import attrgetter

import numpy as np

from hurray_decl.declare.trace import trace
from hurray_decl.dump.render import render
from hurray_decl.dump.rows import RAW_ROW, UNDECODED, Dump, Row, typed
from hurray_decl.errors import ArgumentError, HurrayDeclError, OnnxLightError
from hurray_decl.onnx_light.inputs import (
    MESSAGES,
    MODEL,
    PARSE_RULES,
    VALUE,
    Item,
    check,
    check_item,
    detect_kind,
    items,
    parse,
)
from hurray_decl.onnx_light.numerics import LOGICAL_DTYPES
from hurray_decl.onnx_light.ort import FLOATING, ORT_FORMATS, PACKED, OrtGeometry, read_ort_type
from hurray_decl.onnx_light.packing import sign_extend, unpack_base3, unpack_bits
from hurray_decl.onnx_light.plan import QuantizationBlockLayout
from hurray_decl.onnx_light.profiles import WIRE_PREFIX, QuantizationMethod, parse_quantization_format
from hurray_decl.onnx_light.protowire import Field, walk
from hurray_decl.onnx_light.shared import COMPACT_NAME, parameter_catalogue
from hurray_decl.onnx_light.wire import (
    logical_shape,
    merge_runs,
    payload_schema,
    pb,
    read_geometry,
    resolve_struct_type,
)

__all__ = ["check_input", "dump", "hexdump", "payload_rows"]

HEADER_NAMES = tuple(f.name for f in dataclass_fields(QuantizationBlockLayout))
"""The nine header positions, named as the layout declares them."""
SHOWN_CODES = 32
"""Codes listed in a codes row before the list is cut short."""


def _hex(data: bytes) -> str:
    return data.hex(" ").upper()


_SPAN = attrgetter("offset", "size")


def _raw(data: bytes, start: int, end: int, base: int = 0, label: str = UNDECODED) -> list[Row]:
    return [Row(base + p, min(RAW_ROW, end - p), _hex(data[p:min(end, p + RAW_ROW)]), label, "")
            for p in range(start, end, RAW_ROW)]


def _number(value) -> str:
    value = value.item() if isinstance(value, np.generic) else value
    return repr(float(value)) if isinstance(value, float) else str(value)


# --- raw_data of a portable value ------------------------------------------------------------------

def _codes_text(layout: QuantizationBlockLayout, data: bytes) -> str:
    """The codes a block's packed bytes hold, as the method reads them."""
    method = int(layout.method)
    array = np.frombuffer(data, dtype=np.uint8).reshape(1, -1)
    try:
        if method == QuantizationMethod.CAST:
            dtype = LOGICAL_DTYPES[int(layout.cast_type)]
            codes = np.frombuffer(data, dtype=dtype.newbyteorder("<")).astype(np.float64)
            shown = [repr(float(c)) for c in codes[:SHOWN_CODES]]
        else:
            count = layout.code_count
            if int(layout.base3):
                codes = unpack_base3(array, count, "codes")[0]
            else:
                codes = unpack_bits(array, count, int(layout.bits), "codes")[0]
                if method == QuantizationMethod.AFFINE and int(layout.signed_codes):
                    codes = sign_extend(codes, int(layout.bits))
            shown = [str(int(c)) for c in codes[:SHOWN_CODES]]
    except (HurrayDeclError, KeyError, ValueError):
        return f"{len(data)} bytes"
    more = ", ..." if len(codes) > SHOWN_CODES else ""
    return f"{len(codes)} codes [{', '.join(shown)}{more}]"


def _record_rows(records: np.ndarray, layout: QuantizationBlockLayout, raw: bytes, offset: int,
                 base: int, path: str) -> list[Row]:
    """One row per record field (codebook entries one each), from the record dtype's offsets."""
    dtype = records.dtype
    rows: list[Row] = []
    names, fields = dtype.names, dtype.fields
    if names is None or fields is None:  # not a record dtype: no fields to name
        return rows
    for j in range(records.size):
        at = offset + j * dtype.itemsize
        for name in names:
            sub, field_offset = fields[name][:2]
            start = at + field_offset
            where = f"{path}.blocks[{j}].{name}"
            if name == "codes":
                if sub.itemsize:
                    part = raw[start:start + sub.itemsize]
                    rows.append(Row(base + start, sub.itemsize, _hex(part), where, _codes_text(layout, part)))
                continue
            if sub.shape:  # the codebook: one row per double
                width = sub.base.itemsize
                for k, entry in enumerate(records[j][name]):
                    s = start + k * width
                    rows.append(Row(base + s, width, _hex(raw[s:s + width]), f"{where}[{k}]", _number(entry),
                                    *typed(entry)))
                continue
            rows.append(Row(base + start, sub.itemsize, _hex(raw[start:start + sub.itemsize]), where,
                            _number(records[j][name]), *typed(records[j][name])))
    return rows


def _portable_rows(resolved: pb.StructTypeProto, raw: bytes, base: int, path: str) -> list[Row]:
    geometry = read_geometry(resolved, "value -> struct_type")
    layouts = [run.layout for run in merge_runs(geometry.runs)]
    spans, _ = trace(payload_schema(geometry), raw, prefix=path)
    rows: list[Row] = []
    run = 0
    for span in spans:
        if isinstance(span.value, np.ndarray) and span.value.dtype.names:  # a run of block records
            rows += _record_rows(span.value, layouts[run], raw, span.offset, base, f"{path}.runs[{run}]")
            run += 1
        elif isinstance(span.value, np.ndarray):
            width = span.value.dtype.itemsize
            rows += [Row(base + span.offset + k * width, width, _hex(raw[span.offset + k * width:
                                                                         span.offset + (k + 1) * width]),
                         f"{span.path}[{k}]", _number(v), *typed(v)) for k, v in enumerate(span.value)]
        else:
            rows.append(Row(base + span.offset, span.size, _hex(raw[span.offset:span.offset + span.size]),
                            span.path, f"0x{span.value:02X}" if isinstance(span.value, int) else str(span.value),
                            *typed(span.value)))
    return rows


# --- raw_data of an ORT value ----------------------------------------------------------------------

def _ort_rows(value: pb.EncodedValueProto, resolved: pb.StructTypeProto, raw: bytes, base: int,
              path: str) -> list[Row]:
    fmt = parse_quantization_format(resolved.name[len(WIRE_PREFIX):])
    dtype, shape = logical_shape(value.logical_type, "value -> logical_type")
    info = read_ort_type(resolved, fmt, "value -> struct_type")
    if len(shape) != 2 or dtype not in LOGICAL_DTYPES:
        return []
    g = OrtGeometry(fmt, shape[0], shape[1], info.block_size, dtype, info.zero_points)
    target = LOGICAL_DTYPES[dtype].newbyteorder("<")
    rows: list[Row] = []
    at = 0

    def add(size: int, where: str, text) -> None:
        nonlocal at
        if at + size <= len(raw) and size:
            part = raw[at:at + size]
            rows.append(Row(base + at, size, _hex(part), where, text(part)))
        at += size

    def codes(count: int):
        def text(part: bytes) -> str:
            values = unpack_bits(np.frombuffer(part, np.uint8).reshape(1, -1), count, g.bits, "codes")[0]
            more = ", ..." if count > SHOWN_CODES else ""
            return f"{count} codes [{', '.join(str(int(c)) for c in values[:SHOWN_CODES])}{more}]"
        return text

    def number(part: bytes) -> str:
        return repr(float(np.frombuffer(part, dtype=target)[0]))

    for c in range(g.n):
        for k in range(g.groups):
            add(g.blob, f"{path}.B[{c}][{k}]", codes(g.block_size))
    for c in range(g.n):
        for k in range(g.groups):
            add(g.width, f"{path}.scales[{c}][{k}]", number)
    if g.zero_points == PACKED:
        for c in range(g.n):
            add(g.zp_row, f"{path}.zero_points[{c}]", lambda part: _safe(codes(g.groups), part))
    elif g.zero_points == FLOATING:
        for c in range(g.n):
            for k in range(g.groups):
                add(g.width, f"{path}.zero_points[{c}][{k}]", number)
    return rows


def _safe(text, part: bytes) -> str:
    try:
        return text(part)
    except HurrayDeclError:  # padding bits set: the verdict reports them
        return f"{len(part)} bytes"


# --- raw_data of a compact value -------------------------------------------------------------------

def _compact_rows(value: pb.EncodedValueProto | None, raw: bytes, base: int, model, path: str) -> list[Row]:
    rows = [Row(base, 1, _hex(raw[:1]), f"{path}.reserved", f"0x{raw[0]:02X}")] if raw else []
    if model is None or value is None or len(raw) < 2:
        return rows + ([Row(base + 1, len(raw) - 1, _hex(raw[1:]), f"{path}.local",
                            f"{len(raw) - 1} local bytes (the model's parameter set lays them out)")]
                       if len(raw) > 1 else [])
    parameters = parameter_catalogue(model)[value.parameter_ref]
    full = payload_rows(parameters.storage, parameters.logical, parameters.full, 0, model, path=path)
    at = 1
    for start, length in parameters.local:
        inside = [r for r in full if start <= r.offset and r.offset + r.size <= start + length]
        shift = at - start
        rows += [Row(base + r.offset + shift, r.size, _hex(raw[r.offset + shift:r.offset + shift + r.size]),
                     r.field, "(local bytes, laid out by the parameter set)")
                 for r in inside if r.offset + shift + r.size <= len(raw)]
        at += length
    return rows


def payload_rows(struct_type: pb.StructTypeProto, logical_type: pb.TypeProto, raw: bytes, base: int = 0,
                 model=None, value: pb.EncodedValueProto | None = None, path: str = "raw_data") -> list[Row]:
    """Rows naming the bytes of ``raw`` by the payload layout of ``struct_type`` (raises an
    OnnxLightError when the descriptor does not say how the payload is laid out)."""
    resolved = resolve_struct_type(struct_type, model, "value -> struct_type")
    if resolved.name == COMPACT_NAME:
        return _compact_rows(value, raw, base, model, path)
    if not resolved.name.startswith(WIRE_PREFIX):
        return []
    fmt = parse_quantization_format(resolved.name[len(WIRE_PREFIX):])
    if fmt in ORT_FORMATS:
        holder = value if value is not None else pb.EncodedValueProto(logical_type=logical_type)
        return _ort_rows(holder, resolved, raw, base, path)
    return _portable_rows(resolved, raw, base, path)


def _covering(rows: list[Row], start: int, end: int, data: bytes, label: str) -> list[Row]:
    """``rows`` in order, then raw rows for whatever of [start, end) they leave uncovered."""
    if rows:  # rows that follow one another from start (most dumps' rows): checked by columns
        offsets, sizes = (np.array(column, dtype=np.int64) for column in zip(*map(_SPAN, rows)))
        ends = start + np.cumsum(sizes)
        if offsets[0] == start and (sizes >= 0).all() and ends[-1] <= end and (offsets[1:] == ends[:-1]).all():
            return [*rows, *_raw(data, int(ends[-1]), end, label=label)]
    out, at = [], start
    for row in rows:
        if row.offset < at or row.offset + row.size > end:
            break
        if row.offset > at:
            out += _raw(data, at, row.offset, label=label)
        out.append(row)
        at = row.offset + row.size
    return out + _raw(data, at, end, label=label)


# --- error location ----------------------------------------------------------------------------------

_TOKEN = re.compile(r"^\s*([^\[\]]*?)\s*((?:\[[^\]]*\])*)\s*$")
_BLOCKS = re.compile(r"(?:^|->)\s*blocks\[(\d+)\]\[(\d+)\](?:\s*->\s*(\w+))?")
_RUN_BLOCK = re.compile(r"run\[(\d+)\]\s*->\s*blocks\[(\d+)\](?:\s*->\s*(\w+))?")
_PLAN_PARTS = {"permutation": "raw_data.permutation", "outliers": "raw_data.outlier_indices",
               "forward": "raw_data.forward", "inverse": "raw_data.inverse",
               "forward x inverse": "raw_data.forward"}


def _nearest(node: Field, match) -> list[Field]:
    """The descendants matching ``match`` at the smallest depth, in byte order."""
    level = list(node.children)
    while level:
        found = [n for n in level if match(n)]
        if found:
            return found
        level = [c for n in level for c in n.children]
    return []


def _step(node: Field, token: str) -> Field | None:
    parsed = _TOKEN.match(token)
    if parsed is None:
        return None
    name, indices = parsed.group(1), re.findall(r"\[([^\]]*)\]", parsed.group(2))
    found = _nearest(node, lambda n: n.name == name) or _nearest(node, lambda n: n.alias == name)
    if not found:
        return None
    if found[0].name == name and indices:
        key = indices.pop(0)
        if key.isdigit():
            siblings = [n for n in found if n.name == name]
            found = [siblings[int(key)]] if int(key) < len(siblings) else []
        else:  # a repeated message picked by its name (an unnamed one has an empty name)
            named = [n for n in found if (n.alias or "") == key]
            found = named or (found if len(found) == 1 else [])
        if not found:
            return None
    here = found[0]
    for key in indices:  # an index into a message's repeated scalars (parameters[2] -> int64_data[2])
        if not key.isdigit():
            break
        leaves = _nearest(here, lambda n: n.value is not None and not n.children and n.descriptor is not None
                          and n.descriptor.is_repeated)
        if int(key) < len(leaves):
            here = leaves[int(key)]
    return here


def _is_value(node: Field) -> bool:
    return node.message is not None and node.message.full_name == pb.EncodedValueProto.DESCRIPTOR.full_name


def _locate(err: HurrayDeclError, start: Field, raw_rows: dict[int, dict[str, int]],
            rows: list[Row], walked: list[Row]) -> tuple[int, Field | None]:
    """(offset of the row to mark, the field whose end the decoded rows run to). ``rows`` are the
    final rows (``raw_rows`` indexes them); the fields' row numbers index the ``walked`` rows."""
    tokens = [t for t in err.path.split("->")]
    head = tokens.pop(0).strip() if tokens else ""
    node, value = start, start if _is_value(start) else None
    if head == "plan":
        name = tokens[0].strip() if tokens else ""
        part = next((p for k, p in _PLAN_PARTS.items() if name.startswith(k)), None)
        found = _raw_row(raw_rows, value, lambda path: part is not None and path.startswith(part))
        if found is not None:
            return rows[found].offset, None
        tokens = {"transform_size": ["struct_type", "forward"], "format": ["struct_type", "name"]}.get(
            name, ["logical_type"])
    text = " -> ".join(tokens)
    for pattern in (_BLOCKS, _RUN_BLOCK):
        hit = pattern.search(text)
        if hit and value is not None:
            run, block, part = hit.group(1), hit.group(2), hit.group(3) or "codes"
            prefix = f"raw_data.runs[{run}].blocks[{block}].{part}"
            found = _raw_row(raw_rows, value, lambda path, prefix=prefix: path.startswith(prefix))
            if found is not None:
                return rows[found].offset, None
    for token in tokens:
        nxt = _step(node, token)
        if nxt is None:
            break
        node = nxt
        if _is_value(node):
            value = node
    if err.offset is not None and value is not None:
        raw = value.child("raw_data", len([c for c in value.children if c.name == "raw_data"]) - 1)
        if raw is not None and raw.body is not None:
            begin, stop = raw.body
            return begin + min(err.offset, max(stop - begin - 1, 0)), None
    if not walked:
        return 0, node
    return walked[node.value_row if node.value is not None else node.first_row].offset, node


def _raw_row(raw_rows: dict[int, dict[str, int]], value: Field | None, wanted) -> int | None:
    if value is None:
        return None
    for path, index in raw_rows.get(id(value), {}).items():
        if wanted(path):
            return index
    return None


# --- the dump ------------------------------------------------------------------------------------

def _values(node: Field):
    if _is_value(node):
        yield node
    for child in node.children:
        yield from _values(child)


def _label_headers(node: Field, rows: list[Row]) -> None:
    """Name the nine values of each block header constant (``parameters``) by the layout's fields."""
    for child in node.children:
        if child.alias == "parameters":
            constant = child.child("constant")
            values = [] if constant is None else [c for c in constant.children if c.name == "int64_data"
                                                  for c in (c.children or [c])]
            if len(values) == len(HEADER_NAMES):
                for name, leaf in zip(HEADER_NAMES, values):
                    row = rows[leaf.value_row]
                    rows[leaf.value_row] = Row(row.offset, row.size, row.hex, row.field, f"{row.value} ({name})")
        _label_headers(child, rows)


def _decode_payloads(data: bytes, root: Field, rows: list[Row], model) -> tuple[list[Row], dict[int, dict[str, int]]]:
    """``rows`` with each encoded value's raw_data row replaced by its payload rows."""
    replace: dict[int, list[Row]] = {}
    owner: dict[int, int] = {}
    for node in _values(root):
        occurrences = [c for c in node.children if c.name == "raw_data"]
        if not occurrences or occurrences[-1].body is None or occurrences[-1].body[0] == occurrences[-1].body[1]:
            continue
        raw_node = occurrences[-1]  # the last occurrence is the value protobuf keeps
        begin, stop = raw_node.body
        body = data[node.body[0]:node.body[1]] if node.body is not None else data
        try:
            value = pb.EncodedValueProto.FromString(body)
            named = payload_rows(value.struct_type, value.logical_type, data[begin:stop], begin, model, value,
                                 raw_node.path)
        except (HurrayDeclError, KeyError, ValueError, TypeError, UnicodeDecodeError):
            named = []  # the descriptor does not say how to read the payload: the verdict will
        if named:
            replace[raw_node.value_row] = _covering(named, begin, stop, data, "raw_data (undecoded)")
            owner[raw_node.value_row] = id(node)
    out: list[Row] = []
    by_value: dict[int, dict[str, int]] = {}
    for index, row in enumerate(rows):
        if index in replace:
            table = by_value.setdefault(owner[index], {})
            prefix = len(rows[index].field)
            for new in replace[index]:
                table.setdefault("raw_data" + new.field[prefix:], len(out))
                out.append(new)
        else:
            out.append(row)
    return out, by_value


def dump(data: bytes, *, kind: str | None = None, name: str | None = None) -> Dump:
    """Rows and verdict of an onnx-light input (kind detected from the bytes unless given)."""
    data = bytes(data)
    kind = _kind(data, kind)
    if kind not in MESSAGES:
        raise ArgumentError("kind", "not an onnx-light input kind", actual=kind, expected=sorted(MESSAGES))
    walked = walk(data, MESSAGES[kind].DESCRIPTOR)
    if walked.error is not None:
        error = OnnxLightError(PARSE_RULES[kind], f"the bytes are not a serialized {MESSAGES[kind].__name__}: "
                               f"{walked.error.reason}", path=kind, offset=walked.error.offset)
        return Dump(_covering(walked.rows, 0, len(data), data, UNDECODED), error)
    message = MESSAGES[kind].FromString(data)
    model = message if kind == MODEL else None
    _label_headers(walked.root, walked.rows)
    rows, raw_rows = _decode_payloads(data, walked.root, walked.rows, model)
    start, lo, hi = walked.root, 0, len(data)
    try:
        if name is not None:
            (item,) = items(message, kind, name)
            start = _find_item(walked.root, item)
            lo, hi = start.start, start.end
            rows = [r for r in rows if lo <= r.offset < hi]
        _check(message, kind, name)
    except ArgumentError:
        raise
    except HurrayDeclError as err:
        target, failing = _locate(err, start, raw_rows, rows, walked.rows)
        marked = next((r for r in rows if r.offset <= target < r.offset + r.size), rows[-1] if rows else
                      Row(lo, 0, "", kind, ""))
        located = OnnxLightError(err.code, err.detail, path=err.path, offset=marked.offset,
                                 actual=err.actual, expected=err.expected)
        stop = marked.offset + marked.size if failing is None else max(failing.end, marked.offset + marked.size)
        kept = [r for r in rows if r.offset + r.size <= stop]
        return Dump(_covering(kept, lo, hi, data, UNDECODED), located)
    return Dump(_covering(rows, lo, hi, data, UNDECODED), None)


def check_input(data: bytes, *, kind: str | None = None, name: str | None = None) -> tuple[str, object]:
    """The verdict on an onnx-light input's bytes: (kind, parsed message) when it is valid (the
    whole input, or the values ``name`` picks), else the HurrayDeclError of the first rule it
    breaks, with the byte offset the dump marks for it (:func:`dump`): what the codec says
    within a payload, or the start of the field its path names, counted from the input's first
    byte. The codec's own checks raise the same code and path, their offset relative to a
    payload or absent (they are given messages, not bytes)."""
    data = bytes(data)
    kind = _kind(data, kind)
    message = parse(data, kind)  # the walk's offset, as the dump gives it
    try:
        _check(message, kind, name)
    except ArgumentError:
        raise
    except HurrayDeclError as err:
        located = dump(data, kind=kind, name=name).error if name is None or len(items(message, kind, name)) == 1 \
            else None
        if located is not None and (located.code, located.path) == (err.code, err.path) \
                and located.offset is not None:
            err.offset = None
            raise err.located(located.offset) from None
        raise
    return kind, message


def _kind(data: bytes, kind: str | None) -> str:
    """``kind``, or the one detected from the bytes (no message of any kind: a value, to show where it stops)."""
    if kind is not None:
        return kind
    found = detect_kind(data)
    return found if found in MESSAGES else VALUE


def _check(message: object, kind: str, name: str | None) -> None:
    """The codec's checks on the whole input, or on the values ``name`` picks."""
    if name is None:
        check(message, kind)
        return
    for item in items(message, kind, name):
        check_item(item)


def _find_item(root: Field, item: Item) -> Field:
    graph_path = item.path.split(".")
    node = root
    for token in graph_path:
        nxt = _step(node, token)
        if nxt is None:
            raise ArgumentError("--name", "the value is not where the model holds it", actual=item.path)
        node = nxt
    return node


def hexdump(data: bytes, *, kind: str | None = None, name: str | None = None, format: str = "text") -> str:
    """The annotated hex dump of an onnx-light input as text, Markdown or JSON."""
    return render(dump(data, kind=kind, name=name), format)
