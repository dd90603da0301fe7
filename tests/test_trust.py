"""Experiment files and run folders are data: what an attacker could put in them must neither run code nor write
outside the output folder. Each case here worked as an attack on earlier versions of the tool."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli
from tuner.compile.nvcc import compile_source
from tuner.compile.options import OptionError, check_nvcc_options
from tuner.config import Config, Problem
from tuner.errors import ExperimentError, TunerError
from tuner.experiment.schema import load_experiment
from tuner.kernels import discovery
from tuner.kernels.discovery import families
from tuner.kernels.render import render, render_stored

RECORDING = ROOT / "experiments" / "data" / "fermi_like_h100"
EXPERIMENT = """\
name: trust
problems: [{M: 64, N: 64, K: 64}]
kernels:
  - template: tiled
    parameters: {TILE_WIDTH: [16]}
"""


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(discovery, "_dirs", ())
    families.cache_clear()
    yield
    families.cache_clear()


def _experiment(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    return path


# --- compiler options ---------------------------------------------------------------------------------------

ATTACKS = [
    ["-MD", "-MF", "{target}", "-MT", "echo owned;"],
    ["-o", "{target}"],
    ["--options-file", "{target}"],
    ["-ccbin", "/bin/sh"],
    ["-Xcompiler", "-fplugin=/tmp/plugin.so"],
    ["-Xptxas", "-v,--output-file={target}"],
    ["--keep", "--keep-dir", "{target}"],
    ["-DX=$(touch {target})"],
    ["-I/etc"],
]


@pytest.mark.parametrize("options", ATTACKS, ids=[" ".join(a)[:30] for a in ATTACKS])
def test_options_that_name_files_or_programs_are_refused_at_load(tmp_path, options):
    target = tmp_path / "victim"
    listed = json.dumps([o.replace("{target}", str(target)) for o in options])
    path = _experiment(tmp_path, EXPERIMENT + f"compile: {{options: {listed}}}\n")
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    assert "compile.options[" in str(caught.value)
    assert not target.exists()


def test_the_compile_command_refuses_the_dependency_file_attack(tmp_path):
    target = tmp_path / "bashrc"
    target.write_text("original\n")
    path = _experiment(tmp_path, EXPERIMENT + f"compile: {{options: [-MD, -MF, '{target}', -MT, 'echo owned;']}}\n")
    done = run_cli("space", str(path), "--compile", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "compile.options[0]" in done.stderr and "Traceback" not in done.stderr
    assert target.read_text() == "original\n"


def test_the_compiler_itself_refuses_an_option_outside_the_allow_list(tmp_path):
    with pytest.raises(TunerError, match=r"compile.options\[1\]"):
        compile_source("__global__ void k() {}", "sm_90", ["-O3", "-odir", str(tmp_path)])


@pytest.mark.parametrize("options", [
    ["-O3"], ["-O2", "-use_fast_math"], ["-Xptxas", "-v"], ["-Xptxas=-v,-dlcm=ca"], ["--maxrregcount", "128"],
    ["-maxrregcount=64"], ["-DTILE=16", "-DFAST"], ["-std=c++17", "--extra-device-vectorization", "-lineinfo"],
    ["-ftz=true", "-prec-div=false", "-fmad=true"],
])
def test_code_generation_options_pass(options):
    check_nvcc_options(options)


def test_the_target_belongs_in_compile_arch():
    with pytest.raises(OptionError, match="compile.arch"):
        check_nvcc_options(["-O3", "-gencode=arch=compute_90a,code=sm_90a"])


# --- text parameter values ----------------------------------------------------------------------------------

def _text_family(tmp_path: Path, pattern: str | None = None) -> Path:
    folder = tmp_path / "families"
    folder.mkdir()
    (folder / "styled.py").write_text(textwrap.dedent(f"""
        from tuner.kernels.family import Family, Parameter

        FAMILY = Family(
            name="styled", description="naive kernel with a text parameter",
            parameters=(Parameter("STYLE", "an identifier pasted into the source", ("plain", "fast"),
                                  pattern={pattern!r}),),
            global_bytes=lambda params, problem, size: 1,
            block=lambda p: (16, 16, 1),
            grid=lambda p, problem: (1, 1, 1),
            dtypes=("float32",),
        )
    """))
    (folder / "styled.cu.j2").write_text("{{ header }}\n// {{ STYLE }}\nextern \"C\" __global__ void matmul() {}\n")
    return folder


def _styled_experiment(tmp_path: Path, folder: Path, value: str) -> Path:
    return _experiment(tmp_path, textwrap.dedent(f"""\
        name: styled
        template_dirs: [{folder}]
        problems: [{{M: 8, N: 8, K: 8}}]
        kernels:
          - template: styled
            parameters: {{STYLE: [{json.dumps(value)}]}}
        """))


@pytest.mark.parametrize("value", ["plain\nint main() { return 0; }", "fast; system(\"id\")", "*/ x /*", "slow"])
def test_a_text_value_outside_the_familys_declaration_is_refused_with_its_field(tmp_path, value):
    path = _styled_experiment(tmp_path, _text_family(tmp_path), value)
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    assert "kernels[0].parameters.STYLE[0]" in str(caught.value)


def test_a_family_pattern_admits_more_tokens_but_never_free_text(tmp_path):
    folder = _text_family(tmp_path, pattern=r"[a-z]+")
    experiment = load_experiment(_styled_experiment(tmp_path, folder, "slow"))
    assert experiment.kernels[0].values["STYLE"] == ("slow",)
    with pytest.raises(ExperimentError, match="not a single token"):
        load_experiment(_styled_experiment(tmp_path, folder, "slow\n#include </etc/passwd>"))


def test_rendering_refuses_free_text_even_where_validation_was_skipped(tmp_path):
    discovery.use_family_dirs([_text_family(tmp_path)])
    config = Config.make(Problem(8, 8, 8), "styled", "float32", {"STYLE": "plain\nint evil;"})
    with pytest.raises(ValueError, match="not single tokens"):
        render(config)
    assert "// plain\n" in render(Config.make(Problem(8, 8, 8), "styled", "float32", {"STYLE": "plain"}))


def test_an_integer_beyond_a_c_int_is_refused(tmp_path):
    path = _experiment(tmp_path, EXPERIMENT.replace("TILE_WIDTH: [16]", f"TILE_WIDTH: [{2**63}]"))
    with pytest.raises(ExperimentError, match=r"kernels\[0\].parameters.TILE_WIDTH\[0\]"):
        load_experiment(path)


# --- run folders --------------------------------------------------------------------------------------------

def _planted_folder(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of a recorded run folder whose metadata names a folder of 'families' that would leave a mark."""
    marker = tmp_path / "imported"
    evil = tmp_path / "evil"
    evil.mkdir()
    (evil / "tiled2.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    (evil / "helper.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    run = tmp_path / "run"
    shutil.copytree(RECORDING, run)
    metadata = json.loads((run / "metadata.json").read_text())
    metadata["experiment"]["template_dirs"] = [str(evil)]
    metadata["experiment"]["source"] = metadata["experiment"].get("source", "") + f"\ntemplate_dirs: [{evil}]\n"
    for env in metadata.get("environments", {}).values():
        env["template_dirs"] = [str(evil)]
    (run / "metadata.json").write_text(json.dumps(metadata))
    return run, marker


@pytest.mark.slow
def test_opening_a_report_never_runs_code_a_run_folder_names(tmp_path):
    run, marker = _planted_folder(tmp_path)
    done = run_cli("report", str(run), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    assert (run / "report.html").is_file()


@pytest.mark.slow
def test_replaying_and_comparing_a_run_folder_never_runs_its_code(tmp_path):
    run, marker = _planted_folder(tmp_path)
    done = run_cli("compare", str(run), "--repeats", "2", "--budgets", "5", "--strategies", "random",
                   "--jobs", "1", "--out", str(tmp_path / "cmp"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    done = run_cli("run", str(ROOT / "experiments" / "fermi_like.yaml"), "--replay", str(run), "--trials", "3",
                   "--no-report", "--quiet", "--out", str(tmp_path / "replayed"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()


def test_a_stored_template_renders_in_the_sandbox_only():
    config = Config.make(Problem(8, 8, 8), "x", "float32", {"T": 4})
    assert render_stored(config, "{{ header }}\nint t = {{ T }};\n", "x.cu.j2", "abc").endswith("int t = 4;\n")
    with pytest.raises(Exception, match="unsafe|not safely callable|has no attribute"):
        render_stored(config, "{{ ''.__class__.__mro__[1].__subclasses__() }}", "x.cu.j2", "abc")


def test_a_family_from_a_folder_is_recorded_as_data():
    discovery.use_family_dirs([ROOT / "examples" / "transpose" / "families"])
    record = discovery.folder_family_records()["transpose"]
    assert record["parameters"] == ["VARIANT", "TILE", "BLOCK_ROWS", "PAD"]
    assert record["template"] == (ROOT / "examples/transpose/families/transpose.cu.j2").read_text()
    assert "tiled" not in discovery.folder_family_records()  # the package's own families need no copy


def test_a_family_unknown_here_is_shown_from_the_runs_copy_of_its_template(tmp_path):
    """A run folder of a family from a folder that is gone: the report renders its best kernels from the copy of
    the template the run stored, in the sandbox, and imports nothing."""
    import pandas as pd

    from tuner.report.run_folder import load_run
    from tuner.report.source import best_sources

    run_dir = tmp_path / "run"
    shutil.copytree(RECORDING, run_dir)
    table = pd.read_parquet(run_dir / "results.parquet")
    table["family"] = table["family"].replace({"tiled": "mytiled"})
    table.to_parquet(run_dir / "results.parquet")
    metadata = json.loads((run_dir / "metadata.json").read_text())
    template = (ROOT / "kernel_templates" / "tiled.cu.j2").read_text()
    for env in metadata["environments"].values():
        env["families"] = {"mytiled": {"parameters": ["TILE_WIDTH"], "template_file": "mytiled.cu.j2",
                                       "template": template, "target": "cuda", "description": "copy"}}
    (run_dir / "metadata.json").write_text(json.dumps(metadata))
    sources = {entry.title.split()[0]: entry for entry in best_sources(load_run(run_dir))}
    assert "#define TILE_WIDTH" in (sources["mytiled"].source or "")
    assert any("copy of the template" in note for note in sources["mytiled"].notes)


# --- temporary files ----------------------------------------------------------------------------------------

def test_no_write_follows_a_link_planted_in_the_output_folder(tmp_path):
    import pandas as pd

    from tuner.results import table as results

    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    out = tmp_path / "out"
    out.mkdir()
    for name in ("results.csv", "results.parquet", "metadata.json", "report.html", "roofline.png"):
        os.symlink(victim, out / f".{name}.partial")
    results.save(pd.DataFrame({"a": [1]}), {"x": 1}, out)
    assert victim.read_text() == "keep me\n"
    assert (out / "results.csv").is_file() and not (out / "results.csv").is_symlink()
