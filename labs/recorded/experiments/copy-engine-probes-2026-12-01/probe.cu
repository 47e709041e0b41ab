// Probe: bulk-copy / TMA copy and transpose against cudaMemcpy D2D on one GPU.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <functional>
#include <string>
#include <cstdint>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1);} } while (0)

__device__ __forceinline__ unsigned smem_addr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint64_t *bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_expect_tx(uint64_t *bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t *bar, unsigned parity) {
    asm volatile(
        "{\n .reg .pred p;\n WAIT_%=:\n"
        " mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
        " @!p bra WAIT_%=;\n}\n" :: "r"(smem_addr(bar)), "r"(parity) : "memory");
}
__device__ __forceinline__ void bulk_load(void *dst_smem, const void *src, unsigned bytes, uint64_t *bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(smem_addr(dst_smem)), "l"(src), "r"(bytes), "r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void bulk_store(void *dst, const void *src_smem, unsigned bytes) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                 :: "l"(dst), "r"(smem_addr(src_smem)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(N) : "memory"); }
template <int N> __device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group %0;" :: "n"(N) : "memory"); }
__device__ __forceinline__ void fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
__device__ __forceinline__ void fence_mbar_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

__device__ __forceinline__ void tma_load_2d(void *dst_smem, const CUtensorMap *map, int x, int y, uint64_t *bar) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(smem_addr(dst_smem)), "l"(map), "r"(x), "r"(y), "r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void tma_store_2d(const CUtensorMap *map, int x, int y, const void *src_smem) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];"
                 :: "l"(map), "r"(x), "r"(y), "r"(smem_addr(src_smem)) : "memory");
}

// ---------- copies ----------
extern "C" __global__ void copy_float4(float4 *__restrict__ dst, const float4 *__restrict__ src, int n4) {
    int stride = gridDim.x * blockDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) dst[i] = src[i];
}

template <int U>
__global__ void copy_f4_unroll(float4 *__restrict__ dst, const float4 *__restrict__ src, long n4) {
    long stride = (long)gridDim.x * blockDim.x;
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + (U - 1) * stride < n4; i += U * stride) {
        float4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = __ldcs(src + i + u * stride);
#pragma unroll
        for (int u = 0; u < U; ++u) __stcs(dst + i + u * stride, v[u]);
    }
    for (; i < n4; i += stride) dst[i] = src[i];
}

// One issuing thread per block; STAGES chunks of CHUNK bytes in flight.
// bytes is a multiple of CHUNK.
template <int STAGES>
__global__ void bulk_copy(char *__restrict__ dst, const char *__restrict__ src, long bytes, int chunk) {
    extern __shared__ __align__(128) char smem[];
    __shared__ uint64_t bars[STAGES];
    if (threadIdx.x != 0) return;
    long nchunks = bytes / chunk;
    long first = blockIdx.x;
    long step = gridDim.x;
    long mine = first < nchunks ? (nchunks - first + step - 1) / step : 0;
    for (int s = 0; s < STAGES; ++s) mbar_init(&bars[s], 1);
    fence_mbar_init();
    for (int s = 0; s < STAGES && s < mine; ++s) {
        long c = first + s * step;
        mbar_expect_tx(&bars[s], chunk);
        bulk_load(smem + s * chunk, src + c * chunk, chunk, &bars[s]);
    }
    for (long k = 0; k < mine; ++k) {
        int s = k % STAGES;
        mbar_wait(&bars[s], (k / STAGES) & 1);
        long c = first + k * step;
        bulk_store(dst + c * chunk, smem + s * chunk, chunk);
        bulk_commit();
        // Refill the stage whose store was issued in the previous iteration.
        long refill = k - 1 + STAGES;
        if (k >= 1 && refill < mine) {
            bulk_wait_read<1>();
            int rs = (k - 1) % STAGES;
            long rc = first + refill * step;
            mbar_expect_tx(&bars[rs], chunk);
            bulk_load(smem + rs * chunk, src + rc * chunk, chunk, &bars[rs]);
        }
    }
    bulk_wait<0>();
}

// ---------- transposes ----------
#define T64 64
extern "C" __global__ void transpose_vec4_64(float *__restrict__ out, const float *__restrict__ in, int n) {
    __shared__ float tile[T64][T64 + 4];
    int tx = threadIdx.x, ty = threadIdx.y; // 16 x 16
    int bx = blockIdx.x * T64, by = blockIdx.y * T64;
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        int row = ty + 16 * r;
        float4 v = *reinterpret_cast<const float4 *>(&in[(size_t)(by + row) * n + bx + 4 * tx]);
        tile[row][4 * tx + 0] = v.x; tile[row][4 * tx + 1] = v.y; tile[row][4 * tx + 2] = v.z; tile[row][4 * tx + 3] = v.w;
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        int row = ty + 16 * r;
        float4 v = make_float4(tile[4 * tx + 0][row], tile[4 * tx + 1][row], tile[4 * tx + 2][row], tile[4 * tx + 3][row]);
        *reinterpret_cast<float4 *>(&out[(size_t)(bx + row) * n + by + 4 * tx]) = v;
    }
}

// TMA: 32x32 fp32 boxes, 128-byte swizzle, each thread transposes a 4x4 block in registers.
// 64 threads per tile; TPB tiles per block iteration (blockDim = 64 * TPB); STAGES deep.
// Smem chunk (16 B) index within a 128 B row r is  c4 ^ (r % 8).
__device__ __forceinline__ int swz(int r, int c4) { return r * 32 + ((c4 ^ (r & 7)) << 2); }

template <int STAGES, int TPB>
__global__ void __launch_bounds__(64 * TPB) transpose_tma(const __grid_constant__ CUtensorMap in_map,
                                                          const __grid_constant__ CUtensorMap out_map, int n) {
    extern __shared__ __align__(1024) char smem_raw[];
    char *base = (char *)(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    float *a = (float *)base;                         // STAGES * TPB tiles of 4 KiB
    float *b = (float *)(base + STAGES * TPB * 4096);  // 2 * TPB tiles
    __shared__ uint64_t bars[STAGES];
    int tiles_per_row = n / 32;
    long ntiles = (long)tiles_per_row * tiles_per_row;
    long groups = ntiles / TPB;
    long mine = blockIdx.x < groups ? (groups - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    int t = threadIdx.x & 63, sub = threadIdx.x >> 6;
    // Thread's 4x4 block: p = t % 8 ... chosen so both reads and writes are conflict free.
    int p = t & 7, q = t >> 3;            // q in 0..7
    int r0 = 4 * ((p + q) & 7), c40 = p;   // block rows r0..r0+3, cols 4*c40..+3
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) mbar_init(&bars[s], 1);
        fence_mbar_init();
        for (int s = 0; s < STAGES && s < mine; ++s) {
            long g = blockIdx.x + (long)s * gridDim.x;
            mbar_expect_tx(&bars[s], 4096 * TPB);
            for (int j = 0; j < TPB; ++j) {
                long tile = g * TPB + j;
                int tx = tile % tiles_per_row, ty = tile / tiles_per_row;
                tma_load_2d(a + (s * TPB + j) * 1024, &in_map, tx * 32, ty * 32, &bars[s]);
            }
        }
    }
    __syncthreads();
    for (long k = 0; k < mine; ++k) {
        int s = k % STAGES, bb = k & 1;
        if (threadIdx.x == 0) bulk_wait_read<1>();
        __syncthreads();
        mbar_wait(&bars[s], (k / STAGES) & 1);
        const float *A = a + (s * TPB + sub) * 1024;
        float *B = b + (bb * TPB + sub) * 1024;
        float4 v[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) v[i] = *reinterpret_cast<const float4 *>(A + swz(r0 + i, c40));
        float4 w[4];
        w[0] = make_float4(v[0].x, v[1].x, v[2].x, v[3].x);
        w[1] = make_float4(v[0].y, v[1].y, v[2].y, v[3].y);
        w[2] = make_float4(v[0].z, v[1].z, v[2].z, v[3].z);
        w[3] = make_float4(v[0].w, v[1].w, v[2].w, v[3].w);
        // B[c][r]: row c = 4*c40 + j, chunk r0/4
#pragma unroll
        for (int j = 0; j < 4; ++j) *reinterpret_cast<float4 *>(B + swz(4 * c40 + j, r0 >> 2)) = w[j];
        fence_async_smem();
        __syncthreads();
        if (threadIdx.x == 0) {
            long g = blockIdx.x + k * gridDim.x;
            for (int j = 0; j < TPB; ++j) {
                long tile = g * TPB + j;
                int tx = tile % tiles_per_row, ty = tile / tiles_per_row;
                tma_store_2d(&out_map, ty * 32, tx * 32, b + (bb * TPB + j) * 1024);
            }
            bulk_commit();
            if (k + STAGES < mine) {
                long g2 = blockIdx.x + (k + STAGES) * gridDim.x;
                mbar_expect_tx(&bars[s], 4096 * TPB);
                for (int j = 0; j < TPB; ++j) {
                    long tile = g2 * TPB + j;
                    int tx = tile % tiles_per_row, ty = tile / tiles_per_row;
                    tma_load_2d(a + (s * TPB + j) * 1024, &in_map, tx * 32, ty * 32, &bars[s]);
                }
            }
        }
    }
    if (threadIdx.x == 0) bulk_wait<0>();
}

// ---------- harness ----------
static float time_it(std::function<void()> f, int reps = 40) {
    cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    for (int i = 0; i < 5; ++i) f();
    CK(cudaDeviceSynchronize());
    std::vector<float> ts;
    for (int i = 0; i < reps; ++i) {
        CK(cudaEventRecord(a)); f(); CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b)); ts.push_back(ms);
    }
    CK(cudaGetLastError());
    std::sort(ts.begin(), ts.end());
    return ts[ts.size() / 2];
}

typedef CUresult (*EncodeTiled)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *, const cuuint64_t *, const cuuint64_t *,
                                const cuuint32_t *, const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                                CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

static CUtensorMap make_map(void *ptr, int n, CUtensorMapL2promotion promo) {
    CUtensorMap m;
    cuuint64_t dims[2] = {(cuuint64_t)n, (cuuint64_t)n};
    cuuint64_t strides[1] = {(cuuint64_t)n * 4};
    cuuint32_t box[2] = {32, 32};
    cuuint32_t es[2] = {1, 1};
    CUresult r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, ptr, dims, strides, box, es,
                                        CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, promo,
                                        CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS) { printf("encode failed %d\n", r); exit(1); }
    return m;
}

int main(int argc, char **argv) {
    int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaDeviceProp prop; CK(cudaGetDeviceProperties(&prop, 0));
    printf("device %s sms %d\n", prop.name, sms);
    for (long mib : {256L, 1024L}) {
        long bytes = mib << 20;
        char *src, *dst; CK(cudaMalloc(&src, bytes)); CK(cudaMalloc(&dst, bytes));
        CK(cudaMemset(src, 1, bytes));
        auto gbs = [&](float ms) { return 2.0 * bytes / ms / 1e6; };
        float mc = time_it([&] { CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice)); });
        printf("== %ld MiB: memcpy %.3f ms %.1f GB/s\n", mib, mc, gbs(mc));
        auto report = [&](const char *name, float ms) {
            bool ok = true;
            std::vector<char> h(4096), g(4096);
            CK(cudaMemcpy(h.data(), src + bytes - 4096, 4096, cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(g.data(), dst + bytes - 4096, 4096, cudaMemcpyDeviceToHost));
            ok = h == g;
            printf("%-40s %.4f ms %7.1f GB/s  %.3f x memcpy %s\n", name, ms, gbs(ms), mc / ms, ok ? "" : "MISMATCH");
        };
        long n4 = bytes / 16;
        CK(cudaMemset(dst, 0, bytes));
        report("copy_float4 (lab1)", time_it([&] { copy_float4<<<n4 / (256 * 4), 256>>>((float4 *)dst, (float4 *)src, n4); }));
        for (int bps : {4, 8, 16}) for (int th : {256, 512}) {
            if (bps * th > 2048) continue;
            char nm[64];
            CK(cudaMemset(dst, 0, bytes));
            sprintf(nm, "f4 unroll4 cs %dx%d/SM", bps, th);
            report(nm, time_it([&] { copy_f4_unroll<4><<<sms * bps, th>>>((float4 *)dst, (float4 *)src, n4); }));
        }
        CK(cudaMemset(dst, 0, bytes));
        report("f4 unroll8 cs 8x256", time_it([&] { copy_f4_unroll<8><<<sms * 8, 256>>>((float4 *)dst, (float4 *)src, n4); }));
        auto bulk = [&](auto kern, int stages, int chunk, int bps) {
            int sm = stages * chunk;
            CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, sm));
            CK(cudaMemset(dst, 0, bytes));
            char nm[80]; sprintf(nm, "bulk S%d C%dK %d/SM", stages, chunk / 1024, bps);
            report(nm, time_it([&] { kern<<<sms * bps, 32, sm>>>(dst, src, bytes, chunk); }));
        };
        for (int chunk : {8192, 16384, 32768}) for (int bps : {1, 2, 4}) {
            if (4 * chunk * bps > 220 * 1024) continue;
            bulk(bulk_copy<4>, 4, chunk, bps);
        }
        for (int chunk : {4096, 8192, 16384}) for (int bps : {1, 2, 3}) {
            if (8 * chunk * bps > 220 * 1024) continue;
            bulk(bulk_copy<8>, 8, chunk, bps);
        }
        bulk(bulk_copy<16>, 16, 4096, 2);
        bulk(bulk_copy<16>, 16, 8192, 1);
        bulk(bulk_copy<12>, 12, 16384, 1);
        CK(cudaFree(src)); CK(cudaFree(dst));
    }
    // transpose
    for (int n : {8192, 16384}) {
        long bytes = (long)n * n * 4;
        float *in, *out; CK(cudaMalloc(&in, bytes)); CK(cudaMalloc(&out, bytes));
        std::vector<float> h((size_t)n * n);
        for (size_t i = 0; i < h.size(); ++i) h[i] = (float)(i % 1000003);
        CK(cudaMemcpy(in, h.data(), bytes, cudaMemcpyHostToDevice));
        float mc = time_it([&] { CK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice)); });
        auto gbs = [&](float ms) { return 2.0 * bytes / ms / 1e6; };
        printf("== transpose n=%d: memcpy %.3f ms %.1f GB/s\n", n, mc, gbs(mc));
        auto check = [&]() {
            std::vector<float> o((size_t)n * n);
            CK(cudaMemcpy(o.data(), out, bytes, cudaMemcpyDeviceToHost));
            for (size_t r = 0; r < (size_t)n; r += 7) for (size_t c = 0; c < (size_t)n; c += 5)
                if (o[r * n + c] != h[c * n + r]) return false;
            return true;
        };
        auto report = [&](const char *name, float ms) {
            bool ok = check();
            printf("%-40s %.4f ms %7.1f GB/s  %.3f x memcpy %s\n", name, ms, gbs(ms), mc / ms, ok ? "" : "MISMATCH");
            CK(cudaMemset(out, 0, bytes));
        };
        report("vec4_64", time_it([&] { transpose_vec4_64<<<dim3(n / 64, n / 64), dim3(16, 16)>>>(out, in, n); }));
        for (auto promo : {CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B}) {
            CUtensorMap im = make_map(in, n, promo), om = make_map(out, n, promo);
            auto tma = [&](auto kern, int stages, int tpb, int bps) {
                int sm = (stages + 2) * tpb * 4096 + 1024;
                CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, sm));
                char nm[80]; sprintf(nm, "tma S%d T%d %d/SM promo%d", stages, tpb, bps, (int)promo);
                report(nm, time_it([&] { kern<<<sms * bps, 64 * tpb, sm>>>(im, om, n); }));
            };
            tma(transpose_tma<2, 1>, 2, 1, 8);
            tma(transpose_tma<3, 1>, 3, 1, 8);
            tma(transpose_tma<4, 1>, 4, 1, 8);
            tma(transpose_tma<4, 1>, 4, 1, 12);
            tma(transpose_tma<3, 2>, 3, 2, 4);
            tma(transpose_tma<4, 2>, 4, 2, 4);
            tma(transpose_tma<3, 4>, 3, 4, 2);
            tma(transpose_tma<2, 4>, 2, 4, 3);
            tma(transpose_tma<6, 1>, 6, 1, 6);
        }
        CK(cudaFree(in)); CK(cudaFree(out));
    }
    return 0;
}
