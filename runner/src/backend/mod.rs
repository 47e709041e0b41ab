//! The seam between measurement logic and a vendor's GPU API.
//!
//! [`Device`] is what the engine ([`crate::engine`]) needs from a GPU: buffers, loaded
//! kernels, launches and event timing, all through plain handles so that no raw pointer or
//! `unsafe` leaves the backend module. [`Compiler`] turns a kernel's source into a loadable image
//! and needs no GPU, so kernels can be compiled on a machine without one. The CUDA backend
//! ([`cuda`]) implements both through cudarc, loaded at run time; what every GPU backend repeats
//! (buffer tables, host staging, the L2 flush, event timing) is written once in [`gpu`], on top
//! of a small trait of vendor primitives.

pub mod cuda;
#[cfg(any(test, feature = "testing"))]
pub mod fake;
pub mod gpu;
pub mod hip;
pub mod l2;
pub mod pipeline;
pub mod ptxas;
pub mod select;

pub use kernelbook_core::builtins::GemmPrecision;
use kernelbook_core::results::{DeviceApi, DeviceInfo, LaunchShape};
use kernelbook_core::spec::{ElemType, Swizzle};

/// A device buffer owned by a [`Device`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BufferId(pub usize);

/// A kernel loaded into a [`Device`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KernelId(pub usize);

/// A tensor map made by a [`Device`] ([`Device::tensor_map`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TensorMapId(pub usize);

/// What a tensor map describes, in the terms of the driver's `cuTensorMapEncodeTiled`: a dense
/// tensor of `dims` elements in `buffer` (innermost first, rows `strides` bytes apart), moved
/// in tiles of `box_dims`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TensorMapRequest<'a> {
    pub buffer: BufferId,
    pub elem: ElemType,
    pub dims: &'a [u64],
    /// The byte stride of each dimension after the innermost.
    pub strides: &'a [u64],
    pub box_dims: &'a [u32],
    pub swizzle: Swizzle,
}

/// The driver's tensor-map descriptor: 128 opaque bytes, aligned as CUDA 13 aligns it (128), passed to a kernel by
/// value (a `const __grid_constant__` parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, align(128))]
pub struct TensorMapBytes(pub [u8; TENSOR_MAP_BYTES]);

/// The size of a tensor-map kernel parameter.
pub const TENSOR_MAP_BYTES: usize = 128;

/// One kernel argument, already resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KernelArg {
    Buffer(BufferId),
    TensorMap(TensorMapId),
    I32(i32),
    I64(i64),
    U32(u32),
    U64(u64),
    F32(f32),
    F64(f64),
}

/// A unit of device work that can be run or timed.
#[derive(Debug, Clone, Copy)]
pub enum Op<'a> {
    Launch {
        kernel: KernelId,
        shape: LaunchShape,
        args: &'a [KernelArg],
    },
    /// The driver's device-to-device copy of `bytes` bytes.
    Copy {
        dst: BufferId,
        src: BufferId,
        bytes: usize,
    },
    /// The vendor library's transpose of a row-major `rows × cols` f32 matrix (cuBLAS `geam`
    /// on NVIDIA): a peer the course's kernels are compared with.
    Transpose {
        dst: BufferId,
        src: BufferId,
        rows: usize,
        cols: usize,
    },
    /// The vendor library's row-major matrix product `c = a · b` (`a` of `m × k`, `b` of
    /// `k × n` elements of `precision`, `c` fp32): cuBLAS `sgemm` on NVIDIA, without TF32, or
    /// `cublasGemmEx` on BF16 inputs with fp32 accumulation.
    Gemm {
        c: BufferId,
        a: BufferId,
        b: BufferId,
        m: usize,
        n: usize,
        k: usize,
        precision: GemmPrecision,
    },
    /// A copy from the host staging buffer ([`Device::stage_host`]) into `dst`: page-locked
    /// (`pinned`) or ordinary pageable memory.
    HostToDevice {
        dst: BufferId,
        bytes: usize,
        pinned: bool,
    },
    /// A copy of `src` into the host staging buffer of that kind.
    DeviceToHost {
        src: BufferId,
        bytes: usize,
        pinned: bool,
    },
    /// Several operations in order, timed as one (an unfused pipeline).
    Sequence(&'a [Op<'a>]),
    /// Chunks copied in, run and copied out on several streams ([`pipeline::Pipeline`]);
    /// [`Device::pipeline_spans`] gives the last timed run's events.
    Pipeline(&'a pipeline::Pipeline),
}

/// What the driver reports about a loaded kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LoadedKernel {
    pub registers: u32,
    pub local_bytes: u32,
    pub shared_bytes: u32,
}

/// What kind of failure a [`DeviceError`] is, which decides what the caller may do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceErrorKind {
    /// The device's context is unusable until the process ends (an illegal address, a trap, a
    /// kernel that timed out): the measuring process must be replaced.
    Sticky,
    /// The request was wrong (an argument list that does not match the kernel, a launch over a
    /// limit, an unknown handle); the device is as usable as before.
    Invalid,
    /// Not enough device or host memory for the request; the device is still usable.
    OutOfMemory,
    /// A library or feature this device or machine lacks (no cuBLAS, say).
    Unavailable,
    /// Anything else the driver reported; the device may still be usable.
    Other,
}

/// An error from the device, naming the operation that failed and the kind of failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{operation}: {message}")]
pub struct DeviceError {
    pub operation: &'static str,
    pub kind: DeviceErrorKind,
    pub message: String,
}

impl DeviceError {
    /// An error of kind [`DeviceErrorKind::Other`].
    pub fn new(operation: &'static str, message: impl Into<String>) -> Self {
        DeviceError::of_kind(DeviceErrorKind::Other, operation, message)
    }

    pub fn of_kind(
        kind: DeviceErrorKind,
        operation: &'static str,
        message: impl Into<String>,
    ) -> Self {
        DeviceError {
            operation,
            kind,
            message: message.into(),
        }
    }

    /// A request the device refused without harm (see [`DeviceErrorKind::Invalid`]).
    pub fn invalid(operation: &'static str, message: impl Into<String>) -> Self {
        DeviceError::of_kind(DeviceErrorKind::Invalid, operation, message)
    }

    /// A fault that leaves the context unusable (see [`DeviceErrorKind::Sticky`]).
    pub fn sticky(operation: &'static str, message: impl Into<String>) -> Self {
        DeviceError::of_kind(DeviceErrorKind::Sticky, operation, message)
    }

    /// Whether the device must be given up (its process replaced) after this error.
    pub fn is_sticky(&self) -> bool {
        self.kind == DeviceErrorKind::Sticky
    }
}

/// A GPU that can run a lab. Work is queued in order on one stream; `download`, `time` and
/// `synchronize` wait for it.
pub trait Device {
    fn info(&self) -> &DeviceInfo;
    /// The driver's version, e.g. "13.0".
    fn driver_version(&self) -> String;
    /// Free and total device memory in bytes.
    fn memory(&self) -> Result<(u64, u64), DeviceError>;
    fn alloc(&mut self, bytes: usize) -> Result<BufferId, DeviceError>;
    fn upload(&mut self, buffer: BufferId, data: &[u8]) -> Result<(), DeviceError>;
    fn download(&mut self, buffer: BufferId, out: &mut [u8]) -> Result<(), DeviceError>;
    /// Sets every byte of the buffer to `byte`.
    /// The first `bytes` of the buffer, after all queued work, in memory the device keeps for
    /// it (page-locked where it can): how a check reads an output, without a copy of its own.
    fn read_back(&mut self, buffer: BufferId, bytes: usize) -> Result<&[u8], DeviceError>;
    /// The device address of `buffer`, where the backend has one to give (a sanitizer's report
    /// names addresses; this tells which buffer one falls in).
    fn address(&self, _buffer: BufferId) -> Option<u64> {
        None
    }
    fn fill(&mut self, buffer: BufferId, byte: u8) -> Result<(), DeviceError>;
    fn load(&mut self, kernel: &CompiledKernel) -> Result<(KernelId, LoadedKernel), DeviceError>;
    /// Encodes a tensor map over one of the device's buffers, for kernels that move tiles
    /// through the bulk tensor copy engine; an error of kind [`DeviceErrorKind::Unavailable`]
    /// where the GPU or its API has none.
    fn tensor_map(&mut self, request: &TensorMapRequest<'_>) -> Result<TensorMapId, DeviceError>;
    /// Resident blocks per SM for this kernel at this block size (the occupancy calculator).
    fn blocks_per_sm(
        &self,
        kernel: KernelId,
        block_threads: u32,
        dynamic_shared_bytes: u32,
    ) -> Result<u32, DeviceError>;
    /// The vendor library behind [`Op::Transpose`] (e.g. "cuBLAS 13.0 geam"), or why there is
    /// none on this machine (an error of kind [`DeviceErrorKind::Unavailable`] where the
    /// library is missing; its `message` is the reason to show).
    fn transpose_library(&mut self) -> Result<String, DeviceError>;
    /// The vendor library behind [`Op::Gemm`] of that precision (e.g. "cuBLAS 13.1 sgemm"), or
    /// why there is none,
    /// as for [`Device::transpose_library`].
    fn gemm_library(&mut self, precision: GemmPrecision) -> Result<String, DeviceError>;
    /// Starts loading the library behind [`Op::Transpose`] on another thread, if it is one
    /// to load, so that a lab's first library transpose does not wait for it. Touches files
    /// only, not the GPU.
    fn start_loading_transpose_library(&self) {}
    /// Queues `op`.
    fn run(&mut self, op: &Op<'_>) -> Result<(), DeviceError>;
    /// Runs `op` between two device events and returns the time between them in milliseconds.
    fn time(&mut self, op: &Op<'_>) -> Result<f64, DeviceError>;
    /// The spans of the pipeline [`Device::time`] last timed, from its events, relative to
    /// its start event.
    fn pipeline_spans(
        &mut self,
    ) -> Result<Vec<kernelbook_core::results::timeline::Span>, DeviceError> {
        Err(pipeline::no_streams())
    }
    /// Evicts the L2 cache by writing a buffer larger than it (outside any timed region).
    fn flush_l2(&mut self) -> Result<(), DeviceError>;
    fn synchronize(&mut self) -> Result<(), DeviceError>;
    /// Makes the host staging buffer of that kind hold `data` (allocating it the first time).
    fn stage_host(&mut self, pinned: bool, data: &[u8]) -> Result<(), DeviceError>;
    /// Reads the first `out.len()` bytes of the host staging buffer of that kind.
    fn read_host(&mut self, pinned: bool, out: &mut [u8]) -> Result<(), DeviceError>;
    /// Waits for queued work, then frees every buffer, kernel and host staging buffer made
    /// since the device was opened (or since the last call): a measuring process measures lab
    /// after lab. Ids handed out before are invalid afterwards. An error means the device is
    /// unusable (a fault earlier poisoned its context).
    fn release_lab(&mut self) -> Result<(), DeviceError>;
    /// The SM and memory clocks now, where the driver reports them.
    fn clocks(&self) -> Option<kernelbook_core::results::Clocks> {
        None
    }
    /// Sets the L2 controls of `request` for the work queued after it (waiting for the work
    /// before) and reads them back. An error of kind [`DeviceErrorKind::Unavailable`] where the
    /// backend has none.
    fn set_l2(&mut self, request: &l2::L2Request) -> Result<l2::L2Report, DeviceError> {
        let _ = request;
        Err(l2::unsupported())
    }
}

/// What to compile.
#[derive(Debug, Clone, Copy)]
pub struct CompileRequest<'a> {
    /// The `extern "C"` entry point, also the program's name in compiler messages.
    pub name: &'a str,
    pub source: &'a str,
    /// e.g. "sm_90".
    pub arch: &'a str,
    pub flags: &'a [String],
}

/// A compiled kernel, ready to load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledKernel {
    pub name: String,
    /// The device code (a CUBIN for CUDA).
    pub image: Vec<u8>,
    /// The compiler's log (warnings and the resource report).
    pub log: String,
    /// Every option the compiler was given.
    pub options: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    /// The source did not compile; `log` is the compiler's message.
    #[error("{log}")]
    Rejected { log: String, options: Vec<String> },
    /// The compiler itself failed or is missing.
    #[error("{0}")]
    Compiler(String),
}

/// The program name (`NAME.cu`, what compiler messages call the source) and the source as C
/// strings for a run-time compiler. A NUL byte in the source is the author's error (`Rejected`);
/// one in the name is the caller's.
pub(crate) fn program_strings(
    request: &CompileRequest<'_>,
    options: &[String],
) -> Result<(std::ffi::CString, std::ffi::CString), CompileError> {
    let file = format!("{}.cu", request.name);
    let source = std::ffi::CString::new(request.source).map_err(|e| CompileError::Rejected {
        log: format!(
            "{file}: the source contains a NUL byte (at byte {})",
            e.nul_position()
        ),
        options: options.to_vec(),
    })?;
    let name = std::ffi::CString::new(file).map_err(|_| {
        CompileError::Compiler(format!(
            "the kernel name {:?} contains a NUL byte",
            request.name
        ))
    })?;
    Ok((name, source))
}

/// Turns kernel source into a loadable image. Needs no GPU.
/// `Send + Sync`: a lab's kernels are compiled on several threads at once (NVRTC and hiprtc
/// compile independent programs concurrently).
pub trait Compiler: Send + Sync {
    /// e.g. "NVRTC 13.0".
    fn version(&self) -> String;
    fn compile(&self, request: &CompileRequest<'_>) -> Result<CompiledKernel, CompileError>;
}

/// Checks the arguments against the parameter sizes in the kernel's metadata, so that a wrong
/// argument list is an error rather than the runtime reading past it.
pub(crate) fn check_kernel_args(
    name: &str,
    sizes: &[usize],
    args: &[KernelArg],
) -> Result<(), DeviceError> {
    if sizes.len() != args.len() {
        return Err(DeviceError::invalid(
            "launch",
            format!(
                "kernel `{name}` takes {} parameters, the lab passes {}",
                sizes.len(),
                args.len()
            ),
        ));
    }
    for (index, (&size, arg)) in sizes.iter().zip(args).enumerate() {
        let (kind, arg_size) = match arg {
            KernelArg::Buffer(_) => ("a buffer pointer", 8),
            KernelArg::TensorMap(_) => ("a tensor map", TENSOR_MAP_BYTES),
            KernelArg::I32(_) => ("an i32", 4),
            KernelArg::I64(_) => ("an i64", 8),
            KernelArg::U32(_) => ("a u32", 4),
            KernelArg::U64(_) => ("a u64", 8),
            KernelArg::F32(_) => ("an f32", 4),
            KernelArg::F64(_) => ("an f64", 8),
        };
        if size != arg_size {
            return Err(DeviceError::invalid(
                "launch",
                format!(
                    "parameter {} of kernel `{name}` is {size} bytes, the lab passes {kind} \
                     ({arg_size} bytes)",
                    index + 1
                ),
            ));
        }
    }
    Ok(())
}

/// Which vendor's GPU to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendChoice {
    /// An NVIDIA GPU through CUDA if there is one, else an AMD GPU through HIP.
    #[default]
    Auto,
    Cuda,
    Hip,
    /// The CPU stand-in of kernelbook's own tests ([`fake`]), so that a test can run the
    /// `kernelbook` binary end to end (`kernelbook serve` in the browser test) without a GPU.
    /// Only a build with the `testing` feature has it (`cargo test` builds one); any other
    /// build refuses the name ([`UnknownBackend::FakeNotBuilt`]).
    Fake,
}

/// A `--device` (or `KERNELBOOK_DEVICE`) value that names no backend this build has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnknownBackend {
    #[error("unknown device `{0}` (use auto, cuda or hip)")]
    Unknown(String),
    #[error("{FAKE_NOT_BUILT}")]
    FakeNotBuilt,
}

/// Why a build without the `testing` feature refuses the fake device.
const FAKE_NOT_BUILT: &str = "device `fake` is the CPU stand-in of kernelbook's own tests: only \
    a test build of kernelbook has it (`cargo test` builds one); use auto, cuda or hip";

/// The environment variable that chooses the device where `--device` does not.
pub const DEVICE_ENV: &str = "KERNELBOOK_DEVICE";

impl BackendChoice {
    /// The device [`DEVICE_ENV`] names: `None` where it is unset or empty, an error for any
    /// other value than `auto`, `cuda` or `hip` (one that is not UTF-8 included).
    pub fn from_env() -> Result<Option<BackendChoice>, UnknownBackend> {
        match std::env::var_os(DEVICE_ENV) {
            None => Ok(None),
            Some(value) if value.is_empty() => Ok(None),
            Some(value) => match value.to_str() {
                Some(text) => text.parse().map(Some),
                None => Err(UnknownBackend::Unknown(
                    value.to_string_lossy().into_owned(),
                )),
            },
        }
    }
}

impl std::str::FromStr for BackendChoice {
    type Err = UnknownBackend;
    fn from_str(text: &str) -> Result<Self, UnknownBackend> {
        match text {
            "auto" => Ok(BackendChoice::Auto),
            "cuda" => Ok(BackendChoice::Cuda),
            "hip" => Ok(BackendChoice::Hip),
            "fake" if cfg!(any(test, feature = "testing")) => Ok(BackendChoice::Fake),
            "fake" => Err(UnknownBackend::FakeNotBuilt),
            other => Err(UnknownBackend::Unknown(other.to_string())),
        }
    }
}

impl BackendChoice {
    /// The backend that described `info`, where this choice is `Auto`; any other choice is
    /// itself.
    pub fn or_of(self, info: &DeviceInfo) -> BackendChoice {
        match self {
            BackendChoice::Auto => BackendChoice::of(info),
            choice => choice,
        }
    }

    /// The backend that described `info`.
    pub fn of(info: &DeviceInfo) -> BackendChoice {
        match info.backend {
            DeviceApi::Cuda => BackendChoice::Cuda,
            DeviceApi::Hip => BackendChoice::Hip,
            DeviceApi::Fake => BackendChoice::Fake,
        }
    }

    /// Whether the Python rows (PyTorch, Triton) run on this backend's GPUs, where a child is
    /// shown only the GPU measured on (by its UUID).
    pub fn runs_python_rows(self) -> bool {
        self == BackendChoice::Cuda
    }

    /// Why NVIDIA's compute-sanitizer cannot check this backend's GPUs, where it cannot (the
    /// fake device of kernelbook's own tests runs under a stand-in tool).
    pub fn sanitizer_unavailable(self) -> Option<&'static str> {
        match self {
            BackendChoice::Cuda | BackendChoice::Fake => None,
            BackendChoice::Auto | BackendChoice::Hip => {
                Some("compute-sanitizer checks NVIDIA GPUs only, and this one is AMD's (HIP)")
            }
        }
    }

    /// This backend's compiler, which needs no GPU: what checks an edited kernel on a machine
    /// without one. `Auto` is CUDA's, else HIP's.
    pub fn compiler(self) -> Result<Box<dyn Compiler + Send>, BackendError> {
        let cuda = || cuda::Nvrtc::load().map(|c| Box::new(c) as Box<dyn Compiler + Send>);
        let hip = || hip::Hiprtc::load().map(|c| Box::new(c) as Box<dyn Compiler + Send>);
        match self {
            BackendChoice::Cuda => Ok(cuda()?),
            BackendChoice::Hip => Ok(hip()?),
            BackendChoice::Auto => {
                cuda().or_else(|cuda| hip().map_err(|hip| BackendError::Neither { cuda, hip }))
            }
            BackendChoice::Fake => fake_compiler(),
        }
    }
}

#[cfg(any(test, feature = "testing"))]
fn fake_compiler() -> Result<Box<dyn Compiler + Send>, BackendError> {
    Ok(Box::new(fake::FakeCompiler))
}

#[cfg(not(any(test, feature = "testing")))]
fn fake_compiler() -> Result<Box<dyn Compiler + Send>, BackendError> {
    Err(BackendError::FakeNotBuilt)
}

/// What every vendor's libraries need of the process, done first thing in `main`: NVRTC's
/// compute cache turned off, so that the compiler's log keeps ptxas's resource report.
///
/// # Safety
/// Call before any thread exists (it sets environment variables).
pub unsafe fn set_up_process() {
    // SAFETY: the caller's promise, passed on.
    unsafe { cuda::disable_compute_cache() };
}

/// The project whose folders (its `.venv-nvrtc`) the vendors' libraries are also looked for in.
pub fn set_project_root(root: &std::path::Path) {
    cuda::nvrtc_search::set_project_root(root);
}

/// Gives a child of this process (the measuring child, through ncu or compute-sanitizer too)
/// the environment that finds the vendor libraries this process found.
pub fn pass_environment_to_child(command: &mut std::process::Command) {
    cuda::nvrtc_search::pass_to_child(command);
}

/// A vendor whose runtime and compiler were found, with the GPU it reports.
pub struct Found {
    pub backend: BackendChoice,
    pub info: DeviceInfo,
    pub driver_version: String,
    pub compiler: Box<dyn Compiler + Send>,
}

impl std::fmt::Debug for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Found")
            .field("backend", &self.backend)
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

/// Why no backend could be found or opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    #[error(transparent)]
    Cuda(#[from] cuda::Unavailable),
    #[error(transparent)]
    Hip(#[from] hip::Unavailable),
    /// `Auto`: neither vendor is usable, for these reasons.
    #[error("{cuda}; {hip}")]
    Neither {
        cuda: cuda::Unavailable,
        hip: hip::Unavailable,
    },
    /// `Fake` asked of a build without the `testing` feature (a request from another build).
    #[error("{FAKE_NOT_BUILT}")]
    FakeNotBuilt,
    #[error("fake GPU {ordinal} was asked for, but only {count} are visible")]
    NoSuchFakeGpu { ordinal: usize, count: usize },
    /// A fake GPU that `KERNELBOOK_FAKE_BUSY` names, as a GPU another process holds.
    #[error("fake GPU {ordinal} is busy: another process holds it (KERNELBOOK_FAKE_BUSY)")]
    FakeBusy { ordinal: usize },
}

/// Finds the GPU and compiler `choice` allows, without opening the GPU. With `Auto`, CUDA is
/// tried first, then HIP; the error says why each was not usable.
pub fn find(choice: BackendChoice) -> Result<Found, BackendError> {
    find_gpu(choice, 0)
}

/// [`find`] for GPU `ordinal` of the vendor (counted as its driver counts them).
pub fn find_gpu(choice: BackendChoice, ordinal: usize) -> Result<Found, BackendError> {
    let cuda = || -> Result<Found, cuda::Unavailable> {
        let probe = cuda::probe_gpu(ordinal)?;
        let compiler = cuda::Nvrtc::load()?;
        Ok(Found {
            backend: BackendChoice::Cuda,
            info: probe.info,
            driver_version: probe.driver_version,
            compiler: Box::new(compiler),
        })
    };
    let hip = || -> Result<Found, hip::Unavailable> {
        let probe = hip::probe_gpu(ordinal)?;
        let compiler = hip::Hiprtc::load()?;
        Ok(Found {
            backend: BackendChoice::Hip,
            info: probe.info,
            driver_version: probe.driver_version,
            compiler: Box::new(compiler),
        })
    };
    match choice {
        BackendChoice::Cuda => Ok(cuda()?),
        BackendChoice::Hip => Ok(hip()?),
        BackendChoice::Auto => {
            cuda().or_else(|cuda| hip().map_err(|hip| BackendError::Neither { cuda, hip }))
        }
        BackendChoice::Fake => find_fake(ordinal),
    }
}

/// Every GPU of the vendor `choice` allows (with `Auto`, CUDA's if it reports any, else HIP's),
/// in the driver's order, without opening any: what `--devices` chooses from.
pub fn gpus(choice: BackendChoice) -> Result<(BackendChoice, Vec<DeviceInfo>), BackendError> {
    let infos = |probes: Vec<cuda::Probe>| probes.into_iter().map(|p| p.info).collect();
    let hip_infos = |probes: Vec<hip::Probe>| probes.into_iter().map(|p| p.info).collect();
    match choice {
        BackendChoice::Cuda => Ok((BackendChoice::Cuda, infos(cuda::probe_all()?))),
        BackendChoice::Hip => Ok((BackendChoice::Hip, hip_infos(hip::probe_all()?))),
        BackendChoice::Auto => match cuda::probe_all() {
            Ok(probes) => Ok((BackendChoice::Cuda, infos(probes))),
            Err(cuda) => hip::probe_all()
                .map(|probes| (BackendChoice::Hip, hip_infos(probes)))
                .map_err(|hip| BackendError::Neither { cuda, hip }),
        },
        BackendChoice::Fake => fake_gpus().map(|infos| (BackendChoice::Fake, infos)),
    }
}

/// Fake GPU `ordinal` (of those visible) and the fake compiler, as [`find`] reports a GPU.
#[cfg(any(test, feature = "testing"))]
fn find_fake(ordinal: usize) -> Result<Found, BackendError> {
    let device = fake::FakeDevice::gpu(fake_index(ordinal)?);
    Ok(Found {
        backend: BackendChoice::Fake,
        driver_version: device.driver_version(),
        info: device.info,
        compiler: Box::new(fake::FakeCompiler),
    })
}

#[cfg(not(any(test, feature = "testing")))]
fn find_fake(_: usize) -> Result<Found, BackendError> {
    Err(BackendError::FakeNotBuilt)
}

/// The host index of visible fake GPU `ordinal`.
#[cfg(any(test, feature = "testing"))]
fn fake_index(ordinal: usize) -> Result<usize, BackendError> {
    let visible = fake::visible_from_env();
    visible
        .get(ordinal)
        .copied()
        .ok_or(BackendError::NoSuchFakeGpu {
            ordinal,
            count: visible.len(),
        })
}

#[cfg(any(test, feature = "testing"))]
fn fake_gpus() -> Result<Vec<DeviceInfo>, BackendError> {
    Ok(fake::visible_from_env()
        .into_iter()
        .map(|index| fake::FakeDevice::gpu(index).info)
        .collect())
}

#[cfg(not(any(test, feature = "testing")))]
fn fake_gpus() -> Result<Vec<DeviceInfo>, BackendError> {
    Err(BackendError::FakeNotBuilt)
}

/// Opens GPU `ordinal` of `backend` (`Cuda`, `Hip` or `Fake`; `Auto` means CUDA).
pub fn open(
    backend: BackendChoice,
    ordinal: usize,
) -> Result<Box<dyn Device + Send>, BackendError> {
    Ok(match backend {
        BackendChoice::Hip => Box::new(hip::HipDevice::open(ordinal)?),
        BackendChoice::Cuda | BackendChoice::Auto => Box::new(cuda::CudaDevice::open(ordinal)?),
        #[cfg(any(test, feature = "testing"))]
        BackendChoice::Fake => {
            let index = fake_index(ordinal)?;
            if fake::busy(index) {
                return Err(BackendError::FakeBusy { ordinal });
            }
            Box::new(fake::FakeDevice::gpu(index))
        }
        #[cfg(not(any(test, feature = "testing")))]
        BackendChoice::Fake => return Err(BackendError::FakeNotBuilt),
    })
}
