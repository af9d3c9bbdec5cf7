# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class Mxfp(KaitaiStruct):
    """The fields of scheme 0x05 after the 4-byte quantization header: 12 bytes, so the whole
    fixed encoding is 4 + 4 + 4 + 4 = 16 bytes (HQ-MX-01). One float8_e8m0 shared exponent per
    block of block_size elements along `axis`; shape[axis] must be a positive multiple of
    block_size.
    
    Parse from offset 4 of the quantization payload, passing the header's flags. The checks
    that need the tensor (axis < rank, shape[axis] a positive multiple of block_size,
    placement and sizes) are not bytes-level rules.
    
    .. seealso::
       ../shared/spec/hurray/DIGEST.md § 3.6
    """
    def __init__(self, flags, _io, _parent=None, _root=None):
        super(Mxfp, self).__init__(_io)
        self._parent = _parent
        self._root = _root or self
        self.flags = flags
        self._read()

    def _read(self):
        self.fits_fixed_length = self._io.read_bytes(0)
        _ = self.fits_fixed_length
        if not self._io.size() - self._io.pos() >= 12:
            raise kaitaistruct.ValidationExprError(self.fits_fixed_length, self._io, u"/seq/0")
        self.reserved_flags = self._io.read_bytes(0)
        _ = self.reserved_flags
        if not self.flags == 0:
            raise kaitaistruct.ValidationExprError(self.reserved_flags, self._io, u"/seq/1")
        self.axis = self._io.read_u4le()
        self.block_size = self._io.read_u4le()
        _ = self.block_size
        if not  ((_ >= 16) and (_ <= 2048) and (_ & _ - 1 == 0)) :
            raise kaitaistruct.ValidationExprError(self.block_size, self._io, u"/seq/3")
        self.scale_buffer_index = self._io.read_u4le()
        _ = self.scale_buffer_index
        if not _ != 4294967295:
            raise kaitaistruct.ValidationExprError(self.scale_buffer_index, self._io, u"/seq/4")


    def _fetch_instances(self):
        pass


