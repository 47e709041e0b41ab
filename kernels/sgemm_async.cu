// Tangled by `kernelbook tangle` from book/src/labs/lab4-reuse.md:251 (sha256 25ccc361d3f021d9). Edit the book, not this file.
// C = A · B as sgemm_regtile (128 × 128 tile per block, 8 × 8 outputs per thread), with two
// buffers of each k-slice in shared memory: cp.async copies slice k + 1 straight from global
// into one while the block multiplies slice k out of the other. n must be a multiple of 128.
#define BM 128
#define BN 128
#define BK 8

__device__ __forceinline__ unsigned shared_address(const void *p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 4 bytes through the L1 (.ca, the only form for fewer than 16 bytes): A's slice, transposed.
__device__ __forceinline__ void copy_async_4(void *shared, const void *global) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(shared_address(shared)),
                 "l"(global) : "memory");
}

// 16 bytes past the L1 (.cg): B's slice, as it lies in memory.
__device__ __forceinline__ void copy_async_16(void *shared, const void *global) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(shared_address(shared)),
                 "l"(global) : "memory");
}

extern "C" __global__ void __launch_bounds__(256)
    sgemm_async(float *__restrict__ c, const float *__restrict__ a,
                const float *__restrict__ b, int n) {
    __shared__ __align__(16) float as[2][BK][BM];  // two buffers of A's slice: as[s][k][r]
    __shared__ __align__(16) float bs[2][BK][BN];  // two buffers of B's slice: bs[s][k][c]
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const int tr = (threadIdx.x / 16) * 4, tc = (threadIdx.x % 16) * 4;
    // Staging, as in sgemm_regtile: four floats of A (row ar, k = ak..ak+3) and a float4 of B.
    const int ar = threadIdx.x / 2, ak = (threadIdx.x % 2) * 4;
    const int bk = threadIdx.x / 32, bc = (threadIdx.x % 32) * 4;
    const float *a_from = &a[(size_t)(row0 + ar) * n + ak];
    const float *b_from = &b[(size_t)bk * n + col0 + bc];
    // Issues the copies of the slice starting at k0 into buffer s, as one group.
    auto stage = [&](int s, int k0) {
#pragma unroll
        for (int e = 0; e < 4; ++e) copy_async_4(&as[s][ak + e][ar], a_from + k0 + e);
        copy_async_16(&bs[s][bk][bc], b_from + (size_t)k0 * n);
        asm volatile("cp.async.commit_group;" ::: "memory");
    };
    float acc[8][8] = {};
    stage(0, 0);
    for (int k0 = 0, s = 0; k0 < n; k0 += BK, s ^= 1) {
        if (k0 + BK < n) {
            stage(s ^ 1, k0 + BK);                                // the next slice, in flight
            asm volatile("cp.async.wait_group 1;" ::: "memory");  // this one landed
        } else {
            asm volatile("cp.async.wait_group 0;" ::: "memory");
        }
        __syncthreads();  // every thread's copies of this slice are visible
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float4 a0 = *reinterpret_cast<const float4 *>(&as[s][k][tr]);
            float4 a1 = *reinterpret_cast<const float4 *>(&as[s][k][tr + 64]);
            float4 b0 = *reinterpret_cast<const float4 *>(&bs[s][k][tc]);
            float4 b1 = *reinterpret_cast<const float4 *>(&bs[s][k][tc + 64]);
            const float ra[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float rb[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
        }
        __syncthreads();  // buffer s is free for the slice after next
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        int row = row0 + tr + (i < 4 ? i : 60 + i);
        float *out = &c[(size_t)row * n + col0 + tc];
        *reinterpret_cast<float4 *>(out) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        *reinterpret_cast<float4 *>(out + 64) =
            make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    }
}
