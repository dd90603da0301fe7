/* STREAM's copy and triad kernels (McCalpin's loops), for the bandwidth ceilings. Arrays are filled by the same
   static schedule that later reads them, so each thread's pages are its own (first touch). */
#include <stddef.h>

__attribute__((visibility("default")))
void fill(double* restrict a, size_t n, double value, int threads)
{
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t j = 0; j < n; ++j)
        a[j] = value;
}

__attribute__((visibility("default")))
void copy(const double* restrict a, double* restrict c, size_t n, int threads)
{
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t j = 0; j < n; ++j)
        c[j] = a[j];
}

__attribute__((visibility("default")))
void triad(double* restrict a, const double* restrict b, const double* restrict c, double scalar, size_t n,
           int threads)
{
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t j = 0; j < n; ++j)
        a[j] = b[j] + scalar * c[j];
}
