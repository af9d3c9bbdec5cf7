"""NumPy and ml_dtypes, imported on their first use.

Validating a descriptor needs neither, yet the modules it loads (the schemes, their kernels,
``numerics``, ``storage``) name them at their top; importing NumPy costs more than the whole
validation. Those modules write ``from .lazy_modules import numpy as np``: the name stands for
the module and imports it (thread-safely, through the import system's lock) when an attribute
is first read. Code at a module's top level must therefore not read ``np.anything``. A type
checker sees the modules themselves.

:func:`lazy_exports` reads the public names a package imports on first use from the imports of
its ``if TYPE_CHECKING:`` block, which is what a type checker reads too.
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


def lazy_exports(path: str) -> dict[str, tuple[str, str]]:
    """public name -> (module, attribute or submodule) of the package whose ``__init__`` is at
    ``path``: the imports of its ``if TYPE_CHECKING:`` blocks, written ``name as name`` so that
    a type checker sees each name with its type, exported. The package's ``__getattr__`` imports
    them on first use; they are declared there once."""
    import ast

    with open(path, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    names: dict[str, tuple[str, str]] = {}
    for block in tree.body:
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING":
            for statement in block.body:
                if isinstance(statement, ast.ImportFrom):
                    for alias in statement.names:
                        module = "." * statement.level + (statement.module or "")
                        names[alias.asname or alias.name] = (module, alias.name)
    return names


def lazy_package(namespace: dict[str, Any]) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``__all__``, ``__getattr__`` and ``__dir__`` for the package whose globals are ``namespace``:
    its public names are its ``TYPE_CHECKING`` imports (:func:`lazy_exports`), each imported from
    its submodule when first asked for, then kept in the package's globals."""
    source = {name: module for name, (module, _) in lazy_exports(namespace["__file__"]).items()}

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
