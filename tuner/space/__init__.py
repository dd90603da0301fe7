"""The search space: every combination of an entry's parameter values and dtypes, the static rules that reject some,
and the valid configurations made on demand."""
