//! The lab table for the terminal, from the same view model the book renders. Everything is
//! written through [`crate::output`]: control characters from lab files and results escaped,
//! a closed stdout an error.

use crate::output::{cells, say};
use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use mdbook_kernelbook::gpus::view::LabComparison;
use mdbook_kernelbook::render::{LabView, ProfileView, ProvenanceView, RowView};
use std::io::{self, Write};

/// Prints a lab's section as the book shows it: levels, the table, the sentences, the
/// profiler's counters, launch statistics, provenance and notes.
pub fn print(out: &mut impl Write, view: &LabView) -> io::Result<()> {
    if let Some(why) = &view.missing {
        return say!(out, "{}: no results: {why}", view.title);
    }
    say!(out, "{} ({})", view.title, view.lab)?;
    for level in &view.levels {
        say!(
            out,
            "{}: {} {} ({})",
            level.name,
            level.value,
            view.levels_header,
            level.variant
        )?;
    }
    say!(out, "{}", results_table(view))?;
    for sentence in view.ratios.iter().chain(&view.ridge) {
        say!(out, "{sentence}")?;
    }
    if let Some(profile) = &view.profile {
        print_profile(out, profile)?;
    }
    if view.has_launch_stats {
        say!(out, "{}", launch_table(view))?;
    }
    // A lab without a ceiling variant has nothing to say here (its label is the placeholder).
    let has_ceiling = view.rows.iter().any(|row| row.is_ceiling);
    if has_ceiling && !view.ceiling_label.is_empty() {
        say!(out, "ceiling: {}", view.ceiling_label)?;
    }
    if let Some(p) = &view.provenance {
        print_provenance(out, &view.origin, p)?;
    }
    for note in &view.notes {
        say!(out, "note: {note}")?;
    }
    Ok(())
}

/// The lab's main table's header, with the same optional columns as the book: bandwidth, work
/// rate, the kernel's own count.
fn results_header(view: &LabView) -> Vec<String> {
    let mut header = vec!["variant".to_string(), "access pattern".to_string()];
    if view.show_bandwidth {
        header.extend(["GB/s", "% of ceiling", "% of peak"].map(String::from));
    }
    header.extend(view.rate_header.iter().cloned());
    header.extend(view.counter_header.iter().cloned());
    header.extend(view.counter_ns_header.iter().cloned());
    header.extend(["median", "spread"].map(String::from));
    header
}

/// The lab's main table.
fn results_table(view: &LabView) -> Table {
    let header = results_header(view);
    let columns = header.len();
    let mut table = Table::new();
    table
        .load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(cells(header));
    for row in &view.rows {
        table.add_row(cells(row_cells(view, row, columns)));
    }
    table
}

/// A lab's section as Markdown (`kernelbook run --format md`): its title, the main table as a
/// pipe table (a `|` in a cell escaped), its sentences, provenance and notes.
pub fn markdown(view: &LabView) -> String {
    let escape = |cell: &str| cell.replace('|', "\\|").replace(['\n', '\r'], " ");
    let line = |cells: &[String]| {
        let cells: Vec<String> = cells.iter().map(|c| escape(c)).collect();
        format!("| {} |\n", cells.join(" | "))
    };
    if let Some(why) = &view.missing {
        return format!(
            "## {}\n\nNo results: {}\n",
            escape(&view.title),
            escape(why)
        );
    }
    let header = results_header(view);
    let mut text = format!("## {} (`{}`)\n\n", escape(&view.title), view.lab);
    text.push_str(&line(&header));
    text.push_str(&line(&vec!["---".to_string(); header.len()]));
    for row in &view.rows {
        text.push_str(&line(&row_cells(view, row, header.len())));
    }
    text.push('\n');
    for sentence in view.ratios.iter().chain(&view.ridge) {
        text.push_str(&format!("{}\n\n", escape(sentence)));
    }
    if let Some(p) = &view.provenance {
        let mut provenance = Vec::new();
        // Writing into a Vec cannot fail.
        let _ = print_provenance(&mut provenance, &view.origin, p);
        text.push_str(&format!(
            "{}\n",
            escape(String::from_utf8_lossy(&provenance).trim_end())
        ));
    }
    for note in &view.notes {
        text.push_str(&format!("\nNote: {}\n", escape(note)));
    }
    text
}

/// One row of the main table, `columns` cells wide: its figures, or, for a variant that gave
/// none, its status first and the reason in the last column.
fn row_cells(view: &LabView, row: &RowView, columns: usize) -> Vec<String> {
    let mut cells = vec![row.label.clone(), row.access.clone()];
    let message = match (&row.unavailable, &row.problem) {
        (Some(reason), _) => Some(("n/a".to_string(), format!("not present: {reason}"))),
        (None, Some(problem)) => Some((row.status.clone(), problem.clone())),
        (None, None) => None,
    };
    if let Some((status, text)) = message {
        cells.push(status);
        cells.resize(columns - 1, String::new());
        cells.push(text);
        return cells;
    }
    if view.show_bandwidth {
        cells.extend([
            row.gbs.clone(),
            row.pct_ceiling.clone(),
            row.pct_peak.clone(),
        ]);
    }
    if view.rate_header.is_some() {
        cells.push(row.rate.clone());
    }
    if view.counter_header.is_some() {
        cells.push(row.counter.clone());
    }
    if view.counter_ns_header.is_some() {
        cells.push(row.counter_ns.clone());
    }
    cells.push(row.median.clone());
    cells.push(if row.noisy {
        format!("{} noisy", row.spread)
    } else {
        row.spread.clone()
    });
    cells
}

/// The profiler's counters per kernel, and what went wrong with the profiler, if anything.
fn print_profile(out: &mut impl Write, profile: &ProfileView) -> io::Result<()> {
    let mut counters = Table::new();
    counters.load_style(UTF8_FULL_CONDENSED).set_header(vec![
        "variant",
        "smem ld conflicts",
        "smem st conflicts",
        "conflicts/ld",
        "wavefronts/ld",
        "ld sectors/req",
        "st sectors/req",
        "DRAM read",
        "DRAM written",
        "L1→L2 writes",
    ]);
    for row in &profile.rows {
        counters.add_row(cells([
            row.label.clone(),
            row.load_conflicts.clone(),
            row.store_conflicts.clone(),
            row.conflicts_per_load.clone(),
            row.wavefronts_per_load.clone(),
            row.load_sectors_per_request.clone(),
            row.store_sectors_per_request.clone(),
            row.dram_read.clone(),
            row.dram_write.clone(),
            row.l1_to_l2_writes.clone(),
        ]));
    }
    match &profile.taken {
        Some(taken) => say!(
            out,
            "counters from {}, profiled {taken}, apart from the timings:\n{counters}",
            profile.tool
        )?,
        None => say!(out, "counters from {}:\n{counters}", profile.tool)?,
    }
    if let Some(problem) = &profile.problem {
        say!(out, "profiler: {problem}")?;
    }
    Ok(())
}

/// Registers, spills, shared memory and occupancy per kernel and launch shape.
fn launch_table(view: &LabView) -> Table {
    let mut stats = Table::new();
    stats.load_style(UTF8_FULL_CONDENSED).set_header(vec![
        "kernel",
        "grid × block",
        "regs",
        "spills st/ld",
        "smem/block",
        "blocks/SM",
        "occupancy",
    ]);
    for row in &view.launch_rows {
        stats.add_row(cells([
            row.kernel.clone().unwrap_or_default(),
            row.launch.clone(),
            row.registers.clone(),
            row.spills.clone(),
            row.shared.clone(),
            row.blocks_per_sm.clone(),
            row.occupancy.clone(),
        ]));
    }
    stats
}

/// One line: where the numbers come from (`origin`), on which machine and toolchain.
fn print_provenance(out: &mut impl Write, origin: &str, p: &ProvenanceView) -> io::Result<()> {
    say!(
        out,
        "{origin} on {} ({}, {} SMs, {} L2, peak {}), driver {}, {}, {}, {}, {} samples in {}",
        p.device,
        p.arch,
        p.sm_count,
        p.l2,
        p.peak,
        p.driver,
        p.compiler,
        p.params,
        p.date,
        p.samples,
        p.wall
    )
}

/// A lab on several GPUs side by side (`kernelbook run --devices`): a row per variant, for each
/// GPU its GB/s, % of its own peak and % of its own ceiling (or the one figure of a lab that
/// moves no bytes), or why it has none.
pub fn comparison_table(lab: &LabComparison, names: &[String]) -> Table {
    let mut header = vec!["variant".to_string()];
    for name in names {
        if lab.bandwidth {
            header.extend([
                format!("{name} GB/s"),
                "% of peak".into(),
                "% of ceiling".into(),
            ]);
        } else {
            header.push(format!("{name} {}", lab.value_header));
        }
    }
    let mut table = Table::new();
    table
        .load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(cells(header));
    for (index, row) in lab.rows.iter().enumerate() {
        let mut line = vec![row.label.clone()];
        for (cell, column) in row.cells.iter().zip(&lab.columns) {
            // A GPU that could not measure says why in its column's first cell.
            let why = column.missing.as_ref().filter(|_| index == 0);
            match (why.or(cell.problem.as_ref()), lab.bandwidth) {
                (Some(problem), true) => {
                    line.extend([problem.clone(), String::new(), String::new()])
                }
                (Some(problem), false) => line.push(problem.clone()),
                (None, true) => line.extend([
                    cell.gbs.clone(),
                    cell.pct_peak.clone(),
                    cell.pct_ceiling.clone(),
                ]),
                (None, false) => line.push(cell.value.clone()),
            }
        }
        table.add_row(cells(line));
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernelbook_core::results::LabResults;
    use kernelbook_core::spec::LabSpec;
    use kernelbook_runner::LabOutcome;
    use mdbook_kernelbook::render::lab_view;
    use std::path::Path;

    const LAB: &str = include_str!("../../preprocessor/tests/fixtures/transpose.toml");
    const RESULTS: &str = include_str!("../../preprocessor/tests/fixtures/transpose.results.json");

    #[test]
    fn escape_sequences_from_a_lab_and_its_results_reach_the_terminal_escaped() {
        let text = LAB
            .replace(
                "title = \"Lab 2 — Transpose: naive, tiled, padded\"",
                "title = \"\\u001b]0;owned\\u0007\\u001b[2JLab 2\"",
            )
            .replace(
                "label = \"copy (same tiling)\"",
                "label = \"copy \\u009b31m\\r(same)\"",
            );
        let lab = LabSpec::parse(&text, Path::new("labs/transpose.toml")).expect("lab");
        let mut results = LabResults::from_json(RESULTS).expect("results");
        results.provenance.device.name = "NVIDIA \u{1b}[5mH200".into();
        let outcome = LabOutcome::Recorded {
            results,
            why: "no GPU \u{1b}[1A".into(),
            stale_kernels: Vec::new(),
            compile_errors: Vec::new(),
        };
        let mut out = Vec::new();
        print(&mut out, &lab_view(&lab, &outcome)).expect("printed");
        let printed = String::from_utf8(out).expect("UTF-8");
        assert!(
            !printed
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t'),
            "{printed:?}"
        );
        assert!(printed.starts_with("\\x1b]0;owned\\x07\\x1b[2JLab 2 (transpose)\n"));
        assert!(printed.contains("copy \\u{9b}31m\\x0d(same)"), "{printed}");
        assert!(printed.contains("NVIDIA \\x1b[5mH200"), "{printed}");

        let missing = LabOutcome::Missing {
            why: "\u{1b}[31mgone".into(),
        };
        let mut out = Vec::new();
        print(&mut out, &lab_view(&lab, &missing)).expect("printed");
        assert_eq!(
            String::from_utf8(out).expect("UTF-8"),
            "\\x1b]0;owned\\x07\\x1b[2JLab 2: no results: \\x1b[31mgone\n"
        );
    }
}
