"""The measuring channel: a backend's line to its measuring process, one request at a time, its device time, and
a fresh measuring process after a crash.

A request is sent at once and answered later (:class:`Request`), so that the caller can record the previous
evaluation while the device measures this one. A measuring process that crashes or hangs on a request turns that
request's answer into the backend's ``crashed`` measurement (with the reason), and the next request starts a fresh
measuring process.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from tuner.backends.measuring_process import MeasuringProcess, MeasuringProcessCrashed
from tuner.errors import TunerError
from tuner.measure.measurement import Measurement

SETUP_TIMEOUT_S = 300.0
"""Before the first launch of a request: inputs, reference, buffers, loading the kernel."""
DEVICE_TIMEOUT_S = 600.0
"""Describing the device, measuring its ceilings when they are not cached."""


class Request:
    """One request in flight; ``wait`` gives its answer (the same answer every time it is called)."""

    def __init__(self, channel: MeasuringChannel, process: MeasuringProcess, kind: str, crashed: Measurement,
                 finish: Callable[[Measurement], Measurement]):
        self.channel, self.process, self.kind = channel, process, kind
        self.crashed, self.finish = crashed, finish
        self._answer: Measurement | None = None

    def wait(self) -> Measurement:
        if self._answer is None:
            self._answer = self.finish(self.channel._answer(self))
        return self._answer


class MeasuringChannel:
    """A backend's measuring process (started by ``start``), replaced after a crash; ``busy_seconds`` adds up the
    device time of every answered request. ``device`` names the device in messages ("GPU", "CPU")."""

    def __init__(self, start: Callable[[], MeasuringProcess], device: str, run_timeout_s: float):
        """``start``: starts a measuring process without waiting for it to be ready."""
        self._start, self.device, self.run_timeout_s = start, device, run_timeout_s
        self.busy_seconds = 0.0
        self._process: MeasuringProcess | None = None
        self._in_flight: Request | None = None

    def start(self) -> None:
        """Start the measuring process without waiting for it (``live`` waits)."""
        if self._process is None or not self._process.alive():
            if self._process is not None:
                self._process.kill()
            self._process = self._start()

    def live(self) -> MeasuringProcess:
        """The measuring process, started afresh when there is none or it died, and ready (TunerError when it cannot
        start)."""
        try:
            self.start()
            assert self._process is not None
            self._process.wait_ready()
        except MeasuringProcessCrashed as exc:
            self._drop()
            raise TunerError(f"the {self.device} worker could not start: {exc}") from None
        except TunerError:
            self._drop()
            raise
        return self._process

    def submit(self, kind: str, payload: Any, crashed: Measurement,
               finish: Callable[[Measurement], Measurement] = lambda measurement: measurement) -> Request:
        """Send a request (after the one in flight is answered); ``finish`` completes its answer."""
        if self._in_flight is not None:
            self._in_flight.wait()
        process = self.live()
        request = Request(self, process, kind, crashed, finish)
        with contextlib.suppress(BrokenPipeError, OSError):  # died since it was last seen alive: the answer says so
            process.send(kind, payload)
        self._in_flight = request
        return request

    def request(self, kind: str, payload: Any, crashed: Measurement) -> Measurement:
        return self.submit(kind, payload, crashed).wait()

    def describe(self, remeasure: bool, progress: bool = False) -> dict[str, Any]:
        """The device's summary from the measuring process (TunerError when the measuring process fails at it);
        ``progress``: the measuring process says on stderr what it measures where it measures the ceilings."""
        if self._in_flight is not None:
            self._in_flight.wait()
        try:
            process = self.live()
            process.send("device", (remeasure, progress))
            summary, _ = process.receive(DEVICE_TIMEOUT_S, DEVICE_TIMEOUT_S)
        except MeasuringProcessCrashed as exc:
            self._drop()
            raise TunerError(f"describing the {self.device} failed: {exc}") from None
        return dict(summary)

    def running(self) -> bool:
        """Whether a measuring process is up (none after a crash, until the next request starts one)."""
        return self._process is not None and self._process.alive()

    def stop(self) -> None:
        if self._process is not None:
            self._process.stop()
            self._process = None
        self._in_flight = None

    def _answer(self, request: Request) -> Measurement:
        if self._in_flight is request:
            self._in_flight = None
        try:
            value, busy = request.process.receive(self.run_timeout_s, max(SETUP_TIMEOUT_S, self.run_timeout_s))
        except MeasuringProcessCrashed as exc:
            if self._process is request.process:
                self._drop()
            else:
                request.process.kill()
            self.busy_seconds += exc.busy_seconds
            print(f"warning: {request.kind} crashed the {self.device} worker; starting a fresh one "
                  f"({str(exc).splitlines()[0]})", file=sys.stderr)
            return replace(request.crashed, reason=str(exc))
        except (EOFError, OSError) as exc:  # the pipe closed under a request that was never sent
            self._drop()
            return replace(request.crashed, reason=f"the {self.device} worker was gone: {exc}")
        self.busy_seconds += busy
        answer: Measurement = value
        return answer

    def _drop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process = None
