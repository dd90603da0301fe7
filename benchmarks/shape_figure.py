"""The shape suite's figure: per shape, our kernel's speed against each rival's, as ratios on a log axis."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter  # noqa: E402

RIVALS = {"cublas": "cuBLAS (default)", "cublaslt": "cuBLASLt (best of its heuristic)", "triton": "Triton (autotuned)"}

TICKS = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0)


def ratio_figure(rows: list[dict[str, Any]], path: Path, title: str) -> Path:
    """One panel per dtype: a group of bars per shape (ours / rival), the parity line at 1."""
    dtypes = sorted({r["dtype"] for r in rows})
    shapes = list(dict.fromkeys(r["shape"] for r in rows))
    fig, axes = plt.subplots(len(dtypes), 1, figsize=(max(8.0, 0.26 * len(shapes) + 2), 5.0 * len(dtypes)),
                             squeeze=False, sharex=True)
    width = 0.8 / len(RIVALS)
    for ax, dtype in zip(axes[:, 0], dtypes, strict=True):
        by_shape = {r["shape"]: r for r in rows if r["dtype"] == dtype}
        for offset, (rival, label) in enumerate(RIVALS.items()):
            xs = [i + (offset - 1) * width for i, s in enumerate(shapes) if by_shape.get(s, {}).get(f"ratio_{rival}")]
            ys = [by_shape[s][f"ratio_{rival}"] for s in shapes if by_shape.get(s, {}).get(f"ratio_{rival}")]
            ax.bar(xs, ys, width, label=label)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(FixedLocator(TICKS))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_ylabel(f"{dtype}: ours / rival")
        ax.grid(axis="y", which="both", alpha=0.3)
    axes[0, 0].set_title(title)
    axes[0, 0].legend(loc="upper left", fontsize="small")
    axes[-1, 0].set_xticks(range(len(shapes)), shapes, rotation=70, ha="right", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
