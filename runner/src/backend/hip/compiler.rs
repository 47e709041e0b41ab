//! hiprtc, the runtime compiler: HIP/CUDA-style C++ source to an AMDGPU code object. Needs no
//! GPU.

use super::ffi::*;
use super::loader::{RtcApi, Unavailable, hiprtc_api, runtime};
use super::metadata::{is_amdgpu_elf, kernel_metadata, resource_line};
use super::probe::format_hip_version;
use super::result::RtcError;
use crate::backend::{CompileError, CompileRequest, CompiledKernel, Compiler};
use std::ffi::{CString, c_char, c_int};
use std::ptr;
use std::sync::Mutex;

/// Serialises compiles: hiprtc (through comgr) is not documented to be thread-safe.
static COMPILE_LOCK: Mutex<()> = Mutex::new(());

/// hiprtc, loaded; see [`Compiler`].
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
        api.check(unsafe { (api.version)(&mut major, &mut minor) })
            .map_err(|e| {
                Unavailable::Runtime(format!("hiprtc could not report its version: {e}"))
            })?;
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

/// The options as C strings, which must outlive the compile call, with their count as hiprtc
/// takes it (made only by [`COptions::new`], so the count always fits).
struct COptions {
    strings: Vec<CString>,
    count: c_int,
}

impl COptions {
    fn new(options: &[String]) -> Result<COptions, CompileError> {
        let strings = options
            .iter()
            .map(|option| CString::new(option.as_str()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| {
                CompileError::Compiler(format!(
                    "a compiler option contains a NUL byte: {options:?}"
                ))
            })?;
        let count = c_int::try_from(strings.len())
            .map_err(|_| CompileError::Compiler("too many compiler options".to_string()))?;
        Ok(COptions { strings, count })
    }
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
    /// A program of one source with no headers. `name` and `source` must outlive it (the
    /// caller declares them first, so they are dropped after it).
    fn create(
        api: &'static RtcApi,
        name: &CString,
        source: &CString,
    ) -> Result<Program, CompileError> {
        let mut handle: RtcProgram = ptr::null_mut();
        // SAFETY: `source` and `name` are NUL-terminated and outlive the program; no headers
        // are passed (count 0, null arrays); hiprtc writes one handle to a local.
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
        let failed =
            |e: String| CompileError::Compiler(format!("hiprtc could not create the program: {e}"));
        api.check(created).map_err(|e| failed(e.message))?;
        if handle.is_null() {
            return Err(failed(api.error_text(created)));
        }
        Ok(Program { api, handle })
    }

    fn compile(&self, options: &COptions) -> Result<(), RtcError> {
        let pointers: Vec<*const c_char> = options.strings.iter().map(|o| o.as_ptr()).collect();
        // SAFETY: the program is live; `pointers` holds `options.count` pointers to
        // NUL-terminated strings in `options`, which outlives the call.
        let status =
            unsafe { (self.api.compile_program)(self.handle, options.count, pointers.as_ptr()) };
        self.api.check(status)
    }

    /// Bytes hiprtc returns through a size query and a copy-out call.
    fn bytes(&self, size_of: FnRtcSizeOut, copy: FnRtcBytesOut) -> Result<Vec<u8>, RtcError> {
        let mut size = 0usize;
        // SAFETY: the program is live; hiprtc writes one `size_t` to a local.
        self.api.check(unsafe { size_of(self.handle, &mut size) })?;
        let mut bytes = vec![0u8; size];
        if size > 0 {
            // SAFETY: the program is live and `bytes` has exactly the `size` bytes hiprtc said
            // it would write.
            self.api
                .check(unsafe { copy(self.handle, bytes.as_mut_ptr().cast::<c_char>()) })?;
        }
        Ok(bytes)
    }

    fn log(&self) -> Result<String, RtcError> {
        let bytes = self.bytes(self.api.get_program_log_size, self.api.get_program_log)?;
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        Ok(String::from_utf8_lossy(&bytes[..end])
            .trim_end()
            .to_string())
    }

    /// The code object, checked to be an AMDGPU ELF file.
    fn code(&self, arch: &str) -> Result<Vec<u8>, CompileError> {
        let image = self
            .bytes(self.api.get_code_size, self.api.get_code)
            .map_err(|e| {
                CompileError::Compiler(format!("hiprtc produced no code object for {arch}: {e}"))
            })?;
        if image.is_empty() {
            return Err(CompileError::Compiler(format!(
                "hiprtc produced no code object for {arch}"
            )));
        }
        if !is_amdgpu_elf(&image) {
            return Err(CompileError::Compiler(format!(
                "hiprtc returned {} bytes for {arch} that are not an AMDGPU ELF code object",
                image.len()
            )));
        }
        Ok(image)
    }
}

/// What a failed compile means: a source or option hiprtc rejected (the author's to fix,
/// with hiprtc's log, or its status where the log is empty), or hiprtc itself failing.
fn compile_failure(error: RtcError, log: String, options: Vec<String>) -> CompileError {
    match error.status {
        HIPRTC_ERROR_COMPILATION | HIPRTC_ERROR_INVALID_OPTION => CompileError::Rejected {
            log: if log.trim().is_empty() {
                error.message
            } else {
                log
            },
            options,
        },
        _ => CompileError::Compiler(format!("hiprtc failed: {error}\n{log}")),
    }
}

impl Compiler for Hiprtc {
    fn version(&self) -> String {
        self.version.clone()
    }

    fn compile(&self, request: &CompileRequest<'_>) -> Result<CompiledKernel, CompileError> {
        let options = hiprtc_options(request.arch, request.flags);
        let c_options = COptions::new(&options)?;
        let (name, source) = crate::backend::program_strings(request, &options)?;
        let _guard = COMPILE_LOCK
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let program = Program::create(self.api, &name, &source)?;
        let compiled = program.compile(&c_options);
        let mut log = program
            .log()
            .unwrap_or_else(|e| format!("(hiprtc could not return its log: {e})"));
        if let Err(error) = compiled {
            return Err(compile_failure(error, log, options));
        }
        let image = program.code(request.arch)?;
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

    #[test]
    fn options_name_the_target_then_the_labs_flags() {
        let options = hiprtc_options("gfx90a", &["-ffast-math".to_string()]);
        assert_eq!(
            options,
            ["--offload-arch=gfx90a", "-std=c++17", "-O3", "-ffast-math"]
        );
    }

    #[test]
    fn a_rejected_compile_keeps_the_log_or_else_the_status() {
        let error = |status| RtcError {
            status,
            message: "HIPRTC_ERROR_COMPILATION".to_string(),
        };
        let options = vec!["-O3".to_string()];
        assert_eq!(
            compile_failure(
                error(HIPRTC_ERROR_COMPILATION),
                "x.cu:1: error".into(),
                options.clone()
            ),
            CompileError::Rejected {
                log: "x.cu:1: error".into(),
                options: options.clone()
            }
        );
        assert_eq!(
            compile_failure(
                error(HIPRTC_ERROR_INVALID_OPTION),
                " \n".into(),
                options.clone()
            ),
            CompileError::Rejected {
                log: "HIPRTC_ERROR_COMPILATION".into(),
                options: options.clone()
            }
        );
        assert!(matches!(
            compile_failure(error(3), String::new(), options),
            CompileError::Compiler(_)
        ));
    }

    #[test]
    fn handles_can_move_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Hiprtc>();
        fn send<T: Send>() {}
        send::<super::super::HipDevice>();
    }
}
