"""The verify–time–verify step both measuring processes share, with a timer and outputs that log what is done."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from tuner.backends.measuring_process import Served
from tuner.backends.verify_and_time import Bench, verify_and_time
from tuner.kernels.verify import Verdict
from tuner.measure.machine_load import LoadMeter
from tuner.measure.measurement import Resources, Status, Timing
from tuner.measure.method import summarize
from tuner.settings import MeasureSettings

SETTINGS = MeasureSettings(warmup=3, min_samples=3, max_samples=3)
SAMPLES = 3


class Pipe:
    def __init__(self) -> None:
        self.sent: list[tuple[str, object]] = []

    def send(self, message: tuple[str, object]) -> None:
        self.sent.append(message)


class LoggedTimer:
    """Runs the warm-up, then SAMPLES samples with ``before_each`` before each, as a device's timer does."""

    def __init__(self, log: list[str]):
        self.log = log
        self.asked: list[tuple[int | None, bool]] = []

    def time(self, run: Callable[[], None], settings: MeasureSettings, warmup: int | None = None,
             before_each: Callable[[], None] | None = None) -> Timing:
        self.asked.append((warmup, before_each is not None))
        for _ in range(settings.warmup if warmup is None else warmup):
            self.log.append("warm-up")
            run()
        for _ in range(SAMPLES):
            if before_each is not None:
                before_each()
            self.log.append("sample")
            run()
        return summarize([1.0] * SAMPLES)


class Outputs:
    """Holds whether the last run wrote its results over the poison; ``writes`` says which runs write."""

    def __init__(self, log: list[str], writes: Callable[[int], bool] = lambda n: True):
        self.log, self.writes = log, writes
        self.runs = 0
        self.written = False

    def run(self) -> None:
        self.runs += 1
        self.log.append("run")
        if self.writes(self.runs):
            self.written = True

    def prepare_outputs(self) -> None:
        self.log.append("poison")
        self.written = False

    def check(self) -> Verdict:
        self.log.append("check")
        return Verdict(True, error=1e-9) if self.written else Verdict(False, None, "the outputs hold the poison")


def bench(log: list[str], settings: MeasureSettings = SETTINGS, **more) -> tuple[Bench, Served, LoggedTimer]:
    served = Served(Pipe())  # type: ignore[arg-type]
    timer = LoggedTimer(log)
    return Bench(served, settings, timer, LoadMeter(counters=None), settle=lambda: log.append("settle"),
                 **more), served, timer


def test_the_outputs_are_poisoned_before_the_verified_run_and_every_timed_sample():
    log: list[str] = []
    outputs = Outputs(log)
    measuring, served, timer = bench(log)
    result = verify_and_time(outputs.run, outputs, measuring, Resources())
    assert result.status is Status.OK and result.error == 1e-9 and result.timing.count == SAMPLES
    assert log == ["poison", "run", "settle", "check",  # the verified run is the first warm-up run
                   *["warm-up", "run"] * (SETTINGS.warmup - 1),
                   *["poison", "sample", "run"] * SAMPLES,
                   "check"]  # what the last timed run left
    assert timer.asked == [(SETTINGS.warmup - 1, True)]
    assert served.conn.sent == [("started", None)] and served.busy > 0
    assert result.load is not None


def test_timed_runs_that_write_nothing_are_wrong():
    log: list[str] = []
    outputs = Outputs(log, writes=lambda n: n == 1)
    result = verify_and_time(outputs.run, outputs, bench(log)[0], Resources(registers=3))
    assert result.status is Status.WRONG and result.resources.registers == 3
    assert result.reason == f"right on its first call, wrong after {SAMPLES} timed calls: the outputs hold the poison"
    on_gpu = Outputs(log, writes=lambda n: n == 1)
    result = verify_and_time(on_gpu.run, on_gpu, bench(log, run_words=("launch", "launches"))[0], Resources())
    assert result.reason.startswith(f"right on its first launch, wrong after {SAMPLES} timed launches")


def test_a_kernel_wrong_at_once_is_never_timed():
    log: list[str] = []
    outputs = Outputs(log, writes=lambda n: False)
    measuring, _, timer = bench(log)
    result = verify_and_time(outputs.run, outputs, measuring, Resources())
    assert result.status is Status.WRONG and result.timing is None and timer.asked == []


def test_without_verification_the_kernel_is_only_timed():
    log: list[str] = []
    outputs = Outputs(log, writes=lambda n: False)
    measuring, _, timer = bench(log, replace(SETTINGS, verify=False))
    result = verify_and_time(outputs.run, outputs, measuring, Resources())
    assert result.status is Status.OK and result.error is None
    assert timer.asked == [(None, False)] and "check" not in log and "poison" not in log


class Refused(Exception):
    pass


def test_a_run_the_device_refuses_is_invalid():
    log: list[str] = []

    def refused() -> None:
        raise Refused("too many resources requested for launch")

    measuring = bench(log, rejected=(Refused,))[0]
    result = verify_and_time(refused, Outputs(log), measuring, Resources())
    assert result.status is Status.INVALID and "too many resources" in result.reason
