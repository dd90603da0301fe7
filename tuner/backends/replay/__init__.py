"""The replay backend: a recorded run's answers, or kernel entries that are themselves recordings."""
