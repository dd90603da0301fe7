"""What a backend is and what it can do, as protocols the run relies on.

Every backend evaluates configurations (:class:`Evaluates`) and describes where it measures. What only some
can do is declared by the answers of the capability protocols every backend implements: a vendor baseline
(``baseline`` answers None where there is none), a recording it replays (``recording`` answers None for a
live device) and the configurations it can answer (``recorded_configs``: None for a device, which measures any),
the device time it spent (``busy_seconds``), whether it can give the energy of a launch (``energy_unavailable``
answers why not, or None) and where its hardware counters come from (``counters``). :class:`BackendBase` gives
the "cannot" answers, so a backend of one's own implements only what it can. A backend that measures in another
process may also ``submit`` a configuration (start it and answer later, :class:`Pending`), so that the search
records one evaluation while the device measures the next, and take the hint ``prepare(problem, dtype)`` (make
the first study's inputs while the run sets up its storage).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from tuner.config import Config, Problem
from tuner.measure.measurement import Measurement

if TYPE_CHECKING:
    from tuner.counters.sources import CounterSource

LOOKAHEAD = 8
"""Valid configurations a search asks ahead of the one being measured (the current one included), unless the
backend says otherwise (``ask_ahead``): enough to keep compilers busy while the device measures."""


class Pending(Protocol):
    """An evaluation under way; ``wait`` gives its measurement."""

    def wait(self) -> Measurement: ...


class Done:
    """An evaluation already made."""

    def __init__(self, measurement: Measurement):
        self.measurement = measurement

    def wait(self) -> Measurement:
        return self.measurement


def start_evaluation(backend: Evaluates, config: Config) -> Pending:
    """Start evaluating ``config``: through the backend's ``submit`` where it has one (the device measures while
    the caller goes on), else by evaluating it now."""
    submit = getattr(backend, "submit", None)
    return submit(config) if submit is not None else Done(backend.evaluate(config))


def ask_ahead(backend: Evaluates) -> int:
    """How many configurations a search asks ahead for this backend."""
    ahead = getattr(backend, "ask_ahead", LOOKAHEAD)
    return ahead if isinstance(ahead, int) and ahead >= 1 else LOOKAHEAD


class Evaluates(Protocol):
    name: str

    def prefetch(self, configs: list[Config]) -> None:
        """A hint: these configurations are likely next (a backend may compile them ahead)."""

    def evaluate(self, config: Config) -> Measurement: ...

    def metadata(self) -> dict[str, Any]:
        """The environment of this backend's measurements: device, ceilings, versions, git, method.

        Keys: backend, device, peaks ({"theoretical": {...}, "measured": {...}} with ``<dtype>_gflops`` and
        ``bandwidth_gbs``), versions, git, measure, compile, templates, created_utc.
        """
        ...

    def close(self) -> None: ...


class MeasuresBaseline(Protocol):
    def baseline(self, problem: Problem, dtype: str) -> Measurement | None:
        """The vendor library's GEMM on this problem, by the same method; None where the backend has none."""
        ...


@dataclass(frozen=True)
class Recording:
    """Measurements made elsewhere that a backend answers from."""

    path: Path
    environments: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The environments (metadata ids → metadata) the recorded rows were measured in."""


class Replays(Protocol):
    def recording(self) -> Recording | None:
        """The recording answers come from; None for a backend that measures."""
        ...

    def environment_id(self, config: Config) -> str | None:
        """The environment ``config``'s answer comes from, where it is not the backend's own (``metadata()``)."""
        ...

    def recorded_configs(self) -> Sequence[Config] | None:
        """The only configurations the backend can answer (a search then keeps to them); None when it can measure
        any."""
        ...


class TracksBusyTime(Protocol):
    @property
    def busy_seconds(self) -> float:
        """Time the device spent verifying and timing so far (for the run's device-busy fraction)."""
        ...


class MeasuresEnergy(Protocol):
    def energy_unavailable(self) -> str | None:
        """Why this backend's measurements carry no energy (a sentence, for an objective that needs it), or None
        where they do (tuner.energy)."""
        ...


class ReadsCounters(Protocol):
    def counters(self) -> CounterSource | None:
        """Where the hardware counters of this backend's configurations come from (tuner.counters.sources:
        Nsight Compute on the GPU, a recording's); None where it reads none."""
        ...


class Backend(Evaluates, MeasuresBaseline, Replays, TracksBusyTime, MeasuresEnergy, ReadsCounters, Protocol):
    """Everything the run asks of a backend."""


class BackendBase:
    """The answers of a backend that can only evaluate: no baseline, no recording, no busy time counted."""

    busy_seconds: float = 0.0

    def prefetch(self, configs: list[Config]) -> None:
        return None

    def baseline(self, problem: Problem, dtype: str) -> Measurement | None:
        return None

    def recording(self) -> Recording | None:
        return None

    def environment_id(self, config: Config) -> str | None:
        return None

    def recorded_configs(self) -> Sequence[Config] | None:
        return None

    def energy_unavailable(self) -> str | None:
        return f"the {getattr(self, 'name', 'chosen')} backend measures no energy"
    def counters(self) -> CounterSource | None:
        return None

    def close(self) -> None:
        return None
