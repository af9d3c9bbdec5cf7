"""Files by path, pyhurray-style: :func:`save`, :func:`load`, :func:`load_kv` and :func:`open_file`.

``open_file(path)`` maps the file and checks its header, index and KV section (level O); a
tensor is read (level T) and its buffers checked when it is first asked for, and its buffers
are memoryviews into the mapped file. KV values come back as plain Python values (lists, not
tuples); :attr:`File.kv_entries` keeps the typed entries, tags included.
"""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hurray_decl.errors import ArgumentError, NameNotFound, path_error
from hurray_decl.hurray.container import Container, KVTag, KVValue, read_container
from hurray_decl.hurray.container.writer import ContainerWriter
from hurray_decl.hurray.quantization import register_project_schemes
from hurray_decl.hurray.tensor.fields import HEADER_FIELDS
from hurray_decl.hurray.tensor.layouts import CompositeHead
from hurray_decl.hurray.values import Tensor, iterate_members, path_of

__all__ = ["File", "load", "load_kv", "open", "open_file", "plain_kv", "save", "tensor_of"]


def plain_kv(entry: KVValue) -> Any:
    """A KV value as a plain Python value: arrays as lists, bytes as bytes."""
    if entry.tag == KVTag.ARRAY:
        return list(entry.value)
    return entry.value


class File:
    """A container opened by path, memory-mapped: a read-only mapping of names to :class:`Tensor`.

    A context manager; iterating gives the names (composite members are reached through their
    head's ``members``, not by their own names), ``name in f`` asks, ``f[name]`` reads.
    """

    def __init__(self, path: str, container: Container) -> None:
        self.path = path
        self._container: Container | None = container
        members: set[str] = set()
        for i in _heads(container):  # only composite heads are read now: the layout tag tells them
            name = container.entries[i].name
            if name not in members:
                members.update(t.name for t in container.composite(name).members)
        self._names = tuple(n for n in container.names if n not in members) if members else container.names

    @property
    def container(self) -> Container:
        if self._container is None:
            raise ArgumentError("file", "the file is closed", actual=self.path, expected="an open file")
        return self._container

    @property
    def names(self) -> tuple[str, ...]:
        """The tensors' names in index order (composite members under their head)."""
        return self._names

    @property
    def kv(self) -> dict[str, Any]:
        """The KV metadata as plain Python values."""
        return {key: plain_kv(entry) for key, entry in self.container.kv.items()}

    @property
    def kv_entries(self) -> dict[str, KVValue]:
        """The typed KV entries (``tag``, ``value``, ``element_tag``)."""
        return dict(self.container.kv)

    def __getitem__(self, name: str) -> Tensor:
        container = self.container
        if name not in self._names:
            container.entry(name)  # a NameNotFound (a KeyError too) naming what the file holds
            raise NameNotFound("name", "a composite member is read through its head's members", actual=name,
                                expected=", ".join(self._names[:20]))
        return tensor_of(container, name, self.path)

    def get(self, name: str, default: Any = None) -> Tensor | Any:
        """Tensor ``name``, or ``default`` when the file holds no tensor of that name (as ``dict.get``)."""
        return self[name] if name in self._names else default

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def keys(self) -> tuple[str, ...]:
        return self._names

    def items(self) -> Iterator[tuple[str, Tensor]]:
        for name in self._names:
            yield name, self[name]

    def close(self) -> None:
        """Forget the mapping; it is unmapped once no tensor's buffers refer to it."""
        self._container = None

    def __enter__(self) -> File:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"File({self.path!r}, {len(self._names)} tensors)"


def _heads(container: Container) -> list[int]:
    """The index positions of the entries whose descriptor's layout_tag byte is a composite head's,
    in index order: one NumPy gather of those bytes (an offset past the file is no head here;
    reading that tensor refuses it with its rule)."""
    entries = container.entries
    at = np.fromiter((e.descriptor_offset for e in entries), dtype=np.uint64, count=len(entries))
    at += np.uint64(HEADER_FIELDS["layout_tag"][0])
    inside = at < np.uint64(len(container.view))
    tags = np.frombuffer(container.view, dtype=np.uint8)[at[inside].astype(np.int64)]
    heads: list[int] = np.flatnonzero(inside)[tags == CompositeHead.tag].tolist()
    return heads


def tensor_of(container: Container, name: str, path: str | None = None) -> Tensor:
    """Tensor ``name`` of an opened container (level T); a composite head with its members.
    ``path`` (the file's) lets the tensor pickle as a reference to the file."""
    record = container.tensor(name)
    if not isinstance(record.descriptor.layout, CompositeHead):
        return Tensor(record.descriptor, record.buffers, name, source=None if path is None else (path, name))
    return _tree(name, record, list(container.composite(name).members), path)


def _tree(name: str, record: Any, rest: list[Any], path: str | None) -> Tensor:
    """A head and its members, taken pre-order from ``rest`` (nested heads take their own)."""
    members = []
    for _ in range(record.descriptor.layout.member_count):
        member = rest.pop(0)
        if isinstance(member.descriptor.layout, CompositeHead):
            members.append(_tree(member.name, member, rest, path))
        else:
            members.append(Tensor(member.descriptor, member.buffers, member.name,
                                  source=None if path is None else (path, member.name)))
    return Tensor(record.descriptor, record.buffers, name, members=members)


def open_file(path: str | Path) -> File:
    """Open a ``.hrry`` file, memory-mapped (header, index and KV checked). A file that cannot
    be opened is the caller's argument: an :class:`ArgumentError` naming the system's reason.
    The project's own private schemes are known here (this package is party to their agreement,
    HQ-EXT-03): :func:`~hurray_decl.hurray.quantization.register_project_schemes`."""
    register_project_schemes()
    text = path_of(path)
    try:
        container = read_container(text)
    except OSError as exc:
        raise path_error("path", f"cannot open {text}: {exc.strerror or exc}", exc, text) from None
    return File(text, container)


def load(path: str | Path, names: Sequence[str] | None = None) -> dict[str, Tensor]:
    """Every tensor of a file (or those of ``names``), by name; buffers map the file."""
    f = open_file(path)
    wanted = f.names if names is None else list(names)
    return {name: f[name] for name in wanted}


def load_kv(path: str | Path) -> dict[str, Any]:
    """A file's KV metadata as plain Python values."""
    return open_file(path).kv


def _temporary(folder: str) -> tuple[int, str]:
    """A new file in ``folder`` for :func:`save` to write (its descriptor and name), created with the
    permissions a plain ``open`` gives a new file (0o666 less the umask), as it keeps them once renamed."""
    for _ in range(100):
        name = os.path.join(folder, f".hurray-{secrets.token_hex(6)}.tmp")
        try:
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666), name
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", folder)


def save(path: str | Path, tensors: Mapping[str, Any], kv: Mapping[str, Any] | None = None, *,
         alignment: int = 4096) -> None:
    """Write ``tensors`` (name -> :class:`Tensor`, array, or any DLPack producer: a torch
    ``state_dict`` as it is, bfloat16 included, with no torch import here) and ``kv`` to
    ``path``: to a temporary file beside it, renamed over it once complete. The file gets the
    permissions a plain ``open`` gives a new file (0o666 less the umask)."""
    text = path_of(path)
    if not isinstance(tensors, Mapping):
        raise ArgumentError("tensors", "save takes a mapping of names to tensors", actual=type(tensors).__name__)
    items = []
    for name, value in tensors.items():
        if not isinstance(value, Tensor):
            dlpack_only = not isinstance(value, np.ndarray) and hasattr(value, "__dlpack__")
            value = Tensor.from_dlpack(value, name=name) if dlpack_only else Tensor.from_numpy(np.asarray(value),
                                                                                                name=name)
        items.append((name, value))
    folder = os.path.dirname(os.path.abspath(text))
    try:
        handle, temporary = _temporary(folder)
    except OSError as exc:
        raise ArgumentError("path", f"cannot write into {folder}: {exc.strerror or exc}", actual=text) from None
    try:
        with os.fdopen(handle, "wb") as stream:
            writer = ContainerWriter(stream, alignment=alignment)
            for name, tensor in items:
                writer.add(name, tensor.descriptor, tensor.buffers)
                for member in iterate_members(tensor.members):
                    writer.add(member.name or "", member.descriptor, member.buffers)
            writer.finish(dict(kv) if kv else None)
        os.replace(temporary, text)
    except OSError as exc:
        raise ArgumentError("path", f"cannot write {text}: {exc.strerror or exc}", actual=text) from None
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


open = open_file
