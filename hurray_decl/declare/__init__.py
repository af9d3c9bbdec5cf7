"""The declaration machinery: Construct extensions, the model base, tracing."""
