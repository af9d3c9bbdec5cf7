"""Mutants of the fixed header, the shape and byte_offset (DIGEST § 5.2, § 5.3) and of the
type-tag space (§ 4.1)."""

from __future__ import annotations

from hypothesis import strategies as st

from hurray_decl.hurray.strategies.mutants import field_mutant, header_field, mutant
from hurray_decl.hurray.strategies.tensor import ANY, layouts_in, tensor_descriptors
from hurray_decl.hurray.tables.element_types import BY_TAG, RESERVED_TYPE_TAGS, TYPE_TAG_RANGES, TypeTagClass
from hurray_decl.hurray.tables.tags import INVALID_TAGS, PRIVATE_TAGS
from hurray_decl.hurray.tensor import RowMajor, write_tensor_descriptor
from hurray_decl.hurray.tensor.common import MAX_RANK, SUPPORTED_MAJOR
from hurray_decl.hurray.tensor.fields import with_length
from hurray_decl.hurray.tensor.header import DEFINED_FLAGS, HEADER_LENGTH, MAGIC
from hurray_decl.hurray.tensor.layouts import LAYOUTS

U32 = st.integers(0, 2**32 - 1)


@mutant("HT-HDR-04")
def _magic() -> st.SearchStrategy[bytes]:
    return header_field("magic", st.binary(min_size=len(MAGIC), max_size=len(MAGIC)).filter(lambda b: b != MAGIC),
                        ANY)


@mutant("HT-HDR-05")
def _major_new() -> st.SearchStrategy[bytes]:
    return header_field("version_major", st.integers(SUPPORTED_MAJOR + 1, 255), ANY)


@mutant("HT-HDR-06")
def _major_old() -> st.SearchStrategy[bytes]:
    return header_field("version_major", st.integers(0, SUPPORTED_MAJOR - 1), ANY)


@mutant("HT-HDR-07")
def _length_short() -> st.SearchStrategy[bytes]:
    return header_field("descriptor_length", st.integers(0, HEADER_LENGTH - 1), ANY)


@mutant("HT-HDR-08")
@st.composite
def _truncated(draw: st.DrawFn) -> bytes:
    data = write_tensor_descriptor(draw(ANY))
    if draw(st.booleans()):  # the input ends before descriptor_length
        return data[:draw(st.integers(0, len(data) - 1))]
    # descriptor_length ends inside a section
    return with_length(data[:draw(st.integers(HEADER_LENGTH, len(data) - 1))])


@mutant("HT-HDR-09")
@st.composite
def _length_long(draw: st.DrawFn) -> bytes:
    data = write_tensor_descriptor(draw(ANY))
    return with_length(data + draw(st.binary(min_size=1, max_size=16)))


@mutant("HT-HDR-12")
def _reserved_flags() -> st.SearchStrategy[bytes]:
    reserved = U32.map(lambda v: v & ~DEFINED_FLAGS).filter(bool)
    return field_mutant(ANY, "flags", lambda draw, d: (d.flags or 0) | draw(reserved))  # validated: never None


@mutant("HT-HDR-13")
def _rank_high() -> st.SearchStrategy[bytes]:
    return header_field("rank", st.integers(MAX_RANK + 1, 2**32 - 1), ANY)


@mutant("HT-HDR-15")
def _layout_invalid() -> st.SearchStrategy[bytes]:
    return header_field("layout_tag", st.sampled_from(INVALID_TAGS), ANY)


UNKNOWN_LAYOUT_TAGS = [t for t in range(256) if t not in LAYOUTS and t not in INVALID_TAGS and t not in PRIVATE_TAGS]


@mutant("HT-HDR-16")
def _layout_unknown() -> st.SearchStrategy[bytes]:
    return header_field("layout_tag", st.sampled_from(UNKNOWN_LAYOUT_TAGS), ANY)


def _type_tags(cls: TypeTagClass) -> list[int]:
    return [t for r in TYPE_TAG_RANGES if r.cls is cls for t in range(r.first, r.last + 1)]


_UNASSIGNED_TYPES = [t for t in _type_tags(TypeTagClass.UNASSIGNED) if t not in BY_TAG and t not in RESERVED_TYPE_TAGS]


@mutant("HE-02")
def _type_invalid() -> st.SearchStrategy[bytes]:
    return header_field("type_tag", st.sampled_from(_type_tags(TypeTagClass.INVALID)), ANY)


@mutant("HE-03")
def _type_unknown() -> st.SearchStrategy[bytes]:
    return header_field("type_tag", st.sampled_from(_UNASSIGNED_TYPES), ANY)


@mutant("HE-05")
def _type_reserved() -> st.SearchStrategy[bytes]:
    return header_field("type_tag", st.sampled_from(_type_tags(TypeTagClass.RESERVED)), ANY)


@mutant("HE-06")
def _type_reserved_single() -> st.SearchStrategy[bytes]:
    return header_field("type_tag", st.sampled_from(sorted(RESERVED_TYPE_TAGS)), ANY)


@mutant("HT-HDR-19")
def _offset_past_buffer() -> st.SearchStrategy[bytes]:
    return field_mutant(tensor_descriptors(layout=layouts_in("dense")), "byte_offset",
                        lambda draw, d: d.buffers[0].byte_size + draw(st.integers(1, 2**16)))


_ZERO_OFFSET = tuple(row.name for row in LAYOUTS if row.zero_byte_offset)


@mutant("HT-HDR-20")
def _offset_not_zero() -> st.SearchStrategy[bytes]:
    return field_mutant(tensor_descriptors(layout=_ZERO_OFFSET), "byte_offset",
                        lambda draw, d: draw(st.integers(1, 2**64 - 1)))


_NOT_ROW_MAJOR = [row.tag for row in LAYOUTS if row.tag != RowMajor.tag] + [PRIVATE_TAGS[3]]


@mutant("HT-HDR-21")
def _scalar_layout() -> st.SearchStrategy[bytes]:
    scalars = tensor_descriptors(layout="row_major", quantized=False, shard=False).filter(lambda d: d.rank == 0)
    return header_field("layout_tag", st.sampled_from(_NOT_ROW_MAJOR), scalars)
