//! The HIP backend (AMD GPUs): hiprtc compiles kernel source to an AMDGPU code object, the HIP
//! runtime (`libamdhip64`) loads, launches and times it.
//!
//! Nothing here links against ROCm. The libraries are opened on first use with `libloading`, the
//! way cudarc opens the CUDA ones, so the book builds, and this module compiles, on machines
//! without ROCm; every entry point ([`probe`], [`HipDevice::open`], [`Hiprtc::load`]) returns
//! [`Unavailable`] when a library or a GPU is missing. A [`HipDevice`] or [`Hiprtc`] only exists
//! once its library was found and every function it calls was resolved, so their methods need no
//! further check.
//!
//! # Why not the `hip-sys` crate
//!
//! `hip-sys` finds ROCm in its build script, which panics on a machine without a ROCm install:
//! depending on it would break the build everywhere else, including every NVIDIA and CPU-only
//! machine. It also binds no hiprtc. The few functions used here are declared by hand (in `ffi`) and
//! were checked against `hip_runtime_api.h`, `driver_types.h` and `hiprtc.h` of ROCm 5.2 and of
//! ROCm 6 (HIP's `include/hip`).
//!
//! # Libraries
//!
//! - The runtime: `libamdhip64.so`, else `libamdhip64.so.7`, `.so.6`, `.so.5` (distributions ship
//!   only the versioned name without the `-dev` package), looked up on the loader's path, then in
//!   `$ROCM_PATH/lib` and `/opt/rocm/lib`.
//! - hiprtc: ROCm 6 and 7 ship it as `libhiprtc.so` (`.so.7`, `.so.6`); ROCm 5.x keeps the
//!   `hiprtc*` functions inside `libamdhip64`, which is used when no `libhiprtc` is found.
//!   Debian's ROCm 5.2 packages `libamdhip64-5` and `libhiprtc-builtins5` are enough to compile for
//!   any AMD target (e.g. gfx90a) on a machine without a GPU.
//!
//! # Device properties
//!
//! Numbers come from `hipDeviceGetAttribute`, whose `hipDeviceAttribute_t` numbering is the same
//! in ROCm 5.x, 6 and 7 (entries that were retired became `hipDeviceAttributeUnusedN` and kept
//! their numbers). The architecture name (`gcnArchName`, e.g. "gfx90a:sramecc+:xnack-") is only
//! in `hipDeviceProp_t`, a large struct whose layout changed in ROCm 6. Both layouts are known
//! exactly, and the runtime exports one function per layout, so the function picks the layout:
//! `hipGetDevicePropertiesR0600` (ROCm 6 and 7, `gcnArchName` at byte 1160 of 1472) where it
//! exists, else `hipGetDeviceProperties` (ROCm 5.x, `hipDeviceProp_tR0000`, `gcnArchName` at byte
//! 396 of 792; ROCm 6 and 7 keep this symbol with this layout for old binaries). The struct is
//! written into a zeroed buffer of 4096 bytes, so even a wrong layout could not write past it,
//! and the name read back must look like an architecture ("gfx…") or the probe fails.
//!
//! # Measuring
//!
//! [`HipDevice`] is [`GpuDevice`](crate::backend::gpu::GpuDevice) over the [`Hip`] primitives,
//! so its tables, host staging, L2 flush and timing are the CUDA backend's. All work is queued on
//! one stream created by [`HipDevice::open`]; kernels are timed with HIP events recorded on it.
//! Pinned staging memory comes from `hipHostMalloc`. `flush_l2` writes a scratch buffer of at
//! least twice the larger of the L2 size and 256 MiB, so that MI300's 256 MiB Infinity Cache
//! (which the L2 attribute does not include) is evicted too. Registers, scratch and LDS come
//! from `hipFuncGetAttribute`, blocks per CU from
//! `hipModuleOccupancyMaxActiveBlocksPerMultiprocessor`. On AMD, `NUM_REGS` counts
//! the vector registers (VGPRs) of one work-item.
//!
//! # Layers
//!
//! As in cudarc: `ffi` declares the C API, `loader` opens the libraries and resolves it,
//! `result` turns a status into a typed error ([`HipError`]) whose [`classify`]d kind tells a
//! sticky fault from a bad request, and `probe`, `compiler`, `device` and `kernels` are the safe
//! layer: no raw handle leaves them, and each is an owning value freed in its `Drop`. `metadata`
//! reads a code object's kernel metadata with the `object` and `rmpv` crates and needs no
//! library at all.

mod compiler;
mod device;
mod ffi;
mod kernels;
mod loader;
mod metadata;
mod probe;
mod result;

pub use compiler::{Hiprtc, hiprtc_options};
pub use device::{Buffer, Hip, HipDevice, Pinned, flush_bytes};
pub use kernels::Function;
pub use loader::{
    HIPRTC_LIBRARY_NAMES, RUNTIME_LIBRARY_NAMES, Unavailable, hiprtc_present, library_candidates,
    runtime_present,
};
pub use metadata::{EM_AMDGPU, KernelMetadata, is_amdgpu_elf, kernel_metadata};
pub use probe::{Probe, format_hip_version, parse_gcn_arch_name, probe, probe_all, probe_gpu};
pub use result::{HipError, classify};
