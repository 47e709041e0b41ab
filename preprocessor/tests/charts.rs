//! The charts of the book's own labs, drawn from their committed H200 recordings: every lab gets
//! one, of the kind it asks for; each mark's figure is the table's, and its place on the chart
//! follows from that figure; beside a live run on another GPU both GPUs are drawn.
//! `KERNELBOOK_CHARTS=DIR` also writes each lab's HTML to DIR, to look at.

use kernelbook_core::results::{LabResults, Outcome};
use kernelbook_core::spec::LabSpec;
use kernelbook_runner::LabOutcome;
use mdbook_kernelbook::chart::ChartView;
use mdbook_kernelbook::render::{LabView, Templates, lab_view, lab_view_beside};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

/// The folder of the recordings the chapters show, chosen as the build chooses it.
fn shown_recordings() -> PathBuf {
    let config = mdbook_preprocessor::config::Config::from_disk(repo().join("book.toml"))
        .expect("book.toml");
    mdbook_kernelbook::recorded::shown_dir(&repo(), &config)
        .expect("the shown recordings")
        .0
}

/// Every lab with a recording, with its results.
fn recorded_labs() -> Vec<(LabSpec, LabResults)> {
    let mut labs = Vec::new();
    for entry in std::fs::read_dir(shown_recordings())
        .expect("dir")
        .flatten()
    {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let name = path.file_stem().and_then(|s| s.to_str()).expect("name");
        let lab = LabSpec::load(&repo().join("labs").join(format!("{name}.toml"))).expect("lab");
        let text = std::fs::read_to_string(&path).expect("recording");
        labs.push((lab, LabResults::from_json(&text).expect("results")));
    }
    labs.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    labs
}

fn recorded_view(lab: &LabSpec, results: &LabResults) -> LabView {
    lab_view(
        lab,
        &LabOutcome::Recorded {
            results: results.clone(),
            why: "test".into(),
            stale_kernels: Vec::new(),
            compile_errors: Vec::new(),
        },
    )
}

/// `results` as if measured on another GPU, every time `factor` times as long.
fn slower(results: &LabResults, factor: f64) -> LabResults {
    let mut live = results.clone();
    live.provenance.device.uuid = "GPU-another".into();
    live.provenance.device.name = "Another GPU".into();
    for row in &mut live.variants {
        if let Outcome::Measured {
            summary,
            samples_ms,
            ..
        } = &mut row.outcome
        {
            samples_ms.iter_mut().for_each(|s| *s *= factor);
            *summary = kernelbook_core::stats::Summary::of(samples_ms).expect("samples");
        }
    }
    live
}

/// The value a coordinate stands for on the chart's value axis.
fn value_at(chart: &ChartView, px: f64) -> f64 {
    let axis = &chart.svg.axis;
    let t = (px - axis.from_px) / (axis.to_px - axis.from_px);
    match axis.scale {
        "log" => axis.from * (axis.to / axis.from).powf(t),
        _ => axis.from + (axis.to - axis.from) * t,
    }
}

/// Each mark's figure and the figure its place on the chart stands for.
fn marks(chart: &ChartView) -> Vec<(f64, f64)> {
    let bars = chart
        .svg
        .rects
        .iter()
        .filter_map(|r| Some((r.datum.as_ref()?.value, value_at(chart, r.x + r.width))));
    let dots = chart
        .svg
        .dots
        .iter()
        .filter_map(|d| Some((d.datum.as_ref()?.value, value_at(chart, d.cy))));
    bars.chain(dots).collect()
}

#[test]
fn every_lab_of_the_book_gets_a_chart_of_the_kind_it_asks_for() {
    let templates = Templates::new();
    let out = std::env::var_os("KERNELBOOK_CHARTS").map(PathBuf::from);
    let mut kinds = Vec::new();
    for (lab, results) in recorded_labs() {
        let view = recorded_view(&lab, &results);
        let chart = view
            .chart
            .as_ref()
            .unwrap_or_else(|| panic!("{}: no chart", lab.name));
        assert_eq!(chart.kind, lab.chart_kind().name(), "{}", lab.name);
        assert!(!marks(chart).is_empty(), "{}: nothing drawn", lab.name);
        let html = templates.render_lab(&view).expect("render");
        assert_eq!(
            html.matches("<figure class=\"kernelbook-chart").count(),
            1,
            "{}",
            lab.name
        );
        if let Some(dir) = &out {
            std::fs::create_dir_all(dir).expect("dir");
            std::fs::write(dir.join(format!("{}.html", lab.name)), &html).expect("write");
        }
        kinds.push((lab.name.clone(), chart.kind));
    }
    let kind_of = |name: &str| kinds.iter().find(|(n, _)| n == name).map(|(_, k)| *k);
    assert_eq!(kind_of("transpose"), Some("bars"));
    assert_eq!(kind_of("fusion"), Some("speedup"));
    assert_eq!(kind_of("drill_coalesce"), Some("speedup"));
    assert_eq!(kind_of("memory_wall"), Some("roofline"));
    assert_eq!(kind_of("hierarchy"), Some("points"));
    assert_eq!(kind_of("hierarchy_bandwidth"), Some("points"));
}

#[test]
fn every_mark_stands_where_its_figure_puts_it() {
    for (lab, results) in recorded_labs() {
        let view = recorded_view(&lab, &results);
        let chart = view.chart.as_ref().expect("a chart");
        let axis = &chart.svg.axis;
        for (value, drawn) in marks(chart) {
            // A tenth of an SVG unit, the coordinates' precision, as a share of the axis.
            let slack = 0.06 / (axis.to_px - axis.from_px).abs();
            let agrees = if axis.scale == "log" {
                (drawn / value).ln().abs() <= slack * (axis.to / axis.from).ln()
            } else {
                (drawn - value).abs() <= slack * (axis.to - axis.from) + 1e-9
            };
            assert!(agrees, "{}: {value} drawn at {drawn}", lab.name);
        }
    }
}

#[test]
fn the_transpose_ladder_marks_its_ceiling_and_peers() {
    let (lab, results) = recorded_labs()
        .into_iter()
        .find(|(l, _)| l.name == "transpose")
        .expect("transpose");
    let view = recorded_view(&lab, &results);
    let chart = view.chart.expect("chart");
    let bars: Vec<_> = chart
        .svg
        .rects
        .iter()
        .filter(|r| r.class == "bar")
        .collect();
    assert_eq!(bars.len(), results.variants.len(), "one bar per row");
    for (bar, row) in bars.iter().zip(&view.rows) {
        let gbs: f64 = row.gbs.parse().expect("a figure");
        let value = bar.datum.as_ref().expect("datum").value;
        assert_eq!(format!("{value:.0}"), format!("{gbs:.0}"), "{}", row.name);
    }
    let hatched = bars
        .iter()
        .filter(|b| b.paint.fill.contains("hatch"))
        .count();
    assert_eq!(hatched, 2, "cuBLAS and PyTorch are peers");
    let ceiling = results.ceiling_gbs().expect("ceiling");
    let line = chart
        .svg
        .lines
        .iter()
        .find(|l| l.class == "reference")
        .expect("the ceiling's line");
    assert!((value_at(&chart, line.x1) - ceiling).abs() < 5.0);
    assert!(
        chart
            .caption
            .contains("the dashed line is driver memcpy (ceiling)"),
        "{}",
        chart.caption
    );
}

#[test]
fn speedups_are_time_ratios_to_the_baseline() {
    let (lab, results) = recorded_labs()
        .into_iter()
        .find(|(l, _)| l.name == "drill_coalesce")
        .expect("drill");
    let chart = recorded_view(&lab, &results).chart.expect("chart");
    let values: Vec<f64> = chart
        .svg
        .rects
        .iter()
        .filter_map(|r| r.datum.as_ref().map(|d| d.value))
        .collect();
    let time = |name: &str| {
        results
            .variant(name)
            .and_then(|v| v.median_ms())
            .expect("time")
    };
    assert_eq!(values, [1.0, time("starter") / time("solution")]);
}

#[test]
fn the_roofline_meets_at_the_measured_ridge_point() {
    let (lab, results) = recorded_labs()
        .into_iter()
        .find(|(l, _)| l.name == "memory_wall")
        .expect("memory wall");
    let view = recorded_view(&lab, &results);
    let chart = view.chart.expect("chart");
    let ridge = view.ridge.expect("the ridge sentence");
    let label = chart
        .svg
        .texts
        .iter()
        .find(|t| t.class == "ridge-label")
        .expect("the ridge's label");
    // The same figure as the sentence under the table.
    let figure = label
        .text
        .trim_start_matches("ridge: ")
        .split(' ')
        .next()
        .expect("figure");
    assert!(
        ridge.contains(&format!("= {figure} FLOP per byte")),
        "{ridge} / {}",
        label.text
    );
    let fma = chart
        .svg
        .dots
        .iter()
        .find(|d| d.datum.is_some())
        .expect("the FMA kernel");
    assert!(fma.tip.contains("at 4096 FLOP per byte"), "{}", fma.tip);
    // The memory wall's lab has no counters: its FMA kernel stands at its compulsory intensity.
    assert_eq!(fma.class, "point compulsory");
}

/// The intensity an x coordinate stands for on a roofline's log₂ axis, read from its first and
/// last tick labels ("1/4", "1", "4096").
fn intensity_at(chart: &ChartView, px: f64) -> f64 {
    let ticks: Vec<(f64, f64)> = chart
        .svg
        .texts
        .iter()
        .filter(|t| t.class == "tick" && t.anchor == "middle")
        .map(|t| {
            let value = match t.text.strip_prefix("1/") {
                Some(d) => 1.0 / d.parse::<f64>().expect("tick"),
                None => t.text.parse().expect("tick"),
            };
            (t.x, value)
        })
        .collect();
    assert!(ticks.len() >= 2, "the x axis's ticks");
    let ((x0, v0), (x1, v1)) = (ticks[0], ticks[ticks.len() - 1]);
    v0 * (v1 / v0).powf((px - x0) / (x1 - x0))
}

#[test]
fn each_sgemm_rung_stands_at_the_hbm_intensity_its_counters_give() {
    let (lab, results) = recorded_labs()
        .into_iter()
        .find(|(l, _)| l.name == "sgemm")
        .expect("sgemm");
    let chart = recorded_view(&lab, &results).chart.expect("chart");
    assert_eq!(chart.kind, "roofline");
    let profile = results.profile.as_ref().expect("the recording's counters");
    let mut drawn = 0;
    for row in results.variants.iter().filter(|v| v.work.is_some()) {
        let label = lab.variant(&row.name).expect("row").label();
        let dot = chart
            .svg
            .dots
            .iter()
            .find(|d| d.tip.starts_with(&format!("{label}: ")))
            .unwrap_or_else(|| panic!("{}: no dot", row.name));
        let work = row.work.as_ref().expect("work").count as f64;
        let counted = profile
            .kernels
            .iter()
            .find(|k| k.variant == row.name)
            .and_then(|k| k.counters.dram_bytes);
        let (bytes, class) = match counted {
            Some(bytes) => (bytes, "point"),
            None => (row.bytes_moved as f64, "point compulsory"),
        };
        let x = intensity_at(&chart, dot.cx);
        assert!(
            (x / (work / bytes) - 1.0).abs() < 0.01,
            "{}: drawn at {x}, its bytes give {}",
            row.name,
            work / bytes
        );
        assert_eq!(dot.class, class, "{}", row.name);
        let named = chart
            .svg
            .texts
            .iter()
            .any(|t| t.class == "kernel-label" && t.text == row.name);
        assert!(named, "{}: no label", row.name);
        drawn += 1;
    }
    // Every rung, the FMA kernel and cuBLAS (no counters: a library's kernels are not profiled).
    assert!(drawn >= 7, "{drawn} rows drawn");
    assert!(
        chart.svg.dots.iter().any(|d| d.class == "point compulsory"),
        "cuBLAS has no counters"
    );
}

#[test]
fn the_hierarchy_charts_name_their_levels_and_the_l2_size() {
    for name in ["hierarchy", "hierarchy_bandwidth"] {
        let (lab, results) = recorded_labs()
            .into_iter()
            .find(|(l, _)| l.name == name)
            .expect("lab");
        let chart = recorded_view(&lab, &results).chart.expect("chart");
        assert_eq!(chart.svg.axis.orient, "y");
        let texts: Vec<&str> = chart.svg.texts.iter().map(|t| t.text.as_str()).collect();
        for level in &lab.levels {
            assert!(texts.contains(&level.name.as_str()), "{name}: {texts:?}");
        }
        assert!(texts.contains(&"L2 size: 60 MiB"), "{name}: {texts:?}");
    }
}

#[test]
fn beside_a_live_run_both_gpus_are_drawn() {
    for (lab, results) in recorded_labs() {
        let live = slower(&results, 1.5);
        let outcome = LabOutcome::Measured {
            results: live,
            cached: false,
        };
        let view = lab_view_beside(&lab, &outcome, Some(&results));
        let chart = view.chart.as_ref().expect("a chart");
        let series = |name: &str| {
            let rects = chart.svg.rects.iter().filter_map(|r| r.datum.as_ref());
            let dots = chart.svg.dots.iter().filter_map(|d| d.datum.as_ref());
            rects.chain(dots).filter(|d| d.series == name).count()
        };
        if chart.kind == "roofline" {
            assert!(
                chart
                    .svg
                    .polylines
                    .iter()
                    .any(|p| p.class == "roof recorded")
            );
        } else {
            assert_eq!(series("live"), series("recorded"), "{}", lab.name);
            assert!(series("live") > 0, "{}", lab.name);
        }
        if let Some(dir) = std::env::var_os("KERNELBOOK_CHARTS").map(PathBuf::from) {
            std::fs::create_dir_all(&dir).expect("dir");
            let html = Templates::new().render_lab(&view).expect("render");
            std::fs::write(dir.join(format!("{}-beside.html", lab.name)), html).expect("write");
        }
        assert!(
            chart.caption.contains("NVIDIA H200, recorded"),
            "{}: {}",
            lab.name,
            chart.caption
        );
    }
}

#[test]
fn a_chart_with_nothing_to_draw_gives_way_to_bars_and_none_draws_nothing() {
    let (lab, mut results) = recorded_labs()
        .into_iter()
        .find(|(l, _)| l.name == "drill_coalesce")
        .expect("drill");
    let starter = results
        .variants
        .iter_mut()
        .find(|v| v.name == "starter")
        .expect("starter");
    starter.outcome = Outcome::Unavailable {
        reason: "not built".into(),
    };
    let chart = recorded_view(&lab, &results).chart.expect("a chart");
    assert_eq!(chart.kind, "bars");
    assert!(
        chart
            .caption
            .contains("The speedup chart has nothing to draw"),
        "{}",
        chart.caption
    );
    let gap = chart
        .svg
        .texts
        .iter()
        .find(|t| t.class == "gap")
        .expect("a gap");
    assert_eq!(gap.text, "not measured here: not built");
    let text = std::fs::read_to_string(&lab.file).expect("lab file");
    let none = LabSpec::parse(
        &text.replace(
            "kind = \"speedup\"\nbaseline = \"starter\"",
            "kind = \"none\"",
        ),
        &lab.file,
    )
    .expect("lab");
    assert!(recorded_view(&none, &results).chart.is_none());
}
