"""Measuring on an NVIDIA GPU through PyCUDA: the backend (parent side), its measuring process and cuBLAS."""
