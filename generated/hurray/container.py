# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO
from generated.hurray import tensor_descriptor
from enum import IntEnum


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class Container(KaitaiStruct):
    """A Hurray container file: a 64-byte header, the tensor region (each tensor a descriptor
    followed by its buffers), an optional KV metadata section, the index and a 40-byte trailer
    at the very end. Every multi-byte integer is little-endian (HF-HDR-01). The trailer is read
    from the last 40 bytes; the index and the KV section from the offsets it records; each index
    entry's descriptor from its descriptor_offset, decoded by tensor_descriptor.ksy.
    
    The twin of hurray_decl.container's declarations. Expressed here: the header, trailer,
    index-entry and KV-entry field rules, KV presence, and the minor-0 strict reserved bytes and
    leftover section bytes (relaxed at a higher minor as HF-D06 says). Not expressed, and
    enforced by hurray_decl alone: the CRC-32C of the index (Kaitai has no such process), name
    and key uniqueness and sort order (no fold over entries), bounds on claimed counts before
    reading, the buffer placement arithmetic, the canonical layout without gaps and zero
    padding (levels T and V), and composites.
    
    .. seealso::
       ../shared/spec/hurray/FILE-FORMAT.md § 3, § 5, § 6, § 7
    
    
    .. seealso::
       ../shared/spec/RULES.md HF-HDR, HF-IDX, HF-META, HF-DATA
    """

    class KvTag(IntEnum):
        string = 1
        int64 = 2
        uint64 = 3
        float64 = 4
        bool = 5
        bytes = 6
        array = 7
    def __init__(self, _io, _parent=None, _root=None):
        super(Container, self).__init__(_io)
        self._parent = _parent
        self._root = _root or self
        self._read()

    def _read(self):
        self.fits_minimum = self._io.read_bytes(0)
        _ = self.fits_minimum
        if not self._io.size() >= 112:
            raise kaitaistruct.ValidationExprError(self.fits_minimum, self._io, u"/seq/0")
        self._raw_header = self._io.read_bytes(64)
        _io__raw_header = KaitaiStream(BytesIO(self._raw_header))
        self.header = Container.FileHeader(_io__raw_header, self, self._root)


    def _fetch_instances(self):
        pass
        self.header._fetch_instances()
        _ = self.index
        if hasattr(self, '_m_index'):
            pass
            self._m_index._fetch_instances()

        _ = self.kv
        if hasattr(self, '_m_kv'):
            pass
            self._m_kv._fetch_instances()

        _ = self.trailer
        if hasattr(self, '_m_trailer'):
            pass
            self._m_trailer._fetch_instances()


    class FileHeader(KaitaiStruct):
        """The file header (FILE-FORMAT.md § 3)."""
        def __init__(self, _io, _parent=None, _root=None):
            super(Container.FileHeader, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.magic = self._io.read_bytes(8)
            if not self.magic == b"\x48\x52\x52\x59\x46\x49\x4C\x45":
                raise kaitaistruct.ValidationNotEqualError(b"\x48\x52\x52\x59\x46\x49\x4C\x45", self.magic, self._io, u"/types/file_header/seq/0")
            self.container_version_major = self._io.read_u1()
            if not self.container_version_major >= 1:
                raise kaitaistruct.ValidationLessThanError(1, self.container_version_major, self._io, u"/types/file_header/seq/1")
            if not self.container_version_major <= 1:
                raise kaitaistruct.ValidationGreaterThanError(1, self.container_version_major, self._io, u"/types/file_header/seq/1")
            self.container_version_minor = self._io.read_u1()
            self.reserved = self._io.read_u2le()
            _ = self.reserved
            if not  ((_ == 0) or (self.container_version_minor > 0)) :
                raise kaitaistruct.ValidationExprError(self.reserved, self._io, u"/types/file_header/seq/3")
            self.file_flags = self._io.read_u4le()
            _ = self.file_flags
            if not _ & 4294967288 == 0:
                raise kaitaistruct.ValidationExprError(self.file_flags, self._io, u"/types/file_header/seq/4")
            self.data_buffer_alignment = self._io.read_u4le()
            _ = self.data_buffer_alignment
            if not  ((_ != 0) and (_ & _ - 1 == 0)) :
                raise kaitaistruct.ValidationExprError(self.data_buffer_alignment, self._io, u"/types/file_header/seq/5")
            self.alignment_in_range = self._io.read_bytes(0)
            _ = self.alignment_in_range
            if not  ((self.data_buffer_alignment >= 4096) and (self.data_buffer_alignment <= 2097152)) :
                raise kaitaistruct.ValidationExprError(self.alignment_in_range, self._io, u"/types/file_header/seq/6")
            self.first_descriptor_offset = self._io.read_u8le()
            if not self.first_descriptor_offset >= 64:
                raise kaitaistruct.ValidationLessThanError(64, self.first_descriptor_offset, self._io, u"/types/file_header/seq/7")
            self.first_descriptor_aligned = self._io.read_bytes(0)
            _ = self.first_descriptor_aligned
            if not self.first_descriptor_offset % 8 == 0:
                raise kaitaistruct.ValidationExprError(self.first_descriptor_aligned, self._io, u"/types/file_header/seq/8")
            self.tensor_count_hint = self._io.read_u8le()
            self.reserved2 = self._io.read_u8le()
            _ = self.reserved2
            if not  ((_ == 0) or (self.container_version_minor > 0)) :
                raise kaitaistruct.ValidationExprError(self.reserved2, self._io, u"/types/file_header/seq/10")
            self.reserved3 = self._io.read_u8le()
            _ = self.reserved3
            if not  ((_ == 0) or (self.container_version_minor > 0)) :
                raise kaitaistruct.ValidationExprError(self.reserved3, self._io, u"/types/file_header/seq/11")
            self.reserved4 = self._io.read_u8le()
            _ = self.reserved4
            if not  ((_ == 0) or (self.container_version_minor > 0)) :
                raise kaitaistruct.ValidationExprError(self.reserved4, self._io, u"/types/file_header/seq/12")
            self.reserved5 = self._io.read_u4le()
            _ = self.reserved5
            if not  ((_ == 0) or (self.container_version_minor > 0)) :
                raise kaitaistruct.ValidationExprError(self.reserved5, self._io, u"/types/file_header/seq/13")


        def _fetch_instances(self):
            pass


    class IndexEntry(KaitaiStruct):
        """One index entry, 34 + name_length bytes (HF-IDX-08)."""
        def __init__(self, _io, _parent=None, _root=None):
            super(Container.IndexEntry, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.name_length = self._io.read_u2le()
            if not self.name_length >= 1:
                raise kaitaistruct.ValidationLessThanError(1, self.name_length, self._io, u"/types/index_entry/seq/0")
            self.name = (self._io.read_bytes(self.name_length)).decode(u"UTF-8")
            self.descriptor_offset = self._io.read_u8le()
            self.descriptor_length = self._io.read_u4le()
            self.data_offset = self._io.read_u8le()
            self.data_length = self._io.read_u8le()
            self.flags = self._io.read_u4le()
            if not self.flags == 0:
                raise kaitaistruct.ValidationNotEqualError(0, self.flags, self._io, u"/types/index_entry/seq/6")


        def _fetch_instances(self):
            pass
            _ = self.descriptor
            if hasattr(self, '_m_descriptor'):
                pass
                self._m_descriptor._fetch_instances()


        @property
        def descriptor(self):
            """The tensor descriptor, exactly descriptor_length bytes at descriptor_offset (HF-DATA-04)."""
            if hasattr(self, '_m_descriptor'):
                return self._m_descriptor

            io = self._root._io
            _pos = io.pos()
            io.seek(self.descriptor_offset)
            self._raw__m_descriptor = io.read_bytes(self.descriptor_length)
            _io__raw__m_descriptor = KaitaiStream(BytesIO(self._raw__m_descriptor))
            self._m_descriptor = tensor_descriptor.TensorDescriptor(_io__raw__m_descriptor)
            io.seek(_pos)
            return getattr(self, '_m_descriptor', None)


    class IndexSection(KaitaiStruct):
        """index_entry_count, then the entries back to back (HF-IDX-08)."""
        def __init__(self, _io, _parent=None, _root=None):
            super(Container.IndexSection, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.index_entry_count = self._io.read_u8le()
            self.entries = []
            for i in range(self.index_entry_count):
                self.entries.append(Container.IndexEntry(self._io, self, self._root))

            self.leftover = self._io.read_bytes_full()
            _ = self.leftover
            if not  ((len(_) == 0) or (self._root.header.container_version_minor > 0)) :
                raise kaitaistruct.ValidationExprError(self.leftover, self._io, u"/types/index_section/seq/2")


        def _fetch_instances(self):
            pass
            for i in range(len(self.entries)):
                pass
                self.entries[i]._fetch_instances()



    class KvArray(KaitaiStruct):
        """An array payload, element tag, count, then bare payloads (HF-META-12)."""
        def __init__(self, _io, _parent=None, _root=None):
            super(Container.KvArray, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.element_tag = KaitaiStream.resolve_enum(Container.KvTag, self._io.read_u1())
            _ = self.element_tag
            if not  ((int(_) >= 1) and (int(_) <= 6)) :
                raise kaitaistruct.ValidationExprError(self.element_tag, self._io, u"/types/kv_array/seq/0")
            self.count = self._io.read_u4le()
            self.items = []
            for i in range(self.count):
                _on = self.element_tag
                if _on == Container.KvTag.bool:
                    pass
                    self.items.append(Container.KvBool(self._io, self, self._root))
                elif _on == Container.KvTag.bytes:
                    pass
                    self.items.append(Container.KvBytes(self._io, self, self._root))
                elif _on == Container.KvTag.float64:
                    pass
                    self.items.append(self._io.read_f8le())
                elif _on == Container.KvTag.int64:
                    pass
                    self.items.append(self._io.read_s8le())
                elif _on == Container.KvTag.string:
                    pass
                    self.items.append(Container.KvString(self._io, self, self._root))
                elif _on == Container.KvTag.uint64:
                    pass
                    self.items.append(self._io.read_u8le())



        def _fetch_instances(self):
            pass
            for i in range(len(self.items)):
                pass
                _on = self.element_tag
                if _on == Container.KvTag.bool:
                    pass
                    self.items[i]._fetch_instances()
                elif _on == Container.KvTag.bytes:
                    pass
                    self.items[i]._fetch_instances()
                elif _on == Container.KvTag.float64:
                    pass
                elif _on == Container.KvTag.int64:
                    pass
                elif _on == Container.KvTag.string:
                    pass
                    self.items[i]._fetch_instances()
                elif _on == Container.KvTag.uint64:
                    pass



    class KvBool(KaitaiStruct):
        """A bool payload (HF-META-12)."""
        def __init__(self, _io, _parent=None, _root=None):
            super(Container.KvBool, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.value = self._io.read_u1()
            if not  ((self.value == 0) or (self.value == 1)) :
                raise kaitaistruct.ValidationNotAnyOfError(self.value, self._io, u"/types/kv_bool/seq/0")


        def _fetch_instances(self):
            pass


    class KvBytes(KaitaiStruct):
        """A byte-sequence payload, u32 length then the bytes (HF-META-12)."""
        def __init__(self, _io, _parent=None, _root=None):
            super(Container.KvBytes, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.length = self._io.read_u4le()
            self.value = self._io.read_bytes(self.length)


        def _fetch_instances(self):
            pass


    class KvEntry(KaitaiStruct):
        """One KV entry (HF-META-01)."""
        def __init__(self, _io, _parent=None, _root=None):
            super(Container.KvEntry, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.key_length = self._io.read_u2le()
            if not self.key_length >= 1:
                raise kaitaistruct.ValidationLessThanError(1, self.key_length, self._io, u"/types/kv_entry/seq/0")
            self.key = (self._io.read_bytes(self.key_length)).decode(u"UTF-8")
            self.value_tag = KaitaiStream.resolve_enum(Container.KvTag, self._io.read_u1())
            _ = self.value_tag
            if not  ((int(_) >= 1) and (int(_) <= 7)) :
                raise kaitaistruct.ValidationExprError(self.value_tag, self._io, u"/types/kv_entry/seq/2")
            _on = self.value_tag
            if _on == Container.KvTag.array:
                pass
                self.value = Container.KvArray(self._io, self, self._root)
            elif _on == Container.KvTag.bool:
                pass
                self.value = Container.KvBool(self._io, self, self._root)
            elif _on == Container.KvTag.bytes:
                pass
                self.value = Container.KvBytes(self._io, self, self._root)
            elif _on == Container.KvTag.float64:
                pass
                self.value = self._io.read_f8le()
            elif _on == Container.KvTag.int64:
                pass
                self.value = self._io.read_s8le()
            elif _on == Container.KvTag.string:
                pass
                self.value = Container.KvString(self._io, self, self._root)
            elif _on == Container.KvTag.uint64:
                pass
                self.value = self._io.read_u8le()


        def _fetch_instances(self):
            pass
            _on = self.value_tag
            if _on == Container.KvTag.array:
                pass
                self.value._fetch_instances()
            elif _on == Container.KvTag.bool:
                pass
                self.value._fetch_instances()
            elif _on == Container.KvTag.bytes:
                pass
                self.value._fetch_instances()
            elif _on == Container.KvTag.float64:
                pass
            elif _on == Container.KvTag.int64:
                pass
            elif _on == Container.KvTag.string:
                pass
                self.value._fetch_instances()
            elif _on == Container.KvTag.uint64:
                pass


    class KvSection(KaitaiStruct):
        """kv_count, then the entries back to back (HF-META-01)."""
        def __init__(self, _io, _parent=None, _root=None):
            super(Container.KvSection, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.kv_count = self._io.read_u4le()
            self.entries = []
            for i in range(self.kv_count):
                self.entries.append(Container.KvEntry(self._io, self, self._root))

            self.leftover = self._io.read_bytes_full()
            _ = self.leftover
            if not  ((len(_) == 0) or (self._root.header.container_version_minor > 0)) :
                raise kaitaistruct.ValidationExprError(self.leftover, self._io, u"/types/kv_section/seq/2")


        def _fetch_instances(self):
            pass
            for i in range(len(self.entries)):
                pass
                self.entries[i]._fetch_instances()



    class KvString(KaitaiStruct):
        """A string payload, u32 length then UTF-8 bytes (HF-META-12)."""
        def __init__(self, _io, _parent=None, _root=None):
            super(Container.KvString, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.length = self._io.read_u4le()
            self.value = (self._io.read_bytes(self.length)).decode(u"UTF-8")


        def _fetch_instances(self):
            pass


    class Trailer(KaitaiStruct):
        """The trailer (FILE-FORMAT.md § 7); offsets in field docs count from its start."""
        def __init__(self, _io, _parent=None, _root=None):
            super(Container.Trailer, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.index_offset = self._io.read_u8le()
            _ = self.index_offset
            if not _ % 8 == 0:
                raise kaitaistruct.ValidationExprError(self.index_offset, self._io, u"/types/trailer/seq/0")
            self.index_length = self._io.read_u8le()
            _ = self.index_length
            if not  ((self.index_offset <= self._root._io.size() - 40) and (_ <= (self._root._io.size() - 40) - self.index_offset)) :
                raise kaitaistruct.ValidationExprError(self.index_length, self._io, u"/types/trailer/seq/1")
            self.index_holds_count = self._io.read_bytes(0)
            _ = self.index_holds_count
            if not self.index_length >= 8:
                raise kaitaistruct.ValidationExprError(self.index_holds_count, self._io, u"/types/trailer/seq/2")
            self.kv_offset = self._io.read_u8le()
            _ = self.kv_offset
            if not _ % 8 == 0:
                raise kaitaistruct.ValidationExprError(self.kv_offset, self._io, u"/types/trailer/seq/3")
            self.kv_length = self._io.read_u4le()
            _ = self.kv_length
            if not (self.kv_offset == 0) == (_ == 0):
                raise kaitaistruct.ValidationExprError(self.kv_length, self._io, u"/types/trailer/seq/4")
            self.kv_promised = self._io.read_bytes(0)
            _ = self.kv_promised
            if not  ((self._root.header.file_flags & 1 == 0) or (self.kv_length != 0)) :
                raise kaitaistruct.ValidationExprError(self.kv_promised, self._io, u"/types/trailer/seq/5")
            self.kv_holds_count = self._io.read_bytes(0)
            _ = self.kv_holds_count
            if not  ((self.kv_length == 0) or (self.kv_length >= 4)) :
                raise kaitaistruct.ValidationExprError(self.kv_holds_count, self._io, u"/types/trailer/seq/6")
            self.kv_before_index = self._io.read_bytes(0)
            _ = self.kv_before_index
            if not  ((self.kv_length == 0) or (self.kv_offset + self.kv_length <= self.index_offset)) :
                raise kaitaistruct.ValidationExprError(self.kv_before_index, self._io, u"/types/trailer/seq/7")
            self.index_crc32c = self._io.read_u4le()
            _ = self.index_crc32c
            if not  ((self._root.header.file_flags & 4 != 0) or (_ == 0)) :
                raise kaitaistruct.ValidationExprError(self.index_crc32c, self._io, u"/types/trailer/seq/8")
            self.reserved = self._io.read_u4le()
            _ = self.reserved
            if not  ((_ == 0) or (self._root.header.container_version_minor > 0)) :
                raise kaitaistruct.ValidationExprError(self.reserved, self._io, u"/types/trailer/seq/9")
            self.trailer_magic = self._io.read_bytes(4)
            if not self.trailer_magic == b"\x48\x52\x52\x59":
                raise kaitaistruct.ValidationNotEqualError(b"\x48\x52\x52\x59", self.trailer_magic, self._io, u"/types/trailer/seq/10")


        def _fetch_instances(self):
            pass


    @property
    def index(self):
        """The index_length bytes at index_offset (HF-IDX-08)."""
        if hasattr(self, '_m_index'):
            return self._m_index

        _pos = self._io.pos()
        self._io.seek(self.trailer.index_offset)
        self._raw__m_index = self._io.read_bytes(self.trailer.index_length)
        _io__raw__m_index = KaitaiStream(BytesIO(self._raw__m_index))
        self._m_index = Container.IndexSection(_io__raw__m_index, self, self._root)
        self._io.seek(_pos)
        return getattr(self, '_m_index', None)

    @property
    def kv(self):
        """The KV section, present when the trailer records one, whatever HAS_KV_METADATA says
        (HF-META-04, HF-D01).
        """
        if hasattr(self, '_m_kv'):
            return self._m_kv

        if  ((self.trailer.kv_offset != 0) and (self.trailer.kv_length != 0)) :
            pass
            _pos = self._io.pos()
            self._io.seek(self.trailer.kv_offset)
            self._raw__m_kv = self._io.read_bytes(self.trailer.kv_length)
            _io__raw__m_kv = KaitaiStream(BytesIO(self._raw__m_kv))
            self._m_kv = Container.KvSection(_io__raw__m_kv, self, self._root)
            self._io.seek(_pos)

        return getattr(self, '_m_kv', None)

    @property
    def trailer(self):
        """The last 40 bytes of the file (HF-IDX-01)."""
        if hasattr(self, '_m_trailer'):
            return self._m_trailer

        _pos = self._io.pos()
        self._io.seek(self._io.size() - 40)
        self._raw__m_trailer = self._io.read_bytes(40)
        _io__raw__m_trailer = KaitaiStream(BytesIO(self._raw__m_trailer))
        self._m_trailer = Container.Trailer(_io__raw__m_trailer, self, self._root)
        self._io.seek(_pos)
        return getattr(self, '_m_trailer', None)


