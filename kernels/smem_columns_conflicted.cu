// Tangled by `kernelbook tangle` from book/src/hierarchy/shared-memory.md:280 (sha256 36b07215976f4af8). Edit the book, not this file.
// Column reads through a [32][32] tile: lane x reads word 32x + c, bank c for every lane,
// so each read instruction of a warp is a 32-way conflict (32 passes through shared memory).
extern "C" __global__ void smem_columns_conflicted(unsigned *__restrict__ out,
                                                   const unsigned *__restrict__ in, int reps) {
    __shared__ unsigned tile[32][32];
    const unsigned *block_in = in + (size_t)blockIdx.x * 1024;
    for (int r = threadIdx.y; r < 32; r += 8) {
        tile[r][threadIdx.x] = block_in[r * 32 + threadIdx.x];   // row writes: 32 banks
    }
    __syncthreads();
    unsigned sum = 0;
    for (int r = 0; r < reps; ++r) {
        sum += tile[threadIdx.x][(threadIdx.y + r) & 31];        // column read: one bank
    }
    out[(size_t)blockIdx.x * 256 + threadIdx.y * 32 + threadIdx.x] = sum;
}
