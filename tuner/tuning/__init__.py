"""A tuning run tied together: the run itself, its backends, its folder, its progress and summary, the vendor
baseline, the objective it pursues, and the commands beside ``run`` (``space``, ``profile``)."""
