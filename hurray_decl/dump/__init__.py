"""Format-neutral dump rows and their renderers (text, Markdown, JSON, HTML)."""
