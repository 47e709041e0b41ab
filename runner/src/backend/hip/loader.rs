//! Finding and opening `libamdhip64` and hiprtc, and resolving every function this backend
//! calls, once per process. See [`super`] for the file names tried and why.

use super::ffi::*;
use libloading::Library;
use std::ffi::CStr;
use std::sync::OnceLock;

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

/// The runtime library's names, newest first after the unversioned development link.
pub const RUNTIME_LIBRARY_NAMES: [&str; 4] = [
    "libamdhip64.so",
    "libamdhip64.so.7",
    "libamdhip64.so.6",
    "libamdhip64.so.5",
];

/// hiprtc's names in ROCm 6 and 7 (ROCm 5 has none: hiprtc is inside libamdhip64).
pub const HIPRTC_LIBRARY_NAMES: [&str; 3] = ["libhiprtc.so", "libhiprtc.so.7", "libhiprtc.so.6"];

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
pub(super) struct Runtime {
    pub file: String,
    pub init: FnInit,
    pub get_device_count: FnIntOut,
    pub device_get: FnDeviceGet,
    pub device_get_attribute: FnDeviceGetAttribute,
    pub device_get_name: FnDeviceGetName,
    pub device_total_mem: FnDeviceTotalMem,
    pub device_get_uuid: Option<FnDeviceGetUuid>,
    pub get_device_properties: Option<(FnGetDeviceProperties, PropsLayout)>,
    pub runtime_get_version: FnIntOut,
    pub set_device: FnSetDevice,
    pub malloc: FnMalloc,
    pub free: FnFree,
    /// `hipHostMalloc` and `hipHostFree`, where both exist: without them only the pinned copies
    /// are refused.
    pub host_memory: Option<(FnHostMalloc, FnFree)>,
    pub memcpy_async: FnMemcpyAsync,
    pub memset_d8_async: FnMemsetD8Async,
    pub mem_get_info: FnMemGetInfo,
    pub module_load_data: FnModuleLoadData,
    pub module_unload: FnModuleUnload,
    pub module_get_function: FnModuleGetFunction,
    pub func_get_attribute: FnFuncGetAttribute,
    pub occupancy: FnOccupancy,
    pub module_launch_kernel: FnModuleLaunchKernel,
    pub stream_create: FnStreamCreate,
    pub stream_synchronize: FnStreamOp,
    pub stream_destroy: FnStreamOp,
    pub event_create: FnEventCreate,
    pub event_record: FnEventRecord,
    pub event_synchronize: FnEventOp,
    pub event_elapsed_time: FnEventElapsedTime,
    pub event_destroy: FnEventOp,
    pub get_error_name: FnErrorText,
    pub get_error_string: FnErrorText,
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
        let host_memory = unsafe {
            optional_symbol::<FnHostMalloc>(lib, c"hipHostMalloc")
                .zip(optional_symbol::<FnFree>(lib, c"hipHostFree"))
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
                host_memory,
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
}

static RUNTIME: OnceLock<Result<Runtime, Unavailable>> = OnceLock::new();

/// The HIP runtime, loaded once per process.
pub(super) fn runtime() -> Result<&'static Runtime, Unavailable> {
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

/// hiprtc's functions; lives in a `static` like [`Runtime`].
pub(super) struct RtcApi {
    pub file: String,
    pub version: FnRtcVersion,
    pub create_program: FnRtcCreateProgram,
    pub compile_program: FnRtcCompileProgram,
    pub destroy_program: FnRtcDestroyProgram,
    pub get_program_log_size: FnRtcSizeOut,
    pub get_program_log: FnRtcBytesOut,
    pub get_code_size: FnRtcSizeOut,
    pub get_code: FnRtcBytesOut,
    pub get_error_string: FnRtcErrorString,
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
}

static HIPRTC: OnceLock<Result<RtcApi, Unavailable>> = OnceLock::new();

/// hiprtc, loaded once per process: `libhiprtc` (ROCm 6 and 7), else the hiprtc inside
/// `libamdhip64` (ROCm 5).
pub(super) fn hiprtc_api() -> Result<&'static RtcApi, Unavailable> {
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

/// Whether the HIP runtime (`libamdhip64`) can be loaded. Loads it if so.
pub fn runtime_present() -> bool {
    runtime().is_ok()
}

/// Whether hiprtc can be loaded. Loads it if so.
pub fn hiprtc_present() -> bool {
    hiprtc_api().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
