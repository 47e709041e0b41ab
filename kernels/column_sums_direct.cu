// Tangled by `kernelbook tangle` from book/src/exercises/drill-bank-conflict.md:165 (sha256 7c9d2d741928fde0). Edit the book, not this file.
#define TILE 32

// No tile: lane c adds column c of a 32-row strip straight from global memory, in row order
// (each row is 32 lanes reading 128 contiguous bytes). Launch: one warp per block.
extern "C" __global__ void column_sums_direct(float *__restrict__ out,
                                              const float *__restrict__ in, int n) {
    int c  = blockIdx.x * TILE + threadIdx.x;
    int r0 = blockIdx.y * TILE;
    float s = 0.0f;
#pragma unroll
    for (int r = 0; r < TILE; ++r) {
        s += in[(size_t)(r0 + r) * n + c];
    }
    out[(size_t)blockIdx.y * n + c] = s;
}
