"""A kernel table as text: one line per entry."""

from __future__ import annotations

from tuner.table.artifact import KernelTable


def table_text(table: KernelTable) -> str:
    lines = [f"{'shape':<18}{'dtype':<10}{'family':<10}{'ms':>10}{'TFLOP/s':>9}{'/baseline':>10}  device, toolkit; "
             f"parameters"]
    for e in table.entries:
        ratio = "—" if e.baseline_ratio is None else f"{e.baseline_ratio:.3f}"
        params = ", ".join(f"{k}={v}" for k, v in sorted(e.params.items()))
        lines.append(f"{e.problem.label:<18}{e.dtype:<10}{e.family:<10}{e.time_median_ms:>10.4f}{e.tflops:>9.2f}"
                     f"{ratio:>10}  {e.device_name} (cc {e.compute_capability or '?'}), nvcc {e.toolkit or '?'}; "
                     f"{params}")
        if e.source_template_hash != e.template_hash:
            lines.append(f"{'':<18}the template of {e.family} changed since the run (hash {e.template_hash} then, "
                         f"{e.source_template_hash} now): {e.source} is rendered from the current one")
    lines += ["", f"{len(table.entries)} entries from {', '.join(table.runs) or 'no run named'}; /baseline: the "
                  f"baseline's time over the kernel's (above 1: faster than cuBLAS)"]
    return "\n".join(lines)
