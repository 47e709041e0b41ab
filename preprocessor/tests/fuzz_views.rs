//! Property tests: the views built from any results that pass validation — the book's own
//! recordings damaged at random, and results made from extreme values — never panic, never
//! print NaN or infinity, draw a bounded chart, and render to HTML of bounded size.

#[path = "../../core/tests/support/results.rs"]
mod support;

use kernelbook_core::results::LabResults;
use kernelbook_core::spec::LabSpec;
use kernelbook_runner::LabOutcome;
use mdbook_kernelbook::chart::MAX_TICKS;
use mdbook_kernelbook::render::{Templates, lab_view};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::Value;
use std::sync::OnceLock;
use support::{cases, damaged_recording, lab_results, mutation, recordings, repo};

struct Book {
    labs: Vec<LabSpec>,
    recordings: Vec<(String, Value)>,
    templates: Templates,
}

fn book() -> &'static Book {
    static BOOK: OnceLock<Book> = OnceLock::new();
    BOOK.get_or_init(|| {
        let recordings: Vec<(String, Value)> = recordings()
            .into_iter()
            .map(|(name, text)| (name, serde_json::from_str(&text).expect("JSON")))
            .collect();
        let labs = recordings
            .iter()
            .map(|(name, _)| {
                LabSpec::load(&repo().join("labs").join(format!("{name}.toml"))).expect("lab")
            })
            .collect();
        Book {
            labs,
            recordings,
            templates: Templates::new(),
        }
    })
}

fn lab(name: &str) -> &'static LabSpec {
    book()
        .labs
        .iter()
        .find(|l| l.name == name)
        .expect("a lab of the book")
}

/// Whether `html` holds a number Rust printed as infinite or not-a-number.
fn prints_a_non_number(html: &str) -> bool {
    let bytes = html.as_bytes();
    html.contains("NaN")
        || html.match_indices("inf").any(|(at, _)| {
            let before = at.checked_sub(1).map(|i| bytes[i]);
            let after = bytes.get(at + 3).copied();
            !before.is_some_and(|b| b.is_ascii_alphabetic())
                && !after.is_some_and(|b| b.is_ascii_alphabetic())
        })
}

/// Renders `results` as `lab`'s, live and recorded, and checks what comes out.
fn views_are_sound(lab: &LabSpec, results: &LabResults) -> Result<(), TestCaseError> {
    let json_len = results.to_json().len();
    let outcomes = [
        LabOutcome::Measured {
            results: results.clone(),
            cached: true,
        },
        LabOutcome::Recorded {
            results: results.clone(),
            why: "fuzz".into(),
            stale_kernels: Vec::new(),
            compile_errors: Vec::new(),
        },
    ];
    for outcome in &outcomes {
        let view = lab_view(lab, outcome);
        for row in &view.rows {
            for cell in [
                &row.gbs,
                &row.pct_ceiling,
                &row.pct_peak,
                &row.median,
                &row.rate,
                &row.counter,
            ] {
                prop_assert!(
                    !cell.starts_with('-'),
                    "{}: a negative figure {cell}",
                    row.name
                );
            }
        }
        if let Some(chart) = &view.chart {
            let svg = &chart.svg;
            let rows = lab.variants.len().max(results.variants.len());
            let marks = svg.rects.iter().filter(|r| r.datum.is_some()).count()
                + svg.dots.iter().filter(|d| d.datum.is_some()).count();
            prop_assert!(marks <= rows + 1, "{marks} marks for {rows} rows");
            let ticks = svg.texts.iter().filter(|t| t.class == "tick").count();
            prop_assert!(ticks <= MAX_TICKS + MAX_TICKS.max(rows), "{ticks} ticks");
            let lines = svg.lines.iter().chain(&svg.grid_lines);
            let lines = lines.flat_map(|l| [l.x1, l.y1, l.x2, l.y2]);
            let rects = svg.rects.iter().flat_map(|r| [r.x, r.y, r.width, r.height]);
            let dots = svg.dots.iter().flat_map(|d| [d.cx, d.cy]);
            let texts = svg.texts.iter().flat_map(|t| [t.x, t.y]);
            for c in lines
                .chain(rects)
                .chain(dots)
                .chain(texts)
                .chain([svg.height])
            {
                prop_assert!(c.is_finite(), "a coordinate {c}");
            }
        }
        let html = book()
            .templates
            .render_lab(&view)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(!prints_a_non_number(&html), "NaN or inf in {html}");
        let bound = 64 * 1024 + 8 * json_len;
        prop_assert!(
            html.len() <= bound,
            "{} bytes of HTML from {json_len} of JSON",
            html.len()
        );
    }
    Ok(())
}

#[test]
fn the_checker_of_non_numbers_finds_them() {
    assert!(prints_a_non_number("<td>inf</td>"));
    assert!(prints_a_non_number("<td>-inf %</td>"));
    assert!(prints_a_non_number("NaN"));
    assert!(!prints_a_non_number("information, infinite, Info"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(300)))]

    #[test]
    fn views_of_a_damaged_recording_are_sound(
        pick in any::<Index>(),
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let (name, text) = damaged_recording(&book().recordings, &pick, &mutations);
        if let Ok(results) = LabResults::from_json(&text) {
            views_are_sound(lab(&name), &results)?;
        }
    }

    #[test]
    fn views_of_generated_results_are_sound(
        (name, results) in any::<Index>().prop_flat_map(|pick| {
            let lab = &book().labs[pick.index(book().labs.len())];
            let mut names: Vec<String> = lab.variants.iter().map(|v| v.name.clone()).collect();
            names.push("ghost".into());
            (Just(lab.name.clone()), lab_results(lab.name.clone(), names))
        }),
    ) {
        if results.validate().is_ok() {
            views_are_sound(lab(&name), &results)?;
        }
    }
}
