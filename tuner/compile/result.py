"""What compiling one source gives: the binary and the compiler's report, or its message."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tuner.measure.measurement import Resources


@dataclass(frozen=True)
class CompileResult:
    ok: bool
    binary: bytes | None
    """The compiled module (a cubin, or a shared library for the CPU)."""
    resources: Resources
    log: str
    """The compiler's output: its resource report when it compiled, its message when it did not."""
    seconds: float
    """Wall time of the compile that produced this result (also when it now comes from the cache)."""
    cached: bool
    path: Path | None = None
    """Where the binary lies in the cache, for a module loaded from a file (a shared library)."""
    resource_limit: bool = False
    """The compiler refused for a hardware limit (too much shared or local data): a static invalidity."""

    @property
    def compile_time_s(self) -> float:
        """Seconds this evaluation spent compiling: 0 when the binary came from the cache."""
        return 0.0 if self.cached else self.seconds
