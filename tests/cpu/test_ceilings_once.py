"""The CPU's ceilings are measured once per machine, also on a busy one: kept with the load they were measured
under, reused by the runs that follow (which say what they are worth), measured again only when asked
(``remeasure_ceilings``, ``--remeasure-ceilings``), and never measured without saying so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import tuner
from tests.scripted_backend import ScriptedBackend
from tests.test_machine_load import _Busy, _ceilings
from tuner import cli
from tuner.backends.abilities import Ability
from tuner.backends.cpu import ceilings, summary
from tuner.errors import TunerError
from tuner.measure.machine_load import LoadMeter
from tuner.tuning import run as tuning

ROOT = Path(__file__).resolve().parents[2]
FERMI = ROOT / "experiments" / "fermi_like.yaml"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("TUNER_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def measured(monkeypatch) -> list[int]:
    """One entry each time the ceilings are measured."""
    calls: list[int] = []
    real = ceilings.measure_ceilings
    monkeypatch.setattr(ceilings, "measure_ceilings", lambda *a, **k: calls.append(1) or real(*a, **k))
    return calls


def test_ceilings_measured_on_a_busy_machine_are_reused_and_said_to_read_low(cache, measured, capsys):
    first, said = _ceilings(1.0, capsys)
    assert measured == [1] and first["ceilings"]["load"]["under_load"] is True
    assert said.startswith("measuring this CPU's ceilings") and "cached in" in said
    busy = LoadMeter(counters=_Busy(1.0))
    again = summary.summary(load=busy)  # a quiet run: no progress asked
    assert measured == [1] and again["by_threads"] == first["by_threads"]
    assert capsys.readouterr().err == ""
    summary.summary(load=busy, progress=True)
    note = capsys.readouterr().err
    assert note.startswith("note: the CPU's ceilings cached in") and "read low" in note and "--remeasure" in note
    text = " ".join(summary.format_summary(again).split())
    assert "UNDER LOAD" in text and "not cached" not in text and "cached in" in text


def test_measuring_the_ceilings_is_said_even_when_no_progress_is_asked(cache, measured, capsys):
    _ceilings(0.0, capsys)
    _, said = _ceilings(0.0, capsys)  # _ceilings asks to measure again, without progress
    assert measured == [1, 1] and said.count("measuring this CPU's ceilings") == 1


class DescribedBackend(ScriptedBackend):
    """The scripted stand-in with a device whose ceilings it is asked to measure again (counted, never measured)."""

    abilities = frozenset({Ability.DESCRIBES_DEVICE})

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[bool] = []

    def device(self, remeasure: bool = False) -> dict[str, Any]:
        self.asked.append(remeasure)
        return {}


def test_a_run_measures_the_ceilings_again_only_when_asked(tmp_path, monkeypatch):
    backend = DescribedBackend()
    tuner.run(FERMI, backend=backend, trials=2, out=tmp_path / "plain", quiet=True, report=False)
    assert True not in backend.asked
    monkeypatch.setattr(tuning, "open_backends", lambda *args, **options: [backend])
    assert cli.main(["run", str(FERMI), "--trials", "2", "--out", str(tmp_path / "cli"), "--quiet", "--no-report",
                     "--remeasure-ceilings"]) == 0
    assert backend.asked[:1] == [True]


def test_a_replayed_run_refuses_to_measure_ceilings_naming_the_option(tmp_path):
    with pytest.raises(TunerError, match=r"^remeasure_ceilings measures the ceilings .* the replay backend has none"):
        tuner.run(FERMI, backend="replay", trials=2, out=tmp_path / "replayed", quiet=True, report=False,
                  remeasure_ceilings=True)
    assert not (tmp_path / "replayed").exists()
