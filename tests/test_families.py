"""Kernel families from anywhere: folders an experiment or the command line names, entry points of installed
packages; their declared arguments, reference and parameter types; resource limits from the target."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from space_listing import kernel_space

from tests.conftest import run_cli
from tuner.config import Config, Problem
from tuner.errors import ExperimentError, TunerError
from tuner.experiment.schema import load_experiment, parse_experiment
from tuner.kernels import discovery
from tuner.kernels.discovery import families, get_family, template_hash, use_family_dirs
from tuner.kernels.model import cost
from tuner.kernels.render import launch, render
from tuner.kernels.verify import check_all, random_inputs

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "transpose"


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch: pytest.MonkeyPatch):
    """Each test starts from the package's own families and leaves the process as it found it."""
    monkeypatch.setattr(discovery, "_dirs", ())
    families.cache_clear()
    yield
    families.cache_clear()


def family_folder(tmp_path: Path, name: str = "scale", template: str | None = None, extra: str = "") -> Path:
    folder = tmp_path / "families"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.py").write_text(textwrap.dedent(f"""
        from tuner.kernels.arguments import Buffer, Scalar
        from tuner.kernels.family import Family, Parameter
        from tuner.kernels.verify import Full, Tolerance

        FAMILY = Family(
            name="{name}", description="y = 2·x", kernel_name="scale", dims=("N",),
            arguments=(Buffer("x", lambda p: (p.N,)), Buffer("y", lambda p: (p.N,), intent="out"),
                       Scalar("n", lambda p: p.N)),
            reference=lambda inputs, problem, seed: {{"y": Full(2.0 * inputs["x"].astype("float64"))}},
            tolerance=lambda dtype, problem: Tolerance(0.0, "exact"),
            flops=lambda problem: problem.N, compulsory_bytes=lambda problem, size: 2 * problem.N * size,
            global_bytes=lambda params, problem, size: 2 * problem.N * size, baseline=None,
            parameters=(Parameter("THREADS", "threads per block", (128, 256)),
                        Parameter("UNROLLED", "unroll the loop", (False, True)),
                        Parameter("STYLE", "indexing style", ("flat", "strided"))),
            block=lambda p: (int(p["THREADS"]), 1, 1),
            grid=lambda p, problem: (problem.N // int(p["THREADS"]) + 1, 1, 1),
            {extra}
        )
    """))
    (folder / (template or f"{name}.cu.j2")).write_text(
        'extern "C" __global__ void scale(const {{ ctype }}* x, {{ ctype }}* y, int n)\n'
        "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2 * x[i]; }\n"
        "// {{ STYLE }} {{ UNROLLED }}\n")
    return folder


def experiment_text(folder: Path | None = None, values: str = "THREADS: [128, 256]") -> str:
    dirs = f"template_dirs: [{folder}]\n" if folder else ""
    return (f"name: mine\n{dirs}problems: [{{N: 1000}}]\n"
            f"kernels: [{{template: scale, parameters: {{{values}, dtype: [float32]}}}}]\n")


def test_a_folder_named_by_the_experiment_adds_its_families(tmp_path):
    folder = family_folder(tmp_path)
    experiment = parse_experiment(experiment_text(folder), str(tmp_path / "exp.yaml"))
    assert experiment.template_dirs == (folder.resolve(),)
    assert experiment.problems == (Problem(N=1000),)
    family = get_family("scale")
    assert family.declaration == (folder / "scale.py").resolve() and family.folder == folder.resolve()
    assert len(template_hash("scale")) == 16
    space = kernel_space(experiment.kernels[0], experiment.problems[0])
    assert len(space.valid) == 2 * 2 * 2  # THREADS × UNROLLED × STYLE defaults
    config = space.valid[0]
    assert "void scale" in render(config) and launch(config).grid == (1000 // 128 + 1, 1, 1)
    assert cost(config).flops == 1000 and cost(config).intensity == pytest.approx(1000 / 8000)


def test_folders_are_relative_to_the_experiment_file(tmp_path):
    family_folder(tmp_path)
    (tmp_path / "exp.yaml").write_text(experiment_text().replace("problems:", "template_dirs: [families]\nproblems:"))
    assert load_experiment(tmp_path / "exp.yaml").kernels[0].family == "scale"


def test_parameter_values_keep_their_declared_types(tmp_path):
    folder = family_folder(tmp_path)
    experiment = parse_experiment(experiment_text(folder, "UNROLLED: [true], STYLE: [strided]"), "exp.yaml")
    assert experiment.kernels[0].values["UNROLLED"] == (True,)
    assert experiment.kernels[0].values["STYLE"] == ("strided",)
    with pytest.raises(ExperimentError, match=r"kernels\[0\]\.parameters\.UNROLLED\[0\]'.*true or false"):
        parse_experiment(experiment_text(folder, "UNROLLED: [1]"), "exp.yaml")
    with pytest.raises(ExperimentError, match=r"kernels\[0\]\.parameters\.THREADS\[0\]'.*integer"):
        parse_experiment(experiment_text(folder, "THREADS: [wide]"), "exp.yaml")
    with pytest.raises(ExperimentError, match=r"kernels\[0\]\.parameters\.STYLE\[0\]'.*text"):
        parse_experiment(experiment_text(folder, "STYLE: [3]"), "exp.yaml")


def test_a_problem_gives_exactly_the_sizes_its_families_take(tmp_path):
    folder = family_folder(tmp_path)
    text = experiment_text(folder)
    with pytest.raises(ExperimentError, match=r"problems\[0\].K'.*unknown key 'K'"):
        parse_experiment(text.replace("{N: 1000}", "{N: 1000, K: 3}"), "exp.yaml")
    with pytest.raises(ExperimentError, match=r"problems\[0\]'.*missing required key 'N'"):
        parse_experiment(text.replace("{N: 1000}", "{}"), "exp.yaml")


@pytest.mark.slow
def test_the_command_line_adds_folders(tmp_path):
    folder = family_folder(tmp_path)
    (tmp_path / "exp.yaml").write_text(experiment_text())
    done = run_cli("space", str(tmp_path / "exp.yaml"), "--templates", str(folder))
    assert done.returncode == 0, done.stderr
    assert "scale" in done.stdout and "8 of 8 configurations" in done.stdout
    refused = run_cli("space", str(tmp_path / "exp.yaml"))
    assert refused.returncode == 2 and "unknown template 'scale'" in refused.stderr
    assert "--templates DIR" in refused.stderr and "Traceback" not in refused.stderr


def test_an_installed_package_provides_families_through_an_entry_point(tmp_path, monkeypatch):
    site = tmp_path / "site"
    package = site / "extra_families"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    source = family_folder(tmp_path, name="scaled")
    for path in source.iterdir():
        (package / path.name).write_text(path.read_text())
    info = site / "extra_families-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: extra-families\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[tuner.families]\nextra = extra_families\n")
    monkeypatch.syspath_prepend(str(site))
    assert get_family("scaled").folder == package.resolve()
    assert "naive" in families()


def test_mistakes_in_a_folder_name_the_file(tmp_path):
    with pytest.raises(TunerError, match="no such folder"):
        use_family_dirs([tmp_path / "absent"])
    folder = family_folder(tmp_path, template="elsewhere.cu.j2")
    use_family_dirs([folder])
    with pytest.raises(TunerError, match=r"scale\.py: family 'scale' has no template scale\.cu\.j2"):
        families()
    (folder / "scale.cu.j2").write_text("")
    clash = tmp_path / "other"
    clash.mkdir()
    (clash / "tiled.py").write_text((folder / "scale.py").read_text().replace('name="scale"', 'name="tiled"'))
    (clash / "tiled.cu.j2").write_text("")
    use_family_dirs([clash])
    with pytest.raises(TunerError, match="two kernel families are named 'tiled'"):
        families()


def test_a_declaration_that_fails_is_named(tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "oops.py").write_text("FAMILY = 1 / 0\n")
    use_family_dirs([folder])
    with pytest.raises(TunerError, match=r"oops\.py: the family declaration raised ZeroDivisionError"):
        families()


def test_the_example_transposes_and_its_reference_catches_a_wrong_one():
    experiment = load_experiment(EXAMPLE / "transpose.yaml")
    family = get_family("transpose")
    assert family.flops(Problem(M=8, N=4)) == 0 and experiment.problems[1] == Problem(M=4000, N=3000)
    problem = Problem(M=37, N=29)
    inputs = random_inputs(family.buffers, problem, "float32", seed=0)
    expected = family.reference(inputs, problem, 0)
    tolerance = family.tolerance("float32", problem)
    assert check_all({"B": inputs["A"].T.copy()}, expected, {"B": "float32"}, tolerance).ok
    wrong = inputs["A"].T.copy()
    wrong[3, 5] = np.float32(0.5)
    assert not check_all({"B": wrong}, expected, {"B": "float32"}, tolerance).ok
    naive = Config.make(problem, "transpose", "float32", {"VARIANT": "naive", "TILE": 32, "BLOCK_ROWS": 8,
                                                            "PAD": False})
    tiled = Config.make(problem, "transpose", "float32", {"VARIANT": "tiled", "TILE": 32, "BLOCK_ROWS": 8,
                                                            "PAD": True})
    assert cost(tiled).global_bytes == cost(tiled).compulsory_bytes == 2 * 37 * 29 * 4
    assert cost(naive).global_bytes == 37 * 29 * (4 + 32)


@pytest.mark.slow
def test_every_example_kernel_compiles(nvcc, tmp_path, monkeypatch):
    from tuner.compile.nvcc import compile_configs

    monkeypatch.setenv("TUNER_CACHE_DIR", str(tmp_path))
    experiment = load_experiment(EXAMPLE / "transpose.yaml")
    configs = [c for c in kernel_space(experiment.kernels[0], experiment.problems[0]).valid]
    results = compile_configs(configs, experiment.compile.arch, workers=2)
    assert all(r.ok for r in results.values()), [r.log for r in results.values() if not r.ok]
    padded = [c for c in configs if c["PAD"] and c.dtype == "float32" and c["TILE"] == 32]
    assert {results[c].resources.shared_bytes for c in padded} == {32 * 33 * 4}


def test_resource_limits_come_from_the_target_architecture():
    text = (ROOT / "experiments" / "h100_sgemm.yaml").read_text()
    on_hopper = parse_experiment(text, "h100_sgemm.yaml")
    on_turing = text.replace("name: h100_sgemm", "name: on_turing") + "\ncompile: {arch: sm_75}\n"
    problem = on_hopper.problems[0]
    hopper = kernel_space(on_hopper.kernels[0], problem)
    turing = kernel_space(parse_experiment(on_turing, "turing.yaml").kernels[0], problem)
    assert len(turing.valid) < len(hopper.valid)
    assert turing.entry.rejected_by["shared memory per block ≤ 64 KB"] > 0


@pytest.mark.parametrize("arch", ["sm_9", "ampere", "sm_35"])
def test_an_architecture_without_known_limits_is_refused(arch):
    text = (ROOT / "experiments" / "fermi_like.yaml").read_text() + f"\ncompile: {{arch: {arch}}}\n"
    with pytest.raises(ExperimentError, match=r"compile\.arch"):
        parse_experiment(text, "exp.yaml")


def test_the_package_families_are_found_without_any_folder():
    assert {"naive", "tiled", "regblock"} <= set(families())
    assert sys.modules["kernel_templates.naive"].FAMILY.name == "naive"
