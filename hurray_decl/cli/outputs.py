"""What commands write: output files, verdict lines and JSON documents, each made one way.

**Files** are written atomically: a temporary file in the target's folder, renamed over the target
once complete, removed on any failure (an error, Ctrl-C, SIGTERM), so that a reader never sees a
partial file and a failed command leaves nothing behind. A temporary is named
``.NAME.hurray-decl-HOST-PID.part``: one left by a run that was killed (SIGKILL, a power cut) is
recognised by that name and removed by the next run that writes into the same folder, once its
process is gone. A large output is checked against the folder's free space before it is created
and its blocks are reserved before the first byte is written (``posix_fallocate``), so that a
full disk is a one-line refusal naming the sizes, never a SIGBUS in a memory map. Files get the
permissions a plain ``open()`` gives (the umask's). Callers check their input before calling
:func:`target`: every refusal that can be decided before writing comes before the output exists.

**Verdicts**: one line format for every kind, ``valid: WHAT`` or ``invalid: [CODE] path at byte N:
message`` (:func:`hurray_decl.cli.common.verdict`), and one JSON document (:func:`envelope`): the
file, its kind, the verdict and the error object ``{code, message, path, offset}``.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
import shutil
import signal
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hurray_decl.cli.common import INVALID, OK, FileProblem, Style, UsageError, check_region, progress_printer, verdict

TAG = "hurray-decl"
"""The mark in every temporary's name."""
STALE = re.compile(r"^\..+\.hurray-decl-(?P<host>[^.]*)-(?P<pid>\d+)\.part$")
"""A temporary of this program: ``.NAME.hurray-decl-HOST-PID.part``."""


def host_tag() -> str:
    import socket

    return re.sub(r"[^A-Za-z0-9_]", "_", socket.gethostname())[:40]


NODES = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
         (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"))
"""What an existing output may be that is never replaced (nor written through): only regular
files (and, for the commands that write into one, folders) are outputs."""

INPUT_DESTS = ("input", "source", "buffers", "buffer", "folder")
"""The arguments that name the files a command reads."""
OUTPUT_DESTS = (("output", "-o"), ("json", "--json"), ("out", "--out"))
"""The arguments that name a file or folder a command writes, and their names in messages."""

READ: list[tuple[str, os.stat_result]] = []
"""The files the running command reads (set by :func:`check_outputs`): no output replaces one."""


def refuse_node(out: Path, what: str = "-o") -> os.stat_result | None:
    """``out``'s status when something is there (``lstat``: a link is not followed), refusing
    (exit 2) every node that is not a regular file or a folder, and a file the command reads."""
    try:
        info = os.lstat(out)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return None  # too long, or a folder we may not search: the writer reports it
    for test, name in NODES:
        if test(info.st_mode):
            raise UsageError(f"argument {what}: {out} is {name}; an output replaces only a regular file "
                             "(name a new file)")
    if stat.S_ISREG(info.st_mode):
        for source, read in READ:
            if (read.st_dev, read.st_ino) == (info.st_dev, info.st_ino):
                raise UsageError(f"argument {what}: {out} is the input {source}; write to another file")
    return info


def check_outputs(args: argparse.Namespace) -> None:
    """Before a command does any work: record the files it reads, and refuse (exit 2) an output
    argument naming a device, a FIFO, a socket, a symbolic link or one of those files."""
    READ.clear()
    for dest in INPUT_DESTS:
        value = getattr(args, dest, None)
        for name in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(name, (str, os.PathLike)) and str(name) != "-":
                try:
                    info = os.stat(name)
                except (OSError, ValueError):
                    continue
                if stat.S_ISREG(info.st_mode):
                    READ.append((str(name), info))
    for dest, what in OUTPUT_DESTS:
        value = getattr(args, dest, None)
        if isinstance(value, (str, os.PathLike)):
            refuse_node(Path(value).expanduser(), what)


def target(path: str | os.PathLike, what: str = "-o") -> Path:
    """``path`` checked as a file to create or replace: not a folder, in a folder that exists, and
    nothing :func:`refuse_node` refuses."""
    out = Path(path)
    refuse_node(out, what)
    if out.is_dir():
        raise FileProblem(f"argument {what}: {out} is a folder; give the name of a file to write")
    folder = out.parent
    if not folder.is_dir():
        raise FileProblem(f"argument {what}: no such folder: {folder}")
    if not os.access(folder, os.W_OK):
        raise FileProblem(f"argument {what}: the folder {folder} is not writable")
    return out


def folder_target(path: str | os.PathLike, what: str = "-o", create: bool = False) -> Path:
    """``path`` checked as an existing, writable folder to write files into; with ``create``, a
    missing one in a writable folder too (:func:`write_into` makes it, as ``convert -o DIR`` does)."""
    folder = Path(path)
    refuse_node(folder, what)
    if create and not folder.exists() and not folder.is_symlink():
        folder_target(folder.parent if str(folder.parent) else ".", what)
        return folder
    if not folder.is_dir():
        raise FileProblem(f"argument {what}: {folder} is not a folder" if folder.exists()
                          else f"argument {what}: no such folder: {folder}")
    if not os.access(folder, os.W_OK):
        raise FileProblem(f"argument {what}: the folder {folder} is not writable")
    return folder


def remove_stale(folder: Path) -> list[Path]:
    """Remove the temporaries of earlier runs into ``folder`` whose process is gone (same host)."""
    removed: list[Path] = []
    host = host_tag()
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        match = STALE.match(name)
        if match is None or match["host"] != host or _alive(int(match["pid"])):
            continue
        path = folder / name
        try:
            if path.is_dir() and not path.is_symlink():  # a staging folder (Batch.folder)
                shutil.rmtree(path)
            else:
                path.unlink()
            removed.append(path)
        except OSError:
            pass
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    except OverflowError:
        return False
    return True


def free_space(folder: Path) -> int | None:
    """Bytes an unprivileged writer may still use in ``folder``'s file system, or None if unknown."""
    try:
        info = os.statvfs(folder)
    except (OSError, AttributeError):
        return None
    return info.f_bavail * info.f_frsize


def check_space(out: Path, size: int, what: str = "-o") -> None:
    """Refuse an output of ``size`` bytes that its folder has no room for, naming both sizes (exit 3)."""
    free = free_space(out.parent)
    if free is not None and size > free:
        raise FileProblem(f"argument {what}: {out} would take {size:,} bytes; {out.parent} has {free:,} bytes free")


class _Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP while an output is being written: cleaned up as for Ctrl-C."""


@contextmanager
def _cleanup_on_signals() -> Iterator[None]:
    def stop(number: int, frame: Any) -> None:
        raise _Terminated(signal.Signals(number).name)

    kept: list[tuple[signal.Signals, Any]] = []
    try:
        for number in (signal.SIGTERM, signal.SIGHUP):
            kept.append((number, signal.signal(number, stop)))
    except (ValueError, OSError, AttributeError):  # not the main thread, or no such signal
        pass
    try:
        yield
    finally:
        for number, handler in kept:
            signal.signal(number, handler)


def _temporary(out: Path, folder: bool = False) -> Path:
    """A new temporary beside ``out``: an empty file (the umask's permissions), or a private folder."""
    stem = out.name[:180]
    for attempt in range(100):
        suffix = f"-{attempt}" if attempt else ""
        name = out.parent / f".{stem}{suffix}.{TAG}-{host_tag()}-{os.getpid()}.part"
        try:
            if folder:
                os.mkdir(name, 0o700)
                return name
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return name
    raise FileProblem(f"cannot create a temporary {'folder' if folder else 'file'} beside {out}")


def _reserve(path: Path, size: int, out: Path) -> None:
    """Reserve ``size`` bytes for ``path`` (a full disk refused now, not as a SIGBUS later)."""
    if size <= 0:
        return
    fd = os.open(path, os.O_WRONLY)
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as err:
        if err.errno == errno.ENOSPC or err.errno == errno.EDQUOT:
            free = free_space(out.parent)
            raise FileProblem(f"argument -o: {out} would take {size:,} bytes; {out.parent} has "
                              f"{'an unknown number of' if free is None else f'{free:,}'} bytes free") from None
        if err.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise
    finally:
        os.close(fd)


class Batch:
    """Several output files and folders, each written to its own temporary and all renamed at the end.

    A file that replaces an existing one keeps that file's permission bits (a 0600 file stays
    0600); a new one gets the umask's. A folder is staged private (0700) and gets the umask's
    permissions when renamed."""

    def __init__(self) -> None:
        self.pending: list[tuple[Path, Path, int | None]] = []
        self.folders: list[tuple[Path, Path]] = []

    def file(self, path: str | os.PathLike, size: int = 0, what: str = "-o") -> Path:
        """A temporary for ``path`` (checked with :func:`target`); ``size``: bytes to check and reserve."""
        out = target(path, what)
        remove_stale(out.parent)
        if size:
            check_space(out, size, what)
        temporary = _temporary(out)
        info = refuse_node(out, what)
        self.pending.append((temporary, out, None if info is None else stat.S_IMODE(info.st_mode)))
        _reserve(temporary, size, out)
        return temporary

    def folder(self, path: str | os.PathLike, what: str = "-o") -> Path:
        """A private staging folder for the folder ``path`` (absent or empty), renamed at the end;
        one left by a killed run is removed like a stale temporary (:func:`remove_stale`)."""
        out = Path(path)
        refuse_node(out, what)
        remove_stale(out.parent)
        temporary = _temporary(out, folder=True)
        self.folders.append((temporary, out))
        return temporary

    def commit(self) -> list[Path]:
        mask = os.umask(0)
        os.umask(mask)
        for staged, out in self.folders:
            os.chmod(staged, 0o777 & ~mask)
            os.replace(staged, out)
        for temporary, out, mode in self.pending:
            if mode is not None:
                os.chmod(temporary, mode)
            os.replace(temporary, out)
        done = [out for _, out in self.folders] + [out for _, out, _ in self.pending]
        self.pending, self.folders = [], []
        return done

    def discard(self) -> None:
        for temporary, _, _ in self.pending:
            temporary.unlink(missing_ok=True)
        for staged, _ in self.folders:
            shutil.rmtree(staged, ignore_errors=True)
        self.pending, self.folders = [], []


@contextmanager
def batch() -> Iterator[Batch]:
    """A :class:`Batch` whose files are renamed when the block completes, removed if it fails."""
    files = Batch()
    with _cleanup_on_signals():
        try:
            yield files
            files.commit()
        finally:
            files.discard()


@contextmanager
def atomic(path: str | os.PathLike, what: str = "-o", size: int = 0) -> Iterator[Path]:
    """A temporary path beside ``path``; renamed to ``path`` when the block completes, removed if it
    fails. ``size``: the bytes the output will take, checked against the free space and reserved."""
    with batch() as files:
        yield files.file(path, size, what)


def write_bytes(path: str | os.PathLike, data: bytes, what: str = "-o") -> None:
    with atomic(path, what, size=len(data)) as temporary:
        temporary.write_bytes(data)


def write_text(path: str | os.PathLike, text: str, what: str = "-o") -> None:
    write_bytes(path, text.encode("utf-8"), what)


def write_all(contents: list[tuple[Path, bytes]], what: str = "-o") -> None:
    """Write each (path, bytes) as one batch: every file appears once all are complete, none if one fails."""
    with batch() as files:
        for path, content in contents:
            with open(files.file(path, len(content), what), "r+b") as f:
                f.write(content)


def write_into(folder: Path, contents: list[tuple[str, bytes]], what: str = "-o") -> list[Path]:
    """Write each (name, bytes) into ``folder`` as one batch; a missing folder is made, staged
    under a temporary name with its files and renamed once all are complete (none if one fails)."""
    if folder.is_dir():
        write_all([(folder / name, content) for name, content in contents], what)
        return [folder / name for name, _ in contents]
    with batch() as files:
        staged = files.folder(folder, what)
        for name, content in contents:
            (staged / name).write_bytes(content)
    return [folder / name for name, _ in contents]


def npy_size(dtype: Any, shape: tuple[int, ...]) -> tuple[bytes, int]:
    """The ``.npy`` header for an array of ``dtype`` and ``shape``, and the whole file's size."""
    import io

    import numpy as np

    header = io.BytesIO()
    document = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False, "shape": shape}
    try:
        np.lib.format.write_array_header_1_0(header, document)
    except ValueError:
        header = io.BytesIO()
        np.lib.format.write_array_header_2_0(header, document)
    count = 1
    for extent in shape:
        count *= int(extent)
    return header.getvalue(), len(header.getvalue()) + count * np.dtype(dtype).itemsize


@contextmanager
def npy_memmap(path: str | os.PathLike, dtype: Any, shape: tuple[int, ...]) -> Iterator[Any]:
    """A writable memory map of a new ``.npy`` file at ``path``, written atomically: its size is
    checked against the free space and reserved before the file is mapped."""
    import numpy as np

    header, size = npy_size(dtype, shape)
    with atomic(path, size=size) as temporary:
        with open(temporary, "r+b") as stream:
            stream.write(header)
        count = size - len(header)
        if count:
            out = np.memmap(temporary, dtype=dtype, mode="r+", offset=len(header), shape=shape)
            yield out
            out.flush()
            del out
        else:
            yield np.empty(shape, dtype=dtype)


def write_npy(path: str | os.PathLike, values: Any) -> None:
    """``values`` into a new ``.npy`` file, atomically, its size checked and reserved first."""
    import numpy as np

    _, size = npy_size(values.dtype, tuple(values.shape))
    with atomic(path, size=size) as temporary, open(temporary, "r+b") as stream:
        np.save(stream, values, allow_pickle=False)


# ------------------------------------------------------------------ values into .npy files


def streamed(tensor: Any) -> Any:
    """The checked dequantization of a quantized dense tensor (written through a memory map),
    or None for every other tensor (:meth:`Tensor.numpy` fills the memory map chunk by chunk)."""
    from hurray_decl.hurray.numerics import prepare_dequantize
    from hurray_decl.hurray.tensor import BlockPaged, CompositeHead
    from hurray_decl.hurray.values import SPARSE

    if tensor.descriptor.quantization is None or isinstance(tensor.layout, (*SPARSE, BlockPaged, CompositeHead)):
        return None
    return prepare_dequantize(tensor.descriptor, tensor.buffers)


def npy_values(tensor: Any, key: Any = None) -> Any:
    """A tensor's values (or those of the window ``key``) as a .npy file holds them: types NumPy
    lacks (bfloat16, float8/6/4) widened exactly to float32."""
    import numpy as np

    values = tensor.numpy() if key is None else np.asarray(tensor[key])
    if values.dtype.kind == "V":  # the ml_dtypes types: .npy has no name for them
        values = values.astype(np.float32)
    return values


def write_values(args: argparse.Namespace, tensor: Any, key: Any, label: str) -> None:
    """Write ``tensor``'s values (or the window ``key``) to ``args.output`` as a ``.npy``: every refusal
    first, then the size checked against the free space, then the values (a quantized dense tensor
    through a memory map, with progress on a terminal). ``label``: what the last line names."""
    import numpy as np

    from hurray_decl.hurray.tensor.common import DYNAMIC

    if key is not None:
        check_region(key, tuple(tensor.shape))
    prepared = streamed(tensor) if key is None else None  # every refusal before the output file exists
    if prepared is None and key is None and DYNAMIC not in tensor.shape:  # in bounded chunks, through a memory map
        tensor.check()
        dtype = np.dtype(np.float32) if tensor.dtype.kind == "V" else tensor.dtype  # as npy_values widens
        with npy_memmap(args.output, dtype, tuple(tensor.shape)) as out:
            tensor.numpy(dtype, out=out, progress=progress_printer("dequantize"))
        kind, shape = str(dtype), list(tensor.shape)
    elif prepared is None:
        values = npy_values(tensor, key)
        write_npy(args.output, values)
        kind, shape = str(values.dtype), list(values.shape)
    else:
        shape = list(tensor.shape)
        with npy_memmap(args.output, np.float32, tuple(shape)) as out:
            prepared.run(out, progress=progress_printer("dequantize"))
        kind = "float32"
    print(f"wrote {kind} {shape}{label} to {args.output}")


# ------------------------------------------------------------------ verdicts and JSON documents


def about(args: argparse.Namespace, kind: str) -> dict[str, Any]:
    """What every JSON document of the command line says first: the file (as given) and its kind."""
    return {"file": getattr(args, "input", None), "kind": kind}


def tensor_record(name: str, element: str, shape: Any, status: str, *, method: str = "", byte_size: int = 0,
                  errors: tuple[Any, Any, Any] = (None, None, None), code: str | None = None,
                  reason: str = "", converts_with: Sequence[str] = ()) -> dict[str, Any]:
    """One tensor of a ``convert`` or ``quantize`` report as ``--json`` prints it, whatever the source:
    ``status`` is ``quantized``, ``converted``, ``kept`` or ``skipped`` (``code`` and ``reason`` say
    why, ``converts_with`` the options that would convert a skipped one); ``errors``: the max |error|,
    RMSE and SNR (dB) of a quantized tensor."""
    max_abs_error, rmse, snr_db = errors
    return {"name": name, "type": element, "shape": list(shape), "status": status, "method": method or None,
            "bytes": byte_size or None, "max_abs_error": max_abs_error, "rmse": rmse, "snr_db": snr_db,
            "code": code, "reason": reason or None, "converts_with": list(converts_with) or None}


def envelope(args: argparse.Namespace, kind: str, err: Any = None, **more: Any) -> dict[str, Any]:
    """The JSON document of a verdict: file, kind, verdict, error (None when valid), then ``more``."""
    from hurray_decl.dump.rows import verdict_json  # the verdict and error object of every JSON document

    return {**about(args, kind), **verdict_json(err), **more}


def report_verdict(args: argparse.Namespace, kind: str, check: Callable[[], str]) -> int:
    """Run ``check`` (the summary of a valid input, or a HurrayDeclError) and print the verdict: one
    line, or with ``--format json`` the :func:`envelope`. Argument errors go on to ``main`` (exit 2)."""
    from hurray_decl.errors import ARGUMENT, HurrayDeclError

    as_json = getattr(args, "format", "text") == "json"
    try:
        summary = check()
    except HurrayDeclError as err:
        if err.code == ARGUMENT:
            raise
        if as_json:
            print(json.dumps(envelope(args, kind, err), indent=2))
        else:
            print(Style(sys.stdout).bad(verdict(err)), flush=True)
        return INVALID
    if as_json:
        print(json.dumps(envelope(args, kind, summary=summary), indent=2))
    else:
        print(Style(sys.stdout).good(f"valid: {summary}"))
    return OK


def report_error(args: argparse.Namespace, kind: str, err: Any, *, indent: int | None = 2) -> int:
    """A refusal as the JSON document of ``decode`` (exit 1); argument errors go on to ``main``."""
    from hurray_decl.errors import ARGUMENT

    if err.code == ARGUMENT:
        raise err
    print(json.dumps(envelope(args, kind, err), indent=indent), flush=True)
    return INVALID
