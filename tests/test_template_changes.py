"""A run's source view and counters say a template changed only when its text did: a declaration module that
changed beside an unchanged template (its docstring, its cost model) is no change of the source that ran."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import tuner
from tuner.kernels.discovery import changed_template, template_hash, template_text_hash

ROOT = Path(__file__).resolve().parent.parent


def test_the_template_texts_are_compared_where_they_are_recorded():
    text, both = template_text_hash("tiled"), template_hash("tiled")
    assert changed_template({"templates": {"tiled": "0" * 16}, "template_texts": {"tiled": text}}, "tiled") is None
    assert changed_template({"templates": {"tiled": both}, "template_texts": {"tiled": "0" * 16}},
                            "tiled") == ("0" * 16, text)
    assert changed_template({"templates": {"tiled": "0" * 16}}, "tiled") == ("0" * 16, both)  # a run written before
    assert changed_template({"templates": {"tiled": both}}, "tiled") is None
    assert changed_template({}, "tiled") is None


@pytest.mark.slow  # a replayed run of the H100 experiment with its whole report
def test_replaying_the_shipped_recording_shows_no_changed_template(tmp_path):
    experiment = tuner.load_experiment(ROOT / "experiments" / "h100_sgemm.yaml")
    out = tmp_path / "replayed"
    tuner.run(experiment, backend="replay", replay=ROOT / "experiments" / "data" / "h100_sgemm_h100",
              strategy="random", trials=2, out=out, quiet=True)
    page = (out / "report.html").read_text()
    assert "<pre" in page or "source" in page  # the kernels' sources are shown
    assert "changed since this run" not in page
    shutil.rmtree(out)
