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
//! machine. It also binds no hiprtc. The few functions used here are declared by hand below and
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
//! All work is queued on one stream created by [`HipDevice::open`]; kernels are timed with HIP
//! events recorded on it. `flush_l2` writes a scratch buffer of at least twice the larger of the
//! L2 size and 256 MiB, so that MI300's 256 MiB Infinity Cache (which the L2 attribute does not
//! include) is evicted too. Registers, scratch and LDS come from `hipFuncGetAttribute`, blocks
//! per CU from `hipModuleOccupancyMaxActiveBlocksPerMultiprocessor`. On AMD, `NUM_REGS` counts
//! the vector registers (VGPRs) of one work-item.

use super::{
    BufferId, CompileError, CompileRequest, CompiledKernel, Compiler, Device, DeviceError,
    KernelArg, KernelId, LoadedKernel, Op,
};
use kernelbook_core::results::{DeviceInfo, LaunchShape};
use libloading::Library;
use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};
use std::ptr;
use std::sync::{Mutex, OnceLock};

// ---------------------------------------------------------------------------------------------
// The C API, declared by hand (see the module documentation).
// ---------------------------------------------------------------------------------------------

/// `hipError_t` (a C enum: an `int`).
type HipStatus = c_int;
/// `hiprtcResult` (a C enum: an `int`).
type RtcStatus = c_int;
type HipStream = *mut c_void;
type HipEvent = *mut c_void;
type HipModule = *mut c_void;
type HipFunction = *mut c_void;
type RtcProgram = *mut c_void;

const HIP_SUCCESS: HipStatus = 0;
/// `hipErrorNoDevice`.
const HIP_ERROR_NO_DEVICE: HipStatus = 100;
/// `hipErrorInvalidDevice`: what ROCm 5.2's `hipInit` answers on a machine without a GPU.
const HIP_ERROR_INVALID_DEVICE: HipStatus = 101;

const HIPRTC_SUCCESS: RtcStatus = 0;
const HIPRTC_ERROR_INVALID_OPTION: RtcStatus = 5;
const HIPRTC_ERROR_COMPILATION: RtcStatus = 6;

/// `hipMemcpyKind`.
const HIP_MEMCPY_HOST_TO_DEVICE: c_int = 1;
const HIP_MEMCPY_DEVICE_TO_HOST: c_int = 2;
const HIP_MEMCPY_DEVICE_TO_DEVICE: c_int = 3;

/// `hipDeviceAttribute_t` values (identical in ROCm 5.2, 6.x and 7.x).
mod attr {
    use std::ffi::c_int;
    pub const CLOCK_RATE: c_int = 5;
    pub const L2_CACHE_SIZE: c_int = 19;
    pub const COMPUTE_CAPABILITY_MAJOR: c_int = 23;
    pub const MAX_THREADS_PER_MULTIPROCESSOR: c_int = 57;
    pub const MEMORY_BUS_WIDTH: c_int = 59;
    pub const MEMORY_CLOCK_RATE: c_int = 60;
    pub const COMPUTE_CAPABILITY_MINOR: c_int = 61;
    pub const MULTIPROCESSOR_COUNT: c_int = 63;
    pub const MAX_SHARED_MEMORY_PER_BLOCK: c_int = 74;
    pub const SHARED_MEM_PER_BLOCK_OPTIN: c_int = 75;
}

/// `hipFunction_attribute` values (the same numbering as CUDA's `CUfunction_attribute`).
mod func_attr {
    use std::ffi::c_int;
    pub const SHARED_SIZE_BYTES: c_int = 1;
    pub const LOCAL_SIZE_BYTES: c_int = 3;
    pub const NUM_REGS: c_int = 4;
}

/// `hipUUID`: `struct { char bytes[16]; }`.
#[repr(C)]
struct HipUuid {
    bytes: [u8; 16],
}

type FnInit = unsafe extern "C" fn(c_uint) -> HipStatus;
type FnIntOut = unsafe extern "C" fn(*mut c_int) -> HipStatus;
type FnDeviceGet = unsafe extern "C" fn(*mut c_int, c_int) -> HipStatus;
type FnDeviceGetAttribute = unsafe extern "C" fn(*mut c_int, c_int, c_int) -> HipStatus;
type FnDeviceGetName = unsafe extern "C" fn(*mut c_char, c_int, c_int) -> HipStatus;
type FnDeviceTotalMem = unsafe extern "C" fn(*mut usize, c_int) -> HipStatus;
type FnDeviceGetUuid = unsafe extern "C" fn(*mut HipUuid, c_int) -> HipStatus;
type FnGetDeviceProperties = unsafe extern "C" fn(*mut c_void, c_int) -> HipStatus;
type FnSetDevice = unsafe extern "C" fn(c_int) -> HipStatus;
type FnMalloc = unsafe extern "C" fn(*mut *mut c_void, usize) -> HipStatus;
type FnFree = unsafe extern "C" fn(*mut c_void) -> HipStatus;
type FnMemcpyAsync =
    unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int, HipStream) -> HipStatus;
type FnMemsetD8Async = unsafe extern "C" fn(*mut c_void, u8, usize, HipStream) -> HipStatus;
type FnMemGetInfo = unsafe extern "C" fn(*mut usize, *mut usize) -> HipStatus;
type FnModuleLoadData = unsafe extern "C" fn(*mut HipModule, *const c_void) -> HipStatus;
type FnModuleUnload = unsafe extern "C" fn(HipModule) -> HipStatus;
type FnModuleGetFunction =
    unsafe extern "C" fn(*mut HipFunction, HipModule, *const c_char) -> HipStatus;
type FnFuncGetAttribute = unsafe extern "C" fn(*mut c_int, c_int, HipFunction) -> HipStatus;
type FnOccupancy = unsafe extern "C" fn(*mut c_int, HipFunction, c_int, usize) -> HipStatus;
type FnModuleLaunchKernel = unsafe extern "C" fn(
    HipFunction,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    HipStream,
    *mut *mut c_void,
    *mut *mut c_void,
) -> HipStatus;
type FnStreamCreate = unsafe extern "C" fn(*mut HipStream) -> HipStatus;
type FnStreamOp = unsafe extern "C" fn(HipStream) -> HipStatus;
type FnEventCreate = unsafe extern "C" fn(*mut HipEvent) -> HipStatus;
type FnEventRecord = unsafe extern "C" fn(HipEvent, HipStream) -> HipStatus;
type FnEventOp = unsafe extern "C" fn(HipEvent) -> HipStatus;
type FnEventElapsedTime = unsafe extern "C" fn(*mut f32, HipEvent, HipEvent) -> HipStatus;
type FnErrorText = unsafe extern "C" fn(HipStatus) -> *const c_char;

type FnRtcVersion = unsafe extern "C" fn(*mut c_int, *mut c_int) -> RtcStatus;
type FnRtcCreateProgram = unsafe extern "C" fn(
    *mut RtcProgram,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> RtcStatus;
type FnRtcCompileProgram =
    unsafe extern "C" fn(RtcProgram, c_int, *const *const c_char) -> RtcStatus;
type FnRtcDestroyProgram = unsafe extern "C" fn(*mut RtcProgram) -> RtcStatus;
type FnRtcSizeOut = unsafe extern "C" fn(RtcProgram, *mut usize) -> RtcStatus;
type FnRtcBytesOut = unsafe extern "C" fn(RtcProgram, *mut c_char) -> RtcStatus;
type FnRtcErrorString = unsafe extern "C" fn(RtcStatus) -> *const c_char;

/// Which `hipDeviceProp_t` layout a properties function fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PropsLayout {
    /// `hipDeviceProp_tR0600` (ROCm 6 and 7): 1472 bytes.
    R0600,
    /// `hipDeviceProp_tR0000` (ROCm 5.x, and the legacy symbol of ROCm 6 and 7): 792 bytes in
    /// ROCm 5.2.
    R0000,
}

impl PropsLayout {
    /// Byte offset of `char gcnArchName[256]`.
    fn arch_name_offset(self) -> usize {
        match self {
            PropsLayout::R0600 => 1160,
            PropsLayout::R0000 => 396,
        }
    }
}

/// Bytes handed to the properties function: well above either layout's size.
const PROPS_BUFFER_BYTES: usize = 4096;
/// Length of `gcnArchName`.
const ARCH_NAME_BYTES: usize = 256;

/// `EM_AMDGPU`, the ELF machine number of AMD GPU code objects.
pub const EM_AMDGPU: u16 = 224;
/// `NT_AMDGPU_METADATA`: the note holding code object metadata (v3 and newer, MessagePack).
const NT_AMDGPU_METADATA: u32 = 32;
/// `SHT_NOTE`.
const SHT_NOTE: u32 = 7;

/// Why [`Op::Transpose`] is refused: the vendor peer on AMD would be hipBLAS `geam`, which
/// this backend does not load.
const NO_LIBRARY_TRANSPOSE: &str =
    "the HIP backend has no vendor transpose (hipBLAS geam is not wired up)";

/// The smallest size the flush buffer is computed from: MI300's Infinity Cache is 256 MiB and is
/// not part of the L2 size the runtime reports.
const MIN_FLUSHED_CACHE_BYTES: u64 = 256 << 20;

// ---------------------------------------------------------------------------------------------
// Errors and loading.
// ---------------------------------------------------------------------------------------------

/// Why the HIP backend cannot be used on this machine. Every message is one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    #[error("no AMD GPU runtime found (libamdhip64.so could not be loaded)")]
    NoRuntime,
    #[error("the HIP runtime reports no AMD GPU")]
    NoDevice,
    #[error(
        "hiprtc could not be loaded (neither libhiprtc.so nor a libamdhip64.so with hiprtc inside, as in ROCm 5)"
    )]
    NoCompiler,
    #[error("{0}")]
    Runtime(String),
}

/// What the runtime says about a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub info: DeviceInfo,
    /// e.g. "HIP 6.2.41133 (amdgpu 6.8.5)".
    pub driver_version: String,
}

/// The file names tried for a library, in order: each name on the loader's search path, then
/// in `$ROCM_PATH/lib` (where set), then in `/opt/rocm/lib`.
pub fn library_candidates(names: &[&str], rocm_path: Option<&str>) -> Vec<String> {
    let mut candidates: Vec<String> = names.iter().map(|name| name.to_string()).collect();
    let mut dirs = Vec::new();
    if let Some(root) = rocm_path.map(str::trim).filter(|root| !root.is_empty()) {
        dirs.push(format!("{}/lib", root.trim_end_matches('/')));
    }
    dirs.push("/opt/rocm/lib".to_string());
    dirs.dedup();
    for dir in dirs {
        for name in names {
            candidates.push(format!("{dir}/{name}"));
        }
    }
    candidates
}

/// The runtime library's names, newest first after the unversioned development link.
pub const RUNTIME_LIBRARY_NAMES: [&str; 4] = [
    "libamdhip64.so",
    "libamdhip64.so.7",
    "libamdhip64.so.6",
    "libamdhip64.so.5",
];

/// hiprtc's names in ROCm 6 and 7 (ROCm 5 has none: hiprtc is inside libamdhip64).
pub const HIPRTC_LIBRARY_NAMES: [&str; 3] = ["libhiprtc.so", "libhiprtc.so.7", "libhiprtc.so.6"];

fn rocm_path() -> Option<String> {
    std::env::var("ROCM_PATH").ok()
}

/// Opens the first candidate that loads.
fn open_first(candidates: &[String]) -> Option<(Library, String)> {
    candidates.iter().find_map(|name| {
        // SAFETY: opening a library runs its initialisers. The candidates are ROCm's own
        // runtime and compiler libraries, which are made to be loaded this way (Python
        // extensions and other language runtimes dlopen them) and whose initialisers need
        // nothing from the caller.
        unsafe { Library::new(name.as_str()) }
            .ok()
            .map(|library| (library, name.clone()))
    })
}

/// Resolves one function of a loaded library.
///
/// # Safety
///
/// `T` must be the function pointer type matching the C declaration of `name`, and the pointer
/// must not be called after `library` is dropped.
unsafe fn symbol<T: Copy>(library: &Library, file: &str, name: &CStr) -> Result<T, Unavailable> {
    // SAFETY: the caller guarantees that `T` is the symbol's type.
    let found = unsafe { library.get::<T>(name) }.map_err(|_| {
        Unavailable::Runtime(format!(
            "{file} has no {}: this ROCm is too old or not a HIP runtime",
            name.to_string_lossy()
        ))
    })?;
    Ok(*found)
}

/// Like [`symbol`], for a function that older versions lack.
///
/// # Safety
///
/// As for [`symbol`].
unsafe fn optional_symbol<T: Copy>(library: &Library, name: &CStr) -> Option<T> {
    // SAFETY: the caller guarantees that `T` is the symbol's type.
    unsafe { library.get::<T>(name) }.ok().map(|found| *found)
}

/// The HIP runtime's functions. Lives in a `static` for the whole process, so the library is
/// never unloaded and the function pointers stay valid.
struct Runtime {
    file: String,
    init: FnInit,
    get_device_count: FnIntOut,
    device_get: FnDeviceGet,
    device_get_attribute: FnDeviceGetAttribute,
    device_get_name: FnDeviceGetName,
    device_total_mem: FnDeviceTotalMem,
    device_get_uuid: Option<FnDeviceGetUuid>,
    get_device_properties: Option<(FnGetDeviceProperties, PropsLayout)>,
    runtime_get_version: FnIntOut,
    set_device: FnSetDevice,
    malloc: FnMalloc,
    free: FnFree,
    memcpy_async: FnMemcpyAsync,
    memset_d8_async: FnMemsetD8Async,
    mem_get_info: FnMemGetInfo,
    module_load_data: FnModuleLoadData,
    module_unload: FnModuleUnload,
    module_get_function: FnModuleGetFunction,
    func_get_attribute: FnFuncGetAttribute,
    occupancy: FnOccupancy,
    module_launch_kernel: FnModuleLaunchKernel,
    stream_create: FnStreamCreate,
    stream_synchronize: FnStreamOp,
    stream_destroy: FnStreamOp,
    event_create: FnEventCreate,
    event_record: FnEventRecord,
    event_synchronize: FnEventOp,
    event_elapsed_time: FnEventElapsedTime,
    event_destroy: FnEventOp,
    get_error_name: FnErrorText,
    get_error_string: FnErrorText,
    _library: Library,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    fn from_library(library: Library, file: String) -> Result<Runtime, Unavailable> {
        let lib = &library;
        let f = file.as_str();
        // SAFETY (every `symbol` and `optional_symbol` call below): each type alias is the C
        // declaration of that function in ROCm 5.2's and ROCm 6's `hip_runtime_api.h` (enums
        // passed as `int`, `hipDevice_t` is `int`, handles are pointers), and the pointers are
        // stored beside `library`, which outlives every call through them.
        let get_device_properties = unsafe {
            optional_symbol::<FnGetDeviceProperties>(lib, c"hipGetDevicePropertiesR0600")
                .map(|function| (function, PropsLayout::R0600))
                .or_else(|| {
                    optional_symbol::<FnGetDeviceProperties>(lib, c"hipGetDeviceProperties")
                        .map(|function| (function, PropsLayout::R0000))
                })
        };
        // SAFETY: as above.
        unsafe {
            Ok(Runtime {
                init: symbol(lib, f, c"hipInit")?,
                get_device_count: symbol(lib, f, c"hipGetDeviceCount")?,
                device_get: symbol(lib, f, c"hipDeviceGet")?,
                device_get_attribute: symbol(lib, f, c"hipDeviceGetAttribute")?,
                device_get_name: symbol(lib, f, c"hipDeviceGetName")?,
                device_total_mem: symbol(lib, f, c"hipDeviceTotalMem")?,
                device_get_uuid: optional_symbol(lib, c"hipDeviceGetUuid"),
                get_device_properties,
                runtime_get_version: symbol(lib, f, c"hipRuntimeGetVersion")?,
                set_device: symbol(lib, f, c"hipSetDevice")?,
                malloc: symbol(lib, f, c"hipMalloc")?,
                free: symbol(lib, f, c"hipFree")?,
                memcpy_async: symbol(lib, f, c"hipMemcpyAsync")?,
                memset_d8_async: symbol(lib, f, c"hipMemsetD8Async")?,
                mem_get_info: symbol(lib, f, c"hipMemGetInfo")?,
                module_load_data: symbol(lib, f, c"hipModuleLoadData")?,
                module_unload: symbol(lib, f, c"hipModuleUnload")?,
                module_get_function: symbol(lib, f, c"hipModuleGetFunction")?,
                func_get_attribute: symbol(lib, f, c"hipFuncGetAttribute")?,
                occupancy: symbol(
                    lib,
                    f,
                    c"hipModuleOccupancyMaxActiveBlocksPerMultiprocessor",
                )?,
                module_launch_kernel: symbol(lib, f, c"hipModuleLaunchKernel")?,
                stream_create: symbol(lib, f, c"hipStreamCreate")?,
                stream_synchronize: symbol(lib, f, c"hipStreamSynchronize")?,
                stream_destroy: symbol(lib, f, c"hipStreamDestroy")?,
                event_create: symbol(lib, f, c"hipEventCreate")?,
                event_record: symbol(lib, f, c"hipEventRecord")?,
                event_synchronize: symbol(lib, f, c"hipEventSynchronize")?,
                event_elapsed_time: symbol(lib, f, c"hipEventElapsedTime")?,
                event_destroy: symbol(lib, f, c"hipEventDestroy")?,
                get_error_name: symbol(lib, f, c"hipGetErrorName")?,
                get_error_string: symbol(lib, f, c"hipGetErrorString")?,
                file,
                _library: library,
            })
        }
    }

    /// "hipErrorOutOfMemory: out of memory", or the name alone where both say the same.
    fn error_text(&self, status: HipStatus) -> String {
        // SAFETY: both functions take any error code and return a pointer to a static
        // NUL-terminated string, or null (handled by `static_text`).
        let (name, text) = unsafe {
            (
                static_text((self.get_error_name)(status)),
                static_text((self.get_error_string)(status)),
            )
        };
        let message = match (name, text) {
            (Some(name), Some(text)) if name == text || text.is_empty() => name,
            (Some(name), Some(text)) => format!("{name}: {text}"),
            (Some(name), None) => name,
            (None, Some(text)) => text,
            (None, None) => format!("HIP error {status}"),
        };
        one_line(&message)
    }

    fn check(&self, status: HipStatus) -> Result<(), String> {
        if status == HIP_SUCCESS {
            Ok(())
        } else {
            Err(self.error_text(status))
        }
    }

    /// `hipRuntimeGetVersion`, e.g. 60241133 for HIP 6.2.41133.
    fn version(&self) -> Result<c_int, String> {
        let mut version: c_int = 0;
        // SAFETY: the runtime writes one int through a pointer to a live local.
        self.check(unsafe { (self.runtime_get_version)(&mut version) })?;
        Ok(version)
    }

    fn attribute(&self, device: c_int, attribute: c_int) -> Result<c_int, String> {
        let mut value: c_int = 0;
        // SAFETY: the runtime writes one int through a pointer to a live local; `device` came
        // from `hipDeviceGet` and an unknown attribute is answered with an error code.
        self.check(unsafe { (self.device_get_attribute)(&mut value, attribute, device) })?;
        Ok(value)
    }
}

/// Text from a static C string, or `None` for a null pointer.
///
/// # Safety
///
/// `text` must be null or point to a NUL-terminated string that stays valid during the call.
unsafe fn static_text(text: *const c_char) -> Option<String> {
    if text.is_null() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated, as the caller guarantees.
    Some(
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// The message on one line (library messages sometimes end with a newline).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

static RUNTIME: OnceLock<Result<Runtime, Unavailable>> = OnceLock::new();

/// The HIP runtime, loaded once per process.
fn runtime() -> Result<&'static Runtime, Unavailable> {
    RUNTIME
        .get_or_init(|| {
            // KERNELBOOK_HIP_RUNTIME names one library file to use instead of the search (a
            // ROCm outside the usual places, or none at all to check the no-ROCm path).
            let candidates = match std::env::var("KERNELBOOK_HIP_RUNTIME") {
                Ok(path) => vec![path],
                Err(_) => library_candidates(&RUNTIME_LIBRARY_NAMES, rocm_path().as_deref()),
            };
            let (library, file) = open_first(&candidates).ok_or(Unavailable::NoRuntime)?;
            Runtime::from_library(library, file)
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Whether the HIP runtime (`libamdhip64`) can be loaded. Loads it if so.
pub fn runtime_present() -> bool {
    runtime().is_ok()
}

/// Whether hiprtc can be loaded. Loads it if so.
pub fn hiprtc_present() -> bool {
    hiprtc_api().is_ok()
}

// ---------------------------------------------------------------------------------------------
// Probing a GPU.
// ---------------------------------------------------------------------------------------------

/// Identifies AMD GPU 0.
pub fn probe() -> Result<Probe, Unavailable> {
    let rt = runtime()?;
    probe_ordinal(rt, 0).map(|(probe, _)| probe)
}

/// Identifies GPU `ordinal`; also returns its `hipDevice_t`.
fn probe_ordinal(rt: &Runtime, ordinal: usize) -> Result<(Probe, c_int), Unavailable> {
    // SAFETY: `hipInit` takes flags (which must be 0) and has no pointer arguments.
    let init = unsafe { (rt.init)(0) };
    let mut count: c_int = 0;
    // SAFETY: the runtime writes one int through a pointer to a live local.
    let counted = unsafe { (rt.get_device_count)(&mut count) };
    if init != HIP_SUCCESS {
        // Without a GPU, ROCm 5.2's `hipInit` answers "invalid device" and the count "no
        // device"; newer versions answer "no device" to both.
        if init == HIP_ERROR_NO_DEVICE
            || counted == HIP_ERROR_NO_DEVICE
            || (init == HIP_ERROR_INVALID_DEVICE && (counted != HIP_SUCCESS || count == 0))
        {
            return Err(Unavailable::NoDevice);
        }
        return Err(Unavailable::Runtime(format!(
            "the HIP runtime ({}) could not start: {}",
            rt.file,
            rt.error_text(init)
        )));
    }
    if counted == HIP_ERROR_NO_DEVICE || (counted == HIP_SUCCESS && count <= 0) {
        return Err(Unavailable::NoDevice);
    }
    rt.check(counted).map_err(|e| {
        Unavailable::Runtime(format!("the HIP runtime could not count its GPUs: {e}"))
    })?;
    let index = c_int::try_from(ordinal)
        .ok()
        .filter(|&index| index < count)
        .ok_or_else(|| {
            Unavailable::Runtime(format!(
                "GPU {ordinal} was asked for, but the HIP runtime reports only {count}"
            ))
        })?;
    let mut device: c_int = 0;
    // SAFETY: the runtime writes one int through a pointer to a live local; `index` is in range.
    rt.check(unsafe { (rt.device_get)(&mut device, index) })
        .map_err(|e| {
            Unavailable::Runtime(format!("the HIP runtime could not open GPU {index}: {e}"))
        })?;
    let info = device_info(rt, device).map_err(|e| {
        Unavailable::Runtime(format!("the HIP runtime could not describe the GPU: {e}"))
    })?;
    let version = rt.version().map_err(|e| {
        Unavailable::Runtime(format!("the HIP runtime could not report its version: {e}"))
    })?;
    let mut driver_version = format!("HIP {}", format_hip_version(version));
    if let Some(module) = std::fs::read_to_string("/sys/module/amdgpu/version")
        .ok()
        .map(|text| text.trim().to_string())
        .filter(|text| !text.is_empty() && !text.contains(char::is_whitespace))
    {
        driver_version = format!("{driver_version} (amdgpu {module})");
    }
    Ok((
        Probe {
            info,
            driver_version,
        },
        device,
    ))
}

fn device_info(rt: &Runtime, device: c_int) -> Result<DeviceInfo, String> {
    let attribute = |which| rt.attribute(device, which);
    let arch = arch_name(rt, device)?;
    let mut name_buffer = [0 as c_char; 256];
    // SAFETY: the runtime writes at most `len` bytes, NUL included, into the buffer.
    rt.check(unsafe { (rt.device_get_name)(name_buffer.as_mut_ptr(), 256, device) })?;
    let name = text_from_c_chars(&name_buffer).trim().to_string();
    let mut memory_bytes = 0usize;
    // SAFETY: the runtime writes one `size_t` through a pointer to a live local.
    rt.check(unsafe { (rt.device_total_mem)(&mut memory_bytes, device) })?;
    let uuid = match rt.device_get_uuid {
        Some(get_uuid) => {
            let mut uuid = HipUuid { bytes: [0; 16] };
            // SAFETY: the runtime writes one 16-byte `hipUUID` into a live local of that layout.
            match rt.check(unsafe { get_uuid(&mut uuid, device) }) {
                Ok(()) => format_uuid(&uuid.bytes),
                Err(_) => String::new(),
            }
        }
        None => String::new(),
    };
    let major = to_u32(attribute(attr::COMPUTE_CAPABILITY_MAJOR)?);
    let minor = to_u32(attribute(attr::COMPUTE_CAPABILITY_MINOR)?);
    let shared_per_block = to_u64(attribute(attr::MAX_SHARED_MEMORY_PER_BLOCK)?);
    // AMD GPUs have no opt-in for more LDS; some versions report 0 here, some the same value.
    let shared_opt_in = attribute(attr::SHARED_MEM_PER_BLOCK_OPTIN)
        .map(to_u64)
        .unwrap_or(0);
    Ok(DeviceInfo {
        backend: "hip".to_string(),
        name: if name.is_empty() { arch.clone() } else { name },
        uuid,
        compute_capability: (major, minor),
        sm_count: to_u32(attribute(attr::MULTIPROCESSOR_COUNT)?),
        l2_bytes: to_u64(attribute(attr::L2_CACHE_SIZE)?),
        memory_bytes: u64::try_from(memory_bytes).unwrap_or(u64::MAX),
        memory_clock_khz: to_u64(attribute(attr::MEMORY_CLOCK_RATE)?),
        bus_width_bits: to_u64(attribute(attr::MEMORY_BUS_WIDTH)?),
        sm_clock_khz: to_u64(attribute(attr::CLOCK_RATE)?),
        max_threads_per_sm: to_u32(attribute(attr::MAX_THREADS_PER_MULTIPROCESSOR)?),
        max_shared_bytes_per_block: shared_per_block.max(shared_opt_in),
        arch,
    })
}

/// The GPU's architecture ("gfx90a") from `hipDeviceProp_t::gcnArchName`.
fn arch_name(rt: &Runtime, device: c_int) -> Result<String, String> {
    let Some((get_properties, layout)) = rt.get_device_properties else {
        return Err(format!(
            "{} exports neither hipGetDevicePropertiesR0600 nor hipGetDeviceProperties",
            rt.file
        ));
    };
    // u64s, so the buffer is aligned as the struct (8 bytes) requires.
    let mut words = vec![0u64; PROPS_BUFFER_BYTES / 8];
    // SAFETY: the function fills one `hipDeviceProp_t` of `layout` (at most 1472 bytes, see
    // `PropsLayout`) at the start of a zeroed, 8-aligned buffer of 4096 bytes that lives for
    // the whole call.
    rt.check(unsafe { get_properties(words.as_mut_ptr().cast::<c_void>(), device) })?;
    let bytes: Vec<u8> = words.iter().flat_map(|word| word.to_ne_bytes()).collect();
    arch_from_properties(&bytes, layout.arch_name_offset()).ok_or_else(|| {
        format!(
            "the architecture name read from hipDeviceProp_t ({layout:?} layout) is not a gfx \
             target: this HIP runtime's struct layout is not one kernelbook knows"
        )
    })
}

/// The architecture in a `hipDeviceProp_t` whose `gcnArchName` starts at `offset`.
fn arch_from_properties(bytes: &[u8], offset: usize) -> Option<String> {
    let field = bytes.get(offset..offset.checked_add(ARCH_NAME_BYTES)?)?;
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    let text = std::str::from_utf8(field.get(..end)?).ok()?;
    parse_gcn_arch_name(text)
}

/// The compile target in a `gcnArchName`: "gfx90a:sramecc+:xnack-" → "gfx90a". The feature
/// flags are dropped: code compiled for the bare target runs with either setting.
pub fn parse_gcn_arch_name(name: &str) -> Option<String> {
    let target = name.trim().split(':').next()?.trim();
    let digits = target.strip_prefix("gfx")?;
    let valid = !digits.is_empty()
        && digits.len() <= 8
        && digits.chars().all(|c| c.is_ascii_alphanumeric());
    valid.then(|| target.to_string())
}

/// "6.2.41133" from `hipRuntimeGetVersion`'s 60241133 (major × 10⁷ + minor × 10⁵ + patch).
pub fn format_hip_version(version: i32) -> String {
    if version <= 0 {
        return format!("unknown ({version})");
    }
    format!(
        "{}.{}.{}",
        version / 10_000_000,
        (version / 100_000) % 100,
        version % 100_000
    )
}

/// A UUID as `rocm-smi` prints it. ROCm's UUID is 16 ASCII characters (hex digits), shown as
/// "GPU-" followed by them; other bytes are shown as hex in the 8-4-4-4-12 form.
fn format_uuid(bytes: &[u8; 16]) -> String {
    if bytes.iter().all(|b| b.is_ascii_alphanumeric()) {
        return format!("GPU-{}", String::from_utf8_lossy(bytes));
    }
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

/// Text from a NUL-terminated `c_char` buffer, without the terminator.
fn text_from_c_chars(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .map(|c| u8::from_ne_bytes(c.to_ne_bytes()))
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// An attribute that cannot be negative, as unsigned (0 if it somehow is).
fn to_u32(value: i32) -> u32 {
    u32::try_from(value).unwrap_or(0)
}

fn to_u64(value: i32) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// Bytes `flush_l2` writes: twice the larger of the L2 and 256 MiB (MI300's Infinity Cache).
pub fn flush_bytes(l2_bytes: u64) -> u64 {
    l2_bytes.max(MIN_FLUSHED_CACHE_BYTES).saturating_mul(2)
}

// ---------------------------------------------------------------------------------------------
// Code objects.
// ---------------------------------------------------------------------------------------------

fn read_le(bytes: &[u8], at: usize, width: usize) -> Option<u64> {
    let field = bytes.get(at..at.checked_add(width)?)?;
    Some(
        field
            .iter()
            .rev()
            .fold(0u64, |value, &b| (value << 8) | u64::from(b)),
    )
}

/// Whether `image` is a 64-bit little-endian ELF file for AMD GPUs (`e_machine == EM_AMDGPU`),
/// which is what hiprtc returns and `hipModuleLoadData` loads.
pub fn is_amdgpu_elf(image: &[u8]) -> bool {
    image.starts_with(b"\x7fELF")
        && image.get(4) == Some(&2) // ELFCLASS64
        && image.get(5) == Some(&1) // ELFDATA2LSB
        && read_le(image, 18, 2) == Some(u64::from(EM_AMDGPU))
}

/// The payload of the code object's `NT_AMDGPU_METADATA` note (MessagePack), if any.
fn amdgpu_metadata(image: &[u8]) -> Option<&[u8]> {
    if !is_amdgpu_elf(image) {
        return None;
    }
    let section_table = usize::try_from(read_le(image, 0x28, 8)?).ok()?;
    let entry_size = usize::try_from(read_le(image, 0x3a, 2)?).ok()?;
    let entries = usize::try_from(read_le(image, 0x3c, 2)?).ok()?;
    if entry_size < 0x40 {
        return None;
    }
    (0..entries).find_map(|index| {
        let header = section_table.checked_add(index.checked_mul(entry_size)?)?;
        if read_le(image, header.checked_add(4)?, 4)? != u64::from(SHT_NOTE) {
            return None;
        }
        let offset = usize::try_from(read_le(image, header.checked_add(0x18)?, 8)?).ok()?;
        let size = usize::try_from(read_le(image, header.checked_add(0x20)?, 8)?).ok()?;
        let notes = image.get(offset..offset.checked_add(size)?)?;
        find_note(notes, b"AMDGPU", NT_AMDGPU_METADATA)
    })
}

/// The descriptor of the first note of `owner` and `kind` in an ELF note section.
fn find_note<'a>(mut notes: &'a [u8], owner: &[u8], kind: u32) -> Option<&'a [u8]> {
    let align4 = |n: usize| n.checked_add(3).map(|n| n & !3);
    while notes.len() >= 12 {
        let name_size = usize::try_from(read_le(notes, 0, 4)?).ok()?;
        let desc_size = usize::try_from(read_le(notes, 4, 4)?).ok()?;
        let note_kind = read_le(notes, 8, 4)?;
        let name_end = 12usize.checked_add(name_size)?;
        let desc_start = align4(name_end)?;
        let desc_end = desc_start.checked_add(desc_size)?;
        let name = notes.get(12..name_end)?;
        let desc = notes.get(desc_start..desc_end)?;
        let name = name.strip_suffix(&[0]).unwrap_or(name);
        if note_kind == u64::from(kind) && name == owner {
            return Some(desc);
        }
        notes = notes.get(align4(desc_end)?..).unwrap_or(&[]);
    }
    None
}

/// A MessagePack value: just enough to read AMDGPU code object metadata.
#[derive(Debug, Clone, PartialEq)]
enum Msg<'a> {
    Nil,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(&'a str),
    Bin(&'a [u8]),
    Array(Vec<Msg<'a>>),
    Map(Vec<(Msg<'a>, Msg<'a>)>),
    Ext,
}

impl<'a> Msg<'a> {
    fn get(&self, key: &str) -> Option<&Msg<'a>> {
        match self {
            Msg::Map(entries) => entries
                .iter()
                .find(|(k, _)| *k == Msg::Str(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    fn as_str(&self) -> Option<&'a str> {
        match *self {
            Msg::Str(text) => Some(text),
            _ => None,
        }
    }

    fn as_int(&self) -> Option<i128> {
        match *self {
            Msg::Int(value) => Some(value),
            _ => None,
        }
    }

    fn as_array(&self) -> Option<&[Msg<'a>]> {
        match self {
            Msg::Array(items) => Some(items),
            _ => None,
        }
    }
}

/// Nesting deeper than this is refused (metadata nests four levels).
const MAX_MSGPACK_DEPTH: u32 = 32;

struct MsgReader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> MsgReader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let taken = self.bytes.get(self.pos..end)?;
        self.pos = end;
        Some(taken)
    }

    fn be(&mut self, width: usize) -> Option<u64> {
        let field = self.take(width)?;
        Some(field.iter().fold(0u64, |v, &b| (v << 8) | u64::from(b)))
    }

    fn len(&mut self, width: usize) -> Option<usize> {
        usize::try_from(self.be(width)?).ok()
    }

    fn fixed<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    fn value(&mut self, depth: u32) -> Option<Msg<'a>> {
        if depth > MAX_MSGPACK_DEPTH {
            return None;
        }
        let tag = *self.take(1)?.first()?;
        Some(match tag {
            0x00..=0x7f => Msg::Int(i128::from(tag)),
            0x80..=0x8f => self.map(usize::from(tag & 0x0f), depth)?,
            0x90..=0x9f => self.array(usize::from(tag & 0x0f), depth)?,
            0xa0..=0xbf => self.str(usize::from(tag & 0x1f))?,
            0xc0 => Msg::Nil,
            0xc1 => return None,
            0xc2 => Msg::Bool(false),
            0xc3 => Msg::Bool(true),
            0xc4..=0xc6 => {
                let n = self.len(1 << (tag - 0xc4))?;
                Msg::Bin(self.take(n)?)
            }
            0xc7..=0xc9 => {
                let n = self.len(1 << (tag - 0xc7))?;
                self.take(1)?;
                self.take(n)?;
                Msg::Ext
            }
            0xca => Msg::Float(f64::from(f32::from_be_bytes(self.fixed()?))),
            0xcb => Msg::Float(f64::from_be_bytes(self.fixed()?)),
            0xcc..=0xcf => Msg::Int(i128::from(self.be(1 << (tag - 0xcc))?)),
            0xd0 => Msg::Int(i128::from(i8::from_be_bytes(self.fixed()?))),
            0xd1 => Msg::Int(i128::from(i16::from_be_bytes(self.fixed()?))),
            0xd2 => Msg::Int(i128::from(i32::from_be_bytes(self.fixed()?))),
            0xd3 => Msg::Int(i128::from(i64::from_be_bytes(self.fixed()?))),
            0xd4..=0xd8 => {
                self.take(1)?;
                self.take(1 << (tag - 0xd4))?;
                Msg::Ext
            }
            0xd9..=0xdb => {
                let n = self.len(1 << (tag - 0xd9))?;
                self.str(n)?
            }
            0xdc | 0xdd => {
                let n = self.len(if tag == 0xdc { 2 } else { 4 })?;
                self.array(n, depth)?
            }
            0xde | 0xdf => {
                let n = self.len(if tag == 0xde { 2 } else { 4 })?;
                self.map(n, depth)?
            }
            0xe0..=0xff => Msg::Int(i128::from(i8::from_be_bytes([tag]))),
        })
    }

    fn remaining(&self) -> usize {
        self.bytes.len().saturating_sub(self.pos)
    }

    fn str(&mut self, n: usize) -> Option<Msg<'a>> {
        std::str::from_utf8(self.take(n)?).ok().map(Msg::Str)
    }

    fn array(&mut self, n: usize, depth: u32) -> Option<Msg<'a>> {
        // Every element takes at least one byte, so a bogus count cannot allocate much.
        let mut items = Vec::with_capacity(n.min(self.remaining()));
        for _ in 0..n {
            items.push(self.value(depth + 1)?);
        }
        Some(Msg::Array(items))
    }

    fn map(&mut self, n: usize, depth: u32) -> Option<Msg<'a>> {
        let mut entries = Vec::with_capacity(n.min(self.remaining() / 2));
        for _ in 0..n {
            let key = self.value(depth + 1)?;
            let value = self.value(depth + 1)?;
            entries.push((key, value));
        }
        Some(Msg::Map(entries))
    }
}

fn decode_msgpack(bytes: &[u8]) -> Option<Msg<'_>> {
    MsgReader { bytes, pos: 0 }.value(0)
}

/// What a code object's metadata says about one kernel.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KernelMetadata {
    /// Byte size of each explicit argument, in order (hidden arguments the runtime fills in,
    /// `hidden_*`, left out): what `hipModuleLaunchKernel` reads through `kernelParams`.
    pub arg_sizes: Vec<usize>,
    pub vgprs: u32,
    /// Accumulation registers (gfx90a and newer), where reported.
    pub agprs: Option<u32>,
    pub sgprs: u32,
    pub vgpr_spills: u32,
    pub sgpr_spills: u32,
    /// Scratch (private segment) bytes per work-item.
    pub private_bytes: u32,
    /// Static LDS (group segment) bytes per work-group.
    pub lds_bytes: u32,
    pub wavefront_size: u32,
}

/// Reads kernel `name`'s entry from an AMDGPU code object's metadata (code object v3 or newer).
pub fn kernel_metadata(image: &[u8], name: &str) -> Option<KernelMetadata> {
    let root = decode_msgpack(amdgpu_metadata(image)?)?;
    let symbol = format!("{name}.kd");
    let kernel = root.get("amdhsa.kernels")?.as_array()?.iter().find(|k| {
        k.get(".name").and_then(Msg::as_str) == Some(name)
            || k.get(".symbol").and_then(Msg::as_str) == Some(symbol.as_str())
    })?;
    let mut arg_sizes = Vec::new();
    for arg in kernel.get(".args").and_then(Msg::as_array).unwrap_or(&[]) {
        let kind = arg.get(".value_kind")?.as_str()?;
        if kind.starts_with("hidden_") {
            continue;
        }
        arg_sizes.push(usize::try_from(arg.get(".size")?.as_int()?).ok()?);
    }
    let number = |key: &str| {
        kernel
            .get(key)
            .and_then(Msg::as_int)
            .and_then(|v| u32::try_from(v).ok())
    };
    Some(KernelMetadata {
        arg_sizes,
        vgprs: number(".vgpr_count").unwrap_or(0),
        agprs: number(".agpr_count"),
        sgprs: number(".sgpr_count").unwrap_or(0),
        vgpr_spills: number(".vgpr_spill_count").unwrap_or(0),
        sgpr_spills: number(".sgpr_spill_count").unwrap_or(0),
        private_bytes: number(".private_segment_fixed_size").unwrap_or(0),
        lds_bytes: number(".group_segment_fixed_size").unwrap_or(0),
        wavefront_size: number(".wavefront_size").unwrap_or(0),
    })
}

/// One line of resources for the compile log (hiprtc itself reports none).
fn resource_line(name: &str, m: &KernelMetadata) -> String {
    let agprs = m.agprs.map(|n| format!(", {n} AGPRs")).unwrap_or_default();
    format!(
        "amdgpu: {name}: {} VGPRs{agprs}, {} SGPRs, {} VGPRs and {} SGPRs spilled, {} bytes \
         scratch per work-item, {} bytes LDS, wave{}",
        m.vgprs,
        m.sgprs,
        m.vgpr_spills,
        m.sgpr_spills,
        m.private_bytes,
        m.lds_bytes,
        m.wavefront_size
    )
}

// ---------------------------------------------------------------------------------------------
// The device.
// ---------------------------------------------------------------------------------------------

#[derive(Debug)]
struct Buffer {
    ptr: *mut c_void,
    bytes: usize,
}

#[derive(Debug)]
struct Kernel {
    name: String,
    module: HipModule,
    function: HipFunction,
    /// Byte size of each explicit parameter, from the code object's metadata.
    param_sizes: Vec<usize>,
    /// The code object the module was loaded from, kept for the module's lifetime (the runtime
    /// may read it after `hipModuleLoadData` returns).
    _image: Vec<u8>,
}

/// One AMD GPU with one stream; see [`Device`].
#[derive(Debug)]
pub struct HipDevice {
    rt: &'static Runtime,
    device: c_int,
    info: DeviceInfo,
    driver_version: String,
    stream: HipStream,
    start: HipEvent,
    end: HipEvent,
    buffers: Vec<Buffer>,
    kernels: Vec<Kernel>,
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

fn hip_error(operation: &'static str, message: String) -> DeviceError {
    DeviceError::new(operation, message)
}

impl HipDevice {
    /// Opens AMD GPU `ordinal`: selects it and creates a stream and two timing events.
    pub fn open(ordinal: usize) -> Result<HipDevice, Unavailable> {
        let rt = runtime()?;
        let (probe, device) = probe_ordinal(rt, ordinal)?;
        let fail = |what: &str, e: String| Unavailable::Runtime(format!("{what}: {e}"));
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

    /// Page-locked host memory (`hipHostMalloc`) is not wired up on this backend yet.
    fn refuse_pinned(&self, pinned: bool) -> Result<(), DeviceError> {
        if pinned {
            return Err(DeviceError::new(
                "host copy",
                "pinned host memory is not supported by kernelbook's HIP backend yet",
            ));
        }
        Ok(())
    }

    fn check(&self, operation: &'static str, status: HipStatus) -> Result<(), DeviceError> {
        self.rt
            .check(status)
            .map_err(|message| hip_error(operation, message))
    }

    /// Makes this GPU the calling thread's current device (HIP's one per-thread state).
    fn select(&self, operation: &'static str) -> Result<(), DeviceError> {
        // SAFETY: selects the device index this value was opened on; no pointers.
        self.check(operation, unsafe { (self.rt.set_device)(self.device) })
    }

    fn buffer(&self, operation: &'static str, id: BufferId) -> Result<&Buffer, DeviceError> {
        self.buffers
            .get(id.0)
            .ok_or_else(|| DeviceError::new(operation, format!("no buffer {}", id.0)))
    }

    fn kernel(&self, id: KernelId) -> Result<&Kernel, DeviceError> {
        self.kernels
            .get(id.0)
            .ok_or_else(|| DeviceError::new("kernel", format!("no kernel {}", id.0)))
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
        // freed only when this device is dropped, after a synchronize; the stream is live.
        self.check(operation, unsafe {
            (self.rt.memset_d8_async)(buffer.ptr, byte, buffer.bytes, self.stream)
        })
    }

    fn stream_synchronize(&self, operation: &'static str) -> Result<(), DeviceError> {
        // SAFETY: the stream is live until this device is dropped.
        self.check(operation, unsafe {
            (self.rt.stream_synchronize)(self.stream)
        })
    }

    /// Registers (VGPRs), scratch and static LDS of a loaded function.
    fn resources(&self, function: HipFunction) -> Result<LoadedKernel, DeviceError> {
        let attribute = |which: c_int| -> Result<u32, DeviceError> {
            let mut value: c_int = 0;
            // SAFETY: the function handle is live while its module is (the caller has just
            // loaded it); the runtime writes one int to a local.
            self.check("load", unsafe {
                (self.rt.func_get_attribute)(&mut value, which, function)
            })?;
            Ok(to_u32(value))
        };
        Ok(LoadedKernel {
            registers: attribute(func_attr::NUM_REGS)?,
            local_bytes: attribute(func_attr::LOCAL_SIZE_BYTES)?,
            shared_bytes: attribute(func_attr::SHARED_SIZE_BYTES)?,
        })
    }

    fn launch(
        &self,
        kernel: KernelId,
        shape: &LaunchShape,
        args: &[KernelArg],
    ) -> Result<(), DeviceError> {
        let kernel = self.kernel(kernel)?;
        crate::backend::check_kernel_args(&kernel.name, &kernel.param_sizes, args)?;
        check_shape(shape)?;
        // Each argument's bytes at the start of an 8-byte slot, in the kernel's byte order (the
        // host's); `check_args` made sure each parameter is exactly that argument's size.
        let mut slots = Vec::with_capacity(args.len());
        for arg in args {
            let mut slot = [0u8; 8];
            match *arg {
                KernelArg::Buffer(id) => {
                    let address = self.buffer("launch", id)?.ptr as usize as u64;
                    slot = address.to_ne_bytes();
                }
                KernelArg::I32(v) => slot[..4].copy_from_slice(&v.to_ne_bytes()),
                KernelArg::U32(v) => slot[..4].copy_from_slice(&v.to_ne_bytes()),
                KernelArg::I64(v) => slot = v.to_ne_bytes(),
                KernelArg::U64(v) => slot = v.to_ne_bytes(),
                KernelArg::F32(v) => slot[..4].copy_from_slice(&v.to_ne_bytes()),
            }
            slots.push(slot);
        }
        let mut params: Vec<*mut c_void> = slots
            .iter_mut()
            .map(|slot| slot.as_mut_ptr().cast::<c_void>())
            .collect();
        let params_ptr = if params.is_empty() {
            ptr::null_mut()
        } else {
            params.as_mut_ptr()
        };
        let [gx, gy, gz] = shape.grid;
        let [bx, by, bz] = shape.block;
        // SAFETY: `hipModuleLaunchKernel` reads one pointer per explicit kernel parameter from
        // `params` and copies that parameter's size from behind it. `check_args` matched the
        // number of arguments and each one's size against the code object's metadata, so every
        // read stays inside `slots`, which outlives the call (the runtime copies the values
        // when the launch is queued). The function handle and stream are live. That the
        // arguments mean what the kernel expects, and that it stays inside the buffers, is the
        // lab author's responsibility; the buffers outlive the launch because they are only
        // freed when the device is dropped, after a synchronize.
        let status = unsafe {
            (self.rt.module_launch_kernel)(
                kernel.function,
                gx,
                gy,
                gz,
                bx,
                by,
                bz,
                shape.shared_bytes,
                self.stream,
                params_ptr,
                ptr::null_mut(),
            )
        };
        self.rt
            .check(status)
            .map_err(|e| DeviceError::new("launch", format!("kernel `{}`: {e}", kernel.name)))
    }

    fn copy(&self, dst: BufferId, src: BufferId, bytes: usize) -> Result<(), DeviceError> {
        if dst == src {
            return Err(DeviceError::new(
                "copy",
                "source and destination are the same buffer",
            ));
        }
        let source = self.buffer("copy", src)?;
        let destination = self.buffer("copy", dst)?;
        if bytes > source.bytes || bytes > destination.bytes {
            return Err(DeviceError::new(
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
        // above), freed only after a synchronize when the device is dropped; the stream is live.
        self.check("copy", unsafe {
            (self.rt.memcpy_async)(
                destination.ptr,
                source.ptr,
                bytes,
                HIP_MEMCPY_DEVICE_TO_DEVICE,
                self.stream,
            )
        })
    }
}

/// Refuses launches HIP cannot run, before the runtime answers a bare "invalid value": HIP
/// requires grid × block < 2³² in each dimension.
fn check_shape(shape: &LaunchShape) -> Result<(), DeviceError> {
    for (axis, (&grid, &block)) in ["x", "y", "z"]
        .iter()
        .zip(shape.grid.iter().zip(shape.block.iter()))
    {
        if u64::from(grid) * u64::from(block) >= 1 << 32 {
            return Err(DeviceError::new(
                "launch",
                format!(
                    "{grid} blocks of {block} threads in {axis} make 2^32 or more work-items, \
                     which HIP cannot launch"
                ),
            ));
        }
    }
    Ok(())
}

impl HipDevice {
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
            return Err(DeviceError::new("alloc", "cannot allocate an empty buffer"));
        }
        let buffer = self.allocate("alloc", bytes)?;
        self.buffers.push(buffer);
        Ok(BufferId(self.buffers.len() - 1))
    }

    /// Writes `data` to the start of the buffer; returns once the copy is complete.
    fn upload(&mut self, buffer: BufferId, data: &[u8]) -> Result<(), DeviceError> {
        let target = self.buffer("upload", buffer)?;
        if data.len() > target.bytes {
            return Err(DeviceError::new(
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
        let queued = self.check("upload", unsafe {
            (self.rt.memcpy_async)(
                target.ptr,
                data.as_ptr().cast::<c_void>(),
                data.len(),
                HIP_MEMCPY_HOST_TO_DEVICE,
                self.stream,
            )
        });
        let synchronized = self.stream_synchronize("upload");
        queued.and(synchronized)
    }

    /// Reads the first `out.len()` bytes of the buffer, after all queued work.
    fn download(&mut self, buffer: BufferId, out: &mut [u8]) -> Result<(), DeviceError> {
        let source = self.buffer("download", buffer)?;
        if out.len() > source.bytes {
            return Err(DeviceError::new(
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
            self.check("download", unsafe {
                (self.rt.memcpy_async)(
                    out.as_mut_ptr().cast::<c_void>(),
                    source.ptr,
                    out.len(),
                    HIP_MEMCPY_DEVICE_TO_HOST,
                    self.stream,
                )
            })
        };
        let synchronized = self.stream_synchronize("download");
        queued.and(synchronized)
    }

    fn fill(&mut self, buffer: BufferId, byte: u8) -> Result<(), DeviceError> {
        let target = self.buffer("fill", buffer)?;
        self.memset("fill", target, byte)
    }

    fn load(&mut self, kernel: &CompiledKernel) -> Result<(KernelId, LoadedKernel), DeviceError> {
        // `hipModuleLoadData` takes a bare pointer and parses what it finds there, so only
        // hand it an AMDGPU ELF code object (what hiprtc produces).
        if !is_amdgpu_elf(&kernel.image) {
            return Err(DeviceError::new(
                "load",
                format!(
                    "the image of `{}` is not an AMDGPU code object",
                    kernel.name
                ),
            ));
        }
        let name = CString::new(kernel.name.as_str())
            .map_err(|_| DeviceError::new("load", "the kernel name contains a NUL byte"))?;
        self.select("load")?;
        let image = kernel.image.clone();
        let mut module: HipModule = ptr::null_mut();
        // SAFETY: `image` is a complete ELF code object (checked above) in a heap buffer that is
        // stored with the module and so outlives it; the runtime writes one handle to a local.
        self.check("load", unsafe {
            (self.rt.module_load_data)(&mut module, image.as_ptr().cast::<c_void>())
        })?;
        let unload = |module: HipModule| {
            // SAFETY: the module was loaded just above and is not stored anywhere.
            let _ = unsafe { (self.rt.module_unload)(module) };
        };
        let mut function: HipFunction = ptr::null_mut();
        // SAFETY: the module is live and `name` is NUL-terminated; the runtime writes one
        // handle to a local.
        let found = unsafe { (self.rt.module_get_function)(&mut function, module, name.as_ptr()) };
        if let Err(e) = self.rt.check(found) {
            unload(module);
            return Err(DeviceError::new(
                "load",
                format!(
                    "no kernel `{}` in the image (is it declared extern \"C\" __global__?): {e}",
                    kernel.name
                ),
            ));
        }
        let Some(metadata) = kernel_metadata(&image, &kernel.name) else {
            unload(module);
            return Err(DeviceError::new(
                "load",
                format!(
                    "the code object of `{}` has no metadata kernelbook can read (code object \
                     v3 or newer expected), so its arguments cannot be checked",
                    kernel.name
                ),
            ));
        };
        let loaded = match self.resources(function) {
            Ok(loaded) => loaded,
            Err(e) => {
                unload(module);
                return Err(e);
            }
        };
        self.kernels.push(Kernel {
            name: kernel.name.clone(),
            module,
            function,
            param_sizes: metadata.arg_sizes,
            _image: image,
        });
        Ok((KernelId(self.kernels.len() - 1), loaded))
    }

    fn blocks_per_sm(
        &self,
        kernel: KernelId,
        block_threads: u32,
        dynamic_shared_bytes: u32,
    ) -> Result<u32, DeviceError> {
        let kernel = self.kernel(kernel)?;
        let threads = c_int::try_from(block_threads).map_err(|_| {
            DeviceError::new("occupancy", format!("{block_threads} threads is too many"))
        })?;
        let shared = usize::try_from(dynamic_shared_bytes).map_err(|_| {
            DeviceError::new(
                "occupancy",
                format!("{dynamic_shared_bytes} bytes is too many"),
            )
        })?;
        self.select("occupancy")?;
        let mut blocks: c_int = 0;
        // SAFETY: the function handle is live while its module is; the runtime writes one int
        // to a local.
        self.check("occupancy", unsafe {
            (self.rt.occupancy)(&mut blocks, kernel.function, threads, shared)
        })?;
        Ok(to_u32(blocks))
    }

    fn run(&mut self, op: &Op<'_>) -> Result<(), DeviceError> {
        match *op {
            Op::Launch {
                kernel,
                ref shape,
                args,
            } => self.launch(kernel, shape, args),
            Op::Copy { dst, src, bytes } => self.copy(dst, src, bytes),
            Op::Transpose { .. } => Err(DeviceError::new("transpose", NO_LIBRARY_TRANSPOSE)),
            Op::HostToDevice { dst, bytes, pinned } => {
                self.refuse_pinned(pinned)?;
                let target = self.buffer("host to device", dst)?;
                let staged = self
                    .pageable
                    .get(..bytes)
                    .filter(|_| bytes <= target.bytes)
                    .ok_or_else(|| {
                        DeviceError::new("host to device", "nothing staged of that size")
                    })?;
                // SAFETY: a live device allocation of at least `bytes` bytes; the source is the
                // staging vector, which is not touched until the stream is synchronised (every
                // later use of it goes through `read_host` or `stage_host`, which synchronise).
                self.check("host to device", unsafe {
                    (self.rt.memcpy_async)(
                        target.ptr,
                        staged.as_ptr().cast::<c_void>(),
                        bytes,
                        HIP_MEMCPY_HOST_TO_DEVICE,
                        self.stream,
                    )
                })
            }
            Op::DeviceToHost { src, bytes, pinned } => {
                self.refuse_pinned(pinned)?;
                let source = self.buffer("device to host", src)?;
                let source_ptr = source.ptr;
                if bytes > source.bytes {
                    return Err(DeviceError::new("device to host", "range out of bounds"));
                }
                self.pageable.resize(bytes, 0);
                let staging = self.pageable.as_mut_ptr().cast::<c_void>();
                // SAFETY: as above, in the other direction.
                self.check("device to host", unsafe {
                    (self.rt.memcpy_async)(
                        staging,
                        source_ptr,
                        bytes,
                        HIP_MEMCPY_DEVICE_TO_HOST,
                        self.stream,
                    )
                })
            }
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
            .ok_or_else(|| DeviceError::new("read host", "the staging buffer is too small"))?;
        out.copy_from_slice(staged);
        Ok(())
    }

    fn transpose_library(&mut self) -> Result<String, DeviceError> {
        Err(DeviceError::of_kind(
            super::DeviceErrorKind::Unavailable,
            "transpose",
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
            let bytes = usize::try_from(bytes)
                .map_err(|_| DeviceError::new("flush L2", format!("{bytes} bytes is too large")))?;
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

// ---------------------------------------------------------------------------------------------
// hiprtc.
// ---------------------------------------------------------------------------------------------

/// hiprtc's functions; lives in a `static` like [`Runtime`].
struct RtcApi {
    file: String,
    version: FnRtcVersion,
    create_program: FnRtcCreateProgram,
    compile_program: FnRtcCompileProgram,
    destroy_program: FnRtcDestroyProgram,
    get_program_log_size: FnRtcSizeOut,
    get_program_log: FnRtcBytesOut,
    get_code_size: FnRtcSizeOut,
    get_code: FnRtcBytesOut,
    get_error_string: FnRtcErrorString,
    _library: Library,
}

impl std::fmt::Debug for RtcApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RtcApi")
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

impl RtcApi {
    fn from_library(library: Library, file: String) -> Result<RtcApi, Unavailable> {
        let lib = &library;
        let f = file.as_str();
        // SAFETY (every `symbol` call): each type alias is the C declaration of that function
        // in ROCm 5.2's and ROCm 6's `hiprtc.h` (`hiprtcResult` is an `int`, `hiprtcProgram` a
        // pointer), and the pointers are stored beside `library`, which outlives every call.
        unsafe {
            Ok(RtcApi {
                version: symbol(lib, f, c"hiprtcVersion")?,
                create_program: symbol(lib, f, c"hiprtcCreateProgram")?,
                compile_program: symbol(lib, f, c"hiprtcCompileProgram")?,
                destroy_program: symbol(lib, f, c"hiprtcDestroyProgram")?,
                get_program_log_size: symbol(lib, f, c"hiprtcGetProgramLogSize")?,
                get_program_log: symbol(lib, f, c"hiprtcGetProgramLog")?,
                get_code_size: symbol(lib, f, c"hiprtcGetCodeSize")?,
                get_code: symbol(lib, f, c"hiprtcGetCode")?,
                get_error_string: symbol(lib, f, c"hiprtcGetErrorString")?,
                file,
                _library: library,
            })
        }
    }

    fn error_text(&self, status: RtcStatus) -> String {
        // SAFETY: `hiprtcGetErrorString` takes any code and returns a static string or null.
        let text = unsafe { static_text((self.get_error_string)(status)) };
        one_line(&text.unwrap_or_else(|| format!("hiprtc error {status}")))
    }
}

static HIPRTC: OnceLock<Result<RtcApi, Unavailable>> = OnceLock::new();

/// hiprtc, loaded once per process: `libhiprtc` (ROCm 6 and 7), else the hiprtc inside
/// `libamdhip64` (ROCm 5).
fn hiprtc_api() -> Result<&'static RtcApi, Unavailable> {
    HIPRTC
        .get_or_init(|| {
            let root = rocm_path();
            let standalone = library_candidates(&HIPRTC_LIBRARY_NAMES, root.as_deref());
            let bundled = library_candidates(&RUNTIME_LIBRARY_NAMES, root.as_deref());
            let mut last_error = None;
            for candidates in [standalone, bundled] {
                if let Some((library, file)) = open_first(&candidates) {
                    match RtcApi::from_library(library, file) {
                        Ok(api) => return Ok(api),
                        Err(e) => last_error = Some(e),
                    }
                }
            }
            Err(match last_error {
                Some(Unavailable::Runtime(why)) => {
                    Unavailable::Runtime(format!("hiprtc could not be loaded: {why}"))
                }
                _ => Unavailable::NoCompiler,
            })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// Serialises compiles: hiprtc (through comgr) is not documented to be thread-safe.
static COMPILE_LOCK: Mutex<()> = Mutex::new(());

/// hiprtc, the runtime compiler: HIP/CUDA-style C++ source to an AMDGPU code object. Needs no
/// GPU.
#[derive(Debug, Clone)]
pub struct Hiprtc {
    api: &'static RtcApi,
    version: String,
}

impl Hiprtc {
    /// Loads hiprtc and reads its version. The HIP runtime's version is added where the runtime
    /// loads too, because ROCm 5's `hiprtcVersion` answers a fixed "9.0".
    pub fn load() -> Result<Hiprtc, Unavailable> {
        let api = hiprtc_api()?;
        let mut major: c_int = 0;
        let mut minor: c_int = 0;
        // SAFETY: hiprtc writes one int through each pointer, both to live locals.
        let status = unsafe { (api.version)(&mut major, &mut minor) };
        if status != HIPRTC_SUCCESS {
            return Err(Unavailable::Runtime(format!(
                "hiprtc could not report its version: {}",
                api.error_text(status)
            )));
        }
        let mut version = format!("hiprtc {major}.{minor}");
        if let Some(runtime) = runtime().ok().and_then(|rt| rt.version().ok()) {
            version = format!("{version} (HIP {})", format_hip_version(runtime));
        }
        Ok(Hiprtc { api, version })
    }

    /// The library hiprtc was loaded from, as it was named when opened (e.g. "libhiprtc.so",
    /// or "libamdhip64.so.5" for ROCm 5).
    pub fn library(&self) -> &str {
        &self.api.file
    }
}

/// Every option given to hiprtc: the target, C++17 (as for NVRTC), `-O3`, then the lab's flags
/// (later options win, so a lab can override the optimisation level).
pub fn hiprtc_options(arch: &str, flags: &[String]) -> Vec<String> {
    let mut options = vec![
        format!("--offload-arch={arch}"),
        "-std=c++17".to_string(),
        "-O3".to_string(),
    ];
    options.extend(flags.iter().cloned());
    options
}

/// A hiprtc program, destroyed on drop whatever path the compile takes.
struct Program {
    api: &'static RtcApi,
    handle: RtcProgram,
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the handle came from `hiprtcCreateProgram` and is destroyed only here.
        let _ = unsafe { (self.api.destroy_program)(&mut self.handle) };
    }
}

impl Program {
    /// Bytes hiprtc returns through a size query and a copy-out call.
    fn bytes(&self, size_of: FnRtcSizeOut, copy: FnRtcBytesOut) -> Result<Vec<u8>, RtcStatus> {
        let mut size = 0usize;
        // SAFETY: the program is live; hiprtc writes one `size_t` to a local.
        let status = unsafe { size_of(self.handle, &mut size) };
        if status != HIPRTC_SUCCESS {
            return Err(status);
        }
        let mut bytes = vec![0u8; size];
        if size > 0 {
            // SAFETY: the program is live and `bytes` has exactly the `size` bytes hiprtc said
            // it would write.
            let status = unsafe { copy(self.handle, bytes.as_mut_ptr().cast::<c_char>()) };
            if status != HIPRTC_SUCCESS {
                return Err(status);
            }
        }
        Ok(bytes)
    }

    fn log(&self) -> Result<String, RtcStatus> {
        let bytes = self.bytes(self.api.get_program_log_size, self.api.get_program_log)?;
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        Ok(String::from_utf8_lossy(&bytes[..end])
            .trim_end()
            .to_string())
    }

    fn code(&self) -> Result<Vec<u8>, RtcStatus> {
        self.bytes(self.api.get_code_size, self.api.get_code)
    }
}

impl Compiler for Hiprtc {
    fn version(&self) -> String {
        self.version.clone()
    }

    fn compile(&self, request: &CompileRequest<'_>) -> Result<CompiledKernel, CompileError> {
        let api = self.api;
        let options = hiprtc_options(request.arch, request.flags);
        let c_options = options
            .iter()
            .map(|option| CString::new(option.as_str()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| {
                CompileError::Compiler(format!(
                    "a compiler option contains a NUL byte: {options:?}"
                ))
            })?;
        let option_ptrs: Vec<*const c_char> = c_options.iter().map(|o| o.as_ptr()).collect();
        let option_count = c_int::try_from(option_ptrs.len())
            .map_err(|_| CompileError::Compiler("too many compiler options".to_string()))?;
        let (name, source) = super::program_strings(request, &options)?;
        let _guard = COMPILE_LOCK
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut handle: RtcProgram = ptr::null_mut();
        // SAFETY: `source` and `name` are NUL-terminated and outlive the program (declared
        // before it, so dropped after it); no headers are passed (count 0, null arrays); hiprtc
        // writes one handle to a local.
        let created = unsafe {
            (api.create_program)(
                &mut handle,
                source.as_ptr(),
                name.as_ptr(),
                0,
                ptr::null(),
                ptr::null(),
            )
        };
        if created != HIPRTC_SUCCESS || handle.is_null() {
            return Err(CompileError::Compiler(format!(
                "hiprtc could not create the program: {}",
                api.error_text(created)
            )));
        }
        let program = Program { api, handle };
        // SAFETY: the program is live; `option_ptrs` holds `option_count` pointers to
        // NUL-terminated strings in `c_options`, which outlives the call.
        let compiled =
            unsafe { (api.compile_program)(program.handle, option_count, option_ptrs.as_ptr()) };
        let log = program.log().unwrap_or_else(|status| {
            format!(
                "(hiprtc could not return its log: {})",
                api.error_text(status)
            )
        });
        match compiled {
            HIPRTC_SUCCESS => {}
            HIPRTC_ERROR_COMPILATION | HIPRTC_ERROR_INVALID_OPTION => {
                let log = if log.trim().is_empty() {
                    api.error_text(compiled)
                } else {
                    log
                };
                return Err(CompileError::Rejected { log, options });
            }
            status => {
                return Err(CompileError::Compiler(format!(
                    "hiprtc failed: {}\n{log}",
                    api.error_text(status)
                )));
            }
        }
        let image = program.code().map_err(|status| {
            CompileError::Compiler(format!(
                "hiprtc produced no code object for {}: {}",
                request.arch,
                api.error_text(status)
            ))
        })?;
        if image.is_empty() {
            return Err(CompileError::Compiler(format!(
                "hiprtc produced no code object for {}",
                request.arch
            )));
        }
        if !is_amdgpu_elf(&image) {
            return Err(CompileError::Compiler(format!(
                "hiprtc returned {} bytes for {} that are not an AMDGPU ELF code object",
                image.len(),
                request.arch
            )));
        }
        let mut log = log;
        if let Some(metadata) = kernel_metadata(&image, request.name) {
            if !log.is_empty() {
                log.push('\n');
            }
            log.push_str(&resource_line(request.name, &metadata));
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

    /// The `NT_AMDGPU_METADATA` payload hiprtc (ROCm 5.2) wrote for `copy_scalar` for gfx90a.
    const COPY_SCALAR_METADATA: &[u8] = b"\x83\xaeamdhsa.kernels\x91\xde\x00\x11\xab.agpr_count\
          \x00\xa5.args\x93\x84\xae.address_space\xa6global\xa7.offset\x00\xa5.size\x08\xab.val\
          ue_kind\xadglobal_buffer\x85\xa7.access\xa9read_only\xae.address_space\xa6global\xa7.\
          offset\x08\xa5.size\x08\xab.value_kind\xadglobal_buffer\x83\xa7.offset\x10\xa5.size\
          \x04\xab.value_kind\xa8by_value\xb9.group_segment_fixed_size\x00\xb6.kernarg_segment\
          _align\x08\xb5.kernarg_segment_size\x14\xa9.language\xa8OpenCL C\xb1.language_versio\
          n\x92\x02\x00\xb8.max_flat_workgroup_size\xcd\x04\x00\xa5.name\xabcopy_scalar\xbb.pr\
          ivate_segment_fixed_size\x00\xab.sgpr_count\x11\xb1.sgpr_spill_count\x00\xa7.symbol\
          \xaecopy_scalar.kd\xb3.uses_dynamic_stack\xc2\xab.vgpr_count\x11\xb1.vgpr_spill_coun\
          t\x00\xaf.wavefront_size@\xadamdhsa.target\xb9amdgcn-amd-amdhsa--gfx90a\xaeamdhsa.ve\
          rsion\x92\x01\x01";

    /// A minimal 64-bit AMDGPU ELF file with one note section holding `notes`.
    fn elf_with_notes(notes: &[u8]) -> Vec<u8> {
        let mut image = vec![0u8; 64];
        image[..4].copy_from_slice(b"\x7fELF");
        image[4] = 2; // ELFCLASS64
        image[5] = 1; // little-endian
        image[6] = 1; // EV_CURRENT
        image[18..20].copy_from_slice(&EM_AMDGPU.to_le_bytes());
        let notes_at = image.len();
        image.extend_from_slice(notes);
        while !image.len().is_multiple_of(8) {
            image.push(0);
        }
        let table_at = image.len();
        // Section 0 (null), section 1 (the notes).
        image.extend_from_slice(&[0u8; 64]);
        let mut header = [0u8; 64];
        header[4..8].copy_from_slice(&SHT_NOTE.to_le_bytes());
        header[0x18..0x20].copy_from_slice(&(notes_at as u64).to_le_bytes());
        header[0x20..0x28].copy_from_slice(&(notes.len() as u64).to_le_bytes());
        image.extend_from_slice(&header);
        image[0x28..0x30].copy_from_slice(&(table_at as u64).to_le_bytes());
        image[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        image[0x3c..0x3e].copy_from_slice(&2u16.to_le_bytes());
        image
    }

    fn note(owner: &[u8], kind: u32, desc: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&(owner.len() as u32 + 1).to_le_bytes());
        out.extend_from_slice(&(desc.len() as u32).to_le_bytes());
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(owner);
        out.push(0);
        while !out.len().is_multiple_of(4) {
            out.push(0);
        }
        out.extend_from_slice(desc);
        while !out.len().is_multiple_of(4) {
            out.push(0);
        }
        out
    }

    #[test]
    fn hip_versions_read_as_major_minor_patch() {
        assert_eq!(format_hip_version(50221153), "5.2.21153");
        assert_eq!(format_hip_version(60241133), "6.2.41133");
        assert_eq!(format_hip_version(70051831), "7.0.51831");
        assert_eq!(format_hip_version(0), "unknown (0)");
    }

    #[test]
    fn library_candidates_try_the_loader_path_first_then_rocm() {
        let names = library_candidates(&RUNTIME_LIBRARY_NAMES, None);
        assert_eq!(
            &names[..4],
            [
                "libamdhip64.so",
                "libamdhip64.so.7",
                "libamdhip64.so.6",
                "libamdhip64.so.5"
            ]
        );
        assert_eq!(names[4], "/opt/rocm/lib/libamdhip64.so");
        assert_eq!(names.len(), 8);
        let names = library_candidates(&HIPRTC_LIBRARY_NAMES, Some("/opt/rocm-6.2.0/"));
        assert_eq!(
            &names[..4],
            [
                "libhiprtc.so",
                "libhiprtc.so.7",
                "libhiprtc.so.6",
                "/opt/rocm-6.2.0/lib/libhiprtc.so"
            ]
        );
        assert_eq!(
            names.last().map(String::as_str),
            Some("/opt/rocm/lib/libhiprtc.so.6")
        );
        // The same directory twice is tried once.
        assert_eq!(
            library_candidates(&["libx.so"], Some("/opt/rocm")),
            ["libx.so", "/opt/rocm/lib/libx.so"]
        );
    }

    #[test]
    fn arch_names_lose_their_feature_flags() {
        assert_eq!(
            parse_gcn_arch_name("gfx90a:sramecc+:xnack-").as_deref(),
            Some("gfx90a")
        );
        assert_eq!(
            parse_gcn_arch_name("gfx942:sramecc+:xnack-").as_deref(),
            Some("gfx942")
        );
        assert_eq!(parse_gcn_arch_name("gfx1100").as_deref(), Some("gfx1100"));
        assert_eq!(
            parse_gcn_arch_name(" gfx908:xnack- ").as_deref(),
            Some("gfx908")
        );
        assert_eq!(parse_gcn_arch_name(""), None);
        assert_eq!(parse_gcn_arch_name("gfx"), None);
        assert_eq!(parse_gcn_arch_name("AMD Instinct MI210"), None);
        assert_eq!(parse_gcn_arch_name("gfx9 0a"), None);
        assert_eq!(parse_gcn_arch_name("sm_90"), None);
    }

    #[test]
    fn the_arch_name_is_read_at_each_layouts_offset() {
        for layout in [PropsLayout::R0600, PropsLayout::R0000] {
            let mut props = vec![0u8; PROPS_BUFFER_BYTES];
            props[..18].copy_from_slice(b"AMD Instinct MI210");
            let offset = layout.arch_name_offset();
            let arch = b"gfx90a:sramecc+:xnack-";
            props[offset..offset + arch.len()].copy_from_slice(arch);
            assert_eq!(
                arch_from_properties(&props, offset).as_deref(),
                Some("gfx90a")
            );
        }
        // The wrong offset reads no architecture, and a short buffer is not read past.
        let props = vec![0u8; PROPS_BUFFER_BYTES];
        assert_eq!(arch_from_properties(&props, 396), None);
        assert_eq!(arch_from_properties(&props[..500], 396), None);
        assert_eq!(arch_from_properties(&props, usize::MAX), None);
        // An unterminated field is read to its end.
        let mut props = vec![b'x'; 1500];
        props[1160..1166].copy_from_slice(b"gfx942");
        assert_eq!(arch_from_properties(&props, 1160), None);
        props[1166] = 0;
        assert_eq!(
            arch_from_properties(&props, 1160).as_deref(),
            Some("gfx942")
        );
    }

    #[test]
    fn recognises_amdgpu_elf_code_objects() {
        let image = elf_with_notes(&[]);
        assert!(is_amdgpu_elf(&image));
        let mut x86 = image.clone();
        x86[18..20].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
        assert!(!is_amdgpu_elf(&x86));
        let mut elf32 = image.clone();
        elf32[4] = 1;
        assert!(!is_amdgpu_elf(&elf32));
        assert!(!is_amdgpu_elf(b"\x7fELF"));
        assert!(!is_amdgpu_elf(b""));
        assert!(!is_amdgpu_elf(b"__CLANG_OFFLOAD_BUNDLE__"));
    }

    #[test]
    fn reads_kernel_metadata_from_a_code_object() {
        let image = elf_with_notes(&note(b"AMDGPU", NT_AMDGPU_METADATA, COPY_SCALAR_METADATA));
        let metadata = kernel_metadata(&image, "copy_scalar");
        assert_eq!(
            metadata,
            Some(KernelMetadata {
                arg_sizes: vec![8, 8, 4],
                vgprs: 17,
                agprs: Some(0),
                sgprs: 17,
                vgpr_spills: 0,
                sgpr_spills: 0,
                private_bytes: 0,
                lds_bytes: 0,
                wavefront_size: 64,
            })
        );
        assert_eq!(kernel_metadata(&image, "copy_float4"), None);
        // Other owners and note types are skipped.
        let mut notes = note(b"GNU", 1, b"abcd");
        notes.extend(note(b"AMDGPU", 10, b"yaml"));
        notes.extend(note(b"AMDGPU", NT_AMDGPU_METADATA, COPY_SCALAR_METADATA));
        let image = elf_with_notes(&notes);
        assert_eq!(
            kernel_metadata(&image, "copy_scalar").map(|m| m.arg_sizes),
            Some(vec![8, 8, 4])
        );
        let line = resource_line(
            "copy_scalar",
            &kernel_metadata(&image, "copy_scalar").unwrap_or_default(),
        );
        assert!(
            line.starts_with("amdgpu: copy_scalar: 17 VGPRs, 0 AGPRs, 17 SGPRs"),
            "{line}"
        );
        assert!(!line.contains('\n'));
    }

    #[test]
    fn hidden_arguments_are_not_counted() {
        // {"amdhsa.kernels": [{".name": "k", ".args": [
        //     {".size": 8, ".value_kind": "global_buffer"},
        //     {".size": 4, ".value_kind": "by_value"},
        //     {".size": 8, ".value_kind": "hidden_global_offset_x"}]}]}
        let mut m = vec![0x81];
        m.push(0xae);
        m.extend_from_slice(b"amdhsa.kernels");
        m.extend_from_slice(&[0x91, 0x82, 0xa5]);
        m.extend_from_slice(b".name");
        m.extend_from_slice(&[0xa1, b'k', 0xa5]);
        m.extend_from_slice(b".args");
        m.push(0x93);
        for (size, kind) in [
            (8u8, &b"global_buffer"[..]),
            (4, b"by_value"),
            (8, b"hidden_global_offset_x"),
        ] {
            m.extend_from_slice(&[0x82, 0xa5]);
            m.extend_from_slice(b".size");
            m.push(size);
            m.push(0xab);
            m.extend_from_slice(b".value_kind");
            m.push(0xd9); // str8, for the longer names
            m.push(kind.len() as u8);
            m.extend_from_slice(kind);
        }
        let image = elf_with_notes(&note(b"AMDGPU", NT_AMDGPU_METADATA, &m));
        let metadata = kernel_metadata(&image, "k");
        assert_eq!(metadata.map(|m| m.arg_sizes), Some(vec![8, 4]));
    }

    #[test]
    fn decodes_msgpack_and_refuses_truncated_or_hostile_input() {
        assert_eq!(decode_msgpack(&[0x05]), Some(Msg::Int(5)));
        assert_eq!(decode_msgpack(&[0xff]), Some(Msg::Int(-1)));
        assert_eq!(decode_msgpack(&[0xd0, 0x80]), Some(Msg::Int(-128)));
        assert_eq!(decode_msgpack(&[0xcd, 0x04, 0x00]), Some(Msg::Int(1024)));
        assert_eq!(
            decode_msgpack(&[0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
            Some(Msg::Int(i128::from(u64::MAX)))
        );
        assert_eq!(decode_msgpack(&[0xc3]), Some(Msg::Bool(true)));
        assert_eq!(decode_msgpack(&[0xc0]), Some(Msg::Nil));
        assert_eq!(decode_msgpack(&[0xa2, b'h', b'i']), Some(Msg::Str("hi")));
        assert_eq!(decode_msgpack(&[0xc4, 0x01, 0x07]), Some(Msg::Bin(&[7])));
        assert_eq!(
            decode_msgpack(&[0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0]),
            Some(Msg::Float(1.0))
        );
        assert_eq!(decode_msgpack(&[0xd4, 0x01, 0x02]), Some(Msg::Ext));
        assert_eq!(
            decode_msgpack(&[0x92, 0x01, 0x02]),
            Some(Msg::Array(vec![Msg::Int(1), Msg::Int(2)]))
        );
        // Truncated input, a reserved tag, a huge claimed length, deep nesting.
        assert_eq!(decode_msgpack(&[0xa5, b'a']), None);
        assert_eq!(decode_msgpack(&[0xc1]), None);
        assert_eq!(decode_msgpack(&[0xdd, 0xff, 0xff, 0xff, 0xff]), None);
        assert_eq!(decode_msgpack(&[0xdf, 0xff, 0xff, 0xff, 0xff, 0x01]), None);
        assert_eq!(decode_msgpack(&[0x91; 100]), None);
        assert_eq!(decode_msgpack(&[]), None);
        // Every truncation of real metadata fails cleanly.
        for end in 0..COPY_SCALAR_METADATA.len() {
            assert_eq!(decode_msgpack(&COPY_SCALAR_METADATA[..end]), None);
        }
        assert!(decode_msgpack(COPY_SCALAR_METADATA).is_some());
    }

    #[test]
    fn malformed_elf_files_have_no_metadata() {
        let image = elf_with_notes(&note(b"AMDGPU", NT_AMDGPU_METADATA, COPY_SCALAR_METADATA));
        for end in 0..image.len() {
            let _ = kernel_metadata(&image[..end], "copy_scalar");
        }
        let mut bad_table = image.clone();
        bad_table[0x28..0x30].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(kernel_metadata(&bad_table, "copy_scalar"), None);
        let mut bad_count = image.clone();
        bad_count[0x3c..0x3e].copy_from_slice(&u16::MAX.to_le_bytes());
        assert_eq!(
            kernel_metadata(&bad_count, "copy_scalar").map(|m| m.arg_sizes),
            Some(vec![8, 8, 4])
        );
        let mut bad_note = note(b"AMDGPU", NT_AMDGPU_METADATA, COPY_SCALAR_METADATA);
        bad_note[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            kernel_metadata(&elf_with_notes(&bad_note), "copy_scalar"),
            None
        );
    }

    #[test]
    fn arguments_are_checked_against_the_metadata() {
        let sizes = [8, 8, 4];
        let good = [
            KernelArg::Buffer(BufferId(0)),
            KernelArg::Buffer(BufferId(1)),
            KernelArg::I32(5),
        ];
        assert!(crate::backend::check_kernel_args("k", &sizes, &good).is_ok());
        let error = crate::backend::check_kernel_args("k", &sizes, &good[..2])
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            error.as_deref(),
            Some("launch: kernel `k` takes 3 parameters, the lab passes 2")
        );
        let wrong = [
            KernelArg::Buffer(BufferId(0)),
            KernelArg::Buffer(BufferId(1)),
            KernelArg::I64(5),
        ];
        let error = crate::backend::check_kernel_args("k", &sizes, &wrong)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            error.as_deref(),
            Some("launch: parameter 3 of kernel `k` is 4 bytes, the lab passes an i64 (8 bytes)")
        );
        assert!(crate::backend::check_kernel_args("k", &[], &[]).is_ok());
    }

    #[test]
    fn launches_past_two_to_the_32_work_items_are_refused() {
        let shape = |grid, block| LaunchShape {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
            shared_bytes: 0,
        };
        assert!(check_shape(&shape(65536, 256)).is_ok());
        assert!(check_shape(&shape(1 << 22, 1024)).is_err());
        assert!(check_shape(&shape((1 << 22) - 1, 1024)).is_ok());
    }

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
    fn uuids_read_like_rocm_smi() {
        assert_eq!(format_uuid(b"6f2b8a2d1c3e4f50"), "GPU-6f2b8a2d1c3e4f50");
        assert_eq!(
            format_uuid(&[0; 16]),
            "GPU-00000000-0000-0000-0000-000000000000"
        );
    }

    #[test]
    fn options_name_the_target_then_the_labs_flags() {
        let options = hiprtc_options("gfx90a", &["-ffast-math".to_string()]);
        assert_eq!(
            options,
            ["--offload-arch=gfx90a", "-std=c++17", "-O3", "-ffast-math"]
        );
    }

    #[test]
    fn c_text_stops_at_the_terminator_and_messages_fit_one_line() {
        let chars: Vec<c_char> = b"AMD Instinct MI210\0junk"
            .iter()
            .map(|&b| c_char::from_ne_bytes([b]))
            .collect();
        assert_eq!(text_from_c_chars(&chars), "AMD Instinct MI210");
        assert_eq!(
            one_line("out of memory\n  (device 0)\n"),
            "out of memory (device 0)"
        );
        assert_eq!(to_u32(-1), 0);
        assert_eq!(to_u64(4096), 4096);
    }

    #[test]
    fn unavailable_messages_are_one_line() {
        for reason in [
            Unavailable::NoRuntime,
            Unavailable::NoDevice,
            Unavailable::NoCompiler,
            Unavailable::Runtime("x".into()),
        ] {
            assert!(!reason.to_string().contains('\n'));
        }
        assert_eq!(
            Unavailable::NoRuntime.to_string(),
            "no AMD GPU runtime found (libamdhip64.so could not be loaded)"
        );
    }

    #[test]
    fn handles_can_move_between_threads() {
        fn send<T: Send>() {}
        fn send_sync<T: Send + Sync>() {}
        send::<HipDevice>();
        send_sync::<Hiprtc>();
    }
}
