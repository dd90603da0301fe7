/* The multiply-add ceiling: CHAINS independent chains of vector multiply-adds per thread, enough to cover the
   latency of a multiply-add times the multiply-adds a core starts per cycle (4 cycles × 2 pipes on recent x86),
   while the chains and the two operands stay in registers. real_t is defined before this text. */
#include <stddef.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define CHAINS 12
#if defined(__AVX512F__)
#define VEC_BYTES 64
#elif defined(__AVX__)
#define VEC_BYTES 32
#else
#define VEC_BYTES 16
#endif
#define LANES ((int)(VEC_BYTES / sizeof(real_t)))

typedef real_t vec __attribute__((vector_size(VEC_BYTES)));

__attribute__((visibility("default")))
int fma_lanes(void) { return LANES; }

__attribute__((visibility("default")))
int fma_chains_count(void) { return CHAINS; }

/* Each thread runs iterations × CHAINS × LANES multiply-adds and writes one sum to out[thread]. */
__attribute__((visibility("default")))
void fma_chains(real_t* out, long iterations, real_t b, real_t c, int threads)
{
#pragma omp parallel num_threads(threads)
    {
#ifdef _OPENMP
        const int me = omp_get_thread_num();
#else
        const int me = 0;
#endif
        vec acc[CHAINS];
#pragma GCC unroll 32
        for (int i = 0; i < CHAINS; ++i)
            acc[i] = (vec){0} + (real_t)(i + 1) * (real_t)0.001;
        for (long it = 0; it < iterations; ++it)
#pragma GCC unroll 32
            for (int i = 0; i < CHAINS; ++i)
                acc[i] = acc[i] * b + c;
        real_t sum = 0;
        for (int i = 0; i < CHAINS; ++i)
            for (int l = 0; l < LANES; ++l)
                sum += acc[i][l];
        out[me] = sum;
    }
}
