"""The cache levels' ceilings as tuner device shows them (no GPU: the figures of a described device)."""

from __future__ import annotations

import pytest

from tuner.backends.pycuda import ceilings, device, memory_ceilings, summary
from tuner.peaks import LEVEL_KEYS, tensor_dtypes

H100 = {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-1", "pci_bus_id": "0000:19:00.0", "compute_capability": "9.0",
        "arch": "sm_90", "multiprocessors": 132, "sm_clock_mhz": 1980.0, "memory_clock_mhz": 2619.0,
        "memory_bytes": 80 * 2**30, "memory_bus_width_bits": 5120, "l2_bytes": 50 * 2**20,
        "shared_per_block_bytes": 48 * 2**10, "shared_per_block_optin_bytes": 227 * 2**10,
        "shared_per_sm_bytes": 228 * 2**10, "registers_per_block": 65536, "max_threads_per_block": 1024}


def test_the_l1_and_shared_memory_serve_128_bytes_per_clock_per_sm():
    peaks = memory_ceilings.theoretical(H100)
    assert peaks["l1_bandwidth_gbs"] == peaks["shared_bandwidth_gbs"] == pytest.approx(132 * 128 * 1.98)
    assert peaks["l2_bandwidth_gbs"] is None  # not published
    assert memory_ceilings.theoretical({**H100, "compute_capability": "?"})["l1_bandwidth_gbs"] is None


def test_the_l2_working_set_is_a_power_of_two_within_a_quarter_of_the_l2():
    assert memory_ceilings._working_set_bytes(H100) == 8 * 2**20
    assert memory_ceilings._working_set_bytes({"l2_bytes": None}) == 8 * 2**20


def test_tuner_device_shows_each_level_beside_dram():
    measured = {"bandwidth_gbs": 3000.0, "l2_bandwidth_gbs": 7000.0, "l1_bandwidth_gbs": 25000.0,
                "shared_bandwidth_gbs": 30000.0}
    info = {"device": H100, "versions": {"driver": "580", "cuda_driver_api": "13.0", "cuda": "13.0", "nvcc": "13.0",
                                         "pycuda": "2026.1"},
            "peaks": {"theoretical": device.theoretical_peaks(H100), "measured": measured},
            "ceilings": {"measured_utc": "2026-01-01T00:00:00+00:00", "method": ceilings.CEILINGS_METHOD,
                         "details": {"l2": {"sm_clock_mhz_before": 1980.0, "sm_clock_mhz_after": 1965.0}}},
            "cache_file": "device.json"}
    text = summary.format_summary(info)
    lines = {line.split("  ")[1].strip(): line for line in text.splitlines() if line.startswith("  ") and "  " in
             line[2:]}
    assert lines["L2 bandwidth"].split()[-3:] == ["7.00", "TB/s", "?"]
    assert lines["L1 bandwidth"].split()[-5:] == ["33.45", "TB/s", "25.00", "TB/s", "75%"]
    assert "shared-memory bandwidth" in text and "(L1 and shared memory: 132 SMs × 128 B per clock (32 banks × 4 B)" \
        in text
    assert "l2 1980→1965" in text and "ld.global.cg over a quarter of the L2" in text


def test_ceilings_cached_without_a_level_are_measured_again_and_complete_ones_reused(monkeypatch, tmp_path):
    monkeypatch.setenv("TUNER_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(device, "require_gpu", lambda: None)
    monkeypatch.setattr(summary, "describe", lambda: dict(H100))
    monkeypatch.setattr(device, "software_versions", lambda: {"driver": "580"})
    measured = []

    def measure(dev, timer, progress=False):
        measured.append(dev["name"])
        names = [f"{d}_gflops" for d in device.CEILING_DTYPES] + ["bandwidth_gbs", *LEVEL_KEYS.values()]
        names += [f"{d}_tensor_gflops" for d in tensor_dtypes(dev["compute_capability"])]  # sm_90: FP8 too
        return {"measured": dict.fromkeys(names, 1.0), "details": {}}

    monkeypatch.setattr(ceilings, "measure_ceilings", measure)
    path = summary._cache_file(H100, {"driver": "580"})
    old = {"device": H100, "peaks": {"measured": {"bandwidth_gbs": 1.0}}, "ceilings": {}}
    from tuner.measure.ceilings_cache import write_cached

    write_cached(path, old)
    first = summary.summary(timer=object())  # cached before the levels were measured: measured again
    again = summary.summary(timer=object())  # complete: reused
    assert measured == [H100["name"]]
    assert first["peaks"]["measured"]["l2_bandwidth_gbs"] == again["peaks"]["measured"]["l2_bandwidth_gbs"] == 1.0
