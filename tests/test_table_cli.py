"""``python -m tuner table``: a workload tuned on the replay backend into a table, shown and asked for a shape it
never tuned; bad input exits 2 with one paragraph."""

from __future__ import annotations

import json

import pytest

from tests.conftest import ROOT
from tuner import cli
from tuner.table.artifact import TABLE_JSON, read_table

WORKLOAD = [{"M": 1024, "N": 1024, "K": 1024, "dtype": "float32"}, {"M": 1000, "N": 777, "K": 333, "dtype": "float32"}]


def test_a_workload_is_tuned_into_a_table_that_answers_a_new_shape(recording, tmp_path, capsys):
    workload = tmp_path / "mlp.json"
    workload.write_text(json.dumps(WORKLOAD))
    assert cli.main(["table", "experiment", str(workload), "--base", "experiments/fermi_like.yaml",
                     "--out", str(tmp_path / "experiments")]) == 0
    experiment = tmp_path / "experiments" / "mlp_float32.yaml"
    assert str(experiment) in capsys.readouterr().out
    assert cli.main(["run", str(experiment), "--backend", "replay", "--replay", str(recording), "--out",
                     str(tmp_path / "run"), "--trials", "6", "--quiet", "--no-report"]) == 0
    assert cli.main(["table", "build", str(tmp_path / "run"), "--out", str(tmp_path / "table")]) == 0
    table = read_table(tmp_path / "table")
    assert sorted(e.problem.label for e in table.entries) == ["1000x777x333", "1024x1024x1024"]
    assert all((tmp_path / "table" / e.source).is_file() for e in table.entries)
    assert all(e.cubin is None for e in table.entries)  # a replayed run records no compute capability
    capsys.readouterr()
    assert cli.main(["table", "show", str(tmp_path / "table")]) == 0
    shown = capsys.readouterr().out
    assert "1000x777x333" in shown and "2 entries from" in shown
    assert cli.main(["table", "predict", str(tmp_path / "table"), "2000", "1500", "700", "float32"]) == 0
    answer = capsys.readouterr().out
    assert "why: predicted, never measured on this shape: least estimated time" in answer
    assert cli.main(["table", "predict", str(tmp_path / "table"), "2000", "1500", "700", "float32",
                     "--evaluations"]) == 0
    assert "why: predicted, never measured on this shape" in capsys.readouterr().out
    assert cli.main(["table", "predict", str(tmp_path / "table"), "1024", "1024", "1024", "float32"]) == 0
    assert "why: tuned on this shape" in capsys.readouterr().out


def test_bad_input_exits_2_in_one_paragraph(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)  # the experiments the commands name are the repository's
    workload = tmp_path / "w.csv"
    workload.write_text("M,N,K,dtype\n1,2,three,float32\n")
    good = tmp_path / "my workload.json"
    good.write_text(json.dumps(WORKLOAD))
    (tmp_path / "a_file").write_text("")
    hostile = tmp_path / "hostile"
    hostile.mkdir()
    (hostile / TABLE_JSON).write_text(json.dumps({"format_version": 99, "entries": []}))
    for args, words in (
        (["experiment", str(workload), "--base", "experiments/fermi_like.yaml", "--out", str(tmp_path)],
         f"{workload}: row 2, field K: expected an integer"),
        (["predict", str(hostile), "64", "64", "64", "float32"], "format_version is 99"),
        (["build", str(tmp_path), "--out", str(tmp_path / "t")], "no results.parquet here"),
        (["experiment", str(good), "--base", "experiments/fermi_like.yaml", "--out", str(tmp_path / "a_file")],
         f"{tmp_path / 'a_file'}: cannot write my_workload_float32.yaml here"),
        (["holdout", "experiments/data/fermi_like_h100", "--out", str(tmp_path), "--name", "../up"],
         "expected a plain file stem"),
    ):
        assert cli.main(["table", *args]) == 2
        stderr = capsys.readouterr().err
        last = stderr.strip().splitlines()[-1]  # after any progress line
        assert last.startswith("error: ") and words in last and "Traceback" not in stderr


def test_holdout_writes_its_report_and_record(tmp_path, capsys):
    assert cli.main(["table", "holdout", "experiments/data/fermi_like_h100", "--out", str(tmp_path),
                     "--name", "held"]) == 0
    assert "3 of 3 held-out shapes scored" in capsys.readouterr().out
    record = json.loads((tmp_path / "held.json").read_text())
    assert len(record["rows"]) == 6 and (tmp_path / "held.txt").is_file()
    assert all(r["share_of_best"] <= 1 for r in record["rows"])


@pytest.mark.slow  # nvcc, a wgmma kernel among them
def test_a_table_holds_each_kernel_compiled_for_the_gpu_it_was_tuned_on(tmp_path, capsys):
    runs = ["experiments/data/fermi_like_h100", "experiments/data/h100_wgmma_exhaustive"]
    assert cli.main(["table", "build", *runs, "--out", str(tmp_path / "table")]) == 0
    assert "4 cubin(s)" in capsys.readouterr().out
    table = read_table(tmp_path / "table")
    archs = sorted(e.cubin.rsplit(".", 2)[1] for e in table.entries)
    assert archs == ["sm_90", "sm_90", "sm_90", "sm_90a"]  # wgmma runs only where it was built for
    assert all((tmp_path / "table" / e.cubin).read_bytes()[:4] == b"\x7fELF" for e in table.entries)
    assert cli.main(["table", "build", *runs, "--out", str(tmp_path / "plain"), "--no-cubins"]) == 0
    assert all(e.cubin is None for e in read_table(tmp_path / "plain").entries)
