"""Small inputs that would cost unbounded time or memory are refused before anything is built: spaces past the
stated size, budgets past the space, recordings that expand past their cap, and files that are no regular file
(a FIFO never ends a read, /dev/zero never ends)."""

from __future__ import annotations

import gzip
import json
import os
import textwrap
import tracemalloc
import zlib
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli
from tuner import input_file
from tuner.config import Problem
from tuner.errors import ExperimentError, TunerError
from tuner.experiment.python_experiment import check_experiment
from tuner.experiment.schema import Experiment, load_experiment
from tuner.kernels import discovery
from tuner.recorded import load
from tuner.space.entry_space import MAX_COMBINATIONS, KernelSpec, SpaceTooLarge, entry_space

pytestmark = pytest.mark.usefixtures("fresh_registry")


def _wide_family(tmp_path: Path, parameters: int = 20, values: int = 20) -> Path:
    folder = tmp_path / "families"
    folder.mkdir()
    (folder / "wide.py").write_text(textwrap.dedent(f"""
        from tuner.kernels.family import Family, Parameter

        FAMILY = Family(name="wide", description="many parameters",
                        parameters=tuple(Parameter(f"P{{i}}", "p", tuple(range(1, {values} + 1)))
                                         for i in range({parameters})),
                        global_bytes=lambda p, problem, size: 4, dtypes=("float32",))
    """))
    (folder / "wide.cu.j2").write_text("{{ header }}\n")
    return folder


def _wide_experiment(tmp_path: Path) -> Path:
    folder = _wide_family(tmp_path)
    listed = "\n".join(f"      P{i}: [{', '.join(str(v) for v in range(1, 21))}]" for i in range(20))
    path = tmp_path / "wide.yaml"
    path.write_text(f"name: wide\ntemplate_dirs: [{folder}]\nproblems: [{{M: 8, N: 8, K: 8}}]\nkernels:\n"
                    f"  - template: wide\n    parameters:\n{listed}\n")
    return path


def test_twenty_parameters_of_twenty_values_are_refused_at_once_naming_the_field(tmp_path):
    path = _wide_experiment(tmp_path)
    done = run_cli("space", str(path), timeout=60)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert lines[0].startswith(f"error: {path}, line 7: field 'kernels[0].parameters'")
    assert f"{MAX_COMBINATIONS:,}" in lines[0] and "about 1.05e+26 combinations" in lines[0]


def test_an_experiment_built_in_python_is_bounded_too(tmp_path):
    discovery.use_family_dirs([_wide_family(tmp_path)])
    spec = KernelSpec("wide", {f"P{i}": tuple(range(1, 21)) for i in range(20)}, ("float32",))
    experiment = Experiment("wide", (Problem(8, 8, 8),), (spec,))
    with pytest.raises(ExperimentError, match=r"kernels\[0\]\.parameters.*combinations") as caught:
        check_experiment(experiment)
    assert caught.value.field == "kernels[0].parameters"
    with pytest.raises(SpaceTooLarge):
        entry_space(spec)


def test_a_space_at_the_limit_is_built(tmp_path):
    discovery.use_family_dirs([_wide_family(tmp_path, parameters=2, values=1000)])
    spec = KernelSpec("wide", {"P0": tuple(range(1, 1001)), "P1": tuple(range(1, 1001))}, ("float32",))
    assert entry_space(spec).size == MAX_COMBINATIONS


def _cache(parameters: int, values: int) -> dict:
    names = [f"P{i}" for i in range(parameters)]
    record = {name: 1 for name in names} | {"time": 1.0, "times": [1.0], "compile_time": 1.0}
    return {"device_name": "X", "kernel_name": "k", "problem_size": [8, 8, 8], "tune_params_keys": names,
            "tune_params": {name: list(range(1, values + 1)) for name in names},
            "cache": {",".join("1" for _ in names): record}}


def test_a_recording_whose_product_is_too_large_for_a_space_is_refused(tmp_path):
    (tmp_path / "wide.json").write_text(json.dumps(_cache(8, 20)))
    path = tmp_path / "exp.yaml"
    path.write_text("name: r\nproblems: [{M: 8, N: 8, K: 8}]\nkernels:\n  - recorded: wide.json\n")
    with pytest.raises(ExperimentError, match="combinations") as caught:
        load_experiment(path)
    assert caught.value.field == "kernels[0].recorded"


def _graded_cache(side: int) -> dict:
    """A side × side space whose times grow with the distance from one corner."""
    cache = {f"{a},{b}": {"A": a, "B": b, "time": 1.0 + (a - 3) ** 2 + (b - 5) ** 2, "times": [1.0],
                          "compile_time": 100.0} for a in range(side) for b in range(side)}
    return {"device_name": "X", "kernel_name": "k", "problem_size": [8, 8, 8], "tune_params_keys": ["A", "B"],
            "tune_params": {"A": list(range(side)), "B": list(range(side))}, "cache": cache}


@pytest.mark.slow
def test_compare_caps_the_budgets_at_the_size_of_the_space(tmp_path):
    out = tmp_path / "cmp"
    (tmp_path / "graded.json").write_text(json.dumps(_graded_cache(12)))
    done = run_cli("compare", str(tmp_path / "graded.json"), "--budgets", "10,100000000", "--repeats", "2",
                   "--strategies", "ils", "--jobs", "1", "--out", str(out), timeout=300)
    assert done.returncode == 0, done.stderr
    assert "capped at 144" in done.stderr
    assert json.loads((out / "comparison.json").read_text())["settings"]["budgets"] == [10, 144]


@pytest.mark.slow
def test_compare_refuses_a_product_too_large_to_draw_from(tmp_path):
    (tmp_path / "wide.json").write_text(json.dumps(_cache(8, 20)))
    done = run_cli("compare", str(tmp_path / "wide.json"), "--convention", "b", "--out", str(tmp_path / "cmp"),
                   timeout=60)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--convention a" in done.stderr and len(done.stderr.strip().splitlines()) == 1


# --- recordings that expand ---------------------------------------------------------------------------------

def _zeros_gzip(path: Path, megabytes: int) -> None:
    stream = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(2**20)
    with path.open("wb") as file:
        for _ in range(megabytes):
            file.write(stream.compress(block))
        file.write(stream.flush())


def test_a_gzip_recording_that_expands_past_the_cap_is_refused_while_decompressing(tmp_path, monkeypatch):
    monkeypatch.setattr(load, "MAX_RECORDING_BYTES", 4 * 2**20)
    bomb = tmp_path / "bomb.json.gz"
    _zeros_gzip(bomb, 256)
    assert bomb.stat().st_size < 2**20
    tracemalloc.start()
    try:
        with pytest.raises(TunerError, match="expands to more than the 4,194,304 bytes"):
            load.load_recorded(bomb)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20  # never held whole: 256 MiB once decompressed


def test_a_gzip_recording_within_the_cap_reads_as_before(tmp_path):
    text = json.dumps(_cache(2, 3))
    path = tmp_path / "small.json.gz"
    path.write_bytes(gzip.compress(text.encode()))
    assert input_file.read_text(path, 2**20, gunzip=True) == text
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(path.read_bytes()[:-12])  # a stream cut off gives what it holds
    assert text.startswith(input_file.read_text(cut, 2**20, gunzip=True))


def test_a_plain_file_past_its_limit_is_refused(tmp_path):
    path = tmp_path / "big.json"
    path.write_bytes(b" " * 100)
    with pytest.raises(input_file.InputFileError, match="more than the 99 bytes"):
        input_file.read_bytes(path, 99)
    assert input_file.read_bytes(path, 100) == b" " * 100


# --- files that are no regular file -------------------------------------------------------------------------

@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_an_experiment_that_is_no_regular_file_is_refused(tmp_path, kind, request):
    path = request.getfixturevalue("fifo") if kind == "fifo" else Path("/dev/zero")
    done = run_cli("space", str(path), timeout=60)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}: the document: cannot be read")
    assert ("FIFO" if kind == "fifo" else "character device") in lines[0]


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
@pytest.mark.slow
def test_a_recording_that_is_no_regular_file_is_refused(tmp_path, kind, request):
    path = request.getfixturevalue("fifo") if kind == "fifo" else Path("/dev/zero")
    done = run_cli("compare", str(path), "--out", str(tmp_path / "cmp"), timeout=60)
    assert done.returncode == 2, done.stderr
    assert "not a regular file" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(f"name: r\nproblems: [{{M: 8, N: 8, K: 8}}]\nkernels:\n  - recorded: {path}\n")
    with pytest.raises(ExperimentError, match="not a regular file") as caught:
        load_experiment(experiment)
    assert caught.value.field == "kernels[0].recorded"


@pytest.mark.slow
def test_a_journal_storage_that_is_no_regular_file_is_refused(tmp_path, fifo):
    done = run_cli("run", str(ROOT / "experiments" / "fermi_like.yaml"), "--backend", "replay", "--storage",
                   f"journal://{fifo}", "--out", str(tmp_path / "out"), "--quiet", timeout=60)
    assert done.returncode == 2, done.stderr
    assert "is a FIFO (named pipe), not a regular file" in done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_a_replayed_table_that_is_no_regular_file_is_refused(tmp_path, fifo):
    done = run_cli("run", str(ROOT / "experiments" / "fermi_like.yaml"), "--replay", str(fifo), "--out",
                   str(tmp_path / "out"), "--quiet", timeout=60)
    assert done.returncode == 2, done.stderr
    assert "not a regular file" in done.stderr and "Traceback" not in done.stderr
