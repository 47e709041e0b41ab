//! The operations the runner provides itself, as a table: each [`Builtin`] has one
//! [`Descriptor`] (its name in lab files, the shape of its `args`, the checks it accepts, whether
//! it is a peer, and where it runs). Validating a lab, compiling its plan and deciding a row's
//! role all read the descriptor; what a builtin does lives with its implementation in the runner.
//!
//! A new builtin is a variant here with its descriptor, an arm in the runner's plan compilation
//! that builds its operation, its implementation (a device operation, or a job of the Python
//! worker), and its row in `book/AUTHORING.md`.

use serde::{Deserialize, Serialize};

/// Operations the runner provides itself, as peers of the course's kernels (see
/// [`Builtin::descriptor`] for each one's shape and checks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Builtin {
    /// The driver's device-to-device copy.
    Memcpy,
    /// The vendor BLAS's transpose (cuBLAS `geam`), where the library is installed; the
    /// variant's check must be a transpose, which gives the shape.
    LibraryTranspose,
    /// PyTorch's `x.t().contiguous()`, where a `python3` with torch is found; likewise.
    TorchTranspose,
    /// The vendor BLAS's fp32 matrix product (cuBLAS `sgemm`, no TF32): row-major `c = a · b`
    /// with `a` of `m × k` and `b` of `k × n` floats.
    LibrarySgemm,
    /// The vendor BLAS's BF16 tensor-core product (cuBLAS `cublasGemmEx`, BF16 inputs, FP32
    /// compute and output): `a` and `b` (f32 buffers) rounded to BF16 once, untimed, then
    /// row-major `c = a · b` as for `library_sgemm`.
    LibraryGemmBf16,
    /// PyTorch's `torch.sum` of a float32 vector as long as `src`, on the GPU, in the Python
    /// worker; checked there against a float64 sum within the lab's check's tolerance.
    TorchSum,
    /// The `transpose(x)` of a Python block of the book (`script = "NAME"`, a ` ```python
    /// kernel=NAME ` block: a Triton kernel and its launcher), run like the PyTorch peer.
    PythonTranspose,
    /// A copy of `src`'s contents from ordinary (pageable) host memory into `dst`.
    HostToDevicePageable,
    /// The same from page-locked (pinned) host memory.
    HostToDevicePinned,
    /// A copy of `src` into pageable host memory, checked by reading that host memory (`dst`
    /// is not written).
    DeviceToHostPageable,
    /// The same into pinned host memory.
    DeviceToHostPinned,
}

/// What a builtin's `args` are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgShape {
    /// `args = [dst, src]`, two buffers.
    DstSrc,
    /// `args = [c, a, b, m, n, k]`: three buffers, then the sizes of `c = a · b`.
    Gemm,
}

impl ArgShape {
    /// How many arguments, and which of them (by position) are buffers.
    pub fn buffers(self) -> &'static [bool] {
        match self {
            ArgShape::DstSrc => &[true, true],
            ArgShape::Gemm => &[true, true, true, false, false, false],
        }
    }

    /// The shape in words, for an error message.
    pub fn words(self) -> &'static str {
        match self {
            ArgShape::DstSrc => "`args = [dst, src]`, two buffers",
            ArgShape::Gemm => {
                "`args = [c, a, b, m, n, k]`: three buffers, then the sizes of c = a · b \
                 (a is m × k, b is k × n)"
            }
        }
    }

    /// Whether `args` fit the shape, `is_buffer` telling a buffer's name from an expression.
    pub fn fits(self, args: &[String], is_buffer: impl Fn(&str) -> bool) -> bool {
        let want = self.buffers();
        args.len() == want.len() && args.iter().zip(want).all(|(a, &b)| is_buffer(a) == b)
    }
}

/// Which checks a builtin's variant may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepts {
    /// A copy's: `reference = "copy"`.
    Copy,
    /// A transpose check, which also gives the matrix's shape.
    Transpose,
    /// Any check that compares the output (a NumPy reference, another variant).
    Compared,
}

/// Where a builtin runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// Through the GPU backend, as an operation of the measuring process.
    Device,
    /// In the Python worker (PyTorch, Triton), measured once the GPU is free.
    Python,
}

/// One row of the builtins' table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descriptor {
    /// The name lab files use (`builtin = "NAME"`).
    pub name: &'static str,
    pub args: ArgShape,
    pub accepts: Accepts,
    /// Someone else's implementation of the job (a library), not the runner's own copy or a
    /// kernel of the book: the row's role is a peer's.
    pub peer: bool,
    pub runs: Runs,
    /// It runs a Python block of the book, named by the variant's `script`.
    pub script: bool,
}

impl Descriptor {
    const fn device(name: &'static str, args: ArgShape, accepts: Accepts, peer: bool) -> Self {
        Descriptor {
            name,
            args,
            accepts,
            peer,
            runs: Runs::Device,
            script: false,
        }
    }

    const fn python(name: &'static str, accepts: Accepts, peer: bool, script: bool) -> Self {
        Descriptor {
            name,
            args: ArgShape::DstSrc,
            accepts,
            peer,
            runs: Runs::Python,
            script,
        }
    }
}

impl Builtin {
    /// Every builtin, in the table's order.
    pub const ALL: [Builtin; 11] = [
        Builtin::Memcpy,
        Builtin::LibraryTranspose,
        Builtin::TorchTranspose,
        Builtin::LibrarySgemm,
        Builtin::LibraryGemmBf16,
        Builtin::TorchSum,
        Builtin::PythonTranspose,
        Builtin::HostToDevicePageable,
        Builtin::HostToDevicePinned,
        Builtin::DeviceToHostPageable,
        Builtin::DeviceToHostPinned,
    ];

    /// The table: this builtin's descriptor.
    pub const fn descriptor(self) -> Descriptor {
        use Accepts::{Compared, Copy, Transpose};
        use ArgShape::{DstSrc, Gemm};
        match self {
            Builtin::Memcpy => Descriptor::device("memcpy", DstSrc, Copy, false),
            Builtin::LibraryTranspose => {
                Descriptor::device("library_transpose", DstSrc, Transpose, true)
            }
            Builtin::TorchTranspose => {
                Descriptor::python("torch_transpose", Transpose, true, false)
            }
            Builtin::LibrarySgemm => Descriptor::device("library_sgemm", Gemm, Compared, true),
            Builtin::LibraryGemmBf16 => {
                Descriptor::device("library_gemm_bf16", Gemm, Compared, true)
            }
            Builtin::TorchSum => Descriptor::python("torch_sum", Compared, true, false),
            Builtin::PythonTranspose => {
                Descriptor::python("python_transpose", Transpose, false, true)
            }
            Builtin::HostToDevicePageable => {
                Descriptor::device("host_to_device_pageable", DstSrc, Copy, false)
            }
            Builtin::HostToDevicePinned => {
                Descriptor::device("host_to_device_pinned", DstSrc, Copy, false)
            }
            Builtin::DeviceToHostPageable => {
                Descriptor::device("device_to_host_pageable", DstSrc, Copy, false)
            }
            Builtin::DeviceToHostPinned => {
                Descriptor::device("device_to_host_pinned", DstSrc, Copy, false)
            }
        }
    }

    /// The name lab files use.
    pub fn name(self) -> &'static str {
        self.descriptor().name
    }

    /// Runs in a Python process rather than through the GPU backend.
    pub fn runs_in_python(self) -> bool {
        self.descriptor().runs == Runs::Python
    }

    /// A copy that checks like `memcpy`: `dst` must equal `src`.
    pub fn is_copy(self) -> bool {
        self.descriptor().accepts == Accepts::Copy
    }
}

/// The element type of a library matrix product's inputs (the output and the accumulation are
/// fp32 in both).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GemmPrecision {
    /// fp32 inputs on the FP32 pipes (`sgemm`, no TF32).
    #[default]
    F32,
    /// BF16 inputs on the tensor cores, fp32 accumulation (`cublasGemmEx`).
    Bf16,
}

impl GemmPrecision {
    /// The matrix product a builtin is, if it is one.
    pub fn of(builtin: Builtin) -> Option<GemmPrecision> {
        match builtin {
            Builtin::LibrarySgemm => Some(GemmPrecision::F32),
            Builtin::LibraryGemmBf16 => Some(GemmPrecision::Bf16),
            _ => None,
        }
    }

    /// Bytes per input element on the device.
    pub fn input_bytes(self) -> usize {
        match self {
            GemmPrecision::F32 => 4,
            GemmPrecision::Bf16 => 2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_is_in_the_table_under_the_name_lab_files_use() {
        let mut names = std::collections::BTreeSet::new();
        for builtin in Builtin::ALL {
            let name = builtin.name();
            // The name the table gives is the one serde reads from a lab file.
            let parsed: Builtin = serde_json::from_value(serde_json::json!(name))
                .unwrap_or_else(|err| panic!("`{name}` is not a lab file's name: {err}"));
            assert_eq!(parsed, builtin);
            assert!(names.insert(name), "`{name}` twice");
        }
        assert_eq!(names.len(), Builtin::ALL.len());
    }

    #[test]
    fn a_shape_tells_buffers_from_sizes() {
        let is_buffer = |name: &str| ["a", "b", "c"].contains(&name);
        let args = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(ArgShape::Gemm.fits(&args(&["c", "a", "b", "n", "n", "n"]), is_buffer));
        assert!(!ArgShape::Gemm.fits(&args(&["c", "a", "n", "n", "n", "n"]), is_buffer));
        assert!(!ArgShape::Gemm.fits(&args(&["c", "a", "b"]), is_buffer));
        assert!(ArgShape::DstSrc.fits(&args(&["c", "a"]), is_buffer));
        assert!(!ArgShape::DstSrc.fits(&args(&["c", "n"]), is_buffer));
    }

    #[test]
    fn the_table_says_where_each_runs_and_what_it_checks() {
        assert!(Builtin::TorchSum.runs_in_python());
        assert!(!Builtin::LibraryGemmBf16.runs_in_python());
        assert!(Builtin::HostToDevicePinned.is_copy());
        assert!(!Builtin::LibrarySgemm.is_copy());
        assert!(Builtin::PythonTranspose.descriptor().script);
        assert!(!Builtin::PythonTranspose.descriptor().peer);
    }

    const LAB: &str = r#"name = "peers"
title = "Peers"
bytes = "n * 4"
[params]
n = 64
[[buffers]]
name = "src"
len = "n"
fill = "random"
[[buffers]]
name = "dst"
len = "n"
fill = "poison"
[check]
reference = "copy"
input = "src"
output = "dst"
[[variants]]
name = "copy"
builtin = "memcpy"
args = ["dst", "src"]
"#;

    /// A stand-in peer registered only here: validation reads its descriptor, not a list of
    /// builtins, and names the file and the variant's line when its arguments do not fit.
    #[test]
    fn a_stand_in_peers_descriptor_decides_its_arguments_and_checks() {
        use crate::spec::LabSpec;
        let lab = LabSpec::parse(LAB, std::path::Path::new("labs/peers.toml")).expect("lab");
        let variant = lab.variant("copy").expect("variant");
        let stand_in = |args, accepts| Descriptor {
            name: "stand_in_peer",
            args,
            accepts,
            peer: true,
            runs: Runs::Python,
            script: false,
        };
        lab.validate_builtin_as(variant, &stand_in(ArgShape::DstSrc, Accepts::Compared))
            .expect("two buffers and any check fit");
        lab.validate_builtin_as(variant, &stand_in(ArgShape::DstSrc, Accepts::Copy))
            .expect("the lab's check is a copy");
        let err = lab
            .validate_builtin_as(variant, &stand_in(ArgShape::Gemm, Accepts::Compared))
            .expect_err("two arguments where six are wanted");
        assert_eq!((err.file.to_str(), err.line), (Some("labs/peers.toml"), 19));
        assert!(
            err.message
                .starts_with("builtin stand_in_peer (variant `copy`) takes `args = [c, a, b"),
            "{}",
            err.message
        );
        let err = lab
            .validate_builtin_as(variant, &stand_in(ArgShape::DstSrc, Accepts::Transpose))
            .expect_err("a copy check gives no shape");
        assert!(
            err.message.contains("needs a transpose check"),
            "{}",
            err.message
        );
    }

    /// The real peers' shapes, as a lab author meets them: an error at the variant's line.
    #[test]
    fn a_peer_with_the_wrong_arguments_is_an_error_at_its_line() {
        use crate::spec::LabSpec;
        let wrong = LAB.replace("builtin = \"memcpy\"", "builtin = \"library_gemm_bf16\"");
        let err = LabSpec::parse(&wrong, std::path::Path::new("labs/peers.toml"))
            .expect_err("a matrix product takes six arguments");
        assert_eq!(err.line, 19, "{}", err.message);
        assert!(err.message.contains("library_gemm_bf16"), "{}", err.message);
        assert!(
            err.message.contains("`args = [c, a, b, m, n, k]`"),
            "{}",
            err.message
        );
    }
}
