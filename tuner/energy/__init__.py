"""Energy as a measured objective: joules per launch on the GPU (NVML) and the CPU (RAPL), the objectives a search
can pursue (time, energy, their product, or both at once), and the Pareto front of speed and energy.

* :mod:`tuner.energy.measured`: what one energy window measured (:class:`Energy`).
* :mod:`tuner.energy.counter`, :mod:`tuner.energy.poller`, :mod:`tuner.energy.window`: reading a counter that
  updates now and then, and the window of back-to-back launches it is read around.
* :mod:`tuner.energy.gpu` (NVML) and :mod:`tuner.energy.cpu` with :mod:`tuner.energy.rapl` (powercap): the
  devices.
* :mod:`tuner.energy.objective`: what a trial reports to Optuna for each objective.
* :mod:`tuner.energy.columns`, :mod:`tuner.energy.front`: the results table's energy columns, the best rows by
  an objective, the Pareto front and its knee.
"""

from tuner.energy.measured import Energy

__all__ = ["Energy"]
