"""``bench --save``: the three writes it times write the same tensors (each file read back by its
own reader and by ours); ``save`` writes an array's own memory (``from_numpy(copy=False)``); no
assertion on the times themselves."""

from __future__ import annotations

import contextlib
import io

import numpy as np

import hurray_decl as hd
from hurray_decl import cli
from hurray_decl.hurray import save_bench


def test_the_timed_writes_write_the_same_tensors(tmp_path):
    from safetensors.numpy import load_file

    tensors = save_bench.arrays(3, 4096)
    chosen = save_bench.works(tmp_path, tensors)
    for _, work in chosen.values():
        work()
    ours = hd.load(chosen["save"][0])
    assert all(np.array_equal(ours[k].numpy(), v) for k, v in tensors.items())
    assert all(np.array_equal(load_file(str(chosen["save_file"][0]))[k], v) for k, v in tensors.items())
    if "pyhurray" in chosen:
        import hurray

        theirs = hd.load(chosen["pyhurray"][0])
        assert all(np.array_equal(theirs[k].numpy(), v) for k, v in tensors.items())
        back = hurray.load(str(chosen["save"][0]))  # pyhurray reads what save wrote
        assert all(np.array_equal(np.asarray(back[k]), v) for k, v in tensors.items())


def test_a_table_from_one_run():
    out = io.StringIO()
    results = save_bench.run(repeat=1, count=2, elements=2048, out=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("save of 0 MiB in 2 float32 tensors: best of 1") and len(lines) == 4
    assert results["save"] > 0 and results["save_file_ratio"] > 0
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        assert cli.main(["bench", "--save", "--repeat", "1"]) == 0
    assert "safetensors save_file" in printed.getvalue()


def test_from_numpy_without_a_copy_holds_the_arrays_memory():
    """copy=False: the buffer is the array's memory where its bytes are the stored ones (7 x 14,287
    float32, little-endian); column-major, a sub-byte type and copy=True get their own bytes."""
    a = np.arange(7 * 14_287, dtype=np.float32).reshape(7, -1)
    shared = hd.Tensor.from_numpy(a, copy=False)
    copied = hd.Tensor.from_numpy(a)
    assert np.shares_memory(np.frombuffer(shared.buffers[0], np.uint8), a)
    assert not np.shares_memory(np.frombuffer(copied.buffers[0], np.uint8), a)
    assert np.array_equal(shared.numpy(), copied.numpy()) and bytes(shared.buffers[0]) == bytes(copied.buffers[0])
    column = hd.Tensor.from_numpy(a, layout="column-major", copy=False)  # the transpose's bytes: a copy
    assert not np.shares_memory(np.frombuffer(column.buffers[0], np.uint8), a)
    assert np.array_equal(column.numpy(), a)
    small = np.array([[1, -2, 3]], dtype=np.int8)
    int4 = hd.Tensor.from_numpy(small, type="int4", copy=False)
    assert not np.shares_memory(np.frombuffer(int4.buffers[0], np.uint8), small)
    assert int4.numpy().tolist() == [[1, -2, 3]]
