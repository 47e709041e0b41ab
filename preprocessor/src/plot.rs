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
    let measured: Vec<(f64, f64, String)> = results
        .variants
        .iter()
        .filter_map(|v| {
            let x = lab.variant(&v.name)?.plot_x?;
            let gbs = y_of(v)?;
            Some((
                x,
                gbs,
                lab.variant(&v.name)
                    .map_or(v.name.clone(), |s| s.label().to_string()),
            ))
        })
        .collect();
    if measured.is_empty() {
        return None;
    }
    let ceiling = results.ceiling_gbs();
    let model = |x: f64| -> Option<f64> {
        match spec.model? {
            Model::SectorStridedCopy => Some(ceiling? * strided_copy_efficiency(x)),
        }
    };

    let to_axis = |x: f64| if spec.log2_x { x.log2() } else { x };
    let (x_min, x_max) = measured
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), (x, _, _)| {
            (lo.min(to_axis(*x)), hi.max(to_axis(*x)))
        });
    let x_span = if x_max > x_min { x_max - x_min } else { 1.0 };
    let sx = |x: f64| LEFT + (to_axis(x) - x_min) / x_span * (WIDTH - LEFT - RIGHT);

    let samples: Vec<f64> = (0..=64)
        .map(|i| x_min + x_span * f64::from(i) / 64.0)
        .map(|a| if spec.log2_x { a.exp2() } else { a })
        .collect();
    let y_top = measured
        .iter()
        .map(|(_, gbs, _)| *gbs)
        .chain(samples.iter().filter_map(|x| model(*x)))
        .fold(0.0, f64::max);
    let (step, y_max) = nice_axis(y_top);
    let sy = |gbs: f64| HEIGHT - BOTTOM - gbs / y_max * (HEIGHT - TOP - BOTTOM);

    // Sizes in bytes read better as KiB/MiB/GiB; ticks closer than a label's width are skipped.
    let in_bytes = spec.x_label.contains("bytes");
    let mut x_ticks: Vec<Tick> = Vec::new();
    let mut xs: Vec<f64> = measured.iter().map(|(x, _, _)| *x).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    for x in xs {
        let pos = round(sx(x));
        if x_ticks.last().is_some_and(|t| pos - t.pos < MIN_TICK_GAP) {
            continue;
        }
        let label = if in_bytes {
            format_bytes(x)
        } else {
            format_number(x)
        };
        x_ticks.push(Tick { pos, label });
    }
    let y_ticks = (0..)
        .map(|i| f64::from(i) * step)
        .take_while(|v| *v <= y_max + step / 2.0)
        .map(|v| Tick {
            pos: round(sy(v)),
            label: format_value(v),
        })
        .collect();
    let points = measured
        .iter()
        .map(|(x, gbs, label)| Point {
            x: round(sx(*x)),
            y: round(sy(*gbs)),
            label: format!("{label}: {} {y_label}", format_value(*gbs)),
        })
        .collect();
    let model_points = spec.model.and(ceiling).map(|_| {
        samples
            .iter()
            .filter_map(|x| model(*x).map(|gbs| format!("{},{}", round(sx(*x)), round(sy(gbs)))))
            .collect::<Vec<_>>()
            .join(" ")
    });
    let model_label = spec.model.and(ceiling).map(|_| match spec.model {
        Some(Model::SectorStridedCopy) => "32-byte-sector model × measured ceiling".to_string(),
        None => String::new(),
    });
    Some(PlotView {
        width: WIDTH as u32,
        height: HEIGHT as u32,
        left: LEFT,
        right: WIDTH - RIGHT,
        top: TOP,
        bottom: HEIGHT - BOTTOM,
        x_label: spec.x_label.clone(),
        x_label_y: HEIGHT - 8.0,
        x_ticks,
        y_ticks,
        points,
        model_points,
        model_label,
        legend_x: WIDTH - RIGHT - 8.0,
        y_label,
    })
}

/// A round step and the axis top it gives: about five gridlines above `top`.
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
    (step, (top / step).ceil() * step)
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
    fn a_lab_without_a_plot_has_none() {
        let text = LAB.split("[plot]").next().expect("head").to_string()
            + &LAB[LAB.find("[[variants]]").expect("variants")..];
        let lab = LabSpec::parse(&text, Path::new("labs/strided.toml")).expect("lab");
        assert!(plot_view(&lab, &results()).is_none());
    }
}
