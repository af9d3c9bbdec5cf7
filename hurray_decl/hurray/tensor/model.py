"""The immutable model of a whole tensor descriptor."""

from __future__ import annotations

from functools import cache
from typing import Any, ClassVar

import construct as cs
from pydantic import SerializeAsAny, model_validator

from hurray_decl.hurray.quantization import load_quantization
from hurray_decl.hurray.schemes.quantization import Descriptor as QuantizationDescriptor
from hurray_decl.hurray.tensor.buffers import BufferHandle
from hurray_decl.hurray.tensor.common import MAX_RANK, Section
from hurray_decl.hurray.tensor.header import HEADER, HEADER_LENGTH, MAGIC, Flag, core, core_fields
from hurray_decl.hurray.tensor.layouts import LAYOUTS, Layout, OpaqueLayout, PrivateLayout, RowMajor
from hurray_decl.hurray.tensor.sections import CompositeMember, ExtensionType, Shard, Statistics

SECTION_FLAGS: tuple[tuple[str, Flag, str], ...] = (
    ("quantization", Flag.HAS_QUANTIZATION, "HT-SEC-01"),
    ("shard", Flag.HAS_SHARD, Shard.rule),
    ("statistics", Flag.HAS_STATISTICS, Statistics.rule),
    ("extension_type", Flag.HAS_EXTENSION_TYPE, ExtensionType.rule),
    ("composite_member", Flag.HAS_COMPOSITE_MEMBER, CompositeMember.rule),
)
"""Each optional section in wire order, the flag that gates it and the rule tying the two."""


def _layout_from_json(tag: Any, fields: dict[str, Any]) -> Layout:
    """The layout model a JSON object describes, chosen by the descriptor's layout_tag."""
    row = LAYOUTS.get(tag) if isinstance(tag, int) else None
    if row is not None:
        return row.model.load(fields)
    if "extension_layout_id" in fields:
        return PrivateLayout.load(fields)
    return OpaqueLayout.load(fields)


class TensorDescriptor(Section):
    """A Hurray tensor descriptor.

    ``flags`` and ``layout_tag`` may be left out when building one: they are then derived from
    the sections present and the layout model. ``descriptor_length`` left out is computed by
    the writer. ``trailing`` holds bytes after the known sections of a newer-minor descriptor
    (HT-HDR-11), kept so that it re-encodes byte-exactly.
    """

    rule: ClassVar[str] = "HT-HDR-03"
    wire_name: ClassVar[str] = "descriptor"
    wire_only: ClassVar[tuple[str, ...]] = ("magic", "rank")  # a constant; len(shape)
    nullable: ClassVar[tuple[str, ...]] = ("descriptor_length", "flags", "layout_tag")  # the writer derives them

    @staticmethod
    def fields(rank: int) -> tuple[cs.Construct, ...]:
        """The fixed header, then shape and byte_offset: the model's own wire fields (the
        sections below are models of their own)."""
        return (*HEADER.subcons, *core_fields(rank))

    layout: SerializeAsAny[Layout] = RowMajor()
    buffers: tuple[BufferHandle, ...] = ()
    quantization: SerializeAsAny[QuantizationDescriptor] | None = None
    shard: Shard | None = None
    statistics: Statistics | None = None
    extension_type: ExtensionType | None = None
    composite_member: CompositeMember | None = None
    trailing: bytes = b""

    @model_validator(mode="before")
    @classmethod
    def _derive(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if isinstance(data.get("layout"), dict):  # JSON: the layout_tag says which model
            data["layout"] = _layout_from_json(data.get("layout_tag"), data["layout"])
        if isinstance(data.get("quantization"), dict):  # JSON: dispatched on scheme_tag
            data["quantization"] = load_quantization(data["quantization"])
        layout = data.get("layout", RowMajor())
        if data.get("layout_tag") is None and isinstance(layout, Layout) and not isinstance(
                layout, (PrivateLayout, OpaqueLayout)):
            data["layout_tag"] = layout.tag
        if data.get("flags") is None:
            data["flags"] = sum(int(flag) for name, flag, _ in SECTION_FLAGS if data.get(name) is not None)
        return data

    def wire_declaration(self) -> cs.Construct:
        """The fixed header, then shape and byte_offset (the sections check themselves)."""
        return _framing(len(self.shape)) if len(self.shape) <= MAX_RANK else HEADER

    def wire_values(self) -> dict[str, Any]:
        return {
            "magic": MAGIC, "version_major": self.version_major, "version_minor": self.version_minor,
            "descriptor_length": HEADER_LENGTH if self.descriptor_length is None else self.descriptor_length,
            "flags": self.flags, "type_tag": self.type_tag,
            "layout_tag": self.layout.tag if self.layout_tag is None else self.layout_tag,
            "rank": len(self.shape), "shape": list(self.shape), "byte_offset": self.byte_offset,
        }

    def replace(self, **changes: Any) -> TensorDescriptor:
        """A validated copy with ``changes``. flags and descriptor_length are derived again unless
        given, and layout_tag too when the layout changes."""
        values = {name: getattr(self, name) for name in type(self).model_fields}
        values.update(flags=None, descriptor_length=None)
        if "layout" in changes:
            values["layout_tag"] = None
        values.update(changes)
        return type(self)(**values)

    @property
    def rank(self) -> int:
        return len(self.shape)


@cache
def _framing(rank: int) -> cs.Struct:
    return cs.Struct(*HEADER.subcons, *core(rank).subcons)
