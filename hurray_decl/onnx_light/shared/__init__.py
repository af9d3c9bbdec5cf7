"""Model-level shared parameter sets and the compact layout (DIGEST.md § 11, RULES.md OL-SHR).

A parameter set is a root-graph ``quantization_annotation`` named
``onnx_light.quantization.parameters:<name>`` whose ``quant_parameter_tensor_names`` map roles
to root initializers: the serialized storage and logical types (rank-1 UINT8) and the numerical
parameters Quantize would take as inputs. :func:`parameter_catalogue` validates every set of a
model and returns owned, immutable :class:`ParameterSet` snapshots (:mod:`.parameters`).

A set fixes the full encoding of an all-zero tensor of its logical type; the bytes of that
payload that depend on the data are the *local* ranges (portable: the outlier values and each
block's codes; ORT: ``B``), everything else is *common*. A compact value stores a reserved
``0x00`` byte and the local ranges; :func:`materialize_quantized_value` interleaves them with the
set's common bytes again (:mod:`.compact`).
"""

from __future__ import annotations

from hurray_decl.onnx_light.shared import compact, parameters
from hurray_decl.onnx_light.shared.compact import *  # noqa: F403 (each module's __all__)
from hurray_decl.onnx_light.shared.parameters import *  # noqa: F403 (each module's __all__)

__all__ = [*parameters.__all__, *compact.__all__]
