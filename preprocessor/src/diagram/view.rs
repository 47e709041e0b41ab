//! What a diagram directive renders to: one figure of panels, each an SVG of the model, the
//! same numbers in a sentence beside it (and in data attributes, which the browser test checks
//! against that sentence), and where the lab was profiled, the counters beside the prediction.

use super::compare::{ComparisonView, CounterSource, compare};
use super::model::{Footprint, Panel};
use super::scene::{PanelText, Scene, scene};
use super::spec::{DiagramKind, DiagramSpec, MemoryOp};
use kernelbook_core::access::{BankFootprint, GlobalFootprint, Unit};
use serde::Serialize;

/// One `data-NAME="VALUE"` attribute of a panel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DataAttribute {
    pub name: &'static str,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PanelView {
    pub label: Option<String>,
    /// What the drawing's first line calls it: the list's value, the author's title, or the
    /// pattern in words.
    pub heading: String,
    pub data: Vec<DataAttribute>,
    pub svg: Scene,
    /// The panel's numbers in a sentence: the text beside the drawing.
    pub numbers: String,
    pub comparison: Option<ComparisonView>,
    /// Why a panel tied to a lab has no counters beside it.
    pub missing_counters: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiagramView {
    pub id: String,
    /// "warp-access" or "banks".
    pub kind: &'static str,
    pub caption: String,
    pub panels: Vec<PanelView>,
}

/// The counters for one panel, or why there are none; `None` for a panel tied to no lab.
pub type PanelCounters<'a> = Option<Result<CounterSource<'a>, String>>;

/// The view of a directive whose panels were evaluated; `counters[i]` belongs to `panels[i]`.
pub fn diagram_view(
    id: &str,
    spec: &DiagramSpec,
    panels: &[Panel],
    counters: &[PanelCounters<'_>],
) -> DiagramView {
    let sentence = describe(spec);
    let views = panels
        .iter()
        .enumerate()
        .map(|(i, panel)| {
            let (data, numbers, short) = numbers(&panel.footprint, spec.op);
            let heading = panel
                .spec
                .label
                .clone()
                .or_else(|| spec.title.clone())
                .unwrap_or_else(|| sentence.clone());
            let title = match &panel.spec.label {
                Some(label) => format!("{sentence}, {label}"),
                None => sentence.clone(),
            };
            let text = PanelText {
                heading: heading.clone(),
                desc: format!("{title}: {numbers}"),
                title,
                numbers: short,
            };
            let (comparison, missing_counters) = match counters.get(i).and_then(Option::as_ref) {
                Some(Ok(source)) => (
                    Some(compare(panel, spec.op, source, spec.why.as_deref())),
                    None,
                ),
                Some(Err(why)) => (None, Some(why.clone())),
                None => (None, None),
            };
            PanelView {
                label: panel.spec.label.clone(),
                heading,
                data,
                svg: scene(
                    &format!("{id}-{i}"),
                    &text,
                    (&panel.access, spec.op),
                    &panel.footprint,
                ),
                numbers,
                comparison,
                missing_counters,
            }
        })
        .collect();
    DiagramView {
        id: id.to_string(),
        kind: spec.kind.directive(),
        caption: caption(spec, &sentence),
        panels: views,
    }
}

/// The pattern in words: "Lane t writes element t * n of an array of 4-byte elements".
pub fn describe(spec: &DiagramSpec) -> String {
    let verb = spec.op.verb();
    let expr = &spec.pattern.expr;
    let bytes = spec.pattern.elem_bytes;
    match (spec.kind, spec.pattern.unit) {
        (DiagramKind::WarpAccess, Unit::Element) => {
            format!("Lane t {verb} element {expr} of an array of {bytes}-byte elements")
        }
        (DiagramKind::WarpAccess, Unit::Byte) => {
            format!("Lane t {verb} {bytes} bytes at byte {expr}")
        }
        (DiagramKind::Banks, Unit::Element) => {
            format!("Lane t {verb} word {expr} of a shared array of 4-byte words")
        }
        (DiagramKind::Banks, Unit::Byte) => format!("Lane t {verb} the shared word at byte {expr}"),
    }
}

/// The figure's caption: the pattern, its fixed values, and what drew it.
fn caption(spec: &DiagramSpec, sentence: &str) -> String {
    let values: Vec<String> = spec
        .values
        .iter()
        .map(|(name, value)| format!("{name} = {value}"))
        .collect();
    let with = if values.is_empty() {
        String::new()
    } else {
        format!(", with {}", values.join(", "))
    };
    let title = spec
        .title
        .as_ref()
        .map_or_else(String::new, |t| format!("{t}: "));
    let model = match spec.kind {
        DiagramKind::WarpAccess => "32-byte sectors in 128-byte lines",
        DiagramKind::Banks => "32 banks of 4-byte words",
    };
    format!(
        "{title}{sentence}{with} (one warp {} instruction, t = 0 … 31). Computed from this pattern when the book was built, by the model of {model}.",
        spec.op.noun()
    )
}

/// The panel's figures: as data attributes, as the sentence beside the drawing, and in short
/// for the drawing's own header.
fn numbers(footprint: &Footprint, op: MemoryOp) -> (Vec<DataAttribute>, String, String) {
    match footprint {
        Footprint::Global(global) => global_numbers(global, op),
        Footprint::Banks(banks) => bank_numbers(banks),
    }
}

fn data(name: &'static str, value: impl ToString) -> DataAttribute {
    DataAttribute {
        name,
        value: value.to_string(),
    }
}

fn global_numbers(global: &GlobalFootprint, op: MemoryOp) -> (Vec<DataAttribute>, String, String) {
    let moved = op.moved();
    let sectors = global.sectors_per_request();
    let lines = global.lines_touched();
    let sector_pct = percent(global.sector_efficiency());
    let line_pct = percent(global.line_efficiency());
    let attributes = vec![
        data("sectors", sectors),
        data("sector-bytes", global.sector_bytes_fetched()),
        data("lines", lines),
        data("line-bytes", global.line_bytes_fetched()),
        data("used-bytes", global.used_bytes()),
        data("sector-efficiency", &sector_pct),
        data("moved", moved),
        data("line-efficiency", &line_pct),
    ];
    let text = format!(
        "{sectors} {} per request ({} B {moved}) in {lines} {} ({} B); {} B used: {sector_pct} % of the sectors' bytes, {line_pct} % of the lines'.",
        plural(sectors, "sector", "sectors"),
        global.sector_bytes_fetched(),
        plural(lines, "line", "lines"),
        global.line_bytes_fetched(),
        global.used_bytes(),
    );
    let short = format!(
        "{sectors} {} · {lines} {} · {} B used of {} B {moved} ({sector_pct} %)",
        plural(sectors, "sector", "sectors"),
        plural(lines, "line", "lines"),
        global.used_bytes(),
        global.sector_bytes_fetched(),
    );
    (attributes, text, short)
}

fn bank_numbers(banks: &BankFootprint) -> (Vec<DataAttribute>, String, String) {
    let degree = banks.degree();
    let wavefronts = banks.wavefronts();
    let conflicts = banks.conflicts();
    let used = banks.banks_used();
    let broadcast: Vec<usize> = banks.broadcasts().map(|w| w.lanes.len()).collect();
    let attributes = vec![
        data("degree", degree),
        data("wavefronts", wavefronts),
        data("conflicts", conflicts),
        data("banks-used", used),
        data("broadcast-words", broadcast.len()),
    ];
    let kind = if degree == 1 {
        "No conflict".to_string()
    } else {
        format!("{degree}-way conflict")
    };
    let shared = match broadcast.as_slice() {
        [] => String::new(),
        [lanes] => format!("; 1 word broadcast to {lanes} lanes"),
        words => format!(
            "; {} words broadcast, to {} lanes in all",
            words.len(),
            words.iter().sum::<usize>()
        ),
    };
    let text = format!(
        "{kind}: {wavefronts} {} per request, {conflicts} {}; {used} of 32 banks used{shared}.",
        plural(wavefronts, "wavefront", "wavefronts"),
        plural(conflicts, "conflict", "conflicts"),
    );
    let short = format!(
        "{kind} · {wavefronts} {} · {used} {} used",
        plural(wavefronts, "wavefront", "wavefronts"),
        plural(used, "bank", "banks"),
    );
    (attributes, text, short)
}

fn plural(n: usize, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 { one } else { many }
}

/// A fraction as a percentage with what it needs: "100", "12.5", "6.25", "3.13".
pub fn percent(fraction: f64) -> String {
    let value = (fraction * 10_000.0).round() / 100.0;
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_keep_what_they_need() {
        assert_eq!(percent(1.0), "100");
        assert_eq!(percent(0.5), "50");
        assert_eq!(percent(0.125), "12.5");
        assert_eq!(percent(0.0625), "6.25");
        assert_eq!(percent(1.0 / 32.0), "3.13");
        assert_eq!(percent(0.8), "80");
    }
}
