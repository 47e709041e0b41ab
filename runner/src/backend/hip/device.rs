//! The safe [`HipDevice`]: one AMD GPU with one stream. It owns every handle it creates and
//! releases them on drop. Buffers, host staging, the L2 flush and event timing live here
//! together; loading and launching kernels is in [`super::kernels`].

use super::ffi::*;
use super::kernels::Kernel;
use super::loader::{Runtime, Unavailable, runtime};
use super::probe::probe_ordinal;
use crate::backend::{
    BufferId, CompiledKernel, Device, DeviceError, DeviceErrorKind, KernelId, LoadedKernel, Op,
};
use kernelbook_core::results::DeviceInfo;
use std::ffi::{c_int, c_void};
use std::ptr;

/// Why [`Op::Transpose`] is refused: the vendor peer on AMD would be hipBLAS `geam`, which
/// this backend does not load.
const NO_LIBRARY_TRANSPOSE: &str =
    "the HIP backend has no vendor transpose (hipBLAS geam is not wired up)";

/// The smallest size the flush buffer is computed from: MI300's Infinity Cache is 256 MiB and is
/// not part of the L2 size the runtime reports.
const MIN_FLUSHED_CACHE_BYTES: u64 = 256 << 20;

/// Bytes `flush_l2` writes: twice the larger of the L2 and 256 MiB (MI300's Infinity Cache).
pub fn flush_bytes(l2_bytes: u64) -> u64 {
    l2_bytes.max(MIN_FLUSHED_CACHE_BYTES).saturating_mul(2)
}

#[derive(Debug)]
pub(super) struct Buffer {
    pub(super) ptr: *mut c_void,
    bytes: usize,
}

/// One AMD GPU with one stream; see [`Device`].
#[derive(Debug)]
pub struct HipDevice {
    pub(super) rt: &'static Runtime,
    device: c_int,
    info: DeviceInfo,
    driver_version: String,
    pub(super) stream: HipStream,
    start: HipEvent,
    end: HipEvent,
    buffers: Vec<Buffer>,
    pub(super) kernels: Vec<Kernel>,
    /// The buffer `flush_l2` writes, allocated on first use.
    scratch: Option<Buffer>,
    flush_byte: u8,
    /// Host staging memory for the host ↔ device labs (pageable only on this backend).
    pageable: Vec<u8>,
}

// SAFETY: the raw handles (stream, events, modules, functions, device pointers) are owned by
// this value alone and HIP allows them to be used from any host thread; the one piece of
// per-thread state HIP has, the current device, is set again (`hipSetDevice`) by every method
// that depends on it. `HipDevice` is not `Sync`: calls are never made concurrently.
unsafe impl Send for HipDevice {}

impl HipDevice {
    /// Opens AMD GPU `ordinal`: selects it and creates a stream and two timing events.
    pub fn open(ordinal: usize) -> Result<HipDevice, Unavailable> {
        let rt = runtime()?;
        let (probe, device) = probe_ordinal(rt, ordinal)?;
        let fail = |what: &str, e| Unavailable::Runtime(format!("{what}: {e}"));
        // SAFETY: selects a device index the runtime just reported; no pointers.
        rt.check(unsafe { (rt.set_device)(device) })
            .map_err(|e| fail("the HIP runtime could not select the GPU", e))?;
        // Built first with null handles, so that `Drop` releases whatever was created if a
        // later step fails.
        let mut opened = HipDevice {
            rt,
            device,
            info: probe.info,
            driver_version: probe.driver_version,
            stream: ptr::null_mut(),
            start: ptr::null_mut(),
            end: ptr::null_mut(),
            buffers: Vec::new(),
            kernels: Vec::new(),
            scratch: None,
            flush_byte: 0xa5,
            pageable: Vec::new(),
        };
        // SAFETY: the runtime writes one stream handle through a pointer to a live field.
        rt.check(unsafe { (rt.stream_create)(&mut opened.stream) })
            .map_err(|e| fail("the HIP runtime could not create a stream", e))?;
        // SAFETY: the runtime writes one event handle through each pointer to a live field.
        rt.check(unsafe { (rt.event_create)(&mut opened.start) })
            .map_err(|e| fail("the HIP runtime could not create an event", e))?;
        // SAFETY: as above.
        rt.check(unsafe { (rt.event_create)(&mut opened.end) })
            .map_err(|e| fail("the HIP runtime could not create an event", e))?;
        Ok(opened)
    }

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

    pub(super) fn buffer(
        &self,
        operation: &'static str,
        id: BufferId,
    ) -> Result<&Buffer, DeviceError> {
        self.buffers
            .get(id.0)
            .ok_or_else(|| DeviceError::invalid(operation, format!("no buffer {}", id.0)))
    }

    /// Allocates `bytes` bytes and queues zeroing them.
    fn allocate(&self, operation: &'static str, bytes: usize) -> Result<Buffer, DeviceError> {
        self.select(operation)?;
        let mut ptr: *mut c_void = ptr::null_mut();
        // SAFETY: the runtime writes one device pointer through a pointer to a live local.
        self.check(operation, unsafe { (self.rt.malloc)(&mut ptr, bytes) })?;
        let buffer = Buffer { ptr, bytes };
        if let Err(e) = self.memset(operation, &buffer, 0) {
            // SAFETY: `ptr` came from `hipMalloc` just above and nothing else refers to it.
            let _ = unsafe { (self.rt.free)(ptr) };
            return Err(e);
        }
        Ok(buffer)
    }

    /// Queues a memset of the whole buffer on the stream.
    fn memset(
        &self,
        operation: &'static str,
        buffer: &Buffer,
        byte: u8,
    ) -> Result<(), DeviceError> {
        // SAFETY: `buffer.ptr` is a live allocation of `buffer.bytes` bytes from `hipMalloc`,
        // freed only after a synchronize; the stream is live.
        self.check(operation, unsafe {
            (self.rt.memset_d8_async)(buffer.ptr, byte, buffer.bytes, self.stream)
        })
    }

    /// Queues a copy of `bytes` bytes of `kind` (a `hipMemcpyKind`) on the stream.
    ///
    /// # Safety
    ///
    /// `dst` and `src` must be valid for `bytes` bytes on the sides `kind` names, and stay
    /// valid until the stream has been synchronized.
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
            (self.rt.memcpy_async)(dst, src, bytes, kind, self.stream)
        })
    }

    fn stream_synchronize(&self, operation: &'static str) -> Result<(), DeviceError> {
        // SAFETY: the stream is live until this device is dropped.
        self.check(operation, unsafe {
            (self.rt.stream_synchronize)(self.stream)
        })
    }

    fn copy(&self, dst: BufferId, src: BufferId, bytes: usize) -> Result<(), DeviceError> {
        if dst == src {
            return Err(DeviceError::invalid(
                "copy",
                "source and destination are the same buffer",
            ));
        }
        let source = self.buffer("copy", src)?;
        let destination = self.buffer("copy", dst)?;
        if bytes > source.bytes || bytes > destination.bytes {
            return Err(DeviceError::invalid(
                "copy",
                format!(
                    "{bytes} bytes do not fit: the source has {}, the destination {}",
                    source.bytes, destination.bytes
                ),
            ));
        }
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: both are distinct live device allocations of at least `bytes` bytes (checked
        // above), freed only after a synchronize.
        unsafe {
            self.memcpy(
                "copy",
                destination.ptr,
                source.ptr,
                bytes,
                HIP_MEMCPY_DEVICE_TO_DEVICE,
            )
        }
    }

    /// Page-locked host memory (`hipHostMalloc`) is not wired up on this backend yet.
    fn refuse_pinned(&self, pinned: bool) -> Result<(), DeviceError> {
        if pinned {
            return Err(DeviceError::of_kind(
                DeviceErrorKind::Unavailable,
                "host copy",
                "pinned host memory is not supported by kernelbook's HIP backend yet",
            ));
        }
        Ok(())
    }

    /// Queues a copy of the first `bytes` staged bytes into `dst`.
    fn host_to_device(&self, dst: BufferId, bytes: usize, pinned: bool) -> Result<(), DeviceError> {
        self.refuse_pinned(pinned)?;
        let target = self.buffer("host to device", dst)?;
        let staged = self
            .pageable
            .get(..bytes)
            .filter(|_| bytes <= target.bytes)
            .ok_or_else(|| DeviceError::invalid("host to device", "nothing staged of that size"))?;
        // SAFETY: a live device allocation of at least `bytes` bytes; the source is the staging
        // vector, which is not touched until the stream is synchronised (every later use of it
        // goes through `read_host` or `stage_host`, which synchronise).
        unsafe {
            self.memcpy(
                "host to device",
                target.ptr,
                staged.as_ptr().cast::<c_void>(),
                bytes,
                HIP_MEMCPY_HOST_TO_DEVICE,
            )
        }
    }

    /// Queues a copy of the first `bytes` of `src` into the staging vector.
    fn device_to_host(
        &mut self,
        src: BufferId,
        bytes: usize,
        pinned: bool,
    ) -> Result<(), DeviceError> {
        self.refuse_pinned(pinned)?;
        let source = self.buffer("device to host", src)?;
        let source_ptr = source.ptr;
        if bytes > source.bytes {
            return Err(DeviceError::invalid(
                "device to host",
                "range out of bounds",
            ));
        }
        self.pageable.resize(bytes, 0);
        let staging = self.pageable.as_mut_ptr().cast::<c_void>();
        // SAFETY: as in `host_to_device`, in the other direction.
        unsafe {
            self.memcpy(
                "device to host",
                staging,
                source_ptr,
                bytes,
                HIP_MEMCPY_DEVICE_TO_HOST,
            )
        }
    }

    /// Frees the buffers and unloads the modules; the caller has synchronized the stream.
    fn free_lab_resources(&mut self) {
        let rt = self.rt;
        for buffer in self.buffers.drain(..) {
            // SAFETY: each pointer came from `hipMalloc`, is freed exactly once (drained), and
            // no queued work uses it any more (the caller synchronized).
            let _ = unsafe { (rt.free)(buffer.ptr) };
        }
        for kernel in self.kernels.drain(..) {
            // SAFETY: the module came from `hipModuleLoadData`, is unloaded exactly once, and
            // no queued work uses its functions any more.
            let _ = unsafe { (rt.module_unload)(kernel.module) };
        }
        self.pageable = Vec::new();
    }
}

impl Drop for HipDevice {
    /// Waits for queued work, then releases buffers, modules, events and the stream.
    fn drop(&mut self) {
        let rt = self.rt;
        let _ = self.select("drop");
        if !self.stream.is_null() {
            // SAFETY: the stream is live (created in `open`, destroyed only below).
            let _ = unsafe { (rt.stream_synchronize)(self.stream) };
        }
        self.free_lab_resources();
        if let Some(buffer) = self.scratch.take() {
            // SAFETY: the pointer came from `hipMalloc`, is freed exactly once (taken), and no
            // queued work uses it any more (synchronized above).
            let _ = unsafe { (rt.free)(buffer.ptr) };
        }
        for event in [self.start, self.end] {
            if !event.is_null() {
                // SAFETY: the event came from `hipEventCreate` and is destroyed only here.
                let _ = unsafe { (rt.event_destroy)(event) };
            }
        }
        if !self.stream.is_null() {
            // SAFETY: the stream came from `hipStreamCreate` and is destroyed only here.
            let _ = unsafe { (rt.stream_destroy)(self.stream) };
        }
    }
}

impl Device for HipDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn driver_version(&self) -> String {
        self.driver_version.clone()
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

    fn alloc(&mut self, bytes: usize) -> Result<BufferId, DeviceError> {
        if bytes == 0 {
            return Err(DeviceError::invalid(
                "alloc",
                "cannot allocate an empty buffer",
            ));
        }
        let buffer = self.allocate("alloc", bytes)?;
        self.buffers.push(buffer);
        Ok(BufferId(self.buffers.len() - 1))
    }

    /// Writes `data` to the start of the buffer; returns once the copy is complete.
    fn upload(&mut self, buffer: BufferId, data: &[u8]) -> Result<(), DeviceError> {
        let target = self.buffer("upload", buffer)?;
        if data.len() > target.bytes {
            return Err(DeviceError::invalid(
                "upload",
                format!(
                    "{} bytes do not fit in a {}-byte buffer",
                    data.len(),
                    target.bytes
                ),
            ));
        }
        if data.is_empty() {
            return Ok(());
        }
        // SAFETY: the destination is a live device allocation of at least `data.len()` bytes;
        // the source is `data`, which stays borrowed until the synchronize below has waited
        // for the copy to finish.
        let queued = unsafe {
            self.memcpy(
                "upload",
                target.ptr,
                data.as_ptr().cast::<c_void>(),
                data.len(),
                HIP_MEMCPY_HOST_TO_DEVICE,
            )
        };
        let synchronized = self.stream_synchronize("upload");
        queued.and(synchronized)
    }

    /// Reads the first `out.len()` bytes of the buffer, after all queued work.
    fn download(&mut self, buffer: BufferId, out: &mut [u8]) -> Result<(), DeviceError> {
        let source = self.buffer("download", buffer)?;
        if out.len() > source.bytes {
            return Err(DeviceError::invalid(
                "download",
                format!(
                    "{} bytes asked of a {}-byte buffer",
                    out.len(),
                    source.bytes
                ),
            ));
        }
        let queued = if out.is_empty() {
            Ok(())
        } else {
            // SAFETY: the source is a live device allocation of at least `out.len()` bytes;
            // `out` stays mutably borrowed until the synchronize below has waited for the
            // copy to finish.
            unsafe {
                self.memcpy(
                    "download",
                    out.as_mut_ptr().cast::<c_void>(),
                    source.ptr,
                    out.len(),
                    HIP_MEMCPY_DEVICE_TO_HOST,
                )
            }
        };
        let synchronized = self.stream_synchronize("download");
        queued.and(synchronized)
    }

    fn fill(&mut self, buffer: BufferId, byte: u8) -> Result<(), DeviceError> {
        let target = self.buffer("fill", buffer)?;
        self.memset("fill", target, byte)
    }

    fn load(&mut self, kernel: &CompiledKernel) -> Result<(KernelId, LoadedKernel), DeviceError> {
        self.load_kernel(kernel)
    }

    fn blocks_per_sm(
        &self,
        kernel: KernelId,
        block_threads: u32,
        dynamic_shared_bytes: u32,
    ) -> Result<u32, DeviceError> {
        self.occupancy(kernel, block_threads, dynamic_shared_bytes)
    }

    fn run(&mut self, op: &Op<'_>) -> Result<(), DeviceError> {
        match *op {
            Op::Launch {
                kernel,
                ref shape,
                args,
            } => self.launch(kernel, shape, args),
            Op::Copy { dst, src, bytes } => self.copy(dst, src, bytes),
            Op::Transpose { .. } => Err(DeviceError::of_kind(
                DeviceErrorKind::Unavailable,
                "transpose",
                NO_LIBRARY_TRANSPOSE,
            )),
            Op::HostToDevice { dst, bytes, pinned } => self.host_to_device(dst, bytes, pinned),
            Op::DeviceToHost { src, bytes, pinned } => self.device_to_host(src, bytes, pinned),
            Op::Sequence(ops) => ops.iter().try_for_each(|op| self.run(op)),
        }
    }

    fn stage_host(&mut self, pinned: bool, data: &[u8]) -> Result<(), DeviceError> {
        self.refuse_pinned(pinned)?;
        self.stream_synchronize("stage")?;
        self.pageable.clear();
        self.pageable.extend_from_slice(data);
        Ok(())
    }

    fn read_host(&mut self, pinned: bool, out: &mut [u8]) -> Result<(), DeviceError> {
        self.refuse_pinned(pinned)?;
        self.stream_synchronize("read host")?;
        let staged = self
            .pageable
            .get(..out.len())
            .ok_or_else(|| DeviceError::invalid("read host", "the staging buffer is too small"))?;
        out.copy_from_slice(staged);
        Ok(())
    }

    fn transpose_library(&mut self) -> Result<String, DeviceError> {
        Err(DeviceError::of_kind(
            DeviceErrorKind::Unavailable,
            "library transpose",
            NO_LIBRARY_TRANSPOSE,
        ))
    }

    fn time(&mut self, op: &Op<'_>) -> Result<f64, DeviceError> {
        // SAFETY: the event and the stream are live until this device is dropped.
        self.check("time", unsafe {
            (self.rt.event_record)(self.start, self.stream)
        })?;
        self.run(op)?;
        // SAFETY: as above.
        self.check("time", unsafe {
            (self.rt.event_record)(self.end, self.stream)
        })?;
        // SAFETY: the event is live.
        self.check("time", unsafe { (self.rt.event_synchronize)(self.end) })?;
        let mut ms: f32 = 0.0;
        // SAFETY: both events are live and recorded; the runtime writes one float to a local.
        self.check("time", unsafe {
            (self.rt.event_elapsed_time)(&mut ms, self.start, self.end)
        })?;
        Ok(f64::from(ms))
    }

    fn flush_l2(&mut self) -> Result<(), DeviceError> {
        if self.scratch.is_none() {
            let bytes = flush_bytes(self.info.l2_bytes);
            let bytes = usize::try_from(bytes).map_err(|_| {
                DeviceError::invalid("flush L2", format!("{bytes} bytes is too large"))
            })?;
            self.scratch = Some(self.allocate("flush L2", bytes)?);
        }
        // A different value each time, so no write could be skipped as a no-op.
        self.flush_byte = !self.flush_byte;
        match &self.scratch {
            Some(scratch) => self.memset("flush L2", scratch, self.flush_byte),
            None => Err(DeviceError::new("flush L2", "no scratch buffer")),
        }
    }

    fn synchronize(&mut self) -> Result<(), DeviceError> {
        self.stream_synchronize("synchronize")
    }

    fn release_lab(&mut self) -> Result<(), DeviceError> {
        self.stream_synchronize("release")?;
        self.free_lab_resources();
        Ok(())
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
}
