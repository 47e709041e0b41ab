//! The HIP backend's CPU side: what it says without ROCm, and hiprtc compiling every kernel of
//! the book for an AMD target (gfx90a) without a GPU.
//!
//! hiprtc needs no GPU. On Debian 12, `apt-get install libamdhip64-5 libhiprtc-builtins5` (ROCm
//! 5.2) is enough for the compile test; without hiprtc it prints `SKIPPED` and passes, unless
//! `KERNELBOOK_REQUIRE_HIPRTC=1` is set (for CI, where a skip would hide a regression).

use kernelbook_runner::backend::hip::{self, EM_AMDGPU, Hiprtc, Unavailable};
use kernelbook_runner::backend::{CompileError, CompileRequest, Compiler};
use std::io::Write;
use std::path::PathBuf;

/// The target every kernel is compiled for: MI200's CDNA2, a 64-wide wavefront.
const ARCH: &str = "gfx90a";

fn skip(test: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}

fn hiprtc_required() -> bool {
    std::env::var("KERNELBOOK_REQUIRE_HIPRTC").is_ok_and(|v| v == "1")
}

/// The repository: `KERNELBOOK_REPO`, else the parent of this crate.
fn repo() -> PathBuf {
    match std::env::var_os("KERNELBOOK_REPO") {
        Some(path) => PathBuf::from(path),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("..")),
    }
}

/// hiprtc, or `None` after printing why the test is skipped (a failure where it is required).
fn hiprtc_or_skip(test: &str) -> Option<Hiprtc> {
    match Hiprtc::load() {
        Ok(hiprtc) => Some(hiprtc),
        Err(why) => {
            assert!(
                !hiprtc_required(),
                "KERNELBOOK_REQUIRE_HIPRTC=1, but hiprtc could not be loaded: {why}"
            );
            skip(test, &format!("hiprtc is not installed here ({why})"));
            None
        }
    }
}

/// Checks that `image` is a non-empty 64-bit ELF code object for AMD GPUs.
fn assert_amdgpu_code_object(name: &str, image: &[u8]) {
    assert!(!image.is_empty(), "{name}: empty code object");
    assert!(
        image.starts_with(b"\x7fELF"),
        "{name}: not an ELF file (starts with {:02x?})",
        &image[..image.len().min(8)]
    );
    assert_eq!(image.get(4), Some(&2), "{name}: not a 64-bit ELF file");
    let machine = image.get(18..20).map(|b| u16::from_le_bytes([b[0], b[1]]));
    assert_eq!(
        machine,
        Some(EM_AMDGPU),
        "{name}: e_machine is {machine:?}, not EM_AMDGPU (224)"
    );
    assert!(hip::is_amdgpu_elf(image));
}

#[test]
fn without_rocm_the_backend_is_unavailable_with_one_line_messages() {
    const TEST: &str = "without_rocm_the_backend_is_unavailable_with_one_line_messages";
    match hip::probe() {
        Ok(probe) => skip(
            TEST,
            &format!(
                "an AMD GPU is present ({}, {}), so probe() succeeds",
                probe.info.name, probe.info.arch
            ),
        ),
        Err(why) => {
            let message = why.to_string();
            assert!(!message.is_empty());
            assert!(!message.contains('\n'), "not one line: {message:?}");
            if !hip::runtime_present() {
                assert_eq!(why, Unavailable::NoRuntime);
                assert_eq!(
                    message,
                    "no AMD GPU runtime found (libamdhip64.so could not be loaded)"
                );
            }
            let _ = writeln!(std::io::stderr(), "probe(): {message}");
        }
    }
    match hip::HipDevice::open(0) {
        Ok(_) => skip(
            TEST,
            "an AMD GPU is present, so HipDevice::open(0) succeeds",
        ),
        Err(why) => {
            assert!(!why.to_string().contains('\n'), "not one line: {why}");
            assert_eq!(Some(why), hip::probe().err());
        }
    }
    match Hiprtc::load() {
        Ok(hiprtc) => skip(
            TEST,
            &format!(
                "ROCm is present: {} loads from {}",
                hiprtc.version(),
                hiprtc.library()
            ),
        ),
        Err(why) => {
            let message = why.to_string();
            assert!(!message.is_empty());
            assert!(!message.contains('\n'), "not one line: {message:?}");
            let _ = writeln!(std::io::stderr(), "Hiprtc::load(): {message}");
        }
    }
}

#[test]
fn compiles_every_kernel_of_the_book_for_gfx90a_through_hiprtc() {
    const TEST: &str = "compiles_every_kernel_of_the_book_for_gfx90a_through_hiprtc";
    let Some(hiprtc) = hiprtc_or_skip(TEST) else {
        return;
    };
    let dir = repo().join("kernels");
    let mut kernels: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "cu"))
        .collect();
    kernels.sort();
    assert!(!kernels.is_empty(), "no *.cu files in {}", dir.display());
    let nvidia_only = nvidia_only_kernels();
    let mut failures = Vec::new();
    let mut report = Vec::new();
    for path in &kernels {
        let name = path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .unwrap_or_else(|| panic!("odd file name {}", path.display()));
        if nvidia_only.contains(name) {
            report.push(format!(
                "  {name:<18} not compiled: every variant that runs it `requires` an NVIDIA architecture"
            ));
            continue;
        }
        let source = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let request = CompileRequest {
            name,
            source: &source,
            arch: ARCH,
            flags: &[],
        };
        match hiprtc.compile(&request) {
            Ok(compiled) => {
                assert_amdgpu_code_object(name, &compiled.image);
                assert_eq!(compiled.name, name);
                assert!(
                    compiled.options.contains(&format!("--offload-arch={ARCH}")),
                    "{:?}",
                    compiled.options
                );
                let metadata = hip::kernel_metadata(&compiled.image, name)
                    .unwrap_or_else(|| panic!("{name}: no kernel `{name}` in the code object metadata (is it extern \"C\"?)"));
                assert_eq!(metadata.wavefront_size, 64, "{name}: gfx90a runs wave64");
                report.push(format!(
                    "  {name:<18} {:>6} bytes  args {:?}  {}",
                    compiled.image.len(),
                    metadata.arg_sizes,
                    compiled.log.lines().last().unwrap_or("")
                ));
            }
            Err(CompileError::Rejected { log, options }) => {
                failures.push(format!("{name} (options {options:?}):\n{log}"))
            }
            Err(CompileError::Compiler(message)) => failures.push(format!("{name}: {message}")),
        }
    }
    let mut err = std::io::stderr();
    let _ = writeln!(
        err,
        "{} with {}: {} of {} kernels compiled for {ARCH}",
        hiprtc.version(),
        hiprtc.library(),
        kernels.len() - failures.len(),
        kernels.len()
    );
    for line in &report {
        let _ = writeln!(err, "{line}");
    }
    assert!(
        failures.is_empty(),
        "kernels hiprtc rejected for {ARCH}:\n{}",
        failures.join("\n\n")
    );
}

#[test]
fn the_portability_header_compiles_under_hiprtc() {
    const TEST: &str = "the_portability_header_compiles_under_hiprtc";
    let Some(hiprtc) = hiprtc_or_skip(TEST) else {
        return;
    };
    let header = repo().join("kernels").join("portability.h");
    let header = std::fs::read_to_string(&header)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", header.display()));
    // The program is compiled without include paths, so the header is pasted in, as the
    // preprocessor would.
    let source = format!(
        "{header}\n\
         static_assert(KB_AMD == 1, \"hiprtc is AMD\");\n\
         static_assert(WARP_SIZE == 64, \"gfx90a runs 64-wide wavefronts\");\n\
         static_assert(sizeof(kb_lanemask_t) * 8 == WARP_SIZE, \"one mask bit per lane\");\n\
         extern \"C\" __global__ KB_LAUNCH_BOUNDS(256) void warp_sum(float *out, const float *in) {{\n\
             float v = in[blockIdx.x * blockDim.x + threadIdx.x];\n\
             for (int offset = WARP_SIZE / 2; offset > 0; offset /= 2) v += kb_shfl_down(v, offset);\n\
             v = kb_shfl(v, 0) + kb_shfl_xor(v, 1) + kb_shfl_up(v, 1);\n\
             kb_lanemask_t active = kb_ballot(v > 0.0f);\n\
             kb_syncwarp();\n\
             if (threadIdx.x % WARP_SIZE == 0) out[blockIdx.x] = v + (float)(active == KB_FULL_MASK);\n\
         }}\n"
    );
    let request = CompileRequest {
        name: "warp_sum",
        source: &source,
        arch: ARCH,
        flags: &[],
    };
    match hiprtc.compile(&request) {
        Ok(compiled) => assert_amdgpu_code_object("warp_sum", &compiled.image),
        Err(e) => panic!("portability.h does not compile under hiprtc for {ARCH}:\n{e}"),
    }
}

#[test]
fn a_compile_error_is_rejected_with_the_log_and_options() {
    const TEST: &str = "a_compile_error_is_rejected_with_the_log_and_options";
    let Some(hiprtc) = hiprtc_or_skip(TEST) else {
        return;
    };
    let request = CompileRequest {
        name: "broken",
        source: "extern \"C\" __global__ void broken(float *out) { out[0] = undeclared; }\n",
        arch: ARCH,
        flags: &[],
    };
    match hiprtc.compile(&request) {
        Err(CompileError::Rejected { log, options }) => {
            assert!(log.contains("undeclared"), "{log}");
            assert_eq!(options[0], format!("--offload-arch={ARCH}"));
        }
        other => panic!("expected a rejection, got {other:?}"),
    }
    let request = CompileRequest {
        name: "fine",
        source: "extern \"C\" __global__ void fine(float *out) { out[0] = 1.0f; }\n",
        arch: ARCH,
        flags: &["--no-such-option".to_string()],
    };
    assert!(matches!(
        hiprtc.compile(&request),
        Err(CompileError::Rejected { .. })
    ));
}

/// Kernels that only variants with `requires = "sm_…"` launch (the bulk tensor copy engine's, in
/// PTX): an AMD GPU never runs them, so hiprtc is not asked to compile them.
fn nvidia_only_kernels() -> std::collections::BTreeSet<String> {
    use kernelbook_core::spec::LabSpec;
    let mut everywhere = std::collections::BTreeSet::new();
    let mut gated = std::collections::BTreeSet::new();
    let labs = repo().join("labs");
    for entry in std::fs::read_dir(&labs).expect("labs/").flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|ext| ext != "toml") {
            continue;
        }
        let lab = LabSpec::load(&path).unwrap_or_else(|err| panic!("{err}"));
        for variant in &lab.variants {
            let set = if variant.requires.is_some() {
                &mut gated
            } else {
                &mut everywhere
            };
            let launches = variant.setup.iter().chain(&variant.then);
            set.extend(variant.kernel.iter().map(|k| k.get_ref().clone()));
            set.extend(launches.map(|launch| launch.kernel_name().to_string()));
        }
    }
    gated.difference(&everywhere).cloned().collect()
}
