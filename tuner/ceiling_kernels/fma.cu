// Multiply-add chains for the arithmetic ceiling of one dtype (real_t and CHAINS are defined ahead of
// this text). Each thread runs CHAINS independent chains acc = acc * b + c, so the scheduler always has
// an independent multiply-add to issue; b and c are arguments, so nothing folds at compile time, and the
// sum is stored, so nothing is dropped. Each multiply-add counts as 2 operations.
extern "C" __global__ void fma_chains(real_t* __restrict__ out, real_t b, real_t c, int iterations)
{
    real_t acc[CHAINS];
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) acc[j] = (real_t)(threadIdx.x + j);
#pragma unroll 16
    for (int i = 0; i < iterations; ++i) {
#pragma unroll
        for (int j = 0; j < CHAINS; ++j) acc[j] = acc[j] * b + c;
    }
    real_t sum = 0;
#pragma unroll
    for (int j = 0; j < CHAINS; ++j) sum += acc[j];
    out[blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x] = sum;
}
