"""A trial's time in Optuna is its measurement's.

A search asks its trials ahead of the device (a compile pool works on them meanwhile), and Optuna starts a trial's
clock when it is asked: its duration and its bar on optuna-dashboard's timeline would be time spent in the queue.
Where a search is alone in its study, the trial's clock is started again as the device starts on it, through the
storage's own state change (WAITING and back to RUNNING, which every Optuna storage stamps with the time), so that
``datetime_start`` is the measurement's start and ``datetime_complete``, set when the search tells the result, its
end. A shared study (several workers, or a run's measuring threads on several GPUs) keeps the time of the ask:
there a WAITING trial could be taken by another worker's ask.
"""

from __future__ import annotations

import optuna
from optuna.trial import FrozenTrial, Trial, TrialState


def restart_clock(study: optuna.Study, trial: Trial | FrozenTrial) -> None:
    """Start the RUNNING trial's clock now (its ``datetime_start``); only for a search alone in its study."""
    storage = study._storage
    storage.set_trial_state_values(trial._trial_id, TrialState.WAITING)
    storage.set_trial_state_values(trial._trial_id, TrialState.RUNNING)
