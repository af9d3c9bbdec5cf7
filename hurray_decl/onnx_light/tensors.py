"""TensorProto <-> NumPy conversions (the encoders and decoders of TensorProtos are in :mod:`.codec`).

A source TensorProto may be this package's message or the ``onnx`` package's (the bytes are
the same). External data must be loaded first; loaded raw_data is accepted even when EXTERNAL
metadata remains, and that metadata is left unchanged (OL-NUM-04). ``name`` and ``doc_string``
keep their presence independently (OL-WIRE-41).
"""

from __future__ import annotations

import math

import numpy as np

from hurray_decl.errors import OnnxLightError
from hurray_decl.onnx_light.numerics import LOGICAL_CODES, LOGICAL_DTYPES, LOGICAL_NAMES, DataType
from hurray_decl.onnx_light.wire import pb

__all__ = ["array_to_tensor", "as_tensor", "tensor_to_array"]


MAX_RANK = 64
"""The most dimensions a NumPy array has (``numpy.ndarray`` refuses more): a deeper claim is HX-01."""

def as_tensor(tensor) -> pb.TensorProto:
    if isinstance(tensor, pb.TensorProto):
        return tensor
    if hasattr(tensor, "SerializeToString"):
        return pb.TensorProto.FromString(tensor.SerializeToString())
    raise OnnxLightError("OL-NUM-01", "expected a TensorProto", path="source", actual=type(tensor).__name__)


def tensor_to_array(tensor) -> np.ndarray:
    """The values of a floating TensorProto as a new NumPy array (OL-NUM-01 .. -04)."""
    t = as_tensor(tensor)
    if t.data_type not in LOGICAL_DTYPES:
        raise OnnxLightError("OL-NUM-01", f"the source dtype is not {LOGICAL_NAMES}",
                             path="source -> data_type", actual=t.data_type, expected=LOGICAL_CODES)
    dims = list(t.dims)
    if any(d < 0 for d in dims):
        raise OnnxLightError("OL-NUM-02", "the source shape is not concrete", path="source -> dims",
                             actual=dims, expected="dims >= 0")
    count = math.prod(dims)   # Python integers: a claimed size never wraps
    dtype = LOGICAL_DTYPES[t.data_type]
    if t.HasField("raw_data"):
        raw = t.raw_data
        if len(raw) != count * dtype.itemsize:
            raise OnnxLightError("OL-NUM-02", "raw_data does not match the source shape",
                                 path="source -> raw_data", actual=len(raw), expected=count * dtype.itemsize)
        values = np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype)
    elif t.data_location == pb.TensorProto.EXTERNAL or len(t.external_data):
        raise OnnxLightError("OL-NUM-04", "the source payload is external and not loaded",
                             path="source -> external_data")
    elif t.data_type == DataType.DOUBLE:
        values = np.array(t.double_data, dtype=np.float64)
    elif t.data_type == DataType.FLOAT:
        values = np.array(t.float_data, dtype=np.float32)
    else:  # FLOAT16 / BFLOAT16 bit patterns live in int32_data
        values = np.array(t.int32_data, dtype=np.uint16).view(dtype)
    if values.size != count:
        raise OnnxLightError("OL-NUM-02", "the data does not match the source shape", path="source",
                             actual=values.size, expected=count)
    # The data matches the shape; whether NumPy can hold that shape is this implementation's limit.
    if len(dims) > MAX_RANK:
        raise OnnxLightError("HX-01", f"an array of {len(dims)} dimensions cannot be held (NumPy holds at most "
                             f"{MAX_RANK})", path="source -> dims", actual=len(dims), expected=f"<= {MAX_RANK}")
    if math.prod(d for d in dims if d) > np.iinfo(np.intp).max:  # NumPy cannot even describe such a shape
        raise OnnxLightError("HX-01", "the source shape cannot be held in an array", path="source -> dims",
                             actual=dims, expected=f"a product of non-zero dims <= {np.iinfo(np.intp).max}")
    return values.reshape(dims)


def array_to_tensor(array: np.ndarray, code: int) -> pb.TensorProto:
    t = pb.TensorProto()
    t.dims.extend(array.shape)
    t.data_type = code
    t.raw_data = np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes()
    return t
