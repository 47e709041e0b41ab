//! The views as plain markdown, for mdBook's renderers other than HTML (`markdown`, epub, pdf,
//! linkcheck): a lab's table, the GPUs compared and the counters as pipe tables, a figure in the
//! prose as its text, a chart or a diagram as one sentence saying what it shows. Each function
//! reads the same view model the HTML template renders (nothing is recomputed here) and writes
//! no HTML: those renderers would show it raw, or drop it.

use crate::diagram::view::DiagramView;
use crate::gpus::view::{Cell, ComparisonView, LabComparison};
use crate::render::{LabView, RowView};

/// What the directives become: HTML for mdBook's HTML renderer, markdown for any other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    Html,
    Markdown,
}

impl Output {
    /// The output for the renderer mdBook names (`PreprocessorContext::renderer`).
    pub fn for_renderer(renderer: &str) -> Output {
        if renderer == "html" {
            Output::Html
        } else {
            Output::Markdown
        }
    }
}

/// A lab's section: the hierarchy's levels and the results as pipe tables, the ratio and ridge
/// sentences, the chart in a sentence, the counters, the problems, the launch statistics, the
/// provenance line and the notes, in the order the HTML shows them.
pub fn lab(view: &LabView) -> String {
    let mut blocks = Vec::new();
    if let Some(missing) = &view.missing {
        let lead = if view.origin_class == "planned" {
            format!("Lab `{}` is planned:", view.lab)
        } else {
            format!("No results for lab `{}`:", view.lab)
        };
        blocks.push(format!("**{lead}** {}", prose(missing)));
        return blocks.join("\n\n");
    }
    if !view.levels.is_empty() {
        let rows = view
            .levels
            .iter()
            .map(|l| vec![l.name.clone(), l.variant.clone(), l.value.clone()])
            .collect::<Vec<_>>();
        let caption = view.provenance.as_ref().map_or_else(
            || "The hierarchy".to_string(),
            |p| format!("The hierarchy of the {}", p.device),
        );
        blocks.push(format!(
            "*{caption}*\n\n{}",
            pipe_table(&["Level", "Read off", view.levels_header.as_str()], &rows)
        ));
    }
    blocks.push(results_table(view));
    blocks.extend(view.ratios.iter().map(|r| prose(r)));
    if let Some(ridge) = &view.ridge {
        blocks.push(format!("**{}**", prose(ridge)));
    }
    if let Some(chart) = &view.chart {
        blocks.push(drawn_in_html("a chart", &chart.caption));
    }
    if let Some(profile) = &view.profile {
        blocks.push(profile_table(profile));
    }
    for problem in &view.problems {
        blocks.push(format!(
            "**{}**\n\n{}",
            prose(&problem.title),
            fenced(&problem.detail)
        ));
    }
    if view.has_launch_stats {
        blocks.push(launch_table(view));
    }
    if let Some(p) = &view.provenance {
        let clocks = p
            .clocks
            .as_ref()
            .map(|c| format!(" · clocks after the last sample: {c}"))
            .unwrap_or_default();
        blocks.push(prose(&format!(
            "*{}* on **{}** ({}, {} SMs, {} L2, theoretical peak {}) · driver {} · {} · {} · {}{clocks} · {} samples in {}.",
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
        )));
    }
    blocks.extend(view.notes.iter().map(|n| prose(n)));
    if let Some(p) = &view.provenance {
        blocks.push(prose(&format!(
            "How these numbers were measured: {}. Effective bandwidth = bytes the kernel must move (each input read once, each output written once) ÷ median time; GB = 10^9 bytes. Every variant was checked against a CPU reference on random input (seed {}) with its output poisoned first.",
            p.timing, p.seed
        )));
    }
    blocks.join("\n\n")
}

/// The lab's main table: the same columns as the HTML's, a failed or unmeasured row's reason in
/// its first data cell (a pipe table spans no columns).
fn results_table(view: &LabView) -> String {
    let mut header: Vec<String> = vec!["Variant".into(), "Access pattern".into()];
    if view.show_bandwidth {
        header.extend(["Effective GB/s", "% of ceiling", "% of peak"].map(String::from));
    }
    header.extend(
        [
            &view.rate_header,
            &view.counter_header,
            &view.counter_ns_header,
        ]
        .into_iter()
        .flatten()
        .cloned(),
    );
    header.extend(["Median time", "Spread"].map(String::from));
    header.extend(view.beside_header.clone());
    let rows: Vec<Vec<String>> = view
        .rows
        .iter()
        .map(|row| {
            let mut cells = vec![row.label.clone(), row.access.clone()];
            match (&row.problem, &row.unavailable) {
                (Some(problem), _) => cells.push(format!("**{}**: {problem}", row.status)),
                (None, Some(why)) => cells.push(format!("not measured: {why}")),
                (None, None) => cells.extend(data_cells(view, row)),
            }
            cells
        })
        .collect();
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    pipe_table(&header, &rows)
}

/// A measured row's cells after its label and access pattern, the columns the view shows.
fn data_cells(view: &LabView, row: &RowView) -> Vec<String> {
    let mut cells = Vec::new();
    if view.show_bandwidth {
        cells.extend([&row.gbs, &row.pct_ceiling, &row.pct_peak].map(String::clone));
    }
    for (shown, value) in [
        (&view.rate_header, &row.rate),
        (&view.counter_header, &row.counter),
        (&view.counter_ns_header, &row.counter_ns),
    ] {
        if shown.is_some() {
            cells.push(value.clone());
        }
    }
    cells.push(row.median.clone());
    let noisy = if row.noisy { " **noisy**" } else { "" };
    cells.push(format!("{}{noisy}", row.spread));
    if view.beside_header.is_some() {
        cells.push(row.beside.clone());
    }
    cells
}

/// Nsight Compute's counters, as the HTML's table under its caption.
fn profile_table(profile: &crate::render::ProfileView) -> String {
    let header = [
        "Variant",
        "Shared-load bank conflicts",
        "Shared-store bank conflicts",
        "Conflicts per shared load",
        "Wavefronts per shared load",
        "Global load sectors / request",
        "Global store sectors / request",
        "DRAM read",
        "DRAM written",
        "L1 → L2 writes",
    ];
    let rows: Vec<Vec<String>> = profile
        .rows
        .iter()
        .map(|r| {
            vec![
                r.label.clone(),
                r.load_conflicts.clone(),
                r.store_conflicts.clone(),
                r.conflicts_per_load.clone(),
                r.wavefronts_per_load.clone(),
                r.load_sectors_per_request.clone(),
                r.store_sectors_per_request.clone(),
                r.dram_read.clone(),
                r.dram_write.clone(),
                r.l1_to_l2_writes.clone(),
            ]
        })
        .collect();
    let taken = profile
        .taken
        .as_ref()
        .map(|t| format!(", profiled {t}, apart from the timings above"))
        .unwrap_or_default();
    let mut text = format!(
        "*Counters from {}, one checked launch per kernel{taken}*\n\n{}",
        prose(&profile.tool),
        pipe_table(&header, &rows)
    );
    for (lead, line) in [
        ("Counters: being collected for ", &profile.pending),
        ("Counters: ", &profile.recorded),
        ("Profiler: ", &profile.problem),
    ] {
        if let Some(line) = line {
            text.push_str(&format!("\n\n{}", prose(&format!("{lead}{line}"))));
        }
    }
    text
}

/// The launch statistics, one row per kernel and launch shape.
fn launch_table(view: &LabView) -> String {
    let header = [
        "Kernel",
        "Grid × block",
        "Registers / thread",
        "Spills (store / load)",
        "Shared memory / block",
        "Blocks / SM",
        "Occupancy",
    ];
    let rows: Vec<Vec<String>> = view
        .launch_rows
        .iter()
        .filter_map(|r| {
            let kernel = r.kernel.as_ref()?;
            Some(vec![
                format!("`{kernel}`"),
                r.launch.clone(),
                r.registers.clone(),
                r.spills.clone(),
                r.shared.clone(),
                r.blocks_per_sm.clone(),
                r.occupancy.clone(),
            ])
        })
        .collect();
    format!("*Launch statistics*\n\n{}", pipe_table(&header, &rows))
}

/// A diagram as one sentence: what it shows, and that the HTML book draws it.
pub fn diagram(view: &DiagramView) -> String {
    drawn_in_html("a diagram", &view.caption)
}

/// The GPUs compared: the list of GPUs, then a table per lab with a group of columns per GPU.
pub fn comparison(view: &ComparisonView) -> String {
    if let Some(empty) = &view.empty {
        return format!("**Nothing to compare:** {}.", prose(empty));
    }
    let header = [
        "GPU",
        "Folder",
        "Numbers",
        "Architecture",
        "SMs",
        "Theoretical peak",
        "Driver",
        "Compiler",
        "Measured",
        "Labs",
    ];
    let rows: Vec<Vec<String>> = view
        .gpus
        .iter()
        .map(|g| {
            vec![
                g.device.clone(),
                format!("`{}`", g.folder),
                g.origin.clone(),
                g.arch.clone(),
                g.sm_count.to_string(),
                g.peak.clone(),
                g.drivers.clone(),
                g.compilers.clone(),
                g.measured.clone(),
                g.labs.to_string(),
            ]
        })
        .collect();
    let mut blocks = vec![format!(
        "*The GPUs compared*\n\n{}",
        pipe_table(&header, &rows)
    )];
    blocks.extend(view.labs.iter().map(compared_lab));
    blocks.join("\n\n")
}

/// One lab of the comparison: its title, each GPU's notes, its table, its chart in a sentence.
fn compared_lab(lab: &LabComparison) -> String {
    let mut header = vec!["Variant".to_string()];
    let mut notes = Vec::new();
    for column in &lab.columns {
        let name = if column.device.is_empty() {
            column.folder.clone()
        } else {
            format!("{} (`{}`)", column.device, column.folder)
        };
        if lab.bandwidth {
            header.push(format!("{name} GB/s"));
            header.extend(["% of peak", "% of ceiling"].map(String::from));
        } else {
            header.push(format!("{name} {}", lab.value_header));
        }
        let said: Vec<&str> = [
            column.live.then_some("measured in this build"),
            column.stale.as_deref(),
            column.params.as_deref(),
            column.missing.as_deref(),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !said.is_empty() {
            notes.push(prose(&format!("{name}: {}.", said.join("; "))));
        }
    }
    let rows: Vec<Vec<String>> = lab
        .rows
        .iter()
        .map(|row| {
            let mut cells = vec![row.label.clone()];
            for cell in &row.cells {
                cells.extend(compared_cells(cell, lab));
            }
            cells
        })
        .collect();
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut blocks = vec![format!("**{}** (lab `{}`)", prose(&lab.title), lab.lab)];
    blocks.extend(notes);
    blocks.push(pipe_table(&header, &rows));
    if let Some(chart) = &lab.chart {
        blocks.push(drawn_in_html("a chart", &chart.svg.title));
    }
    blocks.join("\n\n")
}

/// One GPU's cells of one row: its figures, or its problem and empty cells.
fn compared_cells(cell: &Cell, lab: &LabComparison) -> Vec<String> {
    let stale = if cell.stale {
        " (recorded before this kernel was edited)"
    } else {
        ""
    };
    match (&cell.problem, lab.bandwidth) {
        (Some(problem), _) => std::iter::once(problem.clone())
            .chain((1..lab.span).map(|_| String::new()))
            .collect(),
        (None, true) => vec![
            format!("{}{stale}", cell.gbs),
            cell.pct_peak.clone(),
            cell.pct_ceiling.clone(),
        ],
        (None, false) => vec![format!("{}{stale}", cell.value)],
    }
}

/// A figure in the prose as its text: its HTML (`figures::render`'s span, or a gap's) without
/// the markup, its entities read back.
pub fn inline_figure(html: &str) -> String {
    let mut text = String::with_capacity(html.len());
    let mut in_tag = false;
    let mut quote: Option<char> = None;
    for c in html.chars() {
        match (in_tag, quote, c) {
            (false, _, '<') => in_tag = true,
            (false, _, _) => text.push(c),
            (true, None, '"' | '\'') => quote = Some(c),
            (true, Some(q), _) if q == c => quote = None,
            (true, None, '>') => in_tag = false,
            (true, _, _) => {}
        }
    }
    unescape_html(&text)
}

/// The few entities handlebars and the views write, read back.
fn unescape_html(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#x27;", "'")
        .replace("&#x60;", "`")
        .replace("&#x3D;", "=")
        .replace("&amp;", "&")
}

/// A kernel block's caption: what it is, where it was written, and its file under `kernels/`.
pub fn kernel_caption(what: &str, name: &str, origin: &str, extension: &str) -> String {
    format!(
        "*{what} {} · {} · also in {}*",
        code(name),
        code(origin),
        code(&format!("kernels/{name}.{extension}"))
    )
}

/// `text` as a code span, its backticks longer than any run inside it.
fn code(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let ticks = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{text}{pad}{ticks}")
}

/// "*The HTML book draws a chart here: …*": what a drawing shows, where it cannot be drawn.
fn drawn_in_html(what: &str, caption: &str) -> String {
    let caption = caption.trim().trim_end_matches('.');
    format!("*The HTML book draws {what} here: {}.*", prose(caption))
}

/// A pipe table; each cell on one line, its pipes escaped.
fn pipe_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let line = |cells: &mut dyn Iterator<Item = String>| {
        let cells: Vec<String> = cells.collect();
        format!("| {} |", cells.join(" | "))
    };
    let mut lines = vec![
        line(&mut header.iter().map(|h| cell(h))),
        line(&mut header.iter().map(|_| "---".to_string())),
    ];
    lines.extend(rows.iter().map(|row| {
        line(&mut (0..header.len()).map(|i| row.get(i).map_or(String::new(), |c| cell(c))))
    }));
    lines.join("\n")
}

/// A table cell's text: prose on one line, with no bare pipe.
fn cell(text: &str) -> String {
    prose(text).replace('|', "\\|")
}

/// Text the views wrote for HTML (which escapes it) as markdown: on one line, with no `<` that
/// a renderer would take for a tag; code in backticks kept as code.
fn prose(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let parts: Vec<&str> = one_line.split('`').collect();
    let paired = parts.len() - usize::from(parts.len().is_multiple_of(2));
    let mut out = String::with_capacity(one_line.len());
    for (i, part) in parts.iter().enumerate() {
        match (i % 2 == 1, i < paired) {
            (true, true) => out.push_str(&format!("`{part}`")),
            (true, false) => out.push_str(&format!("\\`{}", part.replace('<', "\\<"))),
            (false, _) => out.push_str(&part.replace('<', "\\<")),
        }
    }
    out
}

/// Text as a fenced code block, its fence longer than any run of backticks in it.
fn fenced(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}text\n{}\n{fence}", text.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_html_gets_html() {
        assert_eq!(Output::for_renderer("html"), Output::Html);
        for other in ["markdown", "epub", "linkcheck", "pandoc"] {
            assert_eq!(Output::for_renderer(other), Output::Markdown, "{other}");
        }
    }

    #[test]
    fn a_figure_keeps_its_text_only() {
        assert_eq!(
            inline_figure(
                "<span class=\"kernelbook-figure\" title=\"a > b\">4.16&nbsp;TB/s &amp; more</span>"
            ),
            "4.16&nbsp;TB/s & more"
        );
        assert_eq!(
            inline_figure("<span class=\"kernelbook-gap\" title=\"no row\">[no result]</span>"),
            "[no result]"
        );
    }

    #[test]
    fn cells_stay_on_one_line_without_bare_pipes() {
        let table = pipe_table(
            &["a", "b|c"],
            &[
                vec!["x\ny".into(), "`p|q` < r".into()],
                vec!["short".into()],
            ],
        );
        assert_eq!(
            table,
            "| a | b\\|c |\n| --- | --- |\n| x y | `p\\|q` \\< r |\n| short |  |"
        );
    }

    #[test]
    fn prose_keeps_code_and_escapes_tags_outside_it() {
        assert_eq!(prose("the `<T>` kernel <b>"), "the `<T>` kernel \\<b>");
        assert_eq!(prose("a lone ` tick <"), "a lone \\` tick \\<");
    }

    #[test]
    fn a_kernel_caption_is_a_line_of_code_spans() {
        assert_eq!(
            kernel_caption("Kernel", "copy", "src/a.md:3", "cu"),
            "*Kernel `copy` · `src/a.md:3` · also in `kernels/copy.cu`*"
        );
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x"), "`` `x ``");
    }

    #[test]
    fn a_fence_outlasts_the_backticks_inside() {
        assert_eq!(fenced("a ```` b"), "`````text\na ```` b\n`````");
        assert_eq!(fenced("plain"), "```text\nplain\n```");
    }
}
