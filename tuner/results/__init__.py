"""The results of a run: the table of evaluations with its schema and files, and the environment of its
measurements."""
