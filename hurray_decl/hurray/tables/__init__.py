"""Hurray's code tables: the tag space, element types and their storage packing."""
