"""Every mistake in an experiment file gets one paragraph naming the file and the field, and exit status 2."""

import textwrap

import pytest

from tests.conftest import run_cli
from tuner import cli
from tuner.errors import ExperimentError
from tuner.experiment.schema import load_experiment
from tuner.experiment.yaml_document import MAX_DEPTH

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

NAIVE = VALID.replace("template: tiled", "template: naive").replace("TILE_WIDTH: [8, 16]", "BLOCK_X: [0]")
MACHINE = "machine_models:\n  - {name: f, peak_gflops: {float32: 1000}, bandwidth_gbs: 150}\n"
# Nine aliases of nine aliases ... of nine strings: 9^10 strings from a few hundred bytes ("billion laughs").
LAUGHS = 'l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n' + "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 10))
SQUARE = """\
name: t
problems:
  - &square {M: 64, N: 64, K: 64}
  - <<: *square
    K: 128
kernels:
  - template: tiled
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
    ("a setting by its former name", VALID + "measure: {cold_caches: true, flush_l2: false}\n", "measure.flush_l2",
     "'flush_l2' is called 'cold_caches' now"),
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
    ("unknown dtype", VALID.replace("[float32]", "[float8]"), "kernels[0].parameters.dtype[0]", "unknown dtype"),
    ("tensor-core dtype on a CUDA-core family", VALID.replace("[float32]", "[bfloat16]"),
     "kernels[0].parameters.dtype[0]", "not supported by this template"),
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
    ("unknown strategy", VALID + "search: {strategy: anealing}\n", "search.strategy", "one of bo, ils"),
    ("the strategy under its former name", VALID + "search: {sampler: tpe, trials: 3}\n", "search.sampler",
     "'sampler' is called 'strategy' now"),
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
    ("name with a NUL", VALID.replace("name: t", 'name: "a\\0b"'), "name", "U+0000"),
    ("name with a line break", VALID.replace("name: t", 'name: "a\\nb"'), "name", "U+000A"),
    ("name with a tab", VALID.replace("name: t", 'name: "a\\tb"'), "name", "U+0009"),
    ("name too long for a folder", VALID.replace("name: t", "name: " + "é" * 128), "name", "at most 255 bytes"),
    ("billion laughs", VALID + LAUGHS, "l6", "expands to 5,380,840 values through its aliases"),
    ("alias inside its own anchor", VALID + "loop: &loop [1, *loop]\n", "loop[1]", "refers to itself"),
    ("mapping inside itself", VALID.replace("name: t", "name: &n {inner: *n}"), "name.inner", "refers to itself"),
    ("nesting too deep", VALID + "deep: " + "[" * 80 + "]" * 80 + "\n", "deep" + "[0]" * MAX_DEPTH,
     f"nests deeper than {MAX_DEPTH} levels"),
    ("nesting too deep through aliases", VALID + "d0: &d0 " + "[" * 40 + "]" * 40 + "\nd1: [[[[[*d0]]]]]\n"
     "d2: " + "[" * 30 + "*d0" + "]" * 30 + "\n", "d2" + "[0]" * 30, f"nests deeper than {MAX_DEPTH} levels"),
    ("nesting far too deep to compose", "[" * 5000 + "]" * 5000 + "\n", "", f"deeper than the {MAX_DEPTH} levels"),
    ("NUL character", VALID.replace("kernels:", "kernels:\0"), "", "U+0000"),
    ("date that does not exist", VALID.replace("name: t", "name: 2001-02-30"), "name", "YAML cannot read"),
    ("integer of 5000 digits", VALID.replace("M: 64", "M: " + "9" * 5000), "problems[0].M", "YAML cannot read"),
    ("infinite search timeout", VALID + "search: {timeout_s: .inf}\n", "search.timeout_s", "only finite numbers"),
    ("infinite measure timeout", VALID + "measure: {timeout_s: .inf}\n", "measure.timeout_s", "only finite"),
    ("not-a-number measure timeout", VALID + "measure: {timeout_s: .nan}\n", "measure.timeout_s", "only finite"),
    ("not-a-number noise target", VALID + "measure: {target_noise: .NaN}\n", "measure.target_noise", "only finite"),
    ("negative infinity", VALID + "measure: {max_time_s: -.inf}\n", "measure.max_time_s", "positive number"),
    ("infinite peak", VALID + MACHINE.replace("1000", ".inf"), "machine_models[0].peak_gflops.float32",
     "only finite"),
    ("infinite bandwidth", VALID + MACHINE.replace("150", ".Inf"), "machine_models[0].bandwidth_gbs", "only finite"),
    ("zero tile width", VALID.replace("[8, 16]", "[0]"), "kernels[0].parameters", "rejected by 'TILE_WIDTH ≥ 1'"),
    ("zero block size", NAIVE, "kernels[0].parameters", "rejected by 'BLOCK_X and BLOCK_Y ≥ 1'"),
    ("duplicate machine model", VALID + MACHINE + MACHINE.split("\n")[1] + "\n", "machine_models[1].name",
     "defined twice"),
    ("repeated dtype", VALID.replace("[float32]", "[float32, float64, float32]"), "kernels[0].parameters.dtype[2]",
     "listed twice"),
    ("merged problem listed twice", SQUARE.replace("    K: 128\n", ""), "problems[1]", "listed twice"),
    ("key twice beside a merge key", SQUARE.replace("K: 128", "K: 128\n    K: 256"), "problems[1].K",
     "appears twice"),
    ("merge key twice", SQUARE.replace("K: 128", "<<: *square"), "problems[1].<<", "appears twice"),
    ("list as a key", VALID.replace("  - {M: 64, N: 64, K: 64}", "  - {M: 64, N: 64, K: 64, [a]: 1}"), "problems[0]",
     "keys must be text, found a list or mapping"),
    ("number as a key", VALID.replace("  - {M: 64, N: 64, K: 64}", "  - {M: 64, N: 64, K: 64, 3: 1}"), "problems[0]",
     "keys must be text, found 3"),
    ("merge of a number", SQUARE.replace("<<: *square", "<<: 3"), "problems[1].<<", "takes a mapping"),
    ("merge of a list of numbers", SQUARE.replace("<<: *square", "<<: [*square, 3]"), "problems[1].<<",
     "takes a mapping"),
    ("octal size", VALID.replace("M: 64", "M: 0100"), "problems[0].M", "YAML reads as an octal number (64)"),
    ("negative octal size", VALID.replace("K: 64", "K: -010"), "problems[0].K", "an octal number (-8)"),
    ("base-60 size", VALID.replace("M: 64", "M: 1:04"), "problems[0].M", "YAML reads as a base-60 number (64)"),
    ("base-60 number with a fraction", VALID + "measure: {max_time_s: 1:30.5}\n", "measure.max_time_s",
     "base-60 number (90.5)"),
    ("octal parameter value", VALID.replace("[8, 16]", "[010, 16]"), "kernels[0].parameters.TILE_WIDTH[0]",
     "an octal number (8)"),
    ("merged key unknown in its new place", SQUARE.replace("  - template: tiled", "  - {<<: *square, template: "
                                                           "tiled}"), "kernels[0].M", "unknown key 'M'"),
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
    assert experiment.search.strategy == "bo"
    assert experiment.measure.cold_caches is True
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


def test_merge_keys_merge(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text(SQUARE)
    experiment = load_experiment(path)
    assert [p.label for p in experiment.problems] == ["64x64x64", "64x64x128"]


def test_of_several_merged_mappings_the_earlier_wins_and_own_keys_win_over_both(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text(SQUARE.replace("  - <<: *square\n    K: 128\n", "  - &tall {M: 512, N: 8, K: 8}\n"
                                   "  - {<<: [*tall, *square], K: 16}\n"))
    experiment = load_experiment(path)
    assert [p.label for p in experiment.problems] == ["64x64x64", "512x8x8", "512x8x16"]


def test_line_numbers_point_at_where_a_merged_field_is_written(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text(SQUARE.replace("K: 128", "K: -1"))
    with pytest.raises(ExperimentError) as own:
        load_experiment(path)
    assert (own.value.field, own.value.line) == ("problems[1].K", 5)
    path.write_text(SQUARE.replace("  - template: tiled", "  - {<<: *square, template: tiled}"))
    with pytest.raises(ExperimentError) as merged:
        load_experiment(path)
    assert (merged.value.field, merged.value.line) == ("kernels[0].M", 3)


@pytest.mark.slow
def test_twenty_thousand_problems_load_and_a_repeat_among_them_is_found(tmp_path):
    path = tmp_path / "exp.yaml"
    problems = "".join(f"  - {{M: {m}, N: 64, K: 64}}\n" for m in range(1, 20_001))
    path.write_text(f"name: t\nproblems:\n{problems}kernels:\n  - template: tiled\n")
    assert len(load_experiment(path).problems) == 20_000
    path.write_text(f"name: t\nproblems:\n{problems}  - {{M: 7, N: 64, K: 64}}\nkernels:\n  - template: tiled\n")
    with pytest.raises(ExperimentError, match="the problem 7x64x64 is listed twice") as caught:
        load_experiment(path)
    assert caught.value.field == "problems[20000]"


def test_twenty_thousand_parameter_values_load_and_a_repeat_among_them_is_found(tmp_path):
    path = tmp_path / "exp.yaml"
    values = ", ".join(str(w) for w in range(1, 20_001))
    path.write_text(VALID.replace("[8, 16]", f"[{values}]"))
    assert len(load_experiment(path).kernels[0].values["TILE_WIDTH"]) == 20_000
    path.write_text(VALID.replace("[8, 16]", f"[{values}, 16]"))
    with pytest.raises(ExperimentError, match="the value 16 is listed twice") as caught:
        load_experiment(path)
    assert caught.value.field == "kernels[0].parameters.TILE_WIDTH[20000]"


@pytest.mark.parametrize("case", ["unparseable", "top-level list", "unknown parameter", "zero size",
                                  "unknown template", "unknown dtype", "impossible constraints", "billion laughs",
                                  "alias inside its own anchor", "NUL character", "merge of a number",
                                  "nesting far too deep to compose", "octal size", "base-60 size"])
def test_cli_exits_2_with_one_paragraph(tmp_path, capsys, case):
    # in this process: tests/test_cli_space.py starts the command in one of its own for such a mistake
    text = dict((c[0], c[1]) for c in CASES)[case]
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    assert cli.main(["space", str(path)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}")


@pytest.mark.parametrize("case", ["billion laughs", "NUL character", "infinite measure timeout"])
@pytest.mark.slow
def test_run_refuses_the_file_before_writing_anything(tmp_path, recording, case):
    text = dict((c[0], c[1]) for c in CASES)[case]
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    result = run_cli("run", str(path), "--backend", "replay", "--replay", str(recording), "--out",
                     str(tmp_path / "out"), timeout=60)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}")
    assert not (tmp_path / "out").exists()


def test_space_refuses_a_tile_width_of_zero_before_compiling(tmp_path, capsys):
    path = tmp_path / "exp.yaml"
    path.write_text(VALID.replace("[8, 16]", "[0]"))
    assert cli.main(["space", "--compile", str(path)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: {path}, line 7: field 'kernels[0].parameters': no combination of these values satisfies the "
        f"family's constraints (all 1 rejected: 1 rejected by 'TILE_WIDTH ≥ 1')"]


def test_quoted_and_plain_numbers_read_as_written(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text(VALID.replace("M: 64", "M: 100").replace("[8, 16]", "[8, 0x10]") + "description: '0100 1:04'\n")
    experiment = load_experiment(path)
    assert experiment.problems[0].M == 100 and experiment.kernels[0].values["TILE_WIDTH"] == (8, 16)
    assert experiment.description == "0100 1:04"


def test_cli_missing_experiment_file(tmp_path, capsys):
    assert cli.main(["space", str(tmp_path / "nope.yaml")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_the_caches_setting_is_read_by_its_name(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text(VALID + "measure: {cold_caches: false, warmup: 3}\n")
    measure = load_experiment(path).measure
    assert measure.cold_caches is False and measure.warmup == 3
