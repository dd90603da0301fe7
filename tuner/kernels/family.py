"""What a kernel family declares: its parameters and constraints, its kernel's arguments, launch geometry,
reference and cost model.

A family is a folder entry: ``<name>.py`` holding ``FAMILY = Family(...)`` beside its Jinja source
``<name>.cu.j2`` (CUDA) or ``<name>.c.j2`` (C, for the CPU). :mod:`tuner.kernels.discovery` finds them. The
defaults describe a matrix multiplication (:mod:`tuner.kernels.matmul`); a family of another kernel declares
its own ``dims``, ``arguments``, ``reference``, ``tolerance``, ``flops`` and ``compulsory_bytes``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from tuner.config import DTYPE_BYTES, MATMUL_DIMS, PLAIN_DTYPES, ParamValue, Problem
from tuner.errors import TunerError
from tuner.kernels import matmul
from tuner.kernels.arguments import Argument, Buffer
from tuner.kernels.targets import SHARED_RESERVED_PER_BLOCK, Target
from tuner.kernels.tensor_maps import TensorMap
from tuner.kernels.verify import Expected, Tolerance

Params = Mapping[str, ParamValue]
Dim3 = tuple[int, int, int]
TEMPLATE_SUFFIXES = {"cuda": ".cu.j2", "c": ".c.j2"}


class FamilyError(TunerError):
    """A mistake in a family's own code (its declaration or its template), named with the file it is in."""


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[+-]?[0-9]+(?:\.[0-9]+)?")
"""What a text value may be in a kernel's source: a C identifier or a number, never free text."""
INTEGER_LIMIT = 2**31 - 1
"""The largest integer a parameter may take: values go into the source as C ``int`` constants."""


@dataclass(frozen=True)
class Parameter:
    name: str
    description: str
    default: tuple[ParamValue, ...]
    pattern: str | None = None
    """For a text parameter: a regular expression (matched whole) for the values an experiment may give beside
    the defaults; None admits the defaults only. Every text value must be a ``TOKEN`` as well."""

    def refusal(self, value: ParamValue) -> str | None:
        """Why ``value`` may not be given to this parameter, or None where it may."""
        if isinstance(value, str):
            if not TOKEN.fullmatch(value):
                return (f"the text value {value!r} is not a single token (a C identifier or a number), and text "
                        f"values go into the kernel's source")
            if value in self.default or (self.pattern is not None and re.fullmatch(self.pattern, value)):
                return None
            allowed = ", ".join(repr(d) for d in self.default)
            extra = f" or text matching {self.pattern!r}" if self.pattern else ""
            return f"{value!r} is not a value this parameter takes (one of {allowed}{extra})"
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) > INTEGER_LIMIT:
            return f"{value} is beyond the {INTEGER_LIMIT} a parameter may be (values are C int constants)"
        return None


@dataclass(frozen=True)
class Constraint:
    """A static rule a configuration must satisfy; ``holds`` sees the parameters and the dtype (never the
    problem, so that a kernel entry's valid set is the same for every problem)."""

    description: str
    holds: Callable[[Params, str], bool]
    precondition: bool = False
    """A rule the family's other functions rely on (e.g. sizes ≥ 1, which they divide by): while it is broken,
    they are never called and no other rule is checked."""


Reference = Callable[[Mapping[str, np.ndarray], Problem, int], dict[str, Expected]]


@dataclass(frozen=True)
class Kernel:
    """What a measuring process's buffers are made for: the arguments, how the reference is computed, and the
    tolerance (a family's, or the vendor GEMM's)."""

    arguments: tuple[Argument, ...]
    reference: Reference
    tolerance: Callable[[str, Problem], Tolerance]


MATMUL = Kernel(matmul.ARGUMENTS, matmul.reference, matmul.tolerance)


@dataclass(frozen=True)
class Family:
    name: str
    description: str
    parameters: tuple[Parameter, ...]
    global_bytes: Callable[[Params, Problem, int], int]
    """Bytes moved through global memory under the family's traffic model, given the element size."""
    target: Literal["cuda", "c"] = "cuda"
    dims: tuple[str, ...] = MATMUL_DIMS
    """The sizes a problem gives this family's kernel."""
    arguments: tuple[Argument, ...] = matmul.ARGUMENTS
    """The kernel's parameters, in order."""
    reference: Reference = matmul.reference
    """(inputs, problem, seed) -> the expected values of each output buffer, in float64."""
    tolerance: Callable[[str, Problem], Tolerance] = matmul.tolerance
    flops: Callable[[Problem], int] = matmul.flops
    """Arithmetic operations of one launch; 0 for a kernel that only moves data."""
    compulsory_bytes: Callable[[Problem, int], int] = matmul.compulsory_bytes
    """The least traffic: each input read once, each output written once (given the element size)."""
    baseline: str | None = "gemm"
    """The vendor library routine measured beside the family (``gemm``), or None."""
    constraints: tuple[Constraint, ...] = ()
    dtypes: tuple[str, ...] = PLAIN_DTYPES
    """The dtypes the family computes in; the tensor-core ones (tuner.precision) only where it declares them."""
    kernel_name: str = "matmul"
    block: Callable[[Params], Dim3] = field(default=lambda params: (1, 1, 1))
    grid: Callable[[Params, Problem], Dim3] = field(default=lambda params, problem: (1, 1, 1))
    shared_bytes: Callable[[Params, int], int] = field(default=lambda params, size: 0)
    dynamic_shared: bool = False
    """True when the family's shared memory is allocated dynamically (and may opt in past 48 KB)."""
    extra_intensities: Callable[[Params, int], dict[str, float]] = field(default=lambda params, size: {})
    """Further analytical ratios the reports show (e.g. a register tile's shared-memory intensity)."""
    working_sets: Callable[[Params, int], dict[str, int]] = field(default=lambda params, size: {})
    """Bytes each block of a C family's cache blocking keeps in a cache (the block of A, the panel of B, …), given
    the element size; the cost model places each in the smallest cache that holds it."""
    resident_blocks: Callable[[Params], int] = field(default=lambda params: 0)
    """Blocks per SM of a persistent schedule, which launches only as many blocks as the SMs hold at once
    and lets them walk the cells of ``grid``; 0 launches one block per cell."""
    min_blocks_per_sm: Callable[[Params], int] = field(default=lambda params: 1)
    """Blocks that must fit one SM together (what ``__launch_bounds__`` asks of the compiler)."""
    estimated_registers: Callable[[Params, int], int] | None = None
    """The fewest registers per thread the kernel needs, given the element size; checked against the budget
    that ``min_blocks_per_sm`` leaves on the target."""
    arch: str | None = None
    """The compile target the source needs (``sm_90a`` for wgmma and setmaxnreg), or None for any; on another
    target every configuration is invalid."""
    cluster: Callable[[Params], Dim3] = field(default=lambda params: (1, 1, 1))
    """Blocks per thread-block cluster, launched with the cluster-dimension attribute; (1, 1, 1): no cluster."""
    tensor_maps: Callable[[Params, int], tuple[TensorMap, ...]] = field(default=lambda params, size: ())
    """TMA descriptors of the kernel's buffers (given the element size), made on the host before the launch and
    passed by value before the arguments (:mod:`tuner.kernels.tensor_maps`)."""
    template: str | None = None
    """The Jinja source's file name beside the declaration; default ``<name>.cu.j2`` or ``<name>.c.j2``."""
    folder: Path | None = None
    """Where the family was found (set by discovery)."""
    declaration: Path | None = None
    """The ``.py`` file that declares it (set by discovery)."""
    recording: Path | None = None
    """For a family that stands for a brute-force recording (:mod:`tuner.recorded.family`): the file. Such a
    family has no source: it is only replayed."""

    def __post_init__(self) -> None:
        if self.target not in TEMPLATE_SUFFIXES:
            raise ValueError(f"family '{self.name}': unknown target '{self.target}' (known: "
                             f"{', '.join(TEMPLATE_SUFFIXES)})")

    @property
    def template_file(self) -> str:
        return self.template or f"{self.name}{TEMPLATE_SUFFIXES[self.target]}"

    @property
    def template_path(self) -> Path:
        if self.folder is None:
            raise ValueError(f"family '{self.name}' was not found in a folder, so it has no template path")
        return self.folder / self.template_file

    @property
    def parameter_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parameters)

    @property
    def kernel(self) -> Kernel:
        return Kernel(self.arguments, self.reference, self.tolerance)

    @property
    def buffers(self) -> tuple[Buffer, ...]:
        return tuple(a for a in self.arguments if isinstance(a, Buffer))

    def broken_preconditions(self, params: Params, dtype: str) -> list[str]:
        """The preconditions these values break; while any is, no other function of the family may be called."""
        return [c.description for c in self.constraints if c.precondition and not c.holds(params, dtype)]

    def require_preconditions(self, params: Params, dtype: str) -> None:
        """Raise ValueError where the family's launch geometry and cost model are not defined for these values."""
        broken = self.broken_preconditions(params, dtype)
        if broken:
            values = ", ".join(f"{k}={v}" for k, v in params.items())
            raise ValueError(f"the {self.name} family is not defined for {values} ({'; '.join(broken)})")

    @property
    def origin(self) -> str:
        """Where the family's code is, for messages: its declaration, else its name."""
        return str(self.declaration) if self.declaration is not None else f"family '{self.name}'"

    def mistake(self, part: str, exc: BaseException, values: str) -> FamilyError:
        """The error of a family function (``part``, e.g. "the cost model") that raised ``exc`` for ``values``."""
        return FamilyError(f"{self.origin}: {part} of family '{self.name}' raised {type(exc).__name__} ({exc}) for "
                           f"{values}; fix the family's declaration")

    def threads_per_block(self, params: Params) -> int:
        x, y, z = self.block(params)
        return x * y * z

    def resource_rules(self, target: Target) -> tuple[Constraint, ...]:
        """The rules every CUDA family obeys on ``target``: threads and shared memory per block, and the
        blocks it asks to keep resident fitting one SM in threads, shared memory and registers. They leave an
        empty block (no threads) to the family's own constraints, which must reject it."""
        if self.target != "cuda":
            return ()
        shared_limit = target.shared_limit(self.dynamic_shared)
        estimate = self.estimated_registers

        def fits_sm(params: Params, dtype: str) -> bool:
            blocks, threads = self.min_blocks_per_sm(params), self.threads_per_block(params)
            per_block = self.shared_bytes(params, DTYPE_BYTES[dtype]) + SHARED_RESERVED_PER_BLOCK
            return threads <= 0 or (blocks * threads <= target.threads_per_sm
                                    and blocks * per_block <= target.shared_per_sm)

        def registers_fit(params: Params, dtype: str) -> bool:
            threads = self.threads_per_block(params)
            if estimate is None or threads <= 0:
                return True
            budget = target.register_budget(threads, self.min_blocks_per_sm(params))
            return estimate(params, DTYPE_BYTES[dtype]) <= budget

        rules = [] if self.arch in (None, target.arch) else [
            Constraint(f"the {self.name} family's source needs compile.arch {self.arch} (the target is {target.arch})",
                       lambda p, d: False)]
        rules += [
            Constraint(f"threads per block ≤ {target.max_threads_per_block}",
                       lambda p, d: self.threads_per_block(p) <= target.max_threads_per_block),
            Constraint(f"shared memory per block ≤ {shared_limit // 1024} KB",
                       lambda p, d: self.shared_bytes(p, DTYPE_BYTES[d]) <= shared_limit),
            Constraint(f"the blocks asked to stay resident fit one SM of {target.arch} "
                       f"({target.threads_per_sm} threads, {target.shared_per_sm // 1024} KB shared memory)", fits_sm),
        ]
        if estimate is not None:
            rules.append(Constraint(
                f"estimated registers fit the budget of __launch_bounds__(threads, blocks per SM) on {target.arch} "
                f"({target.registers_per_sm} registers per SM) without spilling", registers_fit))
        return tuple(rules)
