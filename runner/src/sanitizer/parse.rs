//! compute-sanitizer's text output → a [`Report`]. The format is the one its documentation
//! shows and its releases print: every line of the tool starts with its prefix (`=========`),
//! the program's own output does not (and goes elsewhere with `--log-file`); an error record
//! is a headline and indented lines after it, ended by a blank line or the next headline:
//!
//! ```text
//! ========= Invalid __global__ write of size 4 bytes
//! =========     at oob_tail+0x90 in oob_tail.cu:8
//! =========     by thread (255,0,0) in block (3,0,0)
//! =========     Access to 0x7f3a1e201000 is out of bounds
//! =========     and is 1 bytes after the nearest allocation at 0x7f3a1e200000 of size 4,096 bytes
//! =========
//! ========= Error: Race reported between Write access at shared_race+0x1c0 in shared_race.cu:12
//! =========     and Read access at shared_race+0x2a0 in shared_race.cu:18 [1024 hazards]
//! ========= ERROR SUMMARY: 2 errors
//! ```
//!
//! Older releases said `Address 0x… is out of bounds` and `at 0x1b8 in file.cu:12:kernel(…)`;
//! long lines may be wrapped, `in FILE:LINE` going on the next line. All of these are read.
//! Numbers may carry thousands separators. Anything not understood is kept in words
//! ([`Problem::Other`], [`Report::tool_errors`]), never dropped silently.

use super::finding::{
    Access, BarrierProblem, Dim3, Fault, Finding, HazardAccess, HazardKind, Nearest, Problem,
    RaceAccess, Relation, Report, Severity, Site, Space,
};

/// Parses everything the tool printed (its `--log-file`, or its stdout mixed with the
/// program's: lines without the tool's prefix are skipped).
pub fn parse(text: &str) -> Report {
    let mut report = Report::default();
    let mut current: Option<Finding> = None;
    for body in text.lines().filter_map(tool_line) {
        let line = body.trim();
        if line.is_empty() {
            close(&mut report, current.take());
            continue;
        }
        if let Some(open) = current.as_mut()
            && continuation(open, line)
        {
            continue;
        }
        match headline(line) {
            Headline::Finding(finding) => {
                close(&mut report, current.take());
                current = Some(*finding);
            }
            Headline::Banner => report.banner = true,
            Headline::Summary { errors } => {
                close(&mut report, current.take());
                report.errors = Some(errors);
            }
            Headline::NotPrinted(count) => report.not_printed = Some(count),
            Headline::Api(text) => {
                close(&mut report, current.take());
                report.api_errors.push(text);
            }
            Headline::ToolError(text) => {
                close(&mut report, current.take());
                report.tool_errors.push(text);
            }
            Headline::Ignored => {}
        }
    }
    close(&mut report, current);
    report
}

/// Files a finished record. A headline the parser does not know stays a finding (a hardware
/// exception: "Warp Illegal Address") only where lines about a kernel followed it; a lone line
/// is the tool talking about itself.
fn close(report: &mut Report, finding: Option<Finding>) {
    let Some(finding) = finding else {
        return;
    };
    match &finding.problem {
        Problem::Other { text }
            if finding.site.is_none() && finding.thread.is_none() && finding.frames.is_empty() =>
        {
            report.tool_errors.push(text.clone());
        }
        _ => report.findings.push(finding),
    }
}

/// The text of a line the tool printed, without its prefix (a run of `=`); `None` for the
/// program's own lines.
fn tool_line(line: &str) -> Option<&str> {
    let rest = line.trim_start_matches('=');
    (rest.len() < line.len() && line.starts_with("==")).then_some(rest)
}

enum Headline {
    Finding(Box<Finding>),
    Banner,
    Summary { errors: u64 },
    NotPrinted(u64),
    Api(String),
    ToolError(String),
    Ignored,
}

fn headline(line: &str) -> Headline {
    if line.contains("COMPUTE-SANITIZER") {
        return Headline::Banner;
    }
    if let Some(summary) = summary(line) {
        return summary;
    }
    if line.starts_with("Program hit ") {
        return Headline::Api(line.to_string());
    }
    if let Some(problem) = invalid_access(line)
        .or_else(|| uninitialized(line))
        .or_else(|| barrier(line))
    {
        return Headline::Finding(Box::new(Finding::new(problem)));
    }
    if let Some(finding) = race(line).or_else(|| hazard(line)) {
        return Headline::Finding(Box::new(finding));
    }
    if line.starts_with("Host Frame") || line.starts_with("Saved host backtrace") {
        return Headline::Ignored;
    }
    let lower = line.to_ascii_lowercase();
    if is_tool_message(&lower) {
        return Headline::ToolError(line.to_string());
    }
    if lower.starts_with("warning") || lower.starts_with("leaked ") || lower.starts_with("unused ")
    {
        return Headline::Ignored;
    }
    Headline::Finding(Box::new(Finding::new(Problem::Other {
        text: line.to_string(),
    })))
}

/// A line of the tool about itself or the program rather than about a kernel: its errors,
/// a refusal of the device, the program's failure.
fn is_tool_message(lower: &str) -> bool {
    lower.starts_with("error")
        || lower.starts_with("fatal")
        || lower.starts_with("internal")
        || [
            "sanitizer error",
            "target application",
            "not supported",
            "unable to",
            "no kernels",
        ]
        .iter()
        .any(|phrase| lower.contains(phrase))
}

fn summary(line: &str) -> Option<Headline> {
    if let Some(rest) = line.strip_prefix("ERROR SUMMARY:") {
        let count = leading_count(rest)?;
        return Some(if rest.contains("not printed") {
            Headline::NotPrinted(count)
        } else {
            Headline::Summary { errors: count }
        });
    }
    if let Some(rest) = line.strip_prefix("RACECHECK SUMMARY:") {
        return Some(Headline::Summary {
            errors: leading_count(rest)?,
        });
    }
    line.starts_with("LEAK SUMMARY")
        .then_some(Headline::Ignored)
}

/// "Invalid __global__ write of size 4 bytes".
fn invalid_access(line: &str) -> Option<Problem> {
    let rest = line.strip_prefix("Invalid ")?;
    let (space, rest) = rest.split_once(' ')?;
    let (access, rest) = rest.split_once(' ')?;
    Some(Problem::InvalidAccess {
        space: space_of(space),
        access: access_of(access)?,
        size: size_of(rest)?,
        address: None,
        fault: None,
        nearest: None,
    })
}

/// "Uninitialized __global__ memory read of size 4 bytes".
fn uninitialized(line: &str) -> Option<Problem> {
    let rest = line.strip_prefix("Uninitialized ")?;
    let (space, rest) = rest.split_once(' ')?;
    Some(Problem::Uninitialized {
        space: space_of(space),
        size: size_of(rest)?,
        address: None,
    })
}

/// "Barrier error detected. Divergent thread(s) in warp."
fn barrier(line: &str) -> Option<Problem> {
    let rest = line.strip_prefix("Barrier error detected")?;
    let class = rest.trim_start_matches(['.', ' ']).trim_end_matches('.');
    let lower = class.to_ascii_lowercase();
    let problem = if lower.contains("divergent") && lower.contains("block") {
        BarrierProblem::DivergentBlock
    } else if lower.contains("divergent") && lower.contains("warp") {
        BarrierProblem::DivergentWarp
    } else if lower.contains("invalid argument") {
        BarrierProblem::InvalidArguments
    } else {
        BarrierProblem::Other(class.to_string())
    };
    Some(Problem::Barrier { problem })
}

/// "Error: Race reported between Write access at SITE" (older releases go on, on the same
/// line, with " and Read access at SITE").
fn race(line: &str) -> Option<Finding> {
    let (before, rest) = line.split_once("Race reported between ")?;
    let mut accesses = Vec::new();
    let mut rest = rest;
    loop {
        let next = [" and Read access at ", " and Write access at "]
            .iter()
            .filter_map(|marker| rest.find(marker))
            .min();
        match next {
            Some(at) => {
                accesses.extend(race_access(&rest[..at]));
                rest = &rest[at + " and ".len()..];
            }
            None => {
                accesses.extend(race_access(rest));
                break;
            }
        }
    }
    Some(Finding::new(Problem::Race {
        severity: severity_of(before),
        accesses,
    }))
}

/// "Write access at SITE [1024 hazards]".
fn race_access(text: &str) -> Option<RaceAccess> {
    let (access, rest) = text.trim().split_once(" access at ")?;
    let (site, hazards) = match rest.rfind(" [") {
        Some(at) if rest.ends_with(']') => (&rest[..at], leading_count(&rest[at + 2..])),
        _ => (rest, None),
    };
    Some(RaceAccess {
        access: access_of(access)?,
        site: parse_site(site),
        hazards,
    })
}

/// "Error: Potential RAW hazard detected at __shared__ 0x0 in block (0,0,0) :" (with an
/// optional "(Warp Level Programming)" before "Potential").
fn hazard(line: &str) -> Option<Finding> {
    let at = line.find("Potential ")?;
    let rest = &line[at + "Potential ".len()..];
    let (kind, rest) = rest.split_once(" hazard detected at ")?;
    let hazard = match kind {
        "RAW" => HazardKind::ReadAfterWrite,
        "WAR" => HazardKind::WriteAfterRead,
        "WAW" => HazardKind::WriteAfterWrite,
        _ => return None,
    };
    let (_space, rest) = rest.split_once(' ')?;
    let offset = hex_at_start(rest)?;
    let mut finding = Finding::new(Problem::Hazard {
        severity: severity_of(&line[..at]),
        hazard,
        offset,
        first: None,
        second: None,
    });
    finding.block = rest.split_once("in block ").and_then(|(_, b)| dim3(b));
    Some(finding)
}

/// Reads an indented line of the open record into it; `false` if the line is not one.
fn continuation(finding: &mut Finding, line: &str) -> bool {
    if let Some(site) = line.strip_prefix("at ") {
        if finding.site.is_none() {
            finding.site = Some(parse_site(site));
        }
    } else if let Some(site) = line.strip_prefix("Device Frame:") {
        finding.frames.push(parse_site(site));
    } else if let Some(rest) = line.strip_prefix("in ") {
        wrapped_location(finding, rest);
    } else if let Some(rest) = line.strip_prefix("by thread ") {
        finding.thread = dim3(rest);
        finding.block = rest.split_once("in block ").and_then(|(_, b)| dim3(b));
    } else if line.starts_with("Address ") || line.starts_with("Access to ") {
        address_line(finding, line);
    } else if let Some(rest) = line.strip_prefix("and is ") {
        nearest_line(finding, rest);
    } else if let Some(rest) = line.strip_prefix("and ") {
        let Problem::Race { accesses, .. } = &mut finding.problem else {
            return false;
        };
        accesses.extend(race_access(rest));
    } else if line.starts_with("Write Thread") || line.starts_with("Read Thread") {
        hazard_access(finding, line);
    } else {
        // Values of a hazard, host frames, sync masks: nothing the explanation uses.
        return is_detail(line);
    }
    true
}

fn is_detail(line: &str) -> bool {
    [
        "Current Value",
        "Host Frame",
        "Saved host backtrace",
        "Sync mask",
        "Race detected",
    ]
    .iter()
    .any(|prefix| line.starts_with(prefix))
}

/// "in FILE:LINE" on a line of its own: the end of the line before, wrapped.
fn wrapped_location(finding: &mut Finding, rest: &str) {
    let wrapped = parse_site(&format!("? in {rest}"));
    let site = match &mut finding.problem {
        Problem::Race { accesses, .. } => accesses.last_mut().map(|a| &mut a.site),
        Problem::Hazard {
            first,
            second: None,
            ..
        } => first.as_mut().map(|a| &mut a.site),
        Problem::Hazard { second, .. } => second.as_mut().map(|a| &mut a.site),
        _ => None,
    };
    let site = site.or(finding.frames.last_mut()).or(finding.site.as_mut());
    if let Some(site) = site
        && site.file.is_none()
    {
        site.file = wrapped.file;
        site.line = wrapped.line;
    }
}

/// "Address 0x7f… is out of bounds", "Access to 0x… is misaligned", initcheck's "Address 0x…".
fn address_line(finding: &mut Finding, line: &str) {
    let rest = line
        .strip_prefix("Address ")
        .or_else(|| line.strip_prefix("Access to "))
        .unwrap_or(line);
    let value = hex_at_start(rest);
    let fault = if rest.contains("out of bounds") {
        Some(Fault::OutOfBounds)
    } else if rest.contains("misaligned") {
        Some(Fault::Misaligned)
    } else {
        None
    };
    match &mut finding.problem {
        Problem::InvalidAccess {
            address, fault: f, ..
        } => {
            *address = value;
            *f = fault;
        }
        Problem::Uninitialized { address, .. } => *address = value,
        _ => {}
    }
}

/// "1 bytes after the nearest allocation at 0x… of size 4,096 bytes", "inside the nearest
/// allocation at 0x… of size 4 bytes".
fn nearest_line(finding: &mut Finding, rest: &str) {
    let Problem::InvalidAccess { nearest, .. } = &mut finding.problem else {
        return;
    };
    let (relation, distance) = if rest.starts_with("inside") {
        (Relation::Inside, Some(0))
    } else if rest.contains(" bytes after ") {
        (Relation::After, leading_count(rest))
    } else if rest.contains(" bytes before ") {
        (Relation::Before, leading_count(rest))
    } else {
        return;
    };
    let base = rest
        .split_once("allocation at ")
        .and_then(|(_, b)| hex_at_start(b));
    let size = rest
        .split_once(" of size ")
        .and_then(|(_, s)| leading_count(s));
    if let (Some(distance), Some(base), Some(size)) = (distance, base, size) {
        *nearest = Some(Nearest {
            relation,
            distance,
            base,
            size,
        });
    }
}

/// "Write Thread (0,0,0) at SITE": the first such line is the earlier access.
fn hazard_access(finding: &mut Finding, line: &str) {
    let Problem::Hazard { first, second, .. } = &mut finding.problem else {
        return;
    };
    let Some((access, rest)) = line.split_once(" Thread ") else {
        return;
    };
    let (Some(access), Some(thread)) = (access_of(access), dim3(rest)) else {
        return;
    };
    let site = rest
        .split_once(" at ")
        .map_or_else(|| parse_site(""), |(_, s)| parse_site(s));
    let parsed = Some(HazardAccess {
        access,
        thread,
        site,
    });
    if first.is_none() {
        *first = parsed;
    } else if second.is_none() {
        *second = parsed;
    }
}

/// A site as the tool writes it: `FUNC+0xOFF in FILE:LINE`, `FUNC+0xOFF`, `FUNC():0x160 in
/// FILE:LINE`, or older `0xPC in FILE:LINE:FUNC` and `0xPC in FUNC`.
pub fn parse_site(text: &str) -> Site {
    let text = text.trim();
    let (head, tail) = match text.rfind(" in ") {
        Some(at) => (&text[..at], Some(text[at + 4..].trim())),
        None => (text, None),
    };
    let mut site = Site {
        function: function_of(head),
        file: None,
        line: None,
    };
    match tail.map(|tail| (tail, file_and_line(tail))) {
        Some((_, Some((file, line, rest)))) => {
            site.file = Some(file.to_string());
            site.line = Some(line);
            if site.function.is_none() && !rest.is_empty() {
                site.function = Some(rest.to_string());
            }
        }
        Some((tail, None)) if site.function.is_none() && !tail.is_empty() => {
            site.function = Some(tail.to_string());
        }
        _ => {}
    }
    site
}

/// The function of `FUNC+0x90` or `FUNC():0x160`; `None` for a bare address (`0x1b8`).
fn function_of(head: &str) -> Option<String> {
    let head = head.trim();
    if head.is_empty() || head == "?" || hex_at_start(head).is_some_and(|_| !head.contains(' ')) {
        return None;
    }
    let cut = ["+0x", ":0x"]
        .iter()
        .filter_map(|marker| head.rfind(marker))
        .max()
        .unwrap_or(head.len());
    let function = head[..cut].trim();
    (!function.is_empty()).then(|| function.to_string())
}

/// `FILE:LINE` at the start of `text`, then what follows a further `:` (an older release's
/// function name). A `:` must be followed by digits ending the text or before another `:`,
/// so a drive letter (`C:\…`) is not taken for a line.
fn file_and_line(text: &str) -> Option<(&str, usize, &str)> {
    for (at, _) in text.match_indices(':') {
        let after = &text[at + 1..];
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        if at == 0 || digits == 0 {
            continue;
        }
        let rest = &after[digits..];
        if !(rest.is_empty() || rest.starts_with(':')) {
            continue;
        }
        let line = after[..digits].parse().ok()?;
        return Some((&text[..at], line, rest.trim_start_matches(':').trim()));
    }
    None
}

fn space_of(word: &str) -> Space {
    match word {
        "__global__" => Space::Global,
        "__shared__" => Space::Shared,
        "__local__" => Space::Local,
        _ => Space::Other,
    }
}

fn access_of(word: &str) -> Option<Access> {
    match word.trim().to_ascii_lowercase().as_str() {
        "read" => Some(Access::Read),
        "write" => Some(Access::Write),
        "atomic" => Some(Access::Atomic),
        _ => None,
    }
}

fn severity_of(prefix: &str) -> Severity {
    let lower = prefix.to_ascii_lowercase();
    if lower.contains("warning") {
        Severity::Warning
    } else if lower.contains("info") {
        Severity::Info
    } else {
        Severity::Error
    }
}

/// The N of "… of size N bytes".
fn size_of(text: &str) -> Option<u32> {
    let (_, rest) = text.split_once("of size ")?;
    u32::try_from(leading_count(rest)?).ok()
}

/// The number at the start of `text` (after spaces), thousands separators dropped.
fn leading_count(text: &str) -> Option<u64> {
    let digits: String = text
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The hexadecimal number (`0x…`) at the start of `text`.
fn hex_at_start(text: &str) -> Option<u64> {
    let rest = text.trim_start().strip_prefix("0x")?;
    let digits: String = rest.chars().take_while(char::is_ascii_hexdigit).collect();
    u64::from_str_radix(&digits, 16).ok()
}

/// `(x,y,z)` at the start of `text` (spaces allowed, fewer components filled with 0).
fn dim3(text: &str) -> Option<Dim3> {
    let inner = text.trim_start().strip_prefix('(')?;
    let inner = &inner[..inner.find(')')?];
    let mut out = [0u32; 3];
    for (slot, part) in out.iter_mut().zip(inner.split(',')) {
        *slot = part.trim().parse().ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_form_of_a_site() {
        let cases = [
            (
                "oob_tail+0x90 in oob_tail.cu:8",
                Some("oob_tail"),
                Some("oob_tail.cu"),
                Some(8),
            ),
            (
                "ka_race(int *)+0x90 in probe.cu:13",
                Some("ka_race(int *)"),
                Some("probe.cu"),
                Some(13),
            ),
            (
                "unaligned_kernel()+0x50",
                Some("unaligned_kernel()"),
                None,
                None,
            ),
            (
                "unaligned_kernel():0x160 in memcheck_demo.cu:6",
                Some("unaligned_kernel()"),
                Some("memcheck_demo.cu"),
                Some(6),
            ),
            (
                "0x000000c8 in /src/../src/helper.cuh:75:void projection<double>(double*, int)",
                Some("void projection<double>(double*, int)"),
                Some("/src/../src/helper.cuh"),
                Some(75),
            ),
            (
                "0x1b8 in kernel(float *, float *)",
                Some("kernel(float *, float *)"),
                None,
                None,
            ),
            (
                "[clone myKernel(int *, int *)] outlineSync()+0x11f0 in test.cu:42",
                Some("[clone myKernel(int *, int *)] outlineSync()"),
                Some("test.cu"),
                Some(42),
            ),
            (
                "k+0x10 in C:\\book\\lab.md:12",
                Some("k"),
                Some("C:\\book\\lab.md"),
                Some(12),
            ),
        ];
        for (text, function, file, line) in cases {
            let site = parse_site(text);
            assert_eq!(
                (site.function.as_deref(), site.file.as_deref(), site.line),
                (function, file, line),
                "{text}"
            );
        }
    }

    #[test]
    fn reads_numbers_with_separators_addresses_and_indices() {
        assert_eq!(leading_count(" 4,194,300 bytes"), Some(4_194_300));
        assert_eq!(leading_count("x"), None);
        assert_eq!(
            hex_at_start("0x7f6510c00001 is misaligned"),
            Some(0x7f65_10c0_0001)
        );
        assert_eq!(dim3("(255,0,0) in block (3,0,0)"), Some([255, 0, 0]));
        assert_eq!(dim3("(0, 1, 0)"), Some([0, 1, 0]));
        assert_eq!(dim3("(a,0,0)"), None);
    }

    #[test]
    fn the_programs_own_lines_are_not_the_tools() {
        assert_eq!(tool_line("========= Invalid"), Some(" Invalid"));
        assert_eq!(tool_line("=========   "), Some("   "));
        assert_eq!(tool_line("probe: buffer out 0x1"), None);
        assert_eq!(tool_line("= not a prefix"), None);
    }
}
