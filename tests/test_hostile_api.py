"""The Python API and the command line given what they cannot use: each case ends in one paragraph (a TunerError,
or exit status 2 with no traceback) before anything is measured, or in a correct run."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest

import tuner
from tests.conftest import ROOT, run_cli
from tuner.errors import ExperimentError, TunerError
from tuner.kernels.restrictions import MAX_DEPTH, parse_restriction

pytestmark = pytest.mark.usefixtures("fresh_registry")

FERMI = ROOT / "experiments" / "fermi_like.yaml"
C_KERNEL = "void matmul(const real_t *A, const real_t *B, real_t *C, int M, int N, int K) {}"


@pytest.mark.parametrize(("options", "words"), [
    ({"problem": (0, 8, 8)}, r"field 'problems\[0\]\.M': expected an integer ≥ 1, found 0"),
    ({"problem": (2**31, 1, 1)}, r"field 'problems\[0\]': kernel's buffer A \(2147483648×1 = 2147483648 elements\) "
                                 r"exceeds the kernels' 32-bit index range"),
    ({"problem": (8, 8, 8), "name": "k" * 300}, r"tuner\.tune: name: the family name 'k{24}…' has 300 characters, "
                                                r"more than the 64"),
    ({"problem": (8, 8, 8), "storage": 5}, r"storage is a storage URL \(such as sqlite:///path/to/study\.db\) or an "
                                           r"Optuna storage object, not 5"),
])
def test_tune_refuses_what_it_cannot_run_before_measuring(tmp_path, monkeypatch, options, words):
    monkeypatch.setenv("TUNER_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(TunerError, match=words):
        tuner.tune(source=C_KERNEL, parameters={"TILE": [8, 16]}, out=tmp_path / "out", quiet=True, report=False,
                   **options)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("make", [optuna.samplers.BruteForceSampler, lambda: optuna.samplers.GridSampler({"x": [1]})],
                         ids=["bruteforce", "grid of other parameters"])
@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")
def test_a_sampler_object_that_cannot_drive_the_search_is_one_paragraph(tmp_path, make):
    sampler = make()
    with pytest.raises(TunerError) as caught:
        tuner.run(FERMI, backend="replay", strategy=sampler, trials=4, out=tmp_path / "out", quiet=True, report=False)
    message = str(caught.value)
    assert message.startswith(f"the sampler object {type(sampler).__name__} cannot search this space (")
    assert "the space's parameters are family, naive.BLOCK_X" in message and "\n" not in message


@pytest.mark.parametrize("text", ["not " * 100 + "A > 1", "+".join(["A"] * 100) + " > 0"],
                         ids=["100 nots", "100 terms"])
def test_a_restriction_nested_too_deeply_is_refused_without_recursing(text):
    with pytest.raises(TunerError, match=f"nests more than {MAX_DEPTH} operators; split it"):
        parse_restriction(text, ["A"], "w")


@pytest.mark.parametrize("text", ["not " * 1000 + "A > 1", " and ".join(["A > 0"] * 1000)],
                         ids=["1,000 nots", "1,000 terms"])
def test_a_restriction_past_its_length_is_refused(text):
    with pytest.raises(TunerError, match="characters, more than the 2,000 a restriction may have"):
        parse_restriction(text, ["A"], "w")


def test_an_experiment_file_with_a_thousand_nots_is_one_paragraph(tmp_path):
    path = tmp_path / "nots.yaml"
    path.write_text("name: r\nproblems: [{M: 8, N: 8, K: 8}]\nkernels:\n  - template: tiled\n"
                    f"    parameters: {{TILE_WIDTH: [8, 16]}}\n    restrictions: [\"{'not ' * 1000}TILE_WIDTH > 8\"]\n")
    done = run_cli("space", str(path), timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "field 'kernels[0].restrictions[0]'" in done.stderr


# --- output paths ------------------------------------------------------------------------------------------

@pytest.mark.slow  # a whole command in a process of its own
@pytest.mark.parametrize("kind", ["a name past 255 bytes", "a path past 4,095 bytes"])
def test_run_refuses_an_output_path_the_system_cannot_hold(tmp_path, kind):
    out = tmp_path / ("a" * 300) if kind.startswith("a name") else tmp_path.joinpath(*["a"] * 2100)
    done = run_cli("run", str(FERMI), "--backend", "replay", "--quiet", "--out", str(out), timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    line, = done.stderr.strip().splitlines()
    assert line.endswith("choose a shorter output folder with --out")
    assert ("more than the 255 a file name may have" if kind.startswith("a name") else "a path may have") in line


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("run") / "out"
    tuner.run(FERMI, backend="replay", trials=3, out=out, quiet=True, report=False)
    return out


@pytest.mark.slow  # a whole command in a process of its own
@pytest.mark.parametrize("kind", ["an existing file", "a place that cannot be made", "a name past 255 bytes"])
def test_export_at_a_place_it_cannot_write_is_one_paragraph(run_folder, tmp_path, kind):
    target = {"an existing file": tmp_path / "file.json", "a place that cannot be made": Path("/proc/nowhere"),
              "a name past 255 bytes": tmp_path / ("a" * 300)}[kind]
    (tmp_path / "file.json").write_text("{}")
    done = run_cli("export", str(run_folder), "--format", "t4", "--out", str(target), timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    line, = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {target}: the exported files cannot be written there (")
    assert (tmp_path / "file.json").read_text() == "{}"


def test_a_recording_named_by_a_long_file_name_is_refused_with_the_way_out(tmp_path):
    cache = {"device_name": "X", "kernel_name": "k", "problem_size": [8, 8, 8], "tune_params_keys": ["A"],
             "tune_params": {"A": [1, 2]}, "cache": {f"{a}": {"A": a, "time": float(a), "times": [float(a)]}
                                                     for a in (1, 2)}}
    (tmp_path / f"{'g' * 240}.json").write_text(json.dumps(cache))
    experiment = tmp_path / "long.yaml"
    experiment.write_text(f"name: r\nproblems: [{{M: 8, N: 8, K: 8}}]\nkernels:\n  - recorded: {'g' * 240}.json\n")
    with pytest.raises(ExperimentError, match="has 240 characters, more than the 64 a name of the report's "
                                                    "files may take; name the recording with 'name:'"):
        tuner.load_experiment(experiment)
    experiment.write_text(f"name: r\nproblems: [{{M: 8, N: 8, K: 8}}]\nkernels:\n"
                          f"  - recorded: {'g' * 240}.json\n    name: short\n")
    assert tuner.load_experiment(experiment).kernels[0].family == "short"


@pytest.mark.parametrize(("records", "outcomes"), [({}, "none recorded"), (None, "2 invalid")],
                         ids=["no entries", "no valid entries"])
@pytest.mark.slow  # a whole command in a process of its own
def test_compare_on_a_recording_without_a_valid_entry_is_one_paragraph(tmp_path, records, outcomes):
    cache = {"device_name": "X", "kernel_name": "k", "problem_size": [8, 8, 8], "tune_params_keys": ["A"],
             "tune_params": {"A": [1, 2]},
             "cache": records if records is not None else {f"{a}": {"A": a, "time": "InvalidConfig"} for a in (1, 2)}}
    path = tmp_path / "space.json"
    path.write_text(json.dumps(cache))
    done = run_cli("compare", str(path), "--repeats", "2", "--budgets", "2", "--out", str(tmp_path / "cmp"),
                   timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    line, = done.stderr.strip().splitlines()
    assert line.startswith(f"error: {path}: none of its") and f"ran ok ({outcomes})" in line


# --- refusals before measuring, and folders of another experiment -------------------------------------------

def test_a_cuda_experiment_on_the_cpu_backend_is_refused_before_measuring_the_cpu(tmp_path, monkeypatch):
    from tuner.backends.cpu import backend as cpu_backend

    def measured(*args, **options):
        raise AssertionError("the CPU backend was opened")

    monkeypatch.setattr(cpu_backend, "CpuBackend", measured)
    with pytest.raises(TunerError, match=r"the cpu backend measures c kernels, and none of the experiment's kernel "
                                         r"families is one: naive \(cuda\), tiled \(cuda\); run it with "
                                         r"backend='pycuda'"):
        tuner.run(FERMI, backend="cpu", out=tmp_path / "out", quiet=True, report=False)
    assert not (tmp_path / "out").exists()


def test_an_energy_objective_on_a_cpu_without_counters_is_refused_before_measuring(tmp_path, monkeypatch):
    from tuner.backends.cpu import backend as cpu_backend
    from tuner.energy import rapl

    monkeypatch.setattr(rapl, "POWERCAP", tmp_path / "no_powercap")
    monkeypatch.setattr(cpu_backend.CpuBackend, "__init__", lambda *args, **kw: pytest.fail("the CPU was measured"))
    with pytest.raises(TunerError, match=r"the objective 'energy' needs energy per launch, but RAPL energy is not "
                                         r"available here"):
        tuner.run(ROOT / "experiments" / "cpu_blocking.yaml", objective="energy", out=tmp_path / "out", quiet=True,
                  report=False)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("left", ["results.csv", "counters.parquet"])
def test_a_folder_holding_only_another_experiments_tables_is_not_taken_over(tmp_path, left):
    out = tmp_path / "out"
    tuner.run(FERMI, backend="replay", trials=3, out=out, quiet=True, report=False)
    kept = {p.name: p.read_bytes() for p in out.iterdir() if p.name in ("results.csv", "counters.parquet")}
    assert left in kept
    for path in out.iterdir():
        if path.name != left:
            path.unlink()
    cache = {"device_name": "X", "kernel_name": "k", "problem_size": [8, 8, 8], "tune_params_keys": ["A"],
             "tune_params": {"A": [1, 2]}, "cache": {f"{a}": {"A": a, "time": float(a), "times": [float(a)]}
                                                     for a in (1, 2)}}
    (tmp_path / "other.json").write_text(json.dumps(cache))
    experiment = tmp_path / "other.yaml"
    experiment.write_text("name: other\nproblems: [{M: 8, N: 8, K: 8}]\nkernels:\n  - recorded: other.json\n")
    with pytest.raises(TunerError, match=f"{out} holds the {left} of .*not of experiment 'other'; choose another "
                                         f"folder"):
        tuner.run(experiment, backend="replay", out=out, quiet=True, report=False)
    assert [p.name for p in out.iterdir()] == [left] and (out / left).read_bytes() == kept[left]


@pytest.mark.slow  # a whole command in a process of its own
def test_compare_writes_no_output_through_a_planted_link(tmp_path):
    cache = {f"{a},{b}": {"A": a, "B": b, "time": 1.0 + (a - 3) ** 2 + (b - 2) ** 2, "times": [1.0],
                          "compile_time": 100.0} for a in range(6) for b in range(6)}
    (tmp_path / "graded.json").write_text(json.dumps({
        "device_name": "X", "kernel_name": "k", "problem_size": [8, 8, 8], "tune_params_keys": ["A", "B"],
        "tune_params": {"A": list(range(6)), "B": list(range(6))}, "cache": cache}))
    out = tmp_path / "cmp"
    out.mkdir()
    outside = {name: tmp_path / f"outside_{name}" for name in ("comparison.txt", "comparison.csv", "comparison.html")}
    for name, target in outside.items():
        target.write_text("kept")
        (out / name).symlink_to(target)
    done = run_cli("compare", str(tmp_path / "graded.json"), "--repeats", "2", "--budgets", "5", "--strategies",
                   "random", "--jobs", "1", "--out", str(out), timeout=120)
    assert done.returncode == 0, done.stderr
    assert all(target.read_text() == "kept" for target in outside.values())
    assert not any((out / name).is_symlink() for name in outside) and (out / "comparison.txt").read_text()


@pytest.mark.slow  # a whole command in a process of its own
def test_compare_on_a_recording_with_a_long_file_name_writes_every_output(tmp_path):
    cache = {f"{a},{b}": {"A": a, "B": b, "time": 1.0 + (a - 3) ** 2 + (b - 2) ** 2, "times": [1.0],
                          "compile_time": 100.0} for a in range(6) for b in range(6)}
    path = tmp_path / f"{'g' * 240}.json"
    path.write_text(json.dumps({"device_name": "X", "kernel_name": "k", "problem_size": [8, 8, 8],
                                "tune_params_keys": ["A", "B"], "tune_params": {"A": list(range(6)),
                                                                                "B": list(range(6))},
                                "cache": cache}))
    out = tmp_path / "cmp"
    done = run_cli("compare", str(path), "--repeats", "2", "--budgets", "5", "--strategies", "random", "--jobs", "1",
                   "--out", str(out), timeout=120)
    assert done.returncode == 0, done.stderr
    curves = sorted(p.name for p in out.glob("curves_*.png"))
    assert len(curves) == 2 and all(len(name.encode()) <= 200 for name in curves) and curves[0] != curves[1]
