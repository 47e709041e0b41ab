// Tangled by `kernelbook tangle` from book/src/hierarchy/shared-memory.md:299 (sha256 5d72671a85e91bd1). Edit the book, not this file.
// The same reads through a [32][33] tile: lane x reads word 33x + c, bank (x + c) mod 32,
// 32 different banks, one pass per read instruction.
extern "C" __global__ void smem_columns_padded(unsigned *__restrict__ out,
                                               const unsigned *__restrict__ in, int reps) {
    __shared__ unsigned tile[32][33];
    const unsigned *block_in = in + (size_t)blockIdx.x * 1024;
    for (int r = threadIdx.y; r < 32; r += 8) {
        tile[r][threadIdx.x] = block_in[r * 32 + threadIdx.x];
    }
    __syncthreads();
    unsigned sum = 0;
    for (int r = 0; r < reps; ++r) {
        sum += tile[threadIdx.x][(threadIdx.y + r) & 31];
    }
    out[(size_t)blockIdx.x * 256 + threadIdx.y * 32 + threadIdx.x] = sum;
}
