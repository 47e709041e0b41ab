// Tangled by `kernelbook tangle` from book/src/labs/lab2-transpose.md:417 (sha256 7529e35ba1b45039). Edit the book, not this file.
// A 64 × 64 tile (BOXES_X × BOXES_Y boxes of 32 × 32 floats) in through the tensor copy engine,
// transposed in place in shared memory by one thread per 4 × 4 block, out through the engine.
#ifndef BOXES_X
#define BOXES_X 2
#endif
#ifndef BOXES_Y
#define BOXES_Y 2
#endif
#define BOX 32
#define BOXES (BOXES_X * BOXES_Y)

struct __align__(64) TensorMap { unsigned long long opaque[16]; };

__device__ __forceinline__ unsigned shared_address(const void *p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// Where row r's 16-byte chunk c4 lies in a box under the 128-byte swizzle, in floats.
__device__ __forceinline__ int swizzled(int r, int c4) { return r * BOX + ((c4 ^ (r & 7)) << 2); }

extern "C" __global__ void __launch_bounds__(64 * BOXES)
    transpose_tma(const __grid_constant__ TensorMap out_map,
                  const __grid_constant__ TensorMap in_map) {
    extern __shared__ char raw[];
    // The swizzle pattern repeats every 1024 bytes: boxes start on such a boundary.
    float *tile = (float *)(((size_t)raw + 1023) & ~(size_t)1023);
    __shared__ unsigned long long landed;  // the mbarrier
    unsigned bar = shared_address(&landed);
    const int x0 = blockIdx.x * BOX * BOXES_X, y0 = blockIdx.y * BOX * BOXES_Y;
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                     ::"r"(bar), "r"(BOXES * BOX * BOX * 4) : "memory");
        for (int by = 0; by < BOXES_Y; ++by)
            for (int bx = 0; bx < BOXES_X; ++bx)
                asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile"
                             ".mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                             ::"r"(shared_address(tile + (by * BOXES_X + bx) * BOX * BOX)),
                             "l"(&in_map), "r"(x0 + bx * BOX), "r"(y0 + by * BOX), "r"(bar)
                             : "memory");
    }
    __syncthreads();  // the barrier is initialised before anyone waits on it
    asm volatile("{\n .reg .pred done;\n WAIT_%=:\n"
                 " mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
                 " @!done bra WAIT_%=;\n}" ::"r"(bar) : "memory");
    // This thread's 4 × 4 block: box `box`, column chunk p, rows r0 to r0 + 3.
    int box = threadIdx.x / 64, t = threadIdx.x % 64;
    int p = t % 8, r0 = 4 * ((p + t / 8) % 8);
    float4 v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
        v[i] = *reinterpret_cast<const float4 *>(tile + box * BOX * BOX + swizzled(r0 + i, p));
    __syncthreads();  // every block is in registers: the tile may be overwritten in place
    // Box (bx, by) of the input is box (by, bx) of the output; row 4p + j of it is column j.
    float *out_box = tile + ((box % BOXES_X) * BOXES_Y + box / BOXES_X) * BOX * BOX;
    float4 w[4] = {make_float4(v[0].x, v[1].x, v[2].x, v[3].x),
                   make_float4(v[0].y, v[1].y, v[2].y, v[3].y),
                   make_float4(v[0].z, v[1].z, v[2].z, v[3].z),
                   make_float4(v[0].w, v[1].w, v[2].w, v[3].w)};
#pragma unroll
    for (int j = 0; j < 4; ++j)
        *reinterpret_cast<float4 *>(out_box + swizzled(4 * p + j, r0 / 4)) = w[j];
    // Ordinary stores, read next by the copy engine: make them visible to it.
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int bx = 0; bx < BOXES_X; ++bx)
            for (int by = 0; by < BOXES_Y; ++by)
                asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group"
                             " [%0, {%1, %2}], [%3];"
                             ::"l"(&out_map), "r"(y0 + by * BOX), "r"(x0 + bx * BOX),
                             "r"(shared_address(tile + (bx * BOXES_Y + by) * BOX * BOX))
                             : "memory");
        asm volatile("cp.async.bulk.commit_group;" ::: "memory");
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
}
