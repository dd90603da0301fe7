"""A misspelt key, parameter, template, dtype, strategy or objective gets a "did you mean" naming the closest
known one; a name like none of them gets none."""

from __future__ import annotations

import pytest

from tests.test_experiment_errors import VALID
from tuner import cli
from tuner.errors import ExperimentError, did_you_mean
from tuner.experiment.schema import load_experiment

MISSPELT = [
    (VALID.replace("TILE_WIDTH", "TILE_WIDHT"), "unknown key 'TILE_WIDHT' (did you mean 'TILE_WIDTH'?)"),
    (VALID.replace("template: tiled", "template: tield"), "unknown template 'tield' (did you mean 'tiled'?)"),
    (VALID.replace("[float32]", "[flaot32]"), "(did you mean 'float32'?)"),
    (VALID.replace("kernels:", "serach: {trials: 3}\nkernels:"), "unknown key 'serach' (did you mean 'search'?)"),
    (VALID + "search: {strategy: annealling}\n", "(did you mean 'annealing'?)"),
    (VALID + "search: {objective: enrgy}\n", "(did you mean 'energy'?)"),
]


@pytest.mark.parametrize(("text", "words"), MISSPELT)
def test_a_misspelt_name_in_an_experiment_file_gets_the_closest_known_one(tmp_path, text, words):
    path = tmp_path / "e.yaml"
    path.write_text(text)
    with pytest.raises(ExperimentError) as raised:
        load_experiment(path)
    assert words in str(raised.value)


def test_the_command_line_says_it_too(tmp_path, capsys):
    path = tmp_path / "e.yaml"
    path.write_text(MISSPELT[0][0])
    assert cli.main(["space", str(path)]) == 2
    assert "did you mean 'TILE_WIDTH'?" in capsys.readouterr().err


def test_only_a_close_name_is_suggested():
    assert did_you_mean("tile_width", ["TILE_WIDTH", "dtype"]) == " (did you mean 'TILE_WIDTH'?)"
    assert did_you_mean("zzz", ["TILE_WIDTH", "dtype"]) == ""
    assert did_you_mean(16, ["TILE_WIDTH"]) == ""
