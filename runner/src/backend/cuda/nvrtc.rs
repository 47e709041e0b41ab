//! NVRTC, the run-time compiler: CUDA C++ source to a CUBIN for the device's own architecture,
//! with ptxas's resource report in the log. Needs no GPU.

use super::probe::Unavailable;
use crate::backend::{CompileError, CompileRequest, CompiledKernel, Compiler};
use cudarc::nvrtc::result::{self as nvrtc_result, NvrtcError};
use cudarc::nvrtc::sys::{self as nvrtc_sys, nvrtcResult};
use std::ffi::{CStr, c_char, c_int};

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

/// Whether the NVRTC library (`libnvrtc.so.13` or a compatible one) can be loaded: from the
/// library path, else from where pip or the CUDA toolkit put it ([`nvrtc_search`]), which is then
/// opened by its full path so that cudarc's open by name finds it.
///
/// [`nvrtc_search`]: super::nvrtc_search
pub fn nvrtc_present() -> bool {
    // SAFETY: a dlopen attempt of the candidate names, nothing else.
    if unsafe { nvrtc_sys::is_culib_present() } {
        return true;
    }
    if super::nvrtc_search::preload(super::nvrtc_search::NvrtcSearch::from_env()).is_none() {
        return false;
    }
    // SAFETY: as above.
    unsafe { nvrtc_sys::is_culib_present() }
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
            .map_err(|e| Unavailable::NvrtcVersion(nvrtc_message(e)))?;
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
        let (name, source) = crate::backend::program_strings(request, &options)?;
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
    fn nvrtc_can_be_shared_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Nvrtc>();
    }
}
