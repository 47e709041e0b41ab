//! What compute-sanitizer reports, as data: one [`Finding`] per error record of its text
//! output, the [`Report`] of one run of one [`Tool`].

use serde::{Deserialize, Serialize};
use std::fmt;

/// One of compute-sanitizer's four tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tool {
    /// Out-of-bounds and misaligned accesses (global, shared, local memory), hardware faults.
    Memcheck,
    /// Shared-memory hazards: two threads touch the same shared bytes, one writing, unordered.
    Racecheck,
    /// Reads of memory nothing wrote: global memory, and shared memory where asked.
    Initcheck,
    /// Barriers used wrongly: a `__syncthreads()` in divergent code, a bad `__syncwarp` mask.
    Synccheck,
}

impl Tool {
    pub const ALL: [Tool; 4] = [
        Tool::Memcheck,
        Tool::Racecheck,
        Tool::Initcheck,
        Tool::Synccheck,
    ];

    /// The name `--tool` takes.
    pub fn name(self) -> &'static str {
        match self {
            Tool::Memcheck => "memcheck",
            Tool::Racecheck => "racecheck",
            Tool::Initcheck => "initcheck",
            Tool::Synccheck => "synccheck",
        }
    }
}

impl fmt::Display for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A thread or block index as the tool prints it: `(x,y,z)`.
pub type Dim3 = [u32; 3];

/// Where an instruction is, as the tool names it: the function (`oob_tail`,
/// `ka_race(int *)`), and the source file and line where the kernel has line information
/// (`oob_tail.cu:8`; NVRTC names the file after the program, kernelbook's `NAME.cu`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Site {
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<usize>,
}

/// Which memory an access went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Space {
    Global,
    Shared,
    Local,
    /// Another qualifier the tool names (`__device__`, `__constant__`, a generic address).
    Other,
}

/// What an access did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    Read,
    Write,
    Atomic,
}

impl Access {
    /// The verb for a sentence: "reads", "writes", "updates".
    pub fn verb(self) -> &'static str {
        match self {
            Access::Read => "reads",
            Access::Write => "writes",
            Access::Atomic => "updates",
        }
    }
}

/// Why memcheck refused an access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    OutOfBounds,
    Misaligned,
}

/// Where an address stands against the allocation nearest to it, as memcheck says it ("and is
/// 1 bytes after the nearest allocation at 0x… of size 4,096 bytes"). memcheck counts from the
/// allocation's last byte: the first byte past the end is "1 bytes after".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Nearest {
    pub relation: Relation,
    /// Bytes before or after the allocation (0 when inside).
    pub distance: u64,
    pub base: u64,
    pub size: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Relation {
    Before,
    After,
    Inside,
}

/// How grave the tool rates a race or hazard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

/// The order of a hazard's two accesses: read after write, write after read, write after
/// write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum HazardKind {
    #[serde(rename = "RAW")]
    ReadAfterWrite,
    #[serde(rename = "WAR")]
    WriteAfterRead,
    #[serde(rename = "WAW")]
    WriteAfterWrite,
}

/// One of the places a race analysis names ("Write access at … in shared_race.cu:12", "and
/// Read access at … [1024 hazards]").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RaceAccess {
    pub access: Access,
    pub site: Site,
    /// The hazards counted for this place, where the tool gave a count.
    pub hazards: Option<u64>,
}

/// One thread's side of a hazard ("Write Thread (0,0,0) at … in raceWAW.cu:20").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HazardAccess {
    pub access: Access,
    pub thread: Dim3,
    pub site: Site,
}

/// What synccheck found wrong with a barrier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BarrierProblem {
    /// Some threads of a block reached a block-wide barrier and others did not.
    DivergentBlock,
    /// Some threads of a warp reached a barrier and others did not.
    DivergentWarp,
    /// A barrier called with arguments it cannot take (a `__syncwarp` mask leaving out a caller).
    InvalidArguments,
    /// Another class, in the tool's words.
    Other(String),
}

/// What one error record says went wrong.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Problem {
    /// memcheck: an access out of bounds or misaligned.
    InvalidAccess {
        space: Space,
        access: Access,
        /// Bytes accessed.
        size: u32,
        address: Option<u64>,
        fault: Option<Fault>,
        nearest: Option<Nearest>,
    },
    /// initcheck: a read of memory nothing had written.
    Uninitialized {
        space: Space,
        size: u32,
        address: Option<u64>,
    },
    /// racecheck's analysis: the places taking part in one race.
    Race {
        severity: Severity,
        accesses: Vec<RaceAccess>,
    },
    /// racecheck's hazard report: two threads of one block on one shared byte.
    Hazard {
        severity: Severity,
        hazard: HazardKind,
        /// The byte's offset in the block's shared memory.
        offset: u64,
        first: Option<HazardAccess>,
        second: Option<HazardAccess>,
    },
    /// synccheck.
    Barrier { problem: BarrierProblem },
    /// Anything else the tool reports about the kernel (a hardware exception, a malloc/free
    /// error), in its words.
    Other { text: String },
}

/// One error record of the tool's output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub problem: Problem,
    /// The instruction at fault (`at … in FILE:LINE`).
    pub site: Option<Site>,
    /// The device backtrace, innermost first, where the tool printed one (a fault in a
    /// `__device__` function called from the kernel).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frames: Vec<Site>,
    pub thread: Option<Dim3>,
    pub block: Option<Dim3>,
}

impl Finding {
    pub(crate) fn new(problem: Problem) -> Finding {
        Finding {
            problem,
            site: None,
            frames: Vec::new(),
            thread: None,
            block: None,
        }
    }

    /// The places in the source this finding names: its own site, then its frames, then a
    /// race's or hazard's accesses.
    pub fn sites(&self) -> Vec<&Site> {
        let mut sites: Vec<&Site> = self.site.iter().chain(&self.frames).collect();
        match &self.problem {
            Problem::Race { accesses, .. } => sites.extend(accesses.iter().map(|a| &a.site)),
            Problem::Hazard { first, second, .. } => {
                sites.extend(first.iter().chain(second).map(|a| &a.site));
            }
            _ => {}
        }
        sites
    }
}

/// Everything one run of one tool printed, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    pub findings: Vec<Finding>,
    /// "Program hit … on CUDA API call to …": what the faults did to the program's calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_errors: Vec<String>,
    /// The tool's own complaints ("Error: Target application terminated before first
    /// instrumented API call", a refusal of the device).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_errors: Vec<String>,
    /// The `ERROR SUMMARY` count (or racecheck's hazards displayed), where printed.
    pub errors: Option<u64>,
    /// Errors the tool found but did not print (`--print-limit`).
    pub not_printed: Option<u64>,
    /// Whether the tool's banner (`COMPUTE-SANITIZER`) was seen: output without it is not the
    /// tool's.
    pub banner: bool,
}

impl Report {
    /// Whether the tool said it was done: a summary line was printed.
    pub fn finished(&self) -> bool {
        self.errors.is_some()
    }
}
