"""GGUF splits (llama.cpp's ``gguf-split``, gguf-py's ``GGUFWriter(split_max_...)``) found and
checked as one model.

A split carries ``split.no`` (u16, from 0), ``split.count`` (u16) and ``split.tensors.count``
(i32, the model's tensors) and is named ``<prefix>-%05d-of-%05d.gguf`` (from 1); the first split
holds the model's KV entries, the others only the split keys. :func:`find_splits` takes any one
split's path and gives every split's checked layout in order (the file itself alone when it
is no split): a split missing (CV-SHD-01), a split out of place, of another count or total, a
total that is not the tensors the splits hold (CV-SHD-05), a tensor in two splits (CV-SHD-03) are refused
before any tensor is read. :class:`Chained` reads the splits' tensor sequences as one, split by
split.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, overload

from hurray_decl.convert.gguf_file import GgufFile, open_gguf
from hurray_decl.errors import RuleViolation

__all__ = ["SPLIT_KEYS", "Chained", "find_splits"]

SPLIT_NO, SPLIT_COUNT, SPLIT_TENSORS = "split.no", "split.count", "split.tensors.count"
SPLIT_KEYS = (SPLIT_NO, SPLIT_COUNT, SPLIT_TENSORS)
"""The KV keys of a split: not the model's metadata (converting drops them)."""
_NAME = re.compile(r"^(?P<prefix>.+)-(?P<no>\d{5})-of-(?P<count>\d{5})\.gguf$")


def _split_name(prefix: str, no: int, count: int) -> str:
    return f"{prefix}-{no:05d}-of-{count:05d}.gguf"


def _number(layout: GgufFile, key: str, name: str) -> int | None:
    entry = layout.kv.get(key)
    if entry is None:
        return None
    value = entry.value()
    if not isinstance(value, int) or isinstance(value, bool):
        raise RuleViolation("CV-SHD-05", f"{name}: {key} is not an integer", path=f"gguf -> {key}",
                            offset=entry.offset, actual=entry.type_name, expected="an integer")
    return value


def find_splits(path: str | Path | bytes) -> list[GgufFile]:
    """The checked layouts of every split of the model ``path`` belongs to, in order (``[the
    file]`` for a file with no ``split.count`` above 1, or the file's bytes)."""
    first = open_gguf(path)
    if isinstance(path, bytes):
        return [first]
    path = Path(path)
    count = _number(first, SPLIT_COUNT, path.name)
    if count is None or count <= 1:
        return [first]
    named = _NAME.match(path.name)
    if named is None or int(named["count"]) != count:
        raise RuleViolation("CV-SHD-01", f"{path.name} is one of {count} splits, but not named "
                            "<prefix>-NNNNN-of-NNNNN.gguf: the others cannot be found", path=f"gguf -> {SPLIT_COUNT}",
                            offset=first.kv[SPLIT_COUNT].offset, actual=path.name,
                            expected=_split_name("<prefix>", 1, count))
    names = [_split_name(named["prefix"], k + 1, count) for k in range(count)]
    missing = [n for n in names if not (path.parent / n).is_file()]
    if missing:
        raise RuleViolation("CV-SHD-01", f"{path.name} is one of {count} splits; {missing[0]} is not in "
                            f"{path.parent}", path=f"gguf -> {SPLIT_COUNT}", actual=missing[0],
                            expected="every split beside it")
    layouts = [first if n == path.name else open_gguf(path.parent / n) for n in names]
    owner: dict[str, str] = {}
    total = _number(layouts[0], SPLIT_TENSORS, names[0])
    for k, (name, layout) in enumerate(zip(names, layouts)):
        for key, want in ((SPLIT_NO, k), (SPLIT_COUNT, count), (SPLIT_TENSORS, total)):
            got = _number(layout, key, name)
            if got != want and (key != SPLIT_TENSORS or got is not None):  # the others may leave the total out
                raise RuleViolation("CV-SHD-05", f"{name} says {key} {got}, its place says {want}",
                                    path=f"{name} -> {key}", offset=layout.kv[key].offset if key in layout.kv else None,
                                    actual=got, expected=want)
        for tensor in layout.tensors:
            if tensor.name in owner:
                raise RuleViolation("CV-SHD-03", f"the tensor {tensor.name} is in two splits",
                                    path=f"{name} -> {tensor.name}", offset=tensor.info_offset,
                                    actual=f"{owner[tensor.name]}, {name}", expected="one split")
            owner[tensor.name] = name
    if total != len(owner):
        raise RuleViolation("CV-SHD-05", f"the splits hold {len(owner)} tensors, {names[0]}'s {SPLIT_TENSORS} says "
                            f"{total}", path=f"{names[0]} -> {SPLIT_TENSORS}", actual=len(owner), expected=total)
    return layouts


class Chained(Sequence[Any]):
    """Sequences (one per split) read as one; iteration goes through each in turn, so each
    split's own iteration (which gives its pages back tensor by tensor) is kept."""

    def __init__(self, parts: Sequence[Sequence[Any]]) -> None:
        self.parts = list(parts)

    def __len__(self) -> int:
        return sum(len(p) for p in self.parts)

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        at = index + len(self) if index < 0 else index
        for part in self.parts:
            if 0 <= at < len(part):
                return part[at]
            at -= len(part)
        raise IndexError(index)

    def __iter__(self) -> Iterator[Any]:
        for part in self.parts:
            yield from part
