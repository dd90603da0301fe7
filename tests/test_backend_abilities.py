"""The abilities each backend declares, that each declaration is kept, and that nothing undeclared is asked."""

from __future__ import annotations

import inspect

import pytest

from tests.scripted_backend import ScriptedBackend
from tuner.backends.abilities import Ability
from tuner.backends.catalog import NAMES, backend_class
from tuner.backends.protocol import (
    ABILITY_PROTOCOLS,
    LOOKAHEAD,
    BackendBase,
    Done,
    ask_ahead,
    compiling_ahead,
    counter_source,
    energy_refusal,
    prepare_inputs,
    start_evaluation,
    wait_until_ready,
)
from tuner.backends.replay.recorded import RecordedBackend
from tuner.config import Config, Problem

DECLARED = {
    "pycuda": {Ability.SUBMITS, Ability.COMPILES_AHEAD, Ability.PREPARES, Ability.STARTS_IN_BACKGROUND,
               Ability.DESCRIBES_DEVICE, Ability.MEASURES_ENERGY, Ability.READS_COUNTERS},
    "cpu": {Ability.DESCRIBES_DEVICE, Ability.MEASURES_ENERGY},
    "replay": {Ability.MEASURES_ENERGY, Ability.READS_COUNTERS},
}
CONFIG = Config.make(Problem(64, 64, 64), "tiled", "float32", {"TILE_WIDTH": 16})


def methods(protocol: type) -> set[str]:
    return {name for name, value in vars(protocol).items() if inspect.isfunction(value) and not name.startswith("_")}


def test_the_catalog_names_every_backend_once_with_what_it_declares():
    assert set(NAMES) == set(DECLARED)
    for name in NAMES:
        assert backend_class(name).abilities == DECLARED[name], name
        assert backend_class(name).name == name


def test_every_ability_has_a_protocol():
    assert set(ABILITY_PROTOCOLS) == set(Ability)
    assert all(methods(protocol) for protocol in ABILITY_PROTOCOLS.values())


@pytest.mark.parametrize("cls", [*(backend_class(name) for name in NAMES), RecordedBackend],
                         ids=[*NAMES, "recorded"])
def test_a_backend_implements_what_it_declares(cls):
    for ability in cls.abilities:
        missing = [m for m in methods(ABILITY_PROTOCOLS[ability]) if not callable(getattr(cls, m, None))]
        assert not missing, f"{cls.__name__} declares '{ability}' but lacks {missing}"


def test_recordings_of_kernel_entries_and_the_base_declare_nothing():
    assert RecordedBackend.abilities == frozenset() and BackendBase.abilities == frozenset()


class Undeclared(ScriptedBackend):
    """Has the methods of every ability, and declares none: the run must use none of them."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []
        self.ask_ahead = 3

    def submit(self, config: Config) -> Done:
        self.asked.append("submit")
        return Done(self.evaluate(config))

    def ready(self, config: Config) -> bool:
        self.asked.append("ready")
        return True

    def prepare(self, problem: Problem, dtype: str) -> None:
        self.asked.append("prepare")

    def wait_ready(self) -> None:
        self.asked.append("wait_ready")

    def energy_unavailable(self) -> str | None:
        self.asked.append("energy_unavailable")
        return None

    def counters(self) -> object:
        self.asked.append("counters")
        return object()

    def device(self, remeasure: bool = False) -> dict:
        self.asked.append("device")
        return {}


def test_what_a_backend_does_not_declare_is_never_asked():
    backend = Undeclared()
    assert isinstance(start_evaluation(backend, CONFIG), Done) and backend.calls == [CONFIG.key]
    assert compiling_ahead(backend) is None and ask_ahead(backend) == LOOKAHEAD
    prepare_inputs(backend, CONFIG.problem, CONFIG.dtype)
    wait_until_ready(backend)
    assert counter_source(backend) is None
    assert energy_refusal(backend) == "the scripted backend measures no energy"
    assert backend.asked == []


def test_what_a_backend_declares_is_asked():
    backend = Undeclared()
    backend.abilities = frozenset(Ability) - {Ability.COMPILES_AHEAD}
    start_evaluation(backend, CONFIG)
    prepare_inputs(backend, CONFIG.problem, CONFIG.dtype)
    wait_until_ready(backend)
    assert energy_refusal(backend) is None and counter_source(backend) is not None
    assert ask_ahead(backend) == LOOKAHEAD
    assert backend.asked == ["submit", "prepare", "wait_ready", "energy_unavailable", "counters"]
    backend.abilities = frozenset({Ability.COMPILES_AHEAD})
    assert compiling_ahead(backend) is backend and ask_ahead(backend) == 3
