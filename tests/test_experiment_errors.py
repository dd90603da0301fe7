"""Every mistake in an experiment file gets one paragraph naming the file and the field, and exit status 2."""

import textwrap

import pytest

from tests.conftest import run_cli
from tuner.errors import ExperimentError
from tuner.experiment import load_experiment

VALID = """\
name: t
problems:
  - {M: 64, N: 64, K: 64}
kernels:
  - template: tiled
    parameters:
      TILE_WIDTH: [8, 16]
      dtype: [float32]
"""

# (case id, file text, the field the message must name, words the message must contain)
CASES = [
    ("unparseable", "name: t\nproblems: [ {M: 1\n", "", "not valid YAML"),
    ("empty", "", "", "is empty"),
    ("comments only", "# nothing\n", "", "is empty"),
    ("top-level list", "- name: t\n", "", "expected a mapping"),
    ("missing name", VALID.replace("name: t\n", ""), "", "missing required key 'name'"),
    ("missing kernels", VALID.split("kernels:")[0], "", "missing required key 'kernels'"),
    ("unknown top key", VALID + "serach: {trials: 3}\n", "serach", "unknown key 'serach'"),
    ("unknown problem key", VALID.replace("K: 64}", "K: 64, L: 1}"), "problems[0].L", "unknown key 'L'"),
    ("unknown kernel key", VALID.replace("  - template: tiled", "  - template: tiled\n    tile: 3"),
     "kernels[0].tile", "unknown key 'tile'"),
    ("unknown parameter", VALID.replace("TILE_WIDTH:", "TILE_WIDHT:"), "kernels[0].parameters.TILE_WIDHT",
     "unknown key 'TILE_WIDHT'"),
    ("unknown search key", VALID + "search: {trails: 3}\n", "search.trails", "unknown key 'trails'"),
    ("unknown measure key", VALID + "measure: {flush: false}\n", "measure.flush", "unknown key 'flush'"),
    ("name wrong type", VALID.replace("name: t", "name: [t]"), "name", "expected non-empty text"),
    ("problems not a list", VALID.replace("problems:\n  - {M: 64, N: 64, K: 64}", "problems: 64"), "problems",
     "expected a non-empty list"),
    ("empty problems", VALID.replace("problems:\n  - {M: 64, N: 64, K: 64}", "problems: []"), "problems",
     "expected a non-empty list"),
    ("zero size", VALID.replace("M: 64", "M: 0"), "problems[0].M", "integer ≥ 1"),
    ("negative size", VALID.replace("K: 64", "K: -5"), "problems[0].K", "integer ≥ 1"),
    ("size as text", VALID.replace("N: 64", "N: big"), "problems[0].N", "integer ≥ 1"),
    ("size beyond 32-bit indices", VALID.replace("M: 64, N: 64, K: 64", "M: 100000, N: 100000, K: 8"),
     "problems[0]", "32-bit index"),
    ("duplicate problem", VALID.replace("  - {M: 64, N: 64, K: 64}", "  - {M: 64, N: 64, K: 64}\n"
                                        "  - {M: 64, N: 64, K: 64}"), "problems[1]", "listed twice"),
    ("unknown template", VALID.replace("template: tiled", "template: tilde"), "kernels[0].template",
     "unknown template 'tilde'"),
    ("unknown dtype", VALID.replace("[float32]", "[float16]"), "kernels[0].parameters.dtype[0]", "unknown dtype"),
    ("empty parameter list", VALID.replace("[8, 16]", "[]"), "kernels[0].parameters.TILE_WIDTH",
     "non-empty list"),
    ("parameter not a list", VALID.replace("[8, 16]", "16"), "kernels[0].parameters.TILE_WIDTH",
     "non-empty list"),
    ("parameter value of wrong type", VALID.replace("[8, 16]", "[8, sixteen]"),
     "kernels[0].parameters.TILE_WIDTH[1]", "integer"),
    ("repeated parameter value", VALID.replace("[8, 16]", "[8, 8]"), "kernels[0].parameters.TILE_WIDTH[1]",
     "listed twice"),
    ("impossible constraints", VALID.replace("[8, 16]", "[64, 128]"), "kernels[0].parameters",
     "threads per block"),
    ("unknown sampler", VALID + "search: {sampler: annealing}\n", "search.sampler", "one of tpe"),
    ("zero trials", VALID + "search: {trials: 0}\n", "search.trials", "integer ≥ 1"),
    ("boolean as number", VALID + "measure: {max_time_s: true}\n", "measure.max_time_s", "positive number"),
    ("max below min samples", VALID + "measure: {min_samples: 50, max_samples: 10}\n", "measure.max_samples",
     "at least min_samples"),
    ("bad arch", VALID + "compile: {arch: volta}\n", "compile.arch", "sm_90"),
    ("machine model missing bandwidth", VALID + "machine_models:\n  - {name: f, peak_gflops: {float32: 1000}}\n",
     "machine_models[0]", "missing required key 'bandwidth_gbs'"),
    ("machine model negative peak", VALID + "machine_models:\n  - {name: f, peak_gflops: {float32: -1}, "
     "bandwidth_gbs: 150}\n", "machine_models[0].peak_gflops.float32", "positive number"),
    ("duplicate key", VALID + "name: u\n", "name", "appears twice"),
    ("name with a slash", VALID.replace("name: t", "name: a/b"), "name", "folder name"),
]


@pytest.mark.parametrize(("text", "field", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_mistake_is_named(tmp_path, text, field, words):
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    message = str(caught.value)
    assert message.startswith(str(path))
    assert words in message
    assert caught.value.field == field
    assert "\n" not in message


def test_line_numbers_point_at_the_field(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text(VALID.replace("TILE_WIDTH: [8, 16]", "TILE_WIDTH: [8, -16]"))
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    assert caught.value.line == 7
    assert ", line 7:" in str(caught.value)


def test_missing_file_is_named(tmp_path):
    with pytest.raises(ExperimentError, match="no such file"):
        load_experiment(tmp_path / "absent.yaml")


def test_valid_file_loads_with_defaults(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text(VALID)
    experiment = load_experiment(path)
    assert experiment.search.sampler == "tpe"
    assert experiment.measure.flush_l2 is True
    assert experiment.compile.arch == "sm_90"
    assert experiment.kernels[0].values == {"TILE_WIDTH": (8, 16)}


def test_omitted_parameters_take_the_family_defaults(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text(textwrap.dedent("""\
        name: t
        problems: [{M: 8, N: 8, K: 8}]
        kernels: [{template: naive}]
        """))
    experiment = load_experiment(path)
    assert experiment.kernels[0].values == {"BLOCK_X": (16, 32), "BLOCK_Y": (4, 8, 16, 32)}
    assert experiment.kernels[0].dtypes == ("float32",)


@pytest.mark.parametrize("case", ["unparseable", "top-level list", "unknown parameter", "zero size",
                                  "unknown template", "unknown dtype", "impossible constraints"])
def test_cli_exits_2_with_one_paragraph(tmp_path, case):
    text = dict((c[0], c[1]) for c in CASES)[case]
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    result = run_cli("space", str(path))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}")


def test_cli_missing_experiment_file(tmp_path):
    result = run_cli("space", str(tmp_path / "nope.yaml"))
    assert result.returncode == 2
    assert "no such file" in result.stderr
