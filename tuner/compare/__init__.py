"""Comparing search strategies on recorded spaces: running them, and scoring their runs."""
