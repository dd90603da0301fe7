"""What a backend is and what it can do, as protocols the run relies on.

Every backend evaluates configurations (:class:`Evaluates`) and describes where it measures. Every backend also
answers a few questions, "cannot" being an answer: a vendor baseline (``baseline`` answers None where there is
none), a recording it replays (``recording`` answers None for a live device) and the configurations it can answer
(``recorded_configs``: None for a device, which measures any), and the device time it spent (``busy_seconds``).
:class:`BackendBase` gives the "cannot" answers, so a backend of one's own implements only what it can.

What only some backends can do they declare: ``abilities`` lists the :class:`~tuner.backends.abilities.Ability`
they have, and for each a protocol below says what they then implement. The run reaches an ability only through
the functions here (``start_evaluation``, ``compiling_ahead``, ``prepare_inputs``, ``counter_source``…), which
ask nothing of a backend that does not declare it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast

from tuner.backends.abilities import Ability
from tuner.config import Config, Problem
from tuner.errors import Naming, TunerError, option_name
from tuner.measure.measurement import Measurement

if TYPE_CHECKING:
    import os

    from tuner.backends.device import Device
    from tuner.counters.sources import CounterSource
    from tuner.experiment.schema import Experiment

LOOKAHEAD = 8
"""Valid configurations a search asks ahead of the one being measured (the current one included), unless a
backend that compiles ahead says otherwise (``ask_ahead``): enough to keep compilers busy while the device
measures."""


class Pending(Protocol):
    """An evaluation under way; ``wait`` gives its measurement."""

    def wait(self) -> Measurement: ...


class Done:
    """An evaluation already made."""

    def __init__(self, measurement: Measurement):
        self.measurement = measurement

    def wait(self) -> Measurement:
        return self.measurement


class Evaluates(Protocol):
    name: str
    abilities: frozenset[Ability]
    """What the backend can do beyond evaluating (tuner.backends.abilities)."""

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


class Backend(Evaluates, MeasuresBaseline, Replays, TracksBusyTime, Protocol):
    """Everything the run asks of every backend."""


@dataclass(frozen=True)
class Opening:
    """What a run asks of the backend it opens: ``replay``: the recording named (``--replay``); ``wait``: wait until
    a measuring process is ready (else :func:`wait_until_ready` does); ``progress``: say on stderr what is measured
    where a device's ceilings are measured; ``pace``: the replay pace (``--replay-pace``); ``name``: how errors name
    the run's settings (:mod:`tuner.errors`)."""

    replay: str | os.PathLike[str] | None = None
    wait: bool = True
    progress: bool = False
    pace: float | None = None
    name: Naming = option_name


class BackendBase:
    """The answers of a backend that can only evaluate: no baseline, no recording, no busy time counted, no
    abilities. Its class side is what the catalog (:mod:`tuner.backends.catalog`) asks of a backend: whether it is
    an experiment's default (``serves``), to open it (``open``, ``open_on_gpus``) and the device of this machine it
    measures on (``local_device``)."""

    name: str
    abilities: frozenset[Ability] = frozenset()
    busy_seconds: float = 0.0
    on_gpus: ClassVar[bool] = False
    """Whether ``open_on_gpus`` opens one backend per GPU (``--gpus``)."""

    @classmethod
    def serves(cls, experiment: Experiment) -> bool:
        """Whether a run of ``experiment`` takes this backend when none is named."""
        return False

    @classmethod
    def open(cls, experiment: Experiment, opening: Opening) -> Backend:
        """The backend of a run of ``experiment``, or a TunerError saying in one paragraph why it cannot open."""
        raise TunerError(f"the backend '{cls.name}' is not opened by name")

    @classmethod
    def open_on_gpus(cls, experiment: Experiment, gpus: str, opening: Opening) -> list[Backend]:
        """One backend per GPU that ``gpus`` names (``all`` or indices), where ``on_gpus`` says it can."""
        raise TunerError(f"{opening.name('gpus')} is not used with the backend '{cls.name}'")

    @classmethod
    def local_device(cls) -> Device | None:
        """The device of this machine it measures on (None: none)."""
        return None

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

    def close(self) -> None:
        return None


# --- the abilities a backend may declare, and the only way to them -----------------------------------------


class Submits(Protocol):
    def submit(self, config: Config) -> Pending:
        """Start evaluating ``config``; the device measures while the caller goes on."""
        ...


class CompilesAhead(Protocol):
    ask_ahead: int
    """Valid configurations a search asks ahead for this backend (the one measured included)."""

    def ready(self, config: Config) -> bool:
        """Whether ``config`` can start without waiting for a compile under way."""
        ...

    def wait_compiled(self, configs: list[Config], timeout: float | None = None) -> bool:
        """Wait until one of ``configs`` is ``ready``; False when none is after ``timeout`` seconds."""
        ...


class Prepares(Protocol):
    def prepare(self, problem: Problem, dtype: str) -> None:
        """A hint: the next requests are about this problem and dtype (make their inputs now)."""
        ...


class StartsInBackground(Protocol):
    def wait_ready(self) -> None:
        """Wait until the backend can measure; TunerError, in one paragraph, when it cannot."""
        ...


class DescribesDevice(Protocol):
    def device(self, remeasure: bool = False) -> dict[str, Any]:
        """The device's summary: description, versions, peaks, ceilings (``remeasure``: the ceilings again)."""
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


def start_evaluation(backend: Evaluates, config: Config) -> Pending:
    """Start evaluating ``config``: through ``submit`` where the backend submits (the device measures while the
    caller goes on), else by evaluating it now."""
    if Ability.SUBMITS in backend.abilities:
        return cast(Submits, backend).submit(config)
    return Done(backend.evaluate(config))


def compiling_ahead(backend: Evaluates) -> CompilesAhead | None:
    """The backend as one that compiles ahead, or None where it does not."""
    return cast(CompilesAhead, backend) if Ability.COMPILES_AHEAD in backend.abilities else None


def ask_ahead(backend: Evaluates) -> int:
    """How many configurations a search asks ahead for this backend."""
    compiling = compiling_ahead(backend)
    ahead = compiling.ask_ahead if compiling is not None else LOOKAHEAD
    return ahead if isinstance(ahead, int) and ahead >= 1 else LOOKAHEAD


def prepare_inputs(backend: Evaluates, problem: Problem, dtype: str) -> None:
    """Tell a backend that prepares inputs which problem comes next (nothing for the others)."""
    if Ability.PREPARES in backend.abilities:
        cast(Prepares, backend).prepare(problem, dtype)


def wait_until_ready(backend: Evaluates) -> None:
    """Wait for a backend that starts in the background (the others are ready once made)."""
    if Ability.STARTS_IN_BACKGROUND in backend.abilities:
        cast(StartsInBackground, backend).wait_ready()


def energy_refusal(backend: Evaluates) -> str | None:
    """Why the backend's measurements carry no energy, or None where they do."""
    if Ability.MEASURES_ENERGY not in backend.abilities:
        return f"the {backend.name} backend measures no energy"
    return cast(MeasuresEnergy, backend).energy_unavailable()


def counter_source(backend: Evaluates) -> CounterSource | None:
    """Where the backend's hardware counters come from; None where it reads none."""
    if Ability.READS_COUNTERS not in backend.abilities:
        return None
    return cast(ReadsCounters, backend).counters()


ABILITY_PROTOCOLS: dict[Ability, type] = {
    Ability.SUBMITS: Submits,
    Ability.COMPILES_AHEAD: CompilesAhead,
    Ability.PREPARES: Prepares,
    Ability.STARTS_IN_BACKGROUND: StartsInBackground,
    Ability.DESCRIBES_DEVICE: DescribesDevice,
    Ability.MEASURES_ENERGY: MeasuresEnergy,
    Ability.READS_COUNTERS: ReadsCounters,
}
"""What a backend that declares each ability implements."""
