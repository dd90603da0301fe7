"""``tuner.tune``: tune a GEMM kernel given as source text, in the spirit of ``kernel_tuner.tune_kernel``.

::

    result = tuner.tune(source=open("my_gemm.cu").read(), parameters={"TILE": [8, 16, 32]},
                        restrictions=["TILE * TILE <= 1024"], problem=(4096, 4096, 4096),
                        arguments=("A", "B", "C", "M", "N", "K"), block=("TILE", "TILE"))

The kernel becomes a family of its own (:mod:`tuner.kernels.given`) and an experiment of one kernel entry, which
:func:`tuner.run` searches as any other: the same verification against the float64 reference, the same timing,
the same storage (resumed by calling ``tune`` again with the same arguments) and the same report. ``restrictions``
are Python expressions over the parameters, as Kernel Tuner takes them, checked and evaluated without ``eval``
(:mod:`tuner.space.restriction_rules`). ``source`` is the text, or a path to a file (``.c`` for a C kernel measured on
the CPU); each parameter reaches it as a ``#define``, and ``real_t`` names the dtype's C type. Every other
keyword (``backend``, ``trials``, ``strategy``, ``objective``, ``out``, ``storage``, ``quiet``, ``callbacks``, …)
is :func:`tuner.run`'s.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tuner.config import ParamValue, Problem
from tuner.errors import TunerError
from tuner.kernels import matmul
from tuner.kernels.given import write_family
from tuner.names.file_names import family_name_refusal
from tuner.settings import MeasureSettings
from tuner.space.restriction_rules import restriction_refusal
from tuner.tuning.result_display import RunResult

DEFAULT_ARGUMENTS = tuple(argument.name for argument in matmul.ARGUMENTS)


def tune(source: str | os.PathLike[str], parameters: Mapping[str, Sequence[ParamValue]],
         problem: Problem | Mapping[str, int] | Sequence[int] | Sequence[Problem],
         restrictions: Sequence[str] = (), arguments: Sequence[str] = DEFAULT_ARGUMENTS, *,
         kernel_name: str = "matmul", name: str = "kernel", dtype: str | Sequence[str] = "float32",
         block: Sequence[object] | None = None, grid: Sequence[object] | None = None, shared: object | None = None,
         target: str | None = None, measure: MeasureSettings | None = None, **options: Any) -> RunResult:
    """Tune the kernel (see the module text); returns what :func:`tuner.run` returns. ``problem``: one
    ``tuner.Problem``, ``(M, N, K)``, ``{"M": …, "N": …, "K": …}`` or a list of problems; ``dtype``: one or several;
    ``name``: the experiment's and the family's name (the output folder is ``reports/<name>`` unless ``out=``);
    ``target``: "cuda" or "c" (default: "c" for a ``.c`` file or a source without ``__global__``); ``measure``:
    the timing settings (``tuner.MeasureSettings``; default: an experiment file's)."""
    from tuner.experiment.schema import Experiment
    from tuner.space.entry_space import KernelSpec
    from tuner.tuning.run import run

    text, given_target = _source(source)
    target = target or given_target
    if target not in ("cuda", "c"):
        raise TunerError(f"tuner.tune: target is 'cuda' or 'c', not {target!r}")
    if not isinstance(name, str) or not name.isidentifier():
        raise TunerError(f"tuner.tune: name must be an identifier (it names the family and its files), not {name!r}")
    too_long = family_name_refusal(name)
    if too_long is not None:
        raise TunerError(f"tuner.tune: name: {too_long}")
    dtypes = (dtype,) if isinstance(dtype, str) else tuple(dtype)
    if isinstance(restrictions, str):
        raise TunerError("tuner.tune: restrictions is a list of expressions, not one text")
    for i, restriction in enumerate(restrictions):
        refusal = restriction_refusal(restriction, list(parameters))
        if refusal is not None:
            raise TunerError(f"tuner.tune: restrictions[{i}]: {refusal}")
    folder = write_family(name, text, parameters, kernel_name=kernel_name, target=target, arguments=arguments,
                          dtypes=dtypes, block=block, grid=grid, shared=shared)
    experiment = Experiment(name=name, problems=_problems(problem),
                            kernels=(KernelSpec(name, {k: tuple(v) for k, v in parameters.items()}, dtypes,
                                                restrictions=tuple(restrictions)),),
                            measure=measure or MeasureSettings(), template_dirs=(folder,))
    if target == "c" and "backend" not in options and "replay" not in options:
        options["backend"] = "cpu"
    return run(experiment, **options)


def _source(source: str | os.PathLike[str]) -> tuple[str, str]:
    """The kernel's text and the target it is written for."""
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source and
                                           source.endswith((".cu", ".c", ".cuh", ".h")) and Path(source).is_file()):
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TunerError(f"tuner.tune: the source {path} cannot be read ({exc})") from None
        return text, "c" if path.suffix in (".c", ".h") else "cuda"
    if not isinstance(source, str) or not source.strip():
        raise TunerError("tuner.tune: source is the kernel's text or the path of its file")
    return source, "cuda" if "__global__" in source else "c"


def _problems(problem: Any) -> tuple[Problem, ...]:
    if isinstance(problem, Problem):
        return (problem,)
    if isinstance(problem, Mapping):
        return (Problem(**{k: int(v) for k, v in problem.items()}),)
    if isinstance(problem, Sequence) and problem and all(isinstance(p, int) for p in problem):
        return (Problem(*(int(p) for p in problem)),)
    if isinstance(problem, Sequence) and problem:
        return tuple(found for one in problem for found in _problems(one))
    raise TunerError(f"tuner.tune: problem is a tuner.Problem, (M, N, K), a mapping of M, N and K, or a list of "
                     f"them, not {problem!r}")
