"""The ``space`` command: an experiment's search space as tables, and optionally the compiler's resource
report for every valid configuration."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tuner.config import Config
from tuner.console.live_line import LiveLine
from tuner.experiment.schema import Experiment
from tuner.kernels.discovery import get_family
from tuner.kernels.render import launch
from tuner.space.configs import union
from tuner.space.entry_space import EntrySpace, KernelSpec, entry_spaces
from tuner.text_table import format_table, terminal_width, wrapped

if TYPE_CHECKING:
    from tuner.compile.result import CompileResult

_LOG_LINES = 20  # of a compiler message shown under the resource table


def _values(spec: KernelSpec) -> str:
    return "  ".join(f"{name}={','.join(str(v) for v in values)}" for name, values in spec.values.items())


def _rejections(space: EntrySpace) -> tuple[str, ...]:
    """``12× rule``: how many configurations each static constraint rejected."""
    return tuple(f"{n}× {rule}" for rule, n in space.rejected_by.items())


def _space_section(experiment: Experiment, width: int) -> tuple[str, Sequence[Config]]:
    """The size table (a row per problem and kernel entry, naming the entry by its number), each entry's values
    and rejections within ``width`` columns, and the distinct valid kernels (one per family, dtype and
    parameters)."""
    entries = entry_spaces(experiment)
    rows = [(problem.label, number, spec, space.size, len(space.valid_rows), _rejections(space))
            for problem in experiment.problems
            for number, (spec, space) in enumerate(zip(experiment.kernels, entries, strict=True), start=1)]
    problems = len(experiment.problems)
    before = problems * sum(space.size for space in entries)
    after = problems * sum(len(space.valid_rows) for space in entries)
    # The valid set does not depend on the problem: the first one's configurations name every kernel.
    kernels = union(experiment.problems[0], entries) if experiment.problems else ()
    table = format_table(
        ("problem", "entry", "template", "dtypes", "before", "after", "rejected"),
        [[label, f"[{number}]", spec.family, ",".join(spec.dtypes), size_before, size_after, size_before - size_after]
         for label, number, spec, size_before, size_after, _ in rows],
        right=(4, 5, 6),
    )
    listing = _entries(rows, len(experiment.problems), width)
    total = (f"{after} of {before} configurations satisfy the static constraints over {len(experiment.problems)} "
             f"problem(s); {len(kernels)} distinct kernels (the source does not depend on the problem size)")
    text = "\n".join([table, "", "Kernel entries: the values searched, and the static constraints' rejections:",
                      *listing, "", wrapped(total, width, hanging="")])
    return text, kernels


def _entries(rows: list[tuple], problems: int, width: int) -> list[str]:
    """Per kernel entry: its values, then what each rule rejected (once where every problem saw the same)."""
    lines = []
    for number, spec in {number: spec for _, number, spec, *_ in rows}.items():
        lines.append(wrapped(f"[{number}] {spec.family} ({','.join(spec.dtypes)}): {_values(spec)}", width,
                             indent="  ", hanging="      "))
        rejections = [(label, rejected) for label, n, _, _, _, rejected in rows if n == number]
        if len({rejected for _, rejected in rejections}) == 1:
            rejections = [("every problem" if problems > 1 else rejections[0][0], rejections[0][1])]
        for label, rejected in rejections:
            lines.append(f"      rejected on {label}:" + ("" if rejected else " nothing"))
            lines += [wrapped(rule, width, indent="        ") for rule in rejected]
    return lines


class _ProgressLine:
    """``compiling 12/33 ...`` on stderr (:class:`tuner.console.live_line.LiveLine`)."""

    def __init__(self, quiet: bool):
        self.line = LiveLine(quiet)
        self.started = False

    def __call__(self, done: int, total: int, config: Config) -> None:
        if not self.started:
            self.line.start(total)
            self.started = True
        values = ",".join(f"{k}={v}" for k, v in config.params)
        text = f"compiling {done}/{total} {config.family} {config.dtype} {values}"
        width = self.line.width()
        self.line.show(text if width is None or len(text) <= width else text[:width - 1] + "…", done,
                       force=done == total)

    def close(self) -> None:
        self.line.close_bar()


def _params(config: Config, omit: frozenset[str] = frozenset()) -> str:
    return " ".join(f"{k}={v}" for k, v in config.params if k not in omit)


def _number(value: int | None) -> str:
    return "-" if value is None else str(value)


def _fixed_params(kernels: list[Config]) -> dict[str, dict[str, object]]:
    """Per family with several kernels, the parameters that take one value in all of them."""
    values: dict[str, dict[str, set]] = {}
    count: Counter[str] = Counter(c.family for c in kernels)
    for config in kernels:
        for name, value in config.params:
            values.setdefault(config.family, {}).setdefault(name, set()).add(value)
    return {
        family: {name: next(iter(seen)) for name, seen in params.items() if len(seen) == 1}
        for family, params in values.items() if count[family] > 1
    }


def _resource_table(kernels: list[Config], results: dict[Config, CompileResult]) -> list[str]:
    fixed = _fixed_params(kernels)
    dynamic = any(get_family(c.family).dynamic_shared for c in kernels)
    header = ["family", "dtype", "parameters", "registers", "shared B", *(["dynamic shared B"] * dynamic),
              "local B", "spill stores B", "spill loads B", "status", "seconds", "cached"]
    rows = []
    for config in kernels:
        result, res = results[config], results[config].resources
        rows.append([
            config.family, config.dtype, _params(config, frozenset(fixed.get(config.family, ()))),
            _number(res.registers), _number(res.shared_bytes),
            *([launch(config).dynamic_shared_bytes] * dynamic),
            _number(res.local_bytes), _number(res.spill_store_bytes), _number(res.spill_load_bytes),
            "ok" if result.ok else "error", f"{result.seconds:.2f}", "yes" if result.cached else "no",
        ])
    numeric = [i for i, name in enumerate(header) if name.endswith(" B") or name in ("registers", "seconds")]
    lines = [format_table(header, rows, right=numeric)]
    for family, params in fixed.items():
        if params:
            same = " ".join(f"{k}={v}" for k, v in params.items())
            lines.append(f"  {family}, the same in every row: {same}")
    return lines


def _failures(kernels: list[Config], results: dict[Config, CompileResult]) -> list[str]:
    """The compiler's messages, each once, under the kernels that produced it."""
    by_message: dict[str, list[Config]] = {}
    for config in kernels:
        if not results[config].ok:
            by_message.setdefault(results[config].log, []).append(config)
    lines = []
    for message, configs in by_message.items():
        names = "every kernel" if len(configs) == len(kernels) else ", ".join(
            f"{c.family} {c.dtype} {_params(c)}" for c in configs)
        shown = message.splitlines()
        more = [f"    ... {len(shown) - _LOG_LINES} more lines"] if len(shown) > _LOG_LINES else []
        lines += ["", f"failed to compile ({len(configs)}): {names}:", *(f"    {line}" for line in shown[:_LOG_LINES]),
                  *more]
    return lines


def _compile_section(experiment: Experiment, kernels: list[Config], arch: str, quiet: bool) -> str:
    """The compilers' resource reports: nvcc's for the CUDA kernels, the C compiler's for the C kernels."""
    cuda = [c for c in kernels if get_family(c.family).target == "cuda"]
    c_kernels = [c for c in kernels if get_family(c.family).target == "c"]
    sections = ([_nvcc_section(experiment, cuda, arch, quiet)] if cuda else []) + \
        ([_cc_section(experiment, c_kernels, quiet)] if c_kernels else [])
    return "\n\n".join(sections)


def _nvcc_section(experiment: Experiment, kernels: list[Config], arch: str, quiet: bool) -> str:
    from tuner.compile.nvcc import compile_configs, nvcc_version

    settings = experiment.compile
    workers = settings.workers or os.cpu_count() or 1
    progress = _ProgressLine(quiet)
    try:
        results = compile_configs(kernels, arch=arch, options=settings.options, workers=workers, progress=progress)
    finally:
        progress.close()
    options = " ".join(settings.options) or "no options"
    return "\n".join([
        f"Compiler's resource report per kernel for {arch} (nvcc {nvcc_version()}, {options}, {workers} workers; "
        "registers, local and spill bytes per thread; shared bytes per block):",
        *_resource_table(kernels, results),
        *_totals(kernels, results),
    ])


def _cc_section(experiment: Experiment, kernels: list[Config], quiet: bool) -> str:
    from tuner.compile.cc import compile_source, compiler_identity, find_cc, flags
    from tuner.compile.pool import compile_all
    from tuner.kernels.render import render

    workers = experiment.compile.workers or os.cpu_count() or 1
    sources = {config: render(config) for config in kernels}
    first = {source: config for config, source in reversed(sources.items())}
    progress = _ProgressLine(quiet)
    try:
        compiled = compile_all(sources.values(), compile_source, workers,
                               lambda done, total, source: progress(done, total, first[source]))
    finally:
        progress.close()
    results = {config: compiled[source] for config, source in sources.items()}
    fixed = _fixed_params(kernels)
    header = ["family", "dtype", "parameters", "code B", "vectorized loops", "status", "seconds", "cached"]
    rows = [[c.family, c.dtype, _params(c, frozenset(fixed.get(c.family, ()))),
             _number(results[c].resources.code_bytes), _number(results[c].resources.vectorized_loops),
             "ok" if results[c].ok else "error", f"{results[c].seconds:.2f}", "yes" if results[c].cached else "no"]
            for c in kernels]
    cc = find_cc()
    return "\n".join([
        f"C compiler's report per kernel ({compiler_identity(cc)}, {' '.join(flags(cc))}, {workers} workers; "
        "machine code bytes of the library, loops the compiler vectorized):",
        format_table(header, rows, right=[3, 4, 6]),
        *_totals(kernels, results),
    ])


def _totals(kernels: list[Config], results: dict[Config, CompileResult]) -> list[str]:
    failed = sum(not results[c].ok for c in kernels)
    cached = sum(results[c].cached for c in kernels)
    return ["", f"{len(kernels)} kernels: {len(kernels) - failed} compiled, {failed} failed, {cached} from the cache",
            *_failures(kernels, results)]


def print_space(experiment: Experiment, compile_: bool = False, arch: str | None = None, quiet: bool = False) -> None:
    """Print the experiment's space per problem and kernel entry; with ``compile_``, compile every distinct
    valid kernel for ``arch`` (default: the experiment's) and add the compiler's resource table."""
    target = arch or experiment.compile.arch
    if compile_:  # the compilers are checked before any output, so that a mistake is the only thing printed
        targets = {get_family(spec.family).target for spec in experiment.kernels}
        if "cuda" in targets:
            from tuner.compile.nvcc import find_nvcc
            from tuner.kernels.targets import parse_arch

            parse_arch(target)
            find_nvcc()
        if "c" in targets:
            from tuner.compile.cc import find_cc

            find_cc()
    where = f" ({experiment.path})" if experiment.path else ""
    print(f"Experiment {experiment.name}{where}")
    if experiment.description:
        print(wrapped(experiment.description, terminal_width(), hanging=""))
    print()
    sizes, kernels = _space_section(experiment, terminal_width())
    print("Search space per problem and kernel entry:")
    print(sizes)
    if compile_:
        print(flush=True)
        print(_compile_section(experiment, list(kernels), target, quiet))
