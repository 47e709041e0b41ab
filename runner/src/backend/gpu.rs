//! What every GPU backend repeats, written once: the tables of buffers and kernels behind
//! [`BufferId`]/[`KernelId`], the host staging buffers, the L2 flush and event timing around an
//! [`Op`], and `release_lab`.
//!
//! A vendor provides the primitives ([`Vendor`]): allocate and fill device memory, copy on the
//! stream, page-locked host memory, load and launch a kernel, record two timing events and read
//! the time between them, synchronize. [`GpuDevice`] implements [`Device`] on top of them, so the
//! checks, messages and the order of operations for each [`Op`] are the same on every vendor.
//! No raw handle and no `unsafe` is needed here: a vendor's memory and functions are owning
//! values (freed when dropped), and every primitive is a safe method whose contract the vendor
//! upholds.
//!
//! # How a backend adopts it
//!
//! 1. Give the vendor's owning types: [`Vendor::Buffer`] (device memory, implementing
//!    [`DeviceMemory`]), [`Vendor::Function`] (a loaded entry point together with whatever keeps
//!    its module loaded) and [`Vendor::Pinned`] (page-locked host memory, [`HostMemory`]; a
//!    backend without it uses an empty enum and refuses in [`Vendor::alloc_pinned`]). Each frees
//!    what it holds in `Drop`; [`GpuDevice`] only drops them after synchronizing the stream.
//! 2. Put the context, stream and the two timing events in a struct implementing [`Vendor`].
//!    Each primitive takes the name of the [`Device`] operation it serves (`"upload"`,
//!    `"flush L2"`, ...) for its [`DeviceError`], whose kind the vendor's classifier decides.
//! 3. Open it, then `GpuDevice::new(vendor, info, driver_version)`; the backend's device type is
//!    an alias (`pub type CudaDevice = GpuDevice<Cuda>;`).
//!
//! Both backends have adopted it: `cuda/device.rs` (`Cuda`) and `hip/device.rs` (`Hip`, whose
//! `check_shape` stays inside its [`Vendor::launch`] and whose metadata argument sizes go in
//! [`Kernel::param_sizes`]).

use super::{
    BufferId, CompiledKernel, Device, DeviceError, DeviceErrorKind, GemmPrecision, KernelArg,
    KernelId, LoadedKernel, Op, TensorMapBytes, TensorMapId, TensorMapRequest,
};
use kernelbook_core::results::{Clocks, DeviceInfo, LaunchShape};

/// Device memory owned by a vendor value; freed when dropped.
pub trait DeviceMemory {
    /// Size in bytes.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Page-locked host memory the device copies to and from asynchronously. Access waits for any
/// copy still using it, which is why it can fail.
pub trait HostMemory {
    /// Size in bytes.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The bytes, once no queued copy writes them.
    fn bytes(&self, operation: &'static str) -> Result<&[u8], DeviceError>;
    /// The bytes, once no queued copy reads or writes them.
    fn bytes_mut(&mut self, operation: &'static str) -> Result<&mut [u8], DeviceError>;
}

/// A kernel loaded by a vendor, with what the generic layer checks before a launch.
#[derive(Debug)]
pub struct Kernel<F> {
    /// The entry point's name, for messages.
    pub name: String,
    /// Byte size of each parameter, where the backend can tell; `None` skips the argument check.
    pub param_sizes: Option<Vec<usize>>,
    pub function: F,
}

/// A kernel argument with its buffer resolved, ready for the vendor's launch.
#[derive(Debug, Clone, Copy)]
pub enum LaunchArg<'a, B> {
    Buffer(&'a B),
    TensorMap(&'a TensorMapBytes),
    I32(i32),
    I64(i64),
    U32(u32),
    U64(u64),
    F32(f32),
    F64(f64),
}

/// The two events [`GpuDevice`] records around a timed [`Op`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimingEvent {
    Start,
    End,
}

/// The primitives a vendor's GPU API provides, on one device and one in-order stream. Every
/// method either queues work on that stream or says in its contract that it waits. A vendor
/// whose API has per-thread state (HIP's current device) sets it in each method that needs it.
/// How a backend adopts this trait: see the [module documentation](self).
pub trait Vendor {
    type Buffer: DeviceMemory;
    type Function;
    type Pinned: HostMemory;

    /// Free and total device memory in bytes.
    fn memory(&self) -> Result<(u64, u64), DeviceError>;
    /// `bytes` (more than zero) of device memory, zeroed on the stream.
    fn alloc_zeroed(
        &self,
        operation: &'static str,
        bytes: usize,
    ) -> Result<Self::Buffer, DeviceError>;
    /// Queues setting every byte of `buffer` to `byte`.
    fn memset(
        &self,
        operation: &'static str,
        buffer: &mut Self::Buffer,
        byte: u8,
    ) -> Result<(), DeviceError>;
    /// Copies `src` (ordinary pageable memory) into the start of `dst`, in stream order. Must
    /// not return before `src` has been read: the caller may change or free it right after.
    /// CUDA's driver guarantees this for pageable memory; a runtime that does not promise it
    /// synchronizes before returning (HIP does: see `Hip::copy_from_host`).
    fn copy_from_host(
        &self,
        operation: &'static str,
        dst: &mut Self::Buffer,
        src: &[u8],
    ) -> Result<(), DeviceError>;
    /// Copies the first `dst.len()` bytes of `src` into `dst` (pageable), in stream order. Must
    /// not return before `dst` has been written.
    fn copy_to_host(
        &self,
        operation: &'static str,
        dst: &mut [u8],
        src: &Self::Buffer,
    ) -> Result<(), DeviceError>;
    /// Queues a copy of all of `src` into the start of `dst`.
    fn copy_from_pinned(
        &self,
        operation: &'static str,
        dst: &mut Self::Buffer,
        src: &Self::Pinned,
    ) -> Result<(), DeviceError>;
    /// Queues a copy of the first `dst.len()` bytes of `src` into `dst`.
    fn copy_to_pinned(
        &self,
        operation: &'static str,
        dst: &mut Self::Pinned,
        src: &Self::Buffer,
    ) -> Result<(), DeviceError>;
    /// Queues a copy of the first `bytes` of `src` into `dst` (two distinct buffers).
    fn copy_device(
        &self,
        operation: &'static str,
        dst: &mut Self::Buffer,
        src: &Self::Buffer,
        bytes: usize,
    ) -> Result<(), DeviceError>;
    /// `bytes` of page-locked host memory, contents unspecified.
    fn alloc_pinned(
        &self,
        operation: &'static str,
        bytes: usize,
    ) -> Result<Self::Pinned, DeviceError>;
    /// Loads the image's entry point `kernel.name`.
    fn load(
        &self,
        kernel: &CompiledKernel,
    ) -> Result<(Kernel<Self::Function>, LoadedKernel), DeviceError>;
    /// Encodes a tensor map over `buffer` (see [`Device::tensor_map`]); none by default.
    /// The device address of `buffer`'s first byte, as a sanitizer's report names addresses.
    fn address(&self, buffer: &Self::Buffer) -> u64;
    fn encode_tensor_map(
        &self,
        buffer: &Self::Buffer,
        request: &TensorMapRequest<'_>,
    ) -> Result<TensorMapBytes, DeviceError> {
        let _ = (buffer, request);
        Err(DeviceError::of_kind(
            DeviceErrorKind::Unavailable,
            "tensor map",
            "this GPU API has no tensor maps (the bulk tensor copy engine is NVIDIA's, from \
             compute capability 9.0)",
        ))
    }
    /// Resident blocks per SM at this block size and dynamic shared memory.
    fn blocks_per_sm(
        &self,
        kernel: &Kernel<Self::Function>,
        block_threads: u32,
        dynamic_shared_bytes: u32,
    ) -> Result<u32, DeviceError>;
    /// Queues a launch. `args` has been checked against `kernel.param_sizes` where known.
    fn launch(
        &self,
        kernel: &Kernel<Self::Function>,
        shape: &LaunchShape,
        args: &[LaunchArg<'_, Self::Buffer>],
    ) -> Result<(), DeviceError>;
    /// Records a timing event on the stream (errors name the operation "time").
    fn record(&self, event: TimingEvent) -> Result<(), DeviceError>;
    /// Waits for the end event, then the time from the start event to it in milliseconds.
    fn elapsed_ms(&self) -> Result<f32, DeviceError>;
    /// Waits for all queued work.
    fn synchronize(&self, operation: &'static str) -> Result<(), DeviceError>;
    /// Waits for all queued work when [`GpuDevice`] is dropped, before it frees what it holds;
    /// errors are ignored there. A vendor with per-thread state (HIP's current device) sets it
    /// here: the device may be dropped on another thread than it was last used on.
    fn synchronize_before_drop(&self) {
        let _ = self.synchronize("drop");
    }
    /// How many bytes `flush_l2` writes on a device with this L2 size (more than any cache that
    /// could keep a lab's data between samples).
    fn flush_bytes(&self, l2_bytes: u64) -> u64;

    /// The vendor library behind [`Op::Transpose`] (see [`Device::transpose_library`]).
    fn transpose_library(&mut self) -> Result<String, DeviceError> {
        Err(no_library_transpose())
    }
    /// The vendor library behind [`Op::Gemm`] (see [`Device::gemm_library`]).
    fn gemm_library(&mut self, precision: GemmPrecision) -> Result<String, DeviceError> {
        Err(no_gemm(precision))
    }
    /// Queues the library's row-major `c = a · b` (see [`Op::Gemm`]); the sizes have been
    /// checked against the buffers.
    fn gemm(
        &mut self,
        c: &mut Self::Buffer,
        [a, b]: [&Self::Buffer; 2],
        [m, n, k]: [usize; 3],
        precision: GemmPrecision,
    ) -> Result<(), DeviceError> {
        let _ = (c, a, b, m, n, k);
        Err(no_gemm(precision))
    }
    /// See [`Device::start_loading_transpose_library`].
    fn start_loading_transpose_library(&self) {}
    /// Queues the library transpose of a row-major `rows × cols` f32 matrix.
    fn transpose(
        &mut self,
        dst: &mut Self::Buffer,
        src: &Self::Buffer,
        rows: usize,
        cols: usize,
    ) -> Result<(), DeviceError> {
        let _ = (dst, src, rows, cols);
        Err(no_library_transpose())
    }
    /// The SM and memory clocks now, where the vendor's tools report them.
    fn clocks(&self, info: &DeviceInfo) -> Option<Clocks> {
        let _ = info;
        None
    }

    // Streams besides the main one, for pipelined rows (`gpu/pipeline.rs`). A vendor without
    // them keeps these defaults, which refuse with `Unavailable`.
    /// Makes `streams` streams besides the main one, and `marks` timing events, ready.
    fn open_streams(&mut self, streams: usize, marks: usize) -> Result<(), DeviceError> {
        let _ = (streams, marks);
        Err(super::pipeline::no_streams())
    }
    /// Stream `stream` waits for the work queued on the main stream so far (`join` with
    /// `fork = true`), or the main stream for the work queued on `stream` so far.
    fn join_stream(&self, stream: usize, fork: bool) -> Result<(), DeviceError> {
        let _ = (stream, fork);
        Err(super::pipeline::no_streams())
    }
    /// Queues on `stream` a copy of `src[offset..offset + bytes]` into the same bytes of `dst`.
    fn copy_from_pinned_on(
        &self,
        stream: usize,
        dst: &Self::Buffer,
        src: &Self::Pinned,
        offset: usize,
        bytes: usize,
    ) -> Result<(), DeviceError> {
        let _ = (stream, dst, src, offset, bytes);
        Err(super::pipeline::no_streams())
    }
    /// Queues on `stream` a copy of `src[offset..offset + bytes]` into the same bytes of `dst`.
    fn copy_to_pinned_on(
        &self,
        stream: usize,
        dst: &mut Self::Pinned,
        src: &Self::Buffer,
        offset: usize,
        bytes: usize,
    ) -> Result<(), DeviceError> {
        let _ = (stream, dst, src, offset, bytes);
        Err(super::pipeline::no_streams())
    }
    /// Queues a launch on `stream`, as [`Vendor::launch`] does on the main one.
    fn launch_on(
        &self,
        stream: usize,
        kernel: &Kernel<Self::Function>,
        shape: &LaunchShape,
        args: &[LaunchArg<'_, Self::Buffer>],
    ) -> Result<(), DeviceError> {
        let _ = (stream, kernel, shape, args);
        Err(super::pipeline::no_streams())
    }
    /// Records timing event `mark` on `stream`.
    fn mark(&self, stream: usize, mark: usize) -> Result<(), DeviceError> {
        let _ = (stream, mark);
        Err(super::pipeline::no_streams())
    }
    /// Waits for event `mark`, then the time from the start timing event to it in ms.
    fn mark_ms(&self, mark: usize) -> Result<f32, DeviceError> {
        let _ = mark;
        Err(super::pipeline::no_streams())
    }
    /// Sets L2 controls (see [`Device::set_l2`]), `window` over one of the device's buffers;
    /// none by default.
    fn set_l2(
        &self,
        request: &super::l2::L2Request,
        window: Option<super::l2::VendorWindow<'_, Self::Buffer>>,
    ) -> Result<super::l2::L2Report, DeviceError> {
        let _ = (request, window);
        Err(super::l2::unsupported())
    }
}

/// Why a backend without a library matrix product of that precision runs none.
fn no_gemm(precision: GemmPrecision) -> DeviceError {
    let (operation, what) = match precision {
        GemmPrecision::F32 => ("sgemm", "matrix product"),
        GemmPrecision::Bf16 => ("gemm bf16", "BF16 tensor-core matrix product"),
    };
    DeviceError::of_kind(
        DeviceErrorKind::Unavailable,
        operation,
        format!("this backend has no library {what}"),
    )
}

fn no_library_transpose() -> DeviceError {
    DeviceError::of_kind(
        DeviceErrorKind::Unavailable,
        "transpose",
        "this backend has no library transpose",
    )
}

/// A GPU: a [`Vendor`]'s primitives plus the bookkeeping every backend needs; see [`Device`].
#[derive(Debug)]
pub struct GpuDevice<V: Vendor> {
    info: DeviceInfo,
    driver_version: String,
    buffers: Vec<V::Buffer>,
    kernels: Vec<Kernel<V::Function>>,
    /// Tensor maps encoded for this lab; each names a buffer's device address.
    tensor_maps: Vec<TensorMapBytes>,
    /// The buffer `flush_l2` writes, allocated on first use and kept across labs.
    scratch: Option<V::Buffer>,
    flush_byte: u8,
    /// Host staging buffers for the host ↔ device labs: page-locked, and ordinary memory.
    pinned: Option<V::Pinned>,
    pageable: Vec<u8>,
    /// Where checks read outputs back: page-locked where the vendor has it (a readback at the
    /// bus's speed, several times an ordinary one's), kept across variants and labs.
    readback: Option<V::Pinned>,
    readback_pageable: Vec<u8>,
    /// The pipeline run last, whose events [`Device::pipeline_spans`] reads.
    last_pipeline: Option<super::pipeline::Pipeline>,
    /// Declared last, so that it (the stream, events and context) is dropped after every
    /// buffer and kernel made from it.
    vendor: V,
}

impl<V: Vendor> GpuDevice<V> {
    pub fn new(vendor: V, info: DeviceInfo, driver_version: String) -> Self {
        GpuDevice {
            info,
            driver_version,
            buffers: Vec::new(),
            kernels: Vec::new(),
            tensor_maps: Vec::new(),
            scratch: None,
            flush_byte: 0xa5,
            pinned: None,
            pageable: Vec::new(),
            readback: None,
            readback_pageable: Vec::new(),
            last_pipeline: None,
            vendor,
        }
    }

    pub fn vendor(&self) -> &V {
        &self.vendor
    }

    fn kernel(&self, id: KernelId) -> Result<&Kernel<V::Function>, DeviceError> {
        self.kernels
            .get(id.0)
            .ok_or_else(|| DeviceError::invalid("kernel", format!("no kernel {}", id.0)))
    }

    fn launch(
        &self,
        kernel: KernelId,
        shape: &LaunchShape,
        args: &[KernelArg],
    ) -> Result<(), DeviceError> {
        let kernel = self.kernel(kernel)?;
        if let Some(sizes) = &kernel.param_sizes {
            super::check_kernel_args(&kernel.name, sizes, args)?;
        }
        let args = args
            .iter()
            .map(|arg| resolve(&self.buffers, &self.tensor_maps, arg))
            .collect::<Result<Vec<_>, _>>()?;
        self.vendor.launch(kernel, shape, &args)
    }

    fn copy(&mut self, dst: BufferId, src: BufferId, bytes: usize) -> Result<(), DeviceError> {
        let (src, dst) = distinct_pair("copy", &mut self.buffers, src, dst)?;
        if bytes > src.len() || bytes > dst.len() {
            return Err(DeviceError::invalid(
                "copy",
                format!(
                    "{bytes} bytes do not fit: the source has {}, the destination {}",
                    src.len(),
                    dst.len()
                ),
            ));
        }
        if bytes == 0 {
            return Ok(());
        }
        self.vendor.copy_device("copy", dst, src, bytes)
    }

    /// `c = a · b` by the vendor library, `[c, a, b]` three distinct buffers large enough for
    /// their `[m, n, k]` matrices.
    fn gemm(
        &mut self,
        [c, a, b]: [BufferId; 3],
        [m, n, k]: [usize; 3],
        precision: GemmPrecision,
    ) -> Result<(), DeviceError> {
        const OPERATION: &str = "gemm";
        let input = precision.input_bytes();
        let bytes = |rows: usize, cols: usize, size| rows.checked_mul(cols)?.checked_mul(size);
        let needs = [
            (a, bytes(m, k, input)),
            (b, bytes(k, n, input)),
            (c, bytes(m, n, 4)),
        ];
        for (id, bytes) in needs {
            let have = buffer(OPERATION, &self.buffers, id)?.len();
            if bytes.is_none_or(|bytes| bytes > have) {
                return Err(DeviceError::invalid(
                    OPERATION,
                    format!("an {m} × {n} × {k} product does not fit a buffer of {have} bytes"),
                ));
            }
        }
        if a == c || b == c {
            return Err(DeviceError::invalid(OPERATION, "c must not be a or b"));
        }
        // `c` borrowed mutably beside the others: the table split around it.
        let (before, rest) = self.buffers.split_at_mut(c.0);
        let (out, after) = rest
            .split_first_mut()
            .ok_or_else(|| DeviceError::invalid(OPERATION, "no such buffer"))?;
        let input = |id: BufferId| match id.0.cmp(&c.0) {
            std::cmp::Ordering::Less => before.get(id.0),
            _ => after.get(id.0 - c.0 - 1),
        };
        match (input(a), input(b)) {
            (Some(a), Some(b)) => self.vendor.gemm(out, [a, b], [m, n, k], precision),
            _ => Err(DeviceError::invalid(OPERATION, "no such buffer")),
        }
    }

    fn transpose(
        &mut self,
        dst: BufferId,
        src: BufferId,
        rows: usize,
        cols: usize,
    ) -> Result<(), DeviceError> {
        let (src, dst) = distinct_pair("transpose", &mut self.buffers, src, dst)?;
        self.vendor.transpose(dst, src, rows, cols)
    }

    /// The staging buffer of that kind into the first `bytes` of `dst`.
    fn host_to_device(
        &mut self,
        dst: BufferId,
        bytes: usize,
        pinned: bool,
    ) -> Result<(), DeviceError> {
        let operation = "host to device";
        let dst = buffer_mut(operation, &mut self.buffers, dst)?;
        if bytes > dst.len() {
            return Err(DeviceError::invalid(operation, "range out of bounds"));
        }
        if pinned {
            let staged = self
                .pinned
                .as_ref()
                .filter(|p| p.len() == bytes)
                .ok_or_else(|| {
                    DeviceError::invalid(operation, "nothing staged in pinned memory")
                })?;
            self.vendor.copy_from_pinned(operation, dst, staged)
        } else {
            let staged = self.pageable.get(..bytes).ok_or_else(|| {
                DeviceError::invalid(operation, "nothing staged in pageable memory")
            })?;
            self.vendor.copy_from_host(operation, dst, staged)
        }
    }

    /// The first `bytes` of `src` into the staging buffer of that kind.
    fn device_to_host(
        &mut self,
        src: BufferId,
        bytes: usize,
        pinned: bool,
    ) -> Result<(), DeviceError> {
        let operation = "device to host";
        let src = buffer(operation, &self.buffers, src)?;
        if bytes > src.len() {
            return Err(DeviceError::invalid(operation, "range out of bounds"));
        }
        if pinned {
            let staged = self
                .pinned
                .as_mut()
                .filter(|p| p.len() == bytes)
                .ok_or_else(|| DeviceError::invalid(operation, "no pinned buffer of that size"))?;
            self.vendor.copy_to_pinned(operation, staged, src)
        } else {
            if self.pageable.len() != bytes {
                self.pageable.resize(bytes, 0);
            }
            self.vendor.copy_to_host(operation, &mut self.pageable, src)
        }
    }
}

/// The buffer behind `id`; an unknown id is the caller's mistake.
fn buffer<'a, B>(
    operation: &'static str,
    buffers: &'a [B],
    id: BufferId,
) -> Result<&'a B, DeviceError> {
    buffers
        .get(id.0)
        .ok_or_else(|| DeviceError::invalid(operation, format!("no buffer {}", id.0)))
}

fn buffer_mut<'a, B>(
    operation: &'static str,
    buffers: &'a mut [B],
    id: BufferId,
) -> Result<&'a mut B, DeviceError> {
    buffers
        .get_mut(id.0)
        .ok_or_else(|| DeviceError::invalid(operation, format!("no buffer {}", id.0)))
}

/// `src` to read and `dst` to write, which must be two different buffers.
fn distinct_pair<'a, B>(
    operation: &'static str,
    buffers: &'a mut [B],
    src: BufferId,
    dst: BufferId,
) -> Result<(&'a B, &'a mut B), DeviceError> {
    if dst == src {
        return Err(DeviceError::invalid(
            operation,
            "source and destination are the same buffer",
        ));
    }
    pair_mut(buffers, src.0, dst.0).ok_or_else(|| DeviceError::invalid(operation, "no such buffer"))
}

fn resolve<'a, B>(
    buffers: &'a [B],
    tensor_maps: &'a [TensorMapBytes],
    arg: &KernelArg,
) -> Result<LaunchArg<'a, B>, DeviceError> {
    Ok(match *arg {
        KernelArg::Buffer(id) => LaunchArg::Buffer(buffer("buffer", buffers, id)?),
        KernelArg::TensorMap(TensorMapId(id)) => {
            LaunchArg::TensorMap(tensor_maps.get(id).ok_or_else(|| {
                DeviceError::invalid("launch", format!("no tensor map {id} on this device"))
            })?)
        }
        KernelArg::I32(v) => LaunchArg::I32(v),
        KernelArg::I64(v) => LaunchArg::I64(v),
        KernelArg::U32(v) => LaunchArg::U32(v),
        KernelArg::U64(v) => LaunchArg::U64(v),
        KernelArg::F32(v) => LaunchArg::F32(v),
        KernelArg::F64(v) => LaunchArg::F64(v),
    })
}

/// The bytes from a tensor's first element to the end of its last, or `None` on overflow: the
/// copy engine reads and writes anywhere in it, so it must lie inside its buffer.
fn tensor_extent(request: &TensorMapRequest<'_>) -> Option<u64> {
    let (&inner, outer) = request.dims.split_first()?;
    let row = inner.checked_mul(request.elem.size() as u64)?;
    outer
        .iter()
        .zip(request.strides)
        .try_fold(row, |end, (&dim, &stride)| {
            end.checked_add(dim.checked_sub(1)?.checked_mul(stride)?)
        })
}

/// `&v[a]` and `&mut v[b]` at once; `None` if either is out of range or `a == b`.
fn pair_mut<T>(v: &mut [T], a: usize, b: usize) -> Option<(&T, &mut T)> {
    if a == b || a >= v.len() || b >= v.len() {
        return None;
    }
    if a < b {
        let (low, high) = v.split_at_mut(b);
        Some((&low[a], &mut high[0]))
    } else {
        let (low, high) = v.split_at_mut(a);
        Some((&high[0], &mut low[b]))
    }
}

impl<V: Vendor> Drop for GpuDevice<V> {
    /// Waits for queued work before the buffers, kernels and staging memory it uses are freed.
    fn drop(&mut self) {
        self.vendor.synchronize_before_drop();
    }
}

impl<V: Vendor> Device for GpuDevice<V> {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn driver_version(&self) -> String {
        self.driver_version.clone()
    }

    fn memory(&self) -> Result<(u64, u64), DeviceError> {
        self.vendor.memory()
    }

    fn alloc(&mut self, bytes: usize) -> Result<BufferId, DeviceError> {
        if bytes == 0 {
            return Err(DeviceError::invalid(
                "alloc",
                "cannot allocate an empty buffer",
            ));
        }
        let buffer = self.vendor.alloc_zeroed("alloc", bytes)?;
        self.buffers.push(buffer);
        Ok(BufferId(self.buffers.len() - 1))
    }

    /// Writes `data` to the start of the buffer. Returns once `data` has been read.
    fn upload(&mut self, buffer: BufferId, data: &[u8]) -> Result<(), DeviceError> {
        let dst = buffer_mut("upload", &mut self.buffers, buffer)?;
        if data.len() > dst.len() {
            return Err(DeviceError::invalid(
                "upload",
                format!(
                    "{} bytes do not fit in a {}-byte buffer",
                    data.len(),
                    dst.len()
                ),
            ));
        }
        if data.is_empty() {
            return Ok(());
        }
        self.vendor.copy_from_host("upload", dst, data)
    }

    /// Reads the first `out.len()` bytes of the buffer, after all queued work.
    fn download(&mut self, buffer: BufferId, out: &mut [u8]) -> Result<(), DeviceError> {
        let src = self::buffer("download", &self.buffers, buffer)?;
        if out.len() > src.len() {
            return Err(DeviceError::invalid(
                "download",
                format!("{} bytes asked of a {}-byte buffer", out.len(), src.len()),
            ));
        }
        if !out.is_empty() {
            self.vendor.copy_to_host("download", out, src)?;
        }
        self.vendor.synchronize("download")
    }

    fn address(&self, buffer: BufferId) -> Option<u64> {
        let buffer = self.buffers.get(buffer.0)?;
        Some(self.vendor.address(buffer))
    }

    fn read_back(&mut self, buffer: BufferId, bytes: usize) -> Result<&[u8], DeviceError> {
        let operation = "read back";
        let src = self::buffer(operation, &self.buffers, buffer)?;
        if bytes > src.len() {
            return Err(DeviceError::invalid(
                operation,
                format!("{bytes} bytes asked of a {}-byte buffer", src.len()),
            ));
        }
        if bytes > 0 && self.readback.as_ref().is_none_or(|p| p.len() != bytes) {
            // Freed before the new one is allocated, so two never coexist; without page-locked
            // memory, ordinary memory does.
            self.readback = None;
            self.readback = self.vendor.alloc_pinned(operation, bytes).ok();
        }
        match self.readback.as_mut().filter(|_| bytes > 0) {
            Some(pinned) => {
                self.vendor.copy_to_pinned(operation, pinned, src)?;
                self.vendor.synchronize(operation)?;
                let pinned = self
                    .readback
                    .as_ref()
                    .ok_or_else(|| DeviceError::new(operation, "no readback buffer"))?;
                pinned.bytes(operation)
            }
            None => {
                self.readback_pageable.resize(bytes, 0);
                if bytes > 0 {
                    self.vendor
                        .copy_to_host(operation, &mut self.readback_pageable, src)?;
                }
                self.vendor.synchronize(operation)?;
                Ok(&self.readback_pageable)
            }
        }
    }

    fn fill(&mut self, buffer: BufferId, byte: u8) -> Result<(), DeviceError> {
        let dst = buffer_mut("fill", &mut self.buffers, buffer)?;
        self.vendor.memset("fill", dst, byte)
    }

    fn load(&mut self, kernel: &CompiledKernel) -> Result<(KernelId, LoadedKernel), DeviceError> {
        let (kernel, loaded) = self.vendor.load(kernel)?;
        self.kernels.push(kernel);
        Ok((KernelId(self.kernels.len() - 1), loaded))
    }

    fn tensor_map(&mut self, request: &TensorMapRequest<'_>) -> Result<TensorMapId, DeviceError> {
        let buffer = buffer("tensor map", &self.buffers, request.buffer)?;
        let extent = tensor_extent(request);
        if extent.is_none_or(|bytes| bytes > buffer.len() as u64) {
            return Err(DeviceError::invalid(
                "tensor map",
                format!(
                    "the tensor spans {} bytes; its buffer has {}",
                    extent.map_or_else(|| "more than 2^64".to_string(), |b| b.to_string()),
                    buffer.len()
                ),
            ));
        }
        let map = self.vendor.encode_tensor_map(buffer, request)?;
        self.tensor_maps.push(map);
        Ok(TensorMapId(self.tensor_maps.len() - 1))
    }

    fn blocks_per_sm(
        &self,
        kernel: KernelId,
        block_threads: u32,
        dynamic_shared_bytes: u32,
    ) -> Result<u32, DeviceError> {
        let kernel = self.kernel(kernel)?;
        self.vendor
            .blocks_per_sm(kernel, block_threads, dynamic_shared_bytes)
    }

    fn transpose_library(&mut self) -> Result<String, DeviceError> {
        self.vendor.transpose_library()
    }

    fn start_loading_transpose_library(&self) {
        self.vendor.start_loading_transpose_library();
    }

    fn gemm_library(&mut self, precision: GemmPrecision) -> Result<String, DeviceError> {
        self.vendor.gemm_library(precision)
    }

    fn set_l2(
        &mut self,
        request: &super::l2::L2Request,
    ) -> Result<super::l2::L2Report, DeviceError> {
        self.set_l2_controls(request)
    }

    fn run(&mut self, op: &Op<'_>) -> Result<(), DeviceError> {
        match *op {
            Op::Launch {
                kernel,
                ref shape,
                args,
            } => self.launch(kernel, shape, args),
            Op::Copy { dst, src, bytes } => self.copy(dst, src, bytes),
            Op::Transpose {
                dst,
                src,
                rows,
                cols,
            } => self.transpose(dst, src, rows, cols),
            Op::Gemm {
                c,
                a,
                b,
                m,
                n,
                k,
                precision,
            } => self.gemm([c, a, b], [m, n, k], precision),
            Op::HostToDevice { dst, bytes, pinned } => self.host_to_device(dst, bytes, pinned),
            Op::DeviceToHost { src, bytes, pinned } => self.device_to_host(src, bytes, pinned),
            Op::Sequence(ops) => ops.iter().try_for_each(|op| self.run(op)),
            Op::Pipeline(pipeline) => self.run_pipeline(pipeline),
        }
    }

    /// Only the op sits between the two events: nothing else is queued in between.
    fn time(&mut self, op: &Op<'_>) -> Result<f64, DeviceError> {
        self.vendor.record(TimingEvent::Start)?;
        self.run(op)?;
        self.vendor.record(TimingEvent::End)?;
        Ok(f64::from(self.vendor.elapsed_ms()?))
    }

    fn pipeline_spans(
        &mut self,
    ) -> Result<Vec<kernelbook_core::results::timeline::Span>, DeviceError> {
        self.spans_of_last_pipeline()
    }

    fn flush_l2(&mut self) -> Result<(), DeviceError> {
        let scratch = match &mut self.scratch {
            Some(scratch) => scratch,
            empty => {
                let bytes = self.vendor.flush_bytes(self.info.l2_bytes);
                let bytes = usize::try_from(bytes).map_err(|_| {
                    DeviceError::new("flush L2", format!("{bytes} bytes is too large"))
                })?;
                empty.insert(self.vendor.alloc_zeroed("flush L2", bytes)?)
            }
        };
        // A different value each time, so no write could be skipped as a no-op.
        self.flush_byte = !self.flush_byte;
        self.vendor.memset("flush L2", scratch, self.flush_byte)
    }

    fn synchronize(&mut self) -> Result<(), DeviceError> {
        self.vendor.synchronize("synchronize")
    }

    fn stage_host(&mut self, pinned: bool, data: &[u8]) -> Result<(), DeviceError> {
        if !pinned {
            self.pageable.clear();
            self.pageable.extend_from_slice(data);
            return Ok(());
        }
        if self.pinned.as_ref().is_none_or(|p| p.len() != data.len()) {
            // Freed before the new one is allocated, so two never coexist.
            self.pinned = None;
            self.pinned = Some(self.vendor.alloc_pinned("pinned allocation", data.len())?);
        }
        let staged = self
            .pinned
            .as_mut()
            .ok_or_else(|| DeviceError::new("stage", "no pinned buffer"))?;
        let bytes = staged.bytes_mut("stage")?;
        let bytes = bytes
            .get_mut(..data.len())
            .ok_or_else(|| DeviceError::new("stage", "the pinned buffer is too small"))?;
        bytes.copy_from_slice(data);
        Ok(())
    }

    fn read_host(&mut self, pinned: bool, out: &mut [u8]) -> Result<(), DeviceError> {
        self.synchronize()?;
        let staged: &[u8] = if pinned {
            match &self.pinned {
                Some(staged) => staged.bytes("read host")?,
                None => &[],
            }
        } else {
            &self.pageable
        };
        let staged = staged.get(..out.len()).ok_or_else(|| {
            DeviceError::invalid(
                "read host",
                format!("the staging buffer is smaller than {} bytes", out.len()),
            )
        })?;
        out.copy_from_slice(staged);
        Ok(())
    }

    fn release_lab(&mut self) -> Result<(), DeviceError> {
        self.synchronize()?;
        // Dropping them frees the memory and unloads the modules. The flush buffer and the
        // vendor's libraries stay: every lab uses the one, and loading the other is slow.
        self.tensor_maps.clear();
        self.buffers.clear();
        self.kernels.clear();
        self.pinned = None;
        self.pageable = Vec::new();
        Ok(())
    }

    fn clocks(&self) -> Option<Clocks> {
        self.vendor.clocks(&self.info)
    }
}

mod l2;
mod pipeline;

#[cfg(test)]
mod tests;
