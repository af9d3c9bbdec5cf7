meta:
  id: container
  title: Hurray container file (.hrry) - header, KV section, index, trailer and the tensors they locate
  license: MIT
  ks-version: '0.11'
  endian: le
  imports:
    - tensor_descriptor
doc: |
  A Hurray container file: a 64-byte header, the tensor region (each tensor a descriptor
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
doc-ref:
  - ../shared/spec/hurray/FILE-FORMAT.md § 3, § 5, § 6, § 7
  - ../shared/spec/RULES.md HF-HDR, HF-IDX, HF-META, HF-DATA
seq:
  - id: fits_minimum
    size: 0
    -checks: header
    valid:
      expr: _io.size >= 112
    doc: A container is at least 112 bytes, header, index count and trailer (HF-HDR-18).
  - id: header
    size: 64
    type: file_header
    doc: The 64-byte file header at offset 0 (HF-HDR-02).
instances:
  trailer:
    pos: _io.size - 40
    size: 40
    type: trailer
    doc: The last 40 bytes of the file (HF-IDX-01).
  index:
    pos: trailer.index_offset
    size: trailer.index_length
    type: index_section
    doc: The index_length bytes at index_offset (HF-IDX-08).
  kv:
    pos: trailer.kv_offset
    size: trailer.kv_length
    type: kv_section
    if: trailer.kv_offset != 0 and trailer.kv_length != 0
    doc: |
      The KV section, present when the trailer records one, whatever HAS_KV_METADATA says
      (HF-META-04, HF-D01).
types:
  file_header:
    doc: The file header (FILE-FORMAT.md § 3).
    seq:
      - id: magic
        size: 8
        valid: '[0x48, 0x52, 0x52, 0x59, 0x46, 0x49, 0x4c, 0x45]'
        doc: '"HRRYFILE" at offset 0; anything else is not a container (HF-HDR-03).'
      - id: container_version_major
        type: u1
        valid:
          min: 1
          max: 1
        doc: Offset 8. Above 1 is refused (HF-HDR-04); 0 has no migration path (HF-HDR-05).
      - id: container_version_minor
        type: u1
        doc: Offset 9. A higher minor is read with the 1.0 layout, relaxed only as HF-D06 says (HF-HDR-07).
      - id: reserved
        -orig-id: _reserved
        type: u2
        valid:
          expr: _ == 0 or container_version_minor > 0
        doc: Offset 10, two bytes; 0x00 at minor 0 (HF-HDR-08).
      - id: file_flags
        type: u4
        valid:
          expr: (_ & 0xfffffff8) == 0
        doc: |
          Offset 12. Bit 0 HAS_KV_METADATA, 1 SORTED_INDEX, 2 HAS_INDEX_CRC32C; bits 3-31 are
          refused at every minor (HF-HDR-10).
      - id: data_buffer_alignment
        type: u4
        valid:
          expr: _ != 0 and (_ & (_ - 1)) == 0
        doc: Offset 16. A, the buffer alignment; a power of two, 0 refused (HF-HDR-11).
      - id: alignment_in_range
        size: 0
        -checks: data_buffer_alignment
        valid:
          expr: data_buffer_alignment >= 4096 and data_buffer_alignment <= 2097152
        doc: A lies in [4096, 2097152] (HF-HDR-12).
      - id: first_descriptor_offset
        type: u8
        valid:
          min: 64
        doc: Offset 20, not 8-aligned in the header. At least 64 (HF-HDR-13).
      - id: first_descriptor_aligned
        size: 0
        -checks: first_descriptor_offset
        valid:
          expr: first_descriptor_offset % 8 == 0
        doc: first_descriptor_offset is a multiple of 8 (HF-HDR-14).
      - id: tensor_count_hint
        type: u8
        doc: |
          Offset 28. 0xFFFFFFFFFFFFFFFF (unknown) or the entry count; never used to locate
          anything (HF-HDR-17).
      - id: reserved2
        -orig-id: _reserved2
        type: u8
        valid:
          expr: _ == 0 or container_version_minor > 0
        doc: Offset 36, the first 8 bytes of _reserved_header; 0x00 at minor 0 (HF-HDR-09).
      - id: reserved3
        -orig-id: _reserved3
        type: u8
        valid:
          expr: _ == 0 or container_version_minor > 0
        doc: Offset 44, bytes 8-15 of _reserved_header (HF-HDR-09).
      - id: reserved4
        -orig-id: _reserved4
        type: u8
        valid:
          expr: _ == 0 or container_version_minor > 0
        doc: Offset 52, bytes 16-23 of _reserved_header (HF-HDR-09).
      - id: reserved5
        -orig-id: _reserved5
        type: u4
        valid:
          expr: _ == 0 or container_version_minor > 0
        doc: Offset 60, bytes 24-27 of _reserved_header (HF-HDR-09).
  trailer:
    doc: The trailer (FILE-FORMAT.md § 7); offsets in field docs count from its start.
    seq:
      - id: index_offset
        type: u8
        valid:
          expr: _ % 8 == 0
        doc: Offset 0. Absolute offset of the index, a multiple of 8 (HF-IDX-05).
      - id: index_length
        type: u8
        valid:
          expr: index_offset <= _root._io.size - 40 and _ <= _root._io.size - 40 - index_offset
        doc: Offset 8. The index ends at or before the trailer, computed without overflow (HF-IDX-04).
      - id: index_holds_count
        size: 0
        -checks: index_length
        valid:
          expr: index_length >= 8
        doc: The index holds at least its 8-byte entry count (HF-IDX-09).
      - id: kv_offset
        type: u8
        valid:
          expr: _ % 8 == 0
        doc: Offset 16. Absolute offset of the KV section, 0 for none; a multiple of 8 (HF-META-05).
      - id: kv_length
        type: u4
        valid:
          expr: (kv_offset == 0) == (_ == 0)
        doc: Offset 24. 0 for none; kv_offset and kv_length are both 0 or both non-zero (HF-META-02).
      - id: kv_promised
        size: 0
        -checks: kv_length
        valid:
          expr: (_root.header.file_flags & 1) == 0 or kv_length != 0
        doc: HAS_KV_METADATA set requires a KV section in the trailer (HF-META-03).
      - id: kv_holds_count
        size: 0
        -checks: kv_length
        valid:
          expr: kv_length == 0 or kv_length >= 4
        doc: A KV section holds at least its 4-byte entry count (HF-META-07).
      - id: kv_before_index
        size: 0
        -checks: kv_length
        valid:
          expr: kv_length == 0 or kv_offset + kv_length <= index_offset
        doc: The KV section ends at or before index_offset (HF-META-06).
      - id: index_crc32c
        type: u4
        valid:
          expr: (_root.header.file_flags & 4) != 0 or _ == 0
        doc: |
          Offset 28. CRC-32C of the index bytes when HAS_INDEX_CRC32C is set (HF-DATA-20, not
          computed here); 0 when it is clear (HF-DATA-21).
      - id: reserved
        -orig-id: _reserved
        type: u4
        valid:
          expr: _ == 0 or _root.header.container_version_minor > 0
        doc: Offset 32; 0x00 at minor 0 (HF-IDX-03).
      - id: trailer_magic
        size: 4
        valid: '[0x48, 0x52, 0x52, 0x59]'
        doc: Offset 36, "HRRY" (HF-IDX-02).
  index_section:
    doc: index_entry_count, then the entries back to back (HF-IDX-08).
    seq:
      - id: index_entry_count
        type: u8
        doc: Number of entries, the number of tensors (HF-IDX-17).
      - id: entries
        type: index_entry
        repeat: expr
        repeat-expr: index_entry_count
        doc: One entry per tensor; an entry crossing index_length is truncation (HF-IDX-09).
      - id: leftover
        size-eos: true
        valid:
          expr: _.size == 0 or _root.header.container_version_minor > 0
        doc: Bytes after the entries; none at minor 0 (HF-IDX-10), skipped at a higher minor.
  index_entry:
    doc: One index entry, 34 + name_length bytes (HF-IDX-08).
    seq:
      - id: name_length
        type: u2
        valid:
          min: 1
        doc: Bytes of name, at least 1 (HF-IDX-11).
      - id: name
        type: str
        size: name_length
        encoding: UTF-8
        doc: The tensor name, well-formed UTF-8 (HF-IDX-12).
      - id: descriptor_offset
        type: u8
        doc: Absolute offset of the tensor's descriptor.
      - id: descriptor_length
        type: u4
        doc: Bytes of the descriptor, equal to its own descriptor_length (HF-IDX-18).
      - id: data_offset
        type: u8
        doc: Absolute offset of buffer 0.
      - id: data_length
        type: u8
        doc: End of the last buffer minus data_offset.
      - id: flags
        type: u4
        valid: 0
        doc: 0x00000000; a set bit is refused at every minor (HF-IDX-14).
    instances:
      descriptor:
        io: _root._io
        pos: descriptor_offset
        size: descriptor_length
        type: tensor_descriptor
        doc: The tensor descriptor, exactly descriptor_length bytes at descriptor_offset (HF-DATA-04).
  kv_section:
    doc: kv_count, then the entries back to back (HF-META-01).
    seq:
      - id: kv_count
        type: u4
        doc: Number of KV entries.
      - id: entries
        type: kv_entry
        repeat: expr
        repeat-expr: kv_count
        doc: The entries; one crossing kv_length is truncation (HF-META-07).
      - id: leftover
        size-eos: true
        valid:
          expr: _.size == 0 or _root.header.container_version_minor > 0
        doc: Bytes after the entries; none at minor 0 (HF-META-08).
  kv_entry:
    doc: One KV entry (HF-META-01).
    seq:
      - id: key_length
        type: u2
        valid:
          min: 1
        doc: Bytes of key, at least 1 (HF-META-09).
      - id: key
        type: str
        size: key_length
        encoding: UTF-8
        doc: The key, well-formed UTF-8 (HF-META-10).
      - id: value_tag
        type: u1
        enum: kv_tag
        valid:
          expr: _.to_i >= 0x01 and _.to_i <= 0x07
        doc: |
          The value's type. 0x00 and 0xFF are invalid (HF-META-17), 0x08-0xEF reserved
          (HF-META-16), 0xF0-0xFE private with none registered (HF-META-18).
      - id: value
        type:
          switch-on: value_tag
          cases:
            'kv_tag::string': kv_string
            'kv_tag::int64': s8
            'kv_tag::uint64': u8
            'kv_tag::float64': f8
            'kv_tag::bool': kv_bool
            'kv_tag::bytes': kv_bytes
            'kv_tag::array': kv_array
        doc: The payload of value_tag (HF-META-12).
  kv_string:
    doc: A string payload, u32 length then UTF-8 bytes (HF-META-12).
    seq:
      - id: length
        type: u4
        doc: Byte length.
      - id: value
        type: str
        size: length
        encoding: UTF-8
        doc: The string, well-formed UTF-8 (HF-META-13).
  kv_bool:
    doc: A bool payload (HF-META-12).
    seq:
      - id: value
        type: u1
        valid:
          any-of: [0, 1]
        doc: 0x00 false, 0x01 true; anything else is refused (HF-META-14).
  kv_bytes:
    doc: A byte-sequence payload, u32 length then the bytes (HF-META-12).
    seq:
      - id: length
        type: u4
        doc: Byte length.
      - id: value
        size: length
        doc: Opaque bytes.
  kv_array:
    doc: An array payload, element tag, count, then bare payloads (HF-META-12).
    seq:
      - id: element_tag
        type: u1
        enum: kv_tag
        valid:
          expr: _.to_i >= 0x01 and _.to_i <= 0x06
        doc: A scalar tag 0x01-0x06; 0x00, 0x07 and everything else are refused, even with count 0 (HF-META-15).
      - id: count
        type: u4
        doc: Number of elements; 0 is accepted (HF-META-21).
      - id: items
        type:
          switch-on: element_tag
          cases:
            'kv_tag::string': kv_string
            'kv_tag::int64': s8
            'kv_tag::uint64': u8
            'kv_tag::float64': f8
            'kv_tag::bool': kv_bool
            'kv_tag::bytes': kv_bytes
        repeat: expr
        repeat-expr: count
        doc: count payloads of element_tag, without per-element tags.
enums:
  kv_tag:
    0x01:
      id: string
      doc: UTF-8 string, u32 length then bytes.
    0x02:
      id: int64
      doc: Two's-complement 64-bit integer.
    0x03:
      id: uint64
      doc: Unsigned 64-bit integer.
    0x04:
      id: float64
      doc: IEEE 754 binary64.
    0x05:
      id: bool
      doc: One byte, 0x00 or 0x01.
    0x06:
      id: bytes
      doc: Byte sequence, u32 length then bytes.
    0x07:
      id: array
      doc: Element tag, u32 count, then count bare payloads.
