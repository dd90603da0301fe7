// CUDA C++ on the host, for checking a kernel's indexing without a GPU: every thread of a block is a fiber
// (ucontext) run by one OS thread, __syncthreads and warp-wide instructions are barriers the fibers block at,
// and shared memory is a byte array whose offsets are the shared addresses. Blocks run one after another.
// Warp-wide instructions are written by the family's own host header, with emu::warp_exchange.
// EMU_SCHEDULE picks which runnable thread runs next: "round" (in turn), "first" (the lowest-numbered: warp 0
// runs ahead of the others as far as the barriers let it) or "last" (the highest-numbered), so that a missing
// barrier shows as a read of shared memory before its write or after its overwrite.
#pragma once

#include <ucontext.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __align__(n) alignas(n)

struct uint4 { unsigned x, y, z, w; };
struct float2 { float x, y; };
struct double2 { double x, y; };
inline float2 make_float2(float x, float y) { return {x, y}; }
inline double2 make_double2(double x, double y) { return {x, y}; }
struct __nv_bfloat16 { unsigned short bits; };
struct __half { unsigned short bits; };
struct emu_dim3 { unsigned x, y, z; };
using std::max;
using std::min;

namespace emu {

constexpr size_t STACK_BYTES = 1 << 18;

struct Barrier {
    int arrived = 0;
    long generation = 0;
};

struct Thread {
    ucontext_t context;
    std::unique_ptr<char[]> stack;
    unsigned index = 0;
    bool done = false;
    const Barrier* waiting = nullptr;   // the barrier this thread waits at, and its generation then
    long waiting_generation = 0;

    bool runnable() const { return !done && (waiting == nullptr || waiting->generation != waiting_generation); }
};

enum class Schedule { round, first, last };

inline Schedule schedule() {
    static const Schedule chosen = [] {
        const char* name = std::getenv("EMU_SCHEDULE");
        if (name == nullptr || std::strcmp(name, "round") == 0) return Schedule::round;
        if (std::strcmp(name, "first") == 0) return Schedule::first;
        if (std::strcmp(name, "last") == 0) return Schedule::last;
        std::fprintf(stderr, "emulation error: EMU_SCHEDULE is round, first or last\n");
        std::exit(3);
    }();
    return chosen;
}

struct Block {
    unsigned index = 0, threads = 0;
    std::vector<unsigned char> shared;
    std::vector<Thread> fibers;
    std::vector<Barrier> warp_barriers;
    Barrier block_barrier;
    std::vector<std::vector<unsigned char>> warp_slots;   // per warp: 32 lanes × SLOT_BYTES
    ucontext_t scheduler;
    unsigned current = 0;
    std::function<void()> body;
};

constexpr size_t SLOT_BYTES = 512;

inline Block*& block() {
    static Block* b = nullptr;
    return b;
}

inline void fail(const char* what) {
    std::fprintf(stderr, "emulation error: %s\n", what);
    std::exit(3);
}

// Waits until `count` threads have arrived at `barrier`; the last to arrive goes on at once.
inline void wait_at(Barrier& barrier, int count) {
    if (++barrier.arrived == count) {
        barrier.arrived = 0;
        ++barrier.generation;
        return;
    }
    Block& b = *block();
    Thread& me = b.fibers[b.current];
    me.waiting = &barrier;
    me.waiting_generation = barrier.generation;
    swapcontext(&me.context, &b.scheduler);
    me.waiting = nullptr;
}

inline unsigned thread_id() { return block()->fibers[block()->current].index; }
inline emu_dim3 thread_index() { return {thread_id(), 0, 0}; }
inline emu_dim3 block_index() { return {block()->index, 0, 0}; }
inline unsigned char* shared_base() { return block()->shared.data(); }

// Every lane of the calling thread's warp deposits `bytes` of `in`; once all have, `use` sees the 32 deposits
// (lane order); then the warp leaves together, so that the deposits stay valid while any lane reads them.
inline void warp_exchange(const void* in, size_t bytes, const std::function<void(const unsigned char* const*)>& use) {
    Block& b = *block();
    const unsigned tid = thread_id(), warp = tid / 32, lane = tid % 32;
    if (bytes > SLOT_BYTES) fail("warp exchange deposit too large");
    std::memcpy(b.warp_slots[warp].data() + lane * SLOT_BYTES, in, bytes);
    const int lanes = (int)std::min(32u, b.threads - warp * 32);
    if (lanes != 32) fail("a warp-wide instruction in a partial warp");
    wait_at(b.warp_barriers[warp], 32);
    const unsigned char* slots[32];
    for (int i = 0; i < 32; ++i) slots[i] = b.warp_slots[warp].data() + i * SLOT_BYTES;
    use(slots);
    wait_at(b.warp_barriers[warp], 32);
}

inline void entry() {
    Block& b = *block();
    b.body();
    b.fibers[b.current].done = true;
    swapcontext(&b.fibers[b.current].context, &b.scheduler);
}

// Runs `body` as every thread of block `index`.
inline void run_block(unsigned index, unsigned threads, size_t shared_bytes, std::function<void()> body) {
    Block b;
    b.index = index;
    b.threads = threads;
    b.shared.assign(shared_bytes, 0xA5);   // not zero: a read before any write shows
    b.fibers.resize(threads);
    b.warp_barriers.resize((threads + 31) / 32);
    b.warp_slots.assign((threads + 31) / 32, std::vector<unsigned char>(32 * SLOT_BYTES));
    b.body = std::move(body);
    block() = &b;
    for (unsigned t = 0; t < threads; ++t) {
        Thread& f = b.fibers[t];
        f.index = t;
        f.stack.reset(new char[STACK_BYTES]);
        getcontext(&f.context);
        f.context.uc_stack.ss_sp = f.stack.get();
        f.context.uc_stack.ss_size = STACK_BYTES;
        f.context.uc_link = nullptr;
        makecontext(&f.context, entry, 0);
    }
    for (unsigned last = threads - 1;;) {
        int next = -1;
        for (unsigned i = 0; i < threads && next < 0; ++i) {
            const unsigned t = schedule() == Schedule::first ? i
                             : schedule() == Schedule::last ? threads - 1 - i : (last + 1 + i) % threads;
            if (b.fibers[t].runnable()) next = (int)t;
        }
        if (next < 0) break;
        b.current = last = (unsigned)next;
        swapcontext(&b.scheduler, &b.fibers[next].context);
    }
    for (const Thread& f : b.fibers)
        if (!f.done) fail("deadlock: threads wait at barriers that never open (a barrier some threads skip)");
    block() = nullptr;
}

}  // namespace emu

#define threadIdx (emu::thread_index())
#define blockIdx (emu::block_index())
inline void __syncthreads() { emu::wait_at(emu::block()->block_barrier, (int)emu::block()->threads); }
