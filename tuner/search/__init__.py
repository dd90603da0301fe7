"""The search: one Optuna study per (problem, dtype), its storage, the claims and workers that share a study, and
what a trial reports to it."""
