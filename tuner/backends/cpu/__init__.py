"""The CPU backend: C families compiled by the system compiler, measured in a measuring process."""
