"""Run folders the report must survive: a report with notes, or exit 2 with one paragraph, never a traceback.

The folders are made from the report tests' fixture (tests/test_report.py) and by ``python -m tuner run`` on the
replay backend; each is then damaged the way a hand-edited or interrupted folder can be.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import run_cli
from test_report import build_run_folder

from tuner.report import REPORT_PARTS, PartTime, write_report
from tuner.report.run_folder import load_run
from tuner.results import table as results

ROOT = Path(__file__).resolve().parent.parent
FERMI = ROOT / "experiments/fermi_like.yaml"


@pytest.fixture(scope="module")
def fixture_folder(tmp_path_factory) -> Path:
    return build_run_folder(tmp_path_factory.mktemp("inputs_run"))


def _copy(source: Path, target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    for name in (results.RESULTS_PARQUET, results.METADATA_JSON):
        shutil.copy(source / name, target / name)
    return target


def _notes(folder: Path) -> list[str]:
    page = (folder / "report.html").read_text()
    return [html.unescape(re.sub(r"<[^>]+>", "", n)) for n in re.findall(r'<p class="note">(.*?)</p>', page, re.S)]


def _reported(folder: Path) -> list[str]:
    """``python -m tuner report`` on the folder: it must succeed; the page's notes."""
    done = run_cli("report", str(folder))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert Path(done.stdout.splitlines()[-1]) == folder / "report.html"
    return _notes(folder)


@pytest.mark.slow
def test_only_baseline_rows_make_a_report_that_says_nothing_was_evaluated(tmp_path, fixture_folder):
    df, metadata = results.load(fixture_folder)
    results.save(df[df["family"] == results.BASELINE_FAMILY], metadata, tmp_path)
    notes = _reported(tmp_path)
    assert any(n.startswith("Nothing was evaluated successfully: the results table holds no evaluation of a tuned "
                            "kernel, only 2 cuBLAS baseline row(s).") for n in notes)
    assert not list(tmp_path.glob("*.png"))


@pytest.mark.slow
def test_a_run_stopped_by_its_time_budget_before_any_trial(tmp_path, recording):
    out = tmp_path / "run"
    done = run_cli("run", str(FERMI), "--backend", "replay", "--replay", str(recording), "--timeout", "1e-9",
                   "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    assert "nothing was evaluated" in done.stdout and "warning" not in done.stderr
    notes = _reported(out)
    assert any(n.startswith("Nothing was evaluated successfully") for n in notes)


@pytest.mark.slow
def test_a_table_without_rows_is_a_one_paragraph_error(tmp_path, fixture_folder):
    df, metadata = results.load(fixture_folder)
    results.save(df.head(0), metadata, tmp_path)
    done = run_cli("report", str(tmp_path))
    assert done.returncode == 2 and done.stdout == ""
    message = done.stderr.strip()
    assert message.startswith("error: ") and "\n" not in message and "Traceback" not in message
    assert str(tmp_path / results.RESULTS_PARQUET) in message and "no rows" in message


DAMAGED_METADATA = [
    ("[]", "holds a list, not the mapping"),
    ("null", "holds the value null, not the mapping"),
    ("3", "holds the number 3, not the mapping"),
    ('"text"', "holds a string, not the mapping"),
    ("{", "cannot be read (Expecting property name"),
    ('{"experiment": [], "environments": {"env-0": {"peaks": [1], "device": "GPU"}}, "runs": {}}',
     "field 'experiment' is a list, not a mapping"),
]


@pytest.mark.parametrize(("content", "described"), DAMAGED_METADATA)
def test_damaged_metadata_is_left_out_with_a_note(tmp_path, fixture_folder, content, described):
    folder = _copy(fixture_folder, tmp_path)
    (folder / results.METADATA_JSON).write_text(content)
    run = load_run(folder)
    assert any(described in n and str(folder / results.METADATA_JSON) in n for n in run.notes), run.notes
    assert run.machine_models == ()  # they come from the experiment in metadata.json


@pytest.mark.parametrize("content", [DAMAGED_METADATA[0][0], DAMAGED_METADATA[-1][0]])
@pytest.mark.slow
def test_a_report_despite_damaged_metadata(tmp_path, fixture_folder, content):
    folder = _copy(fixture_folder, tmp_path)
    (folder / results.METADATA_JSON).write_text(content)
    notes = _reported(folder)
    assert any(results.METADATA_JSON in n for n in notes)
    assert (folder / "roofline.png").is_file()


@pytest.mark.slow
def test_each_damaged_field_of_the_metadata_is_named(tmp_path, fixture_folder):
    folder = _copy(fixture_folder, tmp_path)
    metadata = json.loads((folder / results.METADATA_JSON).read_text())
    metadata["environments"]["env-0"]["peaks"]["measured"] = "fast"
    metadata["environments"]["env-0"]["device"] = ["Fixture GPU"]
    metadata["runs"] = "twice"
    (folder / results.METADATA_JSON).write_text(json.dumps(metadata))
    run = load_run(folder)
    assert "env-0" in run.environments and "device" not in run.environments["env-0"]
    assert run.environments["env-0"]["peaks"]["theoretical"]["float32_gflops"] == 66900.0
    fields = [re.search(r"field '([^']+)'", n).group(1) for n in run.notes if "field '" in n]
    assert fields == ["environments.env-0.device", "environments.env-0.peaks.measured", "runs"]
    assert (folder / "report.html") in write_report(folder, quiet=True)


@pytest.mark.slow
def test_a_corrupted_optuna_storage_does_not_touch_the_report(tmp_path, fixture_folder):
    """The report reads the results table alone: the importances come from its rows, not from the storage."""
    folder = _copy(fixture_folder, tmp_path)
    (folder / "study.db").write_bytes(b"SQLite format 3\x00" + b"\x13" * 4096)
    (folder / "study.log").write_bytes(b'{"op_code": 0, "study_na\x13\x13\n' * 64)
    notes = _reported(folder)
    assert (folder / "importances.png").is_file()
    assert not any("study.db" in n or "study.log" in n for n in notes)


@pytest.mark.slow
def test_a_replayed_run_says_whose_environment_it_shows(tmp_path, recording):
    out = tmp_path / "run"
    done = run_cli("run", str(FERMI), "--backend", "replay", "--replay", str(recording), "--trials", "3",
                   "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stderr
    page = html.unescape((out / "report.html").read_text())
    assert f"Every run into this folder replayed recorded measurements ({recording})" in page
    assert re.search(r"<h3>Environment [0-9a-f]+ \(of the recording\)</h3>", page)
    assert f"replay of {recording}" in page  # the runs table
    assert "scripted stand-in (test double)" in page  # the recording's device, named as such


@pytest.mark.slow
def test_the_report_can_time_its_parts(fixture_folder):
    timings: dict[str, PartTime] = {}
    write_report(fixture_folder, quiet=True, timings=timings)
    assert list(timings) == list(REPORT_PARTS)
    assert all(part.wall_s >= 0 and part.cpu_s >= 0 for part in timings.values())
