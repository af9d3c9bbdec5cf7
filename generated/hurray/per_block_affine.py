# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO
from enum import IntEnum


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class PerBlockAffine(KaitaiStruct):
    """The fields of scheme 0x03 after the 4-byte quantization header: 20 bytes, so the whole
    fixed encoding is 4 + 4 + 4 + 4 + 4 + 1 + 3 = 24 bytes (HQ-PB-01). One scale (and, unless
    SYMMETRIC, one i32 zero point) per block of block_size consecutive elements along `axis`.
    
    Parse from offset 4 of the quantization payload, passing the header's flags. The checks
    that need the tensor (axis < rank, block_size <= shape[axis], placement and sizes) are not
    bytes-level rules.
    
    .. seealso::
       ../shared/spec/hurray/per-block-affine.txt
    
    
    .. seealso::
       ../shared/spec/hurray/DIGEST.md § 3.4
    """

    class ScaleType(IntEnum):
        float16 = 1
        bfloat16 = 2
        float32 = 3
    def __init__(self, flags, _io, _parent=None, _root=None):
        super(PerBlockAffine, self).__init__(_io)
        self._parent = _parent
        self._root = _root or self
        self.flags = flags
        self._read()

    def _read(self):
        self.fits_fixed_length = self._io.read_bytes(0)
        _ = self.fits_fixed_length
        if not self._io.size() - self._io.pos() >= 20:
            raise kaitaistruct.ValidationExprError(self.fits_fixed_length, self._io, u"/seq/0")
        self.reserved_flags = self._io.read_bytes(0)
        _ = self.reserved_flags
        if not self.flags & 65534 == 0:
            raise kaitaistruct.ValidationExprError(self.reserved_flags, self._io, u"/seq/1")
        self.axis = self._io.read_u4le()
        self.block_size = self._io.read_u4le()
        _ = self.block_size
        if not  ((_ >= 2) and (_ & _ - 1 == 0)) :
            raise kaitaistruct.ValidationExprError(self.block_size, self._io, u"/seq/3")
        self.scale_buffer_index = self._io.read_u4le()
        self.zero_point_buffer_index = self._io.read_u4le()
        self.scale_type_tag = KaitaiStream.resolve_enum(PerBlockAffine.ScaleType, self._io.read_u1())
        if not isinstance(self.scale_type_tag, PerBlockAffine.ScaleType):
            raise kaitaistruct.ValidationNotInEnumError(self.scale_type_tag, self._io, u"/seq/6")
        self.reserved = self._io.read_bytes(3)
        if not self.reserved == b"\x00\x00\x00":
            raise kaitaistruct.ValidationNotEqualError(b"\x00\x00\x00", self.reserved, self._io, u"/seq/7")
        self.scale_index_not_none = self._io.read_bytes(0)
        _ = self.scale_index_not_none
        if not self.scale_buffer_index != 4294967295:
            raise kaitaistruct.ValidationExprError(self.scale_index_not_none, self._io, u"/seq/8")
        self.symmetric_zero_point = self._io.read_bytes(0)
        _ = self.symmetric_zero_point
        if not self.symmetric == (self.zero_point_buffer_index == 4294967295):
            raise kaitaistruct.ValidationExprError(self.symmetric_zero_point, self._io, u"/seq/9")


    def _fetch_instances(self):
        pass

    @property
    def symmetric(self):
        """Flags bit 0, SYMMETRIC; all zero points are 0 and there is no zero-point buffer."""
        if hasattr(self, '_m_symmetric'):
            return self._m_symmetric

        self._m_symmetric = self.flags & 1 != 0
        return getattr(self, '_m_symmetric', None)


