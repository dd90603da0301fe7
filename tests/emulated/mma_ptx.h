// The PTX section of kernel_templates/mma.cu.j2 on the host (cuda_host.h), written from the PTX ISA's
// descriptions rather than from the kernel: cp.async with its commit groups, st.shared, ldmatrix (.x4 and
// .x4.trans) and mma.sync m16n8k16 (bf16, f16), m16n8k8 (tf32) and m16n8k{4,8,16} (f64) with the fragment
// layouts of the ISA's "Matrix Fragments for mma.m16n8k*" sections. Included in place of that section, after
// the template's types (elem_t, acc_t, raw_t, frag_t, A_REGS, B_REGS); EMU_DTYPE names the dtype
// (1 float64, 2 tf32, 3 bfloat16, 4 float16) and EMU_MMA_K the mma's k.
#include <cmath>
#include <deque>

namespace emu {

struct PendingCopy {
    unsigned dst;
    const void* src;
    bool valid;
};

// Copies issued and not yet landed, per thread of the block: closed groups, then the open one.
struct CopyQueue {
    std::deque<std::vector<PendingCopy>> groups;
    std::vector<PendingCopy> open;
};

inline std::vector<CopyQueue>& copy_queues() {
    static std::vector<CopyQueue> queues(1024);
    return queues;
}

// EMU_COPIES_LAND=issue: each copy lands as it is issued; otherwise as late as the ISA allows, at the
// cp.async.wait_group that covers it (a read of a stage before its wait then sees the old data).
inline bool copies_land_at_issue() {
    static const bool at_issue = [] {
        const char* mode = std::getenv("EMU_COPIES_LAND");
        return mode != nullptr && std::strcmp(mode, "issue") == 0;
    }();
    return at_issue;
}

inline void land(const PendingCopy& c) {
    unsigned char* dst = shared_base() + c.dst;
    if (c.dst + 16 > block()->shared.size() || c.dst % 16) fail("cp.async destination outside shared memory or unaligned");
    if (c.valid) {
        if (reinterpret_cast<uintptr_t>(c.src) % 16) fail("cp.async source not 16-byte aligned");
        std::memcpy(dst, c.src, 16);
    } else {
        std::memset(dst, 0, 16);
    }
}

inline float bf16_value(unsigned short bits) {
    unsigned word = (unsigned)bits << 16;
    float f;
    std::memcpy(&f, &word, 4);
    return f;
}

inline float f16_value(unsigned short bits) {
    const int sign = bits >> 15, exponent = (bits >> 10) & 31, mantissa = bits & 1023;
    float magnitude;
    if (exponent == 0) magnitude = std::ldexp((float)mantissa, -24);
    else if (exponent == 31) magnitude = mantissa ? NAN : INFINITY;
    else magnitude = std::ldexp((float)(mantissa | 1024), exponent - 25);
    return sign ? -magnitude : magnitude;
}

// The tensor cores read a tf32 operand's sign, exponent and upper 10 mantissa bits.
inline float tf32_value(unsigned bits) {
    bits &= 0xFFFFE000u;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

}  // namespace emu

__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return (unsigned)(static_cast<const unsigned char*>(p) - emu::shared_base());
}

__device__ __forceinline__ void copy_chunk(unsigned dst, const void* src, bool valid) {
    const emu::PendingCopy c{dst, src, valid};
    if (emu::copies_land_at_issue()) emu::land(c);
    else emu::copy_queues()[emu::thread_id()].open.push_back(c);
}
__device__ __forceinline__ void copy_commit() {
    emu::CopyQueue& q = emu::copy_queues()[emu::thread_id()];
    q.groups.push_back(std::move(q.open));
    q.open.clear();
}
template <int N> __device__ __forceinline__ void copy_wait() {
    emu::CopyQueue& q = emu::copy_queues()[emu::thread_id()];
    while (q.groups.size() > (size_t)N) {
        for (const emu::PendingCopy& c : q.groups.front()) emu::land(c);
        q.groups.pop_front();
    }
}

__device__ __forceinline__ void store_shared16(unsigned dst, const uint4& v) {
    if (dst + 16 > emu::block()->shared.size() || dst % 16) emu::fail("st.shared.v4 outside shared memory or unaligned");
    std::memcpy(emu::shared_base() + dst, &v, 16);
}

namespace emu {
// ldmatrix.sync.aligned.m8n8.x4{.trans}.shared.b16: "addresses addr0–addr7 correspond to the rows of the first
// matrix, addr8–addr15 to the rows of the second", each row 16 bytes (8 b16 elements), 16-byte aligned;
// "a group of four consecutive threads loads an entire row": lane l gets row l/4, elements 2·(l%4) and
// 2·(l%4)+1 (lower element in the lower half). .trans delivers the transposed matrix the same way.
inline void ldmatrix(unsigned (&r)[4], unsigned addr, bool trans) {
    const unsigned lane = thread_id() % 32;
    unsigned out[4];
    warp_exchange(&addr, sizeof addr, [&](const unsigned char* const* slots) {
        auto row_address = [&](int i) {
            unsigned a;
            std::memcpy(&a, slots[i], 4);
            if (a % 16 || a + 16 > block()->shared.size()) fail("ldmatrix row address unaligned or outside shared memory");
            return a;
        };
        auto element = [&](int matrix, int row, int col) {
            unsigned short e;
            std::memcpy(&e, shared_base() + row_address(8 * matrix + row) + 2 * col, 2);
            return (unsigned)e;
        };
        for (int j = 0; j < 4; ++j) {
            const int g = lane / 4, t = lane % 4;
            out[j] = trans ? element(j, 2 * t, g) | element(j, 2 * t + 1, g) << 16
                           : element(j, g, 2 * t) | element(j, g, 2 * t + 1) << 16;
        }
    });
    for (int j = 0; j < 4; ++j) r[j] = out[j];
}
}  // namespace emu

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr) { emu::ldmatrix(r, addr, false); }
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3,
                                                  unsigned addr) {
    unsigned r[4];
    emu::ldmatrix(r, addr, true);
    r0 = r[0]; r1 = r[1]; r2 = r[2]; r3 = r[3];
}

namespace emu {
constexpr int MMA_KDIM = EMU_DTYPE == 3 || EMU_DTYPE == 4 ? 16 : EMU_DTYPE == 2 ? 8 : EMU_MMA_K;

// (row, column) of element i of a lane's A, B and C fragments, per the ISA's fragment sections.
inline void a_position(int i, int g, int t, int& row, int& col) {
    if (EMU_DTYPE == 3 || EMU_DTYPE == 4) {          // m16n8k16 .f16/.bf16, a0..a7
        row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
        col = i < 4 ? t * 2 + (i & 1) : t * 2 + (i & 1) + 8;
    } else if (EMU_DTYPE == 2) {                     // m16n8k8 .tf32, a0..a3
        row = (i == 0 || i == 2) ? g : g + 8;
        col = i < 2 ? t : t + 4;
    } else if (MMA_KDIM == 4) {                      // m16n8k4 .f64, a0, a1
        row = i == 0 ? g : g + 8;
        col = t;
    } else if (MMA_KDIM == 8) {                      // m16n8k8 .f64, a0..a3
        row = (i == 0 || i == 2) ? g : g + 8;
        col = i < 2 ? t : t + 4;
    } else {                                         // m16n8k16 .f64, a0..a7
        row = i % 2 == 0 ? g : g + 8;
        col = i % 2 == 0 ? i * 2 + t : i * 2 - 2 + t;
    }
}
inline void b_position(int i, int g, int t, int& row, int& col) {
    if (EMU_DTYPE == 3 || EMU_DTYPE == 4) row = i < 2 ? t * 2 + (i & 1) : t * 2 + (i & 1) + 8;   // b0..b3
    else if (EMU_DTYPE == 2) row = i == 0 ? t : t + 4;                                        // b0, b1
    else row = t + i * 4;                                                                    // f64 b0..
    col = g;
}
inline void c_position(int i, int g, int t, int& row, int& col) {
    row = i < 2 ? g : g + 8;
    col = t * 2 + (i & 1);
}

constexpr int A_ELEMENTS = EMU_DTYPE >= 3 ? 8 : EMU_DTYPE == 2 ? 4 : MMA_KDIM / 2;
constexpr int B_ELEMENTS = EMU_DTYPE >= 3 ? 4 : EMU_DTYPE == 2 ? 2 : MMA_KDIM / 4;

// Element i of a lane's fragment registers as a number.
template <typename Frag> double operand(const Frag* regs, int i) {
    if constexpr (EMU_DTYPE == 1) {
        return (double)regs[i];
    } else if constexpr (EMU_DTYPE == 2) {
        return tf32_value((unsigned)regs[i]);
    } else {
        const unsigned word = (unsigned)regs[i / 2];
        const unsigned short bits = (unsigned short)(i % 2 ? word >> 16 : word & 0xFFFF);
        return EMU_DTYPE == 3 ? bf16_value(bits) : f16_value(bits);
    }
}

struct MmaDeposit {
    frag_t a[A_REGS];
    frag_t b[B_REGS];
    acc_t c[4];
};
}  // namespace emu

__device__ __forceinline__ void mma(acc_t (&c)[4], const frag_t (&a)[A_REGS], const frag_t (&b)[B_REGS]) {
    using namespace emu;
    MmaDeposit mine;
    std::memcpy(mine.a, a, sizeof mine.a);
    std::memcpy(mine.b, b, sizeof mine.b);
    std::memcpy(mine.c, c, sizeof mine.c);
    const int lane = (int)(thread_id() % 32);
    acc_t out[4];
    warp_exchange(&mine, sizeof mine, [&](const unsigned char* const* slots) {
        double A[16][16] = {}, B[16][8] = {}, C[16][8] = {};
        for (int l = 0; l < 32; ++l) {
            MmaDeposit d;
            std::memcpy(&d, slots[l], sizeof d);
            const int g = l / 4, t = l % 4;
            int row, col;
            for (int i = 0; i < A_ELEMENTS; ++i) { a_position(i, g, t, row, col); A[row][col] = operand(d.a, i); }
            for (int i = 0; i < B_ELEMENTS; ++i) { b_position(i, g, t, row, col); B[row][col] = operand(d.b, i); }
            for (int i = 0; i < 4; ++i) { c_position(i, g, t, row, col); C[row][col] = (double)d.c[i]; }
        }
        const int g = lane / 4, t = lane % 4;
        for (int i = 0; i < 4; ++i) {
            int row, col;
            c_position(i, g, t, row, col);
            double sum = C[row][col];
            for (int k = 0; k < MMA_KDIM; ++k) sum += A[row][k] * B[k][col];
            out[i] = (acc_t)sum;
        }
    });
    for (int i = 0; i < 4; ++i) c[i] = out[i];
}
