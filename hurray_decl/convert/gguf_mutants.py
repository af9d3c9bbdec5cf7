"""Hypothesis strategies for GGUF files: small valid ones written by gguf's ``GGUFWriter``, and mutants.

:func:`valid_ggufs` draws whole files (one to three tensors of the converted GGML types and of
types that are not converted, KV entries of every value type: scalars, strings, arrays of
numbers, strings and arrays, sometimes a ``general.alignment``). :func:`gguf_mutants` draws
``(bytes, kind)``: such a file changed in one of the ways a damaged or hostile file differs,
with ``kind`` saying which (``flip:<field>``, ``truncate``, ``huge:<field>``, ``count:<field>``,
``type:<field>``). The fields are located with the GGUF declarations
(:mod:`hurray_decl.convert.gguf_file`), so a rewrite hits the field it names:

* ``flip``: one byte XORed with a non-zero value, anywhere in the file;
* ``truncate``: the file cut short at any length;
* ``huge``: a count or length field (tensor and KV counts, key, string, name lengths, array
  counts, n_dims, a dimension, a tensor offset) set to a huge value (2**64 - 1, 2**63, 2**32, ...);
* ``count``: the same fields set near their true value (0, one more, one less, twice);
* ``type``: a value type, array element type or GGML type set to another code, known or not.

A reader must either read a mutant (the change may leave a valid file) or refuse it with a rule
code, quickly and in little memory; :func:`draw_mutants` draws a reproducible batch for a run.
"""

from __future__ import annotations

import os
import random
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import construct as cs
import numpy as np
from hypothesis import strategies as st

from hurray_decl.convert.gguf_file import (
    ARRAY_HEAD,
    GGUF_HEADER,
    KV_HEAD,
    LENGTH,
    TENSOR_INFO,
    GgufFile,
)

__all__ = ["MUTATIONS", "Field", "draw_mutants", "fields", "gguf_mutants", "mutants_of", "valid_ggufs"]

CONVERTED = ("F32", "F16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K")
OTHERS = ("BF16", "I8", "I32", "IQ4_NL", "Q8_1")
"""GGML types drawn besides the converted ones: the checks must hold for every type."""


def _block_bytes(rng: np.random.Generator, type_name: str, rows: int, blocks: int) -> tuple[np.ndarray, Any]:
    import gguf

    kind = gguf.GGMLQuantizationType[type_name]
    per, size = gguf.GGML_QUANT_SIZES[kind]
    if per == 1:  # a plain element type: values of its NumPy type
        dtypes = {"F32": np.float32, "F16": np.float16, "I8": np.int8, "I32": np.int32}
        if type_name in dtypes:
            return rng.standard_normal((rows, blocks)).astype(dtypes[type_name]), None
        return rng.integers(0, 256, (rows, blocks * size), dtype=np.uint8), kind
    data = rng.integers(0, 256, (rows, blocks * size), dtype=np.uint8)
    return data, kind


@st.composite
def valid_ggufs(draw: st.DrawFn) -> bytes:
    """A small .gguf written by gguf's GGUFWriter (a few hundred bytes to a few KiB)."""
    import gguf

    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    alignment = draw(st.sampled_from([None, None, 8, 64]))
    handle, name = tempfile.mkstemp(suffix=".gguf")
    os.close(handle)
    try:
        writer = gguf.GGUFWriter(name, "mutant")
        if alignment is not None:
            writer.add_custom_alignment(alignment)
        for i in range(draw(st.integers(0, 4))):
            kind = draw(st.sampled_from(["string", "int", "float", "bool", "ints", "strings", "floats", "nested"]))
            key = f"test.{kind}.{i}"
            if kind == "string":
                writer.add_string(key, draw(st.text(max_size=12)))
            elif kind == "int":
                writer.add_uint32(key, draw(st.integers(0, 2**32 - 1)))
            elif kind == "float":
                writer.add_float32(key, draw(st.floats(width=32, allow_nan=False)))
            elif kind == "bool":
                writer.add_bool(key, draw(st.booleans()))
            elif kind == "ints":
                writer.add_array(key, draw(st.lists(st.integers(0, 2**31 - 1), max_size=6)))
            elif kind == "strings":
                writer.add_array(key, draw(st.lists(st.text(max_size=5), max_size=6)))
            elif kind == "floats":
                writer.add_array(key, draw(st.lists(st.floats(width=32, allow_nan=False), max_size=6)))
            else:
                writer.add_array(key, [[1, 2], [3]])
        for i in range(draw(st.integers(1, 3))):
            type_name = draw(st.sampled_from(CONVERTED + OTHERS))
            rows = draw(st.integers(1, 3))
            blocks = draw(st.integers(1, 2)) * (8 if type_name in ("F32", "F16", "BF16", "I8", "I32") else 1)
            data, kind = _block_bytes(rng, type_name, rows, blocks)
            writer.add_tensor(f"t{i}.{type_name.lower()}", data, raw_dtype=kind)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        with open(name, "rb") as stream:
            return stream.read()
    finally:
        os.unlink(name)


@dataclass(frozen=True)
class Field:
    """One integer field of a GGUF file: where it is, its width, its value and what it is."""

    name: str
    offset: int
    width: int
    value: int
    role: str  # "count" (a count or length) or "type"


def _widths(declaration: Any) -> dict[str, int]:
    widths = {}
    for sub in declaration.subcons:
        try:
            widths[sub.name] = sub.sizeof()
        except (cs.SizeofError, KeyError, AttributeError):  # a data-dependent size: not an integer field
            continue
    return widths


HEADER_WIDTHS = _widths(GGUF_HEADER)
ARRAY_WIDTHS = _widths(ARRAY_HEAD)
INFO_WIDTHS = _widths(TENSOR_INFO)
LENGTH_WIDTH = LENGTH.sizeof()
TYPE_WIDTH = _widths(KV_HEAD)["value_type"]


def fields(data: bytes) -> list[Field]:
    """Every count, length and type field of a valid GGUF file, located with its declarations."""
    layout = GgufFile(data)

    def at(offset: int, width: int, name: str, role: str) -> Field:
        value = int.from_bytes(data[offset:offset + width], "little")
        return Field(name, offset, width, value, role)

    found = []
    position = 0
    for name, width in HEADER_WIDTHS.items():
        if name in ("tensor_count", "kv_count"):
            found.append(at(position, width, name, "count"))
        position += width
    for entry in layout.kv.values():
        found.append(at(entry.offset, LENGTH_WIDTH, "key_length", "count"))
        found.append(at(entry.payload - TYPE_WIDTH, TYPE_WIDTH, "value_type", "type"))
        if entry.element_type is not None:
            found.append(at(entry.payload, ARRAY_WIDTHS["element_type"], "element_type", "type"))
            found.append(at(entry.payload + ARRAY_WIDTHS["element_type"], ARRAY_WIDTHS["count"], "array_count",
                            "count"))
            if entry.count and entry.element_type == 8:  # the first string element's length
                found.append(at(entry.payload + sum(ARRAY_WIDTHS.values()), LENGTH_WIDTH, "string_length", "count"))
        elif entry.value_type == 8:
            found.append(at(entry.payload, LENGTH_WIDTH, "string_length", "count"))
    for tensor in layout.tensors:
        position = tensor.info_offset
        found.append(at(position, LENGTH_WIDTH, "name_length", "count"))
        position += LENGTH_WIDTH + len(tensor.name.encode("utf-8"))
        found.append(at(position, INFO_WIDTHS["n_dims"], "n_dims", "count"))
        position += INFO_WIDTHS["n_dims"]
        for i in range(len(tensor.dims)):
            found.append(at(position, LENGTH_WIDTH, f"dims[{i}]", "count"))
            position += LENGTH_WIDTH
        found.append(at(position, INFO_WIDTHS["ggml_type"], "ggml_type", "type"))
        position += INFO_WIDTHS["ggml_type"]
        found.append(at(position, INFO_WIDTHS["offset"], "tensor_offset", "count"))
    return found


def _put(data: bytes, field: Field, value: int) -> bytes:
    raw = (value % (1 << 8 * field.width)).to_bytes(field.width, "little")
    return data[:field.offset] + raw + data[field.offset + field.width:]


HUGE = (2**64 - 1, 2**63, 2**63 - 1, 2**62, 2**40, 2**32, 2**32 - 1, 2**31, 2**24)

Mutation = Callable[[random.Random, bytes], tuple[bytes, str]]


def _flip(rnd: random.Random, data: bytes) -> tuple[bytes, str]:
    at = rnd.randrange(len(data))
    where = next((f.name for f in fields(data) if f.offset <= at < f.offset + f.width), "bytes")
    return data[:at] + bytes([data[at] ^ rnd.randrange(1, 256)]) + data[at + 1:], f"flip:{where}"


def _truncate(rnd: random.Random, data: bytes) -> tuple[bytes, str]:
    return data[:rnd.randrange(len(data))], "truncate"


def _rewrite(role: str, value: Callable[[random.Random, Field], int], label: str) -> Mutation:
    def mutate(rnd: random.Random, data: bytes) -> tuple[bytes, str]:
        field = rnd.choice([f for f in fields(data) if f.role == role])
        return _put(data, field, value(rnd, field)), f"{label}:{field.name}"
    return mutate


def _huge(rnd: random.Random, field: Field) -> int:
    return rnd.choice(HUGE) if rnd.random() < 0.7 else rnd.randrange(2**20, 2**64)


def _near(rnd: random.Random, field: Field) -> int:
    return rnd.choice([0, field.value + 1, max(field.value - 1, 0), 2 * field.value + 1])


def _other_type(rnd: random.Random, field: Field) -> int:
    return rnd.randrange(46) if rnd.random() < 0.9 else rnd.choice([2**31, 2**32 - 1])


MUTATIONS: dict[str, Mutation] = {
    "flip": _flip,
    "truncate": _truncate,
    "huge": _rewrite("count", _huge, "huge"),
    "count": _rewrite("count", _near, "count"),
    "type": _rewrite("type", _other_type, "type"),
}
"""The mutations by kind; each takes a random source and a valid file, and returns the mutant and its label."""


def mutants_of(bases: Sequence[bytes], kinds: Sequence[str] = tuple(MUTATIONS)) -> st.SearchStrategy[tuple[bytes, str]]:
    """Mutants of the given valid files: ``(bytes, label)`` (draws a file, a kind and a random seed;
    the positions and values come from that seed, spread evenly over the file and the field)."""
    return st.builds(lambda base, kind, seed: MUTATIONS[kind](random.Random(seed), base),
                     st.sampled_from(list(bases)), st.sampled_from(list(kinds)), st.integers(0, 2**64 - 1))


def gguf_mutants(kinds: Sequence[str] = tuple(MUTATIONS)) -> st.SearchStrategy[tuple[bytes, str]]:
    """A valid GGUF file (:func:`valid_ggufs`) changed by one mutation of ``kinds``: ``(bytes, label)``."""
    return valid_ggufs().flatmap(lambda base: mutants_of([base], kinds))


def draw_mutants(count: int, seed: int, bases: int = 200) -> list[tuple[bytes, str]]:
    """``count`` mutants of ``bases`` valid files, the same for the same seed (Hypothesis' generation
    phase): writing a file costs more than changing one, so each file gives many mutants."""
    from hurray_decl.hurray.fuzz import draw_examples

    valid = draw_examples(valid_ggufs(), min(bases, count), seed)
    return draw_examples(mutants_of(valid), count, seed + 1)

