"""Measuring on an NVIDIA GPU through PyCUDA: the backend (parent side), its measuring process and cuBLAS; the GPU's
description, the timing method on it, its measured ceilings and the modules it compiles for itself."""
