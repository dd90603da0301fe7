// Tensor-core throughput through warpgroup MMA (sm_90a only), for the ceiling of one dtype (WGMMA_* is defined
// ahead of this text). Each block is one warpgroup; it issues back-to-back wgmma.mma_async m64n256k16 (bfloat16,
// float16), m64n256k8 (tf32) or m64n256k32 (float8_e4m3, float8_e5m2: both operands of the one type; FP8 wgmma has
// no transpose immediates, K-major is its only layout) into one accumulator tile in registers (128 per thread),
// both operands read from shared memory through descriptors as the wgmma family makes them: K-major, 128-byte
// swizzle, rows of 128 bytes, 8-row groups 1024 bytes apart; the KSTEPS k-steps of one 128-byte row (32 bytes of K
// each, in every dtype) make one commit group, and up to IN_FLIGHT groups are left running (wait_group IN_FLIGHT)
// while the next is issued. Only shared memory is read inside the loop, so no memory traffic limits the rate. The
// operands hold small non-zero values (zeros can run faster than real data) and the sums are stored, so nothing is
// dropped. Operations per wgmma: 2·64·256·K.
#include <stdint.h>

#ifndef IN_FLIGHT
#define IN_FLIGHT 1
#endif
#ifndef BLOCKS_PER_SM
#define BLOCKS_PER_SM 3
#endif
#define N 256
#define ROW_BYTES 128
#define KSTEPS 4
#define A_BYTES (64 * ROW_BYTES)
#define B_BYTES (N * ROW_BYTES)
#define ACC (N / 2)

#if defined(WGMMA_TF32)
#define SHAPE_TYPES "m64n256k8.f32.tf32.tf32"
#define TRANSPOSES ""
#define FILL(i) __float_as_uint(1e-3f * (float)((i) % 7 + 1))
#elif defined(WGMMA_FLOAT8_E4M3)
#define SHAPE_TYPES "m64n256k32.f32.e4m3.e4m3"
#define TRANSPOSES ""
#define FILL(i) (0x18181818u + (unsigned)((i) % 7))  // 0.0625 to 0.109 in e4m3 (exponent bias 7)
#elif defined(WGMMA_FLOAT8_E5M2)
#define SHAPE_TYPES "m64n256k32.f32.e5m2.e5m2"
#define TRANSPOSES ""
#define FILL(i) (0x2C2C2C2Cu + (unsigned)((i) % 7))  // 0.0625 to 0.1875 in e5m2 (exponent bias 15)
#else
#if defined(WGMMA_BFLOAT16)
#define SHAPE_TYPES "m64n256k16.f32.bf16.bf16"
#define FILL(i) (0x3C003C00u + (unsigned)((i) % 7))  // about 0.0078 in bfloat16: products stay normal floats
#else
#define SHAPE_TYPES "m64n256k16.f32.f16.f16"
#define FILL(i) (0x1C001C00u + (unsigned)((i) % 7))  // about 0.0039 in float16
#endif
#define TRANSPOSES ", 0, 0"  // both operands K-major
#endif

__device__ __forceinline__ uint32_t shared_address(const void* pointer)
{
    return static_cast<uint32_t>(__cvta_generic_to_shared(pointer));
}

// Shared-memory matrix descriptor: start address, leading and stride byte offsets (all >> 4), 128-byte swizzle.
__device__ __forceinline__ uint64_t descriptor(uint32_t address, uint32_t leading, uint32_t stride)
{
    return static_cast<uint64_t>((address & 0x3FFFF) >> 4) | (static_cast<uint64_t>(leading >> 4) << 16)
        | (static_cast<uint64_t>(stride >> 4) << 32) | (1ull << 62);
}

#define R10(i) "%" #i "0, %" #i "1, %" #i "2, %" #i "3, %" #i "4, %" #i "5, %" #i "6, %" #i "7, %" #i "8, %" #i "9"
#define D8(i) "+f"(d[8 * i]), "+f"(d[8 * i + 1]), "+f"(d[8 * i + 2]), "+f"(d[8 * i + 3]), "+f"(d[8 * i + 4]), \
    "+f"(d[8 * i + 5]), "+f"(d[8 * i + 6]), "+f"(d[8 * i + 7])

// D (64×256) += A (64×K) · B (K×256), both from shared memory. Operands %0…%127 are the accumulators (R10(1) names
// %10…%19), %128 and %129 the descriptors.
__device__ __forceinline__ void wgmma(float (&d)[ACC], uint64_t a, uint64_t b)
{
    asm volatile(
        "wgmma.mma_async.sync.aligned." SHAPE_TYPES " {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, " R10(1) ", " R10(2) ", " R10(3) ", " R10(4) ", " R10(5) ", "
        R10(6) ", " R10(7) ", " R10(8) ", " R10(9) ", " R10(10) ", " R10(11) ", "
        "%120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, 1, 1, 1" TRANSPOSES ";"
        : D8(0), D8(1), D8(2), D8(3), D8(4), D8(5), D8(6), D8(7), D8(8), D8(9), D8(10), D8(11), D8(12), D8(13),
          D8(14), D8(15)
        : "l"(a), "l"(b));
}

extern "C" __global__ void __launch_bounds__(128, BLOCKS_PER_SM) wgmma_chains(float* __restrict__ out, int iterations)
{
    extern __shared__ __align__(16) unsigned char dynamic_shared[];
    // The 128-byte swizzle repeats every 1024 bytes; the descriptors assume tiles that start on that boundary.
    const uint32_t base = (shared_address(dynamic_shared) + 1023u) & ~1023u;
    unsigned char* tiles = dynamic_shared + (base - shared_address(dynamic_shared));
    uint32_t* words = reinterpret_cast<uint32_t*>(tiles);
    for (int i = threadIdx.x; i < (A_BYTES + B_BYTES) / 4; i += blockDim.x) words[i] = FILL(i);
    // wgmma reads shared memory through the async proxy: make the ordinary stores visible to it.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();

    const uint32_t a_base = base, b_base = base + A_BYTES;
    float d[ACC];
#pragma unroll
    for (int i = 0; i < ACC; ++i) d[i] = 0.0f;
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    for (int it = 0; it < iterations; ++it) {
#pragma unroll
        for (int k = 0; k < KSTEPS; ++k)  // each k-step advances 32 bytes along the 128-byte rows
            wgmma(d, descriptor(a_base + 32 * k, 16, 1024), descriptor(b_base + 32 * k, 16, 1024));
        asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(IN_FLIGHT) : "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < ACC; ++i) sum += d[i];
    out[blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x] = sum;
}
