"""Everything Hurray: code tables, kernels, schemes, the payload engine, tensor, container, numerics,
dump, strategies, fuzzing, examples, benchmarks."""
