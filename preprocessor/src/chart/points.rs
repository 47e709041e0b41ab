//! A sweep's chart (`[plot]`): each row at its `plot_x`, a whisker over the range of its
//! samples, a trace through them, the lab's model scaled to the ceiling measured in the same run,
//! the ceiling as a line where it is not on the sweep, the lab's `levels` named at their rows,
//! the measured GPU's L2 size where the lab asks (`mark_l2`), and a cross for a row without a
//! result.

use super::Beside;
use super::measure::{Metric, Spread, ceiling_words, gap_reason};
use super::scale::{Scale, Tick, format_bytes, format_number, format_value, round, zero_based};
use super::scene::{Datum, Dot, FOREGROUND, MEASURED, Paint, Scene, Swatch, WIDTH};
use kernelbook_core::results::LabResults;
use kernelbook_core::spec::{LabSpec, Model, ModelScale, PlotSpec};

const LEFT: f64 = 64.0;
const RIGHT: f64 = 24.0;
const PLOT_HEIGHT: f64 = 300.0;
const BOTTOM: f64 = 48.0;
/// The least distance between two x-axis labels, in SVG units.
const MIN_TICK_GAP: f64 = 44.0;

/// A row of the sweep at its x, with its figure or why it has none.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepRow {
    pub name: String,
    pub label: String,
    pub x: f64,
    pub figure: Result<Spread, String>,
}

/// The rows of `results` that have a `plot_x` drawable on the axis, in x order.
pub fn sweep_rows(
    lab: &LabSpec,
    plot: &PlotSpec,
    results: &LabResults,
    metric: &Metric,
) -> Vec<SweepRow> {
    let mut rows: Vec<SweepRow> = lab
        .variants
        .iter()
        .filter_map(|spec| {
            let x = spec
                .plot_x
                .filter(|x| x.is_finite() && (!plot.log2_x || *x > 0.0))?;
            let v = results.variant(&spec.name);
            Some(SweepRow {
                name: spec.name.clone(),
                label: spec.label().to_string(),
                x,
                figure: v
                    .and_then(|v| metric.spread(v))
                    .ok_or_else(|| gap_reason(v, &metric.label())),
            })
        })
        .collect();
    rows.sort_by(|a, b| a.x.total_cmp(&b.x));
    rows
}

/// The x axis: the least to the greatest position, by powers of two if the lab asks.
fn x_scale(xs: &[f64], log2: bool) -> Scale {
    let (lo, hi) = xs
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
    if log2 {
        Scale::log(lo, hi, LEFT, WIDTH - RIGHT)
    } else {
        Scale::linear(lo, hi, LEFT, WIDTH - RIGHT)
    }
}

/// One tick per position; sizes in bytes as KiB/MiB/GiB; ticks closer than a label's width
/// are skipped.
fn x_ticks(xs: &[f64], scale: &Scale, in_bytes: bool) -> Vec<Tick> {
    let mut ticks: Vec<Tick> = Vec::new();
    let mut xs = xs.to_vec();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    for x in xs {
        let pos = scale.pos(x);
        if ticks.last().is_some_and(|t| pos - t.pos < MIN_TICK_GAP) {
            continue;
        }
        let label = if in_bytes {
            format_bytes(x)
        } else {
            format_number(x)
        };
        ticks.push(Tick { pos, label });
    }
    ticks
}

/// `model` at each of `xs`, scaled to `base` (what [`Model::scaled_to`] names, measured in the
/// same run, in the chart's `metric`); none without a base to scale it to. A model's share is of
/// a rate, so a time or a count per load grows as the share shrinks.
pub fn model_curve(
    model: Model,
    base: Option<f64>,
    metric: &Metric,
    xs: &[f64],
) -> Option<Vec<(f64, f64)>> {
    let base = base.filter(|b| b.is_finite() && *b > 0.0)?;
    let faster_is_higher = matches!(metric, Metric::Gbs | Metric::Rate { .. });
    Some(
        xs.iter()
            .map(|&x| {
                let share = model.share(x);
                (
                    x,
                    if faster_is_higher {
                        base * share
                    } else {
                        base / share
                    },
                )
            })
            .collect(),
    )
}

fn model_label(model: Model) -> &'static str {
    match model {
        Model::SectorStridedCopy => "32-byte-sector model × measured ceiling",
        Model::L2FillStridedCopy => "64-byte L2-fill (DRAM) model × measured ceiling",
        Model::InverseDegree => "1/degree model × the degree-1 row",
    }
}

/// What `model` is scaled to in this run: the ceiling row's figure, or the sweep's row at 1.
fn model_base(
    model: Model,
    results: &LabResults,
    rows: &[SweepRow],
    metric: &Metric,
) -> Option<f64> {
    match model.scaled_to() {
        ModelScale::Ceiling => {
            let ceiling = results.variant(results.ceiling.as_deref()?)?;
            Some(metric.spread(ceiling)?.median)
        }
        ModelScale::RowAtOne => rows
            .iter()
            .filter(|r| r.x == 1.0)
            .find_map(|r| r.figure.as_ref().ok())
            .map(|s| s.median),
    }
}

/// The line styles of the models, in the order the lab names them: each its own dash, none
/// solid (the ceiling is) or dotted (the L2 size is).
const MODEL_DASHES: [&str; 3] = ["6 4", "12 3 2 3", "2 5"];

fn model_paint(index: usize) -> Paint {
    Paint::stroked(FOREGROUND, 1.5).dashed(MODEL_DASHES[index % MODEL_DASHES.len()])
}

/// The ceiling's line: solid, where the models are dashed.
fn ceiling_paint() -> Paint {
    Paint::stroked(FOREGROUND, 1.5).faint(0.7)
}

/// 65 x values evenly spaced along the axis, to draw a curve through.
fn samples(scale: &Scale, log2: bool) -> Vec<f64> {
    (0..=64)
        .map(|i| f64::from(i) / 64.0)
        .map(|t| {
            if log2 {
                scale.lo() * (scale.hi() / scale.lo()).powf(t)
            } else {
                scale.lo() + (scale.hi() - scale.lo()) * t
            }
        })
        .collect()
}

/// The ceiling as a horizontal line, where the lab has one that is not a row of the sweep and
/// the chart shows bandwidth: (value, words).
fn ceiling_line(lab: &LabSpec, results: &LabResults, metric: &Metric) -> Option<(f64, String)> {
    let name = results.ceiling.as_deref()?;
    let spec = lab.variant(name)?;
    if spec.plot_x.is_some() || *metric != Metric::Gbs {
        return None;
    }
    let value = metric.spread(results.variant(name)?)?.median;
    Some((
        value,
        format!(
            "{} {} GB/s",
            ceiling_words(spec.label()),
            format_value(value)
        ),
    ))
}

/// Everything the sweep chart places, before it is drawn.
struct Sweep {
    metric: Metric,
    rows: Vec<SweepRow>,
    beside: Option<(String, Vec<SweepRow>)>,
    /// Each model's curve and words, in the lab's order.
    models: Vec<(Vec<(f64, f64)>, &'static str)>,
    ceiling: Option<(f64, String)>,
    l2: Option<f64>,
    x: Scale,
    /// The labels of the rows without a `plot_x`, other than a ceiling drawn as a line.
    off_axis: Vec<String>,
    /// The measured GPU's name, for the legend beside the recorded one.
    device: String,
}

/// The sweep chart; `None` if the lab has no `[plot]` or no row of it has a figure.
pub fn chart(
    lab: &LabSpec,
    results: &LabResults,
    beside: Option<Beside<'_>>,
) -> Option<(Scene, String)> {
    let plot = lab.plot.as_ref()?;
    let metric = Metric::of(results);
    let rows = sweep_rows(lab, plot, results, &metric);
    if !rows.iter().any(|r| r.figure.is_ok()) {
        return None;
    }
    let beside = beside.map(|b| (b.name(), sweep_rows(lab, plot, b.results, &metric)));
    let xs: Vec<f64> = rows.iter().map(|r| r.x).collect();
    let x = x_scale(&xs, plot.log2_x);
    let l2 = Some(results.provenance.device.l2_bytes as f64)
        .filter(|l2| plot.mark_l2 && *l2 >= x.lo() && *l2 <= x.hi());
    let ceiling = ceiling_line(lab, results, &metric);
    let off_axis = lab
        .variants
        .iter()
        .filter(|v| v.plot_x.is_none())
        .filter(|v| ceiling.is_none() || results.ceiling.as_deref() != Some(v.name.as_str()))
        .map(|v| v.label().to_string())
        .collect();
    let xs = samples(&x, plot.log2_x);
    let models = plot
        .models
        .iter()
        .filter_map(|&model| {
            let base = model_base(model, results, &rows, &metric);
            Some((model_curve(model, base, &metric, &xs)?, model_label(model)))
        })
        .collect();
    let sweep = Sweep {
        device: results.provenance.device.name.clone(),
        off_axis,
        models,
        ceiling,
        metric,
        rows,
        beside,
        l2,
        x,
    };
    let scene = draw(lab, plot, &sweep);
    Some((scene, caption(plot, &sweep)))
}

fn caption(plot: &PlotSpec, sweep: &Sweep) -> String {
    let mut parts = vec![format!(
        "{} against {}: dots are medians, whiskers span the least to the greatest stored sample",
        super::bars::capitalised(&sweep.metric.label()),
        plot.x_label
    )];
    for (i, (_, label)) in sweep.models.iter().enumerate() {
        parts.push(format!("the {} curve is the {label}", dash_words(i)));
    }
    if let Some((_, words)) = &sweep.ceiling {
        parts.push(format!("the solid line is {words}"));
    }
    if sweep.l2.is_some() {
        parts.push("the dotted line is this GPU's L2 size, from its device properties".into());
    }
    if sweep.rows.iter().any(|r| r.figure.is_err()) {
        parts.push("a cross on the axis is a row without a result (the table says why)".into());
    }
    if let Some((recorded, _)) = &sweep.beside {
        parts.push(format!("hollow dots are the {recorded}"));
    }
    if !sweep.off_axis.is_empty() {
        parts.push(format!(
            "rows with no place on the x axis are in the table only ({})",
            sweep.off_axis.join("; ")
        ));
    }
    format!("{}.", parts.join("; "))
}

/// The y axis: from zero to a round value above everything drawn.
fn y_top(sweep: &Sweep) -> f64 {
    let rows = sweep
        .rows
        .iter()
        .chain(sweep.beside.iter().flat_map(|(_, rows)| rows));
    rows.filter_map(|r| r.figure.as_ref().ok())
        .map(|s| s.max.max(s.median))
        .chain(
            sweep
                .models
                .iter()
                .flat_map(|(curve, _)| curve.iter().map(|(_, y)| *y)),
        )
        .chain(sweep.ceiling.as_ref().map(|(v, _)| *v))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
}

fn draw(lab: &LabSpec, plot: &PlotSpec, sweep: &Sweep) -> Scene {
    let mut legend = vec![(Swatch::Dot(Paint::filled(MEASURED)), "median".to_string())];
    if let Some((recorded, _)) = &sweep.beside {
        legend = vec![
            (Swatch::Dot(Paint::filled(MEASURED)), sweep.device.clone()),
            (Swatch::Dot(hollow()), recorded.clone()),
        ];
    }
    legend.push((Swatch::Whisker, "min – max of the samples".into()));
    for (i, (_, label)) in sweep.models.iter().enumerate() {
        legend.push((Swatch::Stroke(model_paint(i)), label.to_string()));
    }
    if let Some((_, words)) = &sweep.ceiling {
        legend.push((Swatch::Stroke(ceiling_paint()), words.clone()));
    }
    if sweep.rows.iter().any(|r| r.figure.is_err()) {
        legend.push((Swatch::Cross, "no result".into()));
    }
    let mut scene = Scene::new(sweep.x.data("x"));
    let top = scene.legend(LEFT, 6.0, legend) + 8.0;
    let bottom = top + PLOT_HEIGHT;
    let (y, y_ticks) = zero_based(y_top(sweep), bottom, top);
    // The marks' values lie along the y axis.
    scene.axis = y.data("y");
    scene.grid(&y_ticks, false, (LEFT, WIDTH - RIGHT), LEFT - 6.0);
    let axis = Paint::stroked(FOREGROUND, 1.0);
    scene.line(
        "axis",
        (LEFT, bottom),
        (WIDTH - RIGHT, bottom),
        axis.clone(),
    );
    scene.line("axis", (LEFT, top), (LEFT, bottom), axis);
    let xs: Vec<f64> = sweep.rows.iter().map(|r| r.x).collect();
    for tick in x_ticks(&xs, &sweep.x, plot.x_label.contains("bytes")) {
        scene.text("tick", (tick.pos, bottom + 16.0), "middle", tick.label);
    }
    scene.text("label", (LEFT, bottom + 38.0), "start", x_axis_words(plot));
    scene.text(
        "label",
        (LEFT + 6.0, top + 4.0),
        "start",
        sweep.metric.label(),
    );
    draw_references(&mut scene, sweep, &y, (top, bottom));
    if let Some((_, rows)) = &sweep.beside {
        draw_series(
            &mut scene,
            rows,
            (&sweep.x, &y),
            (&sweep.metric, "recorded"),
        );
    }
    let series = if sweep.beside.is_some() {
        "live"
    } else {
        "measured"
    };
    draw_series(
        &mut scene,
        &sweep.rows,
        (&sweep.x, &y),
        (&sweep.metric, series),
    );
    draw_levels(&mut scene, lab, sweep, &y);
    scene.height = round(bottom + BOTTOM);
    scene.title = format!("{} against {}", sweep.metric.label(), x_axis_words(plot));
    scene.desc = describe(sweep);
    scene
}

/// The x axis's label, saying where it is spaced by powers of two.
fn x_axis_words(plot: &PlotSpec) -> String {
    if plot.log2_x {
        format!("{} (log₂ axis: each tick twice the last)", plot.x_label)
    } else {
        plot.x_label.clone()
    }
}

/// How the caption names the `index`th model's line style.
fn dash_words(index: usize) -> &'static str {
    ["dashed", "dash-dotted", "finely dotted"][index % MODEL_DASHES.len()]
}

/// The recorded GPU's dots beside a live run.
fn hollow() -> Paint {
    Paint {
        fill: "none".into(),
        ..Paint::stroked(FOREGROUND, 1.5)
    }
}

/// The model's curve, the ceiling's line and the L2 size.
fn draw_references(scene: &mut Scene, sweep: &Sweep, y: &Scale, (top, bottom): (f64, f64)) {
    for (i, (curve, _)) in sweep.models.iter().enumerate() {
        let points: Vec<(f64, f64)> = curve
            .iter()
            .map(|(x, v)| (sweep.x.pos(*x), y.pos(*v)))
            .collect();
        scene.polyline("model", &points, model_paint(i));
    }
    if let Some((value, words)) = &sweep.ceiling {
        let at = y.pos(*value);
        scene.line(
            "reference",
            (LEFT, at),
            (WIDTH - RIGHT, at),
            ceiling_paint(),
        );
        scene.text(
            "reference-label",
            (WIDTH - RIGHT - 4.0, at - 5.0),
            "end",
            words.clone(),
        );
    }
    if let Some(l2) = sweep.l2 {
        let at = sweep.x.pos(l2);
        let paint = Paint::stroked(FOREGROUND, 1.2).dashed("2 3");
        scene.line("l2", (at, top), (at, bottom), paint);
        let words = format!("L2 size: {}", format_bytes(l2));
        scene.text("l2-label", (at + 4.0, bottom - 8.0), "start", words);
    }
}

/// One GPU's rows: a trace through the medians, a whisker and a dot each, a cross on the axis
/// for a row without a result.
fn draw_series(
    scene: &mut Scene,
    rows: &[SweepRow],
    (x, y): (&Scale, &Scale),
    (metric, series): (&Metric, &'static str),
) {
    let recorded = series == "recorded";
    let trace: Vec<(f64, f64)> = rows
        .iter()
        .filter_map(|r| Some((x.pos(r.x), y.pos(r.figure.as_ref().ok()?.median))))
        .collect();
    let paint = if recorded {
        Paint::stroked(FOREGROUND, 1.0).dashed("3 3").faint(0.6)
    } else {
        Paint::stroked(MEASURED, 1.5).faint(0.6)
    };
    scene.polyline("trace", &trace, paint);
    for row in rows {
        let at = x.pos(row.x);
        match &row.figure {
            Ok(s) => {
                scene.whisker(false, y.pos(s.min), y.pos(s.max), at, 3.0);
                scene.dots.push(Dot {
                    class: "point",
                    cx: at,
                    cy: y.pos(s.median),
                    r: 4.0,
                    paint: if recorded {
                        hollow()
                    } else {
                        Paint::filled(MEASURED)
                    },
                    datum: Some(Datum {
                        value: s.median,
                        field: metric.field(),
                        series: series.into(),
                    }),
                    tip: format!(
                        "{}: {} {} (samples {} – {})",
                        row.label,
                        format_value(s.median),
                        metric.label(),
                        format_value(s.min),
                        format_value(s.max)
                    ),
                });
            }
            Err(_) if !recorded => {
                let bottom = y.pos(0.0);
                scene.text("gap", (at, bottom - 4.0), "middle", "✕".into());
            }
            Err(_) => {}
        }
    }
}

/// The lab's `levels` named above the rows they are read off.
fn draw_levels(scene: &mut Scene, lab: &LabSpec, sweep: &Sweep, y: &Scale) {
    for level in &lab.levels {
        let Some(row) = sweep.rows.iter().find(|r| r.name == level.variant) else {
            continue;
        };
        let Ok(s) = &row.figure else { continue };
        // Above the whisker, or below it where that would leave the plot.
        let above = y.pos(s.max) - 10.0;
        let at_y = if above < y.to_px() + 12.0 {
            y.pos(s.min) + 18.0
        } else {
            above
        };
        scene.text(
            "level",
            (sweep.x.pos(row.x), at_y),
            "middle",
            level.name.clone(),
        );
    }
}

/// Every figure the chart draws, for a screen reader.
fn describe(sweep: &Sweep) -> String {
    let unit = sweep.metric.label();
    sweep
        .rows
        .iter()
        .map(|r| match &r.figure {
            Ok(s) => format!(
                "{}: {} {unit} ({} – {})",
                r.label,
                format_value(s.median),
                format_value(s.min),
                format_value(s.max)
            ),
            Err(why) => format!("{}: {why}", r.label),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::testing::{results, sampled};
    use kernelbook_core::results::{CounterResult, Outcome};
    use std::path::Path;

    const LAB: &str = r#"
name = "strided"
title = "Strided"
bytes = "2 * n * 4"
ceiling = "s1"
levels = [{ name = "far", variant = "s8" }]
[params]
n = 1024
[[buffers]]
name = "in"
len = "n * 8"
fill = "random"
[[buffers]]
name = "out"
len = "n"
fill = "poison"
[check]
reference = "strided_gather"
input = "in"
output = "out"
count = "n"
stride = "1"
[plot]
x_label = "stride"
log2_x = true
model = "sector_strided_copy"
[[variants]]
name = "s1"
kernel = "k"
grid = [4]
block = [256]
args = ["out", "in", "n", "1"]
plot_x = 1
[[variants]]
name = "s8"
kernel = "k"
grid = [4]
block = [256]
args = ["out", "in", "n", "8"]
plot_x = 8
[[variants]]
name = "s4"
kernel = "k"
grid = [4]
block = [256]
args = ["out", "in", "n", "4"]
plot_x = 4
"#;

    fn lab() -> LabSpec {
        LabSpec::parse(LAB, Path::new("labs/strided.toml")).expect("lab")
    }

    /// 4000 GB/s at stride 1 (3200 to 5000 over its samples), 1000 at stride 8; stride 4 failed.
    fn measured() -> LabResults {
        let mut failed = sampled("s4", 8_000_000, &[1.0]);
        failed.outcome = Outcome::Unavailable {
            reason: "skipped".into(),
        };
        let rows = vec![
            sampled("s1", 8_000_000, &[0.002, 0.0016, 0.0025]),
            sampled("s8", 8_000_000, &[0.008]),
            failed,
        ];
        results("strided", Some("s1"), rows)
    }

    fn dot<'a>(scene: &'a Scene, tip: &str) -> &'a Dot {
        scene
            .dots
            .iter()
            .find(|d| d.tip.starts_with(tip))
            .unwrap_or_else(|| panic!("no dot {tip}"))
    }

    #[test]
    fn measured_points_and_the_model_share_the_scale() {
        let (scene, caption) = chart(&lab(), &measured(), None).expect("a chart");
        // Strides 1, 4 and 8 on a log axis: 4 is two thirds of the way along.
        let (s1, s8) = (dot(&scene, "s1"), dot(&scene, "s8"));
        assert_eq!((s1.cx, s8.cx), (LEFT, WIDTH - RIGHT));
        assert_eq!(s1.datum.as_ref().map(|d| d.value), Some(4000.0));
        assert!(
            s1.tip.contains("4000 GB/s (samples 3200 – 5000)"),
            "{}",
            s1.tip
        );
        // The model starts at the ceiling (the stride-1 point) and predicts 2/9 of it at 8.
        let model = scene
            .polylines
            .iter()
            .find(|p| p.class == "model")
            .expect("model");
        let first = model.points.split(' ').next().expect("a vertex");
        assert_eq!(first, format!("{},{}", s1.cx, s1.cy));
        let last = model.points.split(' ').next_back().expect("a vertex");
        let model_y: f64 = last
            .split(',')
            .nth(1)
            .and_then(|y| y.parse().ok())
            .expect("y");
        assert!(model_y > s8.cy, "lower on the page means higher bandwidth");
        assert!(
            caption.contains("the dashed curve is the 32-byte-sector model"),
            "{caption}"
        );
    }

    #[test]
    fn whiskers_levels_and_gaps_are_drawn_where_the_rows_are() {
        let (scene, caption) = chart(&lab(), &measured(), None).expect("a chart");
        let s1 = dot(&scene, "s1");
        let whisker = scene
            .lines
            .iter()
            .find(|l| l.class == "whisker" && l.x1 == s1.cx && l.x2 == s1.cx)
            .expect("a whisker at stride 1");
        // 5000 GB/s is higher on the page than 3200.
        assert!(whisker.y1 > s1.cy && whisker.y2 < s1.cy, "{whisker:?}");
        let level = scene
            .texts
            .iter()
            .find(|t| t.class == "level")
            .expect("a level");
        assert_eq!(
            (level.text.as_str(), level.x),
            ("far", dot(&scene, "s8").cx)
        );
        let gap = scene
            .texts
            .iter()
            .find(|t| t.class == "gap")
            .expect("a cross");
        let four = LEFT + (WIDTH - RIGHT - LEFT) * 2.0 / 3.0;
        assert!((gap.x - four).abs() < 0.1, "{}", gap.x);
        assert!(caption.contains("a cross on the axis is a row without a result"));
    }

    #[test]
    fn the_l2_size_is_marked_where_the_lab_asks() {
        let text = LAB.replace("model = \"sector_strided_copy\"", "mark_l2 = true");
        let lab = LabSpec::parse(&text, Path::new("labs/strided.toml")).expect("lab");
        let mut r = measured();
        // An x axis from 1 to 8 holds an L2 of 2 bytes.
        r.provenance.device.l2_bytes = 2;
        let (scene, _) = chart(&lab, &r, None).expect("a chart");
        let l2 = scene
            .lines
            .iter()
            .find(|l| l.class == "l2")
            .expect("the L2 line");
        assert_eq!(l2.x1, sweep_x(2.0));
        assert!(scene.texts.iter().any(|t| t.text == "L2 size: 2 B"));
        // Off the axis, no line.
        r.provenance.device.l2_bytes = 1 << 20;
        let (scene, _) = chart(&lab, &r, None).expect("a chart");
        assert!(!scene.lines.iter().any(|l| l.class == "l2"));
    }

    #[test]
    fn two_models_and_the_ceiling_each_have_their_own_line_style_and_legend_entry() {
        // The ceiling off the sweep (a row without plot_x), both strided models.
        let text = LAB
            .replace(
                "model = \"sector_strided_copy\"",
                "model = [\"sector_strided_copy\", \"l2_fill_strided_copy\"]",
            )
            .replace("name = \"s1\"\nkernel", "name = \"base\"\nkernel = \"k\"\ngrid = [4]\nblock = [256]\nargs = [\"out\", \"in\", \"n\", \"1\"]\n[[variants]]\nname = \"s1\"\nkernel");
        let lab = LabSpec::parse(&text, Path::new("labs/strided.toml")).expect("lab");
        let mut r = measured();
        r.variants.push(sampled("base", 8_000_000, &[0.002]));
        r.ceiling = Some("base".into());
        let (scene, caption) = chart(&lab, &r, None).expect("a chart");
        let models: Vec<_> = scene
            .polylines
            .iter()
            .filter(|p| p.class == "model")
            .collect();
        assert_eq!(models.len(), 2);
        assert_ne!(models[0].paint.dash, models[1].paint.dash);
        let ceiling = scene
            .lines
            .iter()
            .find(|l| l.class == "reference")
            .expect("ceiling");
        assert_eq!(
            ceiling.paint.dash, None,
            "the ceiling is solid, the models dashed"
        );
        // At stride 8 both models predict 2/9 of the 4000 GB/s ceiling; they part from 16 on.
        let legend: Vec<&str> = scene
            .texts
            .iter()
            .filter(|t| t.class == "legend")
            .map(|t| t.text.as_str())
            .collect();
        assert!(
            legend.contains(&"32-byte-sector model × measured ceiling"),
            "{legend:?}"
        );
        assert!(
            legend.iter().any(|t| t.starts_with("64-byte L2-fill")),
            "{legend:?}"
        );
        assert!(
            legend.iter().any(|t| t.starts_with("ceiling")),
            "{legend:?}"
        );
        assert!(
            caption.contains("the dash-dotted curve is the 64-byte L2-fill"),
            "{caption}"
        );
        assert!(caption.contains("the solid line is ceiling"), "{caption}");
        let axis = scene
            .texts
            .iter()
            .find(|t| t.class == "label")
            .expect("x label");
        assert!(axis.text.contains("log₂ axis"), "{}", axis.text);
    }

    #[test]
    fn the_inverse_degree_model_starts_at_the_row_at_one() {
        let lab = LabSpec::parse(
            &LAB.replace("sector_strided_copy", "inverse_degree"),
            Path::new("labs/strided.toml"),
        )
        .expect("lab");
        let model = model_curve(
            Model::InverseDegree,
            Some(4000.0),
            &Metric::Gbs,
            &[1.0, 8.0],
        )
        .expect("a curve");
        assert_eq!(model, vec![(1.0, 4000.0), (8.0, 500.0)]);
        // A time grows with the degree.
        let time = model_curve(Model::InverseDegree, Some(2.0), &Metric::Time, &[4.0]);
        assert_eq!(time, Some(vec![(4.0, 8.0)]));
        let (scene, caption) = chart(&lab, &measured(), None).expect("a chart");
        let curve = scene
            .polylines
            .iter()
            .find(|p| p.class == "model")
            .expect("model");
        let first = curve.points.split(' ').next().expect("a vertex");
        let s1 = dot(&scene, "s1");
        assert_eq!(
            first,
            format!("{},{}", s1.cx, s1.cy),
            "through the degree-1 row"
        );
        assert!(caption.contains("1/degree model"), "{caption}");
    }

    /// Where `x` lies on the strided lab's axis (1 to 8, by powers of two).
    fn sweep_x(x: f64) -> f64 {
        Scale::log(1.0, 8.0, LEFT, WIDTH - RIGHT).pos(x)
    }

    #[test]
    fn a_huge_counter_draws_a_bounded_chart() {
        for value in [1.7e308, f64::MAX, 0.0, 5e-324] {
            let mut r = measured();
            for v in &mut r.variants {
                v.counter = Some(CounterResult {
                    unit: "cycles per load".into(),
                    per: 1,
                    values: vec![value],
                });
            }
            let (scene, _) = chart(&lab(), &r, None).expect("a chart");
            let ticks = scene.texts.iter().filter(|t| t.class == "tick").count();
            assert!(
                ticks <= crate::chart::MAX_TICKS + 3,
                "{value}: {ticks} ticks"
            );
            let coordinates = scene.dots.iter().flat_map(|d| [d.cx, d.cy]);
            let coordinates = coordinates.chain(scene.lines.iter().flat_map(|l| [l.y1, l.y2]));
            assert!(coordinates.clone().all(f64::is_finite), "{value}");
        }
    }

    #[test]
    fn without_a_finite_figure_or_a_plot_there_is_no_sweep() {
        let mut r = measured();
        for v in &mut r.variants {
            v.counter = Some(CounterResult {
                unit: "cycles".into(),
                per: 1,
                values: vec![f64::INFINITY],
            });
        }
        assert!(chart(&lab(), &r, None).is_none(), "nothing finite to draw");
        let text = LAB.split("[plot]").next().expect("head").to_string()
            + &LAB[LAB.find("[[variants]]").expect("variants")..];
        let without = LabSpec::parse(&text, Path::new("labs/strided.toml")).expect("lab");
        assert!(chart(&without, &measured(), None).is_none());
    }
}
