"""Kaitai Struct readers compiled from schemas/hurray/*.ksy; regenerate with schemas/regenerate, never edit by hand."""
