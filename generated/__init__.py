"""Generated code; regenerate with schemas/regenerate, never edit by hand."""
