"""--gpus: which GPUs a run names, and the errors of a list that names none or one twice."""

from __future__ import annotations

import pytest

from tuner.backends.gpus import parse_gpus, visible_gpus
from tuner.errors import TunerError


def test_all_and_indices_name_the_visible_gpus_in_order():
    visible = ["GPU-aaa", "GPU-bbb", "GPU-ccc"]
    assert parse_gpus("all", visible) == visible
    assert parse_gpus("2,0", visible) == ["GPU-ccc", "GPU-aaa"]


@pytest.mark.parametrize(("spec", "words"), [("0,0", "names a GPU twice"), ("3", "no GPU of index 3"),
                                             ("one", "takes 'all' or GPU indices"), ("-1", "no GPU of index -1")])
def test_a_wrong_list_is_one_sentence(spec, words):
    with pytest.raises(TunerError, match=words):
        parse_gpus(spec, ["0", "1"])


def test_no_visible_gpu_is_said(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert visible_gpus() == []
    with pytest.raises(TunerError, match="no GPU is visible"):
        parse_gpus("all", visible_gpus())


def test_cuda_visible_devices_orders_the_indices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3, 1")
    assert visible_gpus() == ["3", "1"]
