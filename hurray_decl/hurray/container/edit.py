"""Editing a ``.hrry`` file in place: KV entries set and deleted, tensors renamed, dropped and
appended, with only the tail (and what moves or is appended) written.

A container keeps its KV section, index and trailer after the tensor region, located by the
trailer (FILE-FORMAT.md § 2), so an edit rewrites the file from the end of its tensor region on:

* **set / delete a KV entry, rename a tensor**: the KV section, index and trailer are written
  again where the old ones began (the end of the tensor region);
* **append tensors**: the new tensors go where the old tail began, and the new tail after them;
* **drop a tensor**: the format allows no gap between tensors (HF-DATA-03, HF-D11), so the
  tensors after the dropped one move down to close it (each descriptor and its buffers copied,
  re-padded to the alignment), then the tail follows. Dropping the last tensors of the file
  moves nothing; dropping an early one of a large file moves everything after it. Dropping a
  composite's head drops the composite whole (its members too); a member is not dropped while
  its head stays (CV-EDT-03).

Where tensors move or come, ``tensor_count_hint`` (header bytes 28-35) is written too when the
file states one (HF-HDR-16). Nothing else of the file is written.

Crash safety: a rollback journal beside the file, ``FILE.edit-journal`` (:func:`journal_path`).
Before the file is touched the journal receives the file's old size, its 64-byte header and
every byte the edit will overwrite or cut off (from the lowest offset it writes to the old
end), closed by a CRC-32C; it is fsynced, and so is its folder. Then the file is written,
truncated to its new size and fsynced; then the journal is deleted and the folder fsynced: that
deletion is the commit. A kill at any point leaves either no journal (the file is the old
version, or the new one once the deletion is through) or a journal, and one recovery step,
:func:`recover`, which every edit runs first (``hurray-decl edit FILE`` with no change runs only
it), settles it: a complete journal writes the old bytes back and cuts the file to its old size
(the old version), an incomplete one was never acted on and is deleted (the file is untouched,
the old version). The step can itself be killed and run again. While a journal is there,
``hurray-decl validate`` refuses the file with CV-EDT-01, naming the file's own verdict as well
(a torn tail fails HF-IDX-02 or another HF rule). Readers do not look for journals, and
nothing locks the file: run one edit of a file at a time, with no writer of it alongside.

The edited file is valid under the same rules as the one given: the file is validated at level
V first (its buffer contents excepted) and refused by the broken rule, the tail is written by
the container writer (:meth:`~hurray_decl.hurray.container.writer.ContainerWriter.resumed`),
and moved or appended tensors go through its checks.
"""

from __future__ import annotations

import itertools
import mmap
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, cast

import numpy as np

from hurray_decl.errors import ArgumentError, HurrayDeclError, NameNotFound, RuleViolation, path_error
from hurray_decl.hurray.container.declarations import FILE_HEADER, HEADER_LENGTH, UNKNOWN_COUNT, KVTag
from hurray_decl.hurray.container.journal import journal_path, pending, pwrite_all, recover, settle, write_journal
from hurray_decl.hurray.container.model import FileHeader, IndexEntry, KVValue
from hurray_decl.hurray.container.reader import Container, open_container
from hurray_decl.hurray.container.writer import ContainerWriter, encode_kv
from hurray_decl.hurray.tensor.layouts import CompositeHead
from hurray_decl.hurray.values import Tensor, iterate_members, path_of

TYPES: dict[str, int] = {tag.name.lower(): int(tag) for tag in KVTag if tag != KVTag.ARRAY}
"""The scalar KV types a value may be given as, by name (``string``, ``int64``, ...)."""


# ---------------------------------------------------------------------- the edits


def kv_value(value: Any, type: str | int | None = None) -> KVValue:
    """A KV value: ``value`` as it is (a :class:`KVValue`, or a plain value typed as the writer
    types it) when ``type`` is None, else the scalar of that tag or name (:data:`TYPES`)."""
    if type is None:
        return KVValue.of(value)
    tag = TYPES.get(type) if isinstance(type, str) else type
    if tag is None:
        raise ArgumentError("type", "a scalar KV type", actual=type, expected=", ".join(TYPES))
    return KVValue.scalar(int(tag), value)


class _FileAt:
    """A binary stream that writes into ``fd`` from ``position`` on (the container writer's sink)."""

    def __init__(self, fd: int, position: int) -> None:
        self.fd, self.position, self.written = fd, position, 0

    def write(self, data: Any) -> int:
        count = pwrite_all(self.fd, data, self.position)
        self.position += count
        self.written += count
        return count


@dataclass
class Summary:
    """What an edit did: the changes made, bytes written into the file and into the journal,
    the file's size before and after, and the recovery step it ran first (if any)."""

    changes: int = 0
    written: int = 0
    journal: int = 0
    old_size: int = 0
    new_size: int = 0
    recovered: str | None = None


def _tensors(tensors: Mapping[str, Any]) -> list[tuple[str, Tensor]]:
    """Appended tensors as :class:`Tensor` (arrays and DLPack producers converted, as save does)."""
    if not isinstance(tensors, Mapping):
        raise ArgumentError("tensors", "a mapping of names to tensors", actual=type(tensors).__name__)
    out = []
    for name, value in tensors.items():
        if not isinstance(value, Tensor):
            dlpack = not isinstance(value, np.ndarray) and hasattr(value, "__dlpack__")
            value = Tensor.from_dlpack(value, name=name) if dlpack else Tensor.from_numpy(np.asarray(value), name=name)
        out.append((name, value))
    return out


@dataclass
class Edit:
    """The changes to make to one file, applied together by :meth:`commit`.

    Each method records one change and returns the edit, so they chain; as a context manager
    the edit commits on a clean exit and is dropped on an exception. Changes apply in the
    order given: a tensor renamed is then known by its new name. :meth:`commit` with no change
    only runs the recovery step (:func:`recover`)."""

    path: str
    changes: list[tuple[str, Any, Any]] = field(default_factory=list)
    committed: Summary | None = None

    def set(self, key: str, value: Any, type: str | int | None = None) -> Edit:
        """Set KV entry ``key`` (added, or replaced in place) to ``value`` (see :func:`kv_value`)."""
        self.changes.append(("set", key, kv_value(value, type)))
        return self

    def delete(self, key: str) -> Edit:
        """Delete KV entry ``key``."""
        self.changes.append(("delete", key, None))
        return self

    def rename(self, old: str, new: str) -> Edit:
        """Give tensor ``old`` the name ``new``."""
        self.changes.append(("rename", old, new))
        return self

    def drop(self, name: str) -> Edit:
        """Remove tensor ``name``: a composite's head with its members; not a member alone (CV-EDT-03)."""
        self.changes.append(("drop", name, None))
        return self

    def append(self, tensors: Mapping[str, Any]) -> Edit:
        """Add ``tensors`` (name -> Tensor, array or DLPack producer; composites bring their members)."""
        for name, tensor in _tensors(tensors):
            self.changes.append(("append", name, tensor))
        return self

    def commit(self) -> Summary:
        """Apply the changes (after the recovery step); see the module's documentation."""
        if self.committed is not None:
            raise ArgumentError("commit", "this edit was committed already")
        self.committed = _commit(self.path, self.changes)
        return self.committed

    def __enter__(self) -> Edit:
        return self

    def __exit__(self, kind: Any, *_: Any) -> None:
        if kind is None and self.committed is None:
            self.commit()


def edit(path: str | os.PathLike[str]) -> Edit:
    """An :class:`Edit` of the ``.hrry`` file at ``path``: ``with hd.edit(p) as e: e.set("k", "v")``."""
    return Edit(path_of(path))


def append(path: str | os.PathLike[str], tensors: Mapping[str, Any]) -> Summary:
    """Append ``tensors`` to the ``.hrry`` file at ``path`` in place (see :func:`edit`)."""
    return edit(path).append(tensors).commit()


@dataclass
class _Plan:
    """The edited file, before anything is written: the index entries kept in place, the
    tensors to move and append, the KV section, and where writing starts."""

    kept: list[IndexEntry]
    moved: list[Any]
    appended: list[tuple[str, Tensor]]
    kv: dict[str, KVValue]
    order: dict[str, int]
    start: int


def _whole(container: Container, kept: dict[str, str]) -> None:
    """Drop composites whole: the members of a dropped head leave ``kept`` (file name -> new
    name) with it; a member dropped while its head stays is refused (CV-EDT-03)."""
    for i in container.write_order():
        e = container.entries[i]
        if not isinstance(container.tensor(e.name).descriptor.layout, CompositeHead):
            continue
        members = container.composite(e.name).members
        if e.name not in kept:
            for m in members:
                kept.pop(m.name, None)
            continue
        for m in members:
            if m.name not in kept:
                raise RuleViolation("CV-EDT-03", "a composite's member is not dropped while its head stays",
                                    path=f"file -> tensor {m.name!r}", offset=m.entry.descriptor_offset,
                                    expected=f"drop its head {e.name!r} (the composite whole) or keep it")


def _new_name(name: Any) -> None:
    """A tensor's new name is a non-empty str of well-formed UTF-8 (HF-IDX-11/12): checked
    before anything is written."""
    if not isinstance(name, str):
        raise ArgumentError("rename", "a tensor name is a str", actual=type(name).__name__, expected="str")
    try:
        raw = name.encode("utf-8")
    except UnicodeEncodeError:
        raise RuleViolation("HF-IDX-12", "a tensor name is not well-formed UTF-8", path="file -> tensor",
                            actual=repr(name)) from None
    if not raw:
        raise RuleViolation("HF-IDX-11", "a tensor name is empty", path="file -> tensor", actual="''",
                            expected=">= 1 byte")


def _some(names: Iterable[str], shown: int = 20) -> str:
    """The first ``shown`` names, for a message."""
    return ", ".join(itertools.islice(names, shown))


def _plan(container: Container, changes: Sequence[tuple[str, Any, Any]]) -> _Plan:
    names = {name: name for name in container.names}  # current name -> name in the file ("" appended)
    kv = dict(container.kv)
    appended: list[tuple[str, Tensor]] = []
    for verb, first, second in changes:
        if verb == "set":
            encode_kv({first: second})  # the key's and value's rules (HF-META-09/10/19), before anything is written
            kv[first] = second
        elif verb == "delete":
            if first not in kv:
                raise NameNotFound("delete", "no KV entry of that key in the file", actual=first,
                                   expected=_some(kv) or "(the file has no KV entry)")
            del kv[first]
        elif verb == "append" or first in names:
            clash = second if verb == "rename" and second != first else first if verb == "append" else None
            if clash in names:
                raise RuleViolation("HF-IDX-13", "two tensors would have the same name",
                                    path=f"file -> tensor {first!r}", actual=clash)
            if verb == "rename":
                _new_name(second)
                names = {second if k == first else k: v for k, v in names.items()}
            elif verb == "drop":
                del names[first]
            else:
                appended.append((first, second))
                names[first] = ""
        else:
            raise NameNotFound(verb, "no tensor of that name in the file", actual=first,
                               expected=_some(names) or "(the file holds no tensor)")
    new_name = {old: new for new, old in names.items() if old}
    _whole(container, new_name)
    start = min([e.descriptor_offset for e in container.entries if e.name not in new_name] + [container.region_end])
    kept, moved = [], []
    for i in container.write_order():
        e = container.entries[i]
        if e.name not in new_name:
            continue
        if e.descriptor_offset < start:
            kept.append(e.model_copy(update={"name": new_name[e.name]}))
        else:  # after a dropped tensor: moved down
            moved.append((new_name[e.name], container.tensor(e.name)))
    order = {new_name[name]: i for i, name in enumerate(container.names) if name in new_name}
    return _Plan(kept, moved, appended, kv, order, start)


def _open(path: str) -> tuple[int, Container]:
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError as exc:
        raise path_error("path", f"cannot open {path}: {exc.strerror or exc}", exc, path) from None
    opened = False
    try:
        size = os.fstat(fd).st_size
        data: Any = mmap.mmap(fd, 0, access=mmap.ACCESS_READ) if size else b""
        container = open_container(data)
        container.validate(data=False)  # the layout the edited file keeps (level V, contents aside)
        opened = True
    finally:
        if not opened:
            os.close(fd)
    return fd, container


def _header_bytes(header: FileHeader, container: Container) -> bytes:
    """``header`` as the file holds it (with what a newer minor's reader skipped)."""
    skipped = container.skipped
    return bytes(FILE_HEADER.build({**header.to_wire(), "reserved": skipped.reserved,
                                    "reserved_header": skipped.reserved_header}))


def _commit(path: str, changes: Sequence[tuple[str, Any, Any]]) -> Summary:
    summary = Summary(recovered=recover(path))
    fd, container = _open(path)
    try:
        summary.old_size = summary.new_size = container.size
        if not changes:
            return summary
        plan = _plan(container, changes)
        summary.journal = write_journal(path, container.view, plan.start)
        sink = _FileAt(fd, plan.start)
        writer = ContainerWriter.resumed(cast(BinaryIO, sink), container.header, plan.start, plan.kept,
                                         container.skipped)
        for name, tensor in plan.moved:
            padded = not tensor.buffers and tensor.entry.data_offset != tensor.placement.descriptor_end
            writer.add(name, tensor.descriptor, tensor.buffers, permissive=container.permissive, head_padding=padded)
        for name, tensor in plan.appended:
            writer.add(name, tensor.descriptor, tensor.buffers)
            for member in iterate_members(tensor.members):
                writer.add(member.name or "", member.descriptor, member.buffers)
        last = len(plan.order)
        writer.entries.sort(key=lambda e: plan.order.get(e.name, last))  # the file's index order, then appended
        if writer.header.tensor_count_hint != UNKNOWN_COUNT:  # a stated count is the new one (HF-HDR-16)
            writer.header = writer.header.model_copy(update={"tensor_count_hint": len(writer.entries)})
        header_bytes = _header_bytes(writer.header, container)
        writer.finish(plan.kv)
        if header_bytes != bytes(container.view[:HEADER_LENGTH]):
            sink.written += pwrite_all(fd, header_bytes, 0)
        os.ftruncate(fd, writer.position)
        os.fsync(fd)
        summary.written, summary.new_size = sink.written, writer.position
        summary.changes = len(changes)
    except (HurrayDeclError, OSError) as exc:
        if os.path.exists(journal_path(path)):  # refused or failed while writing: the old version back
            os.close(fd)
            fd = -1
            recover(path)
        if isinstance(exc, OSError):
            raise path_error("path", f"cannot write {path}: {exc.strerror or exc}", exc, path) from None
        raise
    finally:
        if fd >= 0:
            os.close(fd)
    settle(path)  # the commit: the journal deleted
    return summary


__all__ = ["TYPES", "Edit", "Summary", "append", "edit", "journal_path", "kv_value", "pending", "recover"]
