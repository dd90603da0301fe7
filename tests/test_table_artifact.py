"""The kernel table's folder built from recorded runs: the fastest ok row per shape and dtype with its baseline
ratio, device, toolkit, run and template hash; written atomically under the umask; a hostile table refused."""

from __future__ import annotations

import json
import os
import shutil
import stat
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from tests.test_file_modes import umask  # noqa: F401  (fixture)
from tuner.config import Config, Problem
from tuner.errors import TunerError
from tuner.kernels.discovery import template_text_hash
from tuner.kernels.render import render
from tuner.results import table as results
from tuner.table.artifact import TABLE_JSON, KernelTable, read_table, write_table
from tuner.table.build import KEPT_PER_SHAPE, build_table

SGEMM = Path("experiments/data/h100_sgemm_h100")
ENERGY = Path("experiments/data/h100_sgemm_energy_h100")
FERMI = Path("experiments/data/fermi_like_h100")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    table, sources = build_table([SGEMM, FERMI])
    folder = tmp_path_factory.mktemp("table")
    write_table(folder, table, sources)
    return table, folder


def test_each_entry_is_the_fastest_ok_row_of_its_shape_and_dtype_with_its_context(built, root):
    table, _ = built
    df, metadata = results.load(root / SGEMM)
    best = results.best_rows(df)
    assert len(table.entries) == len(best) + 2  # fermi_like adds two shapes; its 4096³ is slower
    environment = next(iter(metadata["environments"].values()))
    for _, row in best.iterrows():
        entry = table.entry(Problem(int(row["M"]), int(row["N"]), int(row["K"])), str(row["dtype"]))
        assert entry is not None and entry.run == str(SGEMM)
        assert entry.family == row["family"] and entry.time_median_ms == row["time_median_ms"]
        assert entry.params == {k: v for k, v in results.config_of_row(row).params}
        baseline = df[(df["family"] == "baseline") & (df["problem"] == row["problem"]) & (df["dtype"] == row["dtype"])]
        assert entry.baseline_ratio == pytest.approx(baseline["time_median_ms"].iloc[0] / row["time_median_ms"])
        assert entry.tflops == pytest.approx(2 * row["M"] * row["N"] * row["K"] / row["time_median_ms"] / 1e9)
        assert (entry.device_name, entry.compute_capability, entry.multiprocessors) == (
            environment["device"]["name"], "9.0", environment["device"]["multiprocessors"])
        assert entry.toolkit == environment["versions"]["nvcc"]
        assert entry.template_hash == environment["template_texts"][entry.family]
        assert entry.cubin is None


def test_the_folder_holds_each_entrys_source_and_reads_back_whole(built):
    table, folder = built
    assert read_table(folder) == table
    for entry in table.entries:
        config = Config.make(entry.problem, entry.family, entry.dtype, entry.params)
        assert (folder / entry.source).read_text() == render(config)
        assert entry.source_template_hash == template_text_hash(entry.family)
    assert not [p for p in folder.iterdir() if p.name.endswith(".partial")]


def test_each_entry_keeps_the_next_fastest_distinct_configurations_of_its_shape(built, root):
    table, folder = built
    assert _index(folder)["format_version"] == 2
    ok = pd.concat(results.load(root / run)[0] for run in (SGEMM, FERMI))
    ok = ok[(ok["status"] == "ok") & (ok["family"] != "baseline")]
    for entry in table.entries:
        mine = ok[(ok["problem"] == entry.problem.label) & (ok["dtype"] == entry.dtype)]
        fastest = mine.groupby("config_key")["time_median_ms"].min().sort_values()
        times = [a.time_median_ms for a in entry.alternatives]
        assert times == fastest.iloc[1:KEPT_PER_SHAPE].tolist() and times == sorted(times)
        keys = [Config.make(entry.problem, a.family, entry.dtype, a.params).key for a in entry.alternatives]
        assert keys == fastest.index[1:KEPT_PER_SHAPE].tolist()


def test_a_table_of_format_1_is_read_without_alternatives(built, tmp_path):
    table, folder = built
    older = _rewritten(tmp_path, folder, lambda d: [d.update(format_version=1)]
                       + [e.pop("alternatives") for e in d["entries"]])
    assert read_table(older) == replace(table, entries=tuple(replace(e, alternatives=()) for e in table.entries))


def test_where_several_runs_tuned_a_shape_the_faster_wins():
    one, _ = build_table([SGEMM])
    other, _ = build_table([ENERGY])
    both, _ = build_table([SGEMM, ENERGY])
    for entry in both.entries:
        times = [e.time_median_ms for t in (one, other) if (e := t.entry(entry.problem, entry.dtype))]
        assert entry.time_median_ms == min(times)
        assert entry.run == str(SGEMM if entry.time_median_ms == times[0] else ENERGY)


@pytest.mark.parametrize("mask", [0o022, 0o077])
def test_the_files_take_the_mode_the_umask_gives(built, tmp_path, umask, mask):  # noqa: F811
    table, _ = built
    os.umask(mask)
    write_table(tmp_path / "t", replace(table, entries=table.entries[:1]), {table.entries[0].source: "source"})
    for name in (TABLE_JSON, table.entries[0].source):
        assert stat.S_IMODE((tmp_path / "t" / name).stat().st_mode) == 0o666 & ~mask


def _index(folder: Path) -> dict:
    return json.loads((folder / TABLE_JSON).read_text())


def _rewritten(tmp_path: Path, folder: Path, change) -> Path:
    document = _index(folder)
    change(document)
    target = tmp_path / "hostile"
    target.mkdir()
    (target / TABLE_JSON).write_text(json.dumps(document))
    return target


@pytest.mark.parametrize("change, words", [
    (lambda d: d.update(format_version=3), "format_version is 3, a format this version cannot read"),
    (lambda d: d.update(format_version=True), "format_version is True, a format this version cannot read"),
    (lambda d: d["entries"][0].update(alternatives={"a": 1}), "entries[0].alternatives is not a list"),
    (lambda d: d["entries"][0]["alternatives"][0].update(time_median_ms=0), "alternatives[0].time_median_ms is not"),
    (lambda d: d["entries"][0]["alternatives"][0].update(run="x"), "alternatives[0] has the unknown field(s) run"),
    (lambda d: d["entries"][0]["alternatives"][0]["params"].update(BM=None), "alternatives[0].params.BM is not a"),
    (lambda d: d.pop("format_version"), "format_version is None"),
    (lambda d: d["entries"][0].update(source="../../etc/passwd"), "entries[0].source is not a plain file name"),
    (lambda d: d["entries"][0].update(cubin=".hidden"), "entries[0].cubin is not a plain file name"),
    (lambda d: d["entries"][0].update(M=True), "entries[0].M is True, not a int"),
    (lambda d: d["entries"][0].update(time_median_ms=-1.0), "a time that is not positive"),
    (lambda d: d["entries"][0].update(code="import os"), "entries[0] has the unknown field(s) code"),
    (lambda d: d["entries"][0]["params"].update(BM=[1]), "entries[0].params.BM is not a number"),
    (lambda d: d["entries"].append(d["entries"][0]), "lists a shape and dtype twice"),
    (lambda d: d.update(entries={"a": 1}), "entries or runs is not a list"),
])
def test_a_hostile_table_is_refused_in_one_paragraph(built, tmp_path, change, words):
    _, folder = built
    target = _rewritten(tmp_path, folder, change)
    with pytest.raises(TunerError) as refused:
        read_table(target)
    assert words in str(refused.value) and "\n" not in str(refused.value)
    assert str(refused.value).startswith(str(target / TABLE_JSON))


def test_a_truncated_or_deeply_nested_table_is_refused(built, tmp_path):
    _, folder = built
    text = (folder / TABLE_JSON).read_text()
    (tmp_path / TABLE_JSON).write_text(text[: len(text) // 2])
    with pytest.raises(TunerError, match="is not JSON"):
        read_table(tmp_path)
    (tmp_path / TABLE_JSON).write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(TunerError, match="is not JSON|top level"):
        read_table(tmp_path)


def test_a_write_that_fails_is_named_and_the_former_table_kept(built, tmp_path):
    table, _ = built
    target = tmp_path / "kept"
    write_table(target, table, {})
    before = (target / TABLE_JSON).read_text()
    (target / "blocked.cu").mkdir()  # a source cannot replace a folder
    with pytest.raises(TunerError, match="cannot be written here.*left whole"):
        write_table(target, KernelTable(table.entries[:1]), {"blocked.cu": "source"})
    assert (target / TABLE_JSON).read_text() == before
    assert not [p for p in target.iterdir() if p.name.endswith(".partial")]
    with pytest.raises(TunerError, match="cannot be written here"):
        write_table(target / TABLE_JSON / "inside", table, {})


def test_a_run_whose_metadata_is_hostile_still_gives_its_rows_without_the_context(root, tmp_path):
    from tuner.table.evaluations import recorded

    run = tmp_path / "run"
    shutil.copytree(root / FERMI, run)
    metadata = json.loads((run / "metadata.json").read_text())
    metadata["environments"] = {key: {"device": "GPU", "versions": [1], "template_texts": 5}
                                for key in metadata["environments"]}
    (run / "metadata.json").write_text(json.dumps(metadata))
    table, _ = build_table([run])
    assert len(table.entries) == 3
    assert all(e.compute_capability is None and e.toolkit is None and e.template_hash is None for e in table.entries)
    runs = recorded([run])
    assert runs.multiprocessors is None and runs.arch is None and runs.times
    (run / "metadata.json").write_text("[1, 2]")
    assert build_table([run])[0].entries[0].multiprocessors is None
