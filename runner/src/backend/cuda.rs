//! The CUDA backend: NVRTC compiles kernel source to a CUBIN, the driver API (through cudarc,
//! loaded at run time) loads, launches and times it.
//!
//! Nothing here links against CUDA: `libcuda.so.1` and `libnvrtc.so.13` are opened on first use,
//! so the book builds on machines without a GPU. cudarc panics when a library it needs is absent,
//! so every entry point ([`probe`], [`CudaDevice::open`], [`Nvrtc::load`]) checks for the library
//! first and returns [`Unavailable`] instead. A [`CudaDevice`] or [`Nvrtc`] only exists once its
//! library was found, so their methods need no further check.
//!
//! All work is queued on one stream and cudarc's per-buffer event tracking is switched off, so
//! nothing but the lab's own operations (and the two timing events) is recorded on the stream.

use super::{
    BufferId, CompileError, CompileRequest, CompiledKernel, Compiler, Device, DeviceError,
    KernelArg, KernelId, LoadedKernel, Op,
};
use cudarc::cublas::{result as cublas_result, sys as cublas_sys};
use cudarc::driver::sys::{
    self as cu, CUdevice_attribute, CUevent_flags, CUfunction_attribute, CUresult,
};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr,
    DevicePtrMut, DriverError, LaunchConfig, PinnedHostSlice, PushKernelArg, result,
};
use cudarc::nvrtc::result::{self as nvrtc_result, NvrtcError};
use cudarc::nvrtc::sys::{self as nvrtc_sys, nvrtcResult};
use kernelbook_core::results::{Clocks, DeviceInfo, LaunchShape};
use std::cell::Cell;
use std::ffi::{CStr, c_char, c_int};
use std::sync::Arc;

/// The oldest driver this backend runs on, as `cuDriverGetVersion` reports it. cudarc is built
/// for the CUDA 13.0 API and resolves 13.0 entry points (e.g. `cuEventElapsedTime_v2`) by name,
/// and NVRTC 13 emits CUBINs for a 13.x driver; an older driver would fail to load them or make
/// cudarc panic on a missing symbol.
const MIN_DRIVER_VERSION: i32 = 13000;

/// The smallest buffer `flush_l2` writes, whatever the L2 size the driver reports.
const MIN_FLUSH_BYTES: u64 = 64 << 20;

/// Parameters beyond this many are not looked up (a kernel with more is not checked).
const MAX_CHECKED_PARAMS: usize = 4096;

/// Whether the CUDA driver library (`libcuda.so.1`) can be loaded.
/// Turns off the CUDA compute cache (`~/.nv/ComputeCache`) for this process, unless the user
/// set `CUDA_CACHE_DISABLE` already.
///
/// Where a CUDA driver is installed, NVRTC keeps ptxas' output in that cache, and a cache hit
/// skips ptxas, so its resource report (the spill counts in the launch statistics) goes
/// missing from the log (seen on an H200 with NVRTC 13.0.88 and driver 580). kernelbook loads
/// CUBINs, so it gains nothing from the cache; a few milliseconds of ptxas per kernel is the
/// price of a complete report.
///
/// # Safety
///
/// Changes the environment: call it before any other thread exists (first thing in `main`).
pub unsafe fn disable_compute_cache() {
    if std::env::var_os("CUDA_CACHE_DISABLE").is_none() {
        // SAFETY: the caller guarantees that no other thread reads or writes the environment.
        unsafe { std::env::set_var("CUDA_CACHE_DISABLE", "1") };
    }
}

pub fn driver_present() -> bool {
    // SAFETY: `is_culib_present` only tries to dlopen the candidate library names and drops
    // them again; it calls no CUDA function and touches no shared state.
    unsafe { cu::is_culib_present() }
}

/// Whether the NVRTC library (`libnvrtc.so.13` or a compatible one) can be loaded.
pub fn nvrtc_present() -> bool {
    // SAFETY: as for `driver_present`: a dlopen attempt, nothing else.
    unsafe { nvrtc_sys::is_culib_present() }
}

/// Why the CUDA backend cannot be used on this machine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    #[error("no CUDA driver found (libcuda.so.1 could not be loaded)")]
    NoDriver,
    #[error("the CUDA driver reports no GPU")]
    NoDevice,
    #[error("NVRTC (libnvrtc.so.13) could not be loaded")]
    NoCompiler,
    #[error("{0}")]
    Driver(String),
}

/// What the driver says about a GPU, obtained without creating a context (cheap, and harmless
/// while another process owns the GPU).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub info: DeviceInfo,
    /// e.g. "13.0".
    pub driver_version: String,
}

/// Identifies GPU 0 without creating a context.
pub fn probe() -> Result<Probe, Unavailable> {
    probe_ordinal(0).map(|(probe, _)| probe)
}

/// Identifies GPU `ordinal`; also returns the driver's raw version number.
fn probe_ordinal(ordinal: usize) -> Result<(Probe, i32), Unavailable> {
    if !driver_present() {
        return Err(Unavailable::NoDriver);
    }
    let version = raw_driver_version()
        .map_err(|e| unavailable("the CUDA driver could not report its version", e))?;
    result::init().map_err(|e| {
        if e.0 == CUresult::CUDA_ERROR_NO_DEVICE {
            Unavailable::NoDevice
        } else {
            unavailable("the CUDA driver could not start", e)
        }
    })?;
    let count = result::device::get_count()
        .map_err(|e| unavailable("the CUDA driver could not count its GPUs", e))?;
    if count <= 0 {
        return Err(Unavailable::NoDevice);
    }
    let index = c_int::try_from(ordinal)
        .ok()
        .filter(|&index| index < count)
        .ok_or_else(|| {
            Unavailable::Driver(format!(
                "GPU {ordinal} was asked for, but the CUDA driver reports only {count}"
            ))
        })?;
    let dev = result::device::get(index)
        .map_err(|e| unavailable("the CUDA driver could not open the GPU", e))?;
    let info = device_info(dev)
        .map_err(|e| unavailable("the CUDA driver could not describe the GPU", e))?;
    let mut driver_version = format_driver_version(version);
    if let Some(module) = std::fs::read_to_string("/proc/driver/nvidia/version")
        .ok()
        .and_then(|text| kernel_module_version(&text))
    {
        driver_version = format!("{driver_version} (NVIDIA {module})");
    }
    let probe = Probe {
        info,
        driver_version,
    };
    Ok((probe, version))
}

/// `cuDriverGetVersion`, which needs no `cuInit`.
fn raw_driver_version() -> Result<i32, DriverError> {
    let mut version: c_int = 0;
    // SAFETY: the driver writes one int through a pointer to a live local.
    unsafe { cu::cuDriverGetVersion(&mut version) }.result()?;
    Ok(version)
}

/// One device attribute.
fn attribute(dev: cu::CUdevice, attribute: CUdevice_attribute) -> Result<i32, DriverError> {
    // SAFETY: `dev` came from `cuDeviceGet` after a successful `cuInit`.
    unsafe { result::device::get_attribute(dev, attribute) }
}

fn device_info(dev: cu::CUdevice) -> Result<DeviceInfo, DriverError> {
    use CUdevice_attribute::*;
    let major = to_u32(attribute(
        dev,
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
    )?);
    let minor = to_u32(attribute(
        dev,
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
    )?);
    let uuid = result::device::get_uuid(dev)?;
    // SAFETY: `dev` came from `cuDeviceGet` after a successful `cuInit`.
    let memory_bytes = unsafe { result::device::total_mem(dev) }?;
    Ok(DeviceInfo {
        backend: "cuda".to_string(),
        name: result::device::get_name(dev)?,
        uuid: format_uuid(&uuid.bytes.map(|c| u8::from_ne_bytes(c.to_ne_bytes()))),
        arch: format!("sm_{major}{minor}"),
        compute_capability: (major, minor),
        sm_count: to_u32(attribute(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?),
        l2_bytes: to_u64(attribute(dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?),
        memory_bytes: u64::try_from(memory_bytes).unwrap_or(u64::MAX),
        memory_clock_khz: to_u64(attribute(dev, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?),
        bus_width_bits: to_u64(attribute(dev, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?),
        sm_clock_khz: to_u64(attribute(dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?),
        max_threads_per_sm: to_u32(attribute(
            dev,
            CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
        )?),
        max_shared_bytes_per_block: to_u64(attribute(
            dev,
            CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        )?),
    })
}

/// "13.0" from `cuDriverGetVersion`'s 13000 (major × 1000 + minor × 10).
/// The kernel module's version from `/proc/driver/nvidia/version`: the figure readers know
/// their driver by ("580.159.04"), beside the CUDA version the driver API reports.
fn kernel_module_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.starts_with("NVRM version:"))?;
    line.split_whitespace()
        .find(|word| word.chars().next().is_some_and(|c| c.is_ascii_digit()) && word.contains('.'))
        .map(str::to_string)
}

fn format_driver_version(version: i32) -> String {
    format!("{}.{}", version / 1000, (version % 1000) / 10)
}

/// A UUID as nvidia-smi prints it: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".
fn format_uuid(bytes: &[u8; 16]) -> String {
    let hex = |range: std::ops::Range<usize>| -> String {
        bytes[range].iter().map(|b| format!("{b:02x}")).collect()
    };
    format!(
        "GPU-{}-{}-{}-{}-{}",
        hex(0..4),
        hex(4..6),
        hex(6..8),
        hex(8..10),
        hex(10..16)
    )
}

/// A driver attribute that cannot be negative, as unsigned (0 if it somehow is).
fn to_u32(value: i32) -> u32 {
    u32::try_from(value).unwrap_or(0)
}

fn to_u64(value: i32) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// The driver's name and description of an error, e.g.
/// "CUDA_ERROR_OUT_OF_MEMORY: out of memory".
fn driver_message(error: &DriverError) -> String {
    let name = error.error_name().map(|s| s.to_string_lossy().into_owned());
    let text = error
        .error_string()
        .map(|s| s.to_string_lossy().into_owned());
    match (name, text) {
        (Ok(name), Ok(text)) => format!("{name}: {text}"),
        (Ok(name), Err(_)) => name,
        _ => format!("{:?}", error.0),
    }
}

fn driver_error(operation: &'static str, error: DriverError) -> DeviceError {
    DeviceError::new(operation, driver_message(&error))
}

fn unavailable(context: &str, error: DriverError) -> Unavailable {
    let hint = match error.0 {
        CUresult::CUDA_ERROR_DEVICE_UNAVAILABLE => {
            " (the GPU is busy: another process holds it in exclusive compute mode)"
        }
        CUresult::CUDA_ERROR_OUT_OF_MEMORY => " (another process is using the GPU's memory)",
        _ => "",
    };
    Unavailable::Driver(format!("{context}: {}{hint}", driver_message(&error)))
}

/// A loaded kernel.
#[derive(Debug)]
struct Kernel {
    name: String,
    function: CudaFunction,
    /// Kept with the function it was loaded from (the function also holds it alive).
    _module: Arc<CudaModule>,
    /// Byte size of each parameter, from `cuFuncGetParamInfo`; `None` if the driver could not
    /// say, in which case arguments are not checked.
    param_sizes: Option<Vec<usize>>,
    /// The kernel's current `MAX_DYNAMIC_SHARED_SIZE_BYTES`, raised on demand.
    dynamic_shared_limit: Cell<u32>,
}

/// One GPU with one stream; see [`Device`].
#[derive(Debug)]
pub struct CudaDevice {
    info: DeviceInfo,
    driver_version: String,
    start: CudaEvent,
    end: CudaEvent,
    buffers: Vec<CudaSlice<u8>>,
    kernels: Vec<Kernel>,
    /// The buffer `flush_l2` writes, allocated on first use.
    scratch: Option<CudaSlice<u8>>,
    /// cuBLAS for the library-transpose peer: loaded on first use, `Err` if absent.
    cublas: Option<Result<Cublas, String>>,
    flush_byte: u8,
    /// Host staging buffers for the host ↔ device labs: page-locked, and ordinary memory.
    pinned: Option<PinnedHostSlice<u8>>,
    pageable: Vec<u8>,
    stream: Arc<CudaStream>,
    ctx: Arc<CudaContext>,
}

impl CudaDevice {
    /// Opens GPU `ordinal`: retains its primary context and creates a stream and two timing
    /// events.
    pub fn open(ordinal: usize) -> Result<CudaDevice, Unavailable> {
        let (probe, version) = probe_ordinal(ordinal)?;
        if version < MIN_DRIVER_VERSION {
            return Err(Unavailable::Driver(format!(
                "the CUDA driver supports CUDA {}, kernelbook needs CUDA {} or newer \
                 (NVIDIA driver 580 or newer)",
                probe.driver_version,
                format_driver_version(MIN_DRIVER_VERSION)
            )));
        }
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| unavailable("the CUDA driver could not open the GPU", e))?;
        // SAFETY: the contract is that the caller orders work on buffers across streams. This
        // device creates exactly one stream, before any buffer exists, and allocates, uses and
        // frees every buffer on it, so stream order alone sequences all accesses and every free
        // comes after the last use. Turning tracking off means no event is recorded around
        // launches and copies, where it would sit inside the timed region.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx
            .new_stream()
            .map_err(|e| unavailable("the CUDA driver could not create a stream", e))?;
        let timing_event = || {
            ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(|e| unavailable("the CUDA driver could not create an event", e))
        };
        let start = timing_event()?;
        let end = timing_event()?;
        Ok(CudaDevice {
            info: probe.info,
            driver_version: probe.driver_version,
            start,
            end,
            buffers: Vec::new(),
            kernels: Vec::new(),
            scratch: None,
            cublas: None,
            flush_byte: 0xa5,
            pinned: None,
            pageable: Vec::new(),
            stream,
            ctx,
        })
    }

    fn buffer(&self, id: BufferId) -> Result<&CudaSlice<u8>, DeviceError> {
        self.buffers
            .get(id.0)
            .ok_or_else(|| DeviceError::new("buffer", format!("no buffer {}", id.0)))
    }

    fn kernel(&self, id: KernelId) -> Result<&Kernel, DeviceError> {
        self.kernels
            .get(id.0)
            .ok_or_else(|| DeviceError::new("kernel", format!("no kernel {}", id.0)))
    }

    /// Raises the kernel's dynamic shared memory limit to `bytes` if needed: beyond 48 KiB
    /// (less the static shared memory) the driver refuses launches until the kernel opts in.
    fn ensure_dynamic_shared(
        &self,
        operation: &'static str,
        kernel: &Kernel,
        bytes: u32,
    ) -> Result<(), DeviceError> {
        if bytes <= kernel.dynamic_shared_limit.get() {
            return Ok(());
        }
        let value = i32::try_from(bytes).map_err(|_| {
            DeviceError::new(
                operation,
                format!("{bytes} bytes of shared memory is too many"),
            )
        })?;
        self.ctx
            .bind_to_thread()
            .map_err(|e| driver_error(operation, e))?;
        kernel
            .function
            .set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                value,
            )
            .map_err(|e| {
                DeviceError::new(
                    operation,
                    format!(
                        "kernel `{}` cannot have {bytes} bytes of dynamic shared memory: {}",
                        kernel.name,
                        driver_message(&e)
                    ),
                )
            })?;
        kernel.dynamic_shared_limit.set(bytes);
        Ok(())
    }

    fn launch(
        &self,
        kernel: KernelId,
        shape: &LaunchShape,
        args: &[KernelArg],
    ) -> Result<(), DeviceError> {
        let kernel = self.kernel(kernel)?;
        check_args(kernel, args)?;
        self.ensure_dynamic_shared("launch", kernel, shape.shared_bytes)?;
        let mut builder = self.stream.launch_builder(&kernel.function);
        for arg in args {
            // Scalars are passed by reference into `args`, which outlives the launch call; the
            // driver copies every parameter when the launch is queued.
            match arg {
                KernelArg::Buffer(id) => builder.arg(self.buffer(*id)?),
                KernelArg::I32(value) => builder.arg(value),
                KernelArg::I64(value) => builder.arg(value),
                KernelArg::U32(value) => builder.arg(value),
                KernelArg::U64(value) => builder.arg(value),
                KernelArg::F32(value) => builder.arg(value),
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
        // behind it. The pointers are to the device pointers inside `self.buffers` and to the
        // scalars inside `args`, both borrowed for this whole call. `check_args` has matched
        // their number and sizes against the kernel's parameter list where the driver reports
        // it; that they mean what the kernel expects (the argument types come from the lab file)
        // is the lab author's responsibility, as is staying inside the buffers, which outlive
        // the launch because buffers are only freed when the device is dropped, after a
        // synchronize.
        unsafe { builder.launch(config) }.map_err(|e| {
            DeviceError::new(
                "launch",
                format!("kernel `{}`: {}", kernel.name, driver_message(&e)),
            )
        })?;
        // Errors cudarc could only record (in `Drop`s) surface here rather than later.
        self.ctx.check_err().map_err(|e| driver_error("launch", e))
    }

    /// The staging buffer of that kind into the first `bytes` of `dst`.
    fn host_to_device(
        &mut self,
        dst: BufferId,
        bytes: usize,
        pinned: bool,
    ) -> Result<(), DeviceError> {
        let slice = self
            .buffers
            .get_mut(dst.0)
            .ok_or_else(|| DeviceError::new("host to device", format!("no buffer {}", dst.0)))?;
        let mut view = slice
            .try_slice_mut(0..bytes)
            .ok_or_else(|| DeviceError::new("host to device", "range out of bounds"))?;
        let result = if pinned {
            let staged = self
                .pinned
                .as_ref()
                .filter(|p| p.len() == bytes)
                .ok_or_else(|| {
                    DeviceError::new("host to device", "nothing staged in pinned memory")
                })?;
            self.stream.memcpy_htod(staged, &mut view)
        } else {
            let staged = self.pageable.get(..bytes).ok_or_else(|| {
                DeviceError::new("host to device", "nothing staged in pageable memory")
            })?;
            self.stream.memcpy_htod(staged, &mut view)
        };
        result.map_err(|e| driver_error("host to device", e))
    }

    /// The first `bytes` of `src` into the staging buffer of that kind.
    fn device_to_host(
        &mut self,
        src: BufferId,
        bytes: usize,
        pinned: bool,
    ) -> Result<(), DeviceError> {
        let slice = self
            .buffers
            .get(src.0)
            .ok_or_else(|| DeviceError::new("device to host", format!("no buffer {}", src.0)))?;
        let view = slice
            .try_slice(0..bytes)
            .ok_or_else(|| DeviceError::new("device to host", "range out of bounds"))?;
        let result = if pinned {
            let staged = self
                .pinned
                .as_mut()
                .filter(|p| p.len() == bytes)
                .ok_or_else(|| {
                    DeviceError::new("device to host", "no pinned buffer of that size")
                })?;
            self.stream.memcpy_dtoh(&view, staged)
        } else {
            if self.pageable.len() != bytes {
                self.pageable.resize(bytes, 0);
            }
            self.stream.memcpy_dtoh(&view, self.pageable.as_mut_slice())
        };
        result.map_err(|e| driver_error("device to host", e))
    }

    fn copy(&mut self, dst: BufferId, src: BufferId, bytes: usize) -> Result<(), DeviceError> {
        if dst == src {
            return Err(DeviceError::new(
                "copy",
                "source and destination are the same buffer",
            ));
        }
        let (src_slice, dst_slice) = pair_mut(&mut self.buffers, src.0, dst.0)
            .ok_or_else(|| DeviceError::new("copy", "no such buffer"))?;
        if bytes > src_slice.len() || bytes > dst_slice.len() {
            return Err(DeviceError::new(
                "copy",
                format!(
                    "{bytes} bytes do not fit: the source has {}, the destination {}",
                    src_slice.len(),
                    dst_slice.len()
                ),
            ));
        }
        if bytes == 0 {
            return Ok(());
        }
        let src_view = src_slice
            .try_slice(0..bytes)
            .ok_or_else(|| DeviceError::new("copy", "source range out of bounds"))?;
        let mut dst_view = dst_slice
            .try_slice_mut(0..bytes)
            .ok_or_else(|| DeviceError::new("copy", "destination range out of bounds"))?;
        self.stream
            .memcpy_dtod(&src_view, &mut dst_view)
            .map_err(|e| driver_error("copy", e))
    }
}

/// Reads nvidia-smi's "1980, 3201" (SM and memory clocks in MHz).
fn parse_clocks(text: &str) -> Option<Clocks> {
    let mut numbers = text
        .lines()
        .next()?
        .split(',')
        .map(|v| v.trim().parse::<u32>());
    match (numbers.next(), numbers.next()) {
        (Some(Ok(sm_mhz)), Some(Ok(memory_mhz))) => Some(Clocks { sm_mhz, memory_mhz }),
        _ => None,
    }
}

/// A cuBLAS handle, destroyed with the device.
#[derive(Debug)]
struct Cublas(cublas_sys::cublasHandle_t);

// SAFETY: cuBLAS handles may be used from any host thread as long as no two threads use one at
// the same time; the handle lives inside `CudaDevice`, whose every use goes through `&mut self`
// or the runner's mutex.
unsafe impl Send for Cublas {}

impl Drop for Cublas {
    fn drop(&mut self) {
        // SAFETY: the handle was created by `cublasCreate` and is destroyed once, here.
        let _ = unsafe { cublas_result::destroy_handle(self.0) };
    }
}

impl CudaDevice {
    /// The cuBLAS handle, created on first use; an error if cuBLAS is not installed.
    fn cublas_handle(&mut self) -> Result<cublas_sys::cublasHandle_t, String> {
        if self.cublas.is_none() {
            self.cublas = Some(self.create_cublas());
        }
        match &self.cublas {
            Some(Ok(handle)) => Ok(handle.0),
            Some(Err(why)) => Err(why.clone()),
            None => Err("cuBLAS was not loaded".into()),
        }
    }

    fn create_cublas(&self) -> Result<Cublas, String> {
        // SAFETY: only tries to open the library; a missing one is reported, not loaded.
        if !unsafe { cublas_sys::is_culib_present() } {
            return Err("cuBLAS (libcublas.so.13) could not be loaded".into());
        }
        self.ctx
            .bind_to_thread()
            .map_err(|e| format!("cuBLAS: {}", driver_message(&e)))?;
        let handle = Cublas(
            cublas_result::create_handle().map_err(|e| format!("cuBLAS could not start: {e:?}"))?,
        );
        // SAFETY: a live handle and this device's live stream.
        unsafe { cublas_result::set_stream(handle.0, self.stream.cu_stream() as _) }
            .map_err(|e| format!("cuBLAS could not use the stream: {e:?}"))?;
        Ok(handle)
    }

    /// cuBLAS `geam` with A transposed: the library's answer to "transpose this matrix".
    fn library_transpose(
        &mut self,
        dst: BufferId,
        src: BufferId,
        rows: usize,
        cols: usize,
    ) -> Result<(), DeviceError> {
        let handle = self
            .cublas_handle()
            .map_err(|why| DeviceError::new("cuBLAS transpose", why))?;
        let bytes = rows
            .checked_mul(cols)
            .and_then(|n| n.checked_mul(4))
            .ok_or_else(|| DeviceError::new("cuBLAS transpose", "the matrix is too large"))?;
        let dims = |v: usize| {
            c_int::try_from(v).map_err(|_| {
                DeviceError::new("cuBLAS transpose", format!("{v} does not fit an int"))
            })
        };
        let (m, n) = (dims(rows)?, dims(cols)?);
        if dst == src {
            return Err(DeviceError::new(
                "cuBLAS transpose",
                "source and destination are the same buffer",
            ));
        }
        let (src_slice, dst_slice) = pair_mut(&mut self.buffers, src.0, dst.0)
            .ok_or_else(|| DeviceError::new("cuBLAS transpose", "no such buffer"))?;
        if bytes > src_slice.len() || bytes > dst_slice.len() {
            return Err(DeviceError::new(
                "cuBLAS transpose",
                format!("{rows} × {cols} floats do not fit the buffers"),
            ));
        }
        let (src_ptr, _src_sync) = src_slice.device_ptr(&self.stream);
        let (dst_ptr, _dst_sync) = dst_slice.device_ptr_mut(&self.stream);
        let (alpha, beta) = (1.0f32, 0.0f32);
        // Row-major rows × cols input is column-major A (cols × rows, lda = cols); the output
        // is column-major rows × cols (ldc = rows): C = alpha·Aᵀ + beta·B with beta = 0 and B
        // aliasing C, which cuBLAS allows when ldb = ldc and B is not transposed.
        // SAFETY: both pointers are live allocations of at least rows·cols floats (checked
        // above), on the stream the handle is bound to; alpha and beta are host locals.
        unsafe {
            cublas_sys::cublasSgeam(
                handle,
                cublas_sys::cublasOperation_t::CUBLAS_OP_T,
                cublas_sys::cublasOperation_t::CUBLAS_OP_N,
                m,
                n,
                &alpha,
                src_ptr as *const f32,
                n,
                &beta,
                dst_ptr as *const f32,
                m,
                dst_ptr as *mut f32,
                m,
            )
        }
        .result()
        .map_err(|e| DeviceError::new("cuBLAS transpose", format!("{e:?}")))
    }
}

/// Checks the arguments against the parameter sizes the driver reported for the kernel, so that
/// a wrong argument list is an error rather than the driver reading past it.
fn check_args(kernel: &Kernel, args: &[KernelArg]) -> Result<(), DeviceError> {
    match &kernel.param_sizes {
        Some(sizes) => super::check_kernel_args(&kernel.name, sizes, args),
        // The driver could not say: nothing to check against.
        None => Ok(()),
    }
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

/// Queues a memset of the whole slice on `stream`.
fn memset(
    ctx: &CudaContext,
    stream: &CudaStream,
    slice: &mut CudaSlice<u8>,
    byte: u8,
) -> Result<(), DriverError> {
    ctx.bind_to_thread()?;
    let bytes = slice.len();
    let (ptr, _record) = slice.device_ptr_mut(stream);
    // SAFETY: `ptr` is the start of a live allocation of `bytes` bytes owned by `slice`, which
    // is borrowed mutably for this call and was allocated on `stream`; any byte pattern is a
    // valid `u8`.
    unsafe { result::memset_d8_async(ptr, byte, bytes, stream.cu_stream()) }
}

/// Byte size of each of the function's parameters, or `None` if the driver cannot say.
fn param_sizes(function: &CudaFunction) -> Option<Vec<usize>> {
    let mut sizes = Vec::new();
    for index in 0..MAX_CHECKED_PARAMS {
        let mut offset = 0usize;
        let mut size = 0usize;
        // SAFETY: the function handle is valid while `function` (which holds its module) lives;
        // the driver writes two `usize`s through pointers to live locals.
        let status = unsafe {
            cu::cuFuncGetParamInfo(function.cu_function(), index, &mut offset, &mut size)
        };
        match status {
            CUresult::CUDA_SUCCESS => sizes.push(size),
            // Documented answer for an index past the last parameter.
            CUresult::CUDA_ERROR_INVALID_VALUE => return Some(sizes),
            _ => return None,
        }
    }
    None
}

impl Drop for CudaDevice {
    /// Waits for queued work before the buffers and modules it uses are released.
    fn drop(&mut self) {
        let _ = self.stream.synchronize();
    }
}

impl Device for CudaDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn driver_version(&self) -> String {
        self.driver_version.clone()
    }

    fn memory(&self) -> Result<(u64, u64), DeviceError> {
        let (free, total) = self
            .ctx
            .mem_get_info()
            .map_err(|e| driver_error("memory info", e))?;
        Ok((free as u64, total as u64))
    }

    fn alloc(&mut self, bytes: usize) -> Result<BufferId, DeviceError> {
        if bytes == 0 {
            return Err(DeviceError::new("alloc", "cannot allocate an empty buffer"));
        }
        let buffer = self
            .stream
            .alloc_zeros::<u8>(bytes)
            .map_err(|e| driver_error("alloc", e))?;
        self.buffers.push(buffer);
        Ok(BufferId(self.buffers.len() - 1))
    }

    /// Writes `data` to the start of the buffer. Returns once `data` has been read (the driver
    /// stages pageable memory before returning).
    fn upload(&mut self, buffer: BufferId, data: &[u8]) -> Result<(), DeviceError> {
        let slice = self
            .buffers
            .get_mut(buffer.0)
            .ok_or_else(|| DeviceError::new("upload", format!("no buffer {}", buffer.0)))?;
        if data.len() > slice.len() {
            return Err(DeviceError::new(
                "upload",
                format!(
                    "{} bytes do not fit in a {}-byte buffer",
                    data.len(),
                    slice.len()
                ),
            ));
        }
        if data.is_empty() {
            return Ok(());
        }
        let mut view = slice
            .try_slice_mut(0..data.len())
            .ok_or_else(|| DeviceError::new("upload", "range out of bounds"))?;
        self.stream
            .memcpy_htod(data, &mut view)
            .map_err(|e| driver_error("upload", e))
    }

    /// Reads the first `out.len()` bytes of the buffer, after all queued work.
    fn download(&mut self, buffer: BufferId, out: &mut [u8]) -> Result<(), DeviceError> {
        let slice = self
            .buffers
            .get(buffer.0)
            .ok_or_else(|| DeviceError::new("download", format!("no buffer {}", buffer.0)))?;
        if out.len() > slice.len() {
            return Err(DeviceError::new(
                "download",
                format!("{} bytes asked of a {}-byte buffer", out.len(), slice.len()),
            ));
        }
        if !out.is_empty() {
            let view = slice
                .try_slice(0..out.len())
                .ok_or_else(|| DeviceError::new("download", "range out of bounds"))?;
            self.stream
                .memcpy_dtoh(&view, out)
                .map_err(|e| driver_error("download", e))?;
        }
        self.stream
            .synchronize()
            .map_err(|e| driver_error("download", e))
    }

    fn fill(&mut self, buffer: BufferId, byte: u8) -> Result<(), DeviceError> {
        let slice = self
            .buffers
            .get_mut(buffer.0)
            .ok_or_else(|| DeviceError::new("fill", format!("no buffer {}", buffer.0)))?;
        memset(&self.ctx, &self.stream, slice, byte).map_err(|e| driver_error("fill", e))
    }

    fn load(&mut self, kernel: &CompiledKernel) -> Result<(KernelId, LoadedKernel), DeviceError> {
        // `cuModuleLoadData` takes a bare pointer and parses what it finds there, so only
        // hand it something that is at least an ELF image (a CUBIN is one).
        if !kernel.image.starts_with(b"\x7fELF") {
            return Err(DeviceError::new(
                "load",
                format!("the image of `{}` is not a CUBIN", kernel.name),
            ));
        }
        // cudarc's `load_function` would panic on a NUL in the name.
        if kernel.name.contains('\0') {
            return Err(DeviceError::new(
                "load",
                "the kernel name contains a NUL byte",
            ));
        }
        // `Ptx::from_binary` loads through `cuModuleLoadData`, which accepts a CUBIN.
        let module = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(kernel.image.clone()))
            .map_err(|e| driver_error("load", e))?;
        let function = module.load_function(&kernel.name).map_err(|e| {
            DeviceError::new(
                "load",
                format!(
                    "no kernel `{}` in the image (is it declared extern \"C\" __global__?): {}",
                    kernel.name,
                    driver_message(&e)
                ),
            )
        })?;
        let loaded = LoadedKernel {
            registers: to_u32(function.num_regs().map_err(|e| driver_error("load", e))?),
            local_bytes: to_u32(
                function
                    .local_size_bytes()
                    .map_err(|e| driver_error("load", e))?,
            ),
            shared_bytes: to_u32(
                function
                    .shared_size_bytes()
                    .map_err(|e| driver_error("load", e))?,
            ),
        };
        let dynamic_shared_limit = to_u32(
            function
                .get_attribute(
                    CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                )
                .map_err(|e| driver_error("load", e))?,
        );
        self.ctx
            .bind_to_thread()
            .map_err(|e| driver_error("load", e))?;
        let param_sizes = param_sizes(&function);
        self.kernels.push(Kernel {
            name: kernel.name.clone(),
            function,
            _module: module,
            param_sizes,
            dynamic_shared_limit: Cell::new(dynamic_shared_limit),
        });
        Ok((KernelId(self.kernels.len() - 1), loaded))
    }

    /// May raise the kernel's dynamic shared memory limit, as a launch of that shape would.
    fn blocks_per_sm(
        &self,
        kernel: KernelId,
        block_threads: u32,
        dynamic_shared_bytes: u32,
    ) -> Result<u32, DeviceError> {
        let kernel = self.kernel(kernel)?;
        self.ensure_dynamic_shared("occupancy", kernel, dynamic_shared_bytes)?;
        self.ctx
            .bind_to_thread()
            .map_err(|e| driver_error("occupancy", e))?;
        kernel
            .function
            .occupancy_max_active_blocks_per_multiprocessor(
                block_threads,
                dynamic_shared_bytes as usize,
                None,
            )
            .map_err(|e| driver_error("occupancy", e))
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
            } => self.library_transpose(dst, src, rows, cols),
            Op::HostToDevice { dst, bytes, pinned } => self.host_to_device(dst, bytes, pinned),
            Op::DeviceToHost { src, bytes, pinned } => self.device_to_host(src, bytes, pinned),
            Op::Sequence(ops) => ops.iter().try_for_each(|op| self.run(op)),
        }
    }

    fn stage_host(&mut self, pinned: bool, data: &[u8]) -> Result<(), DeviceError> {
        if !pinned {
            self.pageable.clear();
            self.pageable.extend_from_slice(data);
            return Ok(());
        }
        if self.pinned.as_ref().is_none_or(|p| p.len() != data.len()) {
            self.pinned = None;
            // SAFETY: the allocation is written in full below before any copy reads it.
            // Flags 0: ordinary page-locked memory (cudaMallocHost), not write-combined, which
            // the CPU reads back slowly.
            let slice = unsafe { self.ctx.alloc_pinned_with_flags::<u8>(data.len(), 0) }
                .map_err(|e| driver_error("pinned allocation", e))?;
            self.pinned = Some(slice);
        }
        let slice = self
            .pinned
            .as_mut()
            .ok_or_else(|| DeviceError::new("stage", "no pinned buffer"))?;
        slice
            .as_mut_slice()
            .map_err(|e| driver_error("stage", e))?
            .copy_from_slice(data);
        Ok(())
    }

    fn read_host(&mut self, pinned: bool, out: &mut [u8]) -> Result<(), DeviceError> {
        self.synchronize()?;
        let staged: &[u8] = if pinned {
            match &self.pinned {
                Some(slice) => slice.as_slice().map_err(|e| driver_error("read host", e))?,
                None => &[],
            }
        } else {
            &self.pageable
        };
        let staged = staged.get(..out.len()).ok_or_else(|| {
            DeviceError::new(
                "read host",
                format!("the staging buffer is smaller than {} bytes", out.len()),
            )
        })?;
        out.copy_from_slice(staged);
        Ok(())
    }

    fn clocks(&self) -> Option<Clocks> {
        // nvidia-smi reads the clocks through NVML; the runner only reads them.
        let output = std::process::Command::new("nvidia-smi")
            .args([
                "--query-gpu=clocks.sm,clocks.mem",
                "--format=csv,noheader,nounits",
                "-i",
                &self.info.uuid,
            ])
            .output()
            .ok()?;
        parse_clocks(&String::from_utf8_lossy(&output.stdout))
    }

    fn transpose_library(&mut self) -> Result<String, String> {
        let handle = self.cublas_handle()?;
        let mut version: c_int = 0;
        // SAFETY: a live handle; cuBLAS writes one int through a pointer to a local.
        let _ = unsafe { cublas_sys::cublasGetVersion_v2(handle, &mut version) };
        Ok(format!(
            "cuBLAS {}.{} geam",
            version / 10000,
            (version % 10000) / 100
        ))
    }

    fn time(&mut self, op: &Op<'_>) -> Result<f64, DeviceError> {
        self.start
            .record(&self.stream)
            .map_err(|e| driver_error("time", e))?;
        self.run(op)?;
        self.end
            .record(&self.stream)
            .map_err(|e| driver_error("time", e))?;
        self.end
            .synchronize()
            .map_err(|e| driver_error("time", e))?;
        let ms = self
            .start
            .elapsed_ms(&self.end)
            .map_err(|e| driver_error("time", e))?;
        Ok(f64::from(ms))
    }

    fn flush_l2(&mut self) -> Result<(), DeviceError> {
        let scratch = match &mut self.scratch {
            Some(scratch) => scratch,
            empty => {
                let bytes = self.info.l2_bytes.saturating_mul(2).max(MIN_FLUSH_BYTES);
                let bytes = usize::try_from(bytes).map_err(|_| {
                    DeviceError::new("flush L2", format!("{bytes} bytes is too large"))
                })?;
                let slice = self
                    .stream
                    .alloc_zeros::<u8>(bytes)
                    .map_err(|e| driver_error("flush L2", e))?;
                empty.insert(slice)
            }
        };
        // A different value each time, so no write could be skipped as a no-op.
        self.flush_byte = !self.flush_byte;
        memset(&self.ctx, &self.stream, scratch, self.flush_byte)
            .map_err(|e| driver_error("flush L2", e))
    }

    fn synchronize(&mut self) -> Result<(), DeviceError> {
        self.stream
            .synchronize()
            .map_err(|e| driver_error("synchronize", e))
    }

    fn start_loading_transpose_library(&self) {
        if self.cublas.is_none() {
            // SAFETY: only opens the shared library (cuBLAS and cuBLASLt, hundreds of MB) once,
            // behind a lock; no cuBLAS function is called.
            std::thread::spawn(|| unsafe { cublas_sys::is_culib_present() });
        }
    }

    fn release_lab(&mut self) -> Result<(), DeviceError> {
        self.synchronize()?;
        // Dropping them frees the memory and unloads the modules. The flush buffer and cuBLAS
        // stay: every lab uses the one, and loading the other is slow.
        self.buffers.clear();
        self.kernels.clear();
        self.pinned = None;
        self.pageable = Vec::new();
        Ok(())
    }
}

/// NVRTC, the runtime compiler: CUDA C++ source to a CUBIN. Needs no GPU.
#[derive(Debug, Clone)]
pub struct Nvrtc {
    version: String,
}

impl Nvrtc {
    /// Loads NVRTC and reads its version.
    pub fn load() -> Result<Nvrtc, Unavailable> {
        if !nvrtc_present() {
            return Err(Unavailable::NoCompiler);
        }
        let mut major: c_int = 0;
        let mut minor: c_int = 0;
        // SAFETY: NVRTC writes one int through each pointer, both to live locals.
        unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) }
            .result()
            .map_err(|e| {
                Unavailable::Driver(format!(
                    "NVRTC could not report its version: {}",
                    nvrtc_message(e)
                ))
            })?;
        Ok(Nvrtc {
            version: format!("NVRTC {major}.{minor}"),
        })
    }

    /// The file the NVRTC library was loaded from, where the platform says (Linux).
    pub fn library_path(&self) -> Option<String> {
        let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
        loaded_library(&maps, "libnvrtc")
    }
}

/// The path of the first mapped file whose name starts with `prefix` in a `/proc/self/maps`
/// listing.
fn loaded_library(maps: &str, prefix: &str) -> Option<String> {
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| {
            std::path::Path::new(path)
                .file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with(prefix) && !name.contains("builtins"))
        })
        .map(str::to_string)
}

/// Every option given to NVRTC: a real architecture (so NVRTC emits a CUBIN, not only PTX),
/// C++17, line info for profilers, ptxas's resource report in the log, then the lab's flags.
fn nvrtc_options(arch: &str, flags: &[String]) -> Vec<String> {
    let mut options = vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".to_string(),
        "-lineinfo".to_string(),
        "--ptxas-options=-v".to_string(),
    ];
    options.extend(flags.iter().cloned());
    options
}

/// NVRTC's description of an error.
fn nvrtc_message(error: NvrtcError) -> String {
    // SAFETY: `nvrtcGetErrorString` returns a pointer to a static NUL-terminated string (or
    // null, checked below) and has no other effect.
    let text = unsafe { nvrtc_sys::nvrtcGetErrorString(error.0) };
    if text.is_null() {
        return format!("{:?}", error.0);
    }
    // SAFETY: non-null, static and NUL-terminated, as above.
    unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}

/// Text from a NUL-terminated `c_char` buffer, without the terminator.
fn text_from_c_chars(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .map(|c| u8::from_ne_bytes(c.to_ne_bytes()))
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// An NVRTC program, destroyed on drop whatever path the compile takes.
struct Program(nvrtc_sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the handle came from `nvrtcCreateProgram` and is destroyed only here.
        let _ = unsafe { nvrtc_result::destroy_program(self.0) };
    }
}

impl Program {
    fn log(&self) -> Result<String, NvrtcError> {
        // SAFETY: the program is live until `self` is dropped.
        let log = unsafe { nvrtc_result::get_program_log(self.0) }?;
        Ok(text_from_c_chars(&log))
    }

    fn cubin(&self) -> Result<Vec<u8>, NvrtcError> {
        let mut size = 0usize;
        // SAFETY: the program is live; NVRTC writes one `usize` through a pointer to a local.
        unsafe { nvrtc_sys::nvrtcGetCUBINSize(self.0, &mut size) }.result()?;
        let mut cubin = vec![0u8; size];
        if size > 0 {
            // SAFETY: the program is live and `cubin` has exactly the `size` bytes NVRTC said
            // it would write.
            unsafe { nvrtc_sys::nvrtcGetCUBIN(self.0, cubin.as_mut_ptr().cast::<c_char>()) }
                .result()?;
        }
        Ok(cubin)
    }
}

impl Compiler for Nvrtc {
    fn version(&self) -> String {
        self.version.clone()
    }

    fn compile(&self, request: &CompileRequest<'_>) -> Result<CompiledKernel, CompileError> {
        let options = nvrtc_options(request.arch, request.flags);
        // cudarc's `compile_program` would panic on a NUL in an option.
        if let Some(bad) = options.iter().find(|option| option.contains('\0')) {
            return Err(CompileError::Compiler(format!(
                "the compiler option {bad:?} contains a NUL byte"
            )));
        }
        let (name, source) = super::program_strings(request, &options)?;
        // Declared after `source` and `name`, so dropped (destroyed) before them: NVRTC may
        // keep pointers to both until then.
        let program = Program(
            nvrtc_result::create_program(&source, Some(&name)).map_err(|e| {
                CompileError::Compiler(format!(
                    "NVRTC could not create the program: {}",
                    nvrtc_message(e)
                ))
            })?,
        );
        // SAFETY: the program is live until `program` is dropped; no option contains a NUL.
        let compiled = unsafe { nvrtc_result::compile_program(program.0, &options) };
        let log = program
            .log()
            .unwrap_or_else(|e| format!("(NVRTC could not return its log: {})", nvrtc_message(e)));
        match compiled {
            Ok(()) => {}
            Err(
                e @ NvrtcError(
                    nvrtcResult::NVRTC_ERROR_COMPILATION | nvrtcResult::NVRTC_ERROR_INVALID_OPTION,
                ),
            ) => {
                let log = if log.trim().is_empty() {
                    nvrtc_message(e)
                } else {
                    log
                };
                return Err(CompileError::Rejected { log, options });
            }
            Err(e) => {
                return Err(CompileError::Compiler(format!(
                    "NVRTC failed: {}\n{log}",
                    nvrtc_message(e)
                )));
            }
        }
        let image = program.cubin().map_err(|e| {
            CompileError::Compiler(format!(
                "NVRTC produced no CUBIN for {}: {}",
                request.arch,
                nvrtc_message(e)
            ))
        })?;
        if image.is_empty() {
            return Err(CompileError::Compiler(format!(
                "NVRTC produced no CUBIN for {}: the architecture must be a real one such as \
                 sm_90, not a virtual one such as compute_90",
                request.arch
            )));
        }
        Ok(CompiledKernel {
            name: request.name.to_string(),
            image,
            log,
            options,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_clocks_from_nvidia_smi() {
        assert_eq!(
            parse_clocks("1980, 3201\n"),
            Some(Clocks {
                sm_mhz: 1980,
                memory_mhz: 3201
            })
        );
        assert_eq!(parse_clocks("[N/A], 3201\n"), None);
        assert_eq!(parse_clocks(""), None);
    }

    #[test]
    fn finds_the_loaded_library_in_the_memory_map() {
        let maps = "7f00-7f01 r--p 00000000 08:01 1 /usr/lib/libc.so.6\n\
                    7f02-7f03 r-xp 00000000 08:01 2 /opt/cuda/lib/libnvrtc-builtins.so.13.0\n\
                    7f04-7f05 r-xp 00000000 08:01 3 /opt/cuda/lib/libnvrtc.so.13\n";
        assert_eq!(
            loaded_library(maps, "libnvrtc").as_deref(),
            Some("/opt/cuda/lib/libnvrtc.so.13")
        );
        assert_eq!(loaded_library(maps, "libcuda"), None);
    }

    #[test]
    fn reads_the_kernel_module_version() {
        let text = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Tue Oct  7 16:32:12 UTC 2025\nGCC version:  gcc version 12.2.0\n";
        assert_eq!(kernel_module_version(text).as_deref(), Some("580.159.04"));
        assert_eq!(kernel_module_version("garbage"), None);
    }

    #[test]
    fn driver_versions_read_as_major_dot_minor() {
        assert_eq!(format_driver_version(13000), "13.0");
        assert_eq!(format_driver_version(12080), "12.8");
        assert_eq!(format_driver_version(12020), "12.2");
        assert_eq!(format_driver_version(11040), "11.4");
        assert_eq!(format_driver_version(13010), "13.1");
    }

    #[test]
    fn uuids_read_like_nvidia_smi() {
        let bytes = [
            0x4f, 0x0a, 0x1b, 0x2c, 0x3d, 0x4e, 0x5f, 0x60, 0x71, 0x82, 0x93, 0xa4, 0xb5, 0xc6,
            0xd7, 0xe8,
        ];
        assert_eq!(
            format_uuid(&bytes),
            "GPU-4f0a1b2c-3d4e-5f60-7182-93a4b5c6d7e8"
        );
        assert_eq!(
            format_uuid(&[0; 16]),
            "GPU-00000000-0000-0000-0000-000000000000"
        );
    }

    #[test]
    fn negative_attributes_read_as_zero() {
        assert_eq!(to_u32(-1), 0);
        assert_eq!(to_u32(132), 132);
        assert_eq!(to_u64(-5), 0);
        assert_eq!(to_u64(6144), 6144);
    }

    #[test]
    fn options_ask_for_a_cubin_and_the_resource_report() {
        let options = nvrtc_options("sm_90", &["-O3".to_string()]);
        assert_eq!(
            options,
            [
                "--gpu-architecture=sm_90",
                "--std=c++17",
                "-lineinfo",
                "--ptxas-options=-v",
                "-O3"
            ]
        );
    }

    #[test]
    fn c_text_stops_at_the_terminator() {
        let chars: Vec<c_char> = b"ptxas info\0junk"
            .iter()
            .map(|&b| c_char::from_ne_bytes([b]))
            .collect();
        assert_eq!(text_from_c_chars(&chars), "ptxas info");
        assert_eq!(text_from_c_chars(&[]), "");
    }

    #[test]
    fn pairs_of_distinct_buffers() {
        let mut v = vec![10, 20, 30];
        if let Some((a, b)) = pair_mut(&mut v, 2, 0) {
            assert_eq!((*a, *b), (30, 10));
            *b = 11;
        }
        assert_eq!(v, [11, 20, 30]);
        let pair = pair_mut(&mut v, 0, 1).map(|(a, b)| (*a, *b));
        assert_eq!(pair, Some((11, 20)));
        assert!(pair_mut(&mut v, 1, 1).is_none());
        assert!(pair_mut(&mut v, 0, 3).is_none());
    }

    #[test]
    fn unavailable_messages_are_one_line() {
        for reason in [
            Unavailable::NoDriver,
            Unavailable::NoDevice,
            Unavailable::NoCompiler,
            Unavailable::Driver("x".into()),
        ] {
            assert!(!reason.to_string().contains('\n'));
        }
    }

    #[test]
    fn handles_can_move_between_threads() {
        fn send<T: Send>() {}
        fn send_sync<T: Send + Sync>() {}
        send::<CudaDevice>();
        send_sync::<Nvrtc>();
    }
}
