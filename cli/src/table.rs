//! The lab table for the terminal, from the same view model the book renders.

use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use mdbook_kernelbook::render::{LabView, ProfileView, ProvenanceView, RowView};

/// Prints a lab's section as the book shows it: levels, the table, the sentences, the
/// profiler's counters, launch statistics, provenance and notes.
pub fn print(view: &LabView) {
    if let Some(why) = &view.missing {
        println!("{}: no results: {why}", view.title);
        return;
    }
    println!("{} ({})", view.title, view.lab);
    for level in &view.levels {
        println!(
            "{}: {} {} ({})",
            level.name, level.value, view.levels_header, level.variant
        );
    }
    println!("{}", results_table(view));
    for sentence in view.ratios.iter().chain(&view.ridge) {
        println!("{sentence}");
    }
    if let Some(profile) = &view.profile {
        print_profile(profile);
    }
    if view.has_launch_stats {
        println!("{}", launch_table(view));
    }
    if !view.ceiling_label.is_empty() {
        println!("ceiling: {}", view.ceiling_label);
    }
    if let Some(p) = &view.provenance {
        print_provenance(&view.origin, p);
    }
    for note in &view.notes {
        println!("note: {note}");
    }
}

/// The lab's main table, with the same optional columns as the book: bandwidth, work rate, the
/// kernel's own count.
fn results_table(view: &LabView) -> Table {
    let mut header = vec!["variant".to_string(), "access pattern".to_string()];
    if view.show_bandwidth {
        header.extend(["GB/s", "% of ceiling", "% of peak"].map(String::from));
    }
    header.extend(view.rate_header.iter().cloned());
    header.extend(view.counter_header.iter().cloned());
    header.extend(view.counter_ns_header.iter().cloned());
    header.extend(["median", "spread"].map(String::from));
    let columns = header.len();
    let mut table = Table::new();
    table
        .load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(header);
    for row in &view.rows {
        table.add_row(row_cells(view, row, columns));
    }
    table
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
fn print_profile(profile: &ProfileView) {
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
        counters.add_row(vec![
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
        ]);
    }
    println!("counters from {}:\n{counters}", profile.tool);
    if let Some(problem) = &profile.problem {
        println!("profiler: {problem}");
    }
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
        stats.add_row(vec![
            row.kernel.clone().unwrap_or_default(),
            row.launch.clone(),
            row.registers.clone(),
            row.spills.clone(),
            row.shared.clone(),
            row.blocks_per_sm.clone(),
            row.occupancy.clone(),
        ]);
    }
    stats
}

/// One line: where the numbers come from (`origin`), on which machine and toolchain.
fn print_provenance(origin: &str, p: &ProvenanceView) {
    println!(
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
    );
}
