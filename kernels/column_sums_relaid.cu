// Tangled by `kernelbook tangle` from book/src/exercises/drill-bank-conflict.md:213 (sha256 755e3a746eb3df48). Edit the book, not this file.
#define TILE 32
#define BLOCK_ROWS 8

// Fix B: store the tile as it arrives (lane index last) and walk down its columns; bank x.
extern "C" __global__ void column_sums_relaid(float *__restrict__ out,
                                              const float *__restrict__ in, int n) {
    __shared__ float tile[TILE][TILE];
    int c  = blockIdx.x * TILE + threadIdx.x;
    int r0 = blockIdx.y * TILE;
    for (int j = 0; j < TILE; j += BLOCK_ROWS) {
        int r = threadIdx.y + j;
        tile[r][threadIdx.x] = in[(size_t)(r0 + r) * n + c];
    }
    __syncthreads();
    if (threadIdx.y == 0) {
        float s = 0.0f;
        for (int r = 0; r < TILE; ++r) {
            s += tile[r][threadIdx.x];
        }
        out[(size_t)blockIdx.y * n + c] = s;
    }
}
