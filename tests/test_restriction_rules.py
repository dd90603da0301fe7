"""Restrictions of a kernel entry (YAML ``restrictions:``, ``KernelSpec(restrictions=...)``, ``tuner.tune``):
Python expressions over the parameters, parsed and checked, never run as code."""

from __future__ import annotations

from pathlib import Path

import pytest

import tuner
from tuner import cli
from tuner.errors import TunerError
from tuner.space.entry_space import KernelSpec, count_valid
from tuner.space.restriction_rules import restriction_refusal, restriction_rules

ENTRY = """name: restricted
problems:
  - {{M: 64, N: 64, K: 64}}
kernels:
  - template: tiled
    parameters: {{TILE_WIDTH: [8, 16, 32], dtype: [float32]}}
    restrictions: [{restriction}]
"""
MALICIOUS = ["__import__('os').system('touch HACKED')", "TILE_WIDTH.__class__", "open('x')", "[TILE_WIDTH]",
             "'text' == 'text'", "TILE_WIDTH ** 10000", "lambda: 0", "unknown_name > 1"]


@pytest.mark.parametrize("text", MALICIOUS)
def test_code_is_refused_as_a_restriction(text):
    refusal = restriction_refusal(text, ["TILE_WIDTH"])
    assert refusal is not None and "a restriction may only combine the parameters (TILE_WIDTH)" in refusal


@pytest.mark.parametrize("text", ["TILE_WIDTH <= 16\nimport os", "(TILE_WIDTH\n<= 16)", "TILE_WIDTH <= 16\r"])
def test_a_text_of_more_than_one_line_is_refused(text):
    assert "line break or another control character" in (restriction_refusal(text, ["TILE_WIDTH"]) or "")


def test_a_restriction_rejects_the_combinations_where_it_is_false():
    rule, = restriction_rules(["TILE_WIDTH * 2 <= 32 and not TILE_WIDTH == 4"], ["TILE_WIDTH"], "here")
    assert [rule.holds({"TILE_WIDTH": t}, "float32") for t in (4, 8, 16, 32)] == [False, True, True, False]
    total, valid, reasons = count_valid(KernelSpec("tiled", {"TILE_WIDTH": (8, 16, 32)}, ("float32",),
                                                   restrictions=("TILE_WIDTH <= 16",)))
    assert (total, valid) == (3, 2) and reasons["restriction TILE_WIDTH <= 16"] == 1


def test_a_division_by_zero_breaks_the_restriction_instead_of_raising():
    rule, = restriction_rules(["32 // (TILE_WIDTH - 8) > 1"], ["TILE_WIDTH"], "here")
    assert [rule.holds({"TILE_WIDTH": t}, "float32") for t in (8, 16)] == [False, True]


def test_yaml_restrictions_narrow_the_space(tmp_path, capsys):
    path = tmp_path / "good.yaml"
    path.write_text(ENTRY.format(restriction='"TILE_WIDTH <= 16"'))
    assert cli.main(["space", str(path)]) == 0
    out = capsys.readouterr().out
    assert "2 of 3 configurations satisfy" in out and "restriction TILE_WIDTH <= 16" in out


@pytest.mark.parametrize(("restriction", "words"), [
    ("\"__import__('os').system('touch HACKED')\"", "holds a call"),
    ('"TILE_WIDTH <= 16\\nimport os"', "line break"),
    ('"BLOCK <= 16"', "the name 'BLOCK', which is no parameter"),
    ("16", "must be an expression in text"),
])
def test_a_bad_yaml_restriction_is_one_paragraph_naming_file_and_field(tmp_path, monkeypatch, capsys, restriction,
                                                                       words):
    path = tmp_path / "bad.yaml"
    path.write_text(ENTRY.format(restriction=restriction))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", str(path), "--backend", "replay", "--out", str(tmp_path / "out")]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}, line 7: field 'kernels[0].restrictions[0]': ")
    assert words in lines[0]
    assert not (tmp_path / "HACKED").exists() and not (tmp_path / "out").exists()


def test_a_kernel_spec_built_in_python_is_checked_as_a_file_is(tmp_path):
    experiment = tuner.Experiment("restricted", (tuner.Problem(64, 64, 64),), kernels=(
        KernelSpec("tiled", {"TILE_WIDTH": (8, 16)}, ("float32",), restrictions=("open('x')",)),))
    with pytest.raises(TunerError, match=r"kernels\[0\]\.restrictions\[0\].*holds a call"):
        tuner.run(experiment, backend="replay", out=tmp_path / "out", quiet=True)


@pytest.mark.parametrize(("restrictions", "words"), [
    (["__import__('os')"], r"restrictions\[0\]: .*holds a call"),
    (["TILE <= 16", "TILE > 1\nimport os"], r"restrictions\[1\]: .*line break"),
    ("TILE <= 16", "a list of expressions, not one text"),
])
def test_tune_refuses_a_bad_restriction_naming_it_before_writing_anything(tmp_path, monkeypatch, restrictions,
                                                                          words):
    monkeypatch.setenv("TUNER_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(TunerError, match=words):
        tuner.tune(source="void matmul(const float* A, const float* B, float* C, int M, int N, int K) {}",
                   parameters={"TILE": [8, 16]}, restrictions=restrictions, problem=(8, 8, 8),
                   out=tmp_path / "out")
    assert not Path(tmp_path / "cache").exists() and not (tmp_path / "out").exists()
