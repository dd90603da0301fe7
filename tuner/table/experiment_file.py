"""Experiment files that tune a list of shapes with the kernels, measurement and compile settings of a base
experiment: the base's problems replaced by the shapes, its kernel entries kept to the dtypes asked for. A workload
whose dtypes differ shape by shape gives one experiment per dtype, so that each shape is tuned in its own dtype."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from tuner.config import Problem
from tuner.errors import TunerError
from tuner.table.workload import Shape, by_dtype

MAX_BASE_BYTES = 4 * 2**20


def read_base(base: Path) -> dict[str, Any]:
    """A base experiment file as a mapping (YAML's safe loader: no tags, nothing executed)."""
    from tuner import input_file

    try:
        document = yaml.safe_load(input_file.read_text(base, MAX_BASE_BYTES))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise TunerError(f"{base}: cannot read the base experiment ({exc})") from None
    if not isinstance(document, dict) or not isinstance(document.get("kernels"), list):
        raise TunerError(f"{base}: the base experiment is not a mapping with a list of kernels")
    return document


def experiment_document(base: dict[str, Any], name: str, problems: Sequence[Problem],
                        dtypes: Sequence[str]) -> dict[str, Any]:
    """``base`` tuning ``problems`` in ``dtypes``: each kernel entry keeps the dtypes asked for among its own (all
    of them where it lists none); an entry left with none is dropped."""
    document = dict(base)
    document["name"] = name
    document["problems"] = [problem.as_dict() for problem in problems]
    kernels = []
    for entry in base.get("kernels", []):
        parameters = dict(entry.get("parameters") or {})
        parameters["dtype"] = [d for d in parameters.get("dtype", dtypes) if d in dtypes]
        if parameters["dtype"]:
            kernels.append({**entry, "parameters": parameters})
    document["kernels"] = kernels
    return document


def workload_experiments(shapes: Sequence[Shape], base_path: Path, name: str) -> dict[str, str]:
    """One experiment file's text per dtype of the workload, named ``<name>_<dtype>``; TunerError where the base
    has no kernel entry for one of the dtypes."""
    base = read_base(base_path)
    texts = {}
    for dtype, problems in by_dtype(shapes).items():
        document = experiment_document(base, f"{name}_{dtype}", problems, [dtype])
        if not document["kernels"]:
            raise TunerError(f"{base_path}: no kernel entry of the base experiment takes {dtype}, which the "
                             f"workload lists; give a base whose kernels list it")
        texts[dtype] = yaml.safe_dump(document, sort_keys=False)
    return texts
