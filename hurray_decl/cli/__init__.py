"""The ``hurray-decl`` command line: :func:`run` is the console script (also ``python -m hurray_decl``),
:func:`main` runs one command line in-process.

One module per command group. **Plug-in point**: :data:`COMMAND_MODULES` lists the modules
whose ``register(subparsers) -> None`` adds their sub-commands, in the order ``--help`` shows
them. A command module

* adds each command with ``subparsers.add_parser(name, help=..., description=...)`` and
  ``set_defaults(run=handler)``, where ``handler(args: argparse.Namespace) -> int`` returns
  the exit code;
* imports only ``argparse`` and this package's light modules at its top: everything heavy
  (NumPy, onnx, protobuf, the codec) inside the handler, so that every command starts as fast
  as the one that needs the least (a test checks it for every listed module);
* reports failures by raising: :class:`~hurray_decl.cli.common.UsageError` (exit 2),
  :class:`~hurray_decl.cli.common.FileProblem` (exit 3), :class:`hurray_decl.errors.ArgumentError`
  (exit 2, naming the argument) or any other ``HurrayDeclError`` (exit 1, its rule code printed);
  :func:`main` prints the one line. A handler that prints its own verdict returns 1 itself.
* may check, before any work, options that do not apply together (``set_defaults(check=fn)``,
  ``fn(args)`` raising :class:`~hurray_decl.cli.common.UsageError`): an option that does not
  apply is refused naming it, never ignored;
* imports no other command module: what two commands share is in the shared modules
  (``common``, ``kinds``, ``inputs``, ``detection``, ``outputs``, ``report``, ``writers``,
  ``conversions``, ``corpus``, ``html`` ...; ``tests/test_cli_modules.py`` checks it);
* reads its input through :mod:`hurray_decl.cli.inputs`: a command that takes inputs of several
  kinds registers one handler per kind (``detection.handles(subparsers, command, {kind: handler})``)
  and :func:`hurray_decl.cli.detection.dispatch` runs the one for the kind detected in the input's
  window (options that do not apply to that kind refused first);
* writes files, verdict lines and JSON documents through :mod:`hurray_decl.cli.outputs` (atomic
  files, nothing left on failure; one verdict line; one JSON envelope).

Exit codes are those of :mod:`hurray_decl.cli.common`: 0 valid or done, 1 invalid (the rule code
is printed), 2 usage error, 3 file or environment error, 4 internal error (``--debug`` or
``HURRAY_DECL_DEBUG=1`` shows the traceback), 130 interrupted, 141 output pipe closed.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from hurray_decl.cli.common import (
    BROKEN_PIPE,
    FILE,
    INTERNAL,
    INTERRUPTED,
    INVALID,
    USAGE,
    CommandError,
    one_line,
    verdict,
)

COMMAND_MODULES: list[str] = [
    "hurray_decl.cli.descriptors",  # inspect, decode, encode, validate
    "hurray_decl.cli.dequantize",
    "hurray_decl.cli.audit",
    "hurray_decl.cli.bench",
    "hurray_decl.cli.fuzz",
    "hurray_decl.cli.reference",  # schemes, rule
    "hurray_decl.cli.convert",  # convert (its readers and writers: cli.conversions)
    "hurray_decl.cli.models",  # quantize
    "hurray_decl.cli.ls",
    "hurray_decl.cli.diff",
    "hurray_decl.cli.edit",  # edit a .hrry file in place
    "hurray_decl.cli.container",  # extract; .hrry inputs of inspect, validate, decode, dequantize, audit
    "hurray_decl.cli.stream",  # Hurray stream inputs of the same commands and extract (wraps them: after container)
    "hurray_decl.cli.onnx_light",  # profiles; onnx-light inputs of the same commands (wraps them: keep it last)
]
"""The command modules, each with ``register(subparsers)`` (see the module's documentation)."""

PROG = "hurray-decl"
EPILOG = ("exit codes: 0 valid or done; 1 invalid input (the rule code is printed) or a disagreement; "
          "2 usage error; 3 file or environment error; 4 internal error (--debug shows the traceback); "
          "130 interrupted; 141 output pipe closed")


def version() -> str:
    from hurray_decl import __version__

    return __version__


class VersionAction(argparse.Action):
    """``--version``, reading the installed metadata only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(f"{PROG} {version()}")
        parser.exit()


class Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors: ``hurray-decl validate: error: ... (see --help)``, exit 2.
    Sub-command parsers are of the same class (argparse's default for ``add_subparsers``)."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE, f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    from hurray_decl.cli.kinds import summary

    parser = Parser(
        prog=PROG, epilog=EPILOG,
        description="Inspect, validate, decode, encode, dequantize, list, convert, audit and fuzz quantized tensors: "
                    f"{summary()}; the kind is detected from the bytes.")
    parser.add_argument("-V", "--version", action=VersionAction)
    parser.add_argument("--debug", action="store_true", help="show the traceback of an internal error")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def fail(status: int, message: str) -> int:
    print(f"{PROG}: {one_line(message)}", file=sys.stderr)
    return status


def quiet_stdout() -> None:
    """Point standard output at /dev/null, so that flushing it at exit cannot fail again."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code (never raises, never prints a traceback unless debugging)."""
    debug = os.environ.get("HURRAY_DECL_DEBUG", "") not in ("", "0")
    try:
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as stop:  # argparse: --help, --version (0) or a usage error (2)
            return stop.code if isinstance(stop.code, int) else USAGE
        debug = debug or args.debug
        from hurray_decl.cli.outputs import check_outputs

        check_outputs(args)  # an output that would destroy a node or an input: refused before any work
        check = getattr(args, "check", None)
        if check is not None:  # the command's options that do not apply together (exit 2), before any work
            check(args)
        status = args.run(args)
        sys.stdout.flush()
        return status
    except KeyboardInterrupt:
        return fail(INTERRUPTED, "interrupted")
    except BrokenPipeError:  # the reader of our output went away (| head): stop quietly
        quiet_stdout()
        return BROKEN_PIPE
    except CommandError as err:
        return fail(err.status, f"error: {err}")
    except Exception as err:  # the last line of defence: one line and its own exit code
        from hurray_decl.errors import ARGUMENT, HurrayDeclError

        if isinstance(err, HurrayDeclError):
            if err.code == ARGUMENT:
                return fail(USAGE, f"error: argument {err}".replace(f"[{ARGUMENT}] ", ""))
            return fail(INVALID, verdict(err))
        if isinstance(err, ModuleNotFoundError) and not (err.name or "").startswith("hurray_decl"):
            return fail(FILE, f"error: this command needs the Python package {err.name!r}, which is not installed")
        if isinstance(err, MemoryError):
            return fail(FILE, "error: out of memory")
        if isinstance(err, OSError):
            where = f": {err.filename}" if err.filename else ""
            return fail(FILE, f"error: {err.strerror or err}{where}")
        if debug:
            import traceback

            traceback.print_exc()
        return fail(INTERNAL, f"internal error {type(err).__name__}: {err} (a bug: please report it; "
                              "--debug shows the traceback)")


def run() -> NoReturn:
    """The ``hurray-decl`` command: :func:`main` on the process's arguments, then exit with its code.

    Before exiting, every object is frozen out of the garbage collector's reach (``gc.freeze``):
    the interpreter's last collections would otherwise walk every object the imports made (the
    models, the declarations, pydantic's own), a quarter of a short command's time (``validate``
    of a descriptor: 290 ms with those collections, 220 ms without). Nothing is left undone:
    files are closed and exit handlers run as before."""
    status = main()
    gc.freeze()
    sys.exit(status)
