"""The configuration a kernel table gives a shape: its own entry where the shape was tuned, else the prediction
from the table's entries (:mod:`tuner.table.predict`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tuner.config import DTYPE_BYTES, Config, Problem
from tuner.errors import TunerError
from tuner.names.key_text import pairs_text
from tuner.table.artifact import Entry, KernelTable
from tuner.table.predict import Candidate, arch_of, predict


def candidate_of(entry: Entry) -> Candidate:
    config = Config.make(entry.problem, entry.family, entry.dtype, entry.params)
    return Candidate(config, entry.time_median_ms, entry.time_median_ms, entry.multiprocessors,
                     arch_of(entry.compute_capability))


def entry_candidates(entry: Entry) -> list[Candidate]:
    """The entry's winner and its alternatives, each as measured on the entry's shape."""
    arch = arch_of(entry.compute_capability)
    others = [Candidate(Config.make(entry.problem, a.family, entry.dtype, a.params), a.time_median_ms,
                        entry.time_median_ms, entry.multiprocessors, arch) for a in entry.alternatives]
    return [candidate_of(entry), *others]


def table_candidates(entries: Iterable[Entry]) -> list[Candidate]:
    return [c for entry in entries for c in entry_candidates(entry)]


def choose(table: KernelTable, M: int, N: int, K: int, dtype: str, evaluations: Sequence[Candidate] = ()) -> str:
    """What the table gives (M, N, K, dtype), and why, in a few lines; TunerError where it gives nothing. A shape
    the table does not hold is predicted from its entries and the ``evaluations`` (every ok evaluation of its runs,
    where asked for)."""
    if min(M, N, K) < 1 or dtype not in DTYPE_BYTES:
        raise TunerError(f"expected sizes of at least 1 and one of the dtypes {', '.join(DTYPE_BYTES)}; found "
                         f"{M}x{N}x{K} {dtype}")
    problem = Problem(M, N, K)
    exact = table.entry(problem, dtype)
    if exact is not None:
        return (f"{exact.family} {pairs_text(tuple(sorted(exact.params.items())))}\n"
                f"why: tuned on this shape ({exact.time_median_ms:.4g} ms, {exact.tflops:.2f} TFLOP/s on "
                f"{exact.device_name}; run {exact.run}); kernel source {exact.source}")
    found = predict([*table_candidates(table.entries), *evaluations], problem, dtype)
    if found is None:
        tuned = sorted({e.dtype for e in table.entries})
        raise TunerError(f"the table holds no {dtype} configuration valid for {problem.label} (it holds "
                         f"{sum(e.dtype == dtype for e in table.entries)} {dtype} entries; dtypes tuned: "
                         f"{', '.join(tuned)}); tune this shape and add its run to the table")
    source = table.entry(found.neighbour.config.problem, dtype)
    device = f" on {source.device_name}" if source else " (from the runs' evaluations)"
    return (f"{found.config.family} {pairs_text(found.config.params)}\n"
            f"why: predicted, never measured on this shape: {found.reason}{device}")
