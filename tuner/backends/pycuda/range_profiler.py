"""Hardware counters read in this process, through CUPTI's range profiler (ctypes on libcupti).

Nsight Compute counts a kernel from outside: a profiled process of its own, every launch intercepted, the device
memory saved and restored around each replay pass. CUPTI's range profiler (``cupti_range_profiler.h``, with the
host-side ``cupti_profiler_host.h``; CUDA 12.6 and later) counts the same metrics, by the same names, inside the
process that already holds the context, the loaded kernels and their buffers: the caller replays the kernel once
per pass itself (``CUPTI_UserReplay``), around one user range, so nothing is saved or restored and no process
starts.

A :class:`RangeProfiler` is made for one context and one set of metrics: the metrics the GPU lacks are left out
(``missing``), the configuration image says how many passes the rest need (``passes``), and :meth:`count` runs
launches pass by pass, each in a range of its own (``before`` queues what each needs first: fresh outputs, a
flushed L2; ``after`` checks what it wrote), and answers each metric's value in its base unit. Where CUPTI
cannot be loaded or refuses (no library, a driver too old, no permission to read the counters) the error is
:class:`ProfilerUnavailable`, with a one-line reason.
"""

from __future__ import annotations

import ctypes
import glob
import os
import sys
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path

CUPTI_ENV = "TUNER_CUPTI"
"""An environment variable naming the libcupti to load (else the toolkit's, then the CUDA wheels')."""
TOOLKIT = Path("/usr/local/cuda")
LIBRARY_NAMES = ("libcupti.so", "libcupti.so.13", "libcupti.so.12")
RANGE_PROFILER = 0
"""CUPTI_PROFILER_TYPE_RANGE_PROFILER"""
USER_RANGE = 2
"""CUPTI_UserRange: the range is what lies between a push and a pop."""
USER_REPLAY = 3
"""CUPTI_UserReplay: the caller replays the range once per pass."""
MOST_PASSES = 64
"""A bound on the passes of one count, against a profiler that never says it has all of them."""
PERMISSION = 35
"""CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"""

_size, _pointer, _text = ctypes.c_size_t, ctypes.c_void_p, ctypes.c_char_p


class ProfilerUnavailable(Exception):
    """CUPTI cannot count here; the message is the one-line reason."""


def _params(name: str, *fields: tuple[str, type]) -> type[ctypes.Structure]:
    """A CUPTI parameter structure: its size, a reserved pointer, then ``fields`` (C layout)."""
    return type(name, (ctypes.Structure,), {"_fields_": [("structSize", _size), ("pPriv", _pointer), *fields]})


Initialize = _params("Initialize")
ChipName = _params("ChipName", ("deviceIndex", _size), ("pChipName", _text))
Availability = _params("Availability", ("ctx", _pointer), ("imageSize", _size), ("pImage", _pointer))
HostInitialize = _params("HostInitialize", ("profilerType", ctypes.c_int), ("pChipName", _pointer),
                         ("pCounterAvailabilityImage", _pointer), ("pHostObject", _pointer))
HostObject = _params("HostObject", ("pHostObject", _pointer))
MetricProperties = _params("MetricProperties", ("pHostObject", _pointer), ("pMetricName", _text),
                           ("pDescription", _text), ("pHwUnit", _text), ("pDimUnit", _text),
                           ("metricType", ctypes.c_int))
AddMetrics = _params("AddMetrics", ("pHostObject", _pointer), ("ppMetricNames", ctypes.POINTER(_text)),
                     ("numMetrics", _size))
ConfigImageSize = _params("ConfigImageSize", ("pHostObject", _pointer), ("configImageSize", _size))
ConfigImage = _params("ConfigImage", ("pHostObject", _pointer), ("configImageSize", _size), ("pConfigImage", _pointer))
NumOfPasses = _params("NumOfPasses", ("configImageSize", _size), ("pConfigImage", _pointer), ("numOfPasses", _size))
Evaluate = _params("Evaluate", ("pHostObject", _pointer), ("pCounterDataImage", _pointer),
                   ("counterDataImageSize", _size), ("rangeIndex", _size), ("ppMetricNames", ctypes.POINTER(_text)),
                   ("numMetrics", _size), ("pMetricValues", ctypes.POINTER(ctypes.c_double)))
Enable = _params("Enable", ("ctx", _pointer), ("pRangeProfilerObject", _pointer))
Target = _params("Target", ("pRangeProfilerObject", _pointer))
CounterDataSize = _params("CounterDataSize", ("pRangeProfilerObject", _pointer),
                          ("pMetricNames", ctypes.POINTER(_text)), ("numMetrics", _size), ("maxNumOfRanges", _size),
                          ("maxNumRangeTreeNodes", ctypes.c_uint32), ("counterDataSize", _size))
CounterDataInitialize = _params("CounterDataInitialize", ("pRangeProfilerObject", _pointer),
                                ("counterDataSize", _size), ("pCounterData", _pointer))
SetConfig = _params("SetConfig", ("pRangeProfilerObject", _pointer), ("configSize", _size), ("pConfig", _pointer),
                    ("counterDataImageSize", _size), ("pCounterDataImage", _pointer), ("range", ctypes.c_int),
                    ("replayMode", ctypes.c_int), ("maxRangesPerPass", _size), ("numNestingLevels", ctypes.c_uint16),
                    ("minNestingLevel", ctypes.c_uint16), ("passIndex", _size), ("targetNestingLevel", ctypes.c_uint16))
Stop = _params("Stop", ("pRangeProfilerObject", _pointer), ("passIndex", _size), ("targetNestingLevel", _size),
               ("isAllPassSubmitted", ctypes.c_uint8))
PushRange = _params("PushRange", ("pRangeProfilerObject", _pointer), ("pRangeName", _text))
DecodeData = _params("DecodeData", ("pRangeProfilerObject", _pointer), ("numOfRangeDropped", _size))


def _new(kind: type[ctypes.Structure], **values: object) -> ctypes.Structure:
    """A parameter structure with its size set as CUPTI's headers set it (up to the end of its last field)."""
    last = kind._fields_[-1]
    params = kind(**values)
    params.structSize = getattr(kind, last[0]).offset + ctypes.sizeof(last[1])
    return params


def library_candidates() -> list[str]:
    """Where libcupti is looked for, in order."""
    named = os.environ.get(CUPTI_ENV)
    if named:
        return [named]
    roots = [Path(os.environ["CUDA_HOME"])] if os.environ.get("CUDA_HOME") else []
    roots.append(TOOLKIT)
    folders = [folder for root in roots for folder in (root / "extras/CUPTI/lib64", root / "lib64",
                                                       root / "targets/x86_64-linux/lib")]
    found = [str(folder / name) for folder in folders for name in LIBRARY_NAMES if (folder / name).is_file()]
    for site in sys.path:  # the CUDA wheels: nvidia/cu13/lib, nvidia/cuda_cupti/lib
        found += sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib", "libcupti.so*")))
    return [*found, "libcupti.so"]


@cache
def cupti() -> ctypes.CDLL:
    """libcupti, loaded once; ProfilerUnavailable where there is none that loads."""
    errors = []
    for candidate in library_candidates():
        try:
            library = ctypes.CDLL(candidate)
        except OSError as exc:
            errors.append(str(exc))
            continue
        if hasattr(library, "cuptiRangeProfilerEnable"):
            return library
        errors.append(f"{candidate} has no range profiler (CUPTI before CUDA 12.6)")
    raise ProfilerUnavailable(f"CUPTI's range profiler cannot be loaded ({errors[-1] if errors else 'no libcupti'});"
                              f" name libcupti with {CUPTI_ENV}")


def version() -> str:
    """CUPTI's API version, as ``CUPTI 130000``-style text."""
    number = ctypes.c_uint32()
    cupti().cuptiGetVersion(ctypes.byref(number))
    return f"CUPTI API {number.value}"


def _call(function: str, params: ctypes.Structure) -> None:
    library = cupti()
    code = getattr(library, function)(ctypes.byref(params))
    if code != 0:
        text = ctypes.c_char_p()
        library.cuptiGetResultString(code, ctypes.byref(text))
        words = (text.value or b"").decode(errors="replace")
        if code == PERMISSION:
            words += (" (reading the GPU's performance counters needs root, or the NVIDIA driver option "
                      "NVreg_RestrictProfilingToAdminUsers=0)")
        raise ProfilerUnavailable(f"{function} failed: {words or f'error {code}'}")


def _names(metrics: Sequence[str]) -> ctypes.Array:
    return (_text * len(metrics))(*(m.encode() for m in metrics))


class RangeProfiler:
    """Counts ``metrics`` of single launches on ``context`` (a CUcontext handle, current on this thread)."""

    def __init__(self, context: int, metrics: Sequence[str], device_index: int = 0):
        _call("cuptiProfilerInitialize", _new(Initialize))
        chip = _new(ChipName, deviceIndex=device_index)
        _call("cuptiDeviceGetChipName", chip)
        self._chip = ctypes.create_string_buffer(chip.pChipName or b"")
        """The host object keeps a pointer to the chip's name: it lives as long as the profiler."""
        self.chip = self._chip.value.decode()
        availability = _new(Availability, ctx=context)
        _call("cuptiProfilerGetCounterAvailability", availability)
        self._availability = ctypes.create_string_buffer(availability.imageSize)
        availability = _new(Availability, ctx=context, imageSize=len(self._availability),
                            pImage=ctypes.addressof(self._availability))
        _call("cuptiProfilerGetCounterAvailability", availability)
        host = _new(HostInitialize, profilerType=RANGE_PROFILER, pChipName=ctypes.addressof(self._chip),
                    pCounterAvailabilityImage=ctypes.addressof(self._availability))
        _call("cuptiProfilerHostInitialize", host)
        self._host = host.pHostObject
        self.units: dict[str, str] = {}
        self.missing: list[str] = []
        for metric in metrics:
            unit = self._unit(metric)
            if unit is None:
                self.missing.append(metric)
            else:
                self.units[metric] = unit
        self.metrics = tuple(self.units)
        if not self.metrics:
            self._close_host()
            raise ProfilerUnavailable(f"the GPU ({self.chip}) has none of the metrics asked for")
        self._metric_names = _names(self.metrics)
        _call("cuptiProfilerHostConfigAddMetrics", _new(AddMetrics, pHostObject=self._host,
                                                        ppMetricNames=self._metric_names,
                                                        numMetrics=len(self.metrics)))
        size = _new(ConfigImageSize, pHostObject=self._host)
        _call("cuptiProfilerHostGetConfigImageSize", size)
        self._config = ctypes.create_string_buffer(size.configImageSize)
        _call("cuptiProfilerHostGetConfigImage", _new(ConfigImage, pHostObject=self._host,
                                                      configImageSize=len(self._config),
                                                      pConfigImage=ctypes.addressof(self._config)))
        passes = _new(NumOfPasses, configImageSize=len(self._config), pConfigImage=ctypes.addressof(self._config))
        _call("cuptiProfilerHostGetNumOfPasses", passes)
        self.passes = int(passes.numOfPasses)
        self.version = version()
        enable = _new(Enable, ctx=context)
        _call("cuptiRangeProfilerEnable", enable)
        self._object = enable.pRangeProfilerObject
        self._data = ctypes.create_string_buffer(0)
        self._ranges = 0

    def _unit(self, metric: str) -> str | None:
        """The metric's unit (CUPTI's dimension unit), or None where the GPU has no such metric."""
        properties = _new(MetricProperties, pHostObject=self._host, pMetricName=metric.split(".", 1)[0].encode())
        try:
            _call("cuptiProfilerHostGetMetricProperties", properties)
        except ProfilerUnavailable:
            return None
        return (properties.pDimUnit or b"").decode()

    def count(self, launches: Sequence[Callable[[], None]], before: Callable[[int], None],
              after: Callable[[int], None], synchronize: Callable[[], None]) -> tuple[list[dict[str, float]], int]:
        """Each metric's value, in its base unit, for one launch of each of ``launches`` (each queues its kernel),
        and the passes they took. In each pass every launch runs in a range of its own, in order: ``before(i)``
        queues what launch ``i`` needs first, outside its range; ``after(i)`` runs once its range has ended (the
        device idle); ``synchronize`` waits for the device. One session for them all: starting one is what costs
        most (23 ms on the H100), one range costs little more than its kernel."""
        self._image(len(launches))
        _call("cuptiRangeProfilerSetConfig",
              _new(SetConfig, pRangeProfilerObject=self._object, configSize=len(self._config),
                   pConfig=ctypes.addressof(self._config), counterDataImageSize=len(self._data),
                   pCounterDataImage=ctypes.addressof(self._data), range=USER_RANGE, replayMode=USER_REPLAY,
                   maxRangesPerPass=len(launches), numNestingLevels=1, minNestingLevel=1, passIndex=0,
                   targetNestingLevel=1))
        passes = 0
        while True:
            _call("cuptiRangeProfilerStart", _new(Target, pRangeProfilerObject=self._object))
            for index, launch in enumerate(launches):
                before(index)
                synchronize()
                _call("cuptiRangeProfilerPushRange", _new(PushRange, pRangeProfilerObject=self._object,
                                                          pRangeName=b"kernel %d" % index))
                launch()
                _call("cuptiRangeProfilerPopRange", _new(Target, pRangeProfilerObject=self._object))
                synchronize()
                after(index)
            stop = _new(Stop, pRangeProfilerObject=self._object)
            _call("cuptiRangeProfilerStop", stop)
            passes += 1
            if stop.isAllPassSubmitted or passes >= MOST_PASSES:
                break
        decoded = _new(DecodeData, pRangeProfilerObject=self._object)
        _call("cuptiRangeProfilerDecodeData", decoded)
        if decoded.numOfRangeDropped:
            raise ProfilerUnavailable(f"CUPTI dropped {decoded.numOfRangeDropped} of {len(launches)} kernels' ranges")
        return [self._values(index) for index in range(len(launches))], passes

    def _image(self, ranges: int) -> None:
        """A counter data image for ``ranges`` ranges, initialized (made anew where it holds fewer)."""
        if ranges > self._ranges:
            data = _new(CounterDataSize, pRangeProfilerObject=self._object, pMetricNames=self._metric_names,
                        numMetrics=len(self.metrics), maxNumOfRanges=ranges, maxNumRangeTreeNodes=ranges)
            _call("cuptiRangeProfilerGetCounterDataSize", data)
            self._data, self._ranges = ctypes.create_string_buffer(data.counterDataSize), ranges
        _call("cuptiRangeProfilerCounterDataImageInitialize",
              _new(CounterDataInitialize, pRangeProfilerObject=self._object, counterDataSize=len(self._data),
                   pCounterData=ctypes.addressof(self._data)))

    def _values(self, index: int) -> dict[str, float]:
        values = (ctypes.c_double * len(self.metrics))()
        _call("cuptiProfilerHostEvaluateToGpuValues",
              _new(Evaluate, pHostObject=self._host, pCounterDataImage=ctypes.addressof(self._data),
                   counterDataImageSize=len(self._data), rangeIndex=index, ppMetricNames=self._metric_names,
                   numMetrics=len(self.metrics), pMetricValues=values))
        return dict(zip(self.metrics, values, strict=True))

    def close(self) -> None:
        """Stop profiling the context (the timed samples run without it)."""
        if self._object is not None:
            _call("cuptiRangeProfilerDisable", _new(Target, pRangeProfilerObject=self._object))
            self._object = None
        self._close_host()

    def _close_host(self) -> None:
        if self._host is not None:
            _call("cuptiProfilerHostDeinitialize", _new(HostObject, pHostObject=self._host))
            self._host = None
