//! The lab table for the terminal, from the same view model the book renders.

use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};
use mdbook_kernelbook::render::LabView;

pub fn print(view: &LabView) {
    if let Some(why) = &view.missing {
        println!("{}: no results: {why}", view.title);
        return;
    }
    println!("{} ({})", view.title, view.lab);
    let mut table = Table::new();
    table
        .load_style(UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_header(vec![
            "variant".to_string(),
            "access pattern".to_string(),
            "GB/s".to_string(),
            "% of ceiling".to_string(),
            "% of peak".to_string(),
            "median".to_string(),
            "spread".to_string(),
        ]);
    for row in &view.rows {
        if let Some(reason) = &row.unavailable {
            table.add_row(vec![
                row.label.clone(),
                row.access.clone(),
                "n/a".into(),
                String::new(),
                String::new(),
                String::new(),
                format!("not present: {reason}"),
            ]);
            continue;
        }
        match &row.problem {
            Some(problem) => table.add_row(vec![
                row.label.clone(),
                row.access.clone(),
                row.status.clone(),
                String::new(),
                String::new(),
                String::new(),
                problem.clone(),
            ]),
            None => table.add_row(vec![
                row.label.clone(),
                row.access.clone(),
                row.gbs.clone(),
                row.pct_ceiling.clone(),
                row.pct_peak.clone(),
                row.median.clone(),
                if row.noisy {
                    format!("{} noisy", row.spread)
                } else {
                    row.spread.clone()
                },
            ]),
        };
    }
    println!("{table}");
    if view.has_launch_stats {
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
        println!("{stats}");
    }
    if !view.ceiling_label.is_empty() {
        println!("ceiling: {}", view.ceiling_label);
    }
    if let Some(p) = &view.provenance {
        println!(
            "{} on {} ({}, {} SMs, {} L2, peak {}), driver {}, {}, {}, {}, {} samples in {}",
            view.origin,
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
    for note in &view.notes {
        println!("note: {note}");
    }
}
