"""The CPU backend: C families compiled by the system compiler, measured in a worker process."""
