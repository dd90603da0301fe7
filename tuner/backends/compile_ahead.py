"""What the GPU and the CPU backends share: configurations compiled ahead by a pool of compiler processes, then
verified and timed in a measuring process of the backend's own (:mod:`tuner.backends.measuring_channel`),
which also describes the device and is replaced after a crash.

``prefetch`` hands the configurations a study asks ahead to the pool. Where the measurement leaves cores to the
compilers (``overlap``), they compile at once, while the measuring process measures; where it takes every core, their
sources wait and are compiled together, in parallel, right before the next measurement, so that no compiler
shares a core with a timed kernel. ``ready`` and ``wait_compiled`` say which configurations are compiled.
"""

from __future__ import annotations

from typing import Any, Self

from tuner.backends.abilities import Ability
from tuner.backends.energy_capability import environment_refusal
from tuner.backends.measuring_channel import MeasuringChannel
from tuner.backends.measuring_process import MeasuringProcess
from tuner.backends.protocol import BackendBase
from tuner.compile.pool import CompilePool
from tuner.compile.result import CompileResult
from tuner.config import Config
from tuner.kernels.discovery import get_family
from tuner.kernels.render import render
from tuner.settings import CompileSettings, MeasureSettings


class CompileAheadBackend(BackendBase):
    """A backend that compiles ahead and measures in a measuring process (see the module text). A subclass starts its
    measuring process (``start_measuring_process``), builds its environment from the device's summary
    (``environment_of``) and evaluates."""

    abilities = frozenset({Ability.DESCRIBES_DEVICE, Ability.MEASURES_ENERGY})
    target: str | None = None
    """The target of the families it compiles ahead ("c", "cuda"); None: every family's."""

    def __init__(self, measure: MeasureSettings, compile_settings: CompileSettings, compiler: CompilePool,
                 device_word: str, overlap: bool = True, owns_compiler: bool = True, progress: bool = False):
        """``device_word`` names the device in messages ("GPU"); ``owns_compiler``: ``close`` closes the pool (else one
        shared with other backends, closed by its owner); ``progress``: the measuring process says on stderr what it
        measures where it measures the device's ceilings (a first run)."""
        self.measure, self.compile, self.compiler = measure, compile_settings, compiler
        self.overlap, self.progress = overlap, progress
        self._owns_compiler = owns_compiler
        self._waiting: list[str] = []
        self.channel = MeasuringChannel(self.start_measuring_process, device_word, measure.timeout_s)
        self._device: dict[str, Any] | None = None
        self._environment: dict[str, Any] | None = None

    def start_measuring_process(self) -> MeasuringProcess:
        """Start the measuring process without waiting for it to be ready."""
        raise NotImplementedError

    def environment_of(self, device: dict[str, Any]) -> dict[str, Any]:
        """The environment of the measurements (``metadata``) on the device that ``device`` summarises."""
        raise NotImplementedError

    @property
    def busy_seconds(self) -> float:  # type: ignore[override]
        return self.channel.busy_seconds

    # --- compiling ahead -------------------------------------------------------------------------------------

    def prefetch(self, configs: list[Config]) -> None:
        for config in configs:
            if self.target is not None and get_family(config.family).target != self.target:
                continue
            if self.overlap:
                self.compiler.submit(render(config))
            else:
                self._waiting.append(render(config))

    def compiled(self, source: str) -> CompileResult:
        """The compiled ``source``, from the cache or a compile under way, else compiled now; the sources waiting
        for a measurement first (they compile in parallel, while nothing is being timed)."""
        waiting, self._waiting = self._waiting, []
        for text in waiting:
            self.compiler.submit(text)
        return self.compiler.result(source)

    def ready(self, config: Config) -> bool:
        """Whether the configuration can start without waiting for a compile under way."""
        return not self.compiler.compiling(render(config))

    def wait_compiled(self, configs: list[Config], timeout: float | None = None) -> bool:
        """Wait until one of the configurations is ``ready``; False when none is after ``timeout`` seconds."""
        return self.compiler.wait_any([render(config) for config in configs], timeout)

    # --- the device --------------------------------------------------------------------------------------------

    def device(self, remeasure: bool = False) -> dict[str, Any]:
        """The device's summary from the measuring process: description, versions, peaks, ceilings."""
        if self._device is None or remeasure:
            self._device = self.channel.describe(remeasure, self.progress)
        return self._device

    def metadata(self) -> dict[str, Any]:
        if self._environment is None:
            self._environment = self.environment_of(self.device())
        return self._environment

    def energy_unavailable(self) -> str | None:
        return environment_refusal(self.metadata())

    def close(self) -> None:
        self.channel.stop()
        if self._owns_compiler:
            self.compiler.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
