"""Kernel families: what a family declares, where families are found, and how a configuration is rendered."""
