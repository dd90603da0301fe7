/* Evicting the caches between timed samples: every thread reads and writes one word per 64-byte line of its
   share of a buffer larger than all caches together, so each core's private caches and the shared last level
   end up holding this buffer instead of the kernel's data. */
#include <stddef.h>

__attribute__((visibility("default")))
void evict(volatile unsigned long long* buffer, size_t words, int threads)
{
#pragma omp parallel for num_threads(threads) schedule(static)
    for (size_t i = 0; i < words; i += 8)
        buffer[i] += 1;
}
