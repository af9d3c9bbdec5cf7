"""DLPack both ways, without importing any array library but NumPy.

:data:`TYPES` is the one table between Hurray element types and DLPack's ``(code, bits)``
(``dlpack.h`` v1.1, ``DLDataTypeCode``); every element type DLPack has is in it, the sub-byte
floats packed as DLPack packs them (element i at bits ``i * bits`` of the little-endian data,
the order Hurray packs them in, HE-14 / HE-18). The sub-byte integers and private types have
no DLPack type (CV-DLP-01).

:func:`export` hands bytes (a view of a file mapping, or a copy) to NumPy's own DLPack
producer, whose capsule, deleter and destructor keep them alive for the consumer and mark a
read-only view read-only (``dltensor_versioned``; a consumer asking for no version gets
``dltensor``), then sets the element's type code (NumPy has no bfloat16 or float8) in the
struct NumPy made. :func:`import_values` reads any producer (an object with ``__dlpack__``,
or a capsule) with ``ctypes`` into a NumPy array of the element's value type, copied, and
calls the producer's deleter (CV-DLP-03 refuses what has no Hurray form).
"""

from __future__ import annotations

import ctypes
import sys
from math import prod
from typing import Any

import numpy as np

from hurray_decl.errors import RuleViolation, UnsupportedError
from hurray_decl.hurray.tables import storage

__all__ = ["KDL_CPU", "TYPES", "export", "import_values", "row_strides"]

KDL_CPU = 1
"""``kDLCPU``: the only device here."""

TYPES: dict[str, tuple[int, int]] = {
    **{f"int{b}": (0, b) for b in (8, 16, 32, 64)}, **{f"uint{b}": (1, b) for b in (8, 16, 32, 64)},
    "float16": (2, 16), "float32": (2, 32), "float64": (2, 64), "bfloat16": (4, 16),
    "complex64": (5, 64), "complex128": (5, 128), "bool": (6, 8),
    "float8_e4m3": (10, 8), "float8_e5m2": (12, 8), "float8_e8m0": (14, 8),
    "float6_e2m3": (15, 6), "float6_e3m2": (16, 6), "float4_e2m1": (17, 4),
}
"""Hurray element type -> DLPack ``(type code, bits)``; bool is DLPack's one byte a value."""

_ELEMENTS = {pair: name for name, pair in TYPES.items()}
_FLOAT4_PAIRS = (17, 4, 2)
"""PyTorch's ``float4_e2m1fn_x2``: code 17, 4 bits, 2 lanes, two values a byte, shape in pairs."""

_IS_COPIED = 2
_VERSIONED, _LEGACY = b"dltensor_versioned", b"dltensor"
_USED = {_VERSIONED: b"used_dltensor_versioned", _LEGACY: b"used_dltensor"}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32), ("dtype", _DataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _Versioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _DELETER), ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


class _Legacy(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]


_api = ctypes.pythonapi
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

_CARRIER = {np.dtype(t).itemsize: t for t in (np.uint8, np.uint16, np.uint32, np.uint64, np.complex128)}
"""A NumPy type of each byte width: the array NumPy exports before its type is set."""


def export(owner: np.ndarray, element: str, shape: tuple[int, ...], strides: tuple[int, ...], *,
           copied: bool, versioned: bool) -> Any:
    """A DLPack capsule of ``owner``'s bytes (a uint8 array) as ``element`` values of ``shape``
    and element ``strides``. NumPy makes the capsule (its deleter and destructor keep ``owner``
    alive as long as the consumer needs it, and it marks a read-only ``owner`` read-only, or
    refuses it through the unversioned protocol); the type, and for packed sub-byte types the
    shape and strides, are then set to the element's."""
    code, bits = TYPES[element]
    if bits >= 8:
        itemsize = bits // 8
        carrier: np.ndarray = np.lib.stride_tricks.as_strided(owner.view(_CARRIER[itemsize]), shape=shape,
                                                  strides=tuple(s * itemsize for s in strides))
    else:
        carrier = owner.reshape((1,) * (len(shape) - 1) + (owner.size,)) if shape else owner.reshape(())
    capsule = carrier.__dlpack__(max_version=(1, 0)) if versioned else carrier.__dlpack__()
    name = _VERSIONED if versioned else _LEGACY
    struct: Any = (_Versioned if versioned else _Legacy).from_address(_api.PyCapsule_GetPointer(capsule, name))
    tensor = struct.dl_tensor
    tensor.dtype = _DataType(code, bits, 1)
    if bits < 8:
        for k, (n, s) in enumerate(zip(shape, strides)):
            tensor.shape[k], tensor.strides[k] = n, s
    if versioned and copied:
        struct.flags |= _IS_COPIED
    return capsule


def host_little_endian() -> bool:
    """Whether stored (little-endian) bytes are this machine's values as they are."""
    return sys.byteorder == "little"


def _memory(address: int, size: int) -> np.ndarray:
    """``size`` bytes at ``address`` as a read-only uint8 array (no copy)."""
    if size == 0:
        return np.empty(0, np.uint8)
    view: np.ndarray = np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(address))
    view.flags.writeable = False
    return view


def import_values(source: Any) -> np.ndarray:
    """The values of a DLPack producer (``__dlpack__``) or capsule, copied into a NumPy array
    of the element type's value dtype (bfloat16 and the float8/6/4 types as ``ml_dtypes``)."""
    capsule = source
    if hasattr(source, "__dlpack__"):
        device = source.__dlpack_device__() if hasattr(source, "__dlpack_device__") else (KDL_CPU, 0)
        if int(device[0]) != KDL_CPU:
            raise UnsupportedError("CV-DLP-03", "DLPack tensors are read from host memory", path="__dlpack_device__",
                                   actual=int(device[0]), expected=f"{KDL_CPU} (kDLCPU)")
        try:
            try:
                capsule = source.__dlpack__(max_version=(1, 1))
            except TypeError:  # a producer of the unversioned protocol
                capsule = source.__dlpack__()
        except (BufferError, RuntimeError) as exc:  # the producer's own refusal (torch: a tensor needing grad)
            raise UnsupportedError("CV-DLP-03", f"the DLPack producer refused to export: {exc}", path="__dlpack__",
                                   actual=type(source).__name__, expected="a producer that exports") from None
    for name in (_VERSIONED, _LEGACY):
        if _api.PyCapsule_IsValid(capsule, name):
            return _read(capsule, name)
    raise UnsupportedError("CV-DLP-03", "not a DLPack capsule (or one already consumed)", path="__dlpack__",
                           actual=type(capsule).__name__, expected="a dltensor_versioned or dltensor capsule")


def _read(capsule: Any, name: bytes) -> np.ndarray:
    address = _api.PyCapsule_GetPointer(capsule, name)
    _api.PyCapsule_SetName(capsule, _USED[name])  # consumed: the capsule no longer deletes it
    struct: Any = (_Versioned if name == _VERSIONED else _Legacy).from_address(address)
    try:
        if name == _VERSIONED and struct.major != 1:
            raise UnsupportedError("CV-DLP-03", "a DLPack tensor of another major version has another layout",
                                   path="__dlpack__ -> version", actual=struct.major, expected=1)
        return _copied(struct.dl_tensor)
    finally:
        if struct.deleter:
            struct.deleter(address)


def _copied(tensor: Any) -> np.ndarray:
    """A copy of the values a DLTensor describes (checked: host memory, one lane, a Hurray element)."""
    dtype = (tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes)
    if tensor.device.device_type != KDL_CPU:
        raise UnsupportedError("CV-DLP-03", "DLPack tensors are read from host memory", path="__dlpack__ -> device",
                               actual=tensor.device.device_type, expected=f"{KDL_CPU} (kDLCPU)")
    pairs = dtype == _FLOAT4_PAIRS
    element = _ELEMENTS.get(dtype[:2]) if dtype[2] == 1 or pairs else None
    if element is None:
        raise UnsupportedError("CV-DLP-03", "the DLPack type has no Hurray element type", path="__dlpack__ -> dtype",
                               actual=f"code {dtype[0]}, bits {dtype[1]}, lanes {dtype[2]}",
                               expected="one lane of " + ", ".join(f"{n} {c}/{b}" for n, (c, b) in TYPES.items()))
    shape = tuple(int(tensor.shape[k]) for k in range(max(0, tensor.ndim)))
    if tensor.ndim < 0 or any(n < 0 for n in shape):
        raise RuleViolation("CV-DLP-03", "a negative rank or dimension", path="__dlpack__ -> shape",
                            actual=list(shape) if tensor.ndim >= 0 else tensor.ndim, expected="sizes of 0 or more")
    row = row_strides(shape)
    strides = tuple(int(tensor.strides[k]) for k in range(len(shape))) if tensor.strides else row
    target = storage.value_dtype(element)
    logical = shape[:-1] + (shape[-1] * 2,) if pairs and shape else shape
    storage.check_output_size(logical, target.itemsize, "a DLPack import")  # HX-01
    base = (tensor.data or 0) + int(tensor.byte_offset)
    bits = TYPES[element][1]
    if bits < 8:  # packed, element i at bits i * bits: contiguous only
        if any(s != r for s, r, n in zip(strides, row, shape) if n > 1):
            raise UnsupportedError("CV-DLP-03", "packed sub-byte DLPack tensors are read when contiguous",
                                   path="__dlpack__ -> strides", actual=list(strides), expected=list(row))
        count = prod(logical)
        codes = storage.unpack_codes(_memory(base, storage.byte_size(element, count)), bits, count)
        return codes.view(target).reshape(logical).copy()
    itemsize = bits // 8
    if prod(shape) == 0:
        return np.empty(shape, target)
    low = sum(s * (n - 1) for s, n in zip(strides, shape) if s < 0)
    high = sum(s * (n - 1) for s, n in zip(strides, shape) if s > 0)
    span = _memory(base + low * itemsize, (high - low + 1) * itemsize)
    viewed = np.lib.stride_tricks.as_strided(span[-low * itemsize:], shape=shape + (itemsize,),
                                             strides=tuple(s * itemsize for s in strides) + (1,), writeable=False)
    stored = np.array(viewed)  # the copy, C-contiguous
    if element == "bool":
        return np.not_equal(stored.reshape(shape), 0)  # DLPack bool: one byte, any non-zero true
    return stored.view(target).reshape(shape)


def row_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a row-major array of ``shape``."""
    return tuple(prod(shape[k + 1:]) for k in range(len(shape)))
