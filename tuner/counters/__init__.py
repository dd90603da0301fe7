"""Hardware counters of configurations: the hierarchical roofline, measured.

Nsight Compute counts, for one launch of each chosen configuration, the bytes at each level of the memory
hierarchy (what the threads ask for, the L1's sectors, the L2, DRAM) and the floating-point operations
(:mod:`tuner.counters.metrics`), in one profiling session outside every timed sample
(:mod:`tuner.counters.ncu`, :mod:`tuner.backends.pycuda.ncu_child`). The counts of a run folder live in its
``counters.parquet``, joined onto the results table whenever it is saved (:mod:`tuner.counters.store`); a run
reads them after its search (``measure.counters``), ``python -m tuner profile RUN_FOLDER`` afterwards
(:mod:`tuner.counters.collect`), and a replay copies those of its recording (:mod:`tuner.counters.sources`).
"""
