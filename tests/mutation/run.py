"""Single-token mutation testing: does a test subset notice when one token of a module changes?

Usage (from the repository root, with ``PYTHONPATH`` at the repository)::

    python -m tests.mutation.run MODULE --count 40 --seed S --tests "tests/a.py tests/b.py" [--added "tests/c.py"]

``MODULE`` is a dotted module (``hurray_decl.hurray.dump``) or a path to its file. The script is
not a test (pytest never collects it) and changes nothing it does not restore.

How mutants are drawn, reproducibly from ``--seed``:

* the module is tokenized; docstrings (string statements), the documentation of declared fields
  (a string after ``*``: Construct's ``field * "docs"``, which nothing reads back), comments and
  type annotations (of parameters, of returns, of variables ``x: T = ...``, string annotations
  included: under ``from __future__ import annotations`` they are never evaluated, so a mutant
  there cannot change behaviour) are never touched; every other token of a mutable kind is a
  candidate site, in source order;
* candidate kinds and their replacements: comparison operators (``<`` ``<=`` ``>`` ``>=`` ``==``
  ``!=`` swapped within their family), arithmetic and bit operators (``+``/``-``, ``*``/``//``,
  ``//``/``*``, ``/``/``*``, ``%``/``//``, ``&``/``|``, ``<<``/``>>``), integer literals (``+1``
  or ``-1``, which covers slice bounds and offsets), ``True``/``False``, ``and``/``or``,
  ``is``/``is not`` (``is`` <-> ``is not`` by inserting or dropping ``not``) and string literals
  (a marker ``"~"`` inserted after the opening quote: messages, labels, rule codes, keys);
* ``random.Random(seed)`` draws a site, then one of its replacements; a draw whose source does
  not compile, or whose AST equals the original's (equivalent by construction), or that repeats
  an earlier draw, is drawn again, until ``--count`` mutants are found (or the sites run out).

The repository (without ``.git`` and caches; ``node_modules`` linked, a ``../shared`` beside it
linked too) is copied to a temporary folder; the source tree is never written. Each mutant in
turn is written over the module in the copy, ``python -m pytest -x -q -p no:cacheprovider`` runs
the ``--tests`` files, then the ``--added`` ones, there with ``--timeout`` seconds (a timeout
counts as killed, and is reported as such), and the copy's original bytes are restored in
``finally`` (on Ctrl-C and SIGTERM too). The copy's bytecode is compiled once, unmutated; test
runs never write bytecode, and the module's modification time differs while it is mutated, so a
mutant is always compiled from its source, never taken from a cache. The unmutated copy must
pass the tests first. The run prints each mutant's status, the test that killed it and its diff,
then the score; ``--json FILE`` saves the same.

With ``--added``, a second score counts only the mutants a ``--tests`` file killed: ``-x`` stops
at the first failure and the ``--added`` files run last, so that is the score the ``--tests``
files alone get (the baseline before tests were added), from the same run.
``--only N`` (repeatable) runs only those mutant numbers of the draw, ``--list`` prints the draw
without running anything.
"""

from __future__ import annotations

import argparse
import ast
import compileall
import difflib
import importlib.util
import io
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tokenize
from dataclasses import asdict, dataclass
from pathlib import Path

OPERATORS: dict[str, tuple[str, ...]] = {
    "<": ("<=", ">"), "<=": ("<", ">="), ">": (">=", "<"), ">=": (">", "<="),
    "==": ("!=",), "!=": ("==",),
    "+": ("-",), "-": ("+",), "*": ("//",), "//": ("*",), "/": ("*",), "%": ("//",),
    "&": ("|",), "|": ("&",), "<<": (">>",), ">>": ("<<",),
    "+=": ("-=",), "-=": ("+=",),
}
NAMES: dict[str, tuple[str, ...]] = {"True": ("False",), "False": ("True",), "and": ("or",), "or": ("and",)}
MARK = "~"


@dataclass(frozen=True)
class Mutant:
    number: int
    line: int
    column: int
    kind: str
    old: str
    new: str
    diff: str


def _module_path(module: str) -> Path:
    path = Path(module)
    if path.suffix == ".py" and path.is_file():
        return path.resolve()
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise SystemExit(f"no module {module!r}")
    return Path(spec.origin).resolve()


def _docstring_lines(tree: ast.AST) -> set[int]:
    """Lines covered by string statements (docstrings, attribute docs)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def _annotation_spans(tree: ast.AST) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(start, end) of every type annotation, as (line, UTF-8 byte column) pairs, the AST's positions."""
    annotations: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            annotations.append(node.annotation)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            annotations.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
    return [((a.lineno, a.col_offset), (a.end_lineno or a.lineno, a.end_col_offset or 0)) for a in annotations]


def _string_mutant(text: str) -> str | None:
    """The literal with MARK inserted after its opening quote(s); None for bytes."""
    prefix = 0
    while text[prefix] not in "'\"":
        prefix += 1
    if "b" in text[:prefix].lower():
        return None
    quote = text[prefix:prefix + 3] if text[prefix:prefix + 3] in ('"""', "'''") else text[prefix]
    return text[:prefix + len(quote)] + MARK + text[prefix + len(quote):]


def sites(source: str) -> list[tuple[tokenize.TokenInfo, str, tuple[str, ...]]]:
    """Every mutable token: (token, kind, replacements), in source order."""
    tree = ast.parse(source)
    skip = _docstring_lines(tree)
    annotations = _annotation_spans(tree)
    lines = source.splitlines(keepends=True)

    def position(row: int, col: int) -> tuple[int, int]:  # tokenize counts characters, the AST bytes
        return row, len(lines[row - 1][:col].encode("utf-8")) if row <= len(lines) else col

    found = []
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    for i, tok in enumerate(tokens):
        start, end = position(*tok.start), position(*tok.end)
        if any(first <= start and end <= last for first, last in annotations):
            continue  # inside a type annotation: never evaluated, a mutant there changes nothing
        if tok.type == tokenize.STRING and (tok.start[0] in skip or (i and tokens[i - 1].string == "*")):
            continue  # a docstring, or a declared field's documentation (Construct's ``field * "docs"``)
        if tok.type == tokenize.OP and tok.string in OPERATORS:
            found.append((tok, "operator", OPERATORS[tok.string]))
        elif tok.type == tokenize.NAME and tok.string in NAMES:
            found.append((tok, "keyword", NAMES[tok.string]))
        elif tok.type == tokenize.NAME and tok.string == "is":
            following = tokens[i + 1].string if i + 1 < len(tokens) else ""
            found.append((tok, "keyword", ("is",) if following == "not" else ("is not",)))
        elif tok.type == tokenize.NUMBER and not any(c in tok.string.lower() for c in ".ej"):
            value = int(tok.string.replace("_", ""), 0)
            width = len(tok.string) - 2 if tok.string.lower().startswith("0x") else 0
            spelt = tuple(f"0x{v:0{width}X}" if width else str(v) for v in (value + 1, value - 1) if v >= 0)
            found.append((tok, "integer", spelt))
        elif tok.type == tokenize.STRING:
            new = _string_mutant(tok.string)
            if new is not None:
                found.append((tok, "string", (new,)))
    return found


def _replace(source: str, tok: tokenize.TokenInfo, new: str, drop_not: bool) -> str:
    lines = source.splitlines(keepends=True)
    (row, col), (end_row, end_col) = tok.start, tok.end
    head = "".join(lines[:row - 1]) + lines[row - 1][:col]
    tail = lines[end_row - 1][end_col:] + "".join(lines[end_row:])
    if drop_not:  # "is not" -> "is": drop the following "not"
        tail = tail.replace(" not", "", 1)
    return head + new + tail


def draw(source: str, count: int, seed: int) -> list[tuple[Mutant, str]]:
    """``count`` distinct, compiling, non-equivalent mutants (and their sources), reproducibly."""
    rng = random.Random(seed)
    original = ast.dump(ast.parse(source))
    candidates = sites(source)
    tried: set[tuple[int, int, str]] = set()
    out: list[tuple[Mutant, str]] = []
    total = sum(len(r) for _, _, r in candidates)
    while len(out) < count and len(tried) < total:
        tok, kind, replacements = candidates[rng.randrange(len(candidates))]
        new = rng.choice(replacements)
        key = (tok.start[0], tok.start[1], new)
        if key in tried:
            continue
        tried.add(key)
        drop_not = tok.string == "is" and new == "is"
        mutated = _replace(source, tok, new, drop_not)
        try:
            compile(mutated, "<mutant>", "exec")
            if ast.dump(ast.parse(mutated)) == original:
                continue
        except SyntaxError:
            continue
        diff = "".join(difflib.unified_diff(source.splitlines(keepends=True), mutated.splitlines(keepends=True),
                                            n=0, lineterm="\n"))
        diff = "".join(line for line in diff.splitlines(keepends=True) if line[:3] not in ("---", "+++"))
        old = "is not" if drop_not else tok.string
        out.append((Mutant(len(out) + 1, tok.start[0], tok.start[1], kind, old, new, diff), mutated))
    return out


def _repository(path: Path) -> Path:
    for folder in path.parents:
        if (folder / "pyproject.toml").is_file():
            return folder
    raise SystemExit(f"{path} is not inside a repository with a pyproject.toml")


def _copy(root: Path, into: Path) -> Path:
    """The repository copied under ``into`` (same folder name), heavy and cached folders linked or left out."""
    copy = into / root.name
    shutil.copytree(root, copy, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis"))
    for modules in root.glob("*/node_modules"):
        (copy / modules.relative_to(root)).symlink_to(modules)
    compileall.compile_dir(copy, quiet=2, workers=1)  # bytecode of the unmutated copy, compiled once
    return copy


def _run_tests(copy: Path, tests: list[str], timeout: float, select: str = "") -> tuple[str, str, float]:
    """(status, the first failing test or "", seconds)."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", PYTHONPATH=str(copy))
    started = time.monotonic()
    with tempfile.TemporaryFile(mode="w+") as output:
        proc = subprocess.Popen([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-rfE",
                                 *(["-k", select] if select else []), *tests],
                                cwd=copy, stdout=output, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return "killed (timeout)", "", time.monotonic() - started
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        output.seek(0)
        failed = re.search(r"^(?:FAILED|ERROR) (\S+)", output.read(), re.MULTILINE)
    status = "survived" if rc == 0 else "killed" if rc == 1 else f"killed (pytest exit {rc})"
    return status, failed.group(1) if failed else "", time.monotonic() - started


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module")
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tests", required=True, help="test files (space separated), run with -x")
    parser.add_argument("--added", default="", help="test files run after --tests; scored apart too")
    parser.add_argument("--select", default="", help="a pytest -k expression (to leave out a slow test)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per mutant's test run")
    parser.add_argument("--only", type=int, action="append", help="run only this mutant number (repeatable)")
    parser.add_argument("--list", action="store_true", help="print the draw, run nothing")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    source_path = _module_path(args.module)
    source = source_path.read_text(encoding="utf-8")
    mutants = draw(source, args.count, args.seed)
    base = args.tests.split()
    tests = base + args.added.split()
    base_files = {name.split("::")[0] for name in base}
    if args.list:
        for mutant, _ in mutants:
            print(f"#{mutant.number} line {mutant.line}: {mutant.kind} {mutant.old!r} -> {mutant.new!r}")
        return 0
    root = _repository(source_path)
    signal.signal(signal.SIGTERM, _terminate)
    results = []
    with tempfile.TemporaryDirectory(prefix="mutation-") as folder:
        copy = _copy(root, Path(folder))
        path = copy / source_path.relative_to(root)
        original = path.read_bytes()
        stat = path.stat()
        status, failed, seconds = _run_tests(copy, tests, args.timeout, args.select)
        if status != "survived":
            print(f"the tests fail on the unmutated module ({status} {failed}): nothing to measure", file=sys.stderr)
            return 2
        print(f"{path.name}: seed {args.seed}, {len(mutants)} mutants, tests {' '.join(tests)} "
              f"(unmutated run {seconds:.1f}s)", flush=True)
        for mutant, mutated in mutants:
            if args.only and mutant.number not in args.only:
                continue
            try:
                path.write_text(mutated, encoding="utf-8")
                os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # never the cached bytecode's
                status, failed, seconds = _run_tests(copy, tests, args.timeout, args.select)
            finally:
                path.write_bytes(original)
                os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the cached bytecode is valid again
            by_base = status.startswith("killed") and (not failed or failed.split("::")[0] in base_files)
            results.append({**asdict(mutant), "status": status, "killed_by": failed, "by_base_tests": by_base,
                            "seconds": round(seconds, 1)})
            print(f"#{mutant.number} {status} {failed} ({seconds:.1f}s) line {mutant.line}: {mutant.kind}\n"
                  f"{mutant.diff}",
                  end="" if mutant.diff.endswith("\n") else "\n", flush=True)
    killed = sum(r["status"].startswith("killed") for r in results)
    survivors = [r for r in results if r["status"] == "survived"]
    score = 100 * killed / len(results) if results else 0.0
    print(f"\n{path.name} seed {args.seed}: {killed}/{len(results)} killed, score {score:.0f}%")
    base_killed = sum(r["by_base_tests"] for r in results)
    if args.added:
        print(f"{path.name} seed {args.seed}, --tests alone: {base_killed}/{len(results)} killed, "
              f"score {100 * base_killed / max(len(results), 1):.0f}%")
    for r in survivors:
        print(f"  survived #{r['number']} line {r['line']}: {r['old']!r} -> {r['new']!r}")
    if args.json:
        args.json.write_text(json.dumps({"module": str(source_path), "seed": args.seed, "tests": base,
                                         "added": args.added.split(),
                                         "killed": killed, "killed_by_tests": base_killed, "total": len(results),
                                         "score": score, "mutants": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
