"""What every command shares: exit codes, the errors that choose them, one-line messages,
colour and progress (the one error guard of a handler that reports its own failures, :func:`guarded`).

Exit codes (documented in ``hurray-decl --help`` and the README):

====  ==========================================================================
0     valid, or done
1     invalid input: the rule code is printed (a disagreement, for audit and fuzz)
2     usage error: a bad option or argument (argparse's own code), named in the message
3     file or environment error: a missing or unreadable file, a folder given for a file,
      an output that cannot be written, a missing optional package, memory exhausted
4     an unexpected internal error (a bug): one line; ``--debug`` shows the traceback
130   interrupted (Ctrl-C)
141   standard output closed by its reader (``... | head -1``), as for SIGPIPE
====  ==========================================================================
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

OK, INVALID, USAGE, FILE, INTERNAL = 0, 1, 2, 3, 4
INTERRUPTED, BROKEN_PIPE = 130, 141

SCALE_TYPES = ("float32", "float16", "bfloat16")
"""The scale and matrix types of MatMulNBits (``--scale-type``), also the ``--dtype`` choices of
dequantized values (``convert.tensors.DEQUANTIZE_DTYPES``)."""

MESSAGE_LIMIT = 300
"""Characters of one message line; longer text (an echoed value) is cut with an ellipsis."""


class CommandError(Exception):
    """A failure the command line reports in one line, with the exit status ``status``."""

    status = USAGE


class UsageError(CommandError):
    """A command-line mistake: an option or argument that cannot be used (exit 2)."""

    status = USAGE


class FileProblem(CommandError):
    """A file, folder or environment problem (exit 3)."""

    status = FILE


class InvalidInput(CommandError):
    """An input that is not what the command reads (exit 1)."""

    status = INVALID


def one_line(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` on one line, whitespace runs collapsed, cut to ``limit`` characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "\u2026"


def verdict(err: Any) -> str:
    """The one line naming a HurrayDeclError's rule, field and offset, for every kind of input:
    ``invalid: [CODE] path at byte N: ...`` (as the last line of a dump; ``valid: WHAT`` otherwise)."""
    return one_line(f"invalid: {err}")


class Style:
    """ANSI colour on a terminal, plain text when piped or when NO_COLOR is set."""

    def __init__(self, stream: Any) -> None:
        self.on = hasattr(stream, "isatty") and stream.isatty() and "NO_COLOR" not in os.environ

    def paint(self, text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.on else text

    def good(self, text: str) -> str:
        return self.paint(text, "32")

    def bad(self, text: str) -> str:
        return self.paint(text, "31;1")


def colour_verdicts(text: str, style: Style) -> str:
    lines = []
    verdict = False  # in an invalid verdict: its continuation lines are indented
    for line in text.splitlines():
        verdict = line.startswith("invalid") or (verdict and line.startswith(" "))
        if verdict or "<-- " in line:
            line = style.bad(line)
        elif line == "valid" or line.startswith("valid ("):
            line = style.good(line)
        lines.append(line)
    return "\n".join(lines)


def note(text: str, limit: int | None = MESSAGE_LIMIT) -> None:
    """One line of information on standard error (not part of a command's result); ``limit``
    None: the text as it is, uncut."""
    print(f"hurray-decl: {text if limit is None else one_line(text, limit)}", file=sys.stderr)


@dataclass
class Outcome:
    """The exit status of a :func:`guarded` block: set by the block, or by the failure it ended on."""

    status: int = OK


@contextmanager
def guarded() -> Iterator[Outcome]:
    """A block whose every expected failure is one line, uncut, and its exit status, for a
    command that writes outputs (``convert``): nothing it stages survives the failure, and each
    message says so where it matters. The block sets ``outcome.status`` when it ends normally."""
    from hurray_decl.errors import ARGUMENT, HurrayDeclError

    outcome = Outcome()
    try:
        yield outcome
    except CommandError as err:
        note(str(err), None)
        outcome.status = err.status
    except HurrayDeclError as err:
        note(f"usage: {err}" if err.code == ARGUMENT else verdict(err), None)
        outcome.status = USAGE if err.code == ARGUMENT else INVALID
    except BrokenPipeError:
        raise  # the reader of our output went away: the top level stops quietly
    except OSError as err:
        note(f"file or environment error: {err}", None)
        outcome.status = FILE
    except MemoryError:
        note("environment error: the system refused the memory this conversion needs; nothing written", None)
        outcome.status = FILE
    except KeyboardInterrupt:
        note("interrupted; nothing written", None)
        outcome.status = INTERRUPTED


def progress(items: Sequence[Any], label: str) -> Iterable[Any]:
    """Items with a progress bar on a terminal (stderr), silent otherwise."""
    from tqdm import tqdm

    return tqdm(items, desc=label, unit="tensor", file=sys.stderr, leave=False,
                disable=len(items) < 2 or not sys.stderr.isatty())


def progress_printer(label: str) -> Callable[[int, int], None] | None:
    """A progress callback that rewrites one stderr line, on a terminal only."""
    if not sys.stderr.isatty():
        return None

    def report(done: int, total: int) -> None:
        end = "\n" if done >= total else ""
        print(f"\r{label}: {100 * done // max(total, 1):3d}%", end=end, file=sys.stderr, flush=True)

    return report


def integer_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: an integer of at least ``minimum`` (argparse names the option in its message)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is less than {minimum}")
        return value

    return parse


def region(text: str | None) -> Any:
    """``--region`` as an index: comma-separated integers, ``start:stop[:step]`` slices and ``...``
    (``"0:64,...,3"``); None without the option."""
    if text is None:
        return None
    items: list[Any] = []
    for part in text.split(","):
        part = part.strip()
        try:
            if part == "...":
                items.append(Ellipsis)
            elif ":" in part:
                bounds = [int(b) if b.strip() else None for b in part.split(":")]
                if len(bounds) > 3:
                    raise ValueError(part)
                items.append(slice(*bounds))
            else:
                items.append(int(part))
        except ValueError:
            raise UsageError(f"argument --region: {part!r} is not an integer, a start:stop[:step] slice or ...") \
                from None
    return tuple(items)


def check_region(key: tuple[Any, ...], shape: tuple[int, ...]) -> None:
    """Refuse (exit 2) a ``--region`` that does not fit ``shape``: more indices than dimensions, an
    index past its dimension, or a slice bound past it (NumPy would clip it silently)."""
    explicit = [item for item in key if item is not Ellipsis]
    if key.count(Ellipsis) > 1:
        raise UsageError("argument --region: at most one ...")
    if len(explicit) > len(shape):
        raise UsageError(f"argument --region: {len(explicit)} indices for a tensor of {len(shape)} dimensions "
                         f"(shape {list(shape)})")
    at = key.index(Ellipsis) if Ellipsis in key else len(key)
    dims = list(range(at)) + list(range(len(shape) - (len(key) - at - 1), len(shape)))
    for item, dim in zip(explicit, dims):
        extent = shape[dim]
        if isinstance(item, slice):
            if item.step == 0:
                raise UsageError(f"argument --region: a slice step of 0 (dimension {dim})")
            bounds = [b for b in (item.start, item.stop) if b is not None]
            wrong = [b for b in bounds if not -extent <= b <= extent]
        else:
            wrong = [item] if not -extent <= item < extent else []
        if wrong:
            raise UsageError(f"argument --region: {wrong[0]} is past dimension {dim}, of {extent} (shape "
                             f"{list(shape)})")


def byte_count(text: str) -> int:
    """``--split-max-size``: bytes, or a number followed by K, M or G (powers of 1000, as
    llama.cpp's gguf-split reads them)."""
    scale = {"K": 10**3, "M": 10**6, "G": 10**9}.get(text[-1:].upper(), 1)
    digits = text[:-1] if scale > 1 else text
    if not digits.isdigit() or int(digits) == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size: a positive number of bytes, or N followed by "
                                         "K, M or G")
    return int(digits) * scale
