"""How many blocks of a compiled kernel one SM holds at once: the CUDA occupancy rules for threads,
registers (allocated per warp in units of 256) and shared memory (the runtime keeps 1 KB per block)."""

from collections.abc import Mapping
from typing import Any

from tuner.kernels.targets import SHARED_RESERVED_PER_BLOCK

WARP = 32
REGISTER_UNIT = 256


def blocks_per_sm(threads: int, registers: int, shared_bytes: int, device: Mapping[str, Any]) -> int | None:
    """Blocks of ``threads`` threads using ``registers`` per thread and ``shared_bytes`` per block that fit one
    SM of ``device`` (a ``tuner.backends.pycuda.device.describe`` dict); None where the device does not say its
    limits."""
    names = ("threads_per_sm", "registers_per_sm", "shared_per_sm_bytes", "blocks_per_sm")
    limits = [device.get(k) for k in names]
    if threads <= 0 or any(not isinstance(x, int) or x <= 0 for x in limits):
        return None
    threads_per_sm, registers_per_sm, shared_per_sm, most_blocks = (int(device[k]) for k in names)
    warps = -(-threads // WARP)
    per_warp = -(-max(registers, 1) * WARP // REGISTER_UNIT) * REGISTER_UNIT
    by_registers = registers_per_sm // (warps * per_warp)
    by_shared = shared_per_sm // (shared_bytes + SHARED_RESERVED_PER_BLOCK)
    return min(most_blocks, threads_per_sm // (warps * WARP), by_registers, by_shared)
