//! Findings in a learner's words: the records of one kind at one line become one
//! [`Diagnosis`], its place in the chapter and a sentence to act on ("thread 255 of block 3
//! writes `out[1024]`, one element past the end of `out` (1024 floats): the bounds test lets
//! the last thread through").

use super::finding::{
    Access, BarrierProblem, Dim3, Fault, Finding, HazardAccess, HazardKind, Problem, RaceAccess,
    Report, Site, Space, Tool,
};
use super::locate::{DeviceBuffer, Placed, Sources, Spot, spot};
use kernelbook_core::spec::ElemType;
use serde::{Deserialize, Serialize};
use std::fmt;

/// What the findings are read against: the kernels' sources, the lab's buffers on the device,
/// and the launch that was checked.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub sources: Sources<'a>,
    pub buffers: &'a [DeviceBuffer],
    pub launch: Option<Launch>,
}

/// A launch's grid and block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    pub grid: Dim3,
    pub block: Dim3,
}

/// The kind of error a diagnosis names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    OutOfBounds(Access),
    Misaligned(Access),
    UninitializedGlobal,
    UninitializedShared,
    SharedRace,
    DivergentBarrier,
    InvalidBarrier,
    Other,
}

impl Kind {
    /// A few words for a heading: "out-of-bounds write".
    pub fn title(self) -> &'static str {
        match self {
            Kind::OutOfBounds(Access::Write) => "out-of-bounds write",
            Kind::OutOfBounds(Access::Read) => "out-of-bounds read",
            Kind::OutOfBounds(Access::Atomic) => "out-of-bounds atomic",
            Kind::Misaligned(_) => "misaligned access",
            Kind::UninitializedGlobal => "read of unwritten memory",
            Kind::UninitializedShared => "read of shared memory no thread wrote",
            Kind::SharedRace => "shared-memory race",
            Kind::DivergentBarrier => "barrier in divergent code",
            Kind::InvalidBarrier => "barrier with invalid arguments",
            Kind::Other => "error",
        }
    }
}

/// One error of a kernel as a learner reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnosis {
    pub tool: Tool,
    pub kind: Kind,
    /// The line of the chapter (or the learner's file) at fault.
    pub at: Option<Placed>,
    pub sentence: String,
    /// How many of the tool's records this diagnosis stands for.
    pub records: usize,
}

impl fmt::Display for Diagnosis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.tool, self.kind.title())?;
        if let Some(placed) = &self.at {
            write!(f, " at {}", placed.at)?;
            if let Some(code) = &placed.code {
                write!(f, "\n    {code}")?;
            }
        }
        write!(f, "\n  {}", self.sentence)
    }
}

/// The diagnoses of one tool's report: its findings grouped by kind and line, in the order
/// the tool first printed them.
pub fn diagnose(tool: Tool, report: &Report, context: &Context<'_>) -> Vec<Diagnosis> {
    let mut groups: Vec<(Kind, Option<Placed>, Vec<&Finding>)> = Vec::new();
    for finding in &report.findings {
        let kind = kind_of(finding);
        let placed = context.sources.first_placed(finding.sites());
        let key = placed.as_ref().map(|p| p.at.clone());
        match groups
            .iter_mut()
            .find(|(k, p, _)| *k == kind && p.as_ref().map(|p| p.at.clone()) == key)
        {
            Some((_, _, members)) => members.push(finding),
            None => groups.push((kind, placed, vec![finding])),
        }
    }
    groups
        .into_iter()
        .map(|(kind, at, members)| Diagnosis {
            tool,
            kind,
            sentence: sentence(kind, &members, context),
            at,
            records: members.len(),
        })
        .collect()
}

fn kind_of(finding: &Finding) -> Kind {
    match &finding.problem {
        Problem::InvalidAccess {
            access,
            fault: Some(Fault::Misaligned),
            ..
        } => Kind::Misaligned(*access),
        Problem::InvalidAccess { access, .. } => Kind::OutOfBounds(*access),
        Problem::Uninitialized {
            space: Space::Shared,
            ..
        } => Kind::UninitializedShared,
        Problem::Uninitialized { .. } => Kind::UninitializedGlobal,
        Problem::Race { .. } | Problem::Hazard { .. } => Kind::SharedRace,
        Problem::Barrier {
            problem: BarrierProblem::InvalidArguments,
        } => Kind::InvalidBarrier,
        Problem::Barrier { .. } => Kind::DivergentBarrier,
        Problem::Other { .. } => Kind::Other,
    }
}

fn sentence(kind: Kind, members: &[&Finding], context: &Context<'_>) -> String {
    let first = members[0];
    let others = members.len() - 1;
    match (&first.problem, kind) {
        (Problem::InvalidAccess { .. }, Kind::Misaligned(_)) => misaligned(first, others, context),
        (Problem::InvalidAccess { .. }, _) => out_of_bounds(members, context),
        (Problem::Uninitialized { .. }, _) => uninitialized(first, others, context),
        (Problem::Race { accesses, .. }, _) => race(accesses, context),
        (Problem::Hazard { .. }, _) => hazard(first, others, context),
        (Problem::Barrier { problem }, _) => barrier(problem, first, others, context),
        (Problem::Other { text }, _) => match who(first, context) {
            Some(who) => format!("{text} ({who})"),
            None => text.clone(),
        },
    }
}

fn out_of_bounds(members: &[&Finding], context: &Context<'_>) -> String {
    let first = members[0];
    let Problem::InvalidAccess {
        space,
        access,
        size,
        address,
        ..
    } = &first.problem
    else {
        return String::new();
    };
    let who = who(first, context).unwrap_or_else(|| "a thread".to_string());
    let verb = access.verb();
    let others = others_too(members.len() - 1);
    if *space != Space::Global {
        let memory = match space {
            Space::Shared => "its block's shared memory",
            Space::Local => "its own local memory (an array on the thread's stack)",
            _ => "memory",
        };
        return format!(
            "{who} {verb} {size} bytes past the end of {memory}{others}: an index into an array \
             runs past its size"
        );
    }
    let Some(place) = address.and_then(|a| spot(context.buffers, a)) else {
        return format!(
            "{who} {verb} {size} bytes outside every buffer{others}: check the index this line \
             computes against the bounds test"
        );
    };
    match place {
        Spot::After { buffer, bytes } => {
            let b = &context.buffers[buffer];
            let past = bytes / b.elem.size() as u64;
            let hint = if last_threads_of_grid(members, context) {
                if members.len() == 1 {
                    "the bounds test lets the last thread through".to_string()
                } else {
                    format!(
                        "the bounds test lets the grid's last {} threads through",
                        members.len()
                    )
                }
            } else {
                "the index runs past the end: check the bounds test against the index this line \
                 uses"
                    .to_string()
            };
            format!(
                "{who} {verb} `{}[{}]`, {} past the end of `{}` ({}){others}: {hint}",
                b.name,
                b.len() + past,
                elements(past + 1),
                b.name,
                amount(b),
            )
        }
        Spot::Before { buffer, bytes } => {
            let b = &context.buffers[buffer];
            let before = bytes.div_ceil(b.elem.size() as u64).max(1);
            format!(
                "{who} {verb} `{}[-{before}]`, {} before the start of `{}` ({}){others}: an index \
                 goes below zero (a neighbour at the left edge needs a bounds test too)",
                b.name,
                elements(before),
                b.name,
                amount(b),
            )
        }
        Spot::Inside { buffer, byte } => {
            let b = &context.buffers[buffer];
            format!(
                "{who} {verb} {size} bytes at `{}[{}]`, inside `{}` yet refused{others}",
                b.name,
                byte / b.elem.size() as u64,
                b.name,
            )
        }
    }
}

fn misaligned(first: &Finding, others: usize, context: &Context<'_>) -> String {
    let Problem::InvalidAccess {
        access,
        size,
        address,
        ..
    } = &first.problem
    else {
        return String::new();
    };
    let who = who(first, context).unwrap_or_else(|| "a thread".to_string());
    let at = address
        .and_then(|a| match spot(context.buffers, a)? {
            Spot::Inside { buffer, byte } => {
                let b = &context.buffers[buffer];
                Some(format!(" at byte {byte} of `{}`", b.name))
            }
            _ => None,
        })
        .unwrap_or_default();
    format!(
        "{who} {} {size} bytes{at}, an address that is not a multiple of {size}{}: a {size}-byte \
         access (a vector type such as float4) must start at a multiple of {size} bytes, so its \
         index must be a multiple of {} elements",
        access.verb(),
        others_too(others),
        (*size as usize / 4).max(1),
    )
}

fn uninitialized(first: &Finding, others: usize, context: &Context<'_>) -> String {
    let Problem::Uninitialized { space, address, .. } = &first.problem else {
        return String::new();
    };
    let who = who(first, context).unwrap_or_else(|| "a thread".to_string());
    let more = more_like_it(others, "read");
    if *space == Space::Shared {
        return format!(
            "{who} reads shared memory (byte {}) that no thread of its block wrote{more}: part of \
             the tile (its halo, or the slots of threads that returned early) is never loaded",
            address.unwrap_or(0)
        );
    }
    let what = address
        .and_then(|a| match spot(context.buffers, a)? {
            Spot::Inside { buffer, byte } => {
                let b = &context.buffers[buffer];
                Some(format!("`{}[{}]`", b.name, byte / b.elem.size() as u64))
            }
            _ => None,
        })
        .unwrap_or_else(|| "global memory".to_string());
    format!(
        "{who} reads {what}, which nothing had written{more}: an output read before it is written \
         (`+=` into an output, or a stage reading what another has not written yet)"
    )
}

fn race(accesses: &[RaceAccess], context: &Context<'_>) -> String {
    let line = |site: &Site| line_of(site, context);
    let write = accesses.iter().find(|a| a.access == Access::Write);
    let read = accesses.iter().find(|a| a.access == Access::Read);
    let hazards: u64 = accesses.iter().filter_map(|a| a.hazards).sum();
    let count = if hazards > 0 {
        format!(" ({} hazards)", thousands(hazards))
    } else {
        String::new()
    };
    match (write, read) {
        (Some(w), Some(r)) => {
            let (wl, rl) = (line(&w.site), line(&r.site));
            let fix = match (w.site.line, r.site.line) {
                (Some(a), Some(b)) if a > b => {
                    "a thread overwrites, for the next round, what another is still reading: put \
                     a `__syncthreads()` after the reads"
                }
                _ => {
                    "a thread can read a slot before another has written it: put a \
                     `__syncthreads()` between the writes and the reads"
                }
            };
            format!(
                "the write at {wl} and the read at {rl} reach the same shared memory with no \
                 barrier between them{count}, so {fix}"
            )
        }
        (Some(w), None) => format!(
            "threads write the same shared memory at {} unordered{count}: let one thread write \
             it, or give each its own slot",
            line(&w.site)
        ),
        _ => format!("a shared-memory race{count}"),
    }
}

fn hazard(first: &Finding, others: usize, context: &Context<'_>) -> String {
    let Problem::Hazard {
        hazard,
        offset,
        first: Some(a),
        second: Some(b),
        ..
    } = &first.problem
    else {
        return "a shared-memory hazard".to_string();
    };
    let block = first
        .block
        .map(|block| format!(" of block {}", dim(block, context.launch.map(|l| l.grid))))
        .unwrap_or_default();
    let thread =
        |x: &HazardAccess| format!("thread {}", dim(x.thread, context.launch.map(|l| l.block)));
    let line = |x: &HazardAccess| line_of(&x.site, context);
    let more = more_like_it(others, "hazard");
    match hazard {
        HazardKind::ReadAfterWrite => format!(
            "{}{block} reads shared byte {offset:#x} at {} before {} has written it at {}{more}: \
             a `__syncthreads()` is missing between the write and the read",
            thread(b),
            line(b),
            thread(a),
            line(a)
        ),
        HazardKind::WriteAfterRead => format!(
            "{}{block} overwrites shared byte {offset:#x} at {} while {} still reads it at \
             {}{more}: a `__syncthreads()` is missing after the reads",
            thread(b),
            line(b),
            thread(a),
            line(a)
        ),
        HazardKind::WriteAfterWrite => format!(
            "{} and {}{block} both write shared byte {offset:#x} (at {} and {}), unordered{more}",
            thread(a),
            thread(b),
            line(a),
            line(b)
        ),
    }
}

fn barrier(
    problem: &BarrierProblem,
    first: &Finding,
    others: usize,
    context: &Context<'_>,
) -> String {
    let who = who(first, context).unwrap_or_else(|| "a thread".to_string());
    let more = match others {
        0 => String::new(),
        1 => " (and 1 more thread)".to_string(),
        n => format!(" (and {n} more threads)"),
    };
    match problem {
        BarrierProblem::DivergentBlock | BarrierProblem::DivergentWarp => {
            let group = if *problem == BarrierProblem::DivergentWarp {
                "warp"
            } else {
                "block"
            };
            format!(
                "{who}{more} waits at a barrier that other threads of its {group} skip: the \
                 `__syncthreads()` sits in a branch not every thread takes (an `if`, or after an \
                 early `return`); move it where every thread of the block reaches it"
            )
        }
        BarrierProblem::InvalidArguments => format!(
            "{who}{more} calls a barrier with arguments it cannot take: a `__syncwarp(mask)` \
             whose mask leaves out a thread that calls it"
        ),
        BarrierProblem::Other(text) => format!("{who}{more}: {text}"),
    }
}

/// "thread 255 of block 3", or with the launch's dimensions "thread (1,1) of block (1,0)".
fn who(finding: &Finding, context: &Context<'_>) -> Option<String> {
    let thread = finding.thread?;
    let thread = dim(thread, context.launch.map(|l| l.block));
    Some(match finding.block {
        Some(block) => format!(
            "thread {thread} of block {}",
            dim(block, context.launch.map(|l| l.grid))
        ),
        None => format!("thread {thread}"),
    })
}

/// An index as a learner writes it: `255` in a 1-D launch, `(1,1)` in a 2-D one.
fn dim(index: Dim3, extent: Option<Dim3>) -> String {
    let rank = match extent {
        Some([_, 1, 1]) => 1,
        Some([_, _, 1]) => 2,
        Some(_) => 3,
        None if index[1] == 0 && index[2] == 0 => 1,
        None if index[2] == 0 => 2,
        None => 3,
    };
    match rank {
        1 => index[0].to_string(),
        2 => format!("({},{})", index[0], index[1]),
        _ => format!("({},{},{})", index[0], index[1], index[2]),
    }
}

/// Whether `members` are the highest-numbered threads of the grid (a 1-D launch).
fn last_threads_of_grid(members: &[&Finding], context: &Context<'_>) -> bool {
    let Some(Launch { grid, block }) = context.launch else {
        return false;
    };
    if grid[1] * grid[2] != 1 || block[1] * block[2] != 1 {
        return false;
    }
    let total = u64::from(grid[0]) * u64::from(block[0]);
    let mut ids: Vec<u64> = members
        .iter()
        .filter_map(|f| {
            Some(u64::from(f.block?[0]) * u64::from(block[0]) + u64::from(f.thread?[0]))
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids.len() == members.len()
        && ids
            .iter()
            .rev()
            .zip((0..total).rev())
            .all(|(id, expected)| *id == expected)
}

/// "; 23 other threads fault at this line too" where others do.
fn others_too(others: usize) -> String {
    match others {
        0 => String::new(),
        1 => "; 1 other thread faults at this line too".to_string(),
        n => format!("; {n} other threads fault at this line too"),
    }
}

/// " (3 more like it)" where there are more.
fn more_like_it(others: usize, noun: &str) -> String {
    match others {
        0 => String::new(),
        1 => format!(" (1 more {noun} like it)"),
        n => format!(" ({n} more {noun}s like it)"),
    }
}

/// "one element", "3 elements".
fn elements(count: u64) -> String {
    match count {
        1 => "one element".to_string(),
        n => format!("{n} elements"),
    }
}

/// "1024 floats".
fn amount(buffer: &DeviceBuffer) -> String {
    let noun = match buffer.elem {
        ElemType::F32 => "floats",
        ElemType::F64 => "doubles",
        ElemType::I32 => "ints",
        ElemType::U32 => "unsigned ints",
        ElemType::U64 => "64-bit unsigned ints",
    };
    format!("{} {noun}", buffer.len())
}

/// "line 51" of the chapter where the site is placed, else the tool's own "oob_tail.cu:8".
fn line_of(site: &Site, context: &Context<'_>) -> String {
    match context.sources.place(site) {
        Some(placed) => format!("line {}", placed.at.line),
        None => match (&site.file, site.line) {
            (Some(file), Some(line)) => format!("{file}:{line}"),
            _ => site
                .function
                .clone()
                .unwrap_or_else(|| "an unknown place".to_string()),
        },
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_are_written_as_the_launch_has_them() {
        assert_eq!(dim([255, 0, 0], Some([256, 1, 1])), "255");
        assert_eq!(dim([1, 1, 0], Some([32, 8, 1])), "(1,1)");
        assert_eq!(dim([1, 0, 0], None), "1");
        assert_eq!(dim([1, 2, 0], None), "(1,2)");
        assert_eq!(thousands(3072), "3,072");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(12), "12");
    }
}
