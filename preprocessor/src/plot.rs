//! The SVG plot drawn beside a lab's table when the lab asks for one (`[plot]`): each measured
//! row at its `plot_x`, and the lab's model, if any, scaled to the ceiling measured in the same
//! run. Coordinates are computed here; `templates/plot.hbs` only places them.

use kernelbook_core::bandwidth::strided_copy_efficiency;
use kernelbook_core::results::{LabResults, VariantResult};
use kernelbook_core::spec::{LabSpec, Model};
use serde::Serialize;

const WIDTH: f64 = 640.0;
const HEIGHT: f64 = 360.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 48.0;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tick {
    pub pos: f64,
    pub label: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    /// The tooltip: "stride 8: 812 GB/s".
    pub label: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlotView {
    pub width: u32,
    pub height: u32,
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
    pub x_label: String,
    pub x_label_y: f64,
    pub x_ticks: Vec<Tick>,
    pub y_ticks: Vec<Tick>,
    pub points: Vec<Point>,
    /// SVG `points` of the model's polyline.
    pub model_points: Option<String>,
    pub model_label: Option<String>,
    pub legend_x: f64,
    /// What the y axis shows: "GB/s", "cycles per load", "TFLOP/s".
    pub y_label: String,
}

/// A plotted row's y value.
type YOf = Box<dyn Fn(&VariantResult) -> Option<f64>>;

/// What a plot's y axis shows, picked from what the results hold: the kernel's own count if
/// the variants report one, else their work rate if they declare work, else effective bandwidth.
fn y_metric(results: &LabResults) -> (String, YOf) {
    if let Some(unit) = results
        .variants
        .iter()
        .find_map(|v| v.counter.as_ref().map(|c| c.unit.clone()))
    {
        return (
            unit,
            Box::new(|v: &VariantResult| v.counter.as_ref()?.median()),
        );
    }
    // The same scale and unit as the table's rate column.
    if let Some((divisor, label)) = crate::render::rate_scale(results) {
        return (
            label,
            Box::new(move |v: &VariantResult| v.work_per_second().map(|r| r / divisor)),
        );
    }
    ("GB/s".into(), Box::new(VariantResult::effective_gbs))
}

/// The plot of `results` as `lab` describes it; `None` if the lab has no plot or nothing was
/// measured at a plotted position.
pub fn plot_view(lab: &LabSpec, results: &LabResults) -> Option<PlotView> {
    let spec = lab.plot.as_ref()?;
    let (y_label, y_of) = y_metric(results);
    let rows = plotted_rows(lab, results, &y_of);
    if rows.is_empty() {
        return None;
    }
    let ceiling = results.ceiling_gbs();
    let x_axis = XAxis::spanning(&rows, spec.log2_x);
    let curve = model_curve(spec.model, ceiling, &x_axis.samples());
    let y_top = rows
        .iter()
        .map(|row| row.y)
        .chain(curve.iter().flatten().map(|(_, y)| *y))
        .fold(0.0, f64::max);
    let y_axis = YAxis::up_to(y_top);
    Some(PlotView {
        width: WIDTH as u32,
        height: HEIGHT as u32,
        left: LEFT,
        right: WIDTH - RIGHT,
        top: TOP,
        bottom: HEIGHT - BOTTOM,
        x_label: spec.x_label.clone(),
        x_label_y: HEIGHT - 8.0,
        x_ticks: x_ticks(&rows, &x_axis, spec.x_label.contains("bytes")),
        y_ticks: y_axis.ticks(),
        points: rows
            .iter()
            .map(|row| Point {
                x: round(x_axis.pos(row.x)),
                y: round(y_axis.pos(row.y)),
                label: format!("{}: {} {y_label}", row.label, format_value(row.y)),
            })
            .collect(),
        model_points: curve.as_ref().map(|curve| {
            curve
                .iter()
                .map(|(x, y)| format!("{},{}", round(x_axis.pos(*x)), round(y_axis.pos(*y))))
                .collect::<Vec<_>>()
                .join(" ")
        }),
        model_label: curve.as_ref().and(spec.model).map(model_label),
        legend_x: WIDTH - RIGHT - 8.0,
        y_label,
    })
}

/// A measured row at its `plot_x`, with its label.
struct PlottedRow {
    x: f64,
    y: f64,
    label: String,
}

/// The variants that have a `plot_x` and a value to plot, both finite where they are drawn.
fn plotted_rows(lab: &LabSpec, results: &LabResults, y_of: &YOf) -> Vec<PlottedRow> {
    let log2 = lab.plot.as_ref().is_some_and(|p| p.log2_x);
    results
        .variants
        .iter()
        .filter_map(|v| {
            let x = lab.variant(&v.name)?.plot_x?;
            let y = y_of(v).filter(|y| y.is_finite())?;
            if !XAxis::along(log2, x).is_finite() {
                return None;
            }
            Some(PlottedRow {
                x,
                y,
                label: lab
                    .variant(&v.name)
                    .map_or(v.name.clone(), |s| s.label().to_string()),
            })
        })
        .collect()
}

/// The x axis: from the least to the greatest plotted position, spaced by powers of two if
/// the lab asks for it.
struct XAxis {
    log2: bool,
    min: f64,
    span: f64,
}

impl XAxis {
    fn spanning(rows: &[PlottedRow], log2: bool) -> Self {
        let (min, max) = rows.iter().fold((f64::MAX, f64::MIN), |(lo, hi), row| {
            let along = Self::along(log2, row.x);
            (lo.min(along), hi.max(along))
        });
        XAxis {
            log2,
            min,
            // One position alone still needs a width to divide by.
            span: if max > min { max - min } else { 1.0 },
        }
    }

    /// Where `x` lies along the axis, before scaling: `x`, or its log2.
    fn along(log2: bool, x: f64) -> f64 {
        if log2 { x.log2() } else { x }
    }

    /// The SVG x coordinate of `x`.
    fn pos(&self, x: f64) -> f64 {
        LEFT + (Self::along(self.log2, x) - self.min) / self.span * (WIDTH - LEFT - RIGHT)
    }

    /// 65 x values evenly spaced along the axis, to draw a curve through.
    fn samples(&self) -> Vec<f64> {
        (0..=64)
            .map(|i| self.min + self.span * f64::from(i) / 64.0)
            .map(|a| if self.log2 { a.exp2() } else { a })
            .collect()
    }
}

/// The y axis: from zero to a round value above everything plotted.
struct YAxis {
    step: f64,
    max: f64,
}

impl YAxis {
    fn up_to(top: f64) -> Self {
        let (step, max) = nice_axis(top);
        YAxis { step, max }
    }

    /// The SVG y coordinate of `y` (SVG's y grows downwards).
    fn pos(&self, y: f64) -> f64 {
        HEIGHT - BOTTOM - y / self.max * (HEIGHT - TOP - BOTTOM)
    }

    /// A gridline at every step from zero to the top (at most [`MAX_TICKS`] of them).
    fn ticks(&self) -> Vec<Tick> {
        (0..MAX_TICKS as u32)
            .map(|i| f64::from(i) * self.step)
            .take_while(|v| v.is_finite() && *v <= self.max + self.step / 2.0)
            .map(|v| Tick {
                pos: round(self.pos(v)),
                label: format_value(v),
            })
            .collect()
    }
}

/// One tick per plotted position. Sizes in bytes read better as KiB/MiB/GiB; ticks closer than
/// a label's width are skipped.
fn x_ticks(rows: &[PlottedRow], axis: &XAxis, in_bytes: bool) -> Vec<Tick> {
    let mut ticks: Vec<Tick> = Vec::new();
    let mut xs: Vec<f64> = rows.iter().map(|row| row.x).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    for x in xs {
        let pos = round(axis.pos(x));
        if !pos.is_finite() || ticks.last().is_some_and(|t| pos - t.pos < MIN_TICK_GAP) {
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

/// The lab's model at each of `xs`, scaled to the ceiling measured in the same run; none
/// without a model or a ceiling to scale it to.
fn model_curve(model: Option<Model>, ceiling: Option<f64>, xs: &[f64]) -> Option<Vec<(f64, f64)>> {
    let (model, ceiling) = model.zip(ceiling)?;
    Some(
        xs.iter()
            .map(|&x| match model {
                Model::SectorStridedCopy => (x, ceiling * strided_copy_efficiency(x)),
            })
            .collect(),
    )
}

/// The legend of the model's curve.
fn model_label(model: Model) -> String {
    match model {
        Model::SectorStridedCopy => "32-byte-sector model × measured ceiling".to_string(),
    }
}

/// The most gridlines an axis gets, whatever the data ([`nice_axis`] gives about six).
pub const MAX_TICKS: usize = 12;

/// A round step and the axis top it gives: about five gridlines above `top`. Both are finite
/// and positive for any `top`: where a round top would overflow, the axis ends at `top` itself
/// with one step.
pub fn nice_axis(top: f64) -> (f64, f64) {
    if top <= 0.0 || !top.is_finite() {
        return (1.0, 1.0);
    }
    let rough = top / 5.0;
    let magnitude = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= rough)
        .unwrap_or(10.0 * magnitude);
    let max = (top / step).ceil() * step;
    if step.is_finite() && step > 0.0 && max.is_finite() && max / step <= MAX_TICKS as f64 {
        (step, max)
    } else {
        (top, top)
    }
}

fn round(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// The least distance between two x-axis labels, in SVG units.
const MIN_TICK_GAP: f64 = 44.0;

/// A size in bytes with a binary prefix: "8 KiB", "64 MiB", "4 GiB".
fn format_bytes(bytes: f64) -> String {
    let units = [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in units {
        let size = size as f64;
        if bytes >= size {
            return format!(
                "{} {unit}",
                format_number((bytes / size * 10.0).round() / 10.0)
            );
        }
    }
    format!("{} B", format_number(bytes))
}

/// A y value: whole numbers from 10 up, one or two decimals below.
fn format_value(v: f64) -> String {
    if v == 0.0 || v.abs() >= 10.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn format_number(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes_get_binary_prefixes() {
        assert_eq!(format_bytes(8192.0), "8 KiB");
        assert_eq!(format_bytes(50331648.0), "48 MiB");
        assert_eq!(format_bytes(4294967296.0), "4 GiB");
        assert_eq!(format_bytes(512.0), "512 B");
    }

    #[test]
    fn axes_get_round_steps() {
        assert_eq!(nice_axis(4100.0), (1000.0, 5000.0));
        assert_eq!(nice_axis(870.0), (200.0, 1000.0));
        assert_eq!(nice_axis(0.0), (1.0, 1.0));
    }

    #[test]
    fn degenerate_axes_stay_finite_and_bounded() {
        for top in [
            f64::MAX,
            1.7e308,
            f64::MIN_POSITIVE,
            5e-324,
            f64::NAN,
            f64::INFINITY,
            -1.0,
        ] {
            let (step, max) = nice_axis(top);
            assert!(step.is_finite() && step > 0.0 && max.is_finite(), "{top}");
            let ticks = YAxis::up_to(top).ticks();
            assert!(
                !ticks.is_empty() && ticks.len() <= MAX_TICKS,
                "{top}: {ticks:?}"
            );
            assert!(ticks.iter().all(|t| t.pos.is_finite()), "{top}");
        }
    }
}

#[cfg(test)]
mod plot_tests {
    use super::*;
    use kernelbook_core::expr::Params;
    use kernelbook_core::results::{
        DeviceInfo, FORMAT_VERSION, Outcome, Provenance, VariantResult,
    };
    use kernelbook_core::stats::{StopReason, Summary};
    use std::path::Path;

    const LAB: &str = r#"
name = "strided"
title = "Strided"
bytes = "2 * n * 4"
ceiling = "s1"
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
"#;

    fn measured(name: &str, median_ms: f64) -> VariantResult {
        VariantResult {
            name: name.into(),
            kernel: Some("k".into()),
            source_hash: None,
            compile_flags: vec![],
            bytes_moved: 8_000_000,
            launch: None,
            resources: None,
            outcome: Outcome::Measured {
                summary: Summary::of(&[median_ms]).expect("summary"),
                stop_reason: StopReason::Converged,
                noisy: false,
                samples_ms: vec![median_ms],
            },
            implementation: None,
            work: None,
            counter: None,
            checked: None,
            other_kernels: Default::default(),
        }
    }

    fn results() -> LabResults {
        LabResults {
            format_version: FORMAT_VERSION,
            lab: "strided".into(),
            params: Params::from([("n".into(), 1024)]),
            provenance: Provenance {
                device: DeviceInfo {
                    backend: "cuda".into(),
                    name: "GPU".into(),
                    uuid: "GPU-0".into(),
                    arch: "sm_90".into(),
                    compute_capability: (9, 0),
                    sm_count: 1,
                    l2_bytes: 1,
                    memory_bytes: 1,
                    memory_clock_khz: 1,
                    bus_width_bits: 1,
                    sm_clock_khz: 1,
                    max_threads_per_sm: 2048,
                    max_shared_bytes_per_block: 1,
                    warp_size: 32,
                    registers_per_sm: None,
                    shared_bytes_per_sm: None,
                },
                driver_version: "13.0".into(),
                compiler_version: "NVRTC 13.0".into(),
                runner_version: "0".into(),
                measured_at: "2026-11-29T00:00:00Z".into(),
                wall_seconds: 1.0,
                input_seed: 1,
                timing_method: "events".into(),
                clocks: None,
            },
            ceiling: Some("s1".into()),
            // 4000 GB/s at stride 1, 1000 GB/s at stride 8.
            variants: vec![measured("s1", 0.002), measured("s8", 0.008)],
            profile: None,
        }
    }

    #[test]
    fn measured_points_and_the_model_share_the_scale() {
        let lab = LabSpec::parse(LAB, Path::new("labs/strided.toml")).expect("lab");
        let view = plot_view(&lab, &results()).expect("a plot");
        assert_eq!(view.points.len(), 2);
        assert_eq!(
            view.x_ticks
                .iter()
                .map(|t| t.label.as_str())
                .collect::<Vec<_>>(),
            ["1", "8"]
        );
        assert_eq!(view.points[0].label, "s1: 4000 GB/s");
        // The model starts at the ceiling: its first vertex is the stride-1 point.
        let model = view.model_points.expect("model");
        let first = model.split(' ').next().expect("a vertex");
        assert_eq!(first, format!("{},{}", view.points[0].x, view.points[0].y));
        // At stride 8 the model predicts 2/9 of the ceiling (889 GB/s): below the 1000 measured.
        let last = model.split(' ').next_back().expect("a vertex");
        let model_y: f64 = last
            .split(',')
            .nth(1)
            .and_then(|y| y.parse().ok())
            .expect("y");
        assert!(
            model_y > view.points[1].y,
            "lower on the page means higher bandwidth"
        );
        let html = crate::render::Templates::new()
            .render_lab(&crate::render::lab_view(
                &lab,
                &kernelbook_runner::LabOutcome::Measured {
                    results: results(),
                    cached: false,
                },
            ))
            .expect("render");
        assert!(html.contains("<svg viewBox=\"0 0 640 360\""), "{html}");
        assert_eq!(html.matches("<circle class=\"measured\"").count(), 2);
    }

    #[test]
    fn a_huge_counter_draws_a_bounded_plot() {
        let lab = LabSpec::parse(LAB, Path::new("labs/strided.toml")).expect("lab");
        for value in [1.7e308, f64::MAX, 0.0, 5e-324] {
            let mut r = results();
            for v in &mut r.variants {
                v.counter = Some(kernelbook_core::results::CounterResult {
                    unit: "cycles per load".into(),
                    per: 1,
                    values: vec![value],
                });
            }
            let view = plot_view(&lab, &r).expect("a plot");
            assert!(
                !view.y_ticks.is_empty() && view.y_ticks.len() <= MAX_TICKS,
                "{value}: {} ticks",
                view.y_ticks.len()
            );
            let coordinates = view.y_ticks.iter().map(|t| t.pos);
            let coordinates = coordinates.chain(view.points.iter().flat_map(|p| [p.x, p.y]));
            assert!(coordinates.clone().all(f64::is_finite), "{value}");
        }
    }

    #[test]
    fn rows_without_a_finite_value_are_not_drawn() {
        let lab = LabSpec::parse(LAB, Path::new("labs/strided.toml")).expect("lab");
        let mut r = results();
        r.variants[1].counter = Some(kernelbook_core::results::CounterResult {
            unit: "cycles".into(),
            per: 1,
            values: vec![],
        });
        r.variants[0].counter = Some(kernelbook_core::results::CounterResult {
            unit: "cycles".into(),
            per: 1,
            values: vec![f64::INFINITY],
        });
        assert!(plot_view(&lab, &r).is_none(), "nothing finite to draw");
    }

    #[test]
    fn a_lab_without_a_plot_has_none() {
        let text = LAB.split("[plot]").next().expect("head").to_string()
            + &LAB[LAB.find("[[variants]]").expect("variants")..];
        let lab = LabSpec::parse(&text, Path::new("labs/strided.toml")).expect("lab");
        assert!(plot_view(&lab, &results()).is_none());
    }
}
