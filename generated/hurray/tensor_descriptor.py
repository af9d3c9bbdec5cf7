# This is a generated file! Please edit source .ksy file and use kaitai-struct-compiler to rebuild
# type: ignore

import kaitaistruct
from kaitaistruct import KaitaiStruct, KaitaiStream, BytesIO
from generated.hurray import quantization
from enum import IntEnum


if getattr(kaitaistruct, 'API_VERSION', (0, 9)) < (0, 11):
    raise Exception("Incompatible Kaitai Struct Python API: 0.11 or later is required, but you have %s" % (kaitaistruct.__version__))

class TensorDescriptor(KaitaiStruct):
    """One Hurray tensor descriptor, read from the start of a stream. The first 10 bytes give
    descriptor_length (HT-HDR-10); everything after them is read from a substream of exactly
    descriptor_length - 10 bytes, so the reader never reads past the descriptor (HT-HDR-08) and
    bytes after it are left to whatever follows. Every multi-byte field is little-endian
    (HT-HDR-01); the sections come in the wire order of HT-HDR-02: fixed header, shape,
    byte_offset, layout fields, buffer table, then quantization, shard, statistics, extension
    type and composite member, each present exactly when its flags bit is set (HT-SEC-01,
    HT-SEC-03, HT-SEC-08, HT-SEC-21, HT-SEC-35). The quantization payload is decoded by
    quantization.ksy from exactly quantization_length bytes.
    
    The schema is strict, with an empty private registry: unassigned tags, private layouts and
    private memory classes are refused; private type tags and private devices are read (HD-23).
    It checks each field as it is read, then, after the last section, the rules that tie fields
    of different sections together, in the order hurray_decl.read_tensor_descriptor checks them
    (DIGEST Appendix A).
    
    Not expressed here, and enforced by hurray_decl alone: the quantization descriptor against
    its tensor (storage type, axis, block size against shape, parameter placement and sizes,
    block-paged composition; quantization.ksy reads the payload without the tensor), and every
    buffer byte_size the shape and element type imply (data extents and exact sparse, paged and
    parameter sizes), which need the element-size table and products over the whole shape.
    
    .. seealso::
       ../shared/spec/hurray/DIGEST.md § 5, Appendix A
    
    
    .. seealso::
       ../shared/spec/RULES.md HT-HDR, HT-LAY, HT-BUFT, HT-SEC, HE
    """

    class BlockTableIndexType(IntEnum):
        u32 = 0
        u64 = 1

    class CombineOp(IntEnum):
        none = 0
        replace = 1
        add = 2

    class CompositionRule(IntEnum):
        partition = 1
        overlay = 2
        group = 3

    class Device(IntEnum):
        cpu = 0
        cuda = 1
        rocm = 2
        metal = 3
        vulkan = 4
        webgpu = 5
        hexagon = 6
        level_zero = 7
        opencl = 8

    class ElementType(IntEnum):
        float16 = 1
        bfloat16 = 2
        float32 = 3
        float64 = 4
        int8 = 16
        uint8 = 17
        int16 = 18
        uint16 = 19
        int32 = 20
        uint32 = 21
        int64 = 22
        uint64 = 23
        bool = 32
        float8_e4m3 = 64
        float8_e5m2 = 65
        float8_e8m0 = 66
        float4_e2m1 = 67
        float6_e2m3 = 68
        float6_e3m2 = 69
        float128 = 70
        int4 = 72
        uint4 = 73
        int2 = 74
        uint2 = 75
        complex64 = 80
        complex128 = 81

    class KvRole(IntEnum):
        key_cache = 0
        value_cache = 1
        fused = 2

    class Layout(IntEnum):
        row_major = 1
        column_major = 2
        strided = 3
        tiled = 4
        morton = 5
        coo = 6
        csr = 7
        csc = 8
        csf = 9
        block_paged = 10
        composite_head = 11
        hilbert = 64

    class MemberRole(IntEnum):
        correction = 0
        base = 1

    class MemoryClass(IntEnum):
        standard = 0
        host_pinned = 1
        unified = 2
        peer = 3

    class SyncMode(IntEnum):
        producer_synced = 0
        event = 1
        consumer_stream = 2

    class TileOrder(IntEnum):
        row_major = 1
        column_major = 2
        strided = 3
        nested = 4
    def __init__(self, _io, _parent=None, _root=None):
        super(TensorDescriptor, self).__init__(_io)
        self._parent = _parent
        self._root = _root or self
        self._read()

    def _read(self):
        self.fits_preamble = self._io.read_bytes(0)
        _ = self.fits_preamble
        if not self._io.size() - self._io.pos() >= 10:
            raise kaitaistruct.ValidationExprError(self.fits_preamble, self._io, u"/seq/0")
        self.magic = self._io.read_bytes(4)
        if not self.magic == b"\x48\x52\x52\x59":
            raise kaitaistruct.ValidationNotEqualError(b"\x48\x52\x52\x59", self.magic, self._io, u"/seq/1")
        self.version_major = self._io.read_u1()
        if not self.version_major >= 1:
            raise kaitaistruct.ValidationLessThanError(1, self.version_major, self._io, u"/seq/2")
        if not self.version_major <= 1:
            raise kaitaistruct.ValidationGreaterThanError(1, self.version_major, self._io, u"/seq/2")
        self.version_minor = self._io.read_u1()
        self.descriptor_length = self._io.read_u4le()
        if not self.descriptor_length >= 20:
            raise kaitaistruct.ValidationLessThanError(20, self.descriptor_length, self._io, u"/seq/4")
        self._raw_body = self._io.read_bytes((self.descriptor_length - 10 if self.descriptor_length - 10 <= self._io.size() - self._io.pos() else self._io.size() - self._io.pos()))
        _io__raw_body = KaitaiStream(BytesIO(self._raw_body))
        self.body = TensorDescriptor.Body(_io__raw_body, self, self._root)


    def _fetch_instances(self):
        pass
        self.body._fetch_instances()

    class BlockPaged(KaitaiStruct):
        """Block-paged KV cache 0x0A, 4 + 8 + 4 + 4 + 1 + 4 + 1 + 6 = 32 bytes (HT-LAY-53)."""
        def __init__(self, _io, _parent=None, _root=None):
            super(TensorDescriptor.BlockPaged, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.page_size = self._io.read_u4le()
            if not self.page_size >= 1:
                raise kaitaistruct.ValidationLessThanError(1, self.page_size, self._io, u"/types/block_paged/seq/0")
            self.num_pages = self._io.read_u8le()
            self.paged_axis = self._io.read_u4le()
            if not self.paged_axis <= 0:
                raise kaitaistruct.ValidationGreaterThanError(0, self.paged_axis, self._io, u"/types/block_paged/seq/2")
            self.num_seqs = self._io.read_u4le()
            self.kv_role = KaitaiStream.resolve_enum(TensorDescriptor.KvRole, self._io.read_u1())
            if not isinstance(self.kv_role, TensorDescriptor.KvRole):
                raise kaitaistruct.ValidationNotInEnumError(self.kv_role, self._io, u"/types/block_paged/seq/4")
            self.layer_index = self._io.read_u4le()
            self.block_table_index_type = KaitaiStream.resolve_enum(TensorDescriptor.BlockTableIndexType, self._io.read_u1())
            if not isinstance(self.block_table_index_type, TensorDescriptor.BlockTableIndexType):
                raise kaitaistruct.ValidationNotInEnumError(self.block_table_index_type, self._io, u"/types/block_paged/seq/6")
            self.reserved = self._io.read_bytes(6)
            if not self.reserved == b"\x00\x00\x00\x00\x00\x00":
                raise kaitaistruct.ValidationNotEqualError(b"\x00\x00\x00\x00\x00\x00", self.reserved, self._io, u"/types/block_paged/seq/7")


        def _fetch_instances(self):
            pass


    class Body(KaitaiStruct):
        """The descriptor from offset 10 (flags) to descriptor_length. Offsets in field docs count
        from the start of the descriptor.
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(TensorDescriptor.Body, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.flags = self._io.read_u4le()
            _ = self.flags
            if not _ & 4294967264 == 0:
                raise kaitaistruct.ValidationExprError(self.flags, self._io, u"/types/body/seq/0")
            self.type_tag = KaitaiStream.resolve_enum(TensorDescriptor.ElementType, self._io.read_u1())
            _ = self.type_tag
            if not  (( ((int(_) >= 1) and (int(_) <= 4)) ) or ( ((int(_) >= 16) and (int(_) <= 23)) ) or (int(_) == 32) or ( ((int(_) >= 64) and (int(_) <= 70)) ) or ( ((int(_) >= 72) and (int(_) <= 75)) ) or (int(_) == 80) or (int(_) == 81) or ( ((int(_) >= 240) and (int(_) <= 254)) )) :
                raise kaitaistruct.ValidationExprError(self.type_tag, self._io, u"/types/body/seq/1")
            self.layout_tag = KaitaiStream.resolve_enum(TensorDescriptor.Layout, self._io.read_u1())
            _ = self.layout_tag
            if not  (( ((int(_) >= 1) and (int(_) <= 11)) ) or (int(_) == 64) or ( ((int(_) >= 240) and (int(_) <= 254)) )) :
                raise kaitaistruct.ValidationExprError(self.layout_tag, self._io, u"/types/body/seq/2")
            self.rank = self._io.read_u4le()
            if not self.rank <= 64:
                raise kaitaistruct.ValidationGreaterThanError(64, self.rank, self._io, u"/types/body/seq/3")
            self.shape = []
            for i in range(self.rank):
                self.shape.append(self._io.read_u8le())

            self.byte_offset = self._io.read_u8le()
            self.scalar_is_row_major = self._io.read_bytes(0)
            _ = self.scalar_is_row_major
            if not  ((self.rank > 0) or (self.layout_tag == TensorDescriptor.Layout.row_major)) :
                raise kaitaistruct.ValidationExprError(self.scalar_is_row_major, self._io, u"/types/body/seq/6")
            _on = self.layout_tag
            if _on == TensorDescriptor.Layout.block_paged:
                pass
                self.layout = TensorDescriptor.BlockPaged(self._io, self, self._root)
            elif _on == TensorDescriptor.Layout.column_major:
                pass
                self.layout = TensorDescriptor.NoFields(self._io, self, self._root)
            elif _on == TensorDescriptor.Layout.composite_head:
                pass
                self.layout = TensorDescriptor.CompositeHead(self._io, self, self._root)
            elif _on == TensorDescriptor.Layout.coo:
                pass
                self.layout = TensorDescriptor.Coo(self._io, self, self._root)
            elif _on == TensorDescriptor.Layout.csc:
                pass
                self.layout = TensorDescriptor.Csr(self._io, self, self._root)
            elif _on == TensorDescriptor.Layout.csf:
                pass
                self.layout = TensorDescriptor.Csf(self.rank, self._io, self, self._root)
            elif _on == TensorDescriptor.Layout.csr:
                pass
                self.layout = TensorDescriptor.Csr(self._io, self, self._root)
            elif _on == TensorDescriptor.Layout.hilbert:
                pass
                self.layout = TensorDescriptor.Hilbert(self._io, self, self._root)
            elif _on == TensorDescriptor.Layout.morton:
                pass
                self.layout = TensorDescriptor.Morton(self.rank, self._io, self, self._root)
            elif _on == TensorDescriptor.Layout.row_major:
                pass
                self.layout = TensorDescriptor.NoFields(self._io, self, self._root)
            elif _on == TensorDescriptor.Layout.strided:
                pass
                self.layout = TensorDescriptor.Strided(self.rank, self._io, self, self._root)
            elif _on == TensorDescriptor.Layout.tiled:
                pass
                self.layout = TensorDescriptor.Tiled(self.rank, 1, self._io, self, self._root)
            else:
                pass
                self.layout = TensorDescriptor.PrivateLayout(self._io, self, self._root)
            self.rank_fits_layout = self._io.read_bytes(0)
            _ = self.rank_fits_layout
            if not (self.rank == 2 if self.layout_tag == TensorDescriptor.Layout.csr else (self.rank == 2 if self.layout_tag == TensorDescriptor.Layout.csc else (self.rank >= 3 if self.layout_tag == TensorDescriptor.Layout.csf else (self.rank == 3 if self.layout_tag == TensorDescriptor.Layout.block_paged else True)))):
                raise kaitaistruct.ValidationExprError(self.rank_fits_layout, self._io, u"/types/body/seq/8")
            self.extension_flag_matches_type = self._io.read_bytes(0)
            _ = self.extension_flag_matches_type
            if not (self.flags & 4 != 0) ==  ((int(self.type_tag) >= 240) and (int(self.type_tag) <= 254)) :
                raise kaitaistruct.ValidationExprError(self.extension_flag_matches_type, self._io, u"/types/body/seq/9")
            self.buffer_count = self._io.read_u1()
            self.head_owns_no_buffers = self._io.read_bytes(0)
            _ = self.head_owns_no_buffers
            if not  ((self.layout_tag != TensorDescriptor.Layout.composite_head) or (self.buffer_count == 0)) :
                raise kaitaistruct.ValidationExprError(self.head_owns_no_buffers, self._io, u"/types/body/seq/11")
            self.buffers_present = self._io.read_bytes(0)
            _ = self.buffers_present
            if not  ((self.layout_tag == TensorDescriptor.Layout.composite_head) or (self.buffer_count > 0)) :
                raise kaitaistruct.ValidationExprError(self.buffers_present, self._io, u"/types/body/seq/12")
            self.head_byte_offset = self._io.read_bytes(0)
            _ = self.head_byte_offset
            if not  ((self.layout_tag != TensorDescriptor.Layout.composite_head) or (self.byte_offset == 0)) :
                raise kaitaistruct.ValidationExprError(self.head_byte_offset, self._io, u"/types/body/seq/13")
            self.sparse_byte_offset = self._io.read_bytes(0)
            _ = self.sparse_byte_offset
            if not  ((self.byte_offset == 0) or ( ((self.layout_tag != TensorDescriptor.Layout.coo) and (self.layout_tag != TensorDescriptor.Layout.csr) and (self.layout_tag != TensorDescriptor.Layout.csc) and (self.layout_tag != TensorDescriptor.Layout.csf) and (self.layout_tag != TensorDescriptor.Layout.block_paged)) )) :
                raise kaitaistruct.ValidationExprError(self.sparse_byte_offset, self._io, u"/types/body/seq/14")
            self.buffers = []
            for i in range(self.buffer_count):
                self.buffers.append(TensorDescriptor.BufferHandle(self._io, self, self._root))

            if self.flags & 1 != 0:
                pass
                self.quantization_length = self._io.read_u4le()

            if self.flags & 1 != 0:
                pass
                self.quantization_fits = self._io.read_bytes(0)
                _ = self.quantization_fits
                if not self.quantization_length <= self._io.size() - self._io.pos():
                    raise kaitaistruct.ValidationExprError(self.quantization_fits, self._io, u"/types/body/seq/17")

            self.head_not_quantized = self._io.read_bytes(0)
            _ = self.head_not_quantized
            if not  ((self.layout_tag != TensorDescriptor.Layout.composite_head) or (self.flags & 1 == 0)) :
                raise kaitaistruct.ValidationExprError(self.head_not_quantized, self._io, u"/types/body/seq/18")
            if self.flags & 1 != 0:
                pass
                self._raw_quantization = self._io.read_bytes(self.quantization_length)
                _io__raw_quantization = KaitaiStream(BytesIO(self._raw_quantization))
                self.quantization = quantization.Quantization(_io__raw_quantization)

            self.colocation = []
            for i in range(self.buffer_count):
                self.colocation.append(TensorDescriptor.Colocated(i, self._io, self, self._root))

            self.buffer_count_exact = self._io.read_bytes(0)
            _ = self.buffer_count_exact
            if not self.buffer_count == self.layout_buffers + self.parameter_buffers:
                raise kaitaistruct.ValidationExprError(self.buffer_count_exact, self._io, u"/types/body/seq/21")
            if self.flags & 2 != 0:
                pass
                self.shard = TensorDescriptor.Shard(self.rank, self._io, self, self._root)

            self.shard_allowed = self._io.read_bytes(0)
            _ = self.shard_allowed
            if not  ((self.flags & 2 == 0) or ( ((self.layout_tag != TensorDescriptor.Layout.block_paged) and (self.layout_tag != TensorDescriptor.Layout.csf)) )) :
                raise kaitaistruct.ValidationExprError(self.shard_allowed, self._io, u"/types/body/seq/23")
            self.shard_static = self._io.read_bytes(0)
            _ = self.shard_static
            if not  ((self.flags & 2 == 0) or (self.rank == 0) or ( ((max(self.shape) != 18446744073709551615) and (max(self.shard.parent_shape) != 18446744073709551615) and (max(self.shard.shard_offset) != 18446744073709551615)) )) :
                raise kaitaistruct.ValidationExprError(self.shard_static, self._io, u"/types/body/seq/24")
            if self.flags & 2 != 0:
                pass
                self.shard_bounds = []
                for i in range(self.rank):
                    self.shard_bounds.append(TensorDescriptor.ShardBound(i, self._io, self, self._root))


            if self.flags & 8 != 0:
                pass
                self.statistics = TensorDescriptor.Statistics(self._io, self, self._root)

            self.statistics_nnz = self._io.read_bytes(0)
            _ = self.statistics_nnz
            if not  ((self.flags & 8 == 0) or (self.statistics.computed_mask & 1 == 0) or ((self.statistics.nnz == self.layout.nnz if self.layout_tag == TensorDescriptor.Layout.coo else (self.statistics.nnz == self.layout.nnz if  ((self.layout_tag == TensorDescriptor.Layout.csr) or (self.layout_tag == TensorDescriptor.Layout.csc))  else (self.statistics.nnz == self.layout.nnz if self.layout_tag == TensorDescriptor.Layout.csf else True))))) :
                raise kaitaistruct.ValidationExprError(self.statistics_nnz, self._io, u"/types/body/seq/27")
            if self.flags & 4 != 0:
                pass
                self.extension_type = TensorDescriptor.ExtensionType(self._io, self, self._root)

            if self.flags & 16 != 0:
                pass
                self.composite_member = TensorDescriptor.CompositeMember(self._io, self, self._root)

            self.head_not_member = self._io.read_bytes(0)
            _ = self.head_not_member
            if not  ((self.layout_tag != TensorDescriptor.Layout.composite_head) or (self.flags & 16 == 0)) :
                raise kaitaistruct.ValidationExprError(self.head_not_member, self._io, u"/types/body/seq/30")
            self.input_holds_descriptor = self._io.read_bytes(0)
            _ = self.input_holds_descriptor
            if not self._root._io.size() >= self._root.descriptor_length:
                raise kaitaistruct.ValidationExprError(self.input_holds_descriptor, self._io, u"/types/body/seq/31")
            self.trailing = self._io.read_bytes_full()
            self.length_matches = self._io.read_bytes(0)
            _ = self.length_matches
            if not  ((self._root.version_minor > 0) or (len(self.trailing) == 0)) :
                raise kaitaistruct.ValidationExprError(self.length_matches, self._io, u"/types/body/seq/33")
            self.byte_offset_in_buffer = self._io.read_bytes(0)
            _ = self.byte_offset_in_buffer
            if not  ((self.buffer_count == 0) or (self.byte_offset <= self.buffers[0].byte_size)) :
                raise kaitaistruct.ValidationExprError(self.byte_offset_in_buffer, self._io, u"/types/body/seq/34")
            if self.layout_tag == TensorDescriptor.Layout.morton:
                pass
                self.morton_fits_shape = []
                for i in range(self.rank):
                    self.morton_fits_shape.append(TensorDescriptor.MortonFit(i, self._io, self, self._root))


            self.hilbert_rank_is_rank = self._io.read_bytes(0)
            _ = self.hilbert_rank_is_rank
            if not  ((self.layout_tag != TensorDescriptor.Layout.hilbert) or (self.layout.hilbert_rank == self.rank)) :
                raise kaitaistruct.ValidationExprError(self.hilbert_rank_is_rank, self._io, u"/types/body/seq/36")
            self.hilbert_shape = self._io.read_bytes(0)
            _ = self.hilbert_shape
            if not  ((self.layout_tag != TensorDescriptor.Layout.hilbert) or ( ((self.layout.hilbert_order < 64) and (min(self.shape) == max(self.shape)) and (min(self.shape) == 1 << self.layout.hilbert_order)) )) :
                raise kaitaistruct.ValidationExprError(self.hilbert_shape, self._io, u"/types/body/seq/37")


        def _fetch_instances(self):
            pass
            for i in range(len(self.shape)):
                pass

            _on = self.layout_tag
            if _on == TensorDescriptor.Layout.block_paged:
                pass
                self.layout._fetch_instances()
            elif _on == TensorDescriptor.Layout.column_major:
                pass
                self.layout._fetch_instances()
            elif _on == TensorDescriptor.Layout.composite_head:
                pass
                self.layout._fetch_instances()
            elif _on == TensorDescriptor.Layout.coo:
                pass
                self.layout._fetch_instances()
            elif _on == TensorDescriptor.Layout.csc:
                pass
                self.layout._fetch_instances()
            elif _on == TensorDescriptor.Layout.csf:
                pass
                self.layout._fetch_instances()
            elif _on == TensorDescriptor.Layout.csr:
                pass
                self.layout._fetch_instances()
            elif _on == TensorDescriptor.Layout.hilbert:
                pass
                self.layout._fetch_instances()
            elif _on == TensorDescriptor.Layout.morton:
                pass
                self.layout._fetch_instances()
            elif _on == TensorDescriptor.Layout.row_major:
                pass
                self.layout._fetch_instances()
            elif _on == TensorDescriptor.Layout.strided:
                pass
                self.layout._fetch_instances()
            elif _on == TensorDescriptor.Layout.tiled:
                pass
                self.layout._fetch_instances()
            else:
                pass
                self.layout._fetch_instances()
            for i in range(len(self.buffers)):
                pass
                self.buffers[i]._fetch_instances()

            if self.flags & 1 != 0:
                pass

            if self.flags & 1 != 0:
                pass

            if self.flags & 1 != 0:
                pass
                self.quantization._fetch_instances()

            for i in range(len(self.colocation)):
                pass
                self.colocation[i]._fetch_instances()

            if self.flags & 2 != 0:
                pass
                self.shard._fetch_instances()

            if self.flags & 2 != 0:
                pass
                for i in range(len(self.shard_bounds)):
                    pass
                    self.shard_bounds[i]._fetch_instances()


            if self.flags & 8 != 0:
                pass
                self.statistics._fetch_instances()

            if self.flags & 4 != 0:
                pass
                self.extension_type._fetch_instances()

            if self.flags & 16 != 0:
                pass
                self.composite_member._fetch_instances()

            if self.layout_tag == TensorDescriptor.Layout.morton:
                pass
                for i in range(len(self.morton_fits_shape)):
                    pass
                    self.morton_fits_shape[i]._fetch_instances()



        @property
        def layout_buffers(self):
            """L, the buffers the layout itself owns (DIGEST § 5.7); parameters come after them."""
            if hasattr(self, '_m_layout_buffers'):
                return self._m_layout_buffers

            self._m_layout_buffers = (2 if self.layout_tag == TensorDescriptor.Layout.coo else (3 if self.layout_tag == TensorDescriptor.Layout.csr else (3 if self.layout_tag == TensorDescriptor.Layout.csc else (2 * self.rank + 1 if self.layout_tag == TensorDescriptor.Layout.csf else (3 if self.layout_tag == TensorDescriptor.Layout.block_paged else (0 if self.layout_tag == TensorDescriptor.Layout.composite_head else 1))))))
            return getattr(self, '_m_layout_buffers', None)

        @property
        def parameter_buffers(self):
            """Distinct parameter buffers: none for per-tensor affine, one scale buffer for NF4 and
            MXFP, and for per-channel and per-block affine one more for asymmetric zero points
            unless they share the scale buffer.
            """
            if hasattr(self, '_m_parameter_buffers'):
                return self._m_parameter_buffers

            self._m_parameter_buffers = (0 if self.flags & 1 == 0 else (0 if self.quantization.scheme_tag == quantization.Quantization.Scheme.per_tensor_affine else ((1 if  ((self.quantization.scheme_fields.symmetric) or (self.quantization.scheme_fields.scale_buffer_index == self.quantization.scheme_fields.zero_point_buffer_index))  else 2) if self.quantization.scheme_tag == quantization.Quantization.Scheme.per_channel_affine else ((1 if  ((self.quantization.scheme_fields.symmetric) or (self.quantization.scheme_fields.scale_buffer_index == self.quantization.scheme_fields.zero_point_buffer_index))  else 2) if self.quantization.scheme_tag == quantization.Quantization.Scheme.per_block_affine else 1))))
            return getattr(self, '_m_parameter_buffers', None)


    class BufferHandle(KaitaiStruct):
        """One buffer handle, 8 + 4 + 1 + 1 + 1 + 1 = 16 bytes, bytes 13-15 read the
        buffer-protocol way (HT-BUFT-01, HD-09). The fields are read first, then checked in
        DIGEST Appendix A order: reserved byte, device, sync_mode, memory class, alignment, CPU
        sync, then the per-device pair.
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(TensorDescriptor.BufferHandle, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.byte_size = self._io.read_u8le()
            self.alignment = self._io.read_u4le()
            self.device_tag = KaitaiStream.resolve_enum(TensorDescriptor.Device, self._io.read_u1())
            self.sync_mode = KaitaiStream.resolve_enum(TensorDescriptor.SyncMode, self._io.read_u1())
            self.memory_class = KaitaiStream.resolve_enum(TensorDescriptor.MemoryClass, self._io.read_u1())
            self.reserved = self._io.read_bytes(1)
            self.reserved_zero = self._io.read_bytes(0)
            _ = self.reserved_zero
            if not self.reserved == b"\x00":
                raise kaitaistruct.ValidationExprError(self.reserved_zero, self._io, u"/types/buffer_handle/seq/6")
            self.device_known = self._io.read_bytes(0)
            _ = self.device_known
            if not  ((int(self.device_tag) <= 8) or ( ((int(self.device_tag) >= 240) and (int(self.device_tag) <= 254)) )) :
                raise kaitaistruct.ValidationExprError(self.device_known, self._io, u"/types/buffer_handle/seq/7")
            self.sync_known = self._io.read_bytes(0)
            _ = self.sync_known
            if not int(self.sync_mode) <= 2:
                raise kaitaistruct.ValidationExprError(self.sync_known, self._io, u"/types/buffer_handle/seq/8")
            self.class_known = self._io.read_bytes(0)
            _ = self.class_known
            if not int(self.memory_class) <= 3:
                raise kaitaistruct.ValidationExprError(self.class_known, self._io, u"/types/buffer_handle/seq/9")
            self.alignment_power_of_two = self._io.read_bytes(0)
            _ = self.alignment_power_of_two
            if not  ((self.alignment != 0) and (self.alignment & self.alignment - 1 == 0)) :
                raise kaitaistruct.ValidationExprError(self.alignment_power_of_two, self._io, u"/types/buffer_handle/seq/10")
            self.alignment_minimum = self._io.read_bytes(0)
            _ = self.alignment_minimum
            if not  ((self.byte_size == 0) or (self.alignment >= 64)) :
                raise kaitaistruct.ValidationExprError(self.alignment_minimum, self._io, u"/types/buffer_handle/seq/11")
            self.cpu_producer_synced = self._io.read_bytes(0)
            _ = self.cpu_producer_synced
            if not  ((self.device_tag != TensorDescriptor.Device.cpu) or (self.sync_mode == TensorDescriptor.SyncMode.producer_synced)) :
                raise kaitaistruct.ValidationExprError(self.cpu_producer_synced, self._io, u"/types/buffer_handle/seq/12")
            self.device_offers_class = self._io.read_bytes(0)
            _ = self.device_offers_class
            if not  ((self.memory_class == TensorDescriptor.MemoryClass.standard) or ( ((int(self.device_tag) <= 8) and (self.device_tag != TensorDescriptor.Device.webgpu) and ( ((self.memory_class == TensorDescriptor.MemoryClass.host_pinned) or (self.memory_class == TensorDescriptor.MemoryClass.unified)) )) ) or ( ((self.memory_class == TensorDescriptor.MemoryClass.peer) and ( ((self.device_tag == TensorDescriptor.Device.cuda) or (self.device_tag == TensorDescriptor.Device.rocm) or (self.device_tag == TensorDescriptor.Device.vulkan) or (self.device_tag == TensorDescriptor.Device.level_zero)) )) )) :
                raise kaitaistruct.ValidationExprError(self.device_offers_class, self._io, u"/types/buffer_handle/seq/13")


        def _fetch_instances(self):
            pass


    class Colocated(KaitaiStruct):
        """The colocation check of one buffer; reads nothing."""
        def __init__(self, index, _io, _parent=None, _root=None):
            super(TensorDescriptor.Colocated, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.index = index
            self._read()

        def _read(self):
            self.same_place = self._io.read_bytes(0)
            _ = self.same_place
            if not  ((self._parent.buffers[self.index].device_tag == self._parent.buffers[0].device_tag) and (self._parent.buffers[self.index].memory_class == self._parent.buffers[0].memory_class)) :
                raise kaitaistruct.ValidationExprError(self.same_place, self._io, u"/types/colocated/seq/0")


        def _fetch_instances(self):
            pass


    class CompositeHead(KaitaiStruct):
        """Composite head 0x0B, 1 + 1 + 2 + 4 = 8 bytes (HT-LAY-68)."""
        def __init__(self, _io, _parent=None, _root=None):
            super(TensorDescriptor.CompositeHead, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.composition_rule = KaitaiStream.resolve_enum(TensorDescriptor.CompositionRule, self._io.read_u1())
            if not isinstance(self.composition_rule, TensorDescriptor.CompositionRule):
                raise kaitaistruct.ValidationNotInEnumError(self.composition_rule, self._io, u"/types/composite_head/seq/0")
            self.combine_op = KaitaiStream.resolve_enum(TensorDescriptor.CombineOp, self._io.read_u1())
            _ = self.combine_op
            if not ( ((_ == TensorDescriptor.CombineOp.replace) or (_ == TensorDescriptor.CombineOp.add))  if self.composition_rule == TensorDescriptor.CompositionRule.overlay else _ == TensorDescriptor.CombineOp.none):
                raise kaitaistruct.ValidationExprError(self.combine_op, self._io, u"/types/composite_head/seq/1")
            self.reserved = self._io.read_bytes(2)
            if not self.reserved == b"\x00\x00":
                raise kaitaistruct.ValidationNotEqualError(b"\x00\x00", self.reserved, self._io, u"/types/composite_head/seq/2")
            self.member_count = self._io.read_u4le()
            _ = self.member_count
            if not  ((_ != 4294967295) and ( ((_ > 0) or (self.composition_rule != TensorDescriptor.CompositionRule.overlay)) )) :
                raise kaitaistruct.ValidationExprError(self.member_count, self._io, u"/types/composite_head/seq/3")


        def _fetch_instances(self):
            pass


    class CompositeMember(KaitaiStruct):
        """The composite-member section, 1 + 15 = 16 bytes (HT-SEC-35)."""
        def __init__(self, _io, _parent=None, _root=None):
            super(TensorDescriptor.CompositeMember, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.member_role = KaitaiStream.resolve_enum(TensorDescriptor.MemberRole, self._io.read_u1())
            if not isinstance(self.member_role, TensorDescriptor.MemberRole):
                raise kaitaistruct.ValidationNotInEnumError(self.member_role, self._io, u"/types/composite_member/seq/0")
            self.reserved = self._io.read_bytes(15)
            if not self.reserved == b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00":
                raise kaitaistruct.ValidationNotEqualError(b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", self.reserved, self._io, u"/types/composite_member/seq/1")


        def _fetch_instances(self):
            pass


    class Coo(KaitaiStruct):
        """COO layout 0x06, 8 + 1 + 7 = 16 bytes (HT-LAY-20)."""
        def __init__(self, _io, _parent=None, _root=None):
            super(TensorDescriptor.Coo, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.nnz = self._io.read_u8le()
            self.is_sorted = self._io.read_u1()
            if not self.is_sorted <= 1:
                raise kaitaistruct.ValidationGreaterThanError(1, self.is_sorted, self._io, u"/types/coo/seq/1")
            self.reserved = self._io.read_bytes(7)
            if not self.reserved == b"\x00\x00\x00\x00\x00\x00\x00":
                raise kaitaistruct.ValidationNotEqualError(b"\x00\x00\x00\x00\x00\x00\x00", self.reserved, self._io, u"/types/coo/seq/2")


        def _fetch_instances(self):
            pass


    class Csf(KaitaiStruct):
        """CSF layout 0x09, 16 + 4 x rank bytes (HT-LAY-42)."""
        def __init__(self, rank, _io, _parent=None, _root=None):
            super(TensorDescriptor.Csf, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.rank = rank
            self._read()

        def _read(self):
            self.nnz = self._io.read_u8le()
            self.mode_order = []
            for i in range(self.rank):
                self.mode_order.append(self._io.read_u4le())

            self.permutation = []
            for i in range(self.rank):
                self.permutation.append(TensorDescriptor.ModeOrderLevel(i, self._io, self, self._root))

            self.reserved = self._io.read_bytes(8)
            if not self.reserved == b"\x00\x00\x00\x00\x00\x00\x00\x00":
                raise kaitaistruct.ValidationNotEqualError(b"\x00\x00\x00\x00\x00\x00\x00\x00", self.reserved, self._io, u"/types/csf/seq/3")


        def _fetch_instances(self):
            pass
            for i in range(len(self.mode_order)):
                pass

            for i in range(len(self.permutation)):
                pass
                self.permutation[i]._fetch_instances()



    class Csr(KaitaiStruct):
        """CSR 0x07 (HT-LAY-26) and CSC 0x08 (HT-LAY-34) share these 8 + 8 = 16 bytes."""
        def __init__(self, _io, _parent=None, _root=None):
            super(TensorDescriptor.Csr, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.nnz = self._io.read_u8le()
            self.reserved = self._io.read_bytes(8)
            if not self.reserved == b"\x00\x00\x00\x00\x00\x00\x00\x00":
                raise kaitaistruct.ValidationNotEqualError(b"\x00\x00\x00\x00\x00\x00\x00\x00", self.reserved, self._io, u"/types/csr/seq/1")


        def _fetch_instances(self):
            pass


    class ExtensionType(KaitaiStruct):
        """The extension-type section, 4 + 1 x 6 + 2 + 4 + 1 + 1 + 2 = 20 bytes (HT-SEC-21). It
        sizes a private element type without interpreting its values (HT-SEC-34).
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(TensorDescriptor.ExtensionType, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.bit_width = self._io.read_u4le()
            _ = self.bit_width
            if not  ((_ == 1) or (_ == 2) or (_ == 4) or ( ((_ >= 8) and (_ % 8 == 0)) )) :
                raise kaitaistruct.ValidationExprError(self.bit_width, self._io, u"/types/extension_type/seq/0")
            self.packing_factor = self._io.read_u1()
            _ = self.packing_factor
            if not (_ == 1 if self.bit_width >= 8 else _ * self.bit_width == 8):
                raise kaitaistruct.ValidationExprError(self.packing_factor, self._io, u"/types/extension_type/seq/1")
            self.is_float = self._io.read_u1()
            if not self.is_float <= 1:
                raise kaitaistruct.ValidationGreaterThanError(1, self.is_float, self._io, u"/types/extension_type/seq/2")
            self.is_signed = self._io.read_u1()
            _ = self.is_signed
            if not  ((_ <= 1) and ( ((self.is_float == 0) or (_ == 0)) )) :
                raise kaitaistruct.ValidationExprError(self.is_signed, self._io, u"/types/extension_type/seq/3")
            self.sign_bits = self._io.read_u1()
            _ = self.sign_bits
            if not  ((_ <= 1) and ( ((self.is_float == 1) or (_ == 0)) )) :
                raise kaitaistruct.ValidationExprError(self.sign_bits, self._io, u"/types/extension_type/seq/4")
            self.exponent_bits = self._io.read_u1()
            _ = self.exponent_bits
            if not  ((self.is_float == 1) or (_ == 0)) :
                raise kaitaistruct.ValidationExprError(self.exponent_bits, self._io, u"/types/extension_type/seq/5")
            self.mantissa_bits = self._io.read_u1()
            _ = self.mantissa_bits
            if not  ((self.is_float == 1) or (_ == 0)) :
                raise kaitaistruct.ValidationExprError(self.mantissa_bits, self._io, u"/types/extension_type/seq/6")
            self.reserved = self._io.read_bytes(2)
            if not self.reserved == b"\x00\x00":
                raise kaitaistruct.ValidationNotEqualError(b"\x00\x00", self.reserved, self._io, u"/types/extension_type/seq/7")
            self.exponent_bias = self._io.read_u4le()
            _ = self.exponent_bias
            if not  ((self.is_float == 1) or (_ == 0)) :
                raise kaitaistruct.ValidationExprError(self.exponent_bias, self._io, u"/types/extension_type/seq/8")
            self.has_nan = self._io.read_u1()
            if not self.has_nan <= 1:
                raise kaitaistruct.ValidationGreaterThanError(1, self.has_nan, self._io, u"/types/extension_type/seq/9")
            self.has_inf = self._io.read_u1()
            if not self.has_inf <= 1:
                raise kaitaistruct.ValidationGreaterThanError(1, self.has_inf, self._io, u"/types/extension_type/seq/10")
            self.reserved2 = self._io.read_bytes(2)
            if not self.reserved2 == b"\x00\x00":
                raise kaitaistruct.ValidationNotEqualError(b"\x00\x00", self.reserved2, self._io, u"/types/extension_type/seq/11")


        def _fetch_instances(self):
            pass


    class Hilbert(KaitaiStruct):
        """Hilbert curve layout 0x40, 4 + 4 = 8 bytes (HT-LAY-77)."""
        def __init__(self, _io, _parent=None, _root=None):
            super(TensorDescriptor.Hilbert, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.hilbert_order = self._io.read_u4le()
            if not self.hilbert_order >= 1:
                raise kaitaistruct.ValidationLessThanError(1, self.hilbert_order, self._io, u"/types/hilbert/seq/0")
            self.hilbert_rank = self._io.read_u4le()
            if not self.hilbert_rank >= 2:
                raise kaitaistruct.ValidationLessThanError(2, self.hilbert_rank, self._io, u"/types/hilbert/seq/1")


        def _fetch_instances(self):
            pass


    class ModeOrderLevel(KaitaiStruct):
        """The permutation check of one CSF level; reads nothing."""
        def __init__(self, level, _io, _parent=None, _root=None):
            super(TensorDescriptor.ModeOrderLevel, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.level = level
            self._read()

        def _read(self):
            self.in_range = self._io.read_bytes(0)
            _ = self.in_range
            if not self._parent.mode_order[self.level] < self._parent.rank:
                raise kaitaistruct.ValidationExprError(self.in_range, self._io, u"/types/mode_order_level/seq/0")
            self.differs_from_earlier = []
            for i in range(self.level):
                self.differs_from_earlier.append(TensorDescriptor.ModeOrderPair(self.level, i, self._io, self, self._root))



        def _fetch_instances(self):
            pass
            for i in range(len(self.differs_from_earlier)):
                pass
                self.differs_from_earlier[i]._fetch_instances()



    class ModeOrderPair(KaitaiStruct):
        """One pair of CSF levels whose dimensions must differ; reads nothing."""
        def __init__(self, level, earlier, _io, _parent=None, _root=None):
            super(TensorDescriptor.ModeOrderPair, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.level = level
            self.earlier = earlier
            self._read()

        def _read(self):
            self.distinct = self._io.read_bytes(0)
            _ = self.distinct
            if not self._parent._parent.mode_order[self.level] != self._parent._parent.mode_order[self.earlier]:
                raise kaitaistruct.ValidationExprError(self.distinct, self._io, u"/types/mode_order_pair/seq/0")


        def _fetch_instances(self):
            pass


    class Morton(KaitaiStruct):
        """Morton (Z-order) layout 0x05, 4 x rank bytes (HT-LAY-16)."""
        def __init__(self, rank, _io, _parent=None, _root=None):
            super(TensorDescriptor.Morton, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.rank = rank
            self._read()

        def _read(self):
            self.morton_bits = []
            for i in range(self.rank):
                self.morton_bits.append(self._io.read_u4le())
                if not self.morton_bits[i] >= 1:
                    raise kaitaistruct.ValidationLessThanError(1, self.morton_bits[i], self._io, u"/types/morton/seq/0")



        def _fetch_instances(self):
            pass
            for i in range(len(self.morton_bits)):
                pass



    class MortonFit(KaitaiStruct):
        """The extent check of one Morton axis; reads nothing."""
        def __init__(self, axis, _io, _parent=None, _root=None):
            super(TensorDescriptor.MortonFit, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.axis = axis
            self._read()

        def _read(self):
            self.fits = self._io.read_bytes(0)
            _ = self.fits
            if not  ((self._parent.shape[self.axis] == 18446744073709551615) or (self._parent.layout.morton_bits[self.axis] >= 64) or (self._parent.shape[self.axis] <= 1 << self._parent.layout.morton_bits[self.axis])) :
                raise kaitaistruct.ValidationExprError(self.fits, self._io, u"/types/morton_fit/seq/0")


        def _fetch_instances(self):
            pass


    class NoFields(KaitaiStruct):
        """Row-major (HT-LAY-01) and column-major (HT-LAY-02) carry no layout bytes."""
        def __init__(self, _io, _parent=None, _root=None):
            super(TensorDescriptor.NoFields, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            pass


        def _fetch_instances(self):
            pass


    class PrivateLayout(KaitaiStruct):
        """A private layout 0xF0-0xFE, 8 + 4 + n bytes (HT-LAY-84). hurray_decl reads the ids
        registered with it; this schema has an empty registry.
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(TensorDescriptor.PrivateLayout, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.extension_layout_id = self._io.read_u8le()
            _ = self.extension_layout_id
            if not False:
                raise kaitaistruct.ValidationExprError(self.extension_layout_id, self._io, u"/types/private_layout/seq/0")
            self.extension_data_length = self._io.read_u4le()
            self.extension_data = self._io.read_bytes(self.extension_data_length)


        def _fetch_instances(self):
            pass


    class Shard(KaitaiStruct):
        """The shard section, 8 x rank + 8 x rank bytes (HT-SEC-03)."""
        def __init__(self, rank, _io, _parent=None, _root=None):
            super(TensorDescriptor.Shard, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.rank = rank
            self._read()

        def _read(self):
            self.parent_shape = []
            for i in range(self.rank):
                self.parent_shape.append(self._io.read_u8le())

            self.shard_offset = []
            for i in range(self.rank):
                self.shard_offset.append(self._io.read_u8le())



        def _fetch_instances(self):
            pass
            for i in range(len(self.parent_shape)):
                pass

            for i in range(len(self.shard_offset)):
                pass



    class ShardBound(KaitaiStruct):
        """The bounds check of one shard axis; reads nothing."""
        def __init__(self, axis, _io, _parent=None, _root=None):
            super(TensorDescriptor.ShardBound, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.axis = axis
            self._read()

        def _read(self):
            self.inside_parent = self._io.read_bytes(0)
            _ = self.inside_parent
            if not  ((self._parent.shard.shard_offset[self.axis] <= self._parent.shard.parent_shape[self.axis]) and (self._parent.shape[self.axis] <= self._parent.shard.parent_shape[self.axis] - self._parent.shard.shard_offset[self.axis])) :
                raise kaitaistruct.ValidationExprError(self.inside_parent, self._io, u"/types/shard_bound/seq/0")


        def _fetch_instances(self):
            pass


    class Statistics(KaitaiStruct):
        """The statistics section, 4 + 4 + 8 x 7 + 1 + 1 + 1 + 1 + 4 = 72 bytes (HT-SEC-08). A
        statistic whose computed_mask bit is clear is unknown and never checked (HT-SEC-12).
        """
        def __init__(self, _io, _parent=None, _root=None):
            super(TensorDescriptor.Statistics, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self._read()

        def _read(self):
            self.computed_mask = self._io.read_u4le()
            _ = self.computed_mask
            if not _ & 4294967232 == 0:
                raise kaitaistruct.ValidationExprError(self.computed_mask, self._io, u"/types/statistics/seq/0")
            self.reserved = self._io.read_bytes(4)
            if not self.reserved == b"\x00\x00\x00\x00":
                raise kaitaistruct.ValidationNotEqualError(b"\x00\x00\x00\x00", self.reserved, self._io, u"/types/statistics/seq/1")
            self.nnz = self._io.read_u8le()
            self.sparsity_ratio = self._io.read_f8le()
            self.value_min = self._io.read_f8le()
            self.value_max = self._io.read_f8le()
            self.value_abs_max = self._io.read_f8le()
            self.value_mean = self._io.read_f8le()
            self.value_stddev = self._io.read_f8le()
            _ = self.value_stddev
            if not  ((self.computed_mask & 8 == 0) or (_ >= 0)) :
                raise kaitaistruct.ValidationExprError(self.value_stddev, self._io, u"/types/statistics/seq/8")
            self.nm_n = self._io.read_u1()
            self.nm_m = self._io.read_u1()
            _ = self.nm_m
            if not  ((self.computed_mask & 16 == 0) or (self.nm_n <= _)) :
                raise kaitaistruct.ValidationExprError(self.nm_m, self._io, u"/types/statistics/seq/10")
            self.has_nan = self._io.read_u1()
            _ = self.has_nan
            if not  ((self.computed_mask & 32 == 0) or (_ <= 1)) :
                raise kaitaistruct.ValidationExprError(self.has_nan, self._io, u"/types/statistics/seq/11")
            self.has_inf = self._io.read_u1()
            _ = self.has_inf
            if not  ((self.computed_mask & 32 == 0) or (_ <= 1)) :
                raise kaitaistruct.ValidationExprError(self.has_inf, self._io, u"/types/statistics/seq/12")
            self.reserved2 = self._io.read_bytes(4)
            if not self.reserved2 == b"\x00\x00\x00\x00":
                raise kaitaistruct.ValidationNotEqualError(b"\x00\x00\x00\x00", self.reserved2, self._io, u"/types/statistics/seq/13")


        def _fetch_instances(self):
            pass


    class Strided(KaitaiStruct):
        """Strided layout 0x03, 8 x rank bytes (HT-LAY-03)."""
        def __init__(self, rank, _io, _parent=None, _root=None):
            super(TensorDescriptor.Strided, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.rank = rank
            self._read()

        def _read(self):
            self.strides = []
            for i in range(self.rank):
                self.strides.append(self._io.read_s8le())



        def _fetch_instances(self):
            pass
            for i in range(len(self.strides)):
                pass



    class Tiled(KaitaiStruct):
        """Tiled layout 0x04: 8 x rank + 4 bytes, then the optional parts its two order bytes select
        (HT-LAY-07). Nests at most 8 tiled payloads deep, the top one included (HT-LAY-12).
        """
        def __init__(self, rank, depth, _io, _parent=None, _root=None):
            super(TensorDescriptor.Tiled, self).__init__(_io)
            self._parent = _parent
            self._root = _root
            self.rank = rank
            self.depth = depth
            self._read()

        def _read(self):
            self.tile_shape = []
            for i in range(self.rank):
                self.tile_shape.append(self._io.read_u8le())
                if not self.tile_shape[i] >= 1:
                    raise kaitaistruct.ValidationLessThanError(1, self.tile_shape[i], self._io, u"/types/tiled/seq/0")

            self.outer_layout = KaitaiStream.resolve_enum(TensorDescriptor.TileOrder, self._io.read_u1())
            _ = self.outer_layout
            if not  ((int(_) >= 1) and (int(_) <= 3)) :
                raise kaitaistruct.ValidationExprError(self.outer_layout, self._io, u"/types/tiled/seq/1")
            self.inner_layout = KaitaiStream.resolve_enum(TensorDescriptor.TileOrder, self._io.read_u1())
            if not isinstance(self.inner_layout, TensorDescriptor.TileOrder):
                raise kaitaistruct.ValidationNotInEnumError(self.inner_layout, self._io, u"/types/tiled/seq/2")
            self.nesting_limit = self._io.read_bytes(0)
            _ = self.nesting_limit
            if not  ((self.depth < 8) or (self.inner_layout != TensorDescriptor.TileOrder.nested)) :
                raise kaitaistruct.ValidationExprError(self.nesting_limit, self._io, u"/types/tiled/seq/3")
            self.reserved = self._io.read_bytes(2)
            if not self.reserved == b"\x00\x00":
                raise kaitaistruct.ValidationNotEqualError(b"\x00\x00", self.reserved, self._io, u"/types/tiled/seq/4")
            if self.outer_layout == TensorDescriptor.TileOrder.strided:
                pass
                self.outer_strides = []
                for i in range(self.rank):
                    self.outer_strides.append(self._io.read_s8le())


            if self.inner_layout == TensorDescriptor.TileOrder.strided:
                pass
                self.inner_strides = []
                for i in range(self.rank):
                    self.inner_strides.append(self._io.read_s8le())


            if self.inner_layout == TensorDescriptor.TileOrder.nested:
                pass
                self.nested = TensorDescriptor.Tiled(self.rank, self.depth + 1, self._io, self, self._root)



        def _fetch_instances(self):
            pass
            for i in range(len(self.tile_shape)):
                pass

            if self.outer_layout == TensorDescriptor.TileOrder.strided:
                pass
                for i in range(len(self.outer_strides)):
                    pass


            if self.inner_layout == TensorDescriptor.TileOrder.strided:
                pass
                for i in range(len(self.inner_strides)):
                    pass


            if self.inner_layout == TensorDescriptor.TileOrder.nested:
                pass
                self.nested._fetch_instances()




