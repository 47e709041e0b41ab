// Tangled by `kernelbook tangle` from book/src/labs/lab4-reuse.md:158 (sha256 20814013be217f2b). Edit the book, not this file.
// C = A · B with a 128 × 128 tile of C per block of 256 threads and 8 × 8 outputs per thread:
// each k-slice of 8 is staged in shared memory, and every value a thread loads from it is used
// 8 times from registers. n must be a multiple of 128.
#define BM 128
#define BN 128
#define BK 8

extern "C" __global__ void __launch_bounds__(256)
    sgemm_regtile(float *__restrict__ c, const float *__restrict__ a,
                  const float *__restrict__ b, int n) {
    __shared__ __align__(16) float as[BK][BM];  // A's slice transposed: as[k][r]
    __shared__ __align__(16) float bs[BK][BN];  // B's slice: bs[k][c]
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    // This thread's outputs: rows tr..tr+3 and tr+64..tr+67, columns tc..tc+3 and tc+64..tc+67,
    // so that the 16 threads sharing a row of the tile read 256 contiguous bytes of bs.
    const int tr = (threadIdx.x / 16) * 4, tc = (threadIdx.x % 16) * 4;
    // Staging: each thread brings one float4 of A (row ar, k = ak..ak+3) and one of B.
    const int ar = threadIdx.x / 2, ak = (threadIdx.x % 2) * 4;
    const int bk = threadIdx.x / 32, bc = (threadIdx.x % 32) * 4;
    float acc[8][8] = {};
    for (int k0 = 0; k0 < n; k0 += BK) {
        float4 va = *reinterpret_cast<const float4 *>(&a[(size_t)(row0 + ar) * n + k0 + ak]);
        as[ak + 0][ar] = va.x;
        as[ak + 1][ar] = va.y;
        as[ak + 2][ar] = va.z;
        as[ak + 3][ar] = va.w;
        *reinterpret_cast<float4 *>(&bs[bk][bc]) =
            *reinterpret_cast<const float4 *>(&b[(size_t)(k0 + bk) * n + col0 + bc]);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float4 a0 = *reinterpret_cast<const float4 *>(&as[k][tr]);
            float4 a1 = *reinterpret_cast<const float4 *>(&as[k][tr + 64]);
            float4 b0 = *reinterpret_cast<const float4 *>(&bs[k][tc]);
            float4 b1 = *reinterpret_cast<const float4 *>(&bs[k][tc + 64]);
            const float ra[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float rb[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(ra[i], rb[j], acc[i][j]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        int row = row0 + tr + (i < 4 ? i : 60 + i);  // rows tr..tr+3, then tr+64..tr+67
        float *out = &c[(size_t)row * n + col0 + tc];
        *reinterpret_cast<float4 *>(out) = make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
        *reinterpret_cast<float4 *>(out + 64) =
            make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
    }
}
