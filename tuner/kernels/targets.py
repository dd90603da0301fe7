"""What a compilation target allows: threads, registers and shared memory per block and per SM.

The static constraints of a space are checked against the experiment's target architecture (``compile.arch``)
with these limits, from the CUDA C++ Programming Guide's table of technical specifications per compute
capability; the launch itself is checked against the device's own attributes by the measuring process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tuner.errors import TunerError

STATIC_SHARED_LIMIT = 48 * 1024
"""Shared memory per block without an opt-in (every architecture since compute capability 2.0)."""
SHARED_RESERVED_PER_BLOCK = 1024
"""Shared memory the CUDA runtime keeps per resident block (compute capability 8.0 and later)."""
ARCH_PATTERN = re.compile(r"sm_(\d+)(\d)[af]?")


@dataclass(frozen=True)
class Target:
    arch: str
    threads_per_sm: int
    shared_per_sm: int
    shared_per_block_optin: int
    blocks_per_sm: int
    registers_per_sm: int = 65536
    max_registers_per_thread: int = 255
    max_threads_per_block: int = 1024

    @property
    def compute_capability(self) -> str:
        match = ARCH_PATTERN.fullmatch(self.arch)
        return f"{match[1]}.{match[2]}" if match else "?"

    def shared_limit(self, dynamic: bool) -> int:
        """Shared memory one block may use: the opt-in limit for dynamic allocations, else the static one."""
        return self.shared_per_block_optin if dynamic else min(STATIC_SHARED_LIMIT, self.shared_per_block_optin)

    def register_budget(self, threads: int, blocks: int) -> int:
        """Registers per thread that ``__launch_bounds__(threads, blocks)`` leaves (allocated in units of 8)."""
        per_thread = self.registers_per_sm // max(1, threads * blocks)
        return min(self.max_registers_per_thread, per_thread // 8 * 8)


_LIMITS: dict[str, tuple[int, int, int, int]] = {
    # compute capability: threads per SM, shared per SM, shared per block with opt-in, blocks per SM
    "7.0": (2048, 96 * 1024, 96 * 1024, 32),
    "7.2": (2048, 96 * 1024, 96 * 1024, 32),
    "7.5": (1024, 64 * 1024, 64 * 1024, 16),
    "8.0": (2048, 164 * 1024, 163 * 1024, 32),
    "8.6": (1536, 100 * 1024, 99 * 1024, 16),
    "8.7": (2048, 164 * 1024, 163 * 1024, 16),
    "8.9": (1536, 100 * 1024, 99 * 1024, 24),
    "9.0": (2048, 228 * 1024, 227 * 1024, 32),
    "10.0": (2048, 228 * 1024, 227 * 1024, 32),
    "12.0": (1536, 100 * 1024, 99 * 1024, 32),
}


def parse_arch(arch: str) -> str:
    """The compute capability of an architecture name (``sm_90a`` → ``9.0``), or TunerError."""
    match = ARCH_PATTERN.fullmatch(arch)
    if not match:
        raise TunerError(f"'{arch}' is not a GPU architecture nvcc compiles for; expected a name such as sm_90")
    return f"{match[1]}.{match[2]}"


def runs_on(compiled_for: str, device_arch: str) -> bool:
    """Whether a cubin compiled for ``compiled_for`` runs on a GPU of ``device_arch`` (``sm_90``), as far as the
    architecture-specific targets go: ``sm_90a`` code (wgmma, setmaxnreg) runs only on compute capability 9.0."""
    return compiled_for.rstrip("af") == device_arch


def known_archs() -> tuple[str, ...]:
    return tuple(f"sm_{cc.replace('.', '')}" for cc in _LIMITS)


def target(arch: str) -> Target:
    """The limits of ``arch``; TunerError for an architecture without a row in the table."""
    capability = parse_arch(arch)
    if capability not in _LIMITS:
        raise TunerError(f"no resource limits are known for {arch} (compute capability {capability}); known: "
                         f"{', '.join(known_archs())}")
    threads, shared_sm, optin, blocks = _LIMITS[capability]
    return Target(arch, threads, shared_sm, optin, blocks)
