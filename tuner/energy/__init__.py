"""Energy as a measured quantity: joules per launch on the GPU (NVML) and the CPU (RAPL), and the Pareto front of
speed and energy (the objectives a search pursues are :mod:`tuner.results.objectives`).

* :mod:`tuner.energy.measured`: what one energy window measured (:class:`Energy`).
* :mod:`tuner.energy.counter`, :mod:`tuner.energy.poller`, :mod:`tuner.energy.window`: reading a counter that
  updates now and then, and the window of back-to-back launches it is read around.
* :mod:`tuner.energy.gpu` (NVML) and :mod:`tuner.energy.cpu` with :mod:`tuner.energy.rapl` (powercap): the
  devices.
* :mod:`tuner.energy.columns`, :mod:`tuner.energy.front`: the results table's energy columns, the Pareto front
  and its knee.
"""

from tuner.energy.measured import Energy

__all__ = ["Energy"]
