"""``tuner export RUN_FOLDER --format kernel-tuner-cache | t4``: the recordings in Kernel Tuner's formats, read back as
recorded spaces with the same table, and (where Kernel Tuner is installed) simulated by Kernel Tuner itself."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from tuner import cli
from tuner.recorded import load_recorded
from tuner.recorded.run_folder import load_run_folder

ROOT = Path(__file__).resolve().parent.parent
EXHAUSTIVE = ROOT / "experiments" / "data" / "h100_regblock_exhaustive"
FERMI = ROOT / "experiments" / "data" / "fermi_like_h100"
READ_BACK = {"ok": "ok", "invalid": "invalid", "compile_error": "compile_error", "crashed": "crashed",
             "wrong": "crashed"}
"""A cache has no class for a wrong result: Kernel Tuner's RuntimeFailedConfig reads back as crashed."""


def exported(folder: Path, fmt: str, out: Path, capsys) -> list[Path]:
    assert cli.main(["export", str(folder), "--format", fmt, "--out", str(out)]) == 0
    return [Path(line.split("  ")[0]) for line in capsys.readouterr().out.splitlines()]


def assert_same_table(folder: Path, files: list[Path], fmt: str) -> None:
    """Every configuration the folder recorded is in its study's file of its family with its outcome, time,
    samples and cost; whatever else a file holds is a combination the experiment's rules reject, as invalid."""
    for study, recorded in load_run_folder(folder).items():
        prefix = study.replace("/", "_") + "_"
        by_family = {path.stem.removesuffix("_t4").removeprefix(prefix): load_recorded(path)
                     for path in files if path.name.startswith(prefix)}
        found = set()
        for row in range(len(recorded)):
            params = recorded.params_of(row)
            family = str(params.pop("family", next(iter(by_family))))
            space = by_family[family]
            other = space.row_of({k: v for k, v in params.items() if v != "-"})
            assert other is not None, (study, params)
            found.add((family, other))
            status = str(recorded.status[row])
            assert space.status[other] == (status if fmt == "t4" else READ_BACK[status])
            if status == "ok":
                assert space.time_ms[other] == pytest.approx(recorded.time_ms[row])
                runs = recorded.runs_ms[row][~np.isnan(recorded.runs_ms[row])]
                assert space.runs_ms[other][:len(runs)] == pytest.approx(runs)
            assert space.cost_s[other] == pytest.approx(recorded.cost_s[row], rel=1e-9, abs=1e-12)
        for family, space in by_family.items():
            assert all(space.status[row] == "invalid" for row in range(len(space)) if (family, row) not in found)


@pytest.mark.slow  # every configuration of the exhaustive recording, exported and read back
@pytest.mark.parametrize("fmt", ["kernel-tuner-cache", "t4"])
def test_the_exhaustive_recording_round_trips_and_covers_its_whole_product(fmt, tmp_path, capsys):
    (path,) = exported(EXHAUSTIVE, fmt, tmp_path, capsys)
    assert_same_table(EXHAUSTIVE, [path], fmt)
    space = load_recorded(path)
    assert len(space) == math.prod(len(v) for v in space.values) == 5184  # every combination is in the file
    assert int((space.status == "ok").sum()) == 2766
    assert space.optimum_ms == pytest.approx(load_run_folder(EXHAUSTIVE)[
        "h100_regblock_exhaustive/4096x4096x4096/float32"].optimum_ms)


@pytest.mark.parametrize("fmt", ["kernel-tuner-cache", "t4"])
def test_a_recording_of_two_families_round_trips_one_file_per_study_and_family(fmt, tmp_path, capsys):
    files = exported(FERMI, fmt, tmp_path, capsys)
    assert len(files) == 6
    assert_same_table(FERMI, files, fmt)


def test_a_cache_names_its_kernel_problem_values_and_device(tmp_path, capsys):
    files = exported(FERMI, "kernel-tuner-cache", tmp_path, capsys)
    assert sorted(p.name for p in files) == sorted(
        f"fermi_like_{problem}_float32_{family}.json" for problem in ("4096x4096x4096", "1024x1024x1024",
                                                                      "1000x777x333") for family in ("naive", "tiled"))
    first = [p for p in files if "4096x4096x4096" in p.name]
    document = json.loads(next(p for p in first if p.name.endswith("tiled.json")).read_text())
    assert document["kernel_name"] == "tiled" and document["problem_size"] == [4096, 4096]
    assert document["problem"] == {"M": 4096, "N": 4096, "K": 4096}
    assert document["tune_params"] == {"TILE_WIDTH": [8, 16, 32]} and document["device_name"].startswith("NVIDIA")
    space = load_recorded(next(p for p in first if p.name.endswith("naive.json")))
    assert len(space) == 16 and int((space.status == "invalid").sum()) >= 1  # 64×32 threads: over the limit


def test_the_t4_file_follows_kernel_tuners_schema(tmp_path, capsys):
    jsonschema = pytest.importorskip("jsonschema")
    kernel_tuner = pytest.importorskip("kernel_tuner")
    schema = json.loads((Path(kernel_tuner.__file__).parent / "schema" / "T4" / "1.0.0" /
                         "results-schema.json").read_text())
    for path in exported(FERMI, "t4", tmp_path, capsys):
        jsonschema.validate(json.loads(path.read_text()), schema)


def test_kernel_tuner_simulates_the_exported_cache(tmp_path, capsys):
    kernel_tuner = pytest.importorskip("kernel_tuner")
    (path,) = exported(EXHAUSTIVE, "kernel-tuner-cache", tmp_path, capsys)
    header = json.loads(path.read_text())
    tune_params = {name: header["tune_params"][name] for name in header["tune_params_keys"]}
    with pytest.warns(UserWarning):  # Kernel Tuner's notes on a source it does not compile in simulation
        found, environment = kernel_tuner.tune_kernel(
            "regblock", "__global__ void regblock() {}", header["problem_size"], [np.zeros(1, np.float32)],
            tune_params, cache=str(path), simulation_mode=True, strategy="brute_force", quiet=True)
    ok = [r for r in found if "__error__" not in r]
    assert len(found) == 5184 and len(ok) == 2766
    assert environment["device_name"] == "NVIDIA H100 80GB HBM3"
    best = load_recorded(path).optimum_ms
    assert min(r["time"] for r in ok) == pytest.approx(best)


def test_a_folder_without_results_is_refused_in_one_paragraph(tmp_path, capsys):
    assert cli.main(["export", str(tmp_path), "--format", "t4"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: ") and str(tmp_path) in error and error.count("\n") == 1
