"""The GPU's energy counter itself: how fine its steps are and how often it updates, idle and under load.

    python benchmarks/energy_counter.py [--seconds 2] [--out DIR]

Reads NVML's total-energy counter of the board (nvmlDeviceGetTotalEnergyConsumption, mJ) from a thread every
0.2 ms or so: for SECONDS with the GPU idle, then for SECONDS while cuBLAS SGEMMs (8192², through CuPy) run back
to back. For each phase: the readings and the changes among them, the smallest step and the greatest common
divisor of the steps (the counter's resolution as seen), the time between changes (its update interval: median,
shortest, longest), the time one read takes, and the mean power between the first and the last change, beside
NVML's own power reading (nvmlDeviceGetPowerUsage) and the enforced power limit (read, never set). The energy
window of tuner.energy.window is sized from the update interval: this is where its numbers come from. Writes
``DIR/energy_counter_<gpu>.txt`` and ``.json``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from benchmarks.reporting import DEFAULT_OUT, finish, write  # noqa: E402
from tuner.energy.counter import CounterProperties, counter_properties  # noqa: E402
from tuner.energy.poller import CounterPoller  # noqa: E402
from tuner.errors import TunerError  # noqa: E402

PERIOD_S = 0.0002
SIZE = 8192


def _nvml() -> tuple[Any, Any]:
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml, pynvml.nvmlDeviceGetHandleByIndex(0)
    except Exception as exc:  # no nvidia-ml-py, no driver, no GPU
        raise TunerError(f"NVML cannot open the first GPU ({type(exc).__name__}: {exc})") from None


def _phase(nvml: Any, handle: Any, seconds: float, load: bool) -> dict[str, Any]:
    import cupy as cp

    powers: list[float] = []
    clocks: list[float] = []
    launches = 0
    a = cp.random.default_rng(0).random((SIZE, SIZE), dtype=cp.float32) if load else None
    if a is not None:
        c = a @ a  # cuBLAS loaded, first launch made
        cp.cuda.runtime.deviceSynchronize()
    with CounterPoller(lambda: int(nvml.nvmlDeviceGetTotalEnergyConsumption(handle)), period_s=PERIOD_S) as poller:
        started = time.perf_counter()
        while time.perf_counter() - started < seconds:
            if a is not None:
                for _ in range(4):
                    cp.matmul(a, a, out=c)
                launches += 4
                cp.cuda.runtime.deviceSynchronize()
            else:
                time.sleep(0.02)
            powers.append(nvml.nvmlDeviceGetPowerUsage(handle) / 1000)
            clocks.append(float(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)))
    if poller.error is not None:
        raise TunerError(f"reading the energy counter failed: {poller.error}")
    seen: CounterProperties = counter_properties(poller.readings)
    return {"load": f"cuBLAS SGEMM {SIZE}² back to back ({launches} launches)" if load else "idle",
            **seen.as_dict(), "counter_power_w": seen.rate / 1000 if seen.rate else None,
            "nvml_power_w": statistics.median(powers) if powers else None,
            "sm_clock_mhz": statistics.median(clocks) if clocks else None}


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1e3:.2f}"


def measure(seconds: float, out: Path) -> Path:
    nvml, handle = _nvml()
    name = nvml.nvmlDeviceGetName(handle)
    name = name.decode() if isinstance(name, bytes) else name
    try:
        limit_w = nvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1000
        nvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    except nvml.NVMLError as exc:
        raise TunerError(f"{name}: NVML has no total-energy counter here ({exc})") from None
    driver = nvml.nvmlSystemGetDriverVersion()
    driver = driver.decode() if isinstance(driver, bytes) else driver
    phases = [_phase(nvml, handle, seconds, load) for load in (False, True)]
    lines = [f"NVML total-energy counter of {name} (driver {driver}), "
             f"read every {PERIOD_S * 1e3:g} ms from a thread for {seconds:g} s per phase; power limit "
             f"{limit_w:.0f} W (enforced, read)", "",
             f"{'phase':<6} {'reads':>6} {'changes':>7} {'step mJ':>8} {'gcd mJ':>7} {'update ms':>9} "
             f"{'min':>6} {'max':>6} {'read ms':>7} {'counter W':>9} {'NVML W':>7} {'SM MHz':>7}"]
    for phase in phases:
        lines.append(f"{'busy' if phase['load'] != 'idle' else 'idle':<6} {phase['readings']:>6} {phase['changes']:>7} "
                     f"{phase['step'] if phase['step'] is not None else '-':>8} "
                     f"{phase['quantum'] if phase['quantum'] is not None else '-':>7} "
                     f"{_ms(phase['update_interval_s']):>9} {_ms(phase['update_interval_min_s']):>6} "
                     f"{_ms(phase['update_interval_max_s']):>6} {_ms(phase['read_s']):>7} "
                     f"{phase['counter_power_w'] or 0:>9.1f} {phase['nvml_power_w'] or 0:>7.1f} "
                     f"{phase['sm_clock_mhz'] or 0:>7.0f}")
    lines += ["", f"busy load: {phases[1]['load']}. step: the smallest increase seen; gcd: the greatest common "
              f"divisor of the increases; update: the time between changes of the counter (median, min, max); "
              f"counter W: the counter's increase from its first change to its last over that time."]
    text = "\n".join(lines)
    print(text)
    env = {"device": {"name": name}, "versions": {"driver": driver}, "power_limit_w": limit_w,
           "created_utc": datetime.now(UTC).isoformat(timespec="seconds")}
    return write(out, "energy_counter", env, text, {"seconds": seconds, "period_s": PERIOD_S, "phases": phases})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds of reading per phase (default 2)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the .txt and .json")
    args = parser.parse_args()
    return finish(lambda: measure(args.seconds, args.out))


if __name__ == "__main__":
    sys.exit(main())
