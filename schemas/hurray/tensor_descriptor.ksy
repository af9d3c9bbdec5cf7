meta:
  id: tensor_descriptor
  title: Hurray tensor descriptor (fixed header, shape, layout fields, buffer table, sections)
  license: MIT
  ks-version: '0.11'
  endian: le
  imports:
    - quantization
    - per_channel_affine
    - per_block_affine
doc: |
  One Hurray tensor descriptor, read from the start of a stream. The first 10 bytes give
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
doc-ref:
  - ../shared/spec/hurray/DIGEST.md § 5, Appendix A
  - ../shared/spec/RULES.md HT-HDR, HT-LAY, HT-BUFT, HT-SEC, HE
seq:
  - id: fits_preamble
    size: 0
    -checks: descriptor_length
    valid:
      expr: _io.size - _io.pos >= 10
    doc: |
      The input holds the first 10 bytes, magic to descriptor_length; anything shorter is a
      truncated descriptor (HT-HDR-08), whatever its first bytes are.
  - id: magic
    size: 4
    valid: '[0x48, 0x52, 0x52, 0x59]'
    doc: '"HRRY" at offset 0; anything else is not a Hurray descriptor (HT-HDR-04).'
  - id: version_major
    type: u1
    valid:
      min: 1
      max: 1
    doc: |
      Format major version, offset 4: 1. Above 1 is newer than this reader (HT-HDR-05); 0 has
      no migration path (HT-HDR-06).
  - id: version_minor
    type: u1
    doc: |
      Format minor version, offset 5. Newer minors are read; nothing past the known sections is
      interpreted (HT-HDR-11).
  - id: descriptor_length
    type: u4
    valid:
      min: 20
    doc: |
      Total bytes of the descriptor, offset 6, the fixed header included (HT-HDR-09); below the
      20-byte fixed header is refused (HT-HDR-07).
  - id: body
    size: 'descriptor_length - 10 <= _io.size - _io.pos ? descriptor_length - 10 : _io.size - _io.pos'
    type: body
    doc: |
      Everything after descriptor_length, read from at most descriptor_length - 10 bytes, so
      nothing after the descriptor is read (HT-HDR-10). Each field is checked in Appendix A
      order before a short input is refused as truncated (HT-HDR-08, input_holds_descriptor).
types:
  body:
    doc: |
      The descriptor from offset 10 (flags) to descriptor_length. Offsets in field docs count
      from the start of the descriptor.
    seq:
      - id: flags
        type: u4
        valid:
          expr: (_ & 0xffffffe0) == 0
        doc: |
          Offset 10. Bit 0 HAS_QUANTIZATION, 1 HAS_SHARD, 2 HAS_EXTENSION_TYPE, 3
          HAS_STATISTICS, 4 HAS_COMPOSITE_MEMBER; a set bit in 5-31 is refused at any minor
          version (HT-HDR-12).
      - id: type_tag
        type: u1
        enum: element_type
        valid:
          expr: >-
            (_.to_i >= 0x01 and _.to_i <= 0x04) or (_.to_i >= 0x10 and _.to_i <= 0x17)
            or _.to_i == 0x20 or (_.to_i >= 0x40 and _.to_i <= 0x46)
            or (_.to_i >= 0x48 and _.to_i <= 0x4b) or _.to_i == 0x50 or _.to_i == 0x51
            or (_.to_i >= 0xf0 and _.to_i <= 0xfe)
        doc: |
          Element (storage) type, offset 14: an element_type, or a private tag 0xF0-0xFE sized
          by the extension-type section. 0x00 and 0xFF are invalid (HE-02), unassigned tags are
          unrecognised (HE-03), 0x80-0xEF are reserved (HE-05) and 0x47 is reserved (HE-06).
      - id: layout_tag
        type: u1
        enum: layout
        valid:
          expr: >-
            (_.to_i >= 0x01 and _.to_i <= 0x0b) or _.to_i == 0x40
            or (_.to_i >= 0xf0 and _.to_i <= 0xfe)
        doc: |
          Memory layout, offset 15; selects the layout fields. 0x00 and 0xFF are invalid
          (HT-HDR-15); a tag neither assigned nor private is refused in strict mode (HT-HDR-16).
      - id: rank
        type: u4
        valid:
          max: 64
        doc: Number of dimensions, offset 16; 0 is a scalar, above 64 is refused (HT-HDR-13).
      - id: shape
        type: u8
        repeat: expr
        repeat-expr: rank
        doc: |
          u64[rank], dimension 0 first (HT-HDR-02). 0xFFFFFFFFFFFFFFFF is DYNAMIC: nothing is
          computed through it (HT-HDR-18).
      - id: byte_offset
        type: u8
        doc: Bytes from the start of buffer 0 to element [0, ..., 0].
      - id: scalar_is_row_major
        size: 0
        -checks: layout_tag
        valid:
          expr: rank > 0 or layout_tag == layout::row_major
        doc: A rank-0 scalar uses the row-major layout (HT-HDR-21), checked before its fields.
      - id: layout
        type:
          switch-on: layout_tag
          cases:
            'layout::row_major': no_fields
            'layout::column_major': no_fields
            'layout::strided': strided(rank)
            'layout::tiled': tiled(rank, 1)
            'layout::morton': morton(rank)
            'layout::coo': coo
            'layout::csr': csr
            'layout::csc': csr
            'layout::csf': csf(rank)
            'layout::block_paged': block_paged
            'layout::composite_head': composite_head
            'layout::hilbert': hilbert
            _: private_layout
        doc: |
          The layout-specific fields (HT-LAY-01, HT-LAY-02, HT-LAY-03, HT-LAY-07, HT-LAY-16,
          HT-LAY-20, HT-LAY-26, HT-LAY-34, HT-LAY-42, HT-LAY-53, HT-LAY-68, HT-LAY-77,
          HT-LAY-84); every private tag 0xF0-0xFE shares private_layout.
      - id: rank_fits_layout
        size: 0
        -checks: rank
        valid:
          expr: >-
            layout_tag == layout::csr ? rank == 2 :
            layout_tag == layout::csc ? rank == 2 :
            layout_tag == layout::csf ? rank >= 3 :
            layout_tag == layout::block_paged ? rank == 3 : true
        doc: |
          CSR needs rank 2 (HT-LAY-25), CSC rank 2 (HT-LAY-33), CSF rank 3 or more (HT-LAY-41)
          and block-paged rank 3 (HT-LAY-52).
      - id: extension_flag_matches_type
        size: 0
        -checks: flags
        valid:
          expr: ((flags & 0x04) != 0) == (type_tag.to_i >= 0xf0 and type_tag.to_i <= 0xfe)
        doc: |
          HAS_EXTENSION_TYPE is set exactly for a private type tag: a private tag without it
          (HT-SEC-19) and the flag with a public tag (HT-SEC-20) are refused.
      - id: buffer_count
        type: u1
        doc: Number of 16-byte buffer handles that follow, at most 255 (HT-BUFT-01).
      - id: head_owns_no_buffers
        size: 0
        -checks: buffer_count
        valid:
          expr: layout_tag != layout::composite_head or buffer_count == 0
        doc: A composite head has buffer_count 0 (HT-BUFT-03).
      - id: buffers_present
        size: 0
        -checks: buffer_count
        valid:
          expr: layout_tag == layout::composite_head or buffer_count > 0
        doc: Every layout but the composite head has at least one buffer (HT-BUFT-02).
      - id: head_byte_offset
        size: 0
        -checks: byte_offset
        valid:
          expr: layout_tag != layout::composite_head or byte_offset == 0
        doc: A composite head has byte_offset 0 (HT-HDR-20).
      - id: sparse_byte_offset
        size: 0
        -checks: byte_offset
        valid:
          expr: >-
            byte_offset == 0 or (layout_tag != layout::coo and layout_tag != layout::csr
            and layout_tag != layout::csc and layout_tag != layout::csf
            and layout_tag != layout::block_paged)
        doc: COO, CSR, CSC, CSF and block-paged tensors have byte_offset 0 (HT-HDR-20).
      - id: buffers
        type: buffer_handle
        repeat: expr
        repeat-expr: buffer_count
        doc: The buffer table (HT-BUFT-01).
      - id: quantization_length
        type: u4
        if: (flags & 0x01) != 0
        doc: Bytes of the quantization descriptor that follow, not counting this prefix (HT-SEC-01).
      - id: quantization_fits
        size: 0
        if: (flags & 0x01) != 0
        -checks: quantization_length
        valid:
          expr: quantization_length <= _io.size - _io.pos
        doc: |
          The quantization section is sliced first: a quantization_length past the end of the
          descriptor is truncated (HT-HDR-08), before the composite-head check.
      - id: head_not_quantized
        size: 0
        -checks: flags
        valid:
          expr: layout_tag != layout::composite_head or (flags & 0x01) == 0
        doc: |
          A composite head carries no quantization section (HT-LAY-76), checked once the section
          is sliced and before its payload is decoded.
      - id: quantization
        type: quantization
        size: quantization_length
        if: (flags & 0x01) != 0
        doc: |
          The quantization descriptor, decoded from exactly quantization_length bytes
          (HT-SEC-01); a length past descriptor_length is truncated (HT-HDR-08).
      - id: colocation
        type: colocated(_index)
        repeat: expr
        repeat-expr: buffer_count
        -checks: buffers
        doc: |
          Every buffer shares buffer 0's device_tag (HT-BUFT-24; HQ-BUF-06 for a parameter
          buffer) and memory_class (HT-BUFT-25).
      - id: buffer_count_exact
        size: 0
        -checks: buffer_count
        valid:
          expr: buffer_count == layout_buffers + parameter_buffers
        doc: |
          buffer_count is the layout's own buffers plus the distinct parameter buffers the
          quantization descriptor references: dense 1 (HT-BUFT-04, quantized HT-BUFT-05), COO 2
          (HT-BUFT-06), CSR 3 (HT-BUFT-07), CSC 3 (HT-BUFT-08), CSF 2 x rank + 1 (HT-BUFT-09),
          block-paged 3 (HT-BUFT-10), all plus the parameters.
      - id: shard
        type: shard(rank)
        if: (flags & 0x02) != 0
        doc: Where this tensor sits inside its parent (HT-SEC-03).
      - id: shard_allowed
        size: 0
        -checks: flags
        valid:
          expr: >-
            (flags & 0x02) == 0
            or (layout_tag != layout::block_paged and layout_tag != layout::csf)
        doc: Block-paged (HT-SEC-06) and CSF (HT-SEC-07) tensors are never sharded.
      - id: shard_static
        size: 0
        -checks: shard
        valid:
          expr: >-
            (flags & 0x02) == 0 or rank == 0
            or (shape.max != 0xffff_ffff_ffff_ffff
            and shard.parent_shape.max != 0xffff_ffff_ffff_ffff
            and shard.shard_offset.max != 0xffff_ffff_ffff_ffff)
        doc: |
          A sharded tensor has no DYNAMIC value in shape, parent_shape or shard_offset
          (HT-SEC-05).
      - id: shard_bounds
        type: shard_bound(_index)
        repeat: expr
        repeat-expr: rank
        if: (flags & 0x02) != 0
        -checks: shard
        doc: |
          Per axis k, shard_offset[k] + shape[k] <= parent_shape[k], computed without overflow
          (HT-SEC-04).
      - id: statistics
        type: statistics
        if: (flags & 0x08) != 0
        doc: Advisory statistics; on the wire before the extension type (HT-SEC-08).
      - id: statistics_nnz
        size: 0
        -checks: statistics
        valid:
          expr: >-
            (flags & 0x08) == 0 or (statistics.computed_mask & 0x01) == 0
            or (layout_tag == layout::coo ? statistics.nnz == layout.as<coo>.nnz :
            layout_tag == layout::csr or layout_tag == layout::csc ? statistics.nnz == layout.as<csr>.nnz :
            layout_tag == layout::csf ? statistics.nnz == layout.as<csf>.nnz : true)
        doc: |
          For COO, CSR, CSC and CSF, a statistics nnz marked known equals the layout's nnz
          (HT-SEC-16).
      - id: extension_type
        type: extension_type
        if: (flags & 0x04) != 0
        doc: How to size a private element type (HT-SEC-21).
      - id: composite_member
        type: composite_member
        if: (flags & 0x10) != 0
        doc: This descriptor's role inside an overlay composite (HT-SEC-35).
      - id: head_not_member
        size: 0
        -checks: flags
        valid:
          expr: layout_tag != layout::composite_head or (flags & 0x10) == 0
        doc: A composite head carries no composite-member section (HT-SEC-38).
      - id: input_holds_descriptor
        size: 0
        -checks: descriptor_length
        valid:
          expr: _root._io.size >= _root.descriptor_length
        doc: |
          After the last section: an input shorter than descriptor_length is truncated
          (HT-HDR-08); a field that runs past its end is refused as truncated where it is read.
      - id: trailing
        size-eos: true
        doc: |
          Bytes after the known sections, up to descriptor_length: skipped, never interpreted,
          when version_minor > 0 (HT-HDR-11).
      - id: length_matches
        size: 0
        -checks: descriptor_length
        valid:
          expr: _root.version_minor > 0 or trailing.size == 0
        doc: |
          At minor version 0, descriptor_length is exactly the size of the sections parsed
          (HT-HDR-09).
      # Rules that need every section, in the order hurray_decl checks them last.
      - id: byte_offset_in_buffer
        size: 0
        -checks: byte_offset
        valid:
          expr: buffer_count == 0 or byte_offset <= buffers[0].byte_size
        doc: byte_offset is at most the byte_size of buffer 0 (HT-HDR-19).
      - id: morton_fits_shape
        type: morton_fit(_index)
        repeat: expr
        repeat-expr: rank
        if: layout_tag == layout::morton
        -checks: morton_bits
        doc: Per axis k, shape[k] <= 2^morton_bits[k] (HT-LAY-18).
      - id: hilbert_rank_is_rank
        size: 0
        -checks: hilbert_rank
        valid:
          expr: layout_tag != layout::hilbert or layout.as<hilbert>.hilbert_rank == rank
        doc: hilbert_rank equals rank (HT-LAY-79).
      - id: hilbert_shape
        size: 0
        -checks: shape
        valid:
          expr: >-
            layout_tag != layout::hilbert
            or (layout.as<hilbert>.hilbert_order < 64 and shape.min == shape.max
            and shape.min == 1 << layout.as<hilbert>.hilbert_order)
        doc: Every shape[k] is 2^hilbert_order (HT-LAY-81).
    instances:
      layout_buffers:
        value: >-
          layout_tag == layout::coo ? 2 :
          layout_tag == layout::csr ? 3 :
          layout_tag == layout::csc ? 3 :
          layout_tag == layout::csf ? 2 * rank + 1 :
          layout_tag == layout::block_paged ? 3 :
          layout_tag == layout::composite_head ? 0 : 1
        doc: L, the buffers the layout itself owns (DIGEST § 5.7); parameters come after them.
      parameter_buffers:
        value: >-
          (flags & 0x01) == 0 ? 0 :
          quantization.scheme_tag == quantization::scheme::per_tensor_affine ? 0 :
          quantization.scheme_tag == quantization::scheme::per_channel_affine ?
          (quantization.scheme_fields.as<per_channel_affine>.symmetric
          or quantization.scheme_fields.as<per_channel_affine>.scale_buffer_index
          == quantization.scheme_fields.as<per_channel_affine>.zero_point_buffer_index ? 1 : 2) :
          quantization.scheme_tag == quantization::scheme::per_block_affine ?
          (quantization.scheme_fields.as<per_block_affine>.symmetric
          or quantization.scheme_fields.as<per_block_affine>.scale_buffer_index
          == quantization.scheme_fields.as<per_block_affine>.zero_point_buffer_index ? 1 : 2) :
          1
        doc: |
          Distinct parameter buffers: none for per-tensor affine, one scale buffer for NF4 and
          MXFP, and for per-channel and per-block affine one more for asymmetric zero points
          unless they share the scale buffer.
  no_fields:
    doc: Row-major (HT-LAY-01) and column-major (HT-LAY-02) carry no layout bytes.
    seq: []
  strided:
    doc: Strided layout 0x03, 8 x rank bytes (HT-LAY-03).
    params:
      - id: rank
        type: u4
    seq:
      - id: strides
        type: s8
        repeat: expr
        repeat-expr: rank
        doc: |
          i64[rank]: step between neighbours along each axis, in logical elements; negative and
          zero steps are accepted (HT-LAY-04).
  tiled:
    doc: |
      Tiled layout 0x04: 8 x rank + 4 bytes, then the optional parts its two order bytes select
      (HT-LAY-07). Nests at most 8 tiled payloads deep, the top one included (HT-LAY-12).
    params:
      - id: rank
        type: u4
      - id: depth
        type: u1
        doc: 1 for the top tiled payload, one more per nested payload.
    seq:
      - id: tile_shape
        type: u8
        repeat: expr
        repeat-expr: rank
        valid:
          min: 1
        doc: u64[rank], elements per tile along each axis; 0 is refused (HT-LAY-08).
      - id: outer_layout
        type: u1
        enum: tile_order
        valid:
          expr: _.to_i >= 0x01 and _.to_i <= 0x03
        doc: Order of the tile grid, 0x01-0x03; anything else is refused (HT-LAY-09).
      - id: inner_layout
        type: u1
        enum: tile_order
        valid:
          in-enum: true
        doc: Order inside a tile, 0x01-0x04; anything else is refused (HT-LAY-10).
      - id: nesting_limit
        size: 0
        -checks: inner_layout
        valid:
          expr: depth < 8 or inner_layout != tile_order::nested
        doc: A ninth nested tiled payload is refused (HT-LAY-12).
      - id: reserved
        -orig-id: _reserved
        size: 2
        valid: '[0x00, 0x00]'
        doc: Two zero bytes; a non-zero byte is refused (HT-LAY-11).
      - id: outer_strides
        type: s8
        repeat: expr
        repeat-expr: rank
        if: outer_layout == tile_order::strided
        doc: i64[rank], in tiles; present exactly when outer_layout is 0x03 (HT-LAY-07).
      - id: inner_strides
        type: s8
        repeat: expr
        repeat-expr: rank
        if: inner_layout == tile_order::strided
        doc: i64[rank], in elements; present exactly when inner_layout is 0x03 (HT-LAY-07).
      - id: nested
        type: tiled(rank, depth + 1)
        if: inner_layout == tile_order::nested
        doc: The next tiled payload, present exactly when inner_layout is 0x04 (HT-LAY-07).
  morton:
    doc: Morton (Z-order) layout 0x05, 4 x rank bytes (HT-LAY-16).
    params:
      - id: rank
        type: u4
    seq:
      - id: morton_bits
        type: u4
        repeat: expr
        repeat-expr: rank
        valid:
          min: 1
        doc: u32[rank], index bits per axis; 0 is refused (HT-LAY-17).
  coo:
    doc: COO layout 0x06, 8 + 1 + 7 = 16 bytes (HT-LAY-20).
    seq:
      - id: nnz
        type: u8
        doc: Stored entries; may be 0.
      - id: is_sorted
        type: u1
        valid:
          max: 1
        doc: 0x01 sorted, 0x00 unsorted; any other value is refused (HT-LAY-20, HD-21).
      - id: reserved
        -orig-id: _reserved
        size: 7
        valid: '[0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]'
        doc: Seven zero bytes; a non-zero byte is refused (HT-LAY-21).
  csr:
    doc: CSR 0x07 (HT-LAY-26) and CSC 0x08 (HT-LAY-34) share these 8 + 8 = 16 bytes.
    seq:
      - id: nnz
        type: u8
        doc: Stored entries; may be 0.
      - id: reserved
        -orig-id: _reserved
        size: 8
        valid: '[0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]'
        doc: Eight zero bytes; a non-zero byte is refused (HT-LAY-27 for CSR, HT-LAY-35 for CSC).
  csf:
    doc: CSF layout 0x09, 16 + 4 x rank bytes (HT-LAY-42).
    params:
      - id: rank
        type: u4
    seq:
      - id: nnz
        type: u8
        doc: Stored entries; may be 0.
      - id: mode_order
        type: u4
        repeat: expr
        repeat-expr: rank
        doc: u32[rank], the dimension stored at each level; a permutation of 0 ... rank - 1.
      - id: permutation
        type: mode_order_level(_index)
        repeat: expr
        repeat-expr: rank
        -checks: mode_order
        doc: |
          Each entry is below rank and differs from every earlier one, so mode_order is a
          permutation (HT-LAY-44); checked once the whole array is read.
      - id: reserved
        -orig-id: _reserved
        size: 8
        valid: '[0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]'
        doc: Eight zero bytes; a non-zero byte is refused (HT-LAY-43).
  mode_order_level:
    doc: The permutation check of one CSF level; reads nothing.
    params:
      - id: level
        type: u4
    seq:
      - id: in_range
        size: 0
        -checks: mode_order
        valid:
          expr: _parent.mode_order[level] < _parent.rank
        doc: mode_order[level] names a dimension, below rank (HT-LAY-44).
      - id: differs_from_earlier
        type: mode_order_pair(level, _index)
        repeat: expr
        repeat-expr: level
        -checks: mode_order
        doc: mode_order[level] differs from the entry of every earlier level (HT-LAY-44).
  mode_order_pair:
    doc: One pair of CSF levels whose dimensions must differ; reads nothing.
    params:
      - id: level
        type: u4
      - id: earlier
        type: u4
    seq:
      - id: distinct
        size: 0
        -checks: mode_order
        valid:
          expr: _parent._parent.mode_order[level] != _parent._parent.mode_order[earlier]
        doc: Levels level and earlier store different dimensions (HT-LAY-44).
  block_paged:
    doc: Block-paged KV cache 0x0A, 4 + 8 + 4 + 4 + 1 + 4 + 1 + 6 = 32 bytes (HT-LAY-53).
    seq:
      - id: page_size
        type: u4
        valid:
          min: 1
        doc: Tokens per page; 0 is refused (HT-LAY-55).
      - id: num_pages
        type: u8
        doc: Physical pages in the pool.
      - id: paged_axis
        type: u4
        valid:
          max: 0
        doc: The paged logical axis; only axis 0 is accepted in strict mode (HT-LAY-56).
      - id: num_seqs
        type: u4
        doc: Number of sequences; may be 0.
      - id: kv_role
        type: u1
        enum: kv_role
        valid:
          in-enum: true
        doc: 0x00 key, 0x01 value, 0x02 fused or generic; other values are refused (HT-LAY-53).
      - id: layer_index
        type: u4
        doc: Model layer; 0xFFFFFFFF means not tied to a layer.
      - id: block_table_index_type
        type: u1
        enum: block_table_index_type
        valid:
          in-enum: true
        doc: Entry type of buffers 1 and 2, 0x00 u32 or 0x01 u64; others are refused (HT-LAY-53).
      - id: reserved
        -orig-id: _reserved
        size: 6
        valid: '[0x00, 0x00, 0x00, 0x00, 0x00, 0x00]'
        doc: Six zero bytes; a non-zero byte is refused (HT-LAY-54).
  composite_head:
    doc: Composite head 0x0B, 1 + 1 + 2 + 4 = 8 bytes (HT-LAY-68).
    seq:
      - id: composition_rule
        type: u1
        enum: composition_rule
        valid:
          in-enum: true
        doc: |
          0x01 partition, 0x02 overlay, 0x03 group. 0x00, 0x04-0xEF and 0xFF are refused
          (HT-LAY-69); private rules 0xF0-0xFE need an agreement, and none is registered
          (HT-LAY-70).
      - id: combine_op
        type: u1
        enum: combine_op
        valid:
          expr: >-
            composition_rule == composition_rule::overlay
            ? (_ == combine_op::replace or _ == combine_op::add) : _ == combine_op::none
        doc: 0x00 for partition and group (HT-LAY-71); 0x01 or 0x02 for an overlay (HT-LAY-72).
      - id: reserved
        -orig-id: _reserved
        size: 2
        valid: '[0x00, 0x00]'
        doc: Two zero bytes; a non-zero byte is refused (HT-LAY-73).
      - id: member_count
        type: u4
        valid:
          expr: _ != 0xffffffff and (_ > 0 or composition_rule != composition_rule::overlay)
        doc: |
          Member descriptors that follow. 0xFFFFFFFF, an open composite, is reserved
          (HT-LAY-74); an overlay needs at least its base member (HT-LAY-75).
  hilbert:
    doc: Hilbert curve layout 0x40, 4 + 4 = 8 bytes (HT-LAY-77).
    seq:
      - id: hilbert_order
        type: u4
        valid:
          min: 1
        doc: Bits per coordinate; 0 is refused (HT-LAY-78).
      - id: hilbert_rank
        type: u4
        valid:
          min: 2
        doc: Dimensions of the curve; below 2 is refused (HT-LAY-80).
  private_layout:
    doc: |
      A private layout 0xF0-0xFE, 8 + 4 + n bytes (HT-LAY-84). hurray_decl reads the ids
      registered with it; this schema has an empty registry.
    seq:
      - id: extension_layout_id
        type: u8
        valid:
          expr: 'false'
        doc: |
          Identifies the private layout by agreement. No id is registered here, so every
          private layout is refused (HT-LAY-85).
      - id: extension_data_length
        type: u4
        doc: n, the bytes of extension_data.
      - id: extension_data
        size: extension_data_length
        doc: Opaque layout data.
  buffer_handle:
    doc: |
      One buffer handle, 8 + 4 + 1 + 1 + 1 + 1 = 16 bytes, bytes 13-15 read the
      buffer-protocol way (HT-BUFT-01, HD-09). The fields are read first, then checked in
      DIGEST Appendix A order: reserved byte, device, sync_mode, memory class, alignment, CPU
      sync, then the per-device pair.
    seq:
      - id: byte_size
        type: u8
        doc: Bytes in the buffer; 0 is an empty buffer.
      - id: alignment
        type: u4
        doc: A power of two; at least 64 for a non-empty buffer.
      - id: device_tag
        type: u1
        enum: device
        doc: A device, or a private device 0xF0-0xFE (HD-23).
      - id: sync_mode
        type: u1
        enum: sync_mode
        doc: 0x00 producer-synced, 0x01 event, 0x02 consumer-stream.
      - id: memory_class
        type: u1
        enum: memory_class
        doc: 0x00 STANDARD, 0x01 HOST_PINNED, 0x02 UNIFIED, 0x03 PEER.
      - id: reserved
        -orig-id: _reserved
        size: 1
        doc: One zero byte at offset 15.
      - id: reserved_zero
        size: 0
        -checks: reserved
        valid:
          expr: reserved == [0x00]
        doc: A non-zero reserved byte is refused (HT-BUFT-23).
      - id: device_known
        size: 0
        -checks: device_tag
        valid:
          expr: device_tag.to_i <= 0x08 or (device_tag.to_i >= 0xf0 and device_tag.to_i <= 0xfe)
        doc: 0xFF is refused (HT-BUFT-14) and so are the reserved 0x09-0xEF (HT-BUFT-15).
      - id: sync_known
        size: 0
        -checks: sync_mode
        valid:
          expr: sync_mode.to_i <= 0x02
        doc: A sync_mode other than 0x00, 0x01 or 0x02 is refused (HT-BUFT-17).
      - id: class_known
        size: 0
        -checks: memory_class
        valid:
          expr: memory_class.to_i <= 0x03
        doc: |
          0x04-0xEF and 0xFF are refused (HT-BUFT-19), a private class on a public device
          (HT-BUFT-20) and a private class not agreed out of band (HT-BUFT-21) too: this schema
          registers none.
      - id: alignment_power_of_two
        size: 0
        -checks: alignment
        valid:
          expr: alignment != 0 and (alignment & (alignment - 1)) == 0
        doc: A power of two, 0 refused (HT-BUFT-12).
      - id: alignment_minimum
        size: 0
        -checks: alignment
        valid:
          expr: byte_size == 0 or alignment >= 64
        doc: At least 64 for a non-empty buffer (HT-BUFT-13).
      - id: cpu_producer_synced
        size: 0
        -checks: sync_mode
        valid:
          expr: device_tag != device::cpu or sync_mode == sync_mode::producer_synced
        doc: A CPU buffer is producer-synced (HT-BUFT-18).
      - id: device_offers_class
        size: 0
        -checks: memory_class
        valid:
          expr: >-
            memory_class == memory_class::standard
            or (device_tag.to_i <= 0x08 and device_tag != device::webgpu
            and (memory_class == memory_class::host_pinned or memory_class == memory_class::unified))
            or (memory_class == memory_class::peer and (device_tag == device::cuda
            or device_tag == device::rocm or device_tag == device::vulkan or device_tag == device::level_zero))
        doc: A pair from the per-device table (HT-BUFT-22).
  colocated:
    doc: The colocation check of one buffer; reads nothing.
    params:
      - id: index
        type: u4
    seq:
      - id: same_place
        size: 0
        -checks: buffers
        valid:
          expr: >-
            _parent.buffers[index].device_tag == _parent.buffers[0].device_tag
            and _parent.buffers[index].memory_class == _parent.buffers[0].memory_class
        doc: |
          Buffer index shares buffer 0's device_tag (HT-BUFT-24; HQ-BUF-06 for a parameter
          buffer) and memory_class (HT-BUFT-25).
  shard:
    doc: The shard section, 8 x rank + 8 x rank bytes (HT-SEC-03).
    params:
      - id: rank
        type: u4
    seq:
      - id: parent_shape
        type: u8
        repeat: expr
        repeat-expr: rank
        doc: u64[rank], shape of the whole tensor.
      - id: shard_offset
        type: u8
        repeat: expr
        repeat-expr: rank
        doc: u64[rank], where this shard starts in the parent.
  shard_bound:
    doc: The bounds check of one shard axis; reads nothing.
    params:
      - id: axis
        type: u4
    seq:
      - id: inside_parent
        size: 0
        -checks: shard_offset
        valid:
          expr: >-
            _parent.shard.shard_offset[axis] <= _parent.shard.parent_shape[axis]
            and _parent.shape[axis]
            <= _parent.shard.parent_shape[axis] - _parent.shard.shard_offset[axis]
        doc: shard_offset[axis] + shape[axis] <= parent_shape[axis], without overflow (HT-SEC-04).
  morton_fit:
    doc: The extent check of one Morton axis; reads nothing.
    params:
      - id: axis
        type: u4
    seq:
      - id: fits
        size: 0
        -checks: morton_bits
        valid:
          expr: >-
            _parent.shape[axis] == 0xffff_ffff_ffff_ffff
            or _parent.layout.as<morton>.morton_bits[axis] >= 64
            or _parent.shape[axis] <= 1 << _parent.layout.as<morton>.morton_bits[axis]
        doc: A static shape[axis] is at most 2^morton_bits[axis] (HT-LAY-18).
  statistics:
    doc: |
      The statistics section, 4 + 4 + 8 x 7 + 1 + 1 + 1 + 1 + 4 = 72 bytes (HT-SEC-08). A
      statistic whose computed_mask bit is clear is unknown and never checked (HT-SEC-12).
    seq:
      - id: computed_mask
        type: u4
        valid:
          expr: (_ & 0xffffffc0) == 0
        doc: |
          Bit 0 NNZ_VALID, 1 SPARSITY_VALID, 2 VALUE_RANGE_VALID, 3 VALUE_STATS_VALID, 4
          NM_SPARSITY_VALID, 5 NAN_INF_VALID; bits 6-31 are refused (HT-SEC-09).
      - id: reserved
        -orig-id: _reserved
        size: 4
        valid: '[0x00, 0x00, 0x00, 0x00]'
        doc: A zero u32 at offset 4; a non-zero byte is refused (HT-SEC-10).
      - id: nnz
        type: u8
        doc: NNZ_VALID; equals a sparse layout's nnz.
      - id: sparsity_ratio
        type: f8
        doc: SPARSITY_VALID; nominally in [0, 1], not enforced.
      - id: value_min
        type: f8
        doc: VALUE_RANGE_VALID; smallest dequantized value.
      - id: value_max
        type: f8
        doc: VALUE_RANGE_VALID; largest dequantized value.
      - id: value_abs_max
        type: f8
        doc: VALUE_RANGE_VALID; max(|value_min|, |value_max|).
      - id: value_mean
        type: f8
        doc: VALUE_STATS_VALID; mean of the values.
      - id: value_stddev
        type: f8
        valid:
          expr: (computed_mask & 0x08) == 0 or _ >= 0
        doc: VALUE_STATS_VALID; negative or NaN is refused when known (HT-SEC-14).
      - id: nm_n
        type: u1
        doc: NM_SPARSITY_VALID; N of N:M structured sparsity.
      - id: nm_m
        type: u1
        valid:
          expr: (computed_mask & 0x10) == 0 or nm_n <= _
        doc: NM_SPARSITY_VALID; nm_n > nm_m is refused when known (HT-SEC-15).
      - id: has_nan
        type: u1
        valid:
          expr: (computed_mask & 0x20) == 0 or _ <= 1
        doc: NAN_INF_VALID; 0x00 or 0x01 when known (HT-SEC-08, HD-21).
      - id: has_inf
        type: u1
        valid:
          expr: (computed_mask & 0x20) == 0 or _ <= 1
        doc: NAN_INF_VALID; 0x00 or 0x01 when known (HT-SEC-08, HD-21).
      - id: reserved2
        -orig-id: _reserved2
        size: 4
        valid: '[0x00, 0x00, 0x00, 0x00]'
        doc: Four zero bytes at offsets 68-71; a non-zero byte is refused (HT-SEC-11).
  extension_type:
    doc: |
      The extension-type section, 4 + 1 x 6 + 2 + 4 + 1 + 1 + 2 = 20 bytes (HT-SEC-21). It
      sizes a private element type without interpreting its values (HT-SEC-34).
    seq:
      - id: bit_width
        type: u4
        valid:
          expr: _ == 1 or _ == 2 or _ == 4 or (_ >= 8 and _ % 8 == 0)
        doc: |
          Bits per element. 0 is refused (HT-SEC-22); below 8 only 1, 2 or 4 (HT-SEC-24);
          from 8 up a whole number of bytes (HT-SEC-34, HD-25).
      - id: packing_factor
        type: u1
        valid:
          expr: 'bit_width >= 8 ? _ == 1 : _ * bit_width == 8'
        doc: 1 for whole-byte widths (HT-SEC-23); 8 / bit_width below 8 bits (HT-SEC-25).
      - id: is_float
        type: u1
        valid:
          max: 1
        doc: 0x00 integer, 0x01 floating point; other values are refused (HT-SEC-21, HD-21).
      - id: is_signed
        type: u1
        valid:
          expr: _ <= 1 and (is_float == 0 or _ == 0)
        doc: 0x00 or 0x01 (HT-SEC-21); 0 for a float type (HT-SEC-26).
      - id: sign_bits
        type: u1
        valid:
          expr: _ <= 1 and (is_float == 1 or _ == 0)
        doc: 0 or 1 (HT-SEC-27); 0 for an integer type (HT-SEC-28).
      - id: exponent_bits
        type: u1
        valid:
          expr: is_float == 1 or _ == 0
        doc: Float exponent bits; 0 for an integer type (HT-SEC-29).
      - id: mantissa_bits
        type: u1
        valid:
          expr: is_float == 1 or _ == 0
        doc: Float mantissa bits; 0 for an integer type (HT-SEC-30).
      - id: reserved
        -orig-id: _reserved
        size: 2
        valid: '[0x00, 0x00]'
        doc: Two zero bytes at offsets 10-11; a non-zero byte is refused (HT-SEC-32).
      - id: exponent_bias
        type: u4
        valid:
          expr: is_float == 1 or _ == 0
        doc: Float exponent bias; 0 for an integer type (HT-SEC-31).
      - id: has_nan
        type: u1
        valid:
          max: 1
        doc: 0x01 if the type has NaN codes; 0x00 or 0x01 only (HT-SEC-21, HD-21).
      - id: has_inf
        type: u1
        valid:
          max: 1
        doc: 0x01 if the type has infinities; 0x00 or 0x01 only (HT-SEC-21, HD-21).
      - id: reserved2
        -orig-id: _reserved2
        size: 2
        valid: '[0x00, 0x00]'
        doc: Two zero bytes at offsets 18-19; a non-zero byte is refused (HT-SEC-33).
  composite_member:
    doc: The composite-member section, 1 + 15 = 16 bytes (HT-SEC-35).
    seq:
      - id: member_role
        type: u1
        enum: member_role
        valid:
          in-enum: true
        doc: 0x00 correction, 0x01 base; 0x02-0xFF are refused (HT-SEC-36).
      - id: reserved
        -orig-id: _reserved
        size: 15
        valid: '[0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]'
        doc: Fifteen zero bytes; a non-zero byte is refused (HT-SEC-37).
enums:
  element_type:
    0x01:
      id: float16
      doc: IEEE binary16 (Tier 1), 2 bytes.
    0x02:
      id: bfloat16
      doc: bfloat16 1-8-7 (Tier 1), 2 bytes.
    0x03:
      id: float32
      doc: IEEE binary32 (Tier 1), 4 bytes.
    0x04:
      id: float64
      doc: IEEE binary64 (Tier 1), 8 bytes.
    0x10:
      id: int8
      doc: Two's-complement 8-bit integer (Tier 1).
    0x11:
      id: uint8
      doc: Unsigned 8-bit integer (Tier 1).
    0x12:
      id: int16
      doc: Two's-complement 16-bit integer (Tier 1).
    0x13:
      id: uint16
      doc: Unsigned 16-bit integer (Tier 1).
    0x14:
      id: int32
      doc: Two's-complement 32-bit integer (Tier 1).
    0x15:
      id: uint32
      doc: Unsigned 32-bit integer (Tier 1).
    0x16:
      id: int64
      doc: Two's-complement 64-bit integer (Tier 1).
    0x17:
      id: uint64
      doc: Unsigned 64-bit integer (Tier 1).
    0x20:
      id: bool
      doc: Boolean packed 8 per byte, LSB first (Tier 1).
    0x40:
      id: float8_e4m3
      doc: OCP E4M3, no infinities (Tier 2), 1 byte.
    0x41:
      id: float8_e5m2
      doc: OCP E5M2 (Tier 2), 1 byte.
    0x42:
      id: float8_e8m0
      doc: Exponent-only unsigned (Tier 2), 1 byte; 0x00 and 0xFF invalid.
    0x43:
      id: float4_e2m1
      doc: OCP MX FP4 (Tier 2), 2 per byte.
    0x44:
      id: float6_e2m3
      doc: OCP MX FP6 E2M3 (Tier 2), 4 per 3 bytes.
    0x45:
      id: float6_e3m2
      doc: OCP MX FP6 E3M2 (Tier 2), 4 per 3 bytes.
    0x46:
      id: float128
      doc: IEEE binary128 (Tier 2), 16 bytes.
    0x48:
      id: int4
      doc: Two's-complement nibble (Tier 2), 2 per byte.
    0x49:
      id: uint4
      doc: Unsigned nibble (Tier 2), 2 per byte.
    0x4a:
      id: int2
      doc: Two's-complement 2-bit integer (Tier 2), 4 per byte.
    0x4b:
      id: uint2
      doc: Unsigned 2-bit integer (Tier 2), 4 per byte.
    0x50:
      id: complex64
      doc: Real f32 then imaginary f32 (Tier 2), 8 bytes.
    0x51:
      id: complex128
      doc: Real f64 then imaginary f64 (Tier 2), 16 bytes.
  layout:
    0x01:
      id: row_major
      doc: Row-major (C order); no fields.
    0x02:
      id: column_major
      doc: Column-major (Fortran order); no fields.
    0x03:
      id: strided
      doc: Explicit i64 strides in logical elements.
    0x04:
      id: tiled
      doc: Tiled / blocked, optionally nested.
    0x05:
      id: morton
      doc: Morton (Z-order) curve.
    0x06:
      id: coo
      doc: Coordinate-list sparse tensor; 2 layout buffers.
    0x07:
      id: csr
      doc: Compressed sparse rows; 3 layout buffers.
    0x08:
      id: csc
      doc: Compressed sparse columns; 3 layout buffers.
    0x09:
      id: csf
      doc: Compressed sparse fibers; 2 x rank + 1 layout buffers.
    0x0a:
      id: block_paged
      doc: Block-paged KV cache; 3 layout buffers.
    0x0b:
      id: composite_head
      doc: Composite head; owns no buffers.
    0x40:
      id: hilbert
      doc: Hilbert curve (Tier 2).
  tile_order:
    0x01:
      id: row_major
      doc: Row-major order.
    0x02:
      id: column_major
      doc: Column-major order.
    0x03:
      id: strided
      doc: Explicit strides follow.
    0x04:
      id: nested
      doc: Inner order only; another tiled payload follows.
  kv_role:
    0x00:
      id: key_cache
      doc: Key cache ("key" in the spec; _cache keeps the pair clear of Python's Enum.value).
    0x01:
      id: value_cache
      doc: Value cache ("value" in the spec; a member named value would shadow Enum.value).
    0x02:
      id: fused
      doc: Fused or generic cache.
  block_table_index_type:
    0x00:
      id: u32
      doc: Buffers 1 and 2 hold u32 entries.
    0x01:
      id: u64
      doc: Buffers 1 and 2 hold u64 entries.
  composition_rule:
    0x01:
      id: partition
      doc: Members tile the head exactly, without overlap.
    0x02:
      id: overlay
      doc: A base member then corrections, combined by combine_op.
    0x03:
      id: group
      doc: Members grouped without spatial meaning.
  combine_op:
    0x00:
      id: none
      doc: Partition and group.
    0x01:
      id: replace
      doc: Overlay; the last member wins.
    0x02:
      id: add
      doc: Overlay; members are added.
  device:
    0x00:
      id: cpu
      doc: CPU host memory; producer-synced only.
    0x01:
      id: cuda
      doc: CUDA.
    0x02:
      id: rocm
      doc: ROCm.
    0x03:
      id: metal
      doc: Metal.
    0x04:
      id: vulkan
      doc: Vulkan.
    0x05:
      id: webgpu
      doc: WebGPU; STANDARD memory only.
    0x06:
      id: hexagon
      doc: Qualcomm Hexagon (HVX/HMX).
    0x07:
      id: level_zero
      doc: Intel Level Zero / oneAPI.
    0x08:
      id: opencl
      doc: OpenCL.
  sync_mode:
    0x00:
      id: producer_synced
      doc: Usable at once on any stream.
    0x01:
      id: event
      doc: Wait on the producer's event first.
    0x02:
      id: consumer_stream
      doc: Usable on the streams declared at handoff.
  memory_class:
    0x00:
      id: standard
      doc: Memory owned by the device.
    0x01:
      id: host_pinned
      doc: CPU memory the device can map.
    0x02:
      id: unified
      doc: Coherent memory shared by host and device.
    0x03:
      id: peer
      doc: Peer-to-peer device memory.
  member_role:
    0x00:
      id: correction
      doc: An overlay correction.
    0x01:
      id: base
      doc: The overlay's base member.
