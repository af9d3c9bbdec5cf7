"""The rollback journal of an edit in place (:mod:`hurray_decl.hurray.container.edit`), and the
recovery step after an interrupted edit.

``FILE.edit-journal`` holds :data:`JOURNAL_HEAD` (the file's old size, its old 64-byte header,
the lowest offset the edit writes), the file's old bytes from that offset to its old end, and a
CRC-32C of everything before it. It is complete and fsynced before the edit writes into the
file, and deleted once the file is written and fsynced: that deletion is the edit's commit.
:func:`recover` is the one recovery step (CV-EDT-01); :func:`pending` is what ``validate`` says
of a file while a journal lies beside it. This module imports nothing heavy.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass
from typing import Any

import construct as cs
import crc32c as crc_package

from hurray_decl.declare.schema import field_offsets
from hurray_decl.errors import ArgumentError, RuleViolation, path_error
from hurray_decl.hurray.container.crc import crc32c
from hurray_decl.hurray.container.declarations import FILE_HEADER, HEADER_LENGTH

JOURNAL_SUFFIX = ".edit-journal"
JOURNAL_MAGIC = b"HRRYEDJ1"
JOURNAL_HEAD = cs.Struct(
    "magic" / cs.Const(JOURNAL_MAGIC),
    "old_size" / cs.Int64ul,  # the file's size before the edit
    "start" / cs.Int64ul,  # the lowest offset the edit writes: old bytes [start, old_size) follow the head
    "header" / cs.Bytes(HEADER_LENGTH),  # the file's header before the edit
)
"""The journal: this head, the old bytes [start, old_size), then the CRC-32C (u32) of both."""
JOURNAL_CRC = cs.Int32ul
HEAD_LENGTH = JOURNAL_HEAD.sizeof()
CRC_LENGTH = JOURNAL_CRC.sizeof()
_HINT_AT, _HINT_SIZE = field_offsets(FILE_HEADER)["tensor_count_hint"]
HINT = slice(_HINT_AT, _HINT_AT + _HINT_SIZE)
"""Header bytes an edit may change (tensor_count_hint): a journal's file is its header but these."""
PIECE = 1 << 20  # the file is written, and the journal read, in pieces of at most 1 MiB

def _text(path: Any) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise ArgumentError("path", "a file path", actual=type(path).__name__, expected="str or pathlib.Path")
    return os.fspath(path)


def journal_path(path: str | os.PathLike[str]) -> str:
    """The journal of an edit of ``path``: ``path`` + ``.edit-journal``, in the same folder."""
    return _text(path) + JOURNAL_SUFFIX


def _sync_folder(path: str) -> None:
    fd = os.open(os.path.dirname(os.path.abspath(path)) or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def pwrite_all(fd: int, data: Any, offset: int) -> int:
    """Write ``data`` at ``offset`` in pieces of at most PIECE bytes, each copied first (the
    source may be a view of the same file, a little further on); returns the bytes written."""
    view = memoryview(data).cast("B")
    done = 0
    while done < len(view):
        piece = bytes(view[done:done + PIECE])
        at = 0
        while at < len(piece):
            at += os.pwrite(fd, piece[at:], offset + done + at)
        done += len(piece)
    return done


@dataclass(frozen=True)
class Journal:
    """A journal read back: the file's old size and header, and where its saved bytes begin."""

    old_size: int
    start: int
    header: bytes
    saved: memoryview


def read_journal(data: Any) -> Journal | None:
    """The journal in ``data`` (bytes or a view), or None when it is incomplete: too short, a
    wrong magic, saved bytes that are not the head's claim, or a CRC-32C that differs (a kill
    while it was written: the file itself was not touched yet)."""
    view = memoryview(data).cast("B")
    if len(view) < HEAD_LENGTH + CRC_LENGTH or bytes(view[:len(JOURNAL_MAGIC)]) != JOURNAL_MAGIC:
        return None
    head = JOURNAL_HEAD.parse(bytes(view[:HEAD_LENGTH]))
    body = len(view) - HEAD_LENGTH - CRC_LENGTH
    if head.start > head.old_size or head.old_size - head.start != body:
        return None
    if crc32c(view[:-CRC_LENGTH]) != JOURNAL_CRC.parse(bytes(view[-CRC_LENGTH:])):
        return None
    return Journal(head.old_size, head.start, bytes(head.header), view[HEAD_LENGTH:HEAD_LENGTH + body])


def _journal_refused(path: str, message: str, **values: Any) -> RuleViolation:
    return RuleViolation("CV-EDT-02", message, path=f"file -> journal {journal_path(path)!r}", **values)


def recover(path: str | os.PathLike[str]) -> str | None:
    """The recovery step after an interrupted edit of ``path``: with a complete journal the old
    bytes are written back and the file cut to its old size ("rolled back"); an incomplete
    journal is deleted, the file never having been touched ("discarded"); None without a
    journal. A journal that does not belong to the file (another header, a file shorter than
    where the edit began) is refused with CV-EDT-02 and nothing is written."""
    text = _text(path)
    journal = journal_path(text)
    try:
        with open(journal, "rb") as stream:  # mapped, not read: it holds every byte the edit overwrote
            size = os.fstat(stream.fileno()).st_size
            raw: Any = mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise path_error("path", f"cannot read the journal {journal}: {exc.strerror or exc}", exc, journal) from None
    found = read_journal(raw)
    if found is None:
        settle(text)
        return "discarded"
    try:
        fd = os.open(text, os.O_RDWR)
    except OSError as exc:
        raise path_error("path", f"cannot open {text}: {exc.strerror or exc}", exc, text) from None
    try:
        header = os.pread(fd, HEADER_LENGTH, 0)
        size = os.fstat(fd).st_size
        unhinted = bytes(header[:HINT.start]) + bytes(header[HINT.stop:])
        if unhinted != found.header[:HINT.start] + found.header[HINT.stop:]:
            raise _journal_refused(text, "the journal was written for another file: its header differs",
                                   actual=header[:16].hex(), expected=found.header[:16].hex())
        if size < found.start:
            raise _journal_refused(text, "the file is shorter than where the journal's edit began", actual=size,
                                   expected=f">= {found.start} bytes")
        pwrite_all(fd, found.saved, found.start)
        pwrite_all(fd, found.header, 0)
        os.ftruncate(fd, found.old_size)
        os.fsync(fd)
    finally:
        os.close(fd)
    settle(text)
    return "rolled back"


def settle(path: str | os.PathLike[str]) -> None:
    """Delete the journal of ``path`` and sync the folder: an edit's commit, a recovery's end."""
    journal = journal_path(path)
    os.unlink(journal)
    _sync_folder(journal)


def pending(path: str | os.PathLike[str], state: str = "") -> RuleViolation | None:
    """CV-EDT-01 when an interrupted edit's journal lies beside ``path`` (``state``: what the file
    as it stands is, for the message), else None."""
    journal = journal_path(path)
    if not os.path.exists(journal):
        return None
    return RuleViolation("CV-EDT-01", "an interrupted edit left its journal; the next edit of the file recovers it "
                         f"(hurray-decl edit FILE){'; ' + state if state else ''}", path=f"file -> journal {journal!r}")


def write_journal(path: str, view: memoryview, start: int) -> int:
    """The rollback journal for an edit of ``path`` (whose bytes are ``view``) that writes from
    ``start`` on, fsynced with its folder; returns the bytes written."""
    journal = journal_path(path)
    size = len(view)
    head = JOURNAL_HEAD.build({"old_size": size, "start": start, "header": bytes(view[:HEADER_LENGTH])})
    fd = os.open(journal, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        crc = crc32c(head)
        written = pwrite_all(fd, head, 0)
        for at in range(start, size, PIECE):
            piece = view[at:min(size, at + PIECE)]
            crc = _crc_more(crc, piece)
            written += pwrite_all(fd, piece, written)
        written += pwrite_all(fd, JOURNAL_CRC.build(crc), written)
        os.fsync(fd)
    finally:
        os.close(fd)
    _sync_folder(journal)
    return written


def _crc_more(crc: int, data: Any) -> int:
    """CRC-32C (HF-DATA-18, as :func:`crc32c`) of what came before, continued over ``data``."""
    return crc_package.crc32c(data, crc)


__all__ = ["HINT", "JOURNAL_HEAD", "Journal", "journal_path", "pending", "pwrite_all", "read_journal", "recover",
           "settle", "write_journal"]
