"""tuner: autotuning performance experiments for tiled matrix multiplication on CUDA GPUs.

Public API::

    import tuner
    experiment = tuner.load_experiment("experiments/fermi_like.yaml")
    result = tuner.run(experiment, backend="replay", replay="experiments/data/fermi_like_h100")
    result.df      # every evaluation, one row each
    result.best    # the best configuration per problem
"""

from tuner.experiment import Experiment, load_experiment
from tuner.results import RunResult
from tuner.tuning import run

__all__ = ["Experiment", "RunResult", "load_experiment", "run"]
