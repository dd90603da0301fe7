"""A measuring process (the process a backend measures in) and the pipe to it: a fault or a hang ends only that
process.

The parent sends one request at a time, ``(kind, payload)`` (:meth:`MeasuringProcess.send`), and reads its answer
(:meth:`MeasuringProcess.receive`) before sending the next. The measuring process answers ``("started", None)``
right before it first runs the kernel (the parent's hang timeout runs from there), then ``("result", (value,
busy_seconds))``; or ``("fatal", (text, busy_seconds))`` after a fault that leaves it unusable, and exits. A
measuring process that dies or hangs raises MeasuringProcessCrashed in the parent, which kills it; the backend then
starts a fresh one. Measuring processes die with their parent (:func:`tuner.lifetime.die_with_parent`). Inside, the
backend's measurer (:mod:`tuner.backends.pycuda.measurer`, :mod:`tuner.backends.cpu.measurer`) answers the requests.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from multiprocessing import get_context
from multiprocessing.connection import Connection
from typing import Any

from tuner.backends.child_start import main_module_hidden
from tuner.errors import TunerError
from tuner.lifetime import die_with_parent


class MeasuringProcessCrashed(Exception):
    """The measuring process died or hung; the message says how, ``busy_seconds`` how long the device had been at it."""

    def __init__(self, message: str, busy_seconds: float = 0.0):
        super().__init__(message)
        self.busy_seconds = busy_seconds


def exit_text(code: int | None) -> str:
    """An exit code in words: "exit code 3", "killed by SIGSEGV"."""
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
"""What sizes the thread pools of OpenMP and of numpy's BLAS, read once when they load: a measuring process's
environment sets them."""


class Fatal(Exception):
    """A fault after which the measuring process's state (a CUDA context, a process image) cannot be trusted."""


def _bootstrap(entry: Callable[..., None], parent_pid: int, conn: Connection, *args: Any) -> None:
    die_with_parent(parent_pid)
    # Ctrl-C reaches every process of the terminal's group: the parent alone stops the run, and ends this one.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    entry(conn, *args)


@contextlib.contextmanager
def _environment(overrides: Mapping[str, str]) -> Iterator[None]:
    """``os.environ`` with ``overrides`` while a child process starts (it inherits the environment)."""
    saved = {name: os.environ.get(name) for name in overrides}
    os.environ.update(overrides)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class MeasuringProcess:
    """One measuring process, started with ``entry(conn, *args)``, and the pipe to it."""

    def __init__(self, entry: Callable[..., None], args: tuple[Any, ...], name: str, start_timeout_s: float,
                 environment: Mapping[str, str] | None = None, wait: bool = True):
        """``environment``: variables the measuring process starts with beyond the parent's (such as its thread count);
        ``wait``: wait until it is ready (else ``wait_ready`` does, before its first request)."""
        context = get_context("spawn")
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_bootstrap, args=(entry, os.getpid(), child, *args), daemon=True,
                                       name=name)
        with _environment(environment or {}), main_module_hidden():
            self.process.start()
        child.close()
        self.start_timeout_s = start_timeout_s
        self.description: Any = None
        self.ready = False
        self.answering = False
        """Whether a request was sent whose answer has not been read."""
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        """Wait for the measuring process's word that it is ready (TunerError when it could not start)."""
        if self.ready:
            return
        kind, payload = self._receive(self.start_timeout_s, "starting")
        if kind != "ready":
            self.kill()
            raise TunerError(f"the measuring worker could not start: {payload}")
        self.ready, self.description = True, payload

    def _receive(self, timeout_s: float, doing: str) -> tuple[str, Any]:
        if not self.conn.poll(timeout_s):
            self.kill()
            raise MeasuringProcessCrashed(f"timed out after {timeout_s:g} s {doing}; the worker was killed")
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            self.process.join(5)
            raise MeasuringProcessCrashed(f"the worker died {doing} ({exit_text(self.process.exitcode)})") from None

    def send(self, kind: str, payload: Any) -> None:
        """Send one request; ``receive`` gets its answer."""
        self.conn.send((kind, payload))
        self.answering = True

    def receive(self, run_timeout_s: float, setup_timeout_s: float) -> tuple[Any, float]:
        """The answer to the request sent last: (value, busy seconds), or MeasuringProcessCrashed (with busy time
        attached)."""
        timeout, doing, started = setup_timeout_s, "before the first launch", None
        while True:
            try:
                reply, body = self._receive(timeout, doing)
            except MeasuringProcessCrashed as exc:
                raise MeasuringProcessCrashed(str(exc), time.perf_counter() - started if started else 0.0) from None
            if reply == "started":
                timeout, doing, started = run_timeout_s, "running the kernel", time.perf_counter()
            elif reply == "result":
                self.answering = False
                return body
            else:  # "fatal": the measuring process has reported and exits
                text, busy = body
                self.process.join(10)
                raise MeasuringProcessCrashed(text, busy)

    def alive(self) -> bool:
        return self.process.is_alive()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(10)
        self.conn.close()

    def stop(self) -> None:
        """Tell the measuring process to stop; kill it when it is still at a request (the caller was interrupted)."""
        if self.process.is_alive() and not self.answering:
            with contextlib.suppress(BrokenPipeError, OSError):
                self.conn.send(("stop", None))
            self.process.join(10)
        self.kill()


Handlers = dict[str, Callable[[Any], Any]]


def run_measurer(conn: Connection, make: Callable[[Served], tuple[str, Handlers]]) -> None:
    """A measuring process's life: ``make`` builds the measurer and answers its description and its request handlers.
    An error while making it (no device, no compiler, a failed allocation) is the parent's answer, in one line;
    otherwise the measuring process says it is ready and serves."""
    served = Served(conn)
    try:
        description, handlers = make(served)
    except Exception as exc:
        conn.send(("error", str(exc)))
        conn.close()
        return
    conn.send(("ready", description))
    served.serve(handlers)


class Served:
    """The measuring process side: answers requests with ``handlers`` until told to stop or the pipe closes."""

    def __init__(self, conn: Connection):
        self.conn = conn
        self.busy = 0.0

    def started(self) -> None:
        """Tell the parent the kernel is about to run (its hang timeout starts now)."""
        self.conn.send(("started", None))

    def serve(self, handlers: Handlers) -> None:
        while True:
            try:
                kind, payload = self.conn.recv()
            except (EOFError, OSError):
                return
            if kind == "stop":
                return
            self.busy = 0.0
            try:
                value = handlers[kind](payload)
            except Fatal as exc:
                self._die(str(exc))
            except Exception as exc:  # anything else may have left the measuring process broken too
                self._die(f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}")
            self.conn.send(("result", (value, self.busy)))

    def _die(self, text: str) -> None:
        try:
            self.conn.send(("fatal", (text, self.busy)))
            self.conn.close()
        finally:
            os._exit(3)  # skip atexit: popping a faulted CUDA context would only raise again
