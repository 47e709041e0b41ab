//! The CUDA backend: NVRTC compiles kernel source to a CUBIN, the driver API (through cudarc,
//! loaded at run time) loads, launches and times it.
//!
//! Nothing here links against CUDA: `libcuda.so.1` and `libnvrtc.so.13` are opened on first use,
//! so the book builds on machines without a GPU. cudarc panics when a library it needs is absent,
//! so every entry point ([`probe`], [`CudaDevice::open`], [`Nvrtc::load`]) checks for the library
//! first and returns [`Unavailable`] instead. A [`CudaDevice`] or [`Nvrtc`] only exists once its
//! library was found, so their methods need no further check.
//!
//! In layers, like cudarc's: [`result`] turns each driver status into a [`DeviceError`] of the
//! right kind (a fault that poisons the context is `Sticky`, a wrong request `Invalid`);
//! `probe` finds the GPU without a context; `device` holds the context, stream and events as
//! owning cudarc types and provides the [`Vendor`](super::gpu::Vendor) primitives, on which
//! [`GpuDevice`](super::gpu::GpuDevice) keeps the buffers, staging, L2 flush and timing; `nvrtc`
//! compiles; `cublas` is the library-transpose peer; `tensor_map` encodes the bulk tensor copy
//! engine's descriptors.
//!
//! [`DeviceError`]: super::DeviceError

mod cublas;
mod device;
mod l2;
mod nvrtc;
pub mod nvrtc_search;
mod probe;
pub mod result;
mod streams;
mod tensor_map;

pub use device::{Cuda, CudaDevice, Function};
pub use nvrtc::{Nvrtc, disable_compute_cache, nvrtc_present};
pub use probe::{Probe, Unavailable, driver_present, probe, probe_all, probe_gpu};
