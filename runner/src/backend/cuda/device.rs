//! The safe layer: one GPU's primary context, one stream and two timing events as cudarc's
//! owning types, providing the [`Vendor`] primitives that [`GpuDevice`] builds the
//! [`Device`](crate::backend::Device) on.
//!
//! All work is queued on one stream and cudarc's per-buffer event tracking is switched off, so
//! nothing but the lab's own operations (and the two timing events) is recorded on the stream.

use super::cublas;
use super::probe::{self, MIN_DRIVER_VERSION, Unavailable, to_u32};
use super::result::{self, Check};
use crate::backend::gpu::{
    DeviceMemory, GpuDevice, HostMemory, Kernel, LaunchArg, TimingEvent, Vendor,
};
use crate::backend::{
    CompiledKernel, DeviceError, GemmPrecision, LoadedKernel, TensorMapBytes, TensorMapRequest,
};
use cudarc::driver::sys::{CUevent_flags, CUfunction_attribute};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig,
    PinnedHostSlice, PushKernelArg,
};
use kernelbook_core::results::{Clocks, DeviceInfo, LaunchShape};
use std::cell::Cell;
use std::sync::Arc;

/// The smallest buffer `flush_l2` writes, whatever the L2 size the driver reports.
const MIN_FLUSH_BYTES: u64 = 64 << 20;

/// Parameters beyond this many are not looked up (a kernel with more is not checked).
const MAX_CHECKED_PARAMS: usize = 4096;

/// One NVIDIA GPU with one stream; see [`Device`](crate::backend::Device).
pub type CudaDevice = GpuDevice<Cuda>;

/// The CUDA primitives: a context, its one stream, the timing events and cuBLAS.
#[derive(Debug)]
pub struct Cuda {
    start: CudaEvent,
    end: CudaEvent,
    cublas: cublas::Library,
    /// The side streams and events of pipelined rows, made on first use.
    streams: super::streams::Streams,
    stream: Arc<CudaStream>,
    ctx: Arc<CudaContext>,
}

/// A loaded kernel and the module that holds it.
// SAFETY: a tensor map is 128 plain bytes that the driver copies into the kernel's parameter
// space as they are; the kernel declares the parameter as the same 128-byte aligned struct.
unsafe impl cudarc::driver::DeviceRepr for TensorMapBytes {}

#[derive(Debug)]
pub struct Function {
    function: CudaFunction,
    /// Kept with the function it was loaded from (the function also holds it alive).
    _module: Arc<CudaModule>,
    /// The kernel's current `MAX_DYNAMIC_SHARED_SIZE_BYTES`, raised on demand.
    dynamic_shared_limit: Cell<u32>,
}

impl DeviceMemory for CudaSlice<u8> {
    fn len(&self) -> usize {
        cudarc::driver::DeviceSlice::len(self)
    }
}

impl HostMemory for PinnedHostSlice<u8> {
    fn len(&self) -> usize {
        PinnedHostSlice::len(self)
    }
    fn bytes(&self, operation: &'static str) -> Result<&[u8], DeviceError> {
        self.as_slice().during(operation)
    }
    fn bytes_mut(&mut self, operation: &'static str) -> Result<&mut [u8], DeviceError> {
        self.as_mut_slice().during(operation)
    }
}

/// Bytes `flush_l2` writes: twice the L2, and at least [`MIN_FLUSH_BYTES`].
fn flush_bytes(l2_bytes: u64) -> u64 {
    l2_bytes.saturating_mul(2).max(MIN_FLUSH_BYTES)
}

impl GpuDevice<Cuda> {
    /// Opens GPU `ordinal`: retains its primary context and creates a stream and two timing
    /// events.
    pub fn open(ordinal: usize) -> Result<CudaDevice, Unavailable> {
        let (probe, version) = probe::probe_ordinal(ordinal)?;
        if version < MIN_DRIVER_VERSION {
            return Err(Unavailable::OldDriver {
                found: probe.driver_version,
                needed: probe::format_driver_version(MIN_DRIVER_VERSION),
            });
        }
        let open = |what: &'static str| move |e| Unavailable::driver(result::error(what, e));
        let ctx =
            CudaContext::new(ordinal).map_err(open("the CUDA driver could not open the GPU"))?;
        // SAFETY: the contract is that the caller orders work on buffers across streams. This
        // device creates exactly one stream, before any buffer exists, and allocates, uses and
        // frees every buffer on it, so stream order alone sequences all accesses and every free
        // comes after the last use. A pipelined row's side streams wait for this stream before
        // their first copy and it waits for them after their last (`gpu/pipeline.rs`). Turning tracking off means no event is recorded around
        // launches and copies, where it would sit inside the timed region.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx
            .new_stream()
            .map_err(open("the CUDA driver could not create a stream"))?;
        let timing_event = || {
            ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(open("the CUDA driver could not create an event"))
        };
        let start = timing_event()?;
        let end = timing_event()?;
        let cuda = Cuda {
            start,
            end,
            cublas: cublas::Library::default(),
            streams: Default::default(),
            stream,
            ctx,
        };
        Ok(GpuDevice::new(cuda, probe.info, probe.driver_version))
    }
}

impl Cuda {
    /// Queues a launch on `stream` (the main one, or a pipelined row's side stream).
    fn launch_on_stream(
        &self,
        stream: &Arc<CudaStream>,
        kernel: &Kernel<Function>,
        shape: &LaunchShape,
        args: &[LaunchArg<'_, CudaSlice<u8>>],
    ) -> Result<(), DeviceError> {
        self.ensure_dynamic_shared("launch", kernel, shape.shared_bytes)?;
        let mut builder = stream.launch_builder(&kernel.function.function);
        for arg in args {
            // Scalars are passed by reference into `args`, which outlives the launch call; the
            // driver copies every parameter when the launch is queued.
            match arg {
                LaunchArg::Buffer(buffer) => builder.arg(*buffer),
                LaunchArg::TensorMap(map) => builder.arg(*map),
                LaunchArg::I32(value) => builder.arg(value),
                LaunchArg::I64(value) => builder.arg(value),
                LaunchArg::U32(value) => builder.arg(value),
                LaunchArg::U64(value) => builder.arg(value),
                LaunchArg::F32(value) => builder.arg(value),
                LaunchArg::F64(value) => builder.arg(value),
            };
        }
        let [gx, gy, gz] = shape.grid;
        let [bx, by, bz] = shape.block;
        let config = LaunchConfig {
            grid_dim: (gx, gy, gz),
            block_dim: (bx, by, bz),
            shared_mem_bytes: shape.shared_bytes,
        };
        // SAFETY: `cuLaunchKernel` reads one pointer per kernel parameter and copies the value
        // behind it. The pointers are to the device pointers inside the buffers and to the
        // scalars inside `args`, both borrowed for this whole call. `GpuDevice` has matched
        // their number and sizes against the kernel's parameter list where the driver reports
        // it; that they mean what the kernel expects (the argument types come from the lab file)
        // is the lab author's responsibility, as is staying inside the buffers, which outlive
        // the launch because `GpuDevice` frees buffers only after a synchronize (in
        // `release_lab` and when dropped).
        unsafe { builder.launch(config) }
            .map_err(|e| result::error_about("launch", &format!("kernel `{}`", kernel.name), e))?;
        // Errors cudarc could only record (in `Drop`s) surface here rather than later.
        self.ctx.check_err().during("launch")
    }

    /// Raises the kernel's dynamic shared memory limit to `bytes` if needed: beyond 48 KiB
    /// (less the static shared memory) the driver refuses launches until the kernel opts in.
    fn ensure_dynamic_shared(
        &self,
        operation: &'static str,
        kernel: &Kernel<Function>,
        bytes: u32,
    ) -> Result<(), DeviceError> {
        let limit = &kernel.function.dynamic_shared_limit;
        if bytes <= limit.get() {
            return Ok(());
        }
        let value = i32::try_from(bytes).map_err(|_| {
            DeviceError::invalid(
                operation,
                format!("{bytes} bytes of shared memory is too many"),
            )
        })?;
        self.ctx.bind_to_thread().during(operation)?;
        kernel
            .function
            .function
            .set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                value,
            )
            .map_err(|e| {
                let subject = format!(
                    "kernel `{}` cannot have {bytes} bytes of dynamic shared memory",
                    kernel.name
                );
                result::error_about(operation, &subject, e)
            })?;
        limit.set(bytes);
        Ok(())
    }

    /// Byte size of each of the function's parameters, or `None` if the driver cannot say.
    fn param_sizes(function: &CudaFunction) -> Option<Vec<usize>> {
        let mut sizes = Vec::new();
        for index in 0..MAX_CHECKED_PARAMS {
            match result::param_size("load", function, index) {
                Ok(Some(size)) => sizes.push(size),
                Ok(None) => return Some(sizes),
                Err(_) => return None,
            }
        }
        None
    }

    /// Registers, local and static shared memory of a loaded function.
    fn resources(function: &CudaFunction) -> Result<LoadedKernel, DeviceError> {
        Ok(LoadedKernel {
            registers: to_u32(function.num_regs().during("load")?),
            local_bytes: to_u32(function.local_size_bytes().during("load")?),
            shared_bytes: to_u32(function.shared_size_bytes().during("load")?),
        })
    }
}

impl Vendor for Cuda {
    type Buffer = CudaSlice<u8>;
    type Function = Function;
    type Pinned = PinnedHostSlice<u8>;

    fn memory(&self) -> Result<(u64, u64), DeviceError> {
        let (free, total) = self.ctx.mem_get_info().during("memory info")?;
        Ok((free as u64, total as u64))
    }

    fn alloc_zeroed(
        &self,
        operation: &'static str,
        bytes: usize,
    ) -> Result<CudaSlice<u8>, DeviceError> {
        self.stream.alloc_zeros::<u8>(bytes).during(operation)
    }

    fn memset(
        &self,
        operation: &'static str,
        buffer: &mut CudaSlice<u8>,
        byte: u8,
    ) -> Result<(), DeviceError> {
        result::memset(operation, &self.ctx, &self.stream, buffer, byte)
    }

    /// `cuMemcpyHtoDAsync` from pageable memory returns once the driver has staged `src`.
    fn copy_from_host(
        &self,
        operation: &'static str,
        dst: &mut CudaSlice<u8>,
        src: &[u8],
    ) -> Result<(), DeviceError> {
        let mut view = dst
            .try_slice_mut(0..src.len())
            .ok_or_else(|| DeviceError::invalid(operation, "range out of bounds"))?;
        self.stream.memcpy_htod(src, &mut view).during(operation)
    }

    /// `cuMemcpyDtoHAsync` into pageable memory returns once the copy is complete.
    fn copy_to_host(
        &self,
        operation: &'static str,
        dst: &mut [u8],
        src: &CudaSlice<u8>,
    ) -> Result<(), DeviceError> {
        let view = src
            .try_slice(0..dst.len())
            .ok_or_else(|| DeviceError::invalid(operation, "range out of bounds"))?;
        self.stream.memcpy_dtoh(&view, dst).during(operation)
    }

    fn copy_from_pinned(
        &self,
        operation: &'static str,
        dst: &mut CudaSlice<u8>,
        src: &PinnedHostSlice<u8>,
    ) -> Result<(), DeviceError> {
        let mut view = dst
            .try_slice_mut(0..src.len())
            .ok_or_else(|| DeviceError::invalid(operation, "range out of bounds"))?;
        self.stream.memcpy_htod(src, &mut view).during(operation)
    }

    fn copy_to_pinned(
        &self,
        operation: &'static str,
        dst: &mut PinnedHostSlice<u8>,
        src: &CudaSlice<u8>,
    ) -> Result<(), DeviceError> {
        let view = src
            .try_slice(0..dst.len())
            .ok_or_else(|| DeviceError::invalid(operation, "range out of bounds"))?;
        self.stream.memcpy_dtoh(&view, dst).during(operation)
    }

    fn copy_device(
        &self,
        operation: &'static str,
        dst: &mut CudaSlice<u8>,
        src: &CudaSlice<u8>,
        bytes: usize,
    ) -> Result<(), DeviceError> {
        let src_view = src
            .try_slice(0..bytes)
            .ok_or_else(|| DeviceError::invalid(operation, "source range out of bounds"))?;
        let mut dst_view = dst
            .try_slice_mut(0..bytes)
            .ok_or_else(|| DeviceError::invalid(operation, "destination range out of bounds"))?;
        self.stream
            .memcpy_dtod(&src_view, &mut dst_view)
            .during(operation)
    }

    fn alloc_pinned(
        &self,
        operation: &'static str,
        bytes: usize,
    ) -> Result<PinnedHostSlice<u8>, DeviceError> {
        // SAFETY: the caller (`GpuDevice::stage_host`) writes the allocation in full before
        // any copy reads it. Flags 0: ordinary page-locked memory (cudaMallocHost), not
        // write-combined, which the CPU reads back slowly.
        unsafe { self.ctx.alloc_pinned_with_flags::<u8>(bytes, 0) }.during(operation)
    }

    fn load(
        &self,
        kernel: &CompiledKernel,
    ) -> Result<(Kernel<Function>, LoadedKernel), DeviceError> {
        // `cuModuleLoadData` takes a bare pointer and parses what it finds there, so only
        // hand it something that is at least an ELF image (a CUBIN is one).
        if !kernel.image.starts_with(b"\x7fELF") {
            return Err(DeviceError::invalid(
                "load",
                format!("the image of `{}` is not a CUBIN", kernel.name),
            ));
        }
        // cudarc's `load_function` would panic on a NUL in the name.
        if kernel.name.contains('\0') {
            return Err(DeviceError::invalid(
                "load",
                "the kernel name contains a NUL byte",
            ));
        }
        // `Ptx::from_binary` loads through `cuModuleLoadData`, which accepts a CUBIN.
        let module = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(kernel.image.clone()))
            .during("load")?;
        let function = module.load_function(&kernel.name).map_err(|e| {
            let subject = format!(
                "no kernel `{}` in the image (is it declared extern \"C\" __global__?)",
                kernel.name
            );
            result::error_about("load", &subject, e)
        })?;
        let loaded = Cuda::resources(&function)?;
        let dynamic_shared_limit = to_u32(
            function
                .get_attribute(
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                )
                .during("load")?,
        );
        self.ctx.bind_to_thread().during("load")?;
        let param_sizes = Cuda::param_sizes(&function);
        let kernel = Kernel {
            name: kernel.name.clone(),
            param_sizes,
            function: Function {
                function,
                _module: module,
                dynamic_shared_limit: Cell::new(dynamic_shared_limit),
            },
        };
        Ok((kernel, loaded))
    }

    /// May raise the kernel's dynamic shared memory limit, as a launch of that shape would.
    fn blocks_per_sm(
        &self,
        kernel: &Kernel<Function>,
        block_threads: u32,
        dynamic_shared_bytes: u32,
    ) -> Result<u32, DeviceError> {
        self.ensure_dynamic_shared("occupancy", kernel, dynamic_shared_bytes)?;
        self.ctx.bind_to_thread().during("occupancy")?;
        kernel
            .function
            .function
            .occupancy_max_active_blocks_per_multiprocessor(
                block_threads,
                dynamic_shared_bytes as usize,
                None,
            )
            .during("occupancy")
    }

    fn address(&self, buffer: &CudaSlice<u8>) -> u64 {
        let (address, _ordered) = cudarc::driver::DevicePtr::device_ptr(buffer, &self.stream);
        address
    }

    fn encode_tensor_map(
        &self,
        buffer: &CudaSlice<u8>,
        request: &TensorMapRequest<'_>,
    ) -> Result<TensorMapBytes, DeviceError> {
        // The guard orders the stream after writes to the buffer; the encoding itself only
        // records the address.
        let (address, _ordered) = cudarc::driver::DevicePtr::device_ptr(buffer, &self.stream);
        super::tensor_map::encode(address, request)
    }

    fn launch(
        &self,
        kernel: &Kernel<Function>,
        shape: &LaunchShape,
        args: &[LaunchArg<'_, CudaSlice<u8>>],
    ) -> Result<(), DeviceError> {
        self.launch_on_stream(&self.stream, kernel, shape, args)
    }

    fn open_streams(&mut self, streams: usize, marks: usize) -> Result<(), DeviceError> {
        self.streams.open(&self.ctx, streams, marks)
    }

    fn join_stream(&self, stream: usize, fork: bool) -> Result<(), DeviceError> {
        let side = self.streams.stream(stream)?;
        let (waits, on) = if fork {
            (side, &self.stream)
        } else {
            (&self.stream, side)
        };
        waits.join(on).during("pipeline")
    }

    fn copy_from_pinned_on(
        &self,
        stream: usize,
        dst: &CudaSlice<u8>,
        src: &PinnedHostSlice<u8>,
        offset: usize,
        bytes: usize,
    ) -> Result<(), DeviceError> {
        let stream = self.streams.stream(stream)?;
        super::streams::copy_from_pinned(stream, dst, src, offset, bytes)
    }

    fn copy_to_pinned_on(
        &self,
        stream: usize,
        dst: &mut PinnedHostSlice<u8>,
        src: &CudaSlice<u8>,
        offset: usize,
        bytes: usize,
    ) -> Result<(), DeviceError> {
        let stream = self.streams.stream(stream)?;
        super::streams::copy_to_pinned(stream, dst, src, offset, bytes)
    }

    fn launch_on(
        &self,
        stream: usize,
        kernel: &Kernel<Function>,
        shape: &LaunchShape,
        args: &[LaunchArg<'_, CudaSlice<u8>>],
    ) -> Result<(), DeviceError> {
        self.launch_on_stream(self.streams.stream(stream)?, kernel, shape, args)
    }

    fn mark(&self, stream: usize, mark: usize) -> Result<(), DeviceError> {
        let event = self.streams.event(mark)?;
        event.record(self.streams.stream(stream)?).during("time")
    }

    fn mark_ms(&self, mark: usize) -> Result<f32, DeviceError> {
        super::streams::elapsed(&self.start, self.streams.event(mark)?)
    }

    fn record(&self, event: TimingEvent) -> Result<(), DeviceError> {
        let event = match event {
            TimingEvent::Start => &self.start,
            TimingEvent::End => &self.end,
        };
        event.record(&self.stream).during("time")
    }

    fn elapsed_ms(&self) -> Result<f32, DeviceError> {
        self.end.synchronize().during("time")?;
        self.start.elapsed_ms(&self.end).during("time")
    }

    fn synchronize(&self, operation: &'static str) -> Result<(), DeviceError> {
        self.stream.synchronize().during(operation)
    }

    fn flush_bytes(&self, l2_bytes: u64) -> u64 {
        flush_bytes(l2_bytes)
    }

    fn transpose_library(&mut self) -> Result<String, DeviceError> {
        Ok(self.cublas.get(&self.ctx, &self.stream)?.name())
    }

    fn gemm_library(&mut self, precision: GemmPrecision) -> Result<String, DeviceError> {
        let version = self.cublas.get(&self.ctx, &self.stream)?.version();
        Ok(match precision {
            GemmPrecision::F32 => format!("{version} sgemm"),
            GemmPrecision::Bf16 => format!("{version} gemmEx (BF16 in, FP32 compute)"),
        })
    }

    fn gemm(
        &mut self,
        c: &mut CudaSlice<u8>,
        [a, b]: [&CudaSlice<u8>; 2],
        mnk: [usize; 3],
        precision: GemmPrecision,
    ) -> Result<(), DeviceError> {
        let operation = match precision {
            GemmPrecision::F32 => "cuBLAS sgemm",
            GemmPrecision::Bf16 => "cuBLAS gemmEx",
        };
        let cublas = self
            .cublas
            .get(&self.ctx, &self.stream)
            .map_err(|why| DeviceError { operation, ..why })?;
        match precision {
            GemmPrecision::F32 => cublas.sgemm(c, a, b, mnk),
            GemmPrecision::Bf16 => cublas.gemm_bf16(c, a, b, mnk),
        }
    }

    fn start_loading_transpose_library(&self) {
        if !self.cublas.is_loaded() {
            cublas::start_loading();
        }
    }

    /// cuBLAS `geam` with A transposed: the library's answer to "transpose this matrix".
    fn transpose(
        &mut self,
        dst: &mut CudaSlice<u8>,
        src: &CudaSlice<u8>,
        rows: usize,
        cols: usize,
    ) -> Result<(), DeviceError> {
        let cublas = self
            .cublas
            .get(&self.ctx, &self.stream)
            .map_err(|why| DeviceError {
                operation: "cuBLAS transpose",
                ..why
            })?;
        cublas.transpose(dst, src, rows, cols)
    }

    fn set_l2(
        &self,
        request: &crate::backend::l2::L2Request,
        window: Option<crate::backend::l2::VendorWindow<'_, CudaSlice<u8>>>,
    ) -> Result<crate::backend::l2::L2Report, DeviceError> {
        super::l2::set(&self.ctx, &self.stream, request, window)
    }

    fn clocks(&self, info: &DeviceInfo) -> Option<Clocks> {
        probe::clocks(&info.uuid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flush_covers_twice_the_l2_and_at_least_64_mib() {
        assert_eq!(flush_bytes(60 << 20), 120 << 20);
        assert_eq!(flush_bytes(4 << 20), 64 << 20);
        assert_eq!(flush_bytes(u64::MAX), u64::MAX);
    }

    #[test]
    fn handles_can_move_between_threads() {
        fn send<T: Send>() {}
        send::<CudaDevice>();
    }
}
