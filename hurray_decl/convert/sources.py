"""Models opened by path, whatever their format, as one mapping of names to tensors:
``hd.open``, ``hd.load`` and ``hd.load_kv``.

A ``.hrry`` container opens as :class:`~hurray_decl.hurray.files.File`. A ``.gguf`` file (any
split of a split model: every split found and checked first, CV-SHD-01/03/05,
:func:`~hurray_decl.convert.gguf_splits.find_splits`) and a safetensors file or a sharded model's
``model.safetensors.index.json`` (every shard's header checked against the index first,
CV-SHD-01..04/06, :class:`~hurray_decl.convert.safetensors.ShardedSafetensors`) open as a
:class:`Model`: the tensors ``hurray-decl convert SOURCE -o NAME.hrry`` writes, under the same
names, with the same descriptors and buffers (GPTQ/AWQ/compressed-tensors weights as per-block
affine, gpt-oss MXFP4 as MXFP, bitsandbytes NF4 as NF4), and the KV entries it writes, as plain
values. Each tensor is converted when it is asked for, from its shard or split (a tensor with
no exact Hurray form is refused then, with its rule: ``convert`` lists it as skipped), so
memory holds the tensors asked for, not the model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from hurray_decl.errors import ArgumentError, NameNotFound, path_error
from hurray_decl.hurray.files import File, open_file, plain_kv
from hurray_decl.hurray.values import Tensor, path_of

__all__ = ["Model", "load", "load_kv", "open", "open_model"]

_GGUF_MAGIC = b"GGUF"
_HEAD = 16
"""Bytes read to tell the formats apart (a safetensors header length and its ``{``)."""


class Model(Mapping[str, Tensor]):
    """A GGUF or safetensors model opened by :func:`open_model`: a read-only mapping of names
    to :class:`Tensor`, in the source's order (a split or sharded model's splits or shards in
    turn), with :attr:`kv`. A context manager, like :class:`~hurray_decl.hurray.files.File`."""

    def __init__(self, path: str, names: Sequence[str], read: Callable[[str], Tensor], kv: dict[str, Any],
                 close: Callable[[], None]) -> None:
        self.path = path
        self._names = tuple(names)
        self._read: Callable[[str], Tensor] | None = read
        self._kv = kv
        self._close = close

    @property
    def names(self) -> tuple[str, ...]:
        return self._names

    @property
    def kv(self) -> dict[str, Any]:
        """The KV entries ``convert`` writes into the container, as plain Python values."""
        return dict(self._kv)

    def __getitem__(self, name: str) -> Tensor:
        if self._read is None:
            raise ArgumentError("file", "the file is closed", actual=self.path, expected="an open file")
        if name not in self._names:
            raise NameNotFound("name", f"{self.path} has no tensor {name!r}", actual=name,
                               expected=", ".join(self._names[:20]))
        return self._read(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def close(self) -> None:
        """Close the source (tensors read before keep their buffers)."""
        if self._read is not None:
            self._read = None
            self._close()

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Model({self.path!r}, {len(self._names)} tensors)"


def _gguf_model(path: str) -> Model:
    from hurray_decl.convert.gguf import read_gguf_model
    from hurray_decl.convert.metadata import container_kv
    from hurray_decl.convert.tensors import gguf_to_hurray

    model = read_gguf_model(path)
    tensors = model.tensors
    infos = [(t.name, t.type_name) for t in tensors]
    at = {name: k for k, (name, _) in enumerate(infos)}
    kv = {key: plain_kv(entry) for key, entry in container_kv(model.kv, infos).items()}

    def read(name: str) -> Tensor:
        converted: Any = gguf_to_hurray(tensors[at[name]])  # a Tensor, or (descriptor, buffers)
        descriptor, buffers = (converted.descriptor, converted.buffers) if isinstance(converted, Tensor) \
            else converted
        return Tensor(descriptor, buffers, name)

    return Model(path, [name for name, _ in infos], read, kv, lambda: None)


def _safetensors_model(path: str) -> Model:
    from hurray_decl.convert.checkpoints import read_checkpoint
    from hurray_decl.convert.safetensors import metadata_to_kv

    checkpoint = read_checkpoint(path)
    items = {item.name: item for item in checkpoint.items}
    return Model(path, list(items), lambda name: items[name].hurray(), dict(metadata_to_kv(checkpoint.metadata)),
                 checkpoint.close)


def open_model(path: str | Path) -> File | Model:
    """Open a ``.hrry`` container (:class:`~hurray_decl.hurray.files.File`), or a GGUF or
    safetensors model, split or sharded models as one (:class:`Model`; see the module's
    documentation), told apart by their first bytes (an index by its name,
    ``*.safetensors.index.json``). A path that cannot be opened is a :class:`PathError`."""
    from hurray_decl.convert.safetensors import is_index, is_safetensors

    text = path_of(path)
    try:
        with Path(text).open("rb") as stream:
            head = stream.read(_HEAD)
    except OSError as exc:
        raise path_error("path", f"cannot open {text}: {exc.strerror or exc}", exc, text) from None
    if head.startswith(_GGUF_MAGIC):
        return _gguf_model(text)
    if is_index(text) or is_safetensors(head):
        return _safetensors_model(text)
    return open_file(text)


def load(path: str | Path, names: Sequence[str] | None = None) -> dict[str, Tensor]:
    """Every tensor of a model (or those of ``names``), by name (:func:`open_model`)."""
    with open_model(path) as f:
        return {name: f[name] for name in (f.names if names is None else list(names))}


def load_kv(path: str | Path) -> dict[str, Any]:
    """A model's KV metadata as plain Python values (:func:`open_model`)."""
    with open_model(path) as f:
        return f.kv


open = open_model
