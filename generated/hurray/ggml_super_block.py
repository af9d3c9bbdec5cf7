# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class GgmlSuperBlock(KaitaiStruct):
    """The fields of the project's private scheme 0xF0 after the 4-byte quantization header: 28
    bytes, so the whole fixed encoding is 4 + 7 * 4 = 32 bytes. A private tag: its meaning is
    agreed out of band (HQ-EXT-03), here by hurray_decl/hurray/schemes/ggml_super_block.py, and
    quantization.ksy does not dispatch to it. Along the last axis, super-blocks of super_block
    elements split into sub-blocks of sub_block; one f16 d (and dmin) per super-block, one i1
    scale code (and u1 minimum code) per sub-block; x = (d * sc) * q - dmin * mn in float32, or
    + dmin * mn with flags bit 0 (Q4_1, Q5_1).
    
    Parse from offset 4 of the quantization payload, passing the header's flags. The checks
    that need the tensor (the last axis, whole super-blocks of whole sub-blocks, both minimum
    buffers or neither, parameter sizes) are not bytes-level rules.
    
    .. seealso::
       hurray_decl/hurray/schemes/ggml_super_block.py
    """
    def __init__(self, flags, _io, _parent=None, _root=None):
        super(GgmlSuperBlock, self).__init__(_io)
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
        if not self.flags & 65534 == 0:
            raise kaitaistruct.ValidationExprError(self.reserved_flags, self._io, u"/seq/1")
        self.axis = self._io.read_u4le()
        self.super_block = self._io.read_u4le()
        self.sub_block = self._io.read_u4le()
        self.d_buffer_index = self._io.read_u4le()
        _ = self.d_buffer_index
        if not _ != 4294967295:
            raise kaitaistruct.ValidationExprError(self.d_buffer_index, self._io, u"/seq/5")
        self.scale_buffer_index = self._io.read_u4le()
        _ = self.scale_buffer_index
        if not _ != 4294967295:
            raise kaitaistruct.ValidationExprError(self.scale_buffer_index, self._io, u"/seq/6")
        self.dmin_buffer_index = self._io.read_u4le()
        self.min_buffer_index = self._io.read_u4le()


    def _fetch_instances(self):
        pass


