"""The staged writers of ``convert`` and ``quantize``: every output a conversion makes, written
under a temporary name beside its target (:mod:`hurray_decl.cli.outputs`) and renamed into place
once everything is converted and checked; a failure leaves nothing behind.

Hurray outputs go through :func:`write_hurray` and :class:`HurrayOut`, the one place that knows
their forms: a ``.hrry`` container, ``NAME.bin`` (one tensor: the descriptor, and its buffers in
``NAME.buf0.bin``, ``NAME.buf1.bin`` ...), or a folder of those with a ``manifest.json``. The
others: a ``.npz`` written array by array (:class:`NpzOut`), a GGUF
file or its splits (:func:`write_gguf`, converting each tensor again as it writes it), an ONNX
model (:func:`model_bytes`), safetensors files or shards (:func:`write_shards`,
:func:`write_safetensors_streamed`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Protocol

from hurray_decl.cli import outputs
from hurray_decl.cli.common import FileProblem, UsageError, progress
from hurray_decl.cli.report import Row, missing_tensors


@dataclass(frozen=True)
class NamedTensor:
    name: str
    descriptor: Any
    buffers: list[bytes] | list[memoryview]


@dataclass
class Staging:
    """Outputs written under temporary names beside their targets, renamed into place by
    :meth:`commit`, files and folders alike through :class:`hurray_decl.cli.outputs.Batch`
    (recognisable temporaries, stale ones of killed runs removed, the free space checked, the
    permissions of a replaced file kept)."""

    files: Any = None

    def __post_init__(self) -> None:
        if self.files is None:
            self.files = outputs.Batch()

    def path(self, target: Path, folder: bool = False, size: int = 0) -> Path:
        parent = target.parent
        if not parent.is_dir():
            raise FileProblem(f"cannot write {target}: the folder {parent} does not exist")
        if target.is_dir() and (not folder or any(target.iterdir())):
            raise FileProblem(f"cannot write {target}: it is {'a non-empty' if folder else 'a'} folder")
        if folder and target.exists() and not target.is_dir():
            raise FileProblem(f"cannot write the folder {target}: a file of that name exists")
        if not folder:
            return Path(self.files.file(target, size))
        return Path(self.files.folder(target))

    def write(self, target: Path, data: bytes) -> None:
        self.path(target, size=len(data)).write_bytes(data)

    def commit(self) -> None:
        self.files.commit()

    def discard(self) -> None:
        self.files.discard()


@contextmanager
def staging() -> Iterator[Staging]:
    """Outputs staged in the block and renamed into place when it ends; on any failure (SIGTERM
    and SIGHUP included, as :func:`hurray_decl.cli.outputs.batch` catches them) all removed."""
    with outputs.batch() as files:
        stage = Staging(files)
        try:
            yield stage
            stage.commit()
        finally:
            stage.discard()


def commit(write: Callable[[Staging], Any]) -> Any:
    """Stage every output with ``write``, then rename all of them (``write``'s result returned)."""
    with staging() as stage:
        return write(stage)


class NotWritten(Exception):
    """Raised inside :func:`staging` when the output must not be kept (nothing converted, or a
    tensor refused without ``--partial``): the staged output is discarded."""


def kept(rows: Sequence[Row], partial: bool) -> bool:
    """Whether a conversion's output is kept: something converted and, without ``partial``, every tensor."""
    return any(r.converted for r in rows) and (partial or not missing_tensors(rows))


class Sink(Protocol):
    """An output written as a conversion pushes its tensors, one at a time."""

    takes_kv: bool
    """Whether :meth:`finish` writes KV entries (give None otherwise: they are not computed)."""

    def put(self, name: str, value: Any) -> None: ...

    def finish(self, kv: dict[str, Any] | None) -> str: ...


# --- Hurray -------------------------------------------------------------------------------------

def descriptor_files(folder_or_bin: Path, tensor: NamedTensor, stem: str) -> list[tuple[Path, bytes]]:
    from hurray_decl.hurray.tensor import write_tensor_descriptor

    files = [(folder_or_bin / f"{stem}.bin", write_tensor_descriptor(tensor.descriptor))]
    files += [(folder_or_bin / f"{stem}.buf{i}.bin", bytes(b)) for i, b in enumerate(tensor.buffers)]
    return files


def container_package() -> None:
    """Refuse .hrry files in a build without ``hurray_decl.hurray.container``."""
    if find_spec("hurray_decl.hurray.container") is None:
        raise FileProblem("this build has no .hrry container support; use -o NAME.bin for one tensor "
                          "or -o FOLDER for a folder of descriptors and buffers")


class HurrayOut:
    """Hurray tensors staged at ``target`` as they come (:class:`Sink`): a ``.hrry`` container,
    written by the one-pass writer of ``hurray_decl.hurray.container`` (KV entries last), or a
    folder of descriptor and buffer files with a ``manifest.json``; no tensor is held."""

    def __init__(self, target: Path, stage: Staging, count: int | None = None) -> None:
        self.target, self.count = target, 0
        self.manifest: list[dict[str, Any]] = []
        self.used: set[str] = set()
        self.stream: Any = None
        self.takes_kv = target.suffix == ".hrry"
        if self.takes_kv:
            container_package()
            from hurray_decl.hurray.container.writer import ContainerWriter

            self.stream = stage.path(target).open("wb")
            self.writer = ContainerWriter(self.stream, tensor_count_hint=count)
        else:
            self.folder = stage.path(target, folder=True)

    def put(self, name: str, value: Any) -> None:
        """One tensor: ``value`` is its ``(descriptor, buffers)``."""
        self.count += 1
        if self.stream is not None:
            self.writer.add(name, *value)
            return
        stem = re.sub(r"[^A-Za-z0-9._-]", "_", name) or "tensor"
        while stem in self.used:
            stem += "_"
        self.used.add(stem)
        files = descriptor_files(self.folder, NamedTensor(name, *value), stem)
        for path, data in files:
            path.write_bytes(data)
        self.manifest.append({"name": name, "descriptor": files[0][0].name, "buffers": [p.name for p, _ in files[1:]]})

    def finish(self, kv: dict[str, Any] | None) -> str:
        if self.stream is not None:
            self.writer.finish(kv or None)
            self.stream.close()
            return f"the container {self.target}" + (f" ({len(kv)} KV entries)" if kv else "")
        (self.folder / "manifest.json").write_text(json.dumps({"tensors": self.manifest}, indent=2) + "\n",
                                                   encoding="utf-8")
        return f"the folder {self.target} ({self.count} tensors and manifest.json)"

    def close(self) -> None:
        if self.stream is not None:
            self.stream.close()


@contextmanager
def hurray_out(target: Path, stage: Staging, count: int | None = None) -> Iterator[HurrayOut]:
    out = HurrayOut(target, stage, count)
    try:
        yield out
    finally:
        out.close()


def write_hurray(target: Path, tensors: Iterable[NamedTensor], stage: Staging, kv: dict[str, Any] | None = None) -> str:
    """Stage Hurray tensors at ``target``: a ``.hrry`` container (with the KV entries ``kv``), one
    ``NAME.bin`` tensor, or a folder."""
    if target.suffix == ".bin":
        tensors = list(tensors)
        if len(tensors) != 1:
            raise UsageError(f"{len(tensors)} tensors do not fit one {target.name}: give -o FOLDER or -o NAME.hrry")
        files = descriptor_files(target.parent, tensors[0], target.stem)
        for path, data in files:
            stage.write(path, data)
        return ", ".join(str(p) for p, _ in files)
    with hurray_out(target, stage, len(tensors) if isinstance(tensors, Sequence) else None) as out:
        for tensor in tensors:
            out.put(tensor.name, (tensor.descriptor, tensor.buffers))
        return out.finish(kv)


def hurray_whole(target: Path, results: Sequence[tuple[str, Any]], kv: dict[str, Any]) -> str:
    """Converted ``(descriptor, buffers)`` pairs, held, staged as Hurray at ``target``."""
    return str(commit(lambda stage: write_hurray(target, [NamedTensor(n, *t) for n, t in results], stage, kv)))


class HurraySink:
    """Hurray tensors to ``-o`` as ``quantize`` makes them: a ``.hrry`` container written tensor by
    tensor into a temporary file (renamed by :meth:`finish`), or ``NAME.bin`` / a folder through
    :func:`write_hurray`."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self.count = 0
        self.held: list[NamedTensor] = []
        self._writer: Any = None

    @contextmanager
    def open(self) -> Iterator[HurraySink]:
        if self.target.suffix != ".hrry":
            yield self
            return
        from hurray_decl.hurray.container.writer import ContainerWriter

        with outputs.atomic(self.target) as temporary, temporary.open("wb") as stream:
            self._writer = ContainerWriter(stream)
            yield self

    def add(self, name: str, descriptor: Any, buffers: Sequence[Any]) -> None:
        self.count += 1
        if self._writer is not None:
            self._writer.add(name, descriptor, buffers)
        else:
            self.held.append(NamedTensor(name, descriptor, list(buffers)))

    def finish(self, kv: dict[str, Any]) -> str:
        if self._writer is not None:
            self._writer.finish(kv or None)
            return f"the container {self.target}"
        return str(commit(lambda stage: write_hurray(self.target, self.held, stage)))


# --- npz and ONNX ---------------------------------------------------------------------------------

class NpzOut:
    """Arrays staged in a ``.npz`` as they come (:class:`Sink`): each written into the archive (as
    ``NAME.npy``, uncompressed, as ``numpy.savez`` writes it) and dropped before the next is made."""

    takes_kv = False

    def __init__(self, target: Path, archive: Any) -> None:
        self.target, self.archive, self.count = target, archive, 0

    def put(self, name: str, value: Any) -> None:
        import numpy as np

        self.count += 1
        with self.archive.open(f"{name}.npy", "w", force_zip64=True) as member:
            np.lib.format.write_array(member, np.ascontiguousarray(value), allow_pickle=False)

    def finish(self, kv: dict[str, Any] | None) -> str:
        return f"{self.target} ({self.count} arrays)"


@contextmanager
def npz_out(target: Path, stage: Staging) -> Iterator[NpzOut]:
    import zipfile

    with zipfile.ZipFile(stage.path(target), "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        yield NpzOut(target, archive)


def model_bytes(model: Any, check: bool) -> bytes:
    """An ONNX model serialized, its onnx-light values checked first when ``check``."""
    if check:
        from hurray_decl.onnx_light import check_model_values

        check_model_values(model)
    try:
        return bytes(model.SerializeToString())
    except ValueError as err:  # protobuf refuses messages of 2 GiB and more
        raise FileProblem(f"the ONNX model is too large for one protobuf message ({err})") from None


def write_model(target: Path, model: Any, *, check: bool = False) -> str:
    """An ONNX model to ``target`` (a temporary file renamed once complete), its onnx-light values
    checked first when ``check``."""
    outputs.write_bytes(target, model_bytes(model, check))
    return str(target)


def stage_model(target: Path, model: Any, *, check: bool = False) -> None:
    """An ONNX model staged at ``target`` with the rest of a conversion's outputs."""
    commit(lambda stage: stage.write(target, model_bytes(model, check)))


# --- GGUF -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PlannedGguf:
    """A tensor the gguf target takes, as the first pass leaves it: the source item, the conversion,
    and the name, GGML type, byte shape and size of its GGUF form (the converted bytes themselves
    dropped; the second pass converts the item again and writes the bytes)."""

    item: Any
    convert: Callable[[Any], Any]
    name: str
    type_name: str
    byte_shape: tuple[int, ...]
    nbytes: int

    def data(self) -> Any:
        """The tensor's GGUF bytes, converted again, as a uint8 array of :attr:`byte_shape`."""
        import numpy as np

        from hurray_decl.errors import HurrayDeclError

        try:
            tensor = self.convert(self.item)
        except HurrayDeclError as err:  # converted in the first pass: its bytes are not the same now
            raise FileProblem(f"the source changed during the conversion: {self.name} is now refused "
                              f"({err}); nothing written") from None
        data = np.asarray(tensor.data, np.uint8).reshape(tensor.byte_shape)
        if (tensor.name, tensor.type_name, data.shape) != (self.name, self.type_name, self.byte_shape):
            raise FileProblem(f"the source changed during the conversion: {self.name} is now "
                              f"{tensor.type_name} {list(data.shape)} bytes, not {self.type_name} "
                              f"{list(self.byte_shape)}; nothing written")
        return data


def planned(convert: Callable[[Any], Any]) -> Callable[[Any], PlannedGguf]:
    """The first pass of the gguf target: ``convert`` (an item to a ``GgufTensor``) run for what it
    refuses and for the GGML type it picks, both of which depend on the values (the narrowest type
    that holds them exactly), so no shape-only rule gives them; its bytes are dropped at once."""

    def plan(item: Any) -> PlannedGguf:
        tensor = convert(item)
        return PlannedGguf(item, convert, tensor.name, tensor.type_name, tensor.byte_shape, int(tensor.data.nbytes))

    return plan


def write_gguf(target: Path, entries: Sequence[Any], tensors: Sequence[PlannedGguf], split_max_size: int = 0) -> str:
    """Write a ``.gguf`` file with gguf's ``GGUFWriter``: ``entries`` (their GGUF types kept) and
    ``tensors`` (:class:`PlannedGguf`), through a temporary file renamed once complete
    (``cli.outputs.atomic``). Every tensor's info goes first, from the plan; then each tensor is
    converted again, written and dropped before the next, so memory holds one tensor at a time.
    ``write_tensor_data`` pads as ``write_tensors_to_file`` does: the same bytes. With
    ``split_max_size``, GGUFWriter's own splitting writes ``<stem>-%05d-of-%05d.gguf`` files
    of at most that many bytes of tensor data (the split keys in each) into a temporary folder
    beside ``target``; they are renamed into place together once all are complete."""
    if not split_max_size:
        with outputs.atomic(target) as temporary:
            _write_gguf_into(temporary, entries, tensors)
        return f"{target} ({len(tensors)} tensors, {len(entries)} KV entries)"
    import os

    with outputs.batch() as stage:  # a staging folder named like the temporaries: a killed run's is removed later
        folder = stage.folder(outputs.target(target).parent / f"{target.name}.splits")
        _write_gguf_into(folder / target.name, entries, tensors, split_max_size)
        made = sorted(folder.iterdir())
        with outputs.batch() as files:
            for path in made:
                os.replace(path, files.file(target.parent / path.name))
        stage.discard()  # the folder is empty now: removed, never renamed into place
    return f"{target.parent / made[0].name} and {len(made) - 1} more ({len(tensors)} tensors, {len(entries)} KV " \
           "entries)"


def _write_gguf_into(path: Path, entries: Sequence[Any], tensors: Sequence[PlannedGguf],
                     split_max_size: int = 0) -> None:
    import numpy as np
    from gguf import GGMLQuantizationType, GGUFWriter

    from hurray_decl.convert.metadata import write_gguf_entries

    architecture = next((e.value for e in entries if e.key == "general.architecture" and e.type == "STRING"), b"")
    alignment = next((e.value for e in entries if e.key == "general.alignment" and e.type == "UINT32"), None)
    writer = GGUFWriter(path, architecture.decode("utf-8", "replace"), split_max_size=split_max_size)
    if alignment:  # the entry itself is one of ``entries``
        writer.data_alignment = int(alignment)
    write_gguf_entries(writer, entries)
    for tensor in tensors:
        writer.add_tensor_info(tensor.name, tensor.byte_shape, np.dtype(np.uint8), tensor.nbytes,
                               raw_dtype=GGMLQuantizationType[tensor.type_name])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for tensor in progress(tensors, "write"):
        data = tensor.data()
        writer.write_tensor_data(data)
        del data  # dropped before the next tensor is converted
    writer.close()


# --- safetensors ----------------------------------------------------------------------------------

def write_shards(target: Path, arrays: list[tuple[str, Any]], metadata: dict[str, str],
                 split_max_size: int | None) -> str:
    """Arrays to one safetensors file, or with ``split_max_size`` to shards of at most that many
    bytes and their index, all renamed into place once every one is written. ``arrays`` is
    emptied (its arrays are dropped as soon as they are written)."""
    from hurray_decl.convert.safetensors import INDEX_SUFFIX, index_text, shard_plan, write_safetensors

    written = str(target)
    plan = {target.name: [name for name, _ in arrays]}
    stem = target.name[: -len(".safetensors")] if target.name.endswith(".safetensors") else target.name
    if split_max_size:
        plan = shard_plan([(name, values.nbytes) for name, values in arrays], split_max_size, stem)
    by_name = dict(arrays)
    arrays.clear()
    with outputs.batch() as files:  # every shard and the index appear once all are written
        for shard, names in plan.items():
            write_safetensors(files.file(target.parent / shard), [(n, by_name[n]) for n in names], metadata)
        if len(plan) > 1:
            index = target.parent / f"{stem}{INDEX_SUFFIX}"
            files.file(index).write_text(index_text(plan, sum(v.nbytes for v in by_name.values())))
            written = f"{index} and {len(plan)} shards"
    return written


def write_safetensors_streamed(target: Path, planned: Sequence[tuple[str, str, tuple[int, ...]]],
                               arrays: Iterator[Any]) -> str:
    """A safetensors file whose header is ``planned`` (name, dtype, shape), its arrays written as
    ``arrays`` makes them, one at a time."""
    from hurray_decl.convert.safetensors import write_safetensors_stream

    with outputs.atomic(target) as temporary, open(temporary, "wb") as stream:
        write_safetensors_stream(stream, planned, arrays)
    return str(target)
