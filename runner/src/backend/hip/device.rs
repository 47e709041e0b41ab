//! The safe layer: one AMD GPU's stream and two timing events as owning types, providing the
//! [`Vendor`] primitives that [`GpuDevice`] builds the [`Device`](crate::backend::Device) on.
//! Loading and launching kernels is in [`super::kernels`].
//!
//! HIP's one piece of per-thread state, the current device, is set (`hipSetDevice`) by every
//! primitive that depends on it: allocation, memory info, loading, occupancy and the final
//! synchronize before the device is dropped. Work on the stream needs no current device.

use super::ffi::*;
use super::kernels::Function;
use super::loader::{Runtime, Unavailable, runtime};
use super::probe::probe_ordinal;
use super::result::HipError;
use crate::backend::gpu::{
    DeviceMemory, GpuDevice, HostMemory, Kernel, LaunchArg, TimingEvent, Vendor,
};
use crate::backend::{CompiledKernel, DeviceError, DeviceErrorKind, LoadedKernel};
use kernelbook_core::results::LaunchShape;
use std::ffi::{c_int, c_void};
use std::ptr;
use std::sync::Arc;

/// Why [`crate::backend::Op::Transpose`] is refused: the vendor peer on AMD would be hipBLAS
/// `geam`, which this backend does not load.
const NO_LIBRARY_TRANSPOSE: &str =
    "the HIP backend has no vendor transpose (hipBLAS geam is not wired up)";

/// The smallest size the flush buffer is computed from: MI300's Infinity Cache is 256 MiB and is
/// not part of the L2 size the runtime reports.
const MIN_FLUSHED_CACHE_BYTES: u64 = 256 << 20;

/// Bytes `flush_l2` writes: twice the larger of the L2 and 256 MiB (MI300's Infinity Cache).
pub fn flush_bytes(l2_bytes: u64) -> u64 {
    l2_bytes.max(MIN_FLUSHED_CACHE_BYTES).saturating_mul(2)
}

/// One AMD GPU with one stream; see [`Device`](crate::backend::Device).
pub type HipDevice = GpuDevice<Hip>;

/// The HIP primitives: the device index, its one stream and the timing events.
#[derive(Debug)]
pub struct Hip {
    /// Declared before the stream, so that they are destroyed first.
    start: Event,
    end: Event,
    pub(super) stream: Arc<Stream>,
    pub(super) rt: &'static Runtime,
    device: c_int,
}

/// A stream, destroyed when dropped. Shared with pinned memory, which waits on it.
#[derive(Debug)]
pub(super) struct Stream {
    rt: &'static Runtime,
    pub(super) handle: HipStream,
}

// SAFETY: the handle is owned by this value alone and HIP allows a stream to be used from any
// host thread, concurrently too (the runtime locks its queues).
unsafe impl Send for Stream {}
// SAFETY: as above; the only operation through `&Stream` is `hipStreamSynchronize`.
unsafe impl Sync for Stream {}

impl Stream {
    fn create(rt: &'static Runtime) -> Result<Stream, HipError> {
        let mut handle: HipStream = ptr::null_mut();
        // SAFETY: the runtime writes one stream handle through a pointer to a live local.
        rt.check(unsafe { (rt.stream_create)(&mut handle) })?;
        Ok(Stream { rt, handle })
    }

    fn synchronize(&self, operation: &'static str) -> Result<(), DeviceError> {
        // SAFETY: the stream is live until this value is dropped.
        let status = unsafe { (self.rt.stream_synchronize)(self.handle) };
        self.rt.check(status).map_err(|e| e.during(operation))
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: the stream came from `hipStreamCreate` and is destroyed only here; everything
        // queued on it was made and waited for by its owners, which are dropped before it.
        let _ = unsafe { (self.rt.stream_destroy)(self.handle) };
    }
}

/// A timing event, destroyed when dropped.
#[derive(Debug)]
struct Event {
    rt: &'static Runtime,
    handle: HipEvent,
}

// SAFETY: the handle is owned by this value alone and HIP allows events to be used from any
// host thread.
unsafe impl Send for Event {}

impl Event {
    fn create(rt: &'static Runtime) -> Result<Event, HipError> {
        let mut handle: HipEvent = ptr::null_mut();
        // SAFETY: the runtime writes one event handle through a pointer to a live local.
        rt.check(unsafe { (rt.event_create)(&mut handle) })?;
        Ok(Event { rt, handle })
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: the event came from `hipEventCreate` and is destroyed only here.
        let _ = unsafe { (self.rt.event_destroy)(self.handle) };
    }
}

/// Device memory from `hipMalloc`, freed when dropped.
#[derive(Debug)]
pub struct Buffer {
    rt: &'static Runtime,
    pub(super) ptr: *mut c_void,
    bytes: usize,
}

// SAFETY: the allocation is owned by this value alone and HIP allows device memory to be used
// and freed from any host thread.
unsafe impl Send for Buffer {}

impl DeviceMemory for Buffer {
    fn len(&self) -> usize {
        self.bytes
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: the pointer came from `hipMalloc` and is freed exactly once, here. No queued
        // work uses it any more: `GpuDevice` drops buffers only after a synchronize, and a
        // buffer whose zeroing failed to queue was never used.
        let _ = unsafe { (self.rt.free)(self.ptr) };
    }
}

/// Page-locked host memory from `hipHostMalloc`, freed when dropped. Copies to and from it are
/// truly asynchronous, so reaching its bytes waits for the stream.
#[derive(Debug)]
pub struct Pinned {
    free: FnFree,
    /// Null for an empty allocation, which asks nothing of the runtime.
    ptr: *mut u8,
    bytes: usize,
    stream: Arc<Stream>,
}

// SAFETY: the allocation is owned by this value alone and HIP allows pinned memory to be used
// and freed from any host thread; the stream is `Send + Sync`.
unsafe impl Send for Pinned {}

impl HostMemory for Pinned {
    fn len(&self) -> usize {
        self.bytes
    }

    fn bytes(&self, operation: &'static str) -> Result<&[u8], DeviceError> {
        if self.ptr.is_null() {
            return Ok(&[]);
        }
        // Every copy into this memory was queued on this stream.
        self.stream.synchronize(operation)?;
        // SAFETY: `ptr` is a live allocation of `bytes` bytes, and no copy writes it any more
        // (synchronized just above; a new one needs `&mut self`, which this borrow excludes).
        Ok(unsafe { std::slice::from_raw_parts(self.ptr, self.bytes) })
    }

    fn bytes_mut(&mut self, operation: &'static str) -> Result<&mut [u8], DeviceError> {
        if self.ptr.is_null() {
            return Ok(&mut []);
        }
        self.stream.synchronize(operation)?;
        // SAFETY: as in `bytes`; no queued copy reads or writes it, and `&mut self` is unique.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr, self.bytes) })
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        if self.ptr.is_null() {
            return;
        }
        // `GpuDevice` replaces its staging memory without synchronizing: wait for any copy.
        let _ = self.stream.synchronize("free pinned memory");
        // SAFETY: the pointer came from `hipHostMalloc` and is freed exactly once, here; no
        // queued copy uses it any more (synchronized just above).
        let _ = unsafe { (self.free)(self.ptr.cast::<c_void>()) };
    }
}

impl GpuDevice<Hip> {
    /// Opens AMD GPU `ordinal`: selects it and creates a stream and two timing events.
    pub fn open(ordinal: usize) -> Result<HipDevice, Unavailable> {
        let rt = runtime()?;
        let (probe, device) = probe_ordinal(rt, ordinal)?;
        let fail = |what: &str, e| Unavailable::Runtime(format!("{what}: {e}"));
        // SAFETY: selects a device index the runtime just reported; no pointers.
        rt.check(unsafe { (rt.set_device)(device) })
            .map_err(|e| fail("the HIP runtime could not select the GPU", e))?;
        // Whatever was created before a failure is released by its own `Drop`.
        let stream =
            Stream::create(rt).map_err(|e| fail("the HIP runtime could not create a stream", e))?;
        let event =
            || Event::create(rt).map_err(|e| fail("the HIP runtime could not create an event", e));
        let start = event()?;
        let end = event()?;
        let hip = Hip {
            start,
            end,
            stream: Arc::new(stream),
            rt,
            device,
        };
        Ok(GpuDevice::new(hip, probe.info, probe.driver_version))
    }
}

impl Hip {
    /// A HIP status as this device reports it: the operation, the runtime's text and its kind.
    pub(super) fn check(
        &self,
        operation: &'static str,
        status: HipStatus,
    ) -> Result<(), DeviceError> {
        self.rt.check(status).map_err(|e| e.during(operation))
    }

    /// Makes this GPU the calling thread's current device (HIP's one per-thread state).
    pub(super) fn select(&self, operation: &'static str) -> Result<(), DeviceError> {
        // SAFETY: selects the device index this value was opened on; no pointers.
        self.check(operation, unsafe { (self.rt.set_device)(self.device) })
    }

    /// Queues a copy of `bytes` bytes of `kind` (a `hipMemcpyKind`) on the stream.
    ///
    /// # Safety
    ///
    /// `dst` and `src` must be valid for `bytes` bytes on the sides `kind` names, and stay
    /// valid until the copy is complete.
    unsafe fn memcpy(
        &self,
        operation: &'static str,
        dst: *mut c_void,
        src: *const c_void,
        bytes: usize,
        kind: c_int,
    ) -> Result<(), DeviceError> {
        // SAFETY: the caller guarantees both ranges; the stream is live.
        self.check(operation, unsafe {
            (self.rt.memcpy_async)(dst, src, bytes, kind, self.stream.handle)
        })
    }
}

/// `Err` unless `bytes` fit in a buffer of `len` bytes.
fn within(operation: &'static str, bytes: usize, len: usize) -> Result<(), DeviceError> {
    if bytes > len {
        return Err(DeviceError::invalid(operation, "range out of bounds"));
    }
    Ok(())
}

impl Vendor for Hip {
    type Buffer = Buffer;
    type Function = Function;
    type Pinned = Pinned;

    fn address(&self, buffer: &Buffer) -> u64 {
        buffer.ptr as usize as u64
    }

    fn memory(&self) -> Result<(u64, u64), DeviceError> {
        self.select("memory info")?;
        let mut free = 0usize;
        let mut total = 0usize;
        // SAFETY: the runtime writes one `size_t` through each pointer, both to live locals.
        self.check("memory info", unsafe {
            (self.rt.mem_get_info)(&mut free, &mut total)
        })?;
        Ok((free as u64, total as u64))
    }

    fn alloc_zeroed(&self, operation: &'static str, bytes: usize) -> Result<Buffer, DeviceError> {
        self.select(operation)?;
        let mut ptr: *mut c_void = ptr::null_mut();
        // SAFETY: the runtime writes one device pointer through a pointer to a live local.
        self.check(operation, unsafe { (self.rt.malloc)(&mut ptr, bytes) })?;
        let mut buffer = Buffer {
            rt: self.rt,
            ptr,
            bytes,
        };
        // On failure, dropping `buffer` frees it again.
        self.memset(operation, &mut buffer, 0)?;
        Ok(buffer)
    }

    fn memset(
        &self,
        operation: &'static str,
        buffer: &mut Buffer,
        byte: u8,
    ) -> Result<(), DeviceError> {
        // SAFETY: `buffer.ptr` is a live allocation of `buffer.bytes` bytes from `hipMalloc`,
        // freed only after a synchronize; the stream is live.
        self.check(operation, unsafe {
            (self.rt.memset_d8_async)(buffer.ptr, byte, buffer.bytes, self.stream.handle)
        })
    }

    /// Synchronizes after queueing. HIP documents copies from unpinned memory as synchronous,
    /// but ROCm 6's runtime skips that wait under direct dispatch and leaves it to its copy
    /// layers, which may pin the caller's pages and release them after the DMA rather than wait
    /// for it; the contract (`src` read before returning) is kept here, not left to them.
    fn copy_from_host(
        &self,
        operation: &'static str,
        dst: &mut Buffer,
        src: &[u8],
    ) -> Result<(), DeviceError> {
        within(operation, src.len(), dst.bytes)?;
        // SAFETY: the destination is a live device allocation of at least `src.len()` bytes;
        // `src` stays borrowed until the synchronize below has waited for the copy, which also
        // runs when queueing failed, so nothing can read `src` after this returns.
        let queued = unsafe {
            self.memcpy(
                operation,
                dst.ptr,
                src.as_ptr().cast::<c_void>(),
                src.len(),
                HIP_MEMCPY_HOST_TO_DEVICE,
            )
        };
        let synchronized = self.synchronize(operation);
        queued.and(synchronized)
    }

    /// HIP performs a copy into unpinned memory synchronously (its `hipMemcpyAsync` notes: the
    /// runtime cannot know that the memory outlives an asynchronous copy), so `dst` is written
    /// when this returns.
    fn copy_to_host(
        &self,
        operation: &'static str,
        dst: &mut [u8],
        src: &Buffer,
    ) -> Result<(), DeviceError> {
        within(operation, dst.len(), src.bytes)?;
        // SAFETY: the source is a live device allocation of at least `dst.len()` bytes; `dst`
        // is valid for that many bytes and the runtime finishes the copy before returning.
        unsafe {
            self.memcpy(
                operation,
                dst.as_mut_ptr().cast::<c_void>(),
                src.ptr,
                dst.len(),
                HIP_MEMCPY_DEVICE_TO_HOST,
            )
        }
    }

    fn copy_from_pinned(
        &self,
        operation: &'static str,
        dst: &mut Buffer,
        src: &Pinned,
    ) -> Result<(), DeviceError> {
        within(operation, src.bytes, dst.bytes)?;
        if src.ptr.is_null() {
            return Ok(());
        }
        // SAFETY: both are live allocations of at least `src.bytes` bytes. `GpuDevice` keeps
        // the pinned memory until a synchronize, and its `Drop` (and any access to its bytes)
        // waits for the stream first.
        unsafe {
            self.memcpy(
                operation,
                dst.ptr,
                src.ptr.cast::<c_void>(),
                src.bytes,
                HIP_MEMCPY_HOST_TO_DEVICE,
            )
        }
    }

    fn copy_to_pinned(
        &self,
        operation: &'static str,
        dst: &mut Pinned,
        src: &Buffer,
    ) -> Result<(), DeviceError> {
        within(operation, dst.bytes, src.bytes)?;
        if dst.ptr.is_null() {
            return Ok(());
        }
        // SAFETY: as in `copy_from_pinned`, in the other direction.
        unsafe {
            self.memcpy(
                operation,
                dst.ptr.cast::<c_void>(),
                src.ptr,
                dst.bytes,
                HIP_MEMCPY_DEVICE_TO_HOST,
            )
        }
    }

    fn copy_device(
        &self,
        operation: &'static str,
        dst: &mut Buffer,
        src: &Buffer,
        bytes: usize,
    ) -> Result<(), DeviceError> {
        within(operation, bytes, src.bytes.min(dst.bytes))?;
        // SAFETY: two distinct live device allocations (one borrowed mutably) of at least
        // `bytes` bytes, freed only after a synchronize.
        unsafe {
            self.memcpy(
                operation,
                dst.ptr,
                src.ptr,
                bytes,
                HIP_MEMCPY_DEVICE_TO_DEVICE,
            )
        }
    }

    fn alloc_pinned(&self, operation: &'static str, bytes: usize) -> Result<Pinned, DeviceError> {
        let Some((host_malloc, free)) = self.rt.host_memory else {
            return Err(DeviceError::of_kind(
                DeviceErrorKind::Unavailable,
                operation,
                format!("{} has no hipHostMalloc", self.rt.file),
            ));
        };
        let mut ptr: *mut c_void = ptr::null_mut();
        if bytes > 0 {
            self.select(operation)?;
            // SAFETY: the runtime writes one host pointer through a pointer to a live local.
            self.check(operation, unsafe {
                host_malloc(&mut ptr, bytes, HIP_HOST_MALLOC_DEFAULT)
            })?;
            if ptr.is_null() {
                return Err(DeviceError::new(operation, "hipHostMalloc returned null"));
            }
        }
        Ok(Pinned {
            free,
            ptr: ptr.cast::<u8>(),
            bytes,
            stream: Arc::clone(&self.stream),
        })
    }

    fn load(
        &self,
        kernel: &CompiledKernel,
    ) -> Result<(Kernel<Function>, LoadedKernel), DeviceError> {
        self.load_kernel(kernel)
    }

    fn blocks_per_sm(
        &self,
        kernel: &Kernel<Function>,
        block_threads: u32,
        dynamic_shared_bytes: u32,
    ) -> Result<u32, DeviceError> {
        self.occupancy(kernel, block_threads, dynamic_shared_bytes)
    }

    fn launch(
        &self,
        kernel: &Kernel<Function>,
        shape: &LaunchShape,
        args: &[LaunchArg<'_, Buffer>],
    ) -> Result<(), DeviceError> {
        self.launch_kernel(kernel, shape, args)
    }

    fn record(&self, event: TimingEvent) -> Result<(), DeviceError> {
        let event = match event {
            TimingEvent::Start => &self.start,
            TimingEvent::End => &self.end,
        };
        // SAFETY: the event and the stream are live until this value is dropped.
        self.check("time", unsafe {
            (self.rt.event_record)(event.handle, self.stream.handle)
        })
    }

    fn elapsed_ms(&self) -> Result<f32, DeviceError> {
        // SAFETY: the event is live.
        self.check("time", unsafe {
            (self.rt.event_synchronize)(self.end.handle)
        })?;
        let mut ms: f32 = 0.0;
        // SAFETY: both events are live and recorded; the runtime writes one float to a local.
        self.check("time", unsafe {
            (self.rt.event_elapsed_time)(&mut ms, self.start.handle, self.end.handle)
        })?;
        Ok(ms)
    }

    fn synchronize(&self, operation: &'static str) -> Result<(), DeviceError> {
        self.stream.synchronize(operation)
    }

    /// Selects the device first: the device may be dropped on another thread than it was used.
    fn synchronize_before_drop(&self) {
        let _ = self.select("drop");
        let _ = self.synchronize("drop");
    }

    fn flush_bytes(&self, l2_bytes: u64) -> u64 {
        flush_bytes(l2_bytes)
    }

    fn transpose_library(&mut self) -> Result<String, DeviceError> {
        Err(DeviceError::of_kind(
            DeviceErrorKind::Unavailable,
            "library transpose",
            NO_LIBRARY_TRANSPOSE,
        ))
    }

    fn transpose(
        &mut self,
        _: &mut Buffer,
        _: &Buffer,
        _: usize,
        _: usize,
    ) -> Result<(), DeviceError> {
        Err(DeviceError::of_kind(
            DeviceErrorKind::Unavailable,
            "transpose",
            NO_LIBRARY_TRANSPOSE,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flush_covers_l2_and_infinity_cache() {
        // MI210: 8 MiB L2 → 512 MiB (twice the 256 MiB floor).
        assert_eq!(flush_bytes(8 << 20), 512 << 20);
        // MI300X: 4 MiB L2 per XCD plus 256 MiB Infinity Cache → 512 MiB.
        assert_eq!(flush_bytes(4 << 20), 512 << 20);
        assert_eq!(flush_bytes(1 << 30), 2 << 30);
        assert_eq!(flush_bytes(u64::MAX), u64::MAX);
    }

    #[test]
    fn handles_can_move_between_threads() {
        fn send<T: Send>() {}
        send::<HipDevice>();
    }
}
