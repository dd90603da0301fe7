"""tuner: autotuning performance experiments for tiled matrix multiplication on CUDA GPUs.

Public API::

    import tuner
    experiment = tuner.load_experiment("experiments/fermi_like.yaml")
    result = tuner.run(experiment, backend="replay", replay="experiments/data/fermi_like_h100")
    result.df      # every evaluation, one row each
    result.best    # the best configuration per problem
"""

from tuner.experiment import Experiment, load_experiment

__all__ = ["Experiment", "load_experiment", "run"]


def run(experiment: Experiment, **options):  # noqa: ANN201 - the type lives in tuner.tuning
    """Tune ``experiment``; see :func:`tuner.tuning.run` for the options."""
    from tuner.tuning import run as _run

    return _run(experiment, **options)
