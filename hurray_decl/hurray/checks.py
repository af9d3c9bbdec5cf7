"""What the checks of a layout or a scheme see of the tensor around them: protocols.

A layout model's ``check_tensor`` and a scheme's ``check_tensor`` see the tensor through
:class:`TensorChecks` (its shape, its buffer table, the shared extent checks, the parameter
buffers a scheme records); a scheme's ``check_data`` and its kernel plan see the buffer contents
through :class:`DataChecks`. :class:`~hurray_decl.hurray.tensor.context.TensorContext` and
:class:`~hurray_decl.hurray.tensor.validate.DataContext` are the two implementations (mypy
checks them where the checks are called); the layouts and schemes name these protocols, never
the contexts, so the contexts may know the layouts and schemes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from hurray_decl.hurray.tables.element_types import ElementType

if TYPE_CHECKING:
    import numpy as np


class Paging(Protocol):
    """The block-paged fields a scheme checks its axis and block size against (HT-LAY-63/64)."""

    page_size: int
    num_pages: int


class TensorChecks(Protocol):
    """The tensor around a layout's fields or a scheme's payload."""

    shape: tuple[int, ...]
    rank: int
    writer_rules: bool

    def fail(self, code: str, message: str, path: str, *, actual: Any = None, expected: Any = None) -> NoReturn: ...

    def static(self) -> bool: ...

    def packed(self, count: int | None) -> int | None: ...

    def element_count(self, padded: bool = False) -> int | None: ...

    def dense_extent(self, count: int | None, code: str) -> None: ...

    def dense_extent_pow2(self, exponent: int, code: str) -> None: ...

    def strided_extent(self, strides: tuple[int, ...]) -> None: ...

    def component_size(self, index: int, size: int | None, code: str, what: str,
                       writer_code: str = "HT-LAY-92") -> None: ...

    # what schemes call

    @property
    def known_element(self) -> ElementType: ...

    @property
    def block_paged(self) -> Paging | None: ...

    def storage_type(self, allowed: tuple[str, ...], code: str) -> None: ...

    def axis_extent(self, axis: int, rank_code: str, dynamic_code: str) -> int: ...

    def blocks(self, axis: int, block_size: int) -> int | None: ...

    def pad_axis(self, axis: int, block_size: int) -> None: ...

    def parameter(self, field: str, index: int, size: int | None, code: str) -> None: ...


class DataChecks(Protocol):
    """A tensor's buffer contents, as a scheme's data rules and its kernel plan read them."""

    @property
    def known_element(self) -> ElementType: ...

    def raw(self, field: str) -> memoryview: ...

    def array(self, field: str, dtype: str) -> np.ndarray: ...

    def finite(self, values: np.ndarray, code: str, field: str) -> None: ...

    def nonzero(self, values: np.ndarray, code: str, field: str) -> None: ...

    def not_negative(self, values: np.ndarray, code: str, field: str) -> None: ...

    def zero_points(self, values: np.ndarray, code: str) -> None: ...

    def forbidden_bytes(self, raw: Any, forbidden: tuple[int, ...], code: str, field: str) -> None: ...

    def padding_zero(self, axis: int, block_size: int, code: str) -> None: ...
