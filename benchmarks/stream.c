/* A STREAM benchmark written after John McCalpin's stream.c (version 5.10) and its rules, as the reference the
   tuner's bandwidth ceiling is checked against:
   - four kernels, timed in turn in each of NTIMES iterations: Copy c = a, Scale b = q·c, Add c = a + b,
     Triad a = b + q·c, each an OpenMP parallel loop with the default (static) schedule;
   - each array holds at least 4 × the last-level cache (the element count is the first argument);
   - the first iteration is left out; the rate reported is the best (bytes / minimum time), in MB/s (10^6 B/s);
   - bytes are counted as STREAM counts them: Copy and Scale 2 × 8 per element, Add and Triad 3 × 8 (reads and
     writes, no write-allocate traffic);
   - the arrays are initialized by the same parallel loops (first touch), and the results are checked at the end.
   Differences: the arrays are allocated at run time (64-byte aligned) rather than static, and each kernel is
   timed with clock_gettime(CLOCK_MONOTONIC) rather than gettimeofday.

   Build: cc -O3 -march=native -fopenmp stream.c -o stream; run: OMP_NUM_THREADS=1 ./stream ELEMENTS [NTIMES] */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double* array(size_t n)
{
    void* p = NULL;
    if (posix_memalign(&p, 64, n * sizeof(double)) != 0) {
        fprintf(stderr, "cannot allocate %zu bytes\n", n * sizeof(double));
        exit(1);
    }
    return p;
}

int main(int argc, char** argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s ELEMENTS [NTIMES]\n", argv[0]);
        return 2;
    }
    const size_t n = strtoull(argv[1], NULL, 10);
    const int ntimes = argc > 2 ? atoi(argv[2]) : 20;
    const double scalar = 3.0;
    double* restrict a = array(n);
    double* restrict b = array(n);
    double* restrict c = array(n);
    static const char* label[4] = {"Copy", "Scale", "Add", "Triad"};
    const double bytes[4] = {2.0 * sizeof(double) * n, 2.0 * sizeof(double) * n, 3.0 * sizeof(double) * n,
                             3.0 * sizeof(double) * n};
    double mintime[4] = {FLT_MAX, FLT_MAX, FLT_MAX, FLT_MAX}, maxtime[4] = {0}, avgtime[4] = {0};

#pragma omp parallel for
    for (size_t j = 0; j < n; j++) {
        a[j] = 1.0;
        b[j] = 2.0;
        c[j] = 0.0;
    }
#pragma omp parallel for
    for (size_t j = 0; j < n; j++)
        a[j] = 2.0E0 * a[j];

    for (int k = 0; k < ntimes; k++) {
        double t[4];
        t[0] = now();
#pragma omp parallel for
        for (size_t j = 0; j < n; j++)
            c[j] = a[j];
        t[0] = now() - t[0];
        t[1] = now();
#pragma omp parallel for
        for (size_t j = 0; j < n; j++)
            b[j] = scalar * c[j];
        t[1] = now() - t[1];
        t[2] = now();
#pragma omp parallel for
        for (size_t j = 0; j < n; j++)
            c[j] = a[j] + b[j];
        t[2] = now() - t[2];
        t[3] = now();
#pragma omp parallel for
        for (size_t j = 0; j < n; j++)
            a[j] = b[j] + scalar * c[j];
        t[3] = now() - t[3];
        if (k == 0)
            continue;  /* the first iteration is left out */
        for (int f = 0; f < 4; f++) {
            avgtime[f] += t[f];
            mintime[f] = t[f] < mintime[f] ? t[f] : mintime[f];
            maxtime[f] = t[f] > maxtime[f] ? t[f] : maxtime[f];
        }
    }

    /* The values every element must hold after ntimes iterations. */
    double aj = 2.0, bj = 2.0, cj = 0.0;
    for (int k = 0; k < ntimes; k++) {
        cj = aj;
        bj = scalar * cj;
        cj = aj + bj;
        aj = bj + scalar * cj;
    }
    double error[3] = {0, 0, 0};
    for (size_t j = 0; j < n; j++) {
        error[0] += fabs(a[j] - aj);
        error[1] += fabs(b[j] - bj);
        error[2] += fabs(c[j] - cj);
    }
    const int valid = error[0] / n / fabs(aj) < 1e-13 && error[1] / n / fabs(bj) < 1e-13
                      && error[2] / n / fabs(cj) < 1e-13;

#ifdef _OPENMP
    printf("threads %d\n", omp_get_max_threads());
#else
    printf("threads 1\n");
#endif
    printf("elements %zu (%.1f MiB per array), %d iterations, best of %d\n", n, n * sizeof(double) / 1048576.0,
           ntimes, ntimes - 1);
    printf("Function    Best Rate MB/s  Avg time     Min time     Max time\n");
    for (int f = 0; f < 4; f++)
        printf("%-8s%12.1f  %11.6f  %11.6f  %11.6f\n", label[f], 1.0E-06 * bytes[f] / mintime[f],
               avgtime[f] / (ntimes - 1), mintime[f], maxtime[f]);
    printf("%s\n", valid ? "Solution Validates" : "Solution does not validate");
    free(a);
    free(b);
    free(c);
    return valid ? 0 : 1;
}
