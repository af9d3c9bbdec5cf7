"""Editing a .hrry file in place (hurray_decl.hurray.container.edit): what each edit writes, the
edited files valid and read by pyhurray, a 4 GiB file edited by less than 1 MiB of writes, an
edit killed at every write and recovered to exactly the old or the new version, the command
line, and arbitrary bytes given to the edit."""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import hurray_decl as hd
from hurray_decl.errors import ARGUMENT, HurrayDeclError
from hurray_decl.hurray.container import KVTag, KVValue, read_container, validate_container
from hurray_decl.hurray.container.declarations import UNKNOWN_COUNT
from hurray_decl.hurray.container.journal import HINT, journal_path, pending, read_journal, recover
from hurray_decl.hurray.container.strategies import Needs, valid_containers
from hurray_decl.hurray.container.writer import ContainerWriter, write_container
from hurray_decl.hurray.values import Tensor
from hurray_decl.rules import all_rules
from tests.helpers import REPO, raises_rule, run_cli

ODD = (317, 331)  # 104,927 elements


def _tensor(array: np.ndarray) -> tuple[Any, list[Any]]:
    t = Tensor.from_numpy(array)
    return t.descriptor, list(t.buffers)


def _file(path: Path, *, hint: bool = True, sorted_index: bool = False, kv_promised: bool = False) -> Path:
    """Four tensors (a 10^5-element one first and third) and three KV entries."""
    rng = np.random.default_rng(7)
    tensors = [("w", rng.standard_normal(ODD).astype(np.float32)), ("b", np.arange(7, dtype=np.int8)),
               ("u", rng.integers(0, 60000, size=100_003, dtype=np.uint16)), ("z", np.ones((2, 3), np.float64))]
    data = write_container([(name, *_tensor(a)) for name, a in tensors],
                           {"general.name": "tiny", "n": 3, "scales": [0.5, 1.5]},
                           tensor_count_hint=len(tensors) if hint else None, sorted_index=sorted_index,
                           kv_promised=kv_promised)
    path.write_bytes(data)
    return path


def state(path: Path) -> tuple[Any, ...]:
    """What a version of a file is: names in index order, typed KV entries, each tensor's
    descriptor and buffer bytes; the file validated whole (level V, contents included)."""
    c = read_container(path).validate()
    kv = {k: (v.tag, v.element_tag, v.value) for k, v in c.kv.items()}
    tensors = {t.name: (bytes(c.view[t.placement.descriptor_start:t.placement.descriptor_end]),
                        tuple(bytes(b) for b in t.buffers)) for t in c.tensors()}
    return c.names, kv, tensors


def _pyhurray_reads(path: Path) -> None:
    hurray = pytest.importorskip("hurray")
    c = read_container(path)
    back = hurray.load(str(path))
    assert set(back) == set(c.names)
    for name in c.names:
        ours = np.asarray(hd.open(path)[name])
        assert np.array_equal(np.asarray(back[name]), ours)


# ---------------------------------------------------------------------- what each edit does


def test_kv_and_rename_rewrite_only_the_tail(tmp_path):
    path = _file(tmp_path / "f.hrry")
    tensors = state(path)[2]
    region_end = read_container(path).region_end
    before = path.read_bytes()
    done = hd.edit(path).set("general.name", "a longer name than before").set("n", 2**63, "uint64") \
        .delete("scales").set("flag", True).rename("b", "bias").commit()
    after = path.read_bytes()
    assert after[:region_end] == before[:region_end]  # the tensor region is untouched
    assert done.changes == 5 and done.written == len(after) - region_end and done.new_size == len(after)
    new_names, new_kv, new_tensors = state(path)
    assert new_names == ("w", "bias", "u", "z")
    assert new_kv == {"general.name": (KVTag.STRING, None, "a longer name than before"),
                      "n": (KVTag.UINT64, None, 2**63), "flag": (KVTag.BOOL, None, True)}
    assert new_tensors == {("bias" if k == "b" else k): v for k, v in tensors.items()}
    assert hd.load_kv(path)["n"] == 2**63 and not os.path.exists(journal_path(path))
    _pyhurray_reads(path)


def test_drop_moves_what_follows_and_append_goes_where_the_tail_was(tmp_path):
    path = _file(tmp_path / "f.hrry")
    _, _, tensors = state(path)
    c = read_container(path)
    b_at = c.entry("b").descriptor_offset
    before = path.read_bytes()
    hd.edit(path).drop("b").commit()
    after = path.read_bytes()
    assert after[:HINT.start] + after[HINT.stop:b_at] == before[:HINT.start] + before[HINT.stop:b_at]  # nor the
    # header but its tensor_count_hint, nothing before the dropped tensor is written
    names, _, dropped = state(path)
    assert names == ("w", "u", "z") and dropped == {k: v for k, v in tensors.items() if k != "b"}
    assert read_container(path).header.tensor_count_hint == 3  # the stated count follows (HF-HDR-16)
    _pyhurray_reads(path)
    end = read_container(path).region_end
    extra = np.arange(3 * 5 * 7, dtype=np.int32).reshape(3, 5, 7)
    done = hd.append(path, {"extra": extra, "wide": np.full(100_001, 0.25, np.float32)})
    names, _, appended = state(path)
    assert appended["u"] == dropped["u"]  # what was there stays
    assert names == ("w", "u", "z", "extra", "wide") and read_container(path).header.tensor_count_hint == 5
    assert read_container(path).entry("extra").descriptor_offset == end  # where the old tail began
    assert np.array_equal(np.asarray(hd.open(path)["extra"]), extra)
    assert done.written < 100_001 * 4 + 3 * 5 * 7 * 4 + 2 * 4096 + 1024  # the data, its padding, the tail
    _pyhurray_reads(path)


def test_sorted_index_and_unknown_count_are_kept(tmp_path):
    path = _file(tmp_path / "f.hrry", hint=False, sorted_index=True)
    hd.edit(path).rename("w", "a.weight").drop("z").append({"m": np.zeros(3, np.uint8)}).commit()
    c = validate_container(path.read_bytes())
    assert c.names == ("a.weight", "b", "m", "u") and c.header.tensor_count_hint == UNKNOWN_COUNT
    _pyhurray_reads(path)


def test_changes_apply_in_order_and_as_a_context_manager(tmp_path):
    path = _file(tmp_path / "f.hrry")
    with hd.edit(path) as e:
        e.rename("w", "x").rename("x", "w2").drop("w2").set("k", b"\x00\xff")
    names, kv, _ = state(path)
    assert names == ("b", "u", "z") and kv["k"] == (KVTag.BYTES, None, b"\x00\xff")
    before = path.read_bytes()
    with pytest.raises(ZeroDivisionError), hd.edit(path) as e:
        e.drop("b")
        raise ZeroDivisionError  # an exception in the block: nothing is written
    assert path.read_bytes() == before


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(data=valid_containers(Needs(group=True, tensors=3)), choice=st.data())
def test_edits_of_any_valid_file_give_a_valid_file(tmp_path_factory, data, choice):
    """Random valid containers (composites and quantized tensors among them) and random edits:
    the result is valid, and holds exactly the bytes the edit says."""
    path = tmp_path_factory.mktemp("any") / "f.hrry"
    path.write_bytes(data)
    names, kv, tensors = state(path)
    plain = [n for n in names if not n.startswith("g.")]  # a head drops its members with it
    drop = choice.draw(st.sets(st.sampled_from(plain), max_size=2))
    rename = choice.draw(st.sampled_from([n for n in names if n not in drop and not ("g" in drop and
                                                                                   n.startswith("g."))]))
    e = hd.edit(path).rename(rename, "renamed")
    for name in drop:
        e.drop(name)
    if kv and choice.draw(st.booleans()) and len(kv) > 1:
        gone = choice.draw(st.sampled_from(sorted(kv)))
        e.delete(gone)
        kv = {k: v for k, v in kv.items() if k != gone}
    e.set("added", 5)
    e.commit()
    new_names, new_kv, new_tensors = state(path)
    gone = drop | ({n for n in names if n.startswith("g.")} if "g" in drop else set())
    expected = {("renamed" if k == rename else k): v for k, v in tensors.items() if k not in gone}
    assert new_tensors == expected and set(new_names) == set(expected)
    assert new_kv == {**kv, "added": (KVTag.INT64, None, 5)}


# ---------------------------------------------------------------------- refusals


def test_refused_edits_leave_the_file_as_it_was(tmp_path):
    path = _file(tmp_path / "f.hrry", kv_promised=True)
    before = path.read_bytes()
    with raises_rule("HF-IDX-13"):
        hd.edit(path).rename("b", "w").commit()
    with raises_rule("HF-IDX-13"):
        hd.append(path, {"u": np.zeros(2, np.uint8)})
    with raises_rule("HF-META-09"):
        hd.edit(path).set("", 1).commit()
    with raises_rule("HF-IDX-11"):
        hd.edit(path).rename("b", "").commit()
    with raises_rule("HF-IDX-12"):
        hd.edit(path).rename("b", "\udc80").commit()
    for call in (lambda: hd.edit(path).drop("nope").commit(), lambda: hd.edit(path).delete("nope").commit(),
                 lambda: hd.edit(path).set("k", "v", "int8").commit()):
        with pytest.raises(HurrayDeclError) as info:
            call()
        assert info.value.code == ARGUMENT
    assert path.read_bytes() == before and not os.path.exists(journal_path(path))
    bad = tmp_path / "bad.hrry"
    bad.write_bytes(before[:-1] + b"X")  # the trailer magic: refused by its rule, nothing written
    with raises_rule("HF-IDX-02"):
        hd.edit(bad).set("k", "v").commit()


def test_deleting_every_kv_entry_keeps_an_empty_section(tmp_path):
    path = _file(tmp_path / "f.hrry", kv_promised=True)  # HAS_KV_METADATA: a KV section stays (HF-META-03)
    hd.edit(path).delete("general.name").delete("n").delete("scales").commit()
    c = validate_container(path.read_bytes())
    assert c.kv == {} and c.trailer.kv_length == 4 and c.names == ("w", "b", "u", "z")
    _pyhurray_reads(path)


@pytest.mark.rules("CV-EDT-03")
@settings(max_examples=3, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=valid_containers(Needs(group=True)))
def test_a_composite_is_dropped_whole_and_a_member_not_alone(tmp_path, data):
    path = tmp_path / "g.hrry"
    path.write_bytes(data)
    with raises_rule("CV-EDT-03"):
        hd.edit(path).drop("g.0").commit()
    assert path.read_bytes() == data
    hd.edit(path).rename("g.0", "member").commit()  # renaming is fine
    names, _, tensors = state(path)
    assert "member" in names
    hd.edit(path).drop("g").commit()  # the head: the composite whole
    new_names, _, new_tensors = state(path)
    assert new_names == tuple(n for n in names if n != "g" and not n.startswith("g.") and n != "member")
    assert new_tensors == {k: v for k, v in tensors.items() if k in new_names}
    _pyhurray_reads(path)


# ---------------------------------------------------------------------- a 4 GiB file

HOLE = 4 << 30
MEASURE = """
import json, sys
import numpy as np
import hurray_decl as hd

def wchar():
    return int(dict(line.split(": ") for line in open("/proc/self/io").read().splitlines())["wchar"])

path, edit = sys.argv[1], sys.argv[2]
extra = np.arange(100_003, dtype=np.float32)
calls = {"kv": lambda: hd.edit(path).set("general.name", "a model renamed in place").commit(),
         "rename": lambda: hd.edit(path).rename("small", "small.renamed").commit(),
         "drop": lambda: hd.edit(path).drop("last").commit(),
         "append": lambda: hd.append(path, {"extra": extra})}
before = wchar()
calls[edit]()
print(json.dumps({"written": wchar() - before, "appended": extra.nbytes if edit == "append" else 0}))
"""


def _sparse_container(path: Path, hole_file: Path) -> None:
    """A 4 GiB tensor whose data is a hole, then two small ones: written by the container writer
    into a file that skips the hole's bytes (seeks), so the file is sparse."""
    with open(hole_file, "wb") as f:
        f.truncate(HOLE)
    with open(hole_file, "rb") as f:
        hole = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    one = Tensor.from_numpy(np.zeros(1, np.uint8)).descriptor
    big = one.model_copy(update={"shape": (HOLE,), "buffers": (one.buffers[0].model_copy(update={"byte_size": HOLE}),)})

    class Sparse:
        def __init__(self, stream: Any) -> None:
            self.stream = stream

        def write(self, data: Any) -> int:
            view = memoryview(data)
            if view.obj is hole:  # the hole's bytes: skipped
                self.stream.seek(view.nbytes, os.SEEK_CUR)
                return view.nbytes
            return self.stream.write(view)

    with open(path, "wb") as f:
        writer = ContainerWriter(Sparse(f), tensor_count_hint=3)  # type: ignore[arg-type]
        writer.add("big", big, [memoryview(hole)])
        writer.add("small", *_tensor(np.arange(ODD[0] * ODD[1], dtype=np.float32).reshape(ODD)))
        writer.add("last", *_tensor(np.arange(5, dtype=np.int8)))
        writer.finish({"general.name": "model", "n": 3})


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs /proc/self/io (Linux)")
def test_a_4_gib_file_is_edited_by_less_than_1_mib_of_writes(tmp_path):
    path = tmp_path / "big.hrry"
    _sparse_container(path, tmp_path / "hole")
    (tmp_path / "hole").unlink()
    assert path.stat().st_size > HOLE and path.stat().st_blocks * 512 < 64 << 20  # sparse
    import json

    for edit in ("kv", "rename", "drop", "append"):
        done = subprocess.run([sys.executable, "-c", MEASURE, str(path), edit], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(REPO)}, check=True, timeout=600)
        figures = json.loads(done.stdout)
        assert 0 < figures["written"] < (1 << 20) + figures["appended"], (edit, figures)
    c = read_container(path)
    c.validate(data=False)
    assert c.names == ("big", "small.renamed", "extra") and c.kv["general.name"].value == "a model renamed in place"
    assert c.header.tensor_count_hint == 3
    assert np.array_equal(np.asarray(hd.open(path)["extra"]), np.arange(100_003, dtype=np.float32))
    assert np.asarray(hd.open(path)["small.renamed"])[-1, -1] == ODD[0] * ODD[1] - 1
    assert path.stat().st_blocks * 512 < 64 << 20  # still sparse: the hole was never written


# ---------------------------------------------------------------------- killed at every write

MUTATING = ("pwrite", "ftruncate", "fsync", "unlink")
DONE, KILLED = 0, 9


def _killed_at(path: Path, apply: Any, k: int) -> int:
    """Run ``apply(path)`` in a forked child that dies at its k-th mutating call (a write half
    done, or an fsync, truncation or deletion not done): DONE when it finished first."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into the test runner
        code = 3
        try:
            calls = [0]
            real = {name: getattr(os, name) for name in MUTATING}

            def wrapped(name: str) -> Any:
                def call(*args: Any) -> Any:
                    calls[0] += 1
                    if calls[0] == k:
                        if name == "pwrite":  # a torn write: half of it reaches the file
                            fd, data, offset = args
                            real["pwrite"](fd, bytes(data)[:len(data) // 2], offset)
                        os._exit(KILLED)
                    return real[name](*args)
                return call

            for name in MUTATING:
                setattr(os, name, wrapped(name))
            apply(path)
            code = DONE
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


SCENARIOS = {
    "kv and rename": lambda p: hd.edit(p).set("general.name", "x" * 5000).delete("n").rename("u", "v").commit(),
    "drop a middle tensor": lambda p: hd.edit(p).drop("b").commit(),
    "drop the last tensor": lambda p: hd.edit(p).drop("z").set("n", -1).commit(),
    "append": lambda p: hd.append(p, {"extra": np.arange(300_007, dtype=np.float32)}),
}


@pytest.mark.rules("CV-EDT-01")
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_kill_at_any_write_recovers_to_the_old_or_the_new_version(tmp_path, scenario):
    apply = SCENARIOS[scenario]
    path = _file(tmp_path / "f.hrry")
    original = path.read_bytes()
    old = state(path)
    apply(path)
    new = state(path)
    assert new != old
    seen = {"old": 0, "new": 0}
    k = 0
    while True:
        k += 1
        path.write_bytes(original)
        code = _killed_at(path, apply, k)
        if code == DONE:
            break
        assert code == KILLED
        if os.path.exists(journal_path(path)):
            assert pending(path).code == "CV-EDT-01"
        recovered = hd.edit(path).commit().recovered  # the documented step: the next edit runs it
        assert recovered in (None, "rolled back", "discarded") and not os.path.exists(journal_path(path))
        now = state(path)
        assert now in (old, new), f"killed at call {k}: neither version"
        seen["old" if now == old else "new"] += 1
        _pyhurray_reads(path)
    assert k > 6 and seen["old"] > 0 and seen["new"] > 0, (k, seen)  # kills before and after the commit
    assert state(path) == new


def test_a_killed_recovery_is_run_again(tmp_path):
    path = _file(tmp_path / "f.hrry")
    original = path.read_bytes()
    old = state(path)

    def drop(p: Path) -> None:
        hd.edit(p).drop("b").commit()

    k = 1
    while not (_killed_at(path, drop, k) == KILLED and path.read_bytes() != original):  # a torn file
        path.write_bytes(original)
        if os.path.exists(journal_path(path)):
            os.unlink(journal_path(path))
        k += 1
    torn, journal = path.read_bytes(), Path(journal_path(path)).read_bytes()
    j = 0
    while True:
        j += 1
        path.write_bytes(torn)
        Path(journal_path(path)).write_bytes(journal)
        code = _killed_at(path, recover, j)
        if code == DONE:
            break
        assert recover(path) in (None, "rolled back") and state(path) == old, j  # None: killed after the deletion
    assert j > 3 and state(path) == old and not os.path.exists(journal_path(path))


@pytest.mark.rules("CV-EDT-02")
def test_recovery_refuses_a_journal_of_another_file(tmp_path):
    path = _file(tmp_path / "f.hrry")
    other = _file(tmp_path / "g.hrry", sorted_index=True)  # another header
    assert _killed_at(other, lambda p: hd.edit(p).drop("b").commit(), 6) == KILLED
    Path(journal_path(path)).write_bytes(Path(journal_path(other)).read_bytes())
    before = path.read_bytes()
    with raises_rule("CV-EDT-02"):
        recover(path)
    with raises_rule("CV-EDT-02"):
        hd.edit(path).set("k", "v").commit()
    assert path.read_bytes() == before
    short = tmp_path / "short.hrry"
    short.write_bytes(other.read_bytes()[:100])
    Path(journal_path(short)).write_bytes(Path(journal_path(other)).read_bytes())
    with raises_rule("CV-EDT-02"):
        recover(short)
    assert recover(other) == "rolled back"


def test_an_incomplete_journal_is_discarded(tmp_path):
    path = _file(tmp_path / "f.hrry")
    before = path.read_bytes()
    assert _killed_at(path, lambda p: hd.edit(p).drop("b").commit(), 2) == KILLED  # inside the journal
    raw = Path(journal_path(path)).read_bytes()
    assert read_journal(raw) is None and path.read_bytes() == before
    assert recover(path) == "discarded" and not os.path.exists(journal_path(path))


# ---------------------------------------------------------------------- the command line


def _cli(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    return run_cli(*argv, cwd=tmp_path)


@pytest.mark.parametrize("argv, check", [
    (("--set", "general.name=new:name", "--set", "n=7:uint64", "--set", "f=0.25:float64", "--set", "t=false:bool",
      "--set", "raw=00ff:bytes", "--set", "colon=a:b:string"),
     lambda c: {k: (v.tag, v.value) for k, v in c.kv.items() if k != "scales"} == {
         "general.name": (KVTag.STRING, "new:name"), "n": (KVTag.UINT64, 7), "f": (KVTag.FLOAT64, 0.25),
         "t": (KVTag.BOOL, False), "raw": (KVTag.BYTES, b"\x00\xff"), "colon": (KVTag.STRING, "a:b")}),
    (("--delete", "n"), lambda c: set(c.kv) == {"general.name", "scales"}),
    (("--rename", "w=weight"), lambda c: c.names == ("weight", "b", "u", "z")),
    (("--drop", "u"), lambda c: c.names == ("w", "b", "z")),
    (("--append", "extra=extra.npy"),
     lambda c: c.names[-1] == "extra" and c.tensor("extra").descriptor.shape == (3, 4)),
])
def test_cli_edits(tmp_path, argv, check):
    path = _file(tmp_path / "f.hrry")
    np.save(tmp_path / "extra.npy", np.arange(12, dtype=np.int16).reshape(3, 4))
    done = _cli(tmp_path, "edit", "f.hrry", *argv)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("edited f.hrry: ") and "bytes written" in done.stdout
    c = read_container(path).validate()
    assert check(c)
    _pyhurray_reads(path)


@pytest.mark.parametrize("argv, code, said", [
    (("--set", "novalue"), 2, "argument --set: 'novalue' is not KEY=VALUE[:type]"),
    (("--set", "n=x:int64"), 2, "argument --set: 'x' is not a value of type int64"),
    (("--set", "t=maybe:bool"), 2, "is not a bool value"),
    (("--rename", "w"), 2, "argument --rename: 'w' is not OLD=NEW"),
    (("--drop", "nope"), 2, "argument --drop: no tensor of that name"),
    (("--delete", "nope"), 2, "argument --delete: no KV entry of that key"),
    (("--append", "x=missing.npy"), 3, "no such file: missing.npy"),
    (("--rename", "w=b"), 1, "[HF-IDX-13]"),
    (("--set", "=v"), 2, "argument --set"),
])
def test_cli_edit_errors(tmp_path, argv, code, said):
    path = _file(tmp_path / "f.hrry")
    before = path.read_bytes()
    done = _cli(tmp_path, "edit", "f.hrry", *argv)
    assert done.returncode == code and said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and path.read_bytes() == before


def test_cli_refuses_what_is_not_a_regular_container_file(tmp_path):
    path = _file(tmp_path / "f.hrry")
    done = subprocess.run([sys.executable, "-m", "hurray_decl", "edit", "-", "--set", "k=v"], input=path.read_bytes(),
                          capture_output=True, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=120)
    assert done.returncode == 2 and b"not a regular file" in done.stderr
    descriptor = REPO / "hurray_decl" / "hurray" / "examples" / "valid_row_major.bin"
    done = _cli(tmp_path, "edit", str(descriptor), "--set", "k=v")
    assert done.returncode == 2 and "edit does not take a tensor descriptor input" in done.stderr, done.stderr


def test_cli_a_journal_that_cannot_be_read_is_a_file_problem(tmp_path):
    path = _file(tmp_path / "f.hrry")
    before = path.read_bytes()
    os.mkdir(journal_path(path))  # a folder where the journal goes
    done = _cli(tmp_path, "edit", "f.hrry", "--set", "k=v")
    assert done.returncode == 3 and "cannot read the journal" in done.stderr, done.stderr
    assert path.read_bytes() == before


def test_validate_names_an_interrupted_edit_and_edit_recovers_it(tmp_path):
    path = _file(tmp_path / "f.hrry")
    before = path.read_bytes()
    k = 1
    while not _torn(path, k):
        k += 1
    done = _cli(tmp_path, "validate", "f.hrry")
    assert done.returncode == 1 and "[CV-EDT-01]" in done.stdout and "the file as it stands: [HF-" in done.stdout
    done = _cli(tmp_path, "edit", "f.hrry")
    assert done.returncode == 0 and "recovered an interrupted edit (rolled back)" in done.stdout
    assert path.read_bytes() == before
    done = _cli(tmp_path, "validate", "f.hrry")
    assert done.returncode == 0, done.stdout
    done = _cli(tmp_path, "edit", "f.hrry")
    assert done.returncode == 0 and "no interrupted edit to recover" in done.stdout


def _torn(path: Path, k: int) -> bool:
    """Kill an append at its k-th write; True when that left a journal and a file that fails validation."""
    original = path.read_bytes()
    _killed_at(path, lambda p: hd.append(p, {"extra": np.ones(10, np.int8)}), k)
    try:
        validate_container(path.read_bytes())
    except HurrayDeclError:
        return os.path.exists(journal_path(path))
    if os.path.exists(journal_path(path)):
        recover(path)
    path.write_bytes(original)
    return False


# ---------------------------------------------------------------------- arbitrary bytes


def _mutated() -> st.SearchStrategy[bytes]:
    def flip(data: bytes, at: int, value: int) -> bytes:
        at %= len(data)
        return data[:at] + bytes([value]) + data[at + 1:]
    return st.builds(flip, valid_containers(), st.integers(0, 1 << 20), st.integers(0, 255))


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=_mutated() | st.binary(max_size=300).map(lambda b: b"HRRYFILE\x01" + b) | st.binary(max_size=200))
def test_arbitrary_bytes_give_an_edit_or_a_known_rule(tmp_path, data):
    path = tmp_path / "fuzz.hrry"
    path.write_bytes(data)
    try:
        hd.edit(path).set("k", "v").append({"t": np.arange(3, dtype=np.int8)}).commit()
    except HurrayDeclError as err:
        assert err.code in all_rules() or err.code == ARGUMENT, err
        assert path.read_bytes() == data  # refused: nothing written
    else:  # valid as the file was: its buffer contents are not the edit's (a flipped byte may be in one)
        c = validate_container(path.read_bytes(), data_rules=False)
        assert c.kv["k"] == KVValue(tag=KVTag.STRING, value="v") and "t" in c.names
    assert not os.path.exists(journal_path(path))


@settings(max_examples=100, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(journal=st.binary(max_size=300) | st.binary(max_size=200).map(lambda b: b"HRRYEDJ1" + b))
def test_arbitrary_journals_are_discarded_or_refused(tmp_path, journal):
    path = _file(tmp_path / "f.hrry")
    before = path.read_bytes()
    Path(journal_path(path)).write_bytes(journal)
    try:
        assert recover(path) == "discarded"
    except HurrayDeclError as err:
        assert err.code == "CV-EDT-02"
    assert path.read_bytes() == before
    if os.path.exists(journal_path(path)):
        os.unlink(journal_path(path))
