"""Energy measurement without a device: the counter's arithmetic, the energy window's control on a simulated
device and counter, RAPL on a stand-in sysfs tree, and energy through the measurement and the results row."""

from __future__ import annotations

import threading
import time

import pytest

from tuner.config import Config, Problem
from tuner.energy import window as window_module
from tuner.energy.counter import Reading, counted_span, counter_delta, counter_properties
from tuner.energy.cpu import CpuEnergy
from tuner.energy.measured import Energy
from tuner.energy.rapl import RaplCounter, RaplUnavailable, RaplZone, rapl_zones
from tuner.energy.window import CounterFailed, EnergyWindows
from tuner.measure.measurement import Measurement, Status, Timing
from tuner.results import table as results

# --- the counter's arithmetic ---------------------------------------------------------------------------------


def readings(values: list[int], every_s: float = 0.01, start_s: float = 0.0) -> list[Reading]:
    return [Reading(start_s + i * every_s, value) for i, value in enumerate(values)]


def test_a_counter_that_wraps_counts_across_the_wrap():
    assert counter_delta(100, 250) == 150
    assert counter_delta(990, 10, largest=999) == 20  # 990 … 999, 0 … 10: 9 + 1 + 10
    with pytest.raises(ValueError, match="went backwards"):
        counter_delta(5, 3)


def test_power_is_taken_between_changes_inside_the_window_skipping_the_first():
    # the counter updates every 4 readings (0.04 s), by 8 units each time while busy: 200 units/s
    values = [0] * 4 + [8] * 4 + [16] * 4 + [24] * 4 + [32] * 4 + [40] * 4
    found = counted_span(readings(values), start_s=0.035, end_s=0.25, min_updates=2)
    assert found is not None
    # changes at 0.04, 0.08, 0.12, 0.16, 0.20; the first (0.04) is skipped
    assert found.updates == 3 and found.span_s == pytest.approx(0.12)
    assert found.rate == pytest.approx(24 / 0.12)
    assert counted_span(readings(values), start_s=0.035, end_s=0.25, min_updates=4) is None


def test_changes_outside_the_window_are_left_out():
    values = [0, 100, 100, 200, 210, 220, 230, 1000]
    found = counted_span(readings(values), start_s=0.025, end_s=0.065, min_updates=2)
    assert found is not None and found.rate == pytest.approx(20 / 0.02)


def test_the_counter_properties_name_its_step_and_update_interval():
    values = [0, 0, 0, 30, 30, 30, 90, 90, 90, 120]
    series = [Reading(r.at_s, r.value, took_s=0.0002) for r in readings(values)]
    found = counter_properties(series)
    assert (found.changes, found.step, found.quantum) == (3, 30, 30)
    assert found.update_interval_s == pytest.approx(0.03) and found.read_s == pytest.approx(0.0002)
    assert found.rate == pytest.approx(90 / 0.06)


# --- the window, on a simulated device and counter ---------------------------------------------------------------


class SimulatedDevice:
    """A device that runs queued launches one after another, each ``per_launch_s`` of host time, drawing
    ``busy_w`` while it runs and ``idle_w`` otherwise; its energy counter (mJ) updates every ``update_s``."""

    def __init__(self, per_launch_s: float, busy_w: float = 300.0, idle_w: float = 60.0, update_s: float = 0.01):
        self.per_launch_s, self.busy_w, self.idle_w, self.update_s = per_launch_s, busy_w, idle_w, update_s
        self.origin = time.perf_counter()
        self.busy: list[tuple[float, float]] = []
        self.free_at = self.origin
        self.lock = threading.Lock()

    def mark(self) -> float:
        return max(time.perf_counter(), self.free_at)

    def queue(self, launches: int) -> float:
        with self.lock:
            start = self.mark()
            self.free_at = start + launches * self.per_launch_s
            self.busy.append((start, self.free_at))
        return self.free_at

    def wait(self, marker: float) -> None:
        time.sleep(max(0.0, marker - time.perf_counter()))

    def elapsed_s(self, first: float, last: float) -> float:
        return last - first

    def energy_j(self, at: float) -> float:
        with self.lock:
            busy = sum(max(0.0, min(end, at) - start) for start, end in self.busy)
        return self.idle_w * (at - self.origin - busy) + self.busy_w * busy

    def read_mj(self) -> int:
        now = time.perf_counter()
        last_update = self.origin + (now - self.origin) // self.update_s * self.update_s
        return int(self.energy_j(last_update) * 1000)


def test_the_window_gives_the_busy_power_times_the_time_per_launch():
    device = SimulatedDevice(per_launch_s=0.002)
    windows = EnergyWindows(device.read_mj, 1e-3, "simulated", side=lambda: 1500.0, power_limit=lambda: 700.0)
    energy = windows.measure(device, seconds_per_launch=0.002)
    assert energy is not None
    assert energy.power_w == pytest.approx(300.0, rel=0.05)
    assert energy.joules == pytest.approx(energy.power_w * energy.window_s / energy.launches)
    assert energy.joules == pytest.approx(300.0 * 0.002, rel=0.05)  # 300 W × 2 ms
    assert energy.updates >= window_module.MIN_UPDATES and energy.counted_s <= energy.window_s
    assert (energy.sm_clock_mhz, energy.power_limit_w, energy.source) == (1500.0, 700.0, "simulated")
    assert windows.update_interval_s == pytest.approx(0.01, rel=0.5)  # learned, sizing the next windows
    assert windows.target_s() == pytest.approx(window_module.MIN_WINDOW_S)


def test_a_counter_that_never_changes_is_reported_as_failed(monkeypatch):
    monkeypatch.setattr(window_module, "FIRST_WINDOW_S", 0.05)
    monkeypatch.setattr(window_module, "STUCK_AFTER_S", 0.15)
    device = SimulatedDevice(per_launch_s=0.001)
    windows = EnergyWindows(lambda: 42, 1e-3, "simulated")
    with pytest.raises(CounterFailed, match="did not change"):
        windows.measure(device, seconds_per_launch=0.001)


def test_a_counter_that_cannot_be_read_is_reported_as_failed():
    def broken() -> int:
        raise OSError("no such device")

    with pytest.raises(CounterFailed, match="could not be read"):
        EnergyWindows(broken, 1e-3, "simulated").measure(SimulatedDevice(0.001), 0.001)


# --- RAPL on a stand-in sysfs tree (the file layout only) --------------------------------------------------------


def zone(root, name: str, label: str, energy_uj: int | None = None, largest: int = 262143328850):
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "name").write_text(label + "\n")
    (folder / "max_energy_range_uj").write_text(f"{largest}\n")
    if energy_uj is not None:
        (folder / "energy_uj").write_text(f"{energy_uj}\n")
    return folder


@pytest.fixture
def powercap(tmp_path):
    root = tmp_path / "powercap"
    zone(root, "intel-rapl:0", "package-0", 1_000)
    zone(root, "intel-rapl:0:0", "core", 500)
    zone(root, "intel-rapl:0:1", "dram", 2_000)
    zone(root, "intel-rapl:1", "package-1", 999_990, largest=999_999)
    zone(root, "intel-rapl:2", "psys", 5_000)
    zone(root, "intel-rapl-mmio:0", "package-0", 1_000)
    return root


def test_rapl_adds_the_packages_and_their_dram_and_nothing_twice(powercap):
    zones = rapl_zones(powercap)
    assert [(z.name, z.folder.name) for z in zones] == [("package-0", "intel-rapl:0"), ("dram", "intel-rapl:0:1"),
                                                          ("package-1", "intel-rapl:1")]
    counter = RaplCounter(zones)
    before = counter.read()
    for folder, value in (("intel-rapl:0", 3_000), ("intel-rapl:0:1", 2_500), ("intel-rapl:1", 40)):
        (powercap / folder / "energy_uj").write_text(f"{value}\n")
    # package-0 +2000, dram +500, package-1 wrapped: 999_990 → 999_999 → 0 → 40 is 50
    assert counter.delta_uj(before, counter.read()) == 2_000 + 500 + 50


def test_rapl_is_not_available_without_zones_or_without_permission(tmp_path, powercap, monkeypatch):
    with pytest.raises(RaplUnavailable, match="not available here: no .*intel-rapl"):
        rapl_zones(tmp_path / "nothing")
    unavailable = CpuEnergy(tmp_path / "nothing")
    assert unavailable.measure(lambda: None) is None
    assert "not available here" in unavailable.unavailable
    assert unavailable.describe()["available"] is False

    def refuse(self: RaplZone) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(RaplZone, "read_uj", refuse)
    with pytest.raises(RaplUnavailable, match="readable by root alone"):
        rapl_zones(powercap)


def test_cpu_energy_is_the_counted_energy_over_the_calls(powercap):
    meter = CpuEnergy(powercap)
    assert meter.unavailable is None and meter.describe()["available"] is True
    package = powercap / "intel-rapl:0" / "energy_uj"
    calls = []

    def call() -> None:  # each call adds 1500 µJ to package-0, as a stand-in for the CPU spending it
        package.write_text(f"{int(package.read_text()) + 1500}\n")
        calls.append(1)

    energy = meter.measure(call)
    assert energy is not None and energy.launches == len(calls) >= 2
    assert energy.joules == pytest.approx(1500e-6)
    assert energy.power_w == pytest.approx(1500e-6 * len(calls) / energy.window_s)


# --- energy through the measurement and the results table -------------------------------------------------------


ENERGY = Energy(joules=0.05, power_w=500.0, launches=120, window_s=0.012 * 120, counted_s=0.3, updates=3,
                source="nvml", sm_clock_mhz=1755.0, power_limit_w=700.0)


def test_energy_travels_with_the_measurement_and_back_from_its_row():
    timing = Timing(10.0, 10.0, 9.9, 0.1, (9.9, 10.0, 10.1))
    measurement = Measurement(Status.OK, timing=timing, error=1e-7, energy=ENERGY)
    assert Measurement.from_dict(measurement.to_dict()) == measurement
    config = Config.make(Problem(1024, 1024, 1024), "tiled", "float32", {"TILE_WIDTH": 16})
    record = results.Record("e", "s", "grid", 0, config, measurement, "id", 0.0, "2000-01-01T00:00:00+00:00")
    row = results.row(record, results.analytics_of(record.config))
    assert row["energy_j"] == 0.05 and row["power_w"] == 500.0 and row["energy_source"] == "nvml"
    assert row["gflops_per_watt"] == pytest.approx(2 * 1024**3 / 0.05 / 1e9)
    assert row["energy_time_ms"] == pytest.approx(12.0)
    assert results.measurement_from_row(results.to_frame([row]).iloc[0].to_dict()) == measurement
    bare = results.row(record.__class__(**{**record.__dict__, "measurement": Measurement(Status.OK, timing=timing)}),
                       results.analytics_of(record.config))
    assert all(bare[column] is None for column in ("energy_j", "power_w", "gflops_per_watt", "energy_source"))
