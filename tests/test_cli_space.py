"""``python -m tuner space``: the space's sizes and parameters, the compiler's resource table, and errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.patience import patient

ROOT = Path(__file__).resolve().parents[1]
FERMI = "experiments/fermi_like.yaml"
PROBLEMS = ("4096x4096x4096", "1024x1024x1024", "1000x777x333")
# fermi_like.yaml searches BLOCK_X ∈ {8,16,32,64} × BLOCK_Y ∈ {4,8,16,32}: only 64×32 exceeds 1024 threads.
NAIVE_KERNELS = {(x, y) for x in (8, 16, 32, 64) for y in (4, 8, 16, 32)} - {(64, 32)}
TILES = (8, 16, 32)


def space(*args: str, cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    if cache is not None:
        env["TUNER_CACHE_DIR"] = str(cache)
    return subprocess.run([sys.executable, "-m", "tuner", "space", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, encoding="utf-8", timeout=patient(300), check=False)


def rows_starting_with(text: str, first: str) -> list[list[str]]:
    return [line.split() for line in text.splitlines() if line.split()[:1] == [first]]


def resource_rows(text: str) -> dict[tuple[str, ...], dict[str, str]]:
    """The compiler table's rows by (family, dtype, parameters...); the last eight cells are named."""
    names = ("registers", "shared", "local", "spill_stores", "spill_loads", "status", "seconds", "cached")
    section = text.split("Compiler's resource report", 1)[1]
    rows = {}
    for line in section.splitlines():
        cells = line.split()
        if cells[:1] in (["naive"], ["tiled"]) and len(cells) > len(names) + 2:
            rows[tuple(cells[:-len(names)])] = dict(zip(names, cells[-len(names):], strict=True))
    return rows


def test_space_prints_sizes_and_parameters_per_problem_and_kernel() -> None:
    done = space(FERMI)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    for problem in PROBLEMS:
        naive, tiled = rows_starting_with(done.stdout, problem)
        assert naive[1:] == ["[1]", "naive", "float32", "16", "15", "1"]
        assert tiled[1:] == ["[2]", "tiled", "float32", "3", "3", "0"]
    entries = done.stdout.split("Kernel entries", 1)[1].splitlines()
    assert entries[1:6] == ["  [1] naive (float32): BLOCK_X=8,16,32,64  BLOCK_Y=4,8,16,32",
                            "      rejected on every problem:", "        1× threads per block ≤ 1024",
                            "  [2] tiled (float32): TILE_WIDTH=8,16,32", "      rejected on every problem: nothing"]
    assert "54 of 57 configurations" in done.stdout
    assert "18 distinct kernels" in done.stdout
    assert "Compiler's resource report" not in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) <= 100  # the width when stdout is no terminal


@pytest.mark.slow
def test_space_compile_lists_every_kernel_with_its_resources(nvcc: str, tmp_path: Path) -> None:
    first = space(FERMI, "--compile", cache=tmp_path)
    assert first.returncode == 0, first.stderr
    rows = resource_rows(first.stdout)
    expected = {("naive", "float32", f"BLOCK_X={x}", f"BLOCK_Y={y}") for x, y in NAIVE_KERNELS}
    expected |= {("tiled", "float32", f"TILE_WIDTH={t}") for t in TILES}
    assert set(rows) == expected
    for kernel, row in rows.items():
        assert row["status"] == "ok"
        assert row["cached"] == "no"
        assert int(row["registers"]) > 0
        tile = int(kernel[2].removeprefix("TILE_WIDTH=")) if kernel[0] == "tiled" else 0
        assert int(row["shared"]) == 2 * tile * tile * 4
        assert (row["local"], row["spill_stores"], row["spill_loads"]) == ("0", "0", "0")
    progress = first.stderr.splitlines()
    counts = [int(line.split()[1].split("/")[0]) for line in progress]  # in a log: a line every few seconds
    assert counts[0] == 1 and counts[-1] == 18 and counts == sorted(set(counts)) and "\r" not in first.stderr
    assert all(line.startswith("compiling ") for line in progress)

    again = space(FERMI, "--compile", "--quiet", cache=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stderr == ""
    assert {kernel: row["cached"] for kernel, row in resource_rows(again.stdout).items()} == dict.fromkeys(
        expected, "yes")


def test_space_compile_for_another_architecture(nvcc: str, tmp_path: Path) -> None:
    experiment = tmp_path / "small.yaml"
    experiment.write_text(
        "name: small\nproblems: [{M: 64, N: 64, K: 64}]\n"
        "kernels: [{template: tiled, parameters: {TILE_WIDTH: [16], dtype: [float64]}}]\n"
    )
    done = space(str(experiment), "--compile", "--arch", "sm_80", "--quiet", cache=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "for sm_80" in done.stdout
    row = resource_rows(done.stdout)[("tiled", "float64", "TILE_WIDTH=16")]
    assert row["status"] == "ok"
    assert int(row["shared"]) == 2 * 16 * 16 * 8


def assert_one_paragraph_error(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    message = done.stderr.strip()
    assert message.startswith("error: ")
    assert "\n" not in message
    for word in words:
        assert word in message


def test_a_bad_experiment_file_is_a_one_paragraph_error(tmp_path: Path) -> None:
    experiment = tmp_path / "bad.yaml"
    experiment.write_text(
        "name: bad\nproblems: [{M: 64, N: 64, K: 64}]\n"
        "kernels:\n  - template: tiled\n    parameters: {TILE_SIZE: [16]}\n"
    )
    assert_one_paragraph_error(space(str(experiment)), str(experiment), "TILE_SIZE", "line 5")


def test_a_missing_experiment_file_is_a_one_paragraph_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.yaml"
    assert_one_paragraph_error(space(str(missing)), str(missing), "no such file")


def test_an_unknown_architecture_is_a_one_paragraph_error() -> None:
    assert_one_paragraph_error(space(FERMI, "--compile", "--arch", "volta"), "volta", "sm_90")
