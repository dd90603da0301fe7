// Bandwidth ceilings of the on-chip levels: each thread reads 16 bytes per load, again and again, from a working
// set that one level holds, and adds what it read, so nothing is dropped; every load is issued (inline PTX,
// volatile), so none is hoisted out of the loop. Bandwidth counts the bytes of the loads over the median time.
//
// l2_reads: ld.global.cg (cached in L2 only, never in L1) over a buffer of `mask + 1` float4 that fits in the L2;
//           the threads of the grid sweep it together, coalesced, `iterations` times.
// l1_reads: ld.global.ca (cached in L1) over a window of WINDOW float4 per block, which stays in the L1 after the
//           first sweep: the L1's hit bandwidth for global loads (what l1tex__t_bytes counts).
// shared_reads: ld.shared.v4 over WINDOW float4 of shared memory, each warp reading 512 consecutive bytes per
//           load (no bank conflicts).
#ifndef WINDOW
#define WINDOW 512
#endif

__device__ __forceinline__ void add(float4& acc, const float4 v)
{
    acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
}

__device__ __forceinline__ float4 load_cg(const float4* p)
{
    float4 v;
    asm volatile("ld.global.cg.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    return v;
}

__device__ __forceinline__ float4 load_ca(const float4* p)
{
    float4 v;
    asm volatile("ld.global.ca.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "l"(p));
    return v;
}

__device__ __forceinline__ float4 load_shared(const float4* p)
{
    float4 v;
    const unsigned address = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ld.shared.v4.f32 {%0,%1,%2,%3}, [%4];" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(address));
    return v;
}

__device__ __forceinline__ void store(float* out, const float4 acc)
{
    out[blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x] = acc.x + acc.y + acc.z + acc.w;
}

extern "C" __global__ void l2_reads(const float4* __restrict__ data, unsigned long long mask, int iterations,
                                    float* __restrict__ out)
{
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 4
    for (int k = 0; k < iterations; ++k) {
        add(acc, load_cg(data + (i & mask)));
        i += stride;
    }
    store(out, acc);
}

extern "C" __global__ void l1_reads(const float4* __restrict__ data, unsigned long long mask, int iterations,
                                    float* __restrict__ out)
{
    const float4* window = data + ((blockIdx.x * (unsigned long long)WINDOW) & mask);
    unsigned i = threadIdx.x;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 4
    for (int k = 0; k < iterations; ++k) {
        add(acc, load_ca(window + (i & (WINDOW - 1))));
        i += blockDim.x;
    }
    store(out, acc);
}

extern "C" __global__ void shared_reads(const float4* __restrict__ data, unsigned long long mask, int iterations,
                                        float* __restrict__ out)
{
    __shared__ float4 window[WINDOW];
    for (unsigned j = threadIdx.x; j < WINDOW; j += blockDim.x)
        window[j] = data[(blockIdx.x * (unsigned long long)WINDOW + j) & mask];
    __syncthreads();
    unsigned i = threadIdx.x;
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 4
    for (int k = 0; k < iterations; ++k) {
        add(acc, load_shared(window + (i & (WINDOW - 1))));
        i += blockDim.x;
    }
    store(out, acc);
}
