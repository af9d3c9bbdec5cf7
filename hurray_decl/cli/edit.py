"""``edit``: change a ``.hrry`` file in place, writing only its tail (and what moves or is added).

``hurray-decl edit FILE --set KEY=VALUE[:type] --delete KEY --rename OLD=NEW --drop TENSOR
--append NAME=FILE.npy``: the options apply in the order given, all in one edit
(:mod:`hurray_decl.hurray.container.edit`, which describes what is written and the rollback
journal ``FILE.edit-journal`` that makes a killed edit recoverable). With no option it only
runs the recovery step of an interrupted edit. A ``--set`` value is a string unless it ends in
``:type``, one of ``string``, ``int64``, ``uint64``, ``float64``, ``bool`` (true/false, 1/0) or
``bytes`` (hex digits); ``--set k=a:b:string`` keeps a colon in a string.

Exit 0 done, 1 the file or the edit breaks a rule (its code printed: the file's own HF rule,
HF-IDX-13 for a name taken, CV-EDT-02/03), 2 a usage error (a malformed option, a name or key
the file does not hold, input that is not a regular file), 3 a file problem.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from hurray_decl.cli.common import OK, FileProblem, UsageError
from hurray_decl.cli.detection import handles
from hurray_decl.cli.kinds import Kind

TRUE, FALSE = ("true", "1", "yes"), ("false", "0", "no")


class _Change(argparse.Action):
    """Each edit option appends (verb, text) to ``changes``: the changes keep the order given."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option: str | None = None) -> None:
        changes = list(getattr(namespace, "changes", None) or [])
        changes.append((self.const, values))
        namespace.changes = changes


def _pair(text: str, option: str, shape: str) -> tuple[str, str]:
    left, sep, right = text.partition("=")
    if not sep or not left:
        raise UsageError(f"argument {option}: {text!r} is not {shape}")
    return left, right


def _typed(text: str, kind: str) -> Any:
    """The value of ``--set``'s text as ``kind`` (a name of TYPES; a UsageError naming both when
    the text is not such a value)."""
    from hurray_decl.hurray.container import KVTag
    from hurray_decl.hurray.container.edit import TYPES

    tag = TYPES[kind]
    if tag == KVTag.BOOL:
        if text.lower() not in TRUE + FALSE:
            raise UsageError(f"argument --set: {text!r} is not a bool value (true/false, 1/0)")
        return text.lower() in TRUE
    parsers: dict[KVTag, Callable[[str], Any]] = {
        KVTag.INT64: lambda t: int(t, 0), KVTag.UINT64: lambda t: int(t, 0), KVTag.FLOAT64: float,
        KVTag.BYTES: bytes.fromhex}
    parse = parsers.get(KVTag(tag), str)
    try:
        return parse(text)
    except ValueError:
        raise UsageError(f"argument --set: {text!r} is not a value of type {kind}") from None


def _set(text: str) -> tuple[str, Any, str]:
    from hurray_decl.hurray.container import KVTag
    from hurray_decl.hurray.container.edit import TYPES

    key, value = _pair(text, "--set", "KEY=VALUE[:type]")
    body, sep, kind = value.rpartition(":")
    if not sep or kind not in TYPES:
        body, kind = value, KVTag.STRING.name.lower()
    return key, _typed(body, kind), kind


def _array(name: str, path: str) -> Any:
    import numpy as np

    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise FileProblem(f"argument --append: no such file: {path}") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"argument --append: {name}={path} is not a readable .npy file ({exc})") from None


def cmd_edit(args: argparse.Namespace) -> int:
    from hurray_decl.cli.inputs import regular_file
    from hurray_decl.errors import NameNotFound, PathError
    from hurray_decl.hurray.container.edit import edit

    path = regular_file(args)
    if path is None:
        raise UsageError(f"argument INPUT: edit changes a file in place: {args.input} is not a regular file "
                         "(standard input, hex bytes, a pipe and --offset/--length windows are refused)")
    change = edit(path)
    for verb, text in args.changes or []:
        if verb == "set":
            key, value, kind = _set(text)
            change.set(key, value, kind)
        elif verb == "delete":
            change.delete(text)
        elif verb == "drop":
            change.drop(text)
        elif verb == "rename":
            change.rename(*_pair(text, "--rename", "OLD=NEW"))
        else:
            name, npy = _pair(text, "--append", "NAME=FILE.npy")
            change.append({name: _array(name, npy)})
    try:
        done = change.commit()
    except NameNotFound as err:  # a name or key the file does not hold: the option's argument
        raise UsageError(f"argument --{err.path}: {err.explained()}") from None
    except PathError as err:  # the file or its journal cannot be opened or written (the old version kept)
        raise FileProblem(f"{path}: {err.explained()}") from None
    recovered = f"; recovered an interrupted edit ({done.recovered})" if done.recovered else ""
    if done.changes:
        print(f"edited {path}: {done.changes} changes, {done.written} bytes written (journal {done.journal}); "
              f"{done.old_size} -> {done.new_size} bytes{recovered}")
    else:
        print(f"{path}: no change{recovered or '; no interrupted edit to recover'}")
    return OK


def register(sub: Any) -> None:
    command = sub.add_parser(
        "edit", help="change a .hrry file in place: KV entries, tensor names, drop and append tensors",
        description="Change a .hrry file in place, writing only its tail (KV section, index, trailer), the "
                    "tensors after a dropped one (moved down: a container has no gaps) and appended ones. The "
                    "options apply in the order given. A rollback journal FILE.edit-journal is written first and "
                    "deleted last: an edit killed at any point is rolled back by the next edit (with no option, "
                    "edit only does that), and validate refuses the file meanwhile (CV-EDT-01). Exit 0 done, 1 "
                    "a rule broken (its code is printed), 2 a usage error, 3 a file problem.")
    command.add_argument("input", metavar="FILE", help="the .hrry file to change")
    command.set_defaults(changes=[])
    for flag, verb, metavar, text in (
            ("--set", "set", "KEY=VALUE[:type]", "set a KV entry; type: string (default), int64, uint64, float64, "
                                                 "bool or bytes (hex)"),
            ("--delete", "delete", "KEY", "delete a KV entry"),
            ("--rename", "rename", "OLD=NEW", "rename a tensor"),
            ("--drop", "drop", "TENSOR", "remove a tensor (a composite's head: the composite whole); the "
                                               "tensors after it move down"),
            ("--append", "append", "NAME=FILE.npy", "add a tensor with the values of a .npy file")):
        command.add_argument(flag, action=_Change, const=verb, dest="changes", metavar=metavar, help=text)
    command.set_defaults(run=cmd_edit)
    handles(sub, "edit", {Kind.CONTAINER: cmd_edit})
