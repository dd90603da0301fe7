"""A kernel given as source text (``tuner.tune``): its family, declared by data.

:func:`write_family` writes a family folder under ``$TUNER_CACHE_DIR/given/<hash>/`` that the measuring processes find
as they find any folder of families: the source as a template (``<name>.cu.j2`` or ``<name>.c.j2``: the
configuration's ``#define`` line per parameter, as Kernel Tuner prepends them, ``real_t`` as the dtype's C type,
then the text as given, which Jinja never interprets; CUDA code without ``extern "C"`` is wrapped in it, as
PyCUDA's SourceModule does), its declaration as data (``<name>.json``) and a two-line module (``<name>.py``) that
reads it. The folder is named by the hash of what it holds: the same kernel and values make the same folder, so
that a run continues where it stopped.

The declaration: the parameters and their values; the kernel's name; its arguments, the GEMM's ``A``, ``B``, ``C``
(row-major, C = A·B) and the sizes ``M``, ``N``, ``K`` in the order the kernel takes them (verified against the
float64 reference as every GEMM family is); the dtypes; and the launch geometry as expressions that are checked and
walked as restrictions are (:mod:`tuner.kernels.restrictions`, never ``eval``): ``block`` over the parameters
(default: Kernel Tuner's ``block_size_x``, ``block_size_y``, ``block_size_z`` where they are parameters),
``grid`` over the parameters and ``M``, ``N``, ``K`` (default: enough blocks to cover the N columns along x and
the M rows along y), and ``shared`` (bytes of dynamic shared memory) over the parameters and ``size``, the
element's bytes. Its cost model is the compulsory traffic (each matrix moved once).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tuner.config import MATMUL_DIMS, ParamValue, Problem
from tuner.errors import TunerError
from tuner.kernels import matmul
from tuner.kernels.arguments import Argument
from tuner.kernels.family import Dim3, Family, Parameter, Params, ceil_div
from tuner.kernels.restrictions import Restriction, _evaluate, parse_restriction
from tuner.settings import cache_root

KERNEL_TUNER_BLOCK = ("block_size_x", "block_size_y", "block_size_z")
DECLARATION = '''"""A kernel given to tuner.tune: declared by the JSON file beside this one (tuner.kernels.given)."""

from pathlib import Path

from tuner.kernels.given import family_from_file

FAMILY = family_from_file(Path(__file__).with_suffix(".json"))
'''


def write_family(name: str, source: str, parameters: Mapping[str, Sequence[ParamValue]], *, kernel_name: str,
                 target: str, arguments: Sequence[str], dtypes: Sequence[str], block: Sequence[object] | None,
                 grid: Sequence[object] | None, shared: object | None) -> Path:
    """The family folder of a given kernel (see the module text), written where it is not there yet; TunerError
    for a declaration that is not one (checked here, before anything is written)."""
    spec = {"name": name, "kernel_name": kernel_name, "target": target,
            "parameters": {key: list(values) for key, values in parameters.items()},
            "arguments": list(arguments), "dtypes": list(dtypes),
            "block": None if block is None else [str(e) for e in block],
            "grid": None if grid is None else [str(e) for e in grid],
            "shared": None if shared is None else str(shared)}
    family_from_spec(spec, "tuner.tune")  # refuses a declaration that is not one
    template = _template(source, list(parameters), target)
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode() + template.encode()).hexdigest()[:16]
    folder = cache_root() / "given" / f"{name}-{digest}"
    if not (folder / f"{name}.py").is_file():
        folder.mkdir(parents=True, exist_ok=True)
        suffix = ".cu.j2" if target == "cuda" else ".c.j2"
        (folder / f"{name}{suffix}").write_text(template, encoding="utf-8")
        (folder / f"{name}.json").write_text(json.dumps(spec, indent=1), encoding="utf-8")
        (folder / f"{name}.py").write_text(DECLARATION, encoding="utf-8")
    return folder


def _template(source: str, names: list[str], target: str) -> str:
    if "{% endraw %}" in source:
        raise TunerError("tuner.tune: the source holds the text '{% endraw %}', which cannot be kept apart from the "
                         "template's own markup")
    wrap = target == "cuda" and 'extern "C"' not in source
    lines = ["{{ header }}", "typedef {{ ctype }} real_t;", *(f"#define {n} {{{{ {n} }}}}" for n in names),
             "{% raw %}", *(['extern "C" {'] if wrap else []), source.rstrip("\n"), *(["}"] if wrap else []),
             "{% endraw %}"]
    return "\n".join(lines) + "\n"


def family_from_file(path: Path) -> Family:
    return family_from_spec(json.loads(path.read_text(encoding="utf-8")), str(path))


def family_from_spec(spec: Mapping[str, Any], where: str) -> Family:
    """The family a declaration describes; TunerError naming ``where`` and the field for one that is not one."""
    names = list(spec["parameters"])
    for name in names:
        if not name.isidentifier():
            raise TunerError(f"{where}: the parameter name {name!r} is not an identifier (it becomes a #define)")
        if not spec["parameters"][name]:
            raise TunerError(f"{where}: parameter '{name}' lists no values")
    arguments = _arguments(spec["arguments"], where)
    block = _expressions(spec["block"], names, where, "block")
    grid = _expressions(spec["grid"], [*names, *MATMUL_DIMS], where, "grid")
    shared = _expressions([spec["shared"]], [*names, "size"], where, "shared") if spec["shared"] else None
    if block is None and spec["target"] == "cuda":
        named = [n for n in KERNEL_TUNER_BLOCK if n in names]
        if not named:
            raise TunerError(f"{where}: give the thread block, block=(x, y, z) as expressions over the parameters, "
                             f"or name parameters {', '.join(KERNEL_TUNER_BLOCK)} as Kernel Tuner does")
        block = [parse_restriction(n if n in names else "1", names, where) for n in KERNEL_TUNER_BLOCK]
    return Family(
        name=spec["name"], description=f"the kernel {spec['kernel_name']} given to tuner.tune",
        parameters=tuple(Parameter(n, "given to tuner.tune", tuple(spec["parameters"][n])) for n in names),
        global_bytes=lambda params, problem, size: matmul.compulsory_bytes(problem, size),
        target=spec["target"], arguments=arguments, kernel_name=spec["kernel_name"], dtypes=tuple(spec["dtypes"]),
        block=(lambda params: _dim3(block, params)) if block else (lambda params: (1, 1, 1)),
        grid=(lambda params, problem: _dim3(grid, {**params, **problem.as_dict()})) if grid else (
            lambda params, problem: _covering(block, params, problem)),
        shared_bytes=(lambda params, size: _value(shared[0], {**params, "size": size})) if shared else (
            lambda params, size: 0),
        dynamic_shared=shared is not None,
    )


def _arguments(names: Sequence[str], where: str) -> tuple[Argument, ...]:
    known = {argument.name: argument for argument in matmul.ARGUMENTS}
    unknown = [n for n in names if n not in known]
    if unknown or len(set(names)) != len(names) or not {"A", "B", "C"} <= set(names):
        raise TunerError(f"{where}: arguments name the kernel's parameters in its order, each once, from the GEMM's "
                         f"A, B, C (all three) and M, N, K; not {list(names)}")
    return tuple(known[n] for n in names)


def _expressions(texts: Sequence[object] | None, names: list[str], where: str,
                 field: str) -> list[Restriction] | None:
    if texts is None:
        return None
    if len(texts) > 3 or not texts:
        raise TunerError(f"{where}: {field} gives one to three expressions (x, y, z), not {len(texts)}")
    return [parse_restriction(str(text), names, f"{where}: {field}[{i}]") for i, text in enumerate(texts)]


def _value(expression: Restriction, values: Mapping[str, Any]) -> int:
    columns = {name: np.asarray([values[name]]) for name in sorted(expression.names)}
    with np.errstate(all="ignore"):
        value, broken = _evaluate(expression.tree, columns)
    if np.any(broken):
        raise ValueError(f"'{expression.text}' divides by zero")
    return int(np.asarray(value).reshape(-1)[0])


def _dim3(expressions: list[Restriction], values: Mapping[str, Any]) -> Dim3:
    found = [_value(e, values) for e in expressions] + [1] * (3 - len(expressions))
    return found[0], found[1], found[2]


def _covering(block: list[Restriction] | None, params: Params, problem: Problem) -> Dim3:
    """Enough blocks to cover the N columns of C along x and its M rows along y."""
    x, y, _ = _dim3(block, params) if block else (1, 1, 1)
    return ceil_div(problem.N, max(x, 1)), ceil_div(problem.M, max(y, 1)), 1
