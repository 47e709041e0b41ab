// Tangled by `kernelbook tangle` from book/src/exercises/drill-hierarchy-sizing.md:154 (sha256 c5a0d783d8683fde). Edit the book, not this file.
#ifndef TILE
#define TILE 128                 // a multiple of 32
#endif
#ifndef N
#define N 13440                  // the matrix side, a multiple of TILE
#endif
#define COLS (TILE / 32)         // column groups per thread
#define ROWS (TILE / 8)          // row groups per thread: COLS * ROWS = TILE * TILE / 256

// out = a + (a with each TILE x TILE block transposed in place). Launch: grid (N / TILE,
// N / TILE), 256 threads, TILE * (TILE + 1) * 4 bytes of dynamic shared memory.
extern "C" __global__ void __launch_bounds__(256)
tile_sizing(float *__restrict__ out, const float *__restrict__ in) {
    extern __shared__ float tile[];                  // TILE rows of TILE + 1 floats
    float held[ROWS][COLS];                           // this thread's elements, in registers
    int cx = threadIdx.x & 31, ry = threadIdx.x >> 5; // a warp spans 32 columns of one row
    size_t origin = ((size_t)blockIdx.y * TILE + ry) * N + (size_t)blockIdx.x * TILE + cx;
#pragma unroll
    for (int b = 0; b < ROWS; ++b) {
#pragma unroll
        for (int a = 0; a < COLS; ++a) {
            held[b][a] = in[origin + (size_t)b * 8 * N + a * 32];
            tile[(ry + 8 * b) * (TILE + 1) + cx + 32 * a] = held[b][a];
        }
    }
    __syncthreads();
#pragma unroll
    for (int b = 0; b < ROWS; ++b) {
#pragma unroll
        for (int a = 0; a < COLS; ++a) {
            float mirrored = tile[(cx + 32 * a) * (TILE + 1) + ry + 8 * b];
            out[origin + (size_t)b * 8 * N + a * 32] = held[b][a] + mirrored;
        }
    }
}
