"""One point of a search: a problem size, a kernel family, a dtype and the family's parameter values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tuner.names.key_text import pairs_text
from tuner.precision import PRECISIONS

# Element size in bytes and the C type of each supported dtype (tuner.precision describes each).
DTYPE_BYTES: dict[str, int] = {name: p.bytes for name, p in PRECISIONS.items()}
DTYPE_CTYPE: dict[str, str] = {name: p.ctype for name, p in PRECISIONS.items()}
DTYPES: tuple[str, ...] = tuple(PRECISIONS)
PLAIN_DTYPES: tuple[str, ...] = tuple(name for name, p in PRECISIONS.items() if not p.tensor_cores)
"""The dtypes a family supports unless it declares others: those with CUDA-core (and CPU) arithmetic."""
MATMUL_DIMS: tuple[str, ...] = ("M", "N", "K")

ParamValue = int | str | bool


@dataclass(frozen=True, order=True, init=False)
class Problem:
    """Named sizes, in the order the experiment gives them: ``Problem(M=4096, N=4096, K=4096)``.

    Positional sizes are M, N and K, the dimensions of C (M×N) = A (M×K) · B (K×N). Each size reads as an
    attribute (``problem.M``) and by name (``problem["M"]``).
    """

    sizes: tuple[tuple[str, int], ...]

    def __init__(self, *positional: int, **named: int):
        if len(positional) > len(MATMUL_DIMS):
            raise TypeError(f"at most {len(MATMUL_DIMS)} positional sizes (M, N, K)")
        sizes = dict(zip(MATMUL_DIMS, positional, strict=False))
        for name, value in named.items():
            if name in sizes:
                raise TypeError(f"the size {name} is given twice")
            sizes[name] = value
        object.__setattr__(self, "sizes", tuple((name, int(value)) for name, value in sizes.items()))

    @classmethod
    def of(cls, sizes: Mapping[str, int]) -> Problem:
        return cls(**dict(sizes))

    def __getattr__(self, name: str) -> int:
        if name.startswith("__"):
            raise AttributeError(name)
        for dim, value in object.__getattribute__(self, "sizes"):
            if dim == name:
                return value
        raise AttributeError(f"the problem {self.label} has no size {name}")

    def __getitem__(self, name: str) -> int:
        return self.__getattr__(name)

    @property
    def dims(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.sizes)

    def as_dict(self) -> dict[str, int]:
        return dict(self.sizes)

    @property
    def label(self) -> str:
        return "x".join(str(value) for _, value in self.sizes)

    def __repr__(self) -> str:
        return f"Problem({', '.join(f'{k}={v}' for k, v in self.sizes)})"


@dataclass(frozen=True)
class Config:
    problem: Problem
    family: str
    dtype: str
    params: tuple[tuple[str, ParamValue], ...]

    @classmethod
    def make(cls, problem: Problem, family: str, dtype: str, params: Mapping[str, ParamValue]) -> Config:
        return cls(problem, family, dtype, tuple(sorted(params.items())))

    @property
    def param_dict(self) -> dict[str, ParamValue]:
        return dict(self.params)

    def __getitem__(self, name: str) -> ParamValue:
        return self.param_dict[name]

    @property
    def element_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def key(self) -> str:
        """A stable text identity, e.g. ``1000x777x333/tiled/float32/TILE_WIDTH=16``."""
        return f"{self.problem.label}/{self.family}/{self.dtype}/{pairs_text(self.params)}"

    def as_row(self) -> dict[str, Any]:
        row: dict[str, Any] = {"problem": self.problem.label, **self.problem.as_dict(), "family": self.family,
                               "dtype": self.dtype}
        row.update({f"p_{k}": v for k, v in self.params})
        return row
