// Tensor-core throughput for the ceiling of one dtype (MMA_* is defined ahead of this text): each warp issues
// CHAINS independent mma.sync chains d = a·b + d on fragments that stay in registers, so no memory traffic
// limits the rate. The fragments hold small non-zero values (zeros can run faster than real data), set from the
// thread index so nothing folds at compile time, and the sums are stored, so nothing is dropped.
// Operations per mma: 2·M·N·K of its shape.
#ifndef CHAINS
#define CHAINS 4
#endif

#if defined(MMA_FLOAT64)
typedef double acc_t;
#define A_REGS 8
#define B_REGS 4
#define MMA(d, a, b) asm volatile( \
    "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, " \
    "{%12,%13,%14,%15}, {%0,%1,%2,%3};" : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3]) \
    : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]), \
      "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]))
typedef double frag_t;
#define FRAG(i) (1e-3 * (double)((threadIdx.x + (i)) % 7 + 1))
#else
typedef float acc_t;
typedef unsigned frag_t;
#if defined(MMA_TF32)
#define A_REGS 4
#define B_REGS 2
#define SHAPE_TYPES "m16n8k8.row.col.f32.tf32.tf32.f32"
#define FRAG(i) __float_as_uint(1e-3f * (float)((threadIdx.x + (i)) % 7 + 1))
#else
#define A_REGS 4
#define B_REGS 2
#if defined(MMA_BFLOAT16)
#define SHAPE_TYPES "m16n8k16.row.col.f32.bf16.bf16.f32"
#else
#define SHAPE_TYPES "m16n8k16.row.col.f32.f16.f16.f32"
#endif
#define FRAG(i) (0x1C001C00u + (unsigned)((threadIdx.x + (i)) % 7))
#endif
#define MMA(d, a, b) asm volatile("mma.sync.aligned." SHAPE_TYPES " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, " \
    "{%0,%1,%2,%3};" : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) \
    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))
#endif

extern "C" __global__ void mma_chains(acc_t* __restrict__ out, int iterations)
{
    frag_t a[A_REGS], b[B_REGS];
#pragma unroll
    for (int i = 0; i < A_REGS; ++i) a[i] = FRAG(i);
#pragma unroll
    for (int i = 0; i < B_REGS; ++i) b[i] = FRAG(i + A_REGS);
    acc_t d[CHAINS][4];
#pragma unroll
    for (int j = 0; j < CHAINS; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) d[j][i] = 0;
#pragma unroll 4
    for (int it = 0; it < iterations; ++it) {
#pragma unroll
        for (int j = 0; j < CHAINS; ++j) MMA(d[j], a, b);
    }
    acc_t sum = 0;
#pragma unroll
    for (int j = 0; j < CHAINS; ++j)
#pragma unroll
        for (int i = 0; i < 4; ++i) sum += d[j][i];
    out[blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x] = sum;
}
