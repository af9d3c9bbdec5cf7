# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class GgmlCodebook(KaitaiStruct):
    """The fields of the project's private scheme 0xF1 after the 4-byte quantization header: 28
    bytes, so the whole fixed encoding is 4 + 7 * 4 = 32 bytes. A private tag: its meaning is
    agreed out of band (HQ-EXT-03), here by hurray_decl/hurray/schemes/ggml_codebook.py, and
    quantization.ksy does not dispatch to it. Along the last axis, super-blocks of super_block
    elements split into sub-blocks of sub_block; one f16 d per super-block, one i1 scale code per
    sub-block; the stored codes q are the codebook values themselves; x = ((d * sc) * 2^exponent)
    * q in float32. ggml_type is the GGML type id the codes come from.
    
    Parse from offset 4 of the quantization payload, passing the header's flags. The checks
    that need the tensor or the project's table of GGML types (the last axis, whole super-blocks
    of whole sub-blocks, super_block, sub_block, exponent and storage type those of ggml_type,
    parameter sizes) are not bytes-level rules.
    
    .. seealso::
       hurray_decl/hurray/schemes/ggml_codebook.py
    """
    def __init__(self, flags, _io, _parent=None, _root=None):
        super(GgmlCodebook, self).__init__(_io)
        self._parent = _parent
        self._root = _root or self
        self.flags = flags
        self._read()

    def _read(self):
        self.fits_fixed_length = self._io.read_bytes(0)
        _ = self.fits_fixed_length
        if not self._io.size() - self._io.pos() >= 28:
            raise kaitaistruct.ValidationExprError(self.fits_fixed_length, self._io, u"/seq/0")
        self.reserved_flags = self._io.read_bytes(0)
        _ = self.reserved_flags
        if not self.flags == 0:
            raise kaitaistruct.ValidationExprError(self.reserved_flags, self._io, u"/seq/1")
        self.axis = self._io.read_u4le()
        self.ggml_type = self._io.read_u4le()
        self.super_block = self._io.read_u4le()
        self.sub_block = self._io.read_u4le()
        self.exponent = self._io.read_s4le()
        self.d_buffer_index = self._io.read_u4le()
        _ = self.d_buffer_index
        if not _ != 4294967295:
            raise kaitaistruct.ValidationExprError(self.d_buffer_index, self._io, u"/seq/7")
        self.scale_buffer_index = self._io.read_u4le()
        _ = self.scale_buffer_index
        if not _ != 4294967295:
            raise kaitaistruct.ValidationExprError(self.scale_buffer_index, self._io, u"/seq/8")


    def _fetch_instances(self):
        pass


