"""The kinds of input the command line reads, declared once: one :class:`Kind` member and one
:class:`KindRow` per kind in :data:`KINDS` (its magic, its file suffixes, its title, the options
that apply to it, and, for a kind that other commands read, where to take it).

Every other list of kinds is derived from :data:`KINDS`: the suffix hints of detection
(:data:`SUFFIXES`), the ``--kind`` choices (:data:`FORCED`), the groups ``hurray`` and
``onnx-light`` (:data:`HURRAY_KINDS`, :data:`ONNX_LIGHT`), the messages naming a kind
(:func:`title`), the options refused for a kind (:func:`applies`) and the kinds ``--help`` names
(:func:`summary`). No other module spells a kind's name (a test scans ``cli/``).

The targets ``convert`` and ``quantize`` write are the other enum here, :class:`Target`.

This module imports nothing heavy: every command's parser is built from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum


class Kind(StrEnum):
    """A kind of input (detection returns one of the first ten), or a group of kinds that
    ``--kind`` names (:attr:`AUTO`, :attr:`HURRAY`, :attr:`ONNX_LIGHT`)."""

    DESCRIPTOR = "descriptor"
    QUANTIZATION = "quantization"
    CONTAINER = "container"
    STREAM = "stream"
    VALUE = "value"
    TENSOR = "tensor"
    MODEL = "model"
    GGUF = "gguf"
    SAFETENSORS = "safetensors"
    EMPTY = "empty"
    AUTO = "auto"
    HURRAY = "hurray"
    ONNX_LIGHT = "onnx-light"


class Target(StrEnum):
    """A format ``convert --to`` and ``quantize --to`` write."""

    HURRAY = "hurray"
    ONNX_LIGHT = "onnx-light"
    ORT = "ort"
    GGUF = "gguf"
    SAFETENSORS = "safetensors"
    NPZ = "npz"


@dataclass(frozen=True)
class Scope:
    """The commands for which an option applies to a kind: ``only`` those (when given), else every
    command but those in ``but``."""

    only: frozenset[str] | None = None
    but: frozenset[str] = frozenset()

    def covers(self, command: str) -> bool:
        return command in self.only if self.only is not None else command not in self.but


EVERY = Scope()


def only(*commands: str) -> Scope:
    return Scope(only=frozenset(commands))


def but(*commands: str) -> Scope:
    return Scope(but=frozenset(commands))


OPTIONS: dict[str, str] = {
    "buffers": "--buffers", "permissive": "--permissive", "name": "--name", "index": "--index",
    "region": "--region", "progress": "--progress", "buffer": "--buffer",
}
"""The options that apply to some kinds only (``dest`` -> its name): one given for a kind whose
row does not list it is a usage error naming both, never silently ignored."""


@dataclass(frozen=True)
class KindRow:
    """What the command line knows of one kind."""

    kind: Kind
    title: str
    """The kind in a message: ``a .hrry container``."""
    magic: bytes = b""
    """The bytes its input starts with (none: decided by structure)."""
    suffixes: tuple[str, ...] = ()
    """File suffixes that hint at it when neither a magic nor the structure decides."""
    options: Mapping[str, Scope] = field(default_factory=dict)
    """The options of :data:`OPTIONS` that apply to it (``dest`` -> the commands they apply for)."""
    taken_by: str = ""
    """For a kind the reading commands do not take: where to take it (the commands that read it)."""
    members: tuple[Kind, ...] = ()
    """For a group: the kinds it names."""
    forced: bool = False
    """Whether ``--kind`` of the reading commands (inspect, validate, decode, dequantize, audit) names it."""


HURRAY_OPTIONS = {"permissive": EVERY, "region": EVERY}

KINDS: dict[Kind, KindRow] = {row.kind: row for row in (
    KindRow(Kind.DESCRIPTOR, "a tensor descriptor", b"HRRY",
            options={**HURRAY_OPTIONS, "buffers": EVERY, "name": only("convert"), "buffer": only("convert")}),
    KindRow(Kind.QUANTIZATION, "a quantization payload", options={"permissive": EVERY}),
    KindRow(Kind.CONTAINER, "a .hrry container", b"HRRYFILE", (".hrry",),
            options={**HURRAY_OPTIONS, "name": only("dequantize", "extract")}),
    KindRow(Kind.STREAM, "a Hurray stream", b"HRRY", (".stream",),
            options={**HURRAY_OPTIONS, "name": only("convert"), "index": EVERY, "progress": EVERY}, forced=True),
    KindRow(Kind.VALUE, "an onnx-light value", suffixes=(".pb",), options={"name": but("convert")}, forced=True),
    KindRow(Kind.TENSOR, "an onnx-light tensor", forced=True),
    KindRow(Kind.MODEL, "an onnx-light model", suffixes=(".onnx",), options={"name": but("convert")}, forced=True),
    KindRow(Kind.GGUF, "a GGUF", b"GGUF", (".gguf",),
            taken_by="a GGUF file: hurray-decl convert reads it (to Hurray, onnx-light or ORT), hurray-decl ls "
                     "lists its tensors"),
    KindRow(Kind.SAFETENSORS, "a safetensors", suffixes=(".safetensors", ".safetensors.index.json"),
            taken_by="a safetensors file: hurray-decl convert reads it"),
    KindRow(Kind.EMPTY, "empty"),
    KindRow(Kind.AUTO, "any kind, detected from the bytes", forced=True),
    KindRow(Kind.HURRAY, "a Hurray input",
            members=(Kind.DESCRIPTOR, Kind.QUANTIZATION, Kind.CONTAINER, Kind.STREAM), forced=True),
    KindRow(Kind.ONNX_LIGHT, "an onnx-light input", members=(Kind.VALUE, Kind.TENSOR, Kind.MODEL)),
)}
"""One row per :class:`Kind`, in the order ``--help`` names them."""

HURRAY_KINDS = KINDS[Kind.HURRAY].members
ONNX_LIGHT = KINDS[Kind.ONNX_LIGHT].members
"""The onnx-light kinds (a serialized ``EncodedValueProto``, ``TensorProto`` or ONNX model)."""
FORCED = (Kind.AUTO, *(row.kind for row in KINDS.values() if row.forced and row.kind is not Kind.AUTO))
"""``--kind`` of the reading commands: detect, an onnx-light kind, the Hurray kinds (detected
among themselves), or a stream."""
TAKEN_BY = {row.kind: row.taken_by for row in KINDS.values() if row.taken_by}
"""The foreign kinds the command line recognises, and where to take them."""
SUFFIXES = {suffix: row.kind for row in KINDS.values() for suffix in row.suffixes}
"""File suffixes as hints: they decide only when neither a magic nor the structure does."""
DETECTED = tuple(row.kind for row in KINDS.values() if not row.members and row.kind is not Kind.AUTO)
"""The kinds detection returns."""


def title(kind: Kind | str) -> str:
    """The kind in a message (``a .hrry container``)."""
    row = KINDS.get(Kind(kind)) if kind in Kind._value2member_map_ else None
    return row.title if row is not None else str(kind)


def applies(dest: str, kind: Kind | str, command: str) -> bool:
    """Whether the option ``dest`` (of :data:`OPTIONS`) applies to ``kind`` input of ``command``."""
    row = KINDS.get(Kind(kind)) if kind in Kind._value2member_map_ else None
    scope = row.options.get(dest) if row is not None else None
    return scope is not None and scope.covers(command)


def summary() -> str:
    """The kinds the command line reads, for ``--help``."""
    named = [row.title for row in KINDS.values() if row.kind in DETECTED and row.kind is not Kind.EMPTY]
    return ", ".join(named[:-1]) + " or " + named[-1]


__all__ = ["DETECTED", "FORCED", "HURRAY_KINDS", "KINDS", "ONNX_LIGHT", "OPTIONS", "SUFFIXES", "TAKEN_BY", "Kind",
           "KindRow", "Scope", "Target", "applies", "but", "only", "summary", "title"]
