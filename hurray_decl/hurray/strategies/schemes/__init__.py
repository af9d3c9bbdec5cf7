"""One module per quantization scheme, named after its registry row (``row.name``): the scheme's
valid strategies and its rule-labelled mutants. :mod:`hurray_decl.hurray.strategies.quantization`
finds them through the rows; :mod:`.shared` holds what every scheme shares."""
