"""A run's options and the settings they resolve to.

:class:`RunOptions` holds what ``tuner.run``'s parameters or the command line's options give, each None where not
given. :func:`resolve` checks them in one place, by the rules the experiment file's settings follow
(:mod:`tuner.experiment.run_settings`), and lays them over the experiment's settings; its errors name each
setting as the caller does (:func:`tuner.errors.parameter_name`: ``trials`` in Python;
:func:`tuner.errors.option_name`: ``--trials`` on the command line), and so do the errors of what the run opens
after (its folder, storage, backends and studies: :attr:`RunSettings.name`). A setting the caller left to the
experiment is named by the experiment's field.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna

from tuner.backends.protocol import Backend
from tuner.errors import Naming, TunerError, option_name
from tuner.experiment.run_settings import COUNTERS, HEARTBEAT, SEED, TIMEOUT, TRANSFER, TRIALS, Rule
from tuner.experiment.schema import Experiment
from tuner.results.objectives import Objectives
from tuner.search.callbacks import Callback, adapted
from tuner.search.storage import EXAMPLE_URL, HEARTBEAT_INTERVAL_S, check_storage_url
from tuner.search.study import Budget, Choice, check_strategy
from tuner.settings import renamed_keyword
from tuner.tuning.energy_objective import resolve_objective


@renamed_keyword("sampler", "strategy")
@dataclass(frozen=True)
class RunOptions:
    """What the caller asks of a run beyond the experiment (see :func:`tuner.tuning.run.run`)."""

    backend: str | Backend | None = None
    replay: str | os.PathLike[str] | None = None
    trials: int | None = None
    timeout: float | None = None
    strategy: Choice | None = None
    seed: int | None = None
    transfer: int | None = None
    storage: str | optuna.storages.BaseStorage | None = None
    out: str | os.PathLike[str] | None = None
    quiet: bool = False
    report: bool = True
    summary: bool | None = None
    callbacks: Sequence[Callback] = ()
    gpus: str | None = None
    heartbeat: int | None = None
    replay_pace: float | None = None
    objective: str | Sequence[str] | None = None
    counters: str | None = None
    remeasure_ceilings: bool = False

    def resume_command(self, experiment: Experiment, out: Path, objective: Objectives,
                       backend: str | Backend) -> str:
        """The command that continues this run on ``backend`` (the one given, or the default chosen): the same
        options, as the command line names them."""
        given: dict[str, Any] = {
            "backend": backend if isinstance(backend, str) else None, "replay": self.replay,
            "objective": ",".join(objective) if self.objective is not None else None,
            "trials": self.trials, "timeout": self.timeout,
            "strategy": self.strategy if isinstance(self.strategy, str) else None, "seed": self.seed,
            "transfer": self.transfer, "storage": self.storage if isinstance(self.storage, str) else None,
            "out": out, "gpus": self.gpus, "heartbeat": self.heartbeat, "replay_pace": self.replay_pace,
            "counters": self.counters,
        }
        words = ["python", "-m", "tuner", "run", str(experiment.path)]
        for name, value in given.items():
            if value is not None:
                words += [option_name(name), str(value)]
        return shlex.join(words)


@dataclass(frozen=True)
class RunSettings:
    """What a run uses: the options laid over the experiment's settings, each checked."""

    experiment: Experiment
    """The experiment as the run searches it: its objective, transfer and counters set."""
    strategy: Choice
    objective: Objectives
    budget: Budget
    seed: int
    heartbeat_s: int
    out: Path
    summary: bool
    name: Naming
    """How the caller names a setting (:mod:`tuner.errors`), for the errors of what the run opens."""


def resolve(options: RunOptions, experiment: Experiment, name: Naming) -> RunSettings:
    """Check the options and lay them over the experiment's settings: TunerError naming the first setting that
    breaks its rule, before anything is opened or written."""
    for callback in options.callbacks:
        adapted(callback)  # a function of neither form is refused before anything is written
    strategy: Choice | None
    experiment, strategy, goal = resolve_objective(experiment, options.objective, options.strategy, options.quiet,
                                                   name)
    search = experiment.search
    strategy = strategy if strategy is not None else search.strategy
    check_strategy(strategy, name)
    trials = _setting(options.trials, TRIALS, name("trials"), search.trials, "search.trials")
    timeout = _setting(options.timeout, TIMEOUT, name("timeout"), search.timeout_s, "search.timeout_s")
    seed = _setting(options.seed, SEED, name("seed"), search.seed, "search.seed")
    transfer = _setting(options.transfer, TRANSFER, name("transfer"), search.transfer, "search.transfer")
    counters = _setting(options.counters, COUNTERS, name("counters"), experiment.measure.counters,
                        "measure.counters")
    experiment = dataclasses.replace(experiment, search=dataclasses.replace(search, transfer=transfer),
                                     measure=dataclasses.replace(experiment.measure, counters=counters))
    out = _output_folder(options.out, experiment, name("out"))
    if isinstance(options.storage, str):
        check_storage_url(options.storage, name)
    elif options.storage is not None and not isinstance(options.storage, optuna.storages.BaseStorage):
        raise TunerError(f"{name('storage')} is a storage URL (such as {EXAMPLE_URL}) or an Optuna storage object, "
                         f"not {options.storage!r}")
    heartbeat = _setting(options.heartbeat, HEARTBEAT, name("heartbeat"), HEARTBEAT_INTERVAL_S, None)
    summary = not options.quiet if options.summary is None else options.summary
    return RunSettings(experiment, strategy, goal, Budget(trials, timeout), seed, heartbeat, out, summary, name)


def _setting(given: Any, rule: Rule, name: str, default: Any, field: str | None) -> Any:
    """The caller's value, else the experiment's ``field`` (None: a default of the run), checked by ``rule``: the
    error names the caller's ``name`` or the experiment's field."""
    if given is not None:
        return rule.check(given, name)
    if field is None or default is None:  # a search without a time budget has a timeout of None
        return default
    return rule.check(default, f"the experiment's {field}")


def _output_folder(out: str | os.PathLike[str] | None, experiment: Experiment, name: str) -> Path:
    if out is None:
        return Path("reports") / experiment.name
    text = str(out)
    if not text.strip():
        raise TunerError(f"{name} is empty: give the output folder (without {name}, it is reports/<experiment "
                         f"name>)")
    if "\0" in text:
        raise TunerError(f"{name} may not hold a NUL character: {text!r}")
    return Path(text)
