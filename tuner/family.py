"""What a kernel family declares: its parameters, constraints, launch geometry and analytical cost model.

Each family lives in ``kernel_templates/<name>.py`` next to its Jinja source ``<name>.cu.j2``.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache

from tuner.config import DTYPES, ParamValue, Problem

Params = Mapping[str, ParamValue]
Dim3 = tuple[int, int, int]

STATIC_SHARED_LIMIT = 48 * 1024  # bytes per block without an opt-in
OPT_IN_SHARED_LIMIT = 227 * 1024  # bytes per block on sm_90 with cudaFuncSetAttribute
MAX_THREADS_PER_BLOCK = 1024


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Parameter:
    name: str
    description: str
    default: tuple[ParamValue, ...]


@dataclass(frozen=True)
class Constraint:
    """A static rule a configuration must satisfy; ``holds`` sees the parameters and the dtype."""

    description: str
    holds: Callable[[Params, str], bool]
    precondition: bool = False
    """A rule the family's other functions rely on (e.g. sizes ≥ 1, which they divide by): while it is broken,
    they are never called and no other rule is checked."""


@dataclass(frozen=True)
class Family:
    name: str
    description: str
    parameters: tuple[Parameter, ...]
    block: Callable[[Params], Dim3]
    grid: Callable[[Params, Problem], Dim3]
    shared_bytes: Callable[[Params, int], int]
    global_bytes: Callable[[Params, Problem, int], int]
    """Bytes moved through global memory under the no-cache model, given the element size."""
    constraints: tuple[Constraint, ...] = ()
    dtypes: tuple[str, ...] = DTYPES
    kernel_name: str = "matmul"
    dynamic_shared: bool = False
    """True when the family's shared memory is allocated dynamically (and may opt in past 48 KB)."""
    extra_intensities: Callable[[Params, int], dict[str, float]] = field(default=lambda params, size: {})
    """Further analytical ratios the reports show (e.g. a register tile's shared-memory intensity)."""
    resident_blocks: Callable[[Params], int] = field(default=lambda params: 0)
    """Blocks per SM of a persistent schedule, which launches only as many blocks as the SMs hold at once
    and lets them walk the cells of ``grid``; 0 launches one block per cell."""

    @property
    def template_file(self) -> str:
        return f"{self.name}.cu.j2"

    @property
    def parameter_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parameters)

    def broken_preconditions(self, params: Params, dtype: str) -> list[str]:
        """The preconditions these values break; while any is, no other function of the family may be called."""
        return [c.description for c in self.constraints if c.precondition and not c.holds(params, dtype)]

    def require_preconditions(self, params: Params, dtype: str) -> None:
        """Raise ValueError where the family's launch geometry and cost model are not defined for these values."""
        broken = self.broken_preconditions(params, dtype)
        if broken:
            values = ", ".join(f"{k}={v}" for k, v in params.items())
            raise ValueError(f"the {self.name} family is not defined for {values} ({'; '.join(broken)})")

    def threads_per_block(self, params: Params) -> int:
        x, y, z = self.block(params)
        return x * y * z

    @property
    def shared_limit(self) -> int:
        return OPT_IN_SHARED_LIMIT if self.dynamic_shared else STATIC_SHARED_LIMIT


@cache
def families() -> dict[str, Family]:
    """Every family found in the ``kernel_templates`` package, by name."""
    import kernel_templates

    found: dict[str, Family] = {}
    for info in pkgutil.iter_modules(kernel_templates.__path__):
        module = importlib.import_module(f"kernel_templates.{info.name}")
        family = getattr(module, "FAMILY", None)
        if isinstance(family, Family):
            found[family.name] = family
    return dict(sorted(found.items()))


def get_family(name: str) -> Family:
    return families()[name]
