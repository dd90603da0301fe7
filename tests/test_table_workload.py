"""A workload of shapes as data: read from JSON or CSV, every mistake refused naming the file, row and field; the
experiments it becomes (one per dtype) are experiments the tuner loads."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

import tuner
from tuner.errors import TunerError
from tuner.table.experiment_file import workload_experiments
from tuner.table.workload import MAX_WORKLOAD_BYTES, Shape, WorkloadError, by_dtype, read_workload


def _json(tmp_path: Path, document: object) -> Path:
    path = tmp_path / "workload.json"
    path.write_text(json.dumps(document))
    return path


def test_a_json_workload_gives_its_shapes_once_each_in_file_order(tmp_path):
    path = _json(tmp_path, [{"M": 16, "N": 4096, "K": 4096, "dtype": "bfloat16"},
                            {"M": 4096, "N": 1024, "K": 512, "dtype": "float32"},
                            {"M": 16, "N": 4096, "K": 4096, "dtype": "bfloat16"}])
    assert read_workload(path) == [Shape(16, 4096, 4096, "bfloat16"), Shape(4096, 1024, 512, "float32")]


def test_a_csv_workload_reads_the_same_and_groups_by_dtype(tmp_path):
    path = tmp_path / "workload.csv"
    path.write_text("dtype,M,N,K\nfloat32, 128,256,64\nfloat64,8,8,8\nfloat32,1,2,3\n")
    shapes = read_workload(path)
    assert shapes == [Shape(128, 256, 64, "float32"), Shape(8, 8, 8, "float64"), Shape(1, 2, 3, "float32")]
    assert {d: [p.label for p in ps] for d, ps in by_dtype(shapes).items()} == {
        "float32": ["128x256x64", "1x2x3"], "float64": ["8x8x8"]}


@pytest.mark.parametrize("document, where", [
    ({"M": 1}, "the top level"),
    ([{"M": 1, "N": 2, "K": 3}], "item 0, field dtype: is missing"),
    ([{"M": 1, "N": 2, "K": 3, "dtype": "float32"}, {"M": 0, "N": 2, "K": 3, "dtype": "float32"}],
     "item 1, field M: expected an integer from 1"),
    ([{"M": True, "N": 2, "K": 3, "dtype": "float32"}], "item 0, field M"),
    ([{"M": 2**31, "N": 2, "K": 3, "dtype": "float32"}], "item 0, field M"),
    ([{"M": 1.5, "N": 2, "K": 3, "dtype": "float32"}], "item 0, field M"),
    ([{"M": 1, "N": "2", "K": 3, "dtype": "float32"}], "item 0, field N: expected an integer"),
    ([{"M": 1, "N": 2, "K": 3, "dtype": "int4"}], "item 0, field dtype: 'int4' is not a dtype"),
    ([{"M": 1, "N": 2, "K": 3, "dtype": "float32", "run": "rm -rf /"}], "item 0: has the unknown field(s) run"),
    ([["1", "2"]], "item 0: is a list, not an object"),
    ([], "lists no shape"),
])
def test_a_mistake_is_refused_naming_the_file_the_row_and_the_field(tmp_path, document, where):
    assert_refused_in_one_paragraph(WorkloadError, read_workload, _json(tmp_path, document), where)


def assert_refused_in_one_paragraph(error: type[Exception], read: Callable[[Path], object], path: Path,
                                    where: str) -> None:
    """``read(path)`` raises ``error`` in one paragraph starting with the path and saying ``where``."""
    with pytest.raises(error) as refused:
        read(path)
    message = str(refused.value)
    assert message.startswith(f"{path}: ") and where in message and "\n" not in message


def test_csv_mistakes_name_the_line_and_column(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text("M,N,K\n1,2,3\n")
    with pytest.raises(WorkloadError, match="the header: lacks the column.s. dtype"):
        read_workload(path)
    path.write_text("M,N,K,dtype\n1,2,3,float32\n1,x,3,float32\n")
    with pytest.raises(WorkloadError, match="row 3, field N: expected an integer"):
        read_workload(path)


def test_a_file_beyond_the_size_bound_is_refused_unread(tmp_path):
    path = tmp_path / "big.json"
    path.write_text("[" + " " * MAX_WORKLOAD_BYTES + "]")
    with pytest.raises(WorkloadError, match="cannot be read"):
        read_workload(path)


def test_a_workload_becomes_one_loadable_experiment_per_dtype(tmp_path, root):
    shapes = [Shape(512, 256, 128, "float32"), Shape(1000, 777, 333, "float64"), Shape(64, 64, 64, "float32")]
    texts = workload_experiments(shapes, root / "experiments/h100_sgemm.yaml", "mlp")
    assert list(texts) == ["float32", "float64"]
    for dtype, text in texts.items():
        path = tmp_path / f"mlp_{dtype}.yaml"
        path.write_text(text)
        experiment = tuner.load_experiment(path)
        assert experiment.name == f"mlp_{dtype}" and experiment.dtypes == (dtype,)
        assert [(p.M, p.N, p.K, dtype) for p in experiment.problems] == [
            (s.M, s.N, s.K, s.dtype) for s in shapes if s.dtype == dtype]


def test_a_dtype_no_kernel_of_the_base_takes_is_refused(root):
    with pytest.raises(TunerError, match="no kernel entry of the base experiment takes bfloat16"):
        workload_experiments([Shape(64, 64, 64, "bfloat16")], root / "experiments/h100_sgemm.yaml", "w")
