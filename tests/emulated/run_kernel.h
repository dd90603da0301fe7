// main() of an emulated matrix-multiplication kernel (cuda_host.h): runs `matmul` over a 1-D grid and writes C.
//   kernel M N K BLOCKS THREADS SHARED_BYTES A.bin B.bin C.bin SHIFT
// A.bin and B.bin hold row-major A (M×K) and B (K×N) in the kernel's element type; each sits in an allocation of
// its exact size (plus SHIFT elements in front, which moves its start off a 16-byte boundary), so that an
// address sanitizer catches reads past its end. C starts as NaN bytes (0xFF) and is written to C.bin.
#include <string>

static std::vector<char> read_file(const char* path) {
    FILE* f = std::fopen(path, "rb");
    if (!f) emu::fail("cannot open an input file");
    std::vector<char> data;
    char buffer[1 << 16];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) data.insert(data.end(), buffer, buffer + n);
    std::fclose(f);
    return data;
}

int main(int argc, char** argv) {
    if (argc != 11) emu::fail("usage: kernel M N K BLOCKS THREADS SHARED_BYTES A.bin B.bin C.bin SHIFT");
    const int M = std::stoi(argv[1]), N = std::stoi(argv[2]), K = std::stoi(argv[3]);
    const unsigned blocks = (unsigned)std::stoul(argv[4]), threads = (unsigned)std::stoul(argv[5]);
    const size_t shared = std::stoul(argv[6]);
    const size_t shift = std::stoul(argv[10]) * sizeof(elem_t);
    const std::vector<char> a = read_file(argv[7]), b = read_file(argv[8]);
    if (a.size() != (size_t)M * K * sizeof(elem_t) || b.size() != (size_t)K * N * sizeof(elem_t))
        emu::fail("input sizes do not match M, N, K");
    char* a_block = static_cast<char*>(std::malloc(shift + a.size()));
    char* b_block = static_cast<char*>(std::malloc(shift + b.size()));
    acc_t* c = static_cast<acc_t*>(std::malloc((size_t)M * N * sizeof(acc_t)));
    std::memcpy(a_block + shift, a.data(), a.size());
    std::memcpy(b_block + shift, b.data(), b.size());
    std::memset(c, 0xFF, (size_t)M * N * sizeof(acc_t));
    const elem_t* A = reinterpret_cast<const elem_t*>(a_block + shift);
    const elem_t* B = reinterpret_cast<const elem_t*>(b_block + shift);
    for (unsigned block = 0; block < blocks; ++block) {
        for (emu::CopyQueue& q : emu::copy_queues()) q = emu::CopyQueue{};
        emu::run_block(block, threads, shared, [&] { matmul(A, B, c, M, N, K); });
        for (const emu::CopyQueue& q : emu::copy_queues())
            if (!q.groups.empty() || !q.open.empty()) emu::fail("a thread ended with copies that never landed");
    }
    FILE* out = std::fopen(argv[9], "wb");
    if (!out) emu::fail("cannot write C");
    std::fwrite(c, sizeof(acc_t), (size_t)M * N, out);
    std::fclose(out);
    std::free(a_block);
    std::free(b_block);
    std::free(c);
    return 0;
}
