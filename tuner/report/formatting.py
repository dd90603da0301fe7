"""How numbers read in the figures and tables."""

from __future__ import annotations

import math
from typing import Any


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def number(value: Any) -> str:
    """A rate as people read it: 37.5, 599, 1,000, 52,300 (— when unknown)."""
    v = _finite(value)
    if v is None:
        return "—"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def percent(value: Any, digits: int = 1, scale: float = 1.0) -> str:
    """``value × scale`` as a percentage (scale 100 for a fraction)."""
    v = _finite(value)
    return "—" if v is None else f"{v * scale:.{digits}f} %"


def fixed(value: Any, digits: int) -> str:
    v = _finite(value)
    return "—" if v is None else f"{v:,.{digits}f}"


def integer(value: Any) -> str:
    v = _finite(value)
    return "—" if v is None else f"{v:,.0f}"


def params_text(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "—"


def rate_unit(dtype: str) -> str:
    """GFLOP/s, or GOP/s for integer multiply-adds."""
    return "GOP/s" if dtype == "int32" else "GFLOP/s"
