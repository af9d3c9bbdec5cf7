# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO
from generated.hurray import mxfp
from generated.hurray import nf4
from generated.hurray import per_channel_affine
from generated.hurray import per_tensor_affine
from generated.hurray import per_block_affine
from enum import IntEnum


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class Quantization(KaitaiStruct):
    """The payload of a Hurray Quantization Section: the `quantization_length` bytes that follow
    the u32 length prefix. It opens with a 4-byte header (scheme_tag, scheme_version, flags);
    scheme_tag alone selects the layout of the scheme fields that follow at offset 4. Bytes
    after the scheme's fixed fields are writer padding, kept as raw bytes and never
    interpreted. Parse exactly the `quantization_length` bytes: the reader never reads past
    them.
    
    Every multi-byte field is little-endian (HQ-HDR-01); the header layout is HQ-HDR-02.
    This schema is strict: only the five assigned schemes decode. Permissive mode and
    registered private schemes (0xF0-0xFE) are handled by hurray_decl, not here.
    
    .. seealso::
       ../shared/spec/hurray/quantization.txt § Descriptor Header, § Scheme Tag Space
    
    
    .. seealso::
       ../shared/spec/hurray/DIGEST.md § 2
    """

    class Scheme(IntEnum):
        per_tensor_affine = 1
        per_channel_affine = 2
        per_block_affine = 3
        nf4 = 4
        mxfp = 5
    def __init__(self, _io, _parent=None, _root=None):
        super(Quantization, self).__init__(_io)
        self._parent = _parent
        self._root = _root or self
        self._read()

    def _read(self):
        self.scheme_tag = KaitaiStream.resolve_enum(Quantization.Scheme, self._io.read_u1())
        if not isinstance(self.scheme_tag, Quantization.Scheme):
            raise kaitaistruct.ValidationNotInEnumError(self.scheme_tag, self._io, u"/seq/0")
        self.fits_header = self._io.read_bytes(0)
        _ = self.fits_header
        if not self._io.size() >= 4:
            raise kaitaistruct.ValidationExprError(self.fits_header, self._io, u"/seq/1")
        self.scheme_version = self._io.read_u1()
        if not self.scheme_version >= 1:
            raise kaitaistruct.ValidationLessThanError(1, self.scheme_version, self._io, u"/seq/2")
        if not self.scheme_version <= 1:
            raise kaitaistruct.ValidationGreaterThanError(1, self.scheme_version, self._io, u"/seq/2")
        self.flags = self._io.read_u2le()
        _on = self.scheme_tag
        if _on == Quantization.Scheme.mxfp:
            pass
            self.scheme_fields = mxfp.Mxfp(self.flags, self._io)
        elif _on == Quantization.Scheme.nf4:
            pass
            self.scheme_fields = nf4.Nf4(self.flags, self._io)
        elif _on == Quantization.Scheme.per_block_affine:
            pass
            self.scheme_fields = per_block_affine.PerBlockAffine(self.flags, self._io)
        elif _on == Quantization.Scheme.per_channel_affine:
            pass
            self.scheme_fields = per_channel_affine.PerChannelAffine(self.flags, self._io)
        elif _on == Quantization.Scheme.per_tensor_affine:
            pass
            self.scheme_fields = per_tensor_affine.PerTensorAffine(self.flags, self._io)
        self.padding = self._io.read_bytes_full()


    def _fetch_instances(self):
        pass
        _on = self.scheme_tag
        if _on == Quantization.Scheme.mxfp:
            pass
            self.scheme_fields._fetch_instances()
        elif _on == Quantization.Scheme.nf4:
            pass
            self.scheme_fields._fetch_instances()
        elif _on == Quantization.Scheme.per_block_affine:
            pass
            self.scheme_fields._fetch_instances()
        elif _on == Quantization.Scheme.per_channel_affine:
            pass
            self.scheme_fields._fetch_instances()
        elif _on == Quantization.Scheme.per_tensor_affine:
            pass
            self.scheme_fields._fetch_instances()


