"""Mistakes in a family of one's own (its declaration or its template) are one paragraph naming the family's file
and the experiment's field, with exit status 2: at load time where the entry's first configuration meets them, and
when a run reaches them, with what was recorded before kept."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import ROOT, run_cli
from tuner.errors import ExperimentError, TunerError
from tuner.experiment.schema import load_experiment
from tuner.kernels import discovery

C_TEMPLATE = (ROOT / "kernel_templates" / "cpu_naive.c.j2").read_text().replace("{% if PARALLEL %}", "{% if T > 5 %}")


pytestmark = pytest.mark.usefixtures("fresh_registry")


def _family(tmp_path: Path, *, name: str = "mine", before: str = "", template: str = C_TEMPLATE,
            global_bytes: str = "lambda p, problem, size: size * (problem.M * problem.K + problem.K * problem.N)",
            constraints: str = "()") -> Path:
    """An experiment over a C family of two values, T = 1 and 2, with the pieces given."""
    folder = tmp_path / "families"
    folder.mkdir()
    (folder / "mine.py").write_text(before + textwrap.dedent(f"""
        from tuner.kernels.family import Constraint, Family, Parameter

        FAMILY = Family(name={name!r}, description="a C family", parameters=(Parameter("T", "t", (1, 2)),),
                        global_bytes={global_bytes}, target="c", dtypes=("float32",), constraints={constraints})
    """))
    (folder / "mine.c.j2").write_text(template)
    path = tmp_path / "exp.yaml"
    path.write_text(f"name: mine\ntemplate_dirs: [{folder}]\nproblems: [{{M: 32, N: 32, K: 32}}]\n"
                    f"kernels: [{{template: mine}}]\n")
    return path


# (case id, the family's pieces, the field, words the message must hold)
CASES = [
    ("Jinja syntax error", {"template": "{{ header }}\n{% if T %}\n"}, "kernels[0].template",
     "mine.c.j2, line 2: the template does not parse (TemplateSyntaxError"),
    ("undefined template variable", {"template": "{{ header }}\n{{ NOPE }}\n"}, "kernels[0].template",
     "mine.c.j2, line 2: the template cannot be rendered (UndefinedError: 'NOPE' is undefined)"),
    ("cost model divides by zero", {"global_bytes": "lambda p, problem, size: 1 // (p['T'] - p['T'])"},
     "kernels[0].template", "mine.py: the cost model of family 'mine' raised ZeroDivisionError"),
    ("cost model of 0 bytes", {"global_bytes": "lambda p, problem, size: 0"}, "kernels[0].template",
     "gives 0 global"),
    ("cost model of no number", {"global_bytes": "lambda p, problem, size: 'many'"}, "kernels[0].template",
     "the cost model of family 'mine' raised TypeError"),
    ("constraint that raises", {"constraints": "(Constraint('T fits', lambda p, d: p['T'] / 0 > 1),)"},
     "kernels[0].parameters", "mine.py: the rule 'T fits' of family 'mine' raised ZeroDivisionError"),
]


@pytest.mark.parametrize(("pieces", "field", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_family_mistake_is_named_at_load(tmp_path, pieces, field, words):
    path = _family(tmp_path, **pieces)
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    assert caught.value.field == field
    assert words in str(caught.value) and "\n" not in str(caught.value)
    assert str(caught.value).startswith(f"{path}, line 4: field '{field}'")


@pytest.mark.parametrize("case", ["Jinja syntax error", "cost model divides by zero", "constraint that raises"])
@pytest.mark.slow
def test_the_cli_exits_2_with_one_paragraph(tmp_path, case):
    pieces = dict((c[0], c[1]) for c in CASES)[case]
    path = _family(tmp_path, **pieces)
    done = run_cli("run", str(path), "--out", str(tmp_path / "out"), "--quiet", timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {path}") and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_family_module_that_exits_is_named_instead_of_ending_the_run(tmp_path):
    path = _family(tmp_path, before="raise SystemExit(0)\n")
    done = run_cli("space", str(path), timeout=60)
    assert done.returncode == 2, done.stderr
    assert "mine.py: the family declaration raised SystemExit" in done.stderr
    with pytest.raises(ExperimentError) as caught:
        load_experiment(path)
    assert caught.value.field == "template_dirs"


@pytest.mark.parametrize("name", ["../mine", "a/b", "mine.x", "1st", ""])
def test_a_family_name_that_is_no_identifier_is_refused(tmp_path, name):
    path = _family(tmp_path, name=name)
    with pytest.raises(ExperimentError, match="is not an identifier") as caught:
        load_experiment(path)
    assert caught.value.field == "template_dirs"


@pytest.mark.slow
def test_a_mistake_only_some_values_reach_stops_the_run_keeping_what_was_measured(tmp_path):
    """T=1 is fine and measured; T=2 divides by zero in the cost model: the run stops naming it, the row of T=1
    stays, and running again stops at the same place without measuring T=1 again."""
    path = _family(tmp_path, global_bytes="lambda p, problem, size: 4 * problem.M * problem.N // (2 - p['T'])")
    out = tmp_path / "out"
    for _ in range(2):
        done = run_cli("run", str(path), "--out", str(out), "--strategy", "grid", "--no-report", "--quiet",
                       timeout=300)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "mine.py: the cost model of family 'mine' raised ZeroDivisionError" in lines[0]
        assert "32x32x32/mine/float32/T=2" in lines[0]
        rows = pd.read_parquet(out / "results.parquet")
        assert list(rows.loc[rows["family"] == "mine", "p_T"]) == [1]


def test_rendering_names_the_template_and_its_line(tmp_path):
    from tuner.config import Config, Problem
    from tuner.kernels.render import render

    folder = _family(tmp_path, template="{{ header }}\n\n{{ T + NOPE }}\n").parent / "families"
    discovery.use_family_dirs([folder])
    with pytest.raises(TunerError, match=r"mine.c.j2, line 3: the template cannot be rendered"):
        render(Config.make(Problem(8, 8, 8), "mine", "float32", {"T": 1}))
