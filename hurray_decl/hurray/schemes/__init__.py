"""One module per Hurray quantization scheme; :data:`BUILTIN` lists their registry rows."""

from hurray_decl.hurray.schemes import mxfp, nf4, per_block_affine, per_channel_affine, per_tensor_affine
from hurray_decl.hurray.schemes.quantization import Descriptor, OpaqueQuantization, SchemeDescriptor

BUILTIN = (per_tensor_affine.ROW, per_channel_affine.ROW, per_block_affine.ROW, nf4.ROW, mxfp.ROW)

__all__ = ["BUILTIN", "Descriptor", "OpaqueQuantization", "SchemeDescriptor"]
