"""Output files written atomically: a temporary file in the target's folder, renamed over the
target once complete, removed on any failure, so that a reader never sees a partial file and a
failed command leaves nothing behind. Callers check their input before calling :func:`target`."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hurray_decl.cli.common import FileProblem


def target(path: str | os.PathLike, what: str = "-o") -> Path:
    """``path`` checked as a file to create or replace: not a folder, in a folder that exists."""
    out = Path(path)
    if out.is_dir():
        raise FileProblem(f"argument {what}: {out} is a folder; give the name of a file to write")
    folder = out.parent
    if not folder.is_dir():
        raise FileProblem(f"argument {what}: no such folder: {folder}")
    if not os.access(folder, os.W_OK):
        raise FileProblem(f"argument {what}: the folder {folder} is not writable")
    return out


@contextmanager
def atomic(path: str | os.PathLike, what: str = "-o") -> Iterator[Path]:
    """A temporary path beside ``path``; renamed to ``path`` when the block completes, removed if it fails."""
    out = target(path, what)
    fd, name = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".part")
    os.close(fd)
    temporary = Path(name)
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.chmod(temporary, 0o666 & ~mask)  # the permissions a plain open() would give
        yield temporary
        os.replace(temporary, out)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_bytes(path: str | os.PathLike, data: bytes, what: str = "-o") -> None:
    with atomic(path, what) as temporary:
        temporary.write_bytes(data)


def write_text(path: str | os.PathLike, text: str, what: str = "-o") -> None:
    write_bytes(path, text.encode("utf-8"), what)
