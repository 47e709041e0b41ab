// kernels/portability.h: lets a kernel written once compile under NVRTC (NVIDIA) and hiprtc
// (AMD), and with nvcc or hipcc. No kernel of the book includes it yet: every current kernel uses
// only what both compilers provide (`extern "C" __global__`, threadIdx/blockIdx/blockDim/gridDim,
// __syncthreads, __shared__, __restrict__, float4) and compiles for gfx90a through hiprtc as is.
//
// What differs between the two, and what this header does about it:
//
// - Warp vs wavefront. An NVIDIA warp is 32 threads. An AMD CDNA wavefront (MI100, MI200,
//   MI300: gfx908, gfx90a, gfx942) is 64, so a kernel that assumes 32 (lane = threadIdx.x % 32,
//   a 32-bit ballot, a reduction that stops at offset 16) is wrong there. WARP_SIZE is 32 under
//   CUDA and 64 under HIP on AMD. RDNA GPUs (gfx10, gfx11, gfx12) run 32-wide waves by default:
//   build for them with -DWARP_SIZE=32, or use the built-in `warpSize`, which is right on both
//   but is not a compile-time constant everywhere.
// - Warp shuffles and votes. CUDA has only the `_sync` forms with a 32-bit lane mask
//   (__shfl_sync, __shfl_down_sync, __shfl_xor_sync, __ballot_sync, __syncwarp). HIP before 6.2
//   has only the unmasked forms (__shfl, __shfl_down, __shfl_xor, __ballot returning 64 bits) and
//   no __syncwarp; hiprtc of ROCm 5.2 rejects __shfl_down_sync and __syncwarp. The kb_shfl*,
//   kb_ballot and kb_syncwarp macros below are the whole-warp forms on both sides; a lane mask
//   of type kb_lanemask_t (32 bits on CUDA, 64 on AMD) holds a ballot.
// - Shared memory (LDS) banks. CDNA's LDS has 32 banks of 4 bytes, like an NVIDIA SM, but a
//   64-wide wavefront's 4-byte accesses are served per half-wavefront (32 lanes at a time), so
//   conflicts are counted among 32 lanes and the book's [TILE][TILE + 1] padding still removes
//   them. Wider (8- and 16-byte) accesses are split differently on each side.
// - __launch_bounds__(MAX_THREADS, SECOND): the first argument means the same on both (the
//   largest block the kernel will be launched with). The second does not: minimum resident
//   blocks per SM on CUDA, minimum waves per execution unit (SIMD) on HIP. KB_LAUNCH_BOUNDS
//   passes only the first.
// - Headers. NVRTC has every built-in without an include. hiprtc pre-includes HIP's device
//   runtime and, in ROCm 5, has no hip/hip_runtime.h to include (the include fails); hipcc and
//   clang need it. It is included only for those.

#ifndef KERNELBOOK_PORTABILITY_H
#define KERNELBOOK_PORTABILITY_H

#if (defined(__HIPCC__) || defined(__HIP__)) && !defined(__HIPCC_RTC__)
#include <hip/hip_runtime.h>
#endif

// AMD: hipcc/clang define __HIP_PLATFORM_AMD__ (older ROCm: __HIP_PLATFORM_HCC__); hiprtc
// defines __HIPCC_RTC__ and, in device code, __AMDGCN__, but not __HIP_PLATFORM_AMD__.
#if defined(__HIP_PLATFORM_AMD__) || defined(__HIP_PLATFORM_HCC__) || defined(__AMDGCN__) || \
    (defined(__HIPCC_RTC__) && !defined(__HIP_PLATFORM_NVIDIA__))
#define KB_AMD 1
#else
#define KB_AMD 0
#endif

#if KB_AMD

#ifndef WARP_SIZE
#define WARP_SIZE 64
#endif
typedef unsigned long long kb_lanemask_t;
#define KB_FULL_MASK 0xffffffffffffffffull
#define kb_shfl(value, src_lane) __shfl((value), (src_lane))
#define kb_shfl_down(value, delta) __shfl_down((value), (delta))
#define kb_shfl_up(value, delta) __shfl_up((value), (delta))
#define kb_shfl_xor(value, lane_mask) __shfl_xor((value), (lane_mask))
#define kb_ballot(predicate) ((kb_lanemask_t)__ballot(predicate))
// The lanes of a wavefront execute together; this only keeps the compiler from moving memory
// operations across it, which is what __syncwarp guarantees for a converged warp.
#define kb_syncwarp() __builtin_amdgcn_wave_barrier()

#else  // CUDA (NVRTC, nvcc), or HIP on NVIDIA, which maps to CUDA

#ifndef WARP_SIZE
#define WARP_SIZE 32
#endif
typedef unsigned int kb_lanemask_t;
#define KB_FULL_MASK 0xffffffffu
#define kb_shfl(value, src_lane) __shfl_sync(KB_FULL_MASK, (value), (src_lane))
#define kb_shfl_down(value, delta) __shfl_down_sync(KB_FULL_MASK, (value), (delta))
#define kb_shfl_up(value, delta) __shfl_up_sync(KB_FULL_MASK, (value), (delta))
#define kb_shfl_xor(value, lane_mask) __shfl_xor_sync(KB_FULL_MASK, (value), (lane_mask))
#define kb_ballot(predicate) ((kb_lanemask_t)__ballot_sync(KB_FULL_MASK, (predicate)))
#define kb_syncwarp() __syncwarp()

#endif

#define KB_LAUNCH_BOUNDS(max_threads) __launch_bounds__(max_threads)

#endif  // KERNELBOOK_PORTABILITY_H
