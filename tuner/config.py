"""One point of a search: a problem size, a kernel family, a dtype and the family's parameter values."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Element size in bytes and the CUDA C type of each supported dtype.
DTYPE_BYTES: dict[str, int] = {"float32": 4, "float64": 8, "int32": 4}
DTYPE_CTYPE: dict[str, str] = {"float32": "float", "float64": "double", "int32": "int"}
DTYPES: tuple[str, ...] = tuple(DTYPE_BYTES)

ParamValue = int | str


@dataclass(frozen=True, order=True)
class Problem:
    """C (M×N) = A (M×K) · B (K×N), all row-major."""

    M: int
    N: int
    K: int

    @property
    def label(self) -> str:
        return f"{self.M}x{self.N}x{self.K}"

    @property
    def flops(self) -> int:
        return 2 * self.M * self.N * self.K


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
        values = ",".join(f"{k}={v}" for k, v in self.params)
        return f"{self.problem.label}/{self.family}/{self.dtype}/{values}"

    def as_row(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "problem": self.problem.label,
            "M": self.problem.M,
            "N": self.problem.N,
            "K": self.problem.K,
            "family": self.family,
            "dtype": self.dtype,
        }
        row.update({f"p_{k}": v for k, v in self.params})
        return row
