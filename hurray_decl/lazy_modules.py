"""NumPy and ml_dtypes, imported on their first use.

Validating a descriptor needs neither, yet the modules it loads (the schemes, their kernels,
``numerics``, ``storage``) name them at their top; importing NumPy costs more than the whole
validation. Those modules write ``from .lazy_modules import numpy as np``: the name stands for
the module and imports it (thread-safely, through the import system's lock) when an attribute
is first read. Code at a module's top level must therefore not read ``np.anything``. A type
checker sees the modules themselves.

:func:`lazy_names` turns a package's table of the names it imports on first use (declared as
data: module -> names) into what its ``__getattr__`` looks up; the package's ``if TYPE_CHECKING:``
block imports the same names for type checkers, and a test checks the two agree
(``tests/test_typing.py``). Nothing is parsed at import.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any


class LazyModule:
    """A module imported when one of its attributes is first read."""

    def __init__(self, name: str) -> None:
        self.__name = name

    def __getattr__(self, attribute: str) -> Any:
        value = getattr(importlib.import_module(self.__name), attribute)
        setattr(self, attribute, value)  # later reads find it here: hot loops make no import call
        return value

    def __repr__(self) -> str:
        return f"<module {self.__name!r}, imported on first use>"


def lazy_names(table: Mapping[str, tuple[str, ...]]) -> dict[str, tuple[str, str]]:
    """public name -> (module, attribute or submodule), from a package's table of the names each
    module gives it: ``"attribute"``, or ``"attribute as name"`` for one exported under another
    name (a submodule under its public name)."""
    names: dict[str, tuple[str, str]] = {}
    for module, entries in table.items():
        for entry in entries:
            attribute, _, alias = entry.partition(" as ")
            names[alias or attribute] = (module, attribute)
    return names


def lazy_package(namespace: dict[str, Any], table: Mapping[str, tuple[str, ...]]
                 ) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``__all__``, ``__getattr__`` and ``__dir__`` for the package whose globals are ``namespace``:
    its public names are those of ``table`` (:func:`lazy_names`), each imported from its
    submodule when first asked for, then kept in the package's globals."""
    source = {name: module for name, (module, _) in lazy_names(table).items()}

    def attribute(name: str) -> Any:
        if name not in source:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source[name]), name)
        namespace[name] = value
        return value

    def names() -> list[str]:
        return sorted(set(namespace) | set(source))

    return sorted(source), attribute, names


class LazyAttributes(Mapping[str, Any]):
    """A fixed mapping of keys to attributes of a module, read when a value is first asked for."""

    def __init__(self, module: LazyModule | ModuleType, attributes: dict[str, str]) -> None:
        self.module, self.attributes = module, attributes

    def __getitem__(self, key: str) -> Any:
        return getattr(self.module, self.attributes[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self.attributes)

    def __len__(self) -> int:
        return len(self.attributes)


if TYPE_CHECKING:  # a type checker sees the modules themselves, with their types
    import ml_dtypes as ml_dtypes
    import numpy as numpy
else:
    numpy = LazyModule("numpy")
    ml_dtypes = LazyModule("ml_dtypes")
