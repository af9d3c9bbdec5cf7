"""Hurray's code tables: the tag space, element types and their storage packing, and one enum per
small code space (:mod:`~hurray_decl.hurray.tables.codes`)."""
