"""The one way a kernel is compiled: render → compile once → resource report → content-addressed cache.

:mod:`tuner.compile.nvcc` turns CUDA sources into cubins with ptxas's resource report,
:mod:`tuner.compile.cc` C sources into shared libraries with the system C compiler's report,
:mod:`tuner.compile.cache` keeps what was compiled, keyed by everything that shapes the binary, and
:mod:`tuner.compile.pool` compiles ahead in parallel while a measuring process measures.
"""
