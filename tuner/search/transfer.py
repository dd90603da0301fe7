"""Carrying the best configurations from one problem to the next.

The kernels a study searches do not depend on its problem's sizes, so a kernel that is fast on one problem is a
strong first guess on another of the same dtype and kernels. With ``search.transfer`` set to k, a study that a run
starts afresh gets k of the configurations that the run's earlier studies of the same space measured fastest: the
best of each (the latest study first), then the second best of each, and so on. They are put in its queue
(``enqueue_trial``), each naming its source in the user attribute ``transferred_from``, and its strategy searches
on from what they measure. A study is prepared while the one before it measures its last configurations, so it
gets what has been measured by then, and the rest of its k when it starts. Their kernels are compiled already:
with a cold compile cache each next problem needs up to k compiles less.
"""

from __future__ import annotations

from collections.abc import Sequence

import optuna
from optuna.trial import TrialState

from tuner.config import Config
from tuner.optuna_attrs import TRANSFER_ATTR
from tuner.search.study_space import StudySpace
from tuner.strategies.sampler import trial_params


def same_space(one: StudySpace, other: StudySpace) -> bool:
    """Whether two studies search the same configurations (apart from the problem): the same dtype, and the
    same parameters with the same values."""
    return one.dtype == other.dtype and one.axes_attr() == other.axes_attr()


def transfer_best(study: optuna.Study, space: StudySpace, earlier: Sequence[tuple[optuna.Study, StudySpace]],
                  count: int, budget: int) -> int:
    """Queue in ``study`` the best configurations measured so far in the ``earlier`` studies that search the same
    space, the latest study first, until ``count`` have been transferred to it (counting those transferred before
    and leaving out configurations it holds already) or it holds ``budget`` trials (failed ones aside); how many
    were queued now."""
    held = study.get_trials(deepcopy=False)
    wanted = min(count - sum(1 for trial in held if TRANSFER_ATTR in trial.user_attrs),
                 budget - sum(1 for trial in held if trial.state != TrialState.FAIL))
    if wanted <= 0:
        return 0
    taken = {config.key for config in (space.config_of(trial_params(trial)) for trial in held) if config is not None}
    rankings = [_ranked(other, other_space) for other, other_space in reversed(earlier)
                if other_space is not space and same_space(other_space, space)]
    queued = 0
    for rank in range(max((len(ranking) for ranking in rankings), default=0)):
        for ranking in rankings:  # the best of each earlier study, then the second best of each, ...
            if rank >= len(ranking):
                continue
            source, found = ranking[rank]
            config = Config.make(space.problem, found.family, space.dtype, found.param_dict)
            params = space.params(config)
            if params is None or config.key in taken or space.candidate(config) < 0:
                continue
            study.enqueue_trial(params, user_attrs={TRANSFER_ATTR: source})
            taken.add(config.key)
            queued += 1
            if queued == wanted:
                return queued
    return queued


def _ranked(study: optuna.Study, space: StudySpace) -> list[tuple[str, Config]]:
    """The study's measured configurations, best first by its objective (the fastest first under time and
    energy; rates differ between problems, so each study ranks its own)."""
    measured = [(trial.values[0], config)
                for trial in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                if trial.values is not None and trial.values[0] > 0
                and (config := space.config_of(trial.params)) is not None]
    measured.sort(key=lambda entry: entry[0], reverse=True)
    return [(space.name, config) for _, config in measured]
