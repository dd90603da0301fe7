"""How numbers read in the figures and tables."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from tuner.results import table as results


def finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def number(value: Any) -> str:
    """A rate as people read it: 37.5, 599, 1,000, 52,300 (— when unknown)."""
    v = finite(value)
    if v is None:
        return "—"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def percent(value: Any, digits: int = 1, scale: float = 1.0) -> str:
    """``value × scale`` as a percentage (scale 100 for a fraction)."""
    v = finite(value)
    return "—" if v is None else f"{v * scale:.{digits}f} %"


def fixed(value: Any, digits: int) -> str:
    v = finite(value)
    return "—" if v is None else f"{v:,.{digits}f}"


def integer(value: Any) -> str:
    v = finite(value)
    return "—" if v is None else f"{v:,.0f}"


def params_text(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "—"


def rate_unit(dtype: str) -> str:
    """GFLOP/s, or GOP/s for integer multiply-adds."""
    return "GOP/s" if dtype == "int32" else "GFLOP/s"


def performance_unit(rows: pd.DataFrame, dtype: str) -> str:
    """The unit of these rows' ``performance``: the dtype's rate, or GB/s where no kernel among them computes."""
    return "GB/s" if results.unit_of(rows) == "GB/s" else rate_unit(dtype)
