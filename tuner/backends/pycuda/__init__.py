"""Measuring on an NVIDIA GPU through PyCUDA: the backend (parent side), its worker process and cuBLAS."""
