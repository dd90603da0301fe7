"""Which GPUs of this host a run measures on (``--gpus all|0,1,…``), as the values of CUDA_VISIBLE_DEVICES.

Indices count the GPUs this process may see: those CUDA_VISIBLE_DEVICES lists, in its order, where it is set,
else every GPU the driver reports (through NVML, which creates no CUDA context). Each measuring process
is started with ``CUDA_VISIBLE_DEVICES`` set to its one GPU, so that it owns a context on that GPU alone.
"""

from __future__ import annotations

import os

from tuner.errors import Naming, TunerError, option_name


def visible_gpus() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES values (ordinals or UUIDs)."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [entry.strip() for entry in listed.split(",") if entry.strip()]
    try:
        import pynvml

        pynvml.nvmlInit()
        return [str(index) for index in range(pynvml.nvmlDeviceGetCount())]
    except Exception:  # no nvidia-ml-py or no driver: no GPU can be named
        return []


def parse_gpus(spec: str, available: list[str], name: Naming = option_name) -> list[str]:
    """The GPUs ``spec`` names (``all``, or indices into ``available`` such as ``0,1``), each once, in order;
    ``name``: how the errors name the setting (:mod:`tuner.errors`)."""
    text = spec.strip()
    if text == "all":
        if not available:
            raise TunerError(f"{name('gpus', 'all')}: no GPU is visible here (check nvidia-smi and "
                             f"CUDA_VISIBLE_DEVICES)")
        return list(available)
    try:
        indices = [int(part) for part in text.split(",")]
    except ValueError:
        raise TunerError(f"{name('gpus')} takes 'all' or GPU indices separated by commas, such as 0,1; not "
                         f"{spec!r}") from None
    wrong = [i for i in indices if not 0 <= i < len(available)]
    if wrong:
        raise TunerError(f"{name('gpus', spec)}: no GPU of index {', '.join(map(str, wrong))}; this process sees "
                         f"{len(available)} GPU(s) (indices 0 to {len(available) - 1})" if available else
                         f"{name('gpus', spec)}: no GPU is visible here (check nvidia-smi and CUDA_VISIBLE_DEVICES)")
    if len(set(indices)) != len(indices):
        raise TunerError(f"{name('gpus', spec)} names a GPU twice; name each once")
    return [available[i] for i in indices]
