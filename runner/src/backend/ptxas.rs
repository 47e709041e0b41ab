//! Reads the resource report `ptxas -v` writes into the compiler log: registers, stack frame,
//! spill stores and loads, shared memory. The driver reports registers too, but only ptxas says
//! how many of the local-memory bytes are spills.

/// One entry function's resource report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PtxasReport {
    pub registers: u32,
    pub stack_frame_bytes: u32,
    pub spill_store_bytes: u32,
    pub spill_load_bytes: u32,
    pub shared_bytes: u32,
}

/// Finds the report for `function` in a compiler log, if ptxas wrote one.
pub fn parse_report(log: &str, function: &str) -> Option<PtxasReport> {
    let mut report = PtxasReport::default();
    let mut in_function = false;
    let mut found = false;
    for line in log.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("ptxas info") {
            let rest = rest.trim_start().trim_start_matches(':').trim();
            if let Some(name) = rest
                .strip_prefix("Compiling entry function '")
                .or_else(|| rest.strip_prefix("Function properties for "))
            {
                let name = name.split('\'').next().unwrap_or(name).trim();
                in_function = name == function;
                found |= in_function;
                continue;
            }
            if in_function && rest.starts_with("Used ") {
                report.registers = number_before(rest, "registers").unwrap_or(0);
                report.shared_bytes = number_before(rest, "bytes smem").unwrap_or(0);
            }
        } else if in_function && line.contains("stack frame") {
            report.stack_frame_bytes = number_before(line, "bytes stack frame").unwrap_or(0);
            report.spill_store_bytes = number_before(line, "bytes spill stores").unwrap_or(0);
            report.spill_load_bytes = number_before(line, "bytes spill loads").unwrap_or(0);
        }
    }
    found.then_some(report)
}

/// The integer that stands just before `unit` in `text` ("Used 32 registers" → 32).
fn number_before(text: &str, unit: &str) -> Option<u32> {
    let end = text.find(unit)?;
    text[..end].split_whitespace().last()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'transpose_padded' for 'sm_90'
ptxas info    : Function properties for transpose_padded
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 18 registers, used 1 barriers, 4224 bytes smem, 368 bytes cmem[0]
ptxas info    : Compiling entry function 'pressure' for 'sm_90'
ptxas info    : Function properties for pressure
    96 bytes stack frame, 88 bytes spill stores, 92 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 360 bytes cmem[0]
";

    #[test]
    fn reads_each_function_separately() {
        assert_eq!(
            parse_report(LOG, "transpose_padded"),
            Some(PtxasReport {
                registers: 18,
                stack_frame_bytes: 0,
                spill_store_bytes: 0,
                spill_load_bytes: 0,
                shared_bytes: 4224,
            })
        );
        assert_eq!(
            parse_report(LOG, "pressure"),
            Some(PtxasReport {
                registers: 32,
                stack_frame_bytes: 96,
                spill_store_bytes: 88,
                spill_load_bytes: 92,
                shared_bytes: 0,
            })
        );
    }

    #[test]
    fn no_report_for_an_unknown_function_or_an_empty_log() {
        assert_eq!(parse_report(LOG, "transpose"), None);
        assert_eq!(parse_report("", "pressure"), None);
    }
}
