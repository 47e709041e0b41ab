// Tangled by `kernelbook tangle` from book/src/labs/lab4-reuse.md:103 (sha256 e4b128869c77ed8e). Edit the book, not this file.
// C = A · B through TILE × TILE tiles of A and B in shared memory: each element a block loads
// serves TILE of its outputs. n must be a multiple of TILE.
#ifndef TILE
#define TILE 32
#endif

extern "C" __global__ void sgemm_tiled(float *__restrict__ c, const float *__restrict__ a,
                                       const float *__restrict__ b, int n) {
    __shared__ float as[TILE][TILE];  // as[r][k]: rows of A's tile
    __shared__ float bs[TILE][TILE];  // bs[k][c]: rows of B's tile
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < n; k0 += TILE) {
        as[ty][tx] = a[(size_t)row * n + k0 + tx];    // lanes along a row of A: coalesced
        bs[ty][tx] = b[(size_t)(k0 + ty) * n + col];  // lanes along a row of B: coalesced
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc = fmaf(as[ty][k], bs[k][tx], acc);    // a broadcast and a conflict-free row
        __syncthreads();
    }
    c[(size_t)row * n + col] = acc;
}
