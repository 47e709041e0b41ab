//! Lab definitions: what a lab runs, on which buffers, how it is launched, what it must move and
//! how its output is checked. One TOML file per lab under `labs/`; authors add labs without Rust.
//!
//! Every problem with a lab file is a [`LabError`] that names the file and the line.

mod chart;
mod device;
mod hardware;
mod l2;
mod pipeline;
mod sweep;
mod traffic;

pub use chart::{ChartKind, ChartSpec};
pub use device::DeviceParams;
pub use hardware::{ComputeCapability, MAX_TENSOR_RANK, Swizzle, TensorMapSpec};
pub use l2::{L2Spec, MAX_FETCH_GRANULARITY, WindowSpec};
pub use pipeline::{MAX_CHUNKS, MAX_STREAMS, PipelineSpec};
pub use sweep::{MAX_SWEEP_VARIANTS, SweepOrigin, SweptAxis};
pub use traffic::{BytesMoved, Traffic};

pub use crate::builtins::{Accepts, ArgShape, Builtin, Descriptor};
use crate::expr::{Expr, Params};
use crate::line_of_offset;
use crate::stats::StoppingRule;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};
use toml::Spanned;

mod check;
pub use check::{
    AgainstCheck, ArgValue, BuiltinCheck, CheckKind, CheckSpec, CompareRule, CompareSpec,
    PythonCheck, SAMPLED_ELEMENTS,
};

/// A lab file, parsed and checked.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabSpec {
    /// The name `{{#lab NAME}}` and `kernelbook run NAME` use.
    pub name: String,
    pub title: String,
    #[serde(default)]
    pub summary: String,
    /// Size parameters; `kernelbook run --set n=4096` overrides them. A variant's own `params`
    /// add to them or replace them for that variant.
    #[serde(default)]
    pub params: Params,
    /// Bytes a variant must move (each input read once, each output written once), unless the
    /// variant says otherwise; without it, the bytes follow from `reads` and `writes`.
    #[serde(default)]
    pub bytes: Option<Expr>,
    /// The buffers every variant reads, unless it declares its own `reads` or `writes`.
    #[serde(default)]
    pub reads: Option<Spanned<Traffic>>,
    /// The buffers every variant writes, likewise.
    #[serde(default)]
    pub writes: Option<Spanned<Traffic>>,
    /// The variant whose bandwidth is the lab's ceiling (100 % in the "% of ceiling" column).
    #[serde(default)]
    pub ceiling: Option<String>,
    /// Extra NVRTC flags for every kernel of the lab.
    #[serde(default)]
    pub compile_flags: Vec<String>,
    /// Seconds a variant may run (compile, check and timing together) before it is stopped as
    /// hung; 120 unless the lab says otherwise.
    #[serde(default)]
    pub timeout_s: Option<u64>,
    /// Overrides of the stopping rule for this lab (`[timing]`), for rows whose spread comes
    /// from the host rather than the GPU.
    #[serde(default)]
    pub timing: Option<TimingSpec>,
    pub buffers: Vec<BufferSpec>,
    /// Views of buffers for the bulk tensor copy engine, passed to kernels by name
    /// (`[[tensor_maps]]`, see [`TensorMapSpec`]).
    #[serde(default)]
    pub tensor_maps: Vec<TensorMapSpec>,
    pub check: CheckSpec,
    pub variants: Vec<VariantSpec>,
    /// A plot of the rows' bandwidth against each variant's `plot_x`, drawn beside the table.
    #[serde(default)]
    pub plot: Option<PlotSpec>,
    /// Which chart is drawn beside the table (`[chart]`); see [`LabSpec::chart_kind`].
    #[serde(default)]
    pub chart: Option<ChartSpec>,
    /// Flush the L2 before every timed sample (the default). Labs that measure the caches
    /// themselves set `flush_l2 = false` and rely on the warm-up runs to fill them.
    #[serde(default = "default_true")]
    pub flush_l2: bool,
    /// L2 controls every variant runs under (`[l2]`: fetch granularity, persisting set-aside,
    /// access-policy window), unless a variant replaces them ([`LabSpec::l2_for`]).
    #[serde(default)]
    pub l2: Option<L2Spec>,
    /// Work every variant does besides moving bytes, unless a variant says otherwise.
    #[serde(default)]
    pub work: Option<WorkSpec>,
    /// A value every kernel measures itself, unless a variant says otherwise.
    #[serde(default)]
    pub counter: Option<CounterSpec>,
    /// Pairs of variants `[slow, fast]` whose time ratio the page states under the table.
    #[serde(default)]
    pub ratios: Vec<[String; 2]>,
    /// A ridge point computed from two variants: a compute rate over a bandwidth.
    #[serde(default)]
    pub ridge: Option<RidgeSpec>,
    /// Levels of the memory hierarchy this lab measures, each read off one variant, for a
    /// short summary above the table (`levels = [{ name = "L1", variant = "ws_64k" }]`).
    #[serde(default)]
    pub levels: Vec<LevelSpec>,
    /// Profile each kernel variant under Nsight Compute after measuring it, where `ncu` is
    /// installed, and show its memory counters under the table.
    #[serde(default)]
    pub profile: bool,
    /// For authors: `kernelbook run` also runs every kernel variant that passed under
    /// compute-sanitizer, and says what it found under the table (a variant that failed its
    /// check or faulted is run under it whatever this says).
    #[serde(default)]
    pub sanitize: bool,
    /// The size parameters the sanitizer's runs of `kernelbook run` use instead of the lab's
    /// (`sanitize_params = { n = 65536 }`): the tools slow a kernel down a hundredfold.
    #[serde(default)]
    pub sanitize_params: Params,
    /// Makes the lab an exercise `kernelbook check` can grade.
    #[serde(default)]
    pub exercise: Option<crate::exercise::ExerciseSpec>,
    /// The file this lab was read from (not part of the TOML).
    #[serde(skip)]
    pub file: PathBuf,
    #[serde(skip)]
    text: String,
}

fn default_true() -> bool {
    true
}

/// A lab's own stopping limits (`[timing]`), replacing the runner's defaults. Pageable host
/// copies, for example, vary by tens of percent from sample to sample with the host's memory
/// system: knowing their mean to 0.5 % would take thousands of samples, and the lesson needs
/// only a few percent.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimingSpec {
    /// Stop once the mean is known to this relative standard error (0.02 = 2 %).
    #[serde(default)]
    pub target_rel_error: Option<f64>,
    /// Wall-clock limit per variant, in seconds.
    #[serde(default)]
    pub max_wall_s: Option<f64>,
}

/// Work a variant does besides moving bytes (floating-point operations, dependent loads...):
/// the table shows its rate (`count` / time) and the time per unit.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkSpec {
    /// Units of work per run of the variant.
    pub count: Expr,
    /// What one unit is, singular: "FLOP", "load", "shared load".
    pub unit: String,
}

/// A value the kernel measures itself (e.g. `clock64()` cycles around a timed loop) and writes
/// to element 0 of a `u64` buffer; the table shows it divided by `per`, in `unit`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CounterSpec {
    pub buffer: String,
    pub per: Expr,
    /// What the quotient is, e.g. "cycles per load".
    pub unit: String,
}

/// A level of the hierarchy and the variant whose result stands for it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LevelSpec {
    pub name: String,
    pub variant: String,
}

/// The ridge point of the roofline, measured: the work rate of `compute` (FLOP/s) over the
/// bandwidth of `memory` (bytes/s), in FLOP per byte.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RidgeSpec {
    pub compute: String,
    pub memory: String,
    /// A second compute roof (a tensor-core row's work rate), drawn above the first so that
    /// the reader sees the ridge move.
    #[serde(default)]
    pub tensor: Option<String>,
}

/// One more launch of a kernel of the book, before a variant's kernel (`setup`, untimed) or
/// after it (`then`, timed with it).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LaunchSpec {
    pub kernel: Spanned<String>,
    pub grid: Vec<Expr>,
    pub block: Vec<Expr>,
    #[serde(default)]
    pub shared_bytes: Option<Expr>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Preprocessor definitions for this kernel (`-DNAME=VALUE`).
    #[serde(default)]
    pub defines: BTreeMap<String, String>,
}

impl LaunchSpec {
    pub fn kernel_name(&self) -> &str {
        self.kernel.get_ref()
    }
}

/// A lab the book already describes whose kernels are not written yet (`planned = true`): it
/// has a name, a title and a summary, and the book shows that it has no results yet.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannedLab {
    pub planned: bool,
    pub name: String,
    pub title: String,
    #[serde(default)]
    pub summary: String,
    #[serde(skip)]
    pub file: PathBuf,
}

/// Any lab file: ready to run, or planned.
#[derive(Debug, Clone)]
pub enum LabFile {
    Ready(Box<LabSpec>),
    Planned(PlannedLab),
}

/// Reads a lab file's text; an unreadable file is an error at line 1.
fn read_lab(path: &Path) -> Result<String, LabError> {
    crate::textfile::read_text(path, crate::textfile::MOST_BYTES).map_err(|err| LabError {
        file: path.to_path_buf(),
        line: 1,
        message: format!("cannot read the lab file: {}", err.reason),
    })
}

/// A TOML error as a lab error at the line its span starts on.
fn toml_error(err: &toml::de::Error, text: &str, path: &Path, hint: &str) -> LabError {
    LabError {
        file: path.to_path_buf(),
        line: err
            .span()
            .map_or(1, |span| line_of_offset(text, span.start)),
        message: format!("{}{hint}", err.message().trim()),
    }
}

impl LabFile {
    pub fn name(&self) -> &str {
        match self {
            LabFile::Ready(lab) => &lab.name,
            LabFile::Planned(lab) => &lab.name,
        }
    }

    pub fn file(&self) -> &Path {
        match self {
            LabFile::Ready(lab) => &lab.file,
            LabFile::Planned(lab) => &lab.file,
        }
    }

    /// Reads a lab file of either kind.
    pub fn load(path: &Path) -> Result<LabFile, LabError> {
        LabFile::parse(&read_lab(path)?, path)
    }

    /// Parses a lab file of either kind; `planned = true` marks a planned one.
    pub fn parse(text: &str, path: &Path) -> Result<LabFile, LabError> {
        let table: toml::Table =
            toml::from_str(text).map_err(|err| toml_error(&err, text, path, ""))?;
        if table.get("planned").and_then(toml::Value::as_bool) != Some(true) {
            return LabSpec::parse(text, path).map(|lab| LabFile::Ready(Box::new(lab)));
        }
        let mut lab: PlannedLab = toml::from_str(text).map_err(|err| {
            toml_error(
                &err,
                text,
                path,
                " (a planned lab has only planned, name, title and summary)",
            )
        })?;
        lab.file = path.to_path_buf();
        Ok(LabFile::Planned(lab))
    }
}

/// How a lab's results are plotted.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlotSpec {
    /// What the variants' `plot_x` values are, e.g. "stride (floats)".
    pub x_label: String,
    /// Space the x axis by powers of two.
    #[serde(default)]
    pub log2_x: bool,
    /// Predictions drawn beside the measurement (`model = "NAME"` or a list of names), each
    /// scaled to what [`Model::scaled_to`] says.
    #[serde(default, rename = "model", deserialize_with = "one_or_many")]
    pub models: Vec<Model>,
    /// Mark the measured GPU's L2 size (from the results' device properties) on an x axis of
    /// bytes.
    #[serde(default)]
    pub mark_l2: bool,
}

/// Predictions the book can draw next to a measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Model {
    /// A float copy whose reads are `x` elements apart, fetched in 32-byte sectors
    /// ([`crate::bandwidth::strided_copy_efficiency`]).
    SectorStridedCopy,
    /// The same copy at the DRAM, where the L2 fills a miss with 64 bytes
    /// ([`crate::bandwidth::l2_fill_strided_copy_efficiency`]).
    L2FillStridedCopy,
    /// Shared-memory loads whose bank conflicts have degree `x`: 1/x of the conflict-free rate.
    InverseDegree,
}

/// What a model's share is a share of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelScale {
    /// The lab's ceiling row, measured in the same run.
    Ceiling,
    /// The sweep's row at x = 1, measured in the same run.
    RowAtOne,
}

impl Model {
    /// The share of [`Self::scaled_to`] the model predicts at `x`, as a rate (higher is faster).
    pub fn share(self, x: f64) -> f64 {
        match self {
            Model::SectorStridedCopy => crate::bandwidth::strided_copy_efficiency(x),
            Model::L2FillStridedCopy => crate::bandwidth::l2_fill_strided_copy_efficiency(x),
            Model::InverseDegree => 1.0 / x.max(1.0),
        }
    }

    pub fn scaled_to(self) -> ModelScale {
        match self {
            Model::SectorStridedCopy | Model::L2FillStridedCopy => ModelScale::Ceiling,
            Model::InverseDegree => ModelScale::RowAtOne,
        }
    }
}

/// `model = "NAME"` or `model = ["NAME", …]`.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Model>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(Model),
        Many(Vec<Model>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(model) => vec![model],
        OneOrMany::Many(models) => models,
    })
}

/// A device buffer of the lab.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BufferSpec {
    pub name: String,
    #[serde(default)]
    pub elem: ElemType,
    /// Number of elements.
    pub len: Expr,
    pub fill: Fill,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElemType {
    #[default]
    F32,
    F64,
    I32,
    U32,
    U64,
}

impl ElemType {
    pub fn size(self) -> usize {
        match self {
            ElemType::F32 | ElemType::I32 | ElemType::U32 => 4,
            ElemType::F64 | ElemType::U64 => 8,
        }
    }

    /// Renders one element stored little-endian in `bytes` for an error message.
    pub fn display(self, bytes: &[u8]) -> String {
        fn arr<const N: usize>(bytes: &[u8]) -> [u8; N] {
            let mut out = [0u8; N];
            let n = bytes.len().min(N);
            out[..n].copy_from_slice(&bytes[..n]);
            out
        }
        match self {
            ElemType::F32 => format!("{:?}", f32::from_le_bytes(arr(bytes))),
            ElemType::F64 => format!("{:?}", f64::from_le_bytes(arr(bytes))),
            ElemType::I32 => i32::from_le_bytes(arr(bytes)).to_string(),
            ElemType::U32 => u32::from_le_bytes(arr(bytes)).to_string(),
            ElemType::U64 => u64::from_le_bytes(arr(bytes)).to_string(),
        }
    }
}

/// How a buffer starts. Random and zero buffers are filled once per lab run (variants only
/// read them); poisoned buffers are poisoned again before every variant's check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fill {
    /// Fresh random values (floats uniform in [-1, 1), integers any bit pattern).
    Random,
    /// All bits set (NaN for floats): an element the kernel forgot to write cannot pass.
    Poison,
    Zero,
}

/// One row of the lab's table: a kernel of the book or a builtin. A `[[variants]]` entry with
/// a `sweep` stands for several, expanded when the lab is parsed (see the `sweep` module).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantSpec {
    pub name: String,
    /// Parameters of this variant's own (`params = { tile = 32 }`), added to or replacing the
    /// lab's in every expression of the variant; a sweep binds its values here.
    #[serde(default)]
    pub params: Params,
    /// What the table calls the row (defaults to the name).
    #[serde(default)]
    pub label: Option<String>,
    /// The access pattern, in words, for the table.
    #[serde(default)]
    pub access: String,
    #[serde(default)]
    pub kernel: Option<Spanned<String>>,
    #[serde(default)]
    pub builtin: Option<Builtin>,
    /// The Python block a `python_transpose` builtin runs.
    #[serde(default)]
    pub script: Option<Spanned<String>>,
    #[serde(default)]
    pub grid: Vec<Expr>,
    #[serde(default)]
    pub block: Vec<Expr>,
    #[serde(default)]
    pub shared_bytes: Option<Expr>,
    /// Kernel arguments in order: a buffer name passes its device pointer; anything else is an
    /// expression passed as a 32-bit int, or as another type with a suffix (`"n:i64"`, `"n:u64"`).
    #[serde(default)]
    pub args: Vec<String>,
    /// The oldest NVIDIA architecture the variant runs on (`"sm_90"` for the bulk tensor copy
    /// engine); on an older GPU, or another vendor's, the row says what it needs instead of
    /// running.
    #[serde(default)]
    pub requires: Option<Spanned<String>>,
    #[serde(default)]
    pub bytes: Option<Expr>,
    /// The buffers this variant reads, in place of the lab's `reads` and `writes`.
    #[serde(default)]
    pub reads: Option<Spanned<Traffic>>,
    /// The buffers this variant writes, likewise.
    #[serde(default)]
    pub writes: Option<Spanned<Traffic>>,
    /// A check of its own, e.g. a copy row in a transpose lab: `check = { reference = "copy", ... }`.
    #[serde(default)]
    pub check: Option<CheckSpec>,
    /// Where the row stands on the lab's plot, worked out from `plot_x` as written when the lab
    /// is parsed.
    #[serde(skip)]
    pub plot_x: Option<f64>,
    /// `plot_x` as written: a number, or an expression over the variant's own parameters.
    #[serde(default, rename = "plot_x")]
    plot_x_written: Option<sweep::PlotX>,
    /// The swept parameters of the entry; always `None` once the lab is parsed.
    #[serde(default)]
    sweep: Option<Spanned<sweep::Sweep>>,
    /// For a variant expanded from a sweep: the entry's name as the lab file writes it
    /// (`ws_{kb}k`) and where its `sweep` stands, by which its errors find their line.
    #[serde(skip)]
    written: Option<(String, usize)>,
    /// For a variant expanded from a sweep: the entry's name as written and its swept
    /// parameters (`pow2` or a list), which the results keep.
    #[serde(skip)]
    pub sweep_origin: Option<SweepOrigin>,
    /// Preprocessor definitions for the variant's kernel (`-DNAME=VALUE`), e.g. a tile size or
    /// the `__launch_bounds__` of a sweep.
    #[serde(default)]
    pub defines: BTreeMap<String, String>,
    /// Launches run once before the variant is checked, untimed (e.g. building a pointer chain).
    #[serde(default)]
    pub setup: Vec<LaunchSpec>,
    /// Launches run after the variant's kernel and timed with it (e.g. the later stages of an
    /// unfused pipeline).
    #[serde(default)]
    pub then: Vec<LaunchSpec>,
    #[serde(default)]
    pub work: Option<WorkSpec>,
    #[serde(default)]
    pub counter: Option<CounterSpec>,
    /// Overrides the lab's `flush_l2` for this variant.
    #[serde(default)]
    pub flush_l2: Option<bool>,
    /// Splits the kernel's work into chunks copied in, run and copied out on several streams
    /// (see the `pipeline` module).
    #[serde(default)]
    pub pipeline: Option<Spanned<PipelineSpec>>,
    /// L2 controls of its own, field by field in place of the lab's `[l2]`.
    #[serde(default)]
    pub l2: Option<L2Spec>,
}

impl VariantSpec {
    pub fn label(&self) -> &str {
        self.label.as_deref().unwrap_or(&self.name)
    }

    /// What an error about this variant searches the lab file for: its name as written, in
    /// quotes (for a swept variant, the entry's name with its `{...}`).
    pub fn anchor(&self) -> String {
        let name = self.written.as_ref().map_or(&self.name, |(name, _)| name);
        format!("\"{name}\"")
    }

    pub fn kernel_name(&self) -> Option<&str> {
        self.kernel.as_ref().map(|k| k.get_ref().as_str())
    }

    /// Every kernel the variant launches: setup, its own, then the later stages (and the
    /// Python block a script builtin runs).
    pub fn kernel_names(&self) -> Vec<&str> {
        let setup = self.setup.iter().map(LaunchSpec::kernel_name);
        let then = self.then.iter().map(LaunchSpec::kernel_name);
        let script = self.script.as_ref().map(|s| s.get_ref().as_str());
        setup
            .chain(self.kernel_name())
            .chain(then)
            .chain(script)
            .collect()
    }
}

/// NVRTC options for a kernel: the lab's flags, then its definitions.
pub fn compile_flags(lab_flags: &[String], defines: &BTreeMap<String, String>) -> Vec<String> {
    let mut flags = lab_flags.to_vec();
    flags.extend(
        defines
            .iter()
            .map(|(name, value)| format!("-D{name}={value}")),
    );
    flags
}

/// A kernel argument, resolved against the lab's buffers.
#[derive(Debug, Clone, PartialEq)]
pub enum ArgSpec {
    Buffer(String),
    /// A tensor map of the lab (`[[tensor_maps]]`), passed as the driver's 128-byte descriptor.
    TensorMap(String),
    /// An integer expression, passed as `ty`.
    Scalar {
        expr: Expr,
        ty: ScalarType,
    },
    /// A floating-point literal (`"0.5:f32"`, `"-1.25e-3:f64"`), passed as `ty` (`F32` or
    /// `F64`). For `F32` the value is the literal rounded to an f32 once, held exactly.
    Float {
        value: f64,
        ty: ScalarType,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScalarType {
    I32,
    I64,
    U32,
    U64,
    /// An integer expression (exact up to 2^24) or a float literal passed as a float
    /// (`"3:f32"`, `"0.5:f32"`).
    F32,
    /// The same as a double (integers exact up to 2^53).
    F64,
}

/// Something wrong with a lab file, with the place it was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: {message}", file.display())]
pub struct LabError {
    pub file: PathBuf,
    pub line: usize,
    pub message: String,
}

impl LabSpec {
    /// Reads and checks a lab file.
    pub fn load(path: &Path) -> Result<LabSpec, LabError> {
        LabSpec::parse(&read_lab(path)?, path)
    }

    /// Parses and checks a lab file's text; `path` is used in error messages.
    pub fn parse(text: &str, path: &Path) -> Result<LabSpec, LabError> {
        let mut lab: LabSpec =
            toml::from_str(text).map_err(|err| toml_error(&err, text, path, ""))?;
        lab.file = path.to_path_buf();
        lab.text = text.to_string();
        lab.expand_sweeps()?;
        lab.validate()?;
        Ok(lab)
    }

    /// A copy with some parameters replaced (`--set n=4096`).
    pub fn with_params(&self, overrides: &Params) -> Result<LabSpec, LabError> {
        let mut lab = self.clone();
        for (name, value) in overrides {
            match lab.params.get_mut(name) {
                Some(slot) => *slot = *value,
                None => {
                    return Err(self.error_at(
                        "[params]",
                        format!(
                            "lab `{}` has no parameter `{name}` (it has: {})",
                            self.name,
                            self.params.keys().cloned().collect::<Vec<_>>().join(", ")
                        ),
                    ));
                }
            }
        }
        lab.validate()?;
        Ok(lab)
    }

    /// The time limit per variant.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.timeout_s.unwrap_or(120))
    }

    /// Whether a variant runs in Python (the PyTorch or Triton peers).
    pub fn runs_python(&self) -> bool {
        self.variants
            .iter()
            .any(|v| v.builtin.is_some_and(Builtin::runs_in_python))
    }

    /// The stopping rule for this lab: `base` with the lab's `[timing]` overrides.
    pub fn stopping_rule(&self, base: &StoppingRule) -> StoppingRule {
        let timing = self.timing.unwrap_or_default();
        StoppingRule {
            target_rel_error: timing.target_rel_error.unwrap_or(base.target_rel_error),
            max_wall_s: timing.max_wall_s.unwrap_or(base.max_wall_s),
            ..*base
        }
    }

    pub fn variant(&self, name: &str) -> Option<&VariantSpec> {
        self.variants.iter().find(|v| v.name == name)
    }

    pub fn buffer(&self, name: &str) -> Option<&BufferSpec> {
        self.buffers.iter().find(|b| b.name == name)
    }

    /// The blocks of the book this lab names, with the line naming each: the kernels it runs,
    /// in variant order, then the NumPy references its checks call.
    pub fn kernel_refs(&self) -> Vec<(&str, usize)> {
        let mut refs = self.launched_kernel_refs();
        let checks = std::iter::once(&self.check)
            .chain(self.variants.iter().filter_map(|v| v.check.as_ref()));
        for block in checks.filter_map(CheckSpec::python_block) {
            if refs.iter().any(|(name, _)| *name == block) {
                continue;
            }
            let line = self
                .text
                .find(&format!("\"{block}\""))
                .map_or(1, |offset| line_of_offset(&self.text, offset));
            refs.push((block, line));
        }
        refs
    }

    /// The kernels of the book this lab runs, in variant order, with the line naming each.
    fn launched_kernel_refs(&self) -> Vec<(&str, usize)> {
        fn at<'a>(text: &str, k: &'a Spanned<String>) -> (&'a str, usize) {
            (k.get_ref().as_str(), line_of_offset(text, k.span().start))
        }
        let at = |k| at(&self.text, k);
        self.variants
            .iter()
            .flat_map(|v| {
                let setup = v.setup.iter().map(|l| at(&l.kernel));
                let then = v.then.iter().map(|l| at(&l.kernel));
                let script = v.script.as_ref().map(at);
                setup
                    .chain(v.kernel.as_ref().map(at))
                    .chain(then)
                    .chain(script)
            })
            .collect()
    }

    /// The work `variant` does, if the lab or the variant declares any.
    pub fn work_for<'a>(&'a self, variant: &'a VariantSpec) -> Option<&'a WorkSpec> {
        variant.work.as_ref().or(self.work.as_ref())
    }

    /// The self-measured value `variant` reports, if any.
    pub fn counter_for<'a>(&'a self, variant: &'a VariantSpec) -> Option<&'a CounterSpec> {
        variant.counter.as_ref().or(self.counter.as_ref())
    }

    /// An error about this lab at the first line containing `needle` (line 1 if none does).
    pub fn error_at(&self, needle: &str, message: impl Into<String>) -> LabError {
        let offset = self.text.find(needle).unwrap_or(0);
        self.error_at_offset(offset, message)
    }

    /// An error about `expr`, at the first line quoting it (`"n / 32"`), else the first line
    /// containing it (an integer written bare).
    pub fn expr_error(&self, expr: &Expr, message: impl Into<String>) -> LabError {
        let offset = self
            .text
            .find(&format!("\"{expr}\""))
            .or_else(|| self.text.find(expr.as_str()))
            .unwrap_or(0);
        self.error_at_offset(offset, message)
    }

    /// An error about this lab at the line holding byte `offset` of its text.
    fn error_at_offset(&self, offset: usize, message: impl Into<String>) -> LabError {
        LabError {
            file: self.file.clone(),
            line: line_of_offset(&self.text, offset),
            message: message.into(),
        }
    }

    /// The parameters `variant`'s expressions see: the lab's, then the variant's own, which
    /// replace a lab parameter of the same name. (`--set` changes the lab's only.) The device
    /// properties are bound beside them where an expression is evaluated
    /// ([`DeviceParams::bind`]).
    pub fn params_for(&self, variant: &VariantSpec) -> Params {
        let mut params = self.params.clone();
        params.extend(variant.params.iter().map(|(k, v)| (k.clone(), *v)));
        if let Some(pipeline) = &variant.pipeline {
            // The first chunk's, for validation; the plan binds each chunk's own.
            pipeline.get_ref().bind(&mut params, 0);
        }
        params
    }

    /// What validation evaluates expressions with when the lab is loaded: the lab's (or a
    /// variant's) parameters and the placeholder device's properties.
    fn env(&self, variant: Option<&VariantSpec>) -> Params {
        let params = variant.map_or_else(|| self.params.clone(), |v| self.params_for(v));
        DeviceParams::PLACEHOLDER.bind(&params)
    }

    /// Where the bytes `variant` must move come from: its own `bytes`, else its own `reads` and
    /// `writes`, else the lab's `bytes`, else the lab's `reads` and `writes`. `None` when there
    /// is none of these, which is an error when the lab is loaded.
    pub fn bytes_for<'a>(&'a self, variant: &'a VariantSpec) -> Option<BytesMoved<'a>> {
        let traffic = |reads: &'a Option<Spanned<Traffic>>,
                       writes: &'a Option<Spanned<Traffic>>| {
            (reads.is_some() || writes.is_some()).then(|| BytesMoved::Traffic {
                reads: reads.as_ref().map(Spanned::get_ref),
                writes: writes.as_ref().map(Spanned::get_ref),
            })
        };
        variant
            .bytes
            .as_ref()
            .map(BytesMoved::Expr)
            .or_else(|| traffic(&variant.reads, &variant.writes))
            .or_else(|| self.bytes.as_ref().map(BytesMoved::Expr))
            .or_else(|| traffic(&self.reads, &self.writes))
    }

    /// The buffers `variant` declares it writes: its own `writes` if it declares `reads` or
    /// `writes` of its own, else the lab's; empty if neither says.
    pub fn writes_for<'a>(&'a self, variant: &'a VariantSpec) -> Vec<&'a str> {
        let own = variant.reads.is_some() || variant.writes.is_some();
        let writes = if own { &variant.writes } else { &self.writes };
        writes
            .as_ref()
            .map(|writes| writes.get_ref().buffers())
            .unwrap_or_default()
    }

    /// Resolves a variant's argument list.
    pub fn args(&self, variant: &VariantSpec) -> Result<Vec<ArgSpec>, LabError> {
        self.parse_args(&variant.args)
    }

    /// Resolves an argument list (a variant's or an extra launch's): which entries are
    /// buffers, which expressions or float literals, of which type. Expressions are evaluated
    /// where the variant's parameters are known.
    pub fn parse_args(&self, args: &[String]) -> Result<Vec<ArgSpec>, LabError> {
        args.iter().map(|arg| self.parse_arg(arg)).collect()
    }

    fn parse_arg(&self, arg: &str) -> Result<ArgSpec, LabError> {
        if self.buffer(arg).is_some() {
            return Ok(ArgSpec::Buffer(arg.to_string()));
        }
        if self.tensor_map(arg).is_some() {
            return Ok(ArgSpec::TensorMap(arg.to_string()));
        }
        let (text, ty) = match arg.rsplit_once(':') {
            Some((text, "i32")) => (text, ScalarType::I32),
            Some((text, "i64")) => (text, ScalarType::I64),
            Some((text, "u32")) => (text, ScalarType::U32),
            Some((text, "u64")) => (text, ScalarType::U64),
            Some((text, "f32")) => (text, ScalarType::F32),
            Some((text, "f64")) => (text, ScalarType::F64),
            Some((_, other)) => {
                return Err(self.error_at(
                    arg,
                    format!(
                        "argument `{arg}`: unknown type `{other}` (use i32, i64, u32, u64, f32 or f64)"
                    ),
                ));
            }
            None => (arg, ScalarType::I32),
        };
        let text = text.trim();
        if matches!(ty, ScalarType::F32 | ScalarType::F64) && is_float_literal(text) {
            return self.float_arg(arg, text, ty);
        }
        Ok(ArgSpec::Scalar {
            expr: Expr::new(text),
            ty,
        })
    }

    /// A float literal argument, refused where it is no finite value of its type (`1e39:f32`
    /// would reach the kernel as infinity).
    fn float_arg(&self, arg: &str, text: &str, ty: ScalarType) -> Result<ArgSpec, LabError> {
        let value = match ty {
            ScalarType::F32 => text.parse::<f32>().map(f64::from),
            _ => text.parse::<f64>(),
        };
        match value {
            Ok(value) if value.is_finite() => Ok(ArgSpec::Float { value, ty }),
            Ok(_) => Err(self.error_at(
                arg,
                format!(
                    "argument `{arg}`: {text} does not fit in an {} (it would be infinite)",
                    if ty == ScalarType::F32 { "f32" } else { "f64" }
                ),
            )),
            Err(_) => {
                Err(self.error_at(arg, format!("argument `{arg}`: `{text}` is not a number")))
            }
        }
    }

    /// Every integer expression among `args` evaluates over `env`.
    fn validate_args(&self, args: &[String], env: &Params) -> Result<(), LabError> {
        for (arg, spec) in args.iter().zip(self.parse_args(args)?) {
            if let ArgSpec::Scalar { expr, .. } = spec {
                expr.eval(env).map_err(|err| {
                    self.error_at(
                        arg,
                        format!(
                            "argument `{arg}` is neither a buffer nor a valid expression: {err}"
                        ),
                    )
                })?;
            }
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), LabError> {
        self.validate_name()?;
        self.validate_param_names()?;
        self.validate_buffers()?;
        self.validate_tensor_maps()?;
        self.validate_requirements()?;
        for traffic in [&self.reads, &self.writes].into_iter().flatten() {
            self.validate_traffic(traffic)?;
        }
        self.validate_timing()?;
        self.validate_l2()?;
        self.validate_unused_defaults()?;
        self.validate_variants()?;
        self.validate_against()?;
        self.validate_summary_references()?;
        self.validate_exercise()?;
        self.validate_sanitize_params(&self.sanitize_params)?;
        self.validate_plot()?;
        self.validate_chart()?;
        self.validate_ceiling()
    }

    /// The lab's name is letters, digits, `_` or `-`.
    fn validate_name(&self) -> Result<(), LabError> {
        if self.name.is_empty()
            || !self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(self.error_at(
                "name",
                format!(
                    "lab name `{}` must be letters, digits, `_` or `-`",
                    self.name
                ),
            ));
        }
        Ok(())
    }

    /// Buffer names are unique and their lengths evaluate.
    fn validate_buffers(&self) -> Result<(), LabError> {
        let mut seen = BTreeSet::new();
        for buffer in &self.buffers {
            if !seen.insert(buffer.name.as_str()) {
                return Err(self.error_at(
                    &format!("\"{}\"", buffer.name),
                    format!("buffer `{}` is defined twice", buffer.name),
                ));
            }
            self.check_expr(&buffer.len, "buffer length", &self.env(None))?;
        }
        Ok(())
    }

    /// No parameter of the lab or of a variant is named like a device property, which
    /// expressions get from the GPU.
    fn validate_param_names(&self) -> Result<(), LabError> {
        let message = |name: &str| {
            format!(
                "parameter `{name}` is named like a device property, which expressions get from \
                 the GPU; rename the parameter"
            )
        };
        if let Some(name) = self.params.keys().find(|name| DeviceParams::is_name(name)) {
            return Err(self.error_at("[params]", message(name)));
        }
        for variant in &self.variants {
            if let Some(name) = variant
                .params
                .keys()
                .find(|name| DeviceParams::is_name(name))
            {
                return Err(self.variant_error(variant, message(name)));
            }
        }
        Ok(())
    }

    /// `reads` or `writes` names buffers of the lab, each once.
    fn validate_traffic(&self, traffic: &Spanned<Traffic>) -> Result<(), LabError> {
        let here = |message: String| self.error_at_offset(traffic.span().start, message);
        let mut seen = BTreeSet::new();
        for name in traffic.get_ref().buffers() {
            if self.buffer(name).is_none() {
                return Err(here(format!(
                    "reads and writes name buffers of the lab; `{name}` is not one"
                )));
            }
            if !seen.insert(name) {
                return Err(here(format!("buffer `{name}` is listed twice")));
            }
        }
        Ok(())
    }

    /// The lab's `[check]` and `bytes` are evaluated with each variant that uses them (see
    /// [`Self::validate_variant`]); where no variant does, with the lab's own parameters, so
    /// that a mistake in them is still found.
    fn validate_unused_defaults(&self) -> Result<(), LabError> {
        let env = self.env(None);
        if self.variants.iter().all(|v| v.check.is_some()) {
            self.validate_check(&self.check, "[check]", &env)?;
        }
        let own_bytes =
            |v: &VariantSpec| v.bytes.is_some() || v.reads.is_some() || v.writes.is_some();
        if let Some(bytes) = &self.bytes
            && self.variants.iter().all(own_bytes)
        {
            self.check_expr(bytes, "bytes", &env)?;
        }
        Ok(())
    }

    /// `[timing]`, if given, holds numbers in range: a relative error in (0, 0.5], a time limit
    /// in (0, 3600] seconds.
    fn validate_timing(&self) -> Result<(), LabError> {
        if let Some(timing) = &self.timing {
            // A relative error of 100 % or more says nothing; a day per variant is a typo.
            let within = |value: Option<f64>, max: f64| {
                value.is_none_or(|v| v.is_finite() && v > 0.0 && v <= max)
            };
            if !within(timing.target_rel_error, 0.5) || !within(timing.max_wall_s, 3600.0) {
                return Err(self.error_at(
                    "[timing]",
                    "[timing] takes target_rel_error above 0 and at most 0.5 (0.02 = 2 %), and \
                     max_wall_s above 0 and at most 3600 seconds",
                ));
            }
        }
        Ok(())
    }

    /// At least one variant, each valid, no name twice.
    fn validate_variants(&self) -> Result<(), LabError> {
        if self.variants.is_empty() {
            return Err(self.error_at("name", "a lab needs at least one [[variants]] entry"));
        }
        let mut seen = BTreeSet::new();
        for variant in &self.variants {
            self.validate_variant(variant)?;
            if !seen.insert(variant.name.as_str()) {
                return Err(self.variant_error(
                    variant,
                    format!("variant `{}` is defined twice", variant.name),
                ));
            }
        }
        Ok(())
    }

    /// Every variant that `ratios`, `ridge` and `levels` name exists, and the ridge's compute
    /// variant declares `work`.
    fn validate_summary_references(&self) -> Result<(), LabError> {
        let named = self
            .ratios
            .iter()
            .flatten()
            .chain(self.ridge.iter().flat_map(|ridge| {
                [&ridge.compute, &ridge.memory]
                    .into_iter()
                    .chain(&ridge.tensor)
            }))
            .chain(self.levels.iter().map(|level| &level.variant));
        for name in named {
            if self.variant(name).is_none() {
                return Err(self.error_at(
                    &format!("\"{name}\""),
                    format!("`{name}` (in ratios, ridge or levels) is not a variant of this lab"),
                ));
            }
        }
        let computes = self
            .ridge
            .iter()
            .flat_map(|ridge| std::iter::once(&ridge.compute).chain(&ridge.tensor));
        for name in computes {
            if let Some(compute) = self.variant(name)
                && self.work_for(compute).is_none()
            {
                return Err(self.error_at(
                    "ridge",
                    format!(
                        "the ridge's compute variant `{name}` declares no `work` to make a rate of"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `sanitize_params` (the lab's or its exercise's) names parameters of the lab.
    fn validate_sanitize_params(&self, sizes: &Params) -> Result<(), LabError> {
        match sizes.keys().find(|name| !self.params.contains_key(*name)) {
            Some(name) => Err(self.error_at(
                "sanitize_params",
                format!(
                    "sanitize_params names `{name}`, which is not a parameter of lab `{}` (it has: {})",
                    self.name,
                    self.params.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            )),
            None => Ok(()),
        }
    }

    /// `[exercise]`, if given, names kernel variants and a positive `min_speedup`.
    fn validate_exercise(&self) -> Result<(), LabError> {
        let Some(exercise) = &self.exercise else {
            return Ok(());
        };
        for (role, name) in [
            ("starter", &exercise.starter),
            ("solution", &exercise.solution),
        ] {
            match self.variant(name) {
                Some(variant) if variant.kernel.is_some() => {}
                Some(_) => {
                    return Err(self.error_at(
                        "[exercise]",
                        format!("the exercise's {role} `{name}` must be a kernel variant"),
                    ));
                }
                None => {
                    return Err(self.error_at(
                        "[exercise]",
                        format!("the exercise's {role} `{name}` is not a variant of this lab"),
                    ));
                }
            }
        }
        self.validate_sanitize_params(&exercise.sanitize_params)?;
        if !(exercise.min_speedup.is_finite() && exercise.min_speedup > 0.0) {
            return Err(self.error_at(
                "min_speedup",
                format!(
                    "min_speedup = {} must be a positive number",
                    exercise.min_speedup
                ),
            ));
        }
        Ok(())
    }

    /// With a `[plot]`, every variant's `plot_x` can be drawn on its axis.
    fn validate_plot(&self) -> Result<(), LabError> {
        let Some(plot) = &self.plot else {
            return Ok(());
        };
        for variant in &self.variants {
            if let Some(x) = variant.plot_x
                && (!x.is_finite() || (plot.log2_x && x <= 0.0))
            {
                return Err(self.variant_error(
                    variant,
                    format!(
                        "variant `{}`: plot_x = {x} cannot be drawn on this plot",
                        variant.name
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `[chart]`, if given, has what its kind draws from.
    fn validate_chart(&self) -> Result<(), LabError> {
        let Some(chart) = &self.chart else {
            return Ok(());
        };
        match chart::chart_problem(chart, self.plot.is_some(), self.ridge.is_some(), |name| {
            self.variant(name).is_some()
        }) {
            Some(problem) => Err(self.error_at("[chart]", problem)),
            None => Ok(()),
        }
    }

    /// The chart drawn beside the table: `[chart]`'s kind, else what the lab's sections call for
    /// ([`ChartKind::default_for`]).
    pub fn chart_kind(&self) -> ChartKind {
        self.chart.as_ref().map_or_else(
            || ChartKind::default_for(self.plot.is_some(), self.ridge.is_some()),
            |chart| chart.kind,
        )
    }

    /// `ceiling`, if given, names a variant of the lab.
    fn validate_ceiling(&self) -> Result<(), LabError> {
        if let Some(ceiling) = &self.ceiling
            && self.variant(ceiling).is_none()
        {
            return Err(self.error_at(
                "ceiling",
                format!("the ceiling names variant `{ceiling}`, which the lab does not define"),
            ));
        }
        Ok(())
    }

    fn validate_variant(&self, variant: &VariantSpec) -> Result<(), LabError> {
        // First: its expressions divide by `chunks`.
        self.validate_pipeline(variant)?;
        let env = self.env(Some(variant));
        match (&variant.kernel, variant.builtin) {
            (Some(_), Some(_)) => {
                return Err(self.variant_error(
                    variant,
                    format!(
                        "variant `{}` names both a kernel and a builtin; give one",
                        variant.name
                    ),
                ));
            }
            (None, None) => {
                return Err(self.variant_error(
                    variant,
                    format!(
                        "variant `{}` needs `kernel = \"...\"` or `builtin = \"memcpy\"`",
                        variant.name
                    ),
                ));
            }
            (Some(_), None) => self.validate_kernel_launch(variant, &env)?,
            (None, Some(builtin)) => self.validate_builtin(variant, builtin)?,
        }
        self.validate_bytes(variant, &env)?;
        self.validate_extra_launches(variant, &env)?;
        self.validate_defines(&variant.name, &variant.defines)?;
        self.validate_script(variant)?;
        if let Some(work) = self.work_for(variant) {
            self.check_expr(&work.count, "work.count", &env)?;
        }
        self.validate_counter(variant, &env)?;
        match &variant.check {
            Some(check) => self.validate_check(check, &variant.anchor(), &env)?,
            None => self.validate_check(&self.check, "[check]", &env)?,
        }
        self.validate_args(&variant.args, &env)?;
        Ok(())
    }

    /// A `pipeline` goes with a kernel of its own (no setup or later stages) and sane numbers;
    /// an error names the line of the `pipeline`.
    fn validate_pipeline(&self, variant: &VariantSpec) -> Result<(), LabError> {
        let Some(pipeline) = &variant.pipeline else {
            return Ok(());
        };
        let here = |message: String| self.error_at_offset(pipeline.span().start, message);
        if variant.kernel.is_none() || !variant.setup.is_empty() || !variant.then.is_empty() {
            return Err(here(format!(
                "variant `{}`: a `pipeline` goes with `kernel = \"...\"` alone (no builtin, \
                 `setup` or `then`): the kernel runs once per chunk",
                variant.name
            )));
        }
        match pipeline.get_ref().problem() {
            Some(problem) => Err(here(format!("variant `{}`: {problem}", variant.name))),
            None => Ok(()),
        }
    }

    /// An error about `variant`, at the line that names it: its `name = "..."`, else the first
    /// line quoting its name as written (a `ceiling` or `ratios` may quote it first).
    pub fn variant_error(&self, variant: &VariantSpec, message: impl Into<String>) -> LabError {
        let anchor = variant.anchor();
        let written = format!("name = {anchor}");
        // Several entries may write the same swept name: the one before this one's `sweep`.
        let swept = variant.written.as_ref().and_then(|(_, sweep)| {
            let before = self.text.get(..*sweep)?;
            before.rfind(&written)
        });
        let offset = swept
            .or_else(|| self.text.find(&written))
            .or_else(|| self.text.find(&anchor))
            .unwrap_or(0);
        self.error_at_offset(offset, message)
    }

    /// The variant moves a number of bytes the lab can work out ([`Self::bytes_for`]), over
    /// buffers of the lab.
    fn validate_bytes(&self, variant: &VariantSpec, env: &Params) -> Result<(), LabError> {
        for traffic in [&variant.reads, &variant.writes].into_iter().flatten() {
            self.validate_traffic(traffic)?;
        }
        match self.bytes_for(variant) {
            None => Err(self.variant_error(
                variant,
                format!(
                    "variant `{}` moves no bytes the lab knows of: give it or the lab `bytes`, \
                     or `reads` and `writes`",
                    variant.name
                ),
            )),
            Some(BytesMoved::Expr(bytes)) => self.check_expr(bytes, "bytes", env),
            Some(traffic) => traffic
                .entries()
                .into_iter()
                .filter_map(|(_, count)| count)
                .try_for_each(|count| self.check_expr(count, "element count", env)),
        }
    }

    /// A kernel variant's grid, block and `shared_bytes` evaluate to a launch.
    fn validate_kernel_launch(&self, variant: &VariantSpec, env: &Params) -> Result<(), LabError> {
        self.validate_dims(variant, &variant.grid, &variant.block, env)?;
        if let Some(bytes) = &variant.shared_bytes {
            self.check_expr(bytes, "shared_bytes", env)?;
        }
        Ok(())
    }

    /// A builtin's `args` have the shape its descriptor gives, and its check is one the
    /// descriptor accepts (a copy's for a copy, a transpose check, which gives the shape, for a
    /// transpose). The one place a builtin's arguments are checked: plan compilation relies on it.
    fn validate_builtin(&self, variant: &VariantSpec, builtin: Builtin) -> Result<(), LabError> {
        self.refuse_launch_fields(variant, builtin)?;
        self.validate_builtin_as(variant, &builtin.descriptor())
    }

    /// [`Self::validate_builtin`] against a descriptor (a test's stand-in peer has one of its
    /// own).
    pub fn validate_builtin_as(
        &self,
        variant: &VariantSpec,
        descriptor: &Descriptor,
    ) -> Result<(), LabError> {
        let name = descriptor.name;
        if !descriptor
            .args
            .fits(&variant.args, |arg| self.buffer(arg).is_some())
        {
            return Err(self.variant_error(
                variant,
                format!(
                    "builtin {name} (variant `{}`) takes {}",
                    variant.name,
                    descriptor.args.words()
                ),
            ));
        }
        let check = self.check_for(variant).as_builtin();
        let refusal = match descriptor.accepts {
            Accepts::Copy if !matches!(check, Some(BuiltinCheck::Copy { .. })) => {
                Some("copies: its check must be `reference = \"copy\"`".to_string())
            }
            Accepts::Transpose if !matches!(check, Some(BuiltinCheck::Transpose { .. })) => {
                Some("needs a transpose check, which gives the matrix's shape".to_string())
            }
            _ => None,
        };
        if let Some(refusal) = refusal {
            return Err(self.variant_error(
                variant,
                format!("builtin {name} (variant `{}`) {refusal}", variant.name),
            ));
        }
        let sizes: Vec<String> = variant
            .args
            .iter()
            .filter(|arg| self.buffer(arg).is_none())
            .cloned()
            .collect();
        self.validate_args(&sizes, &self.env(Some(variant)))
    }

    /// A builtin is launched by the runner or its library: a launch shape, defines or a
    /// minimum architecture written for it would be ignored, so each is an error at its line.
    fn refuse_launch_fields(
        &self,
        variant: &VariantSpec,
        builtin: Builtin,
    ) -> Result<(), LabError> {
        let given = [
            ("grid", !variant.grid.is_empty()),
            ("block", !variant.block.is_empty()),
            ("shared_bytes", variant.shared_bytes.is_some()),
            ("defines", !variant.defines.is_empty()),
            ("requires", variant.requires.is_some()),
        ];
        let Some((field, _)) = given.into_iter().find(|(_, given)| *given) else {
            return Ok(());
        };
        let message = format!(
            "variant `{}`: builtin {} takes no `{field}` (it goes with a kernel, which the lab \
             launches; a builtin is run by the runner as it is): remove it",
            variant.name,
            builtin.name()
        );
        // The field's own line, where it follows the variant's name.
        let anchor = format!("name = {}", variant.anchor());
        let line = self.text.find(&anchor).and_then(|at| {
            let rest = &self.text[at..];
            let end = rest.find("[[").unwrap_or(rest.len());
            rest[..end]
                .match_indices(&format!("\n{field}"))
                .next()
                .map(|(i, _)| at + i + 1)
        });
        Err(match line {
            Some(offset) => self.error_at_offset(offset, message),
            None => self.variant_error(variant, message),
        })
    }

    /// The `setup` and `then` launches are valid, and only a kernel variant has them.
    fn validate_extra_launches(&self, variant: &VariantSpec, env: &Params) -> Result<(), LabError> {
        for launch in variant.setup.iter().chain(&variant.then) {
            self.validate_dims(variant, &launch.grid, &launch.block, env)?;
            if let Some(bytes) = &launch.shared_bytes {
                self.check_expr(bytes, "shared_bytes", env)?;
            }
            self.validate_args(&launch.args, env)?;
            self.validate_defines(&variant.name, &launch.defines)?;
        }
        if (!variant.setup.is_empty() || !variant.then.is_empty()) && variant.kernel.is_none() {
            return Err(self.variant_error(
                variant,
                format!(
                    "variant `{}`: `setup` and `then` go with a kernel, not a builtin",
                    variant.name
                ),
            ));
        }
        Ok(())
    }

    /// `script` is given exactly when the builtin is python_transpose.
    fn validate_script(&self, variant: &VariantSpec) -> Result<(), LabError> {
        let wants_script = variant.builtin.is_some_and(|b| b.descriptor().script);
        match (wants_script, &variant.script) {
            (true, None) => Err(self.variant_error(
                variant,
                format!(
                    "variant `{}`: python_transpose needs `script = \"NAME\"`, a ```python kernel=NAME block",
                    variant.name
                ),
            )),
            (true, Some(_)) | (false, None) => Ok(()),
            (false, Some(_)) => Err(self.variant_error(
                variant,
                format!(
                    "variant `{}`: `script` goes with builtin = \"python_transpose\"",
                    variant.name
                ),
            )),
        }
    }

    /// The counter that applies to `variant`, if any, counts a positive `per` in a u64 buffer
    /// of the lab.
    fn validate_counter(&self, variant: &VariantSpec, env: &Params) -> Result<(), LabError> {
        let Some(counter) = self.counter_for(variant) else {
            return Ok(());
        };
        self.check_expr(&counter.per, "counter.per", env)?;
        if counter.per.eval(env).is_ok_and(|per| per <= 0) {
            return Err(self.expr_error(
                &counter.per,
                format!("counter.per `{}` must be positive", counter.per),
            ));
        }
        match self.buffer(&counter.buffer) {
            Some(buffer) if buffer.elem == ElemType::U64 => Ok(()),
            Some(_) => Err(self.error_at(
                &counter.buffer,
                format!(
                    "counter buffer `{}` must have elem = \"u64\"",
                    counter.buffer
                ),
            )),
            None => Err(self.error_at(
                &counter.buffer,
                format!(
                    "counter buffer `{}` is not a buffer of the lab",
                    counter.buffer
                ),
            )),
        }
    }

    fn validate_dims(
        &self,
        variant: &VariantSpec,
        grid: &[Expr],
        block: &[Expr],
        env: &Params,
    ) -> Result<(), LabError> {
        let here = |message: String| self.variant_error(variant, message);
        let variant = &variant.name;
        for (what, dims) in [("grid", grid), ("block", block)] {
            if dims.is_empty() || dims.len() > 3 {
                return Err(here(format!(
                    "variant `{variant}`: `{what}` needs 1 to 3 dimensions"
                )));
            }
            for dim in dims {
                let value = dim
                    .eval(env)
                    .map_err(|err| here(format!("variant `{variant}`: {what}: {err}")))?;
                if value <= 0 || value > i64::from(i32::MAX) {
                    return Err(here(format!(
                        "variant `{variant}`: {what} dimension `{dim}` is {value}; it must be between 1 and 2147483647"
                    )));
                }
            }
        }
        Ok(())
    }

    fn validate_defines(
        &self,
        variant: &str,
        defines: &BTreeMap<String, String>,
    ) -> Result<(), LabError> {
        for (name, value) in defines {
            let identifier = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            // The value becomes one compiler option: no whitespace that would split it.
            if !identifier || value.is_empty() || value.chars().any(char::is_whitespace) {
                return Err(self.error_at(
                    name,
                    format!(
                        "variant `{variant}`: define `{name} = \"{value}\"` must be an identifier and a value without spaces"
                    ),
                ));
            }
        }
        Ok(())
    }

    fn validate_check(&self, check: &CheckSpec, near: &str, env: &Params) -> Result<(), LabError> {
        let inputs: Vec<&str> = match &check.kind {
            CheckKind::Builtin(builtin) => builtin.inputs(),
            CheckKind::Python(python) => {
                python.inputs.iter().flatten().map(String::as_str).collect()
            }
            CheckKind::Against(_) => Vec::new(),
        };
        let roles = inputs
            .iter()
            .map(|name| ("input", *name))
            .chain([("output", check.output())]);
        for (role, name) in roles {
            let line_of_name = format!("\"{name}\"");
            let near = if self.text.contains(&format!("= {line_of_name}")) {
                format!("= {line_of_name}")
            } else if self.text.contains(&line_of_name) {
                line_of_name
            } else {
                near.to_string()
            };
            match self.buffer(name) {
                None => {
                    return Err(self.error_at(
                        &near,
                        format!("the check names buffer `{name}`, which the lab does not define"),
                    ));
                }
                Some(buffer) if role == "input" && buffer.fill == Fill::Poison => {
                    return Err(self.error_at(&near, format!("the check's input `{name}` is a poisoned buffer; give it `fill = \"random\"`")));
                }
                Some(_) => {}
            }
        }
        match &check.kind {
            CheckKind::Builtin(builtin) => {
                for (name, expr) in builtin.exprs() {
                    self.check_expr(expr, &format!("check.{name}"), env)?;
                }
            }
            CheckKind::Python(python) => self.validate_python_check(python, env)?,
            CheckKind::Against(against) => {
                if self.variant(&against.against).is_none() {
                    return Err(self.error_at(
                        &format!("\"{}\"", against.against),
                        format!(
                            "the check is against variant `{}`, which the lab does not have",
                            against.against
                        ),
                    ));
                }
            }
        }
        self.validate_compare(check, near, env)
    }

    /// A NumPy check names its block by a Python identifier, and its arguments are numbers or
    /// expressions of the parameters, named unlike any buffer (the function receives both).
    fn validate_python_check(&self, python: &PythonCheck, env: &Params) -> Result<(), LabError> {
        let near = format!("\"{}\"", python.python);
        let near = near.as_str();
        let identifier = |name: &str| {
            name.chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        if !identifier(&python.python) {
            return Err(self.error_at(
                near,
                format!(
                    "python = \"{}\" must name a ```python reference=NAME block by a Python identifier",
                    python.python
                ),
            ));
        }
        for (name, value) in &python.args {
            if self.buffer(name).is_some() || !identifier(name) {
                return Err(self.error_at(
                    near,
                    format!(
                        "check argument `{name}` must be an identifier unlike any buffer's name (the reference receives both by name)"
                    ),
                ));
            }
            if let ArgValue::Expr(expr) = value {
                self.check_expr(expr, &format!("check.args.{name}"), env)?;
            }
        }
        Ok(())
    }

    /// A comparison's numbers are in range, a tolerance compares floats, and a sample stride is
    /// at least 1.
    fn validate_compare(
        &self,
        check: &CheckSpec,
        near: &str,
        env: &Params,
    ) -> Result<(), LabError> {
        let Some(compare) = &check.compare else {
            return Ok(());
        };
        let here = if self.text.contains("compare") {
            "compare"
        } else {
            near
        };
        if let Some(problem) = compare.rule.problem() {
            return Err(self.error_at(here, problem));
        }
        let output = self.buffer(check.output()).map(|b| b.elem);
        if compare.rule.is_tolerant() && !matches!(output, Some(ElemType::F32 | ElemType::F64)) {
            return Err(self.error_at(
                here,
                format!(
                    "a tolerance compares floats; output `{}` holds integers (compare them exactly)",
                    check.output()
                ),
            ));
        }
        if let Some(every) = &compare.every {
            self.check_expr(every, "compare.every", env)?;
            if every.eval(env).is_ok_and(|n| n < 1) {
                return Err(self.error_at(
                    "every",
                    format!("compare.every `{every}` must be at least 1"),
                ));
            }
        }
        Ok(())
    }

    /// No variant's check leads, through `against`, back to itself: a variant is checked
    /// against a trusted one (whose own check is against itself, through the lab's check, or a
    /// reference), never in a circle.
    fn validate_against(&self) -> Result<(), LabError> {
        for variant in &self.variants {
            if let Some(check) = &variant.check
                && check.against() == Some(variant.name.as_str())
            {
                return Err(self.variant_error(
                    variant,
                    format!("variant `{}` is checked against itself", variant.name),
                ));
            }
            let mut path = vec![variant.name.as_str()];
            let mut current = variant;
            while let Some(next) = self.check_for(current).against() {
                if next == current.name {
                    break; // the trusted variant of the lab's check
                }
                if path.contains(&next) {
                    path.push(next);
                    return Err(self.variant_error(
                        variant,
                        format!("checks go round in a circle: {}", path.join(" → ")),
                    ));
                }
                path.push(next);
                let Some(found) = self.variant(next) else {
                    break; // reported by validate_check
                };
                current = found;
            }
        }
        Ok(())
    }

    /// The check that applies to `variant`: its own, or the lab's.
    pub fn check_for<'a>(&'a self, variant: &'a VariantSpec) -> &'a CheckSpec {
        variant.check.as_ref().unwrap_or(&self.check)
    }

    fn check_expr(&self, expr: &Expr, what: &str, env: &Params) -> Result<(), LabError> {
        expr.eval(env)
            .map(|_| ())
            .map_err(|err| self.expr_error(expr, format!("{what}: {err}")))
    }
}

/// Whether an argument's text (its type suffix taken off) is a float literal, `0.5` or
/// `-1.25e-3`, rather than an integer expression: a sign, then a digit or a point, and a point
/// or an exponent somewhere. (`e5` alone is a parameter's name.)
fn is_float_literal(text: &str) -> bool {
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        && unsigned.contains(['.', 'e', 'E'])
        && unsigned
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
}

impl fmt::Display for ArgSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgSpec::Buffer(name) | ArgSpec::TensorMap(name) => f.write_str(name),
            ArgSpec::Scalar { expr, ty } => write!(f, "{expr}:{ty:?}"),
            ArgSpec::Float { value, ty } => write!(f, "{value}:{ty:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The copy lab the tests share: a `memcpy` builtin and a `copy_scalar` kernel.
    const COPY: &str = include_str!("../../labs/fixtures/copy.toml");

    fn parse(text: &str) -> Result<LabSpec, LabError> {
        LabSpec::parse(text, Path::new("labs/copy.toml"))
    }

    #[test]
    fn parses_a_valid_lab_and_resolves_arguments() {
        let lab = parse(COPY).expect("valid");
        assert_eq!(lab.variants.len(), 2);
        assert_eq!(lab.kernel_refs(), vec![("copy_scalar", 32)]);
        let args = lab.args(&lab.variants[1]).expect("args");
        assert_eq!(args[0], ArgSpec::Buffer("dst".into()));
        assert_eq!(
            args[2],
            ArgSpec::Scalar {
                expr: Expr::new("n"),
                ty: ScalarType::I32
            }
        );
        match lab.bytes_for(&lab.variants[1]) {
            Some(BytesMoved::Expr(bytes)) => assert_eq!(bytes.eval(&lab.params), Ok(8192)),
            other => panic!("the lab's bytes, got {other:?}"),
        }
    }

    #[test]
    fn a_plot_names_one_model_or_several() {
        let plot = |model: &str| {
            let text = COPY.replace(
                "[params]",
                &format!("[plot]\nx_label = \"x\"\nmodel = {model}\n\n[params]"),
            );
            parse(&text).map(|lab| lab.plot.map(|p| p.models))
        };
        assert_eq!(
            plot("\"inverse_degree\"").expect("one"),
            Some(vec![Model::InverseDegree])
        );
        assert_eq!(
            plot("[\"sector_strided_copy\", \"l2_fill_strided_copy\"]").expect("two"),
            Some(vec![Model::SectorStridedCopy, Model::L2FillStridedCopy])
        );
        assert!(plot("\"no_such_model\"").is_err());
        assert_eq!(Model::InverseDegree.share(4.0), 0.25);
        assert_eq!(Model::L2FillStridedCopy.scaled_to(), ModelScale::Ceiling);
    }

    #[test]
    fn a_timing_table_overrides_only_what_it_names() {
        let base = StoppingRule::default();
        assert_eq!(parse(COPY).expect("valid").stopping_rule(&base), base);
        let text = COPY.replace("[params]", "[timing]\ntarget_rel_error = 0.02\n\n[params]");
        let rule = parse(&text).expect("valid").stopping_rule(&base);
        assert_eq!(rule.target_rel_error, 0.02);
        assert_eq!(rule.max_wall_s, base.max_wall_s);
        assert_eq!(rule.min_samples, base.min_samples);

        let err = parse(&COPY.replace("[params]", "[timing]\nmax_wall_s = 0\n\n[params]"))
            .expect_err("zero limit");
        assert_eq!(err.line, 7, "{}", err.message);
        assert!(err.message.contains("max_wall_s"), "{}", err.message);
        let err = parse(&COPY.replace("[params]", "[timing]\nmax_samples = 5\n\n[params]"))
            .expect_err("unknown key");
        assert!(err.message.contains("max_samples"), "{}", err.message);
    }

    #[test]
    fn timing_settings_out_of_range_are_errors_at_the_timing_table() {
        for timing in [
            "max_wall_s = 1e300",
            "max_wall_s = 86400",
            "max_wall_s = -1",
            "max_wall_s = nan",
            "target_rel_error = 1",
            "target_rel_error = inf",
        ] {
            let text = COPY.replace("[params]", &format!("[timing]\n{timing}\n\n[params]"));
            let err = parse(&text).expect_err(timing);
            assert_eq!(err.line, 7, "{timing}: {}", err.message);
            assert!(
                err.message.contains("at most 3600 seconds"),
                "{}",
                err.message
            );
        }
        let text = COPY.replace(
            "[params]",
            "[timing]\nmax_wall_s = 3600\ntarget_rel_error = 0.5\n\n[params]",
        );
        assert!(parse(&text).is_ok(), "the limits themselves are allowed");
    }

    #[test]
    fn toml_errors_carry_the_line() {
        let text = COPY.replace("fill = \"poison\"", "fill = \"poisson\"");
        let err = parse(&text).expect_err("bad fill");
        assert_eq!(err.file, PathBuf::from("labs/copy.toml"));
        assert_eq!(err.line, 18);
        assert!(err.message.contains("poisson"), "{}", err.message);
    }

    #[test]
    fn missing_and_ill_typed_fields_are_reported() {
        let err = parse(&COPY.replace("title = \"Copy\"\n", "")).expect_err("no title");
        assert!(err.message.contains("title"), "{}", err.message);
        let err = parse(&COPY.replace("n = 1024", "n = \"big\"")).expect_err("ill-typed");
        assert_eq!(err.line, 8);
    }

    #[test]
    fn unknown_names_are_reported_with_their_line() {
        let err =
            parse(&COPY.replace("output = \"dst\"", "output = \"out\"")).expect_err("bad check");
        assert!(err.message.contains("`out`"), "{}", err.message);
        assert_eq!(err.line, 23);

        let err = parse(&COPY.replace("ceiling = \"memcpy\"", "ceiling = \"cudaMemcpy\""))
            .expect_err("bad ceiling");
        assert_eq!(err.line, 5);

        let err =
            parse(&COPY.replace("[\"n / 256\"]", "[\"m / 256\"]")).expect_err("unknown param");
        assert!(
            err.message.contains("unknown parameter `m`"),
            "{}",
            err.message
        );
    }

    #[test]
    fn a_builtin_with_a_launch_shape_or_requires_is_refused_at_the_line() {
        for (field, line) in [("grid = [1]", "grid"), ("requires = \"sm_90\"", "requires")] {
            let text = COPY.replace(
                "builtin = \"memcpy\"\n",
                &format!("builtin = \"memcpy\"\n{field}\n"),
            );
            let err = parse(&text).expect_err(field);
            let at = text
                .lines()
                .position(|l| l.starts_with(line))
                .expect("the line")
                + 1;
            assert_eq!(err.line, at, "{field}: {err}");
            assert!(err.message.contains(&format!("takes no `{line}`")), "{err}");
        }
    }

    #[test]
    fn a_variant_needs_exactly_one_of_kernel_and_builtin() {
        let text = COPY.replace(
            "builtin = \"memcpy\"",
            "builtin = \"memcpy\"\nkernel = \"x\"",
        );
        assert!(parse(&text).expect_err("both").message.contains("both"));
        let text = COPY.replace("builtin = \"memcpy\"\n", "");
        assert!(parse(&text).expect_err("neither").message.contains("needs"));
    }

    #[test]
    fn duplicate_variants_and_bad_dimensions_are_errors() {
        let text = COPY.replace("name = \"scalar\"", "name = \"memcpy\"");
        assert!(parse(&text).expect_err("dup").message.contains("twice"));
        let text = COPY.replace("block = [256]", "block = [0]");
        assert!(
            parse(&text)
                .expect_err("zero")
                .message
                .contains("between 1 and")
        );
    }

    #[test]
    fn planned_labs_have_only_a_name_title_and_summary() {
        let planned = "planned = true\nname = \"strided\"\ntitle = \"Strided sweep\"\n";
        match LabFile::parse(planned, Path::new("labs/strided.toml")) {
            Ok(LabFile::Planned(lab)) => assert_eq!(
                (lab.name.as_str(), lab.title.as_str()),
                ("strided", "Strided sweep")
            ),
            other => panic!("expected a planned lab, got {other:?}"),
        }
        let err = LabFile::parse(
            &format!("{planned}bytes = 4\n"),
            Path::new("labs/strided.toml"),
        )
        .expect_err("extra field");
        assert_eq!(err.line, 4);
        assert!(matches!(
            LabFile::parse(COPY, Path::new("labs/copy.toml")),
            Ok(LabFile::Ready(_))
        ));
    }

    #[test]
    fn parameter_overrides_are_checked() {
        let lab = parse(COPY).expect("valid");
        let bigger = lab
            .with_params(&Params::from([("n".into(), 4096)]))
            .expect("override");
        assert_eq!(bigger.params["n"], 4096);
        let err = lab
            .with_params(&Params::from([("m".into(), 1)]))
            .expect_err("unknown");
        assert!(err.message.contains("no parameter `m`"));
    }

    #[test]
    fn argument_types_are_parsed_from_suffixes() {
        let text = COPY.replace(
            "[\"dst\", \"src\", \"n\"]",
            "[\"dst\", \"src\", \"n * 2:u64\"]",
        );
        let lab = parse(&text).expect("valid");
        assert_eq!(
            lab.args(&lab.variants[1]).expect("args")[2],
            ArgSpec::Scalar {
                expr: Expr::new("n * 2"),
                ty: ScalarType::U64
            }
        );
        let text = COPY.replace("[\"dst\", \"src\", \"n\"]", "[\"dst\", \"src\", \"n:f16\"]");
        assert!(parse(&text).expect_err("bad type").message.contains("f16"));
    }

    #[test]
    fn a_variants_params_add_to_and_replace_the_labs_and_set_changes_only_the_labs() {
        let text = COPY.replace(
            "grid = [\"n / 256\"]",
            "params = { n = 4096, tile = 32 }\ngrid = [\"n / tile\"]",
        );
        let lab = parse(&text).expect("valid");
        let scalar = lab.variant("scalar").expect("scalar");
        let memcpy = lab.variant("memcpy").expect("memcpy");
        assert_eq!(
            lab.params_for(scalar),
            Params::from([("n".into(), 4096), ("tile".into(), 32)])
        );
        assert_eq!(lab.params_for(memcpy), Params::from([("n".into(), 1024)]));
        let set = lab
            .with_params(&Params::from([("n".into(), 2048)]))
            .expect("--set n");
        assert_eq!(set.params["n"], 2048);
        assert_eq!(
            set.params_for(set.variant("scalar").expect("scalar"))["n"],
            4096
        );
        assert_eq!(
            set.params_for(set.variant("memcpy").expect("memcpy"))["n"],
            2048
        );
        let err = lab
            .with_params(&Params::from([("tile".into(), 16)]))
            .expect_err("a variant's parameter is not the lab's");
        assert!(
            err.message.contains("no parameter `tile`"),
            "{}",
            err.message
        );

        // One variant's parameter is not another's.
        let text = text.replace(
            "args = [\"dst\", \"src\"]\n",
            "args = [\"dst\", \"src\"]\nbytes = \"tile * 4\"\n",
        );
        let err = parse(&text).expect_err("memcpy has no tile");
        assert!(
            err.message.contains("unknown parameter `tile`"),
            "{}",
            err.message
        );
        assert_eq!(err.line, 29, "{err}");
    }

    #[test]
    fn expressions_may_name_device_properties_and_parameters_may_not() {
        let lab = parse(&COPY.replace("[\"n / 256\"]", "[\"2 * sm_count\", \"warp_size\"]"));
        assert!(lab.is_ok(), "{lab:?}");
        // At load the H200's values stand in: they are real numbers, checked like any other.
        let err = parse(&COPY.replace("[\"n / 256\"]", "[\"l2_bytes * l2_bytes\"]"))
            .expect_err("too large a grid");
        assert!(err.message.contains("3958241859993600"), "{}", err.message);
        let err = parse(&COPY.replace("n = 1024", "n = 1024\nwarp_size = 64"))
            .expect_err("a lab parameter named like a property");
        assert!(
            err.message
                .contains("`warp_size` is named like a device property"),
            "{err}"
        );
        assert_eq!(err.line, 7, "{err}");
        let err = parse(&COPY.replace("block = [256]", "block = [256]\nparams = { l2_bytes = 1 }"))
            .expect_err("a variant parameter named like a property");
        assert!(err.message.contains("`l2_bytes`"), "{err}");
        assert_eq!(err.line, 31, "{err}");
    }

    #[test]
    fn float_arguments_take_literals_as_well_as_integer_expressions() {
        let with_args = |args: &str| parse(&COPY.replace("[\"dst\", \"src\", \"n\"]", args));
        let lab = with_args(
            "[\"dst\", \"0.1:f32\", \"-1.25e-3:f64\", \"n / 2:f64\", \"1e3:f32\", \"3:f32\"]",
        )
        .expect("valid");
        let float = |value: f64, ty| ArgSpec::Float { value, ty };
        assert_eq!(
            lab.args(&lab.variants[1]).expect("args")[1..],
            [
                float(f64::from(0.1f32), ScalarType::F32),
                float(-1.25e-3, ScalarType::F64),
                ArgSpec::Scalar {
                    expr: Expr::new("n / 2"),
                    ty: ScalarType::F64
                },
                float(1000.0, ScalarType::F32),
                ArgSpec::Scalar {
                    expr: Expr::new("3"),
                    ty: ScalarType::F32
                },
            ]
        );
        let cases = [
            ("[\"1e39:f32\"]", "does not fit in an f32"),
            ("[\"-1e309:f64\"]", "does not fit in an f64"),
            ("[\"1.2.3:f32\"]", "is not a number"),
            ("[\"0.5:i32\"]", "neither a buffer nor a valid expression"),
            ("[\"e5:f32\"]", "unknown parameter `e5`"),
        ];
        for (args, message) in cases {
            let err = with_args(args).expect_err(args);
            assert!(err.message.contains(message), "{args}: {}", err.message);
            assert_eq!(err.line, 35, "{args}: {err}");
        }
    }

    #[test]
    fn bytes_come_from_the_variant_then_the_lab_then_their_reads_and_writes() {
        let traffic = COPY.replace(
            "bytes = \"2 * n * 4\"\n",
            "reads = [\"src\"]\nwrites = { dst = \"n / 2\" }\n",
        );
        let lab = parse(&traffic).expect("valid");
        let memcpy = lab.variant("memcpy").expect("memcpy");
        let Some(BytesMoved::Traffic { reads, writes }) = lab.bytes_for(memcpy) else {
            panic!("the lab's reads and writes");
        };
        assert_eq!(reads, Some(&Traffic::Whole(vec!["src".into()])));
        let dst = BTreeMap::from([("dst".to_string(), Expr::new("n / 2"))]);
        assert_eq!(writes, Some(&Traffic::Elements(dst)));
        assert_eq!(lab.writes_for(memcpy), ["dst"]);

        // The variant's own reads and writes come before the lab's; its `bytes` before both.
        let own = format!("{traffic}reads = {{ src = \"n\" }}\n");
        let lab = parse(&own).expect("valid");
        let scalar = lab.variant("scalar").expect("scalar");
        assert!(matches!(
            lab.bytes_for(scalar),
            Some(BytesMoved::Traffic {
                reads: Some(_),
                writes: None
            })
        ));
        assert!(lab.writes_for(scalar).is_empty(), "its own say: no writes");
        let lab = parse(&format!("{traffic}bytes = 8\n")).expect("valid");
        let scalar = lab.variant("scalar").expect("scalar");
        assert_eq!(
            lab.bytes_for(scalar),
            Some(BytesMoved::Expr(&Expr::new("8")))
        );
        assert_eq!(
            lab.writes_for(scalar),
            ["dst"],
            "the lab's writes still apply"
        );
        let lab = parse(&format!("{COPY}writes = [\"dst\"]\n")).expect("valid");
        assert_eq!(
            lab.bytes_for(lab.variant("scalar").expect("scalar"))
                .map(|b| b.entries().len()),
            Some(1),
            "a variant's own writes come before the lab's bytes"
        );
    }

    #[test]
    fn reads_and_writes_are_checked_with_their_line() {
        let no_bytes = COPY.replace("bytes = \"2 * n * 4\"\n", "");
        let err = parse(&no_bytes).expect_err("no bytes");
        assert!(
            err.message.contains("variant `memcpy` moves no bytes"),
            "{err}"
        );
        assert_eq!(err.line, 25, "{err}");
        let cases = [
            ("reads = [\"srcc\"]\n", 4, "`srcc` is not one"),
            ("reads = [\"src\", \"src\"]\n", 4, "listed twice"),
            ("writes = { dst = \"m\" }\n", 4, "unknown parameter `m`"),
            ("reads = 5\n", 4, "a list of buffer names"),
        ];
        for (line, at, message) in cases {
            let err =
                parse(&no_bytes.replace("ceiling", &format!("{line}ceiling"))).expect_err(line);
            assert!(err.message.contains(message), "{line}: {}", err.message);
            assert_eq!(err.line, at, "{line}: {err}");
        }
        let err = parse(&format!("{COPY}writes = [\"out\"]\n")).expect_err("no buffer out");
        assert!(err.message.contains("`out` is not one"), "{err}");
        assert_eq!(err.line, 38, "{err}");
    }

    const SWEEP: &str = r#"
name = "sweep"
title = "Sweep"
bytes = "2 * n * 4"
flush_l2 = false
ratios = [["slow", "fast"]]
ridge = { compute = "fast", memory = "slow" }
levels = [{ name = "L1", variant = "fast" }]
[params]
n = 1024
[work]
count = "n * 2"
unit = "FLOP"
[[buffers]]
name = "src"
len = "n"
fill = "random"
[[buffers]]
name = "dst"
len = "n"
fill = "poison"
[[buffers]]
name = "ticks"
elem = "u64"
len = "1"
fill = "poison"
[check]
reference = "copy"
input = "src"
output = "dst"
[[variants]]
name = "slow"
kernel = "k"
defines = { MIN_BLOCKS = "2" }
grid = ["n / 256"]
block = [256]
args = ["dst", "src", "3:f32"]
setup = [{ kernel = "init", grid = [1], block = [32], args = ["dst"] }]
then = [{ kernel = "finish", grid = [1], block = [32], args = ["dst"], defines = { TILE = "8" } }]
counter = { buffer = "ticks", per = "n", unit = "cycles" }
flush_l2 = true
[[variants]]
name = "fast"
kernel = "k"
grid = ["n / 256"]
block = [256]
args = ["dst", "src", "3:f32"]
[exercise]
starter = "slow"
solution = "fast"
min_speedup = 2.0
"#;

    #[test]
    fn sweeps_pipelines_counters_and_exercises_parse() {
        let lab = parse(SWEEP).expect("valid");
        assert!(!lab.flush_l2);
        let slow = lab.variant("slow").expect("slow");
        assert_eq!(slow.flush_l2, Some(true));
        assert_eq!(slow.kernel_names(), ["init", "k", "finish"]);
        assert_eq!(
            compile_flags(&["-lineinfo".into()], &slow.defines),
            ["-lineinfo", "-DMIN_BLOCKS=2"]
        );
        let refs: Vec<&str> = lab.kernel_refs().into_iter().map(|(k, _)| k).collect();
        assert_eq!(refs, ["init", "k", "finish", "k"]);
        assert_eq!(lab.work_for(slow).map(|w| w.unit.as_str()), Some("FLOP"));
        assert_eq!(
            lab.counter_for(slow).map(|c| c.buffer.as_str()),
            Some("ticks")
        );
        assert!(
            lab.counter_for(lab.variant("fast").expect("fast"))
                .is_none()
        );
        assert_eq!(
            lab.args(slow).expect("args")[2],
            ArgSpec::Scalar {
                expr: Expr::new("3"),
                ty: ScalarType::F32
            }
        );
        assert_eq!(lab.exercise.as_ref().map(|e| e.min_speedup), Some(2.0));
        let small = parse(&SWEEP.replace(
            "min_speedup = 2.0",
            "min_speedup = 2.0\nsanitize_params = { n = 4096 }",
        ))
        .expect("valid");
        let sizes = small.exercise.map(|e| e.sanitize_params);
        assert_eq!(sizes, Some([("n".to_string(), 4096)].into()));
        assert!(!small.sanitize && small.sanitize_params.is_empty());
        let authors = parse(&format!(
            "sanitize = true\nsanitize_params = {{ n = 256 }}\n{SWEEP}"
        ))
        .expect("valid");
        assert!(authors.sanitize);
        assert_eq!(authors.sanitize_params, [("n".to_string(), 256)].into());
    }

    #[test]
    fn new_fields_are_checked_with_their_line() {
        let cases = [
            (
                SWEEP.replace("MIN_BLOCKS = \"2\"", "\"MIN BLOCKS\" = \"2\""),
                "must be an identifier",
            ),
            (
                SWEEP.replace("elem = \"u64\"", "elem = \"u32\""),
                "must have elem = \"u64\"",
            ),
            (
                SWEEP.replace("[[\"slow\", \"fast\"]]", "[[\"slow\", \"quick\"]]"),
                "`quick` (in ratios, ridge or levels) is not a variant",
            ),
            (
                SWEEP.replace("starter = \"slow\"", "starter = \"nope\""),
                "the exercise's starter `nope` is not a variant",
            ),
            (
                SWEEP.replace("min_speedup = 2.0", "min_speedup = -1.0"),
                "must be a positive number",
            ),
            (
                SWEEP.replace(
                    "min_speedup = 2.0",
                    "min_speedup = 2.0\nsanitize_params = { m = 4096 }",
                ),
                "sanitize_params names `m`, which is not a parameter of lab",
            ),
            (
                format!("sanitize = true\nsanitize_params = {{ size = 64 }}\n{SWEEP}"),
                "sanitize_params names `size`, which is not a parameter of lab",
            ),
            (
                SWEEP.replace("[work]\ncount = \"n * 2\"\nunit = \"FLOP\"\n", ""),
                "declares no `work`",
            ),
            (
                SWEEP.replace("per = \"n\"", "per = \"0\""),
                "must be positive",
            ),
        ];
        for (text, message) in cases {
            let err = parse(&text).expect_err(message);
            assert!(err.message.contains(message), "{}", err.message);
            assert!(err.line > 1, "{err}");
        }
    }

    #[test]
    fn a_chart_section_picks_the_chart_and_is_checked_at_its_line() {
        let lab = parse(SWEEP).expect("valid");
        assert_eq!(
            lab.chart_kind(),
            ChartKind::Roofline,
            "a ridge without [plot]"
        );
        let speedup = format!("{SWEEP}[chart]\nkind = \"speedup\"\nbaseline = \"slow\"\n");
        let lab = parse(&speedup).expect("valid");
        assert_eq!(lab.chart_kind(), ChartKind::Speedup);
        let chart_line = speedup
            .lines()
            .position(|l| l == "[chart]")
            .expect("[chart]")
            + 1;
        for (text, message) in [
            (
                speedup.replace("baseline = \"slow\"", "baseline = \"slo\""),
                "baseline `slo` is not a variant",
            ),
            (
                speedup.replace("baseline = \"slow\"\n", ""),
                "needs `baseline",
            ),
            (
                speedup.replace("\"speedup\"", "\"points\""),
                "a points chart has none",
            ),
            (
                speedup.replace("\"speedup\"", "\"pie\""),
                "unknown variant `pie`",
            ),
        ] {
            let err = parse(&text).expect_err(message);
            assert!(err.message.contains(message), "{}", err.message);
            if !message.contains("unknown") {
                assert_eq!(err.line, chart_line, "{err}");
            }
        }
    }

    #[test]
    fn a_python_block_variant_names_its_script() {
        let lab = |variant: &str| {
            format!(
                "name = \"t\"\ntitle = \"T\"\nbytes = \"8\"\n[params]\nn = 4\n\
                 [[buffers]]\nname = \"in\"\nlen = \"n * n\"\nfill = \"random\"\n\
                 [[buffers]]\nname = \"out\"\nlen = \"n * n\"\nfill = \"poison\"\n\
                 [check]\nreference = \"transpose\"\ninput = \"in\"\noutput = \"out\"\nrows = \"n\"\ncols = \"n\"\n\
                 [[variants]]\nname = \"v\"\nargs = [\"out\", \"in\"]\n{variant}\n"
            )
        };
        let ok = parse(&lab(
            "builtin = \"python_transpose\"\nscript = \"triton_transpose\"",
        ))
        .expect("valid");
        assert_eq!(ok.variants[0].kernel_names(), ["triton_transpose"]);
        assert_eq!(ok.kernel_refs()[0].0, "triton_transpose");
        let missing = parse(&lab("builtin = \"python_transpose\"")).expect_err("no script");
        assert!(
            missing.message.contains("needs `script"),
            "{}",
            missing.message
        );
        let stray =
            parse(&lab("builtin = \"torch_transpose\"\nscript = \"x\"")).expect_err("stray");
        assert!(stray.message.contains("goes with"), "{}", stray.message);
    }
}
