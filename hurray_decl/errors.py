"""The whole error tree of hurray_decl.

Every error raised by a public function derives from :class:`HurrayDeclError` and carries:

* ``code``: the stable rule ID from RULES.md (``HQ-PB-03``, ``OL-WIRE-12``, ...);
* ``path``: where in the structure the offending value sits, as
  ``descriptor -> payload -> block_size``;
* ``offset``: the byte offset of the offending field within the input, or ``None`` when the
  error is not about a byte position (a model built in memory, a NumPy array);
* ``actual`` and ``expected``: the value seen and what the rule wants.

Bad input raises subclasses that also derive from :class:`ValueError`; a request for something
hurray_decl does not do raises subclasses that also derive from :class:`NotImplementedError`.
A caller's path that cannot be opened raises a :class:`PathError`, which is also the built-in
error ``open`` gives (``FileNotFoundError``, ``IsADirectoryError``, ``PermissionError``...); a
name a file does not hold raises a :class:`NameNotFound`, which is also a ``KeyError``.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ARGUMENT",
    "PATH_ERRORS",
    "ArgumentError",
    "FolderGiven",
    "FormatError",
    "HurrayDeclError",
    "InvalidSchemeTag",
    "MissingFile",
    "NameNotFound",
    "NoPermission",
    "NotAFolder",
    "OnnxLightError",
    "OnnxLightTypeError",
    "OpaqueDataAccess",
    "PathError",
    "PrivateSchemeTag",
    "RegistrationError",
    "ReservedSchemeTag",
    "RuleViolation",
    "SchemeTagError",
    "TruncatedError",
    "UnassignedSchemeTag",
    "UnsupportedError",
    "path_error",
]


def _show(value: Any) -> str:
    """Render a value for a message: integers as decimal, bytes as hex."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex(" ").upper() or "(no bytes)"
    return str(value)


class HurrayDeclError(Exception):
    """Root of every error hurray_decl raises."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        path: str = "descriptor",
        offset: int | None = None,
        actual: Any = None,
        expected: Any = None,
    ) -> None:
        self.code = code
        self.path = path
        self.offset = offset
        self.actual = actual
        self.expected = expected
        self.detail = message
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.path if self.offset is None else f"{self.path} at byte {self.offset}"
        return f"[{self.code}] {where}: {self.explained()}"

    def explained(self) -> str:
        """What is wrong, with the actual and expected values when known (the message without
        its code, path and offset)."""
        said = [f"{name} {_show(value)}" for name, value in (("actual", self.actual), ("expected", self.expected))
                if value is not None]
        return f"{self.detail} ({'; '.join(said)})" if said else self.detail

    def rebased(self, delta: int, prefix: str | None = None) -> HurrayDeclError:
        """Shift the offset by ``delta`` bytes and prepend ``prefix`` to the path, in place.

        A reader that decodes a nested structure from a slice uses this so that the error
        names the byte position within the whole input.
        """
        if self.offset is not None:
            self.offset += delta
        if prefix:
            tail = self.path.split(" -> ", 1)
            self.path = prefix + (" -> " + tail[1] if len(tail) == 2 else "")
        self.args = (self._render(),)
        return self

    def located(self, offset: int) -> HurrayDeclError:
        """Give an error raised without a position (by a model) the offset of its field."""
        if self.offset is None:
            self.offset = offset
            self.args = (self._render(),)
        return self

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary: code, path, offset and message (with the actual and expected values)."""
        return {"code": self.code, "path": self.path, "offset": self.offset, "message": self.explained()}


class FormatError(HurrayDeclError, ValueError):
    """The input breaks a rule of the format."""


class RuleViolation(FormatError):
    """A field holds a value its rule refuses."""


class TruncatedError(FormatError):
    """The input ends before the structure does."""


class SchemeTagError(FormatError):
    """The scheme tag's class forbids decoding it (see :mod:`hurray_decl.hurray.tables.tags`)."""


class InvalidSchemeTag(SchemeTagError):
    """0x00 or 0xFF: never valid, in any mode."""


class UnassignedSchemeTag(SchemeTagError):
    """0x06-0x5F: not assigned by this version of the specification."""


class ReservedSchemeTag(SchemeTagError):
    """0x60-0x7F (nested schemes) or 0x80-0xEF (future versions)."""


class PrivateSchemeTag(SchemeTagError):
    """0xF0-0xFE with no codec registered for the tag."""


class RegistrationError(HurrayDeclError, ValueError):
    """A private codec cannot be registered as asked."""


class UnsupportedError(HurrayDeclError, NotImplementedError):
    """hurray_decl does not do what was asked."""


class OpaqueDataAccess(UnsupportedError):
    """Tensor data was requested for a descriptor accepted only in permissive mode."""


class OnnxLightError(FormatError):
    """An onnx-light value, plan or descriptor breaks an OL-* rule."""


class OnnxLightTypeError(HurrayDeclError, TypeError):
    """An onnx-light field received a value of the wrong type (OL-PROF-04, OL-NUM-27)."""


ARGUMENT = "ARGUMENT"
"""The ``code`` of an :class:`ArgumentError`: no rule of either format is involved."""


class ArgumentError(HurrayDeclError, ValueError):
    """A caller's argument is unusable: a wrong type, an unknown option, a name that is not there.

    It is not a property of the input bytes, so it names no RULES.md rule: ``code`` is
    :data:`ARGUMENT` and ``path`` names the argument (``quantize(array=...)``, ``--name``).
    """

    def __init__(self, argument: str, message: str, *, actual: Any = None, expected: Any = None) -> None:
        super().__init__(ARGUMENT, message, path=argument, actual=actual, expected=expected)


class NameNotFound(ArgumentError, KeyError):
    """A name a mapping does not hold (``f["nope"]`` of an opened file): an :class:`ArgumentError`
    (code :data:`ARGUMENT`) that ``except KeyError`` catches too, as for a dict."""

    def __str__(self) -> str:  # the message, not KeyError's repr of it
        return Exception.__str__(self)


class PathError(ArgumentError, OSError):
    """A path the caller gave that cannot be opened or written: an :class:`ArgumentError` (code
    :data:`ARGUMENT`) that is also the ``OSError`` the system gave, with its ``errno``,
    ``strerror`` and ``filename`` (:func:`path_error` picks ``FileNotFoundError``,
    ``IsADirectoryError``, ``PermissionError``... as ``open`` does)."""

    def __str__(self) -> str:  # the message naming the code and argument, not OSError's "[Errno N] ..."
        return Exception.__str__(self)


class MissingFile(PathError, FileNotFoundError):
    """No file at the path given (``FileNotFoundError``)."""


class FolderGiven(PathError, IsADirectoryError):
    """A folder where a file was asked for (``IsADirectoryError``)."""


class NotAFolder(PathError, NotADirectoryError):
    """A path through something that is not a folder (``NotADirectoryError``)."""


class NoPermission(PathError, PermissionError):
    """A file the system does not let us open (``PermissionError``)."""


PATH_ERRORS: dict[type[OSError], type[PathError]] = {
    FileNotFoundError: MissingFile, IsADirectoryError: FolderGiven, NotADirectoryError: NotAFolder,
    PermissionError: NoPermission,
}
"""The built-in error of each common reason, and the :class:`PathError` that subclasses it."""


def path_error(argument: str, message: str, cause: OSError, path: str) -> PathError:
    """The :class:`PathError` for ``cause`` (an OSError the system raised for ``path``): of the
    class that subclasses ``cause``'s, keeping its errno and reason."""
    kind = next((error for base, error in PATH_ERRORS.items() if isinstance(cause, base)), PathError)
    err = kind(argument, message, actual=path)
    err.errno, err.strerror, err.filename = cause.errno, cause.strerror, path
    return err
