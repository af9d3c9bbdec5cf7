# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class PerTensorAffine(KaitaiStruct):
    """The fields of scheme 0x01 after the 4-byte quantization header: 12 bytes, so the whole
    fixed encoding is 4 + 4 + 4 + 4 = 16 bytes (HQ-PT-01). One scale and one zero point for the
    whole tensor, stored inline; the scheme references no buffer. A symmetric descriptor stores
    zero_point 0 and no flag records it (HQ-PT-06).
    
    Parse from offset 4 of the quantization payload, passing the header's flags. The zero-point
    range check (HQ-PT-04) needs the storage type and is not a bytes-level rule.
    
    .. seealso::
       ../shared/spec/hurray/DIGEST.md § 3.2
    """
    def __init__(self, flags, _io, _parent=None, _root=None):
        super(PerTensorAffine, self).__init__(_io)
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
        self.scale = self._io.read_f4le()
        self.zero_point = self._io.read_s4le()
        self.reserved = self._io.read_bytes(4)
        if not self.reserved == b"\x00\x00\x00\x00":
            raise kaitaistruct.ValidationNotEqualError(b"\x00\x00\x00\x00", self.reserved, self._io, u"/seq/4")
        self.scale_finite_nonzero = self._io.read_bytes(0)
        _ = self.scale_finite_nonzero
        if not  ((self.scale == self.scale) and (self.scale != 0) and (self.scale >= -3.4028234663852886E+38) and (self.scale <= 3.4028234663852886E+38)) :
            raise kaitaistruct.ValidationExprError(self.scale_finite_nonzero, self._io, u"/seq/5")


    def _fetch_instances(self):
        pass


