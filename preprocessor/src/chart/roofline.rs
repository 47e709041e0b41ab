//! The measured roofline of a lab with a `ridge`: work rate against arithmetic intensity, both
//! axes logarithmic. The slope is the memory row's measured bandwidth, the flat roof the compute
//! row's measured rate, and they meet at the ridge point; each row that does work and moves
//! bytes is a dot at its own intensity. The theoretical bandwidth (memory clock × bus width, from
//! the device properties) is a dashed slope beside the measured one. Nothing here is typed in:
//! a GPU with no measured compute rate gets no roofline.

use super::Beside;
use super::measure::{Metric, Spread, time_spread};
use super::scale::{Scale, format_number, format_power, power_span, power_ticks, round};
use super::scene::{Datum, Dot, FOREGROUND, MEASURED, Paint, Scene, Swatch, WIDTH};
use crate::format::{format_sig, from_giga, to_giga};
use kernelbook_core::results::{LabResults, VariantResult, figures};
use kernelbook_core::spec::LabSpec;

const LEFT: f64 = 64.0;
const RIGHT: f64 = 24.0;
const PLOT_HEIGHT: f64 = 320.0;
const BOTTOM: f64 = 48.0;

/// The two measured roofs, in work per second and bytes per second.
#[derive(Debug, Clone, PartialEq)]
pub struct Roof {
    pub bandwidth: Spread,
    pub compute: Spread,
}

impl Roof {
    /// The roofs measured in `results`: the ridge's memory row's bandwidth and its compute
    /// row's work rate, with the ranges of their samples.
    pub fn measured(lab: &LabSpec, results: &LabResults) -> Option<Roof> {
        let ridge = lab.ridge.as_ref()?;
        let memory = results.variant(&ridge.memory)?;
        let bytes = memory.bytes_moved as f64;
        let time = time_spread(memory)?;
        let per_second = |ms: f64| figures::per_second(bytes, ms);
        let bandwidth = Spread {
            median: per_second(time.median),
            min: per_second(time.max),
            max: per_second(time.min),
        };
        let compute = work_rate(results.variant(&ridge.compute)?)?;
        (bandwidth.median > 0.0 && compute.median > 0.0).then_some(Roof { bandwidth, compute })
    }

    /// Work per byte where the slope meets the flat roof (both medians are positive).
    pub fn ridge(&self) -> f64 {
        figures::ridge(self.compute.median, self.bandwidth.median).unwrap_or(f64::NAN)
    }

    /// The rate the roofs allow at `intensity` (work per byte).
    pub fn at(&self, intensity: f64) -> f64 {
        (self.bandwidth.median * intensity).min(self.compute.median)
    }
}

/// A row's work per second, with the range of its samples.
fn work_rate(v: &VariantResult) -> Option<Spread> {
    Metric::Rate {
        divisor: 1.0,
        label: String::new(),
    }
    .spread(v)
}

/// A row drawn at its own intensity: its work over the bytes it must move.
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    pub label: String,
    pub intensity: f64,
    pub rate: Spread,
}

/// Every measured row that does work and moves bytes.
pub fn kernels(lab: &LabSpec, results: &LabResults) -> Vec<Kernel> {
    results
        .variants
        .iter()
        .filter_map(|v| {
            let work = v.work.as_ref()?.count as f64;
            let intensity =
                Some(work / v.bytes_moved as f64).filter(|i| i.is_finite() && *i > 0.0)?;
            Some(Kernel {
                label: lab
                    .variant(&v.name)
                    .map_or(v.name.as_str(), |s| s.label())
                    .to_string(),
                intensity,
                rate: work_rate(v)?,
            })
        })
        .collect()
}

/// The axes' ends, as exponents: intensity by powers of two from well left of the ridge to
/// past the rightmost kernel, rate (divided by `divisor`, the axis's unit) by powers of ten
/// from the slopes' left ends to above the roof.
pub fn spans(
    roofs: &[&Roof],
    kernels: &[Kernel],
    theoretical: f64,
    divisor: f64,
) -> ((i32, i32), (i32, i32)) {
    let intensities = roofs
        .iter()
        .map(|r| r.ridge())
        .chain(kernels.iter().map(|k| k.intensity));
    let (lo, hi) = intensities.fold((f64::MAX, f64::MIN), |(lo, hi), i| (lo.min(i), hi.max(i)));
    let x = power_span(lo / 16.0, hi * 4.0, 2.0);
    let left = 2f64.powi(x.0);
    let slow = roofs
        .iter()
        .map(|r| r.bandwidth.min * left)
        .chain([theoretical * left])
        .filter(|v| *v > 0.0)
        .fold(f64::MAX, f64::min);
    let fast = roofs.iter().map(|r| r.compute.max).fold(0.0, f64::max) * 2.0;
    (x, power_span(slow / divisor, fast / divisor, 10.0))
}

/// The roofline; `None` where either roof was not measured.
pub fn chart(
    lab: &LabSpec,
    results: &LabResults,
    beside: Option<Beside<'_>>,
) -> Option<(Scene, String)> {
    let ridge = lab.ridge.as_ref()?;
    let roof = Roof::measured(lab, results)?;
    let unit = results.variant(&ridge.compute)?.work.as_ref()?.unit.clone();
    let (divisor, rate_label) = crate::format::rate_scale(results)?;
    let recorded = beside.and_then(|b| Some((b.name(), Roof::measured(lab, b.results)?)));
    let kernels = kernels(lab, results);
    let theoretical = from_giga(results.provenance.device.theoretical_gbs());
    let roofs: Vec<&Roof> = [&roof]
        .into_iter()
        .chain(recorded.as_ref().map(|(_, r)| r))
        .collect();
    let (x_span, y_span) = spans(&roofs, &kernels, theoretical, divisor);
    let x = Scale::log(
        2f64.powi(x_span.0),
        2f64.powi(x_span.1),
        LEFT,
        WIDTH - RIGHT,
    );
    let labels = Labels {
        memory: label(lab, &ridge.memory),
        compute: label(lab, &ridge.compute),
        unit,
        rate: rate_label,
        divisor,
    };
    let mut scene = Scene::new(x.data("x"));
    let top = scene.legend(LEFT, 6.0, legend(recorded.as_ref(), theoretical)) + 8.0;
    let bottom = top + PLOT_HEIGHT;
    let y = Scale::log(10f64.powi(y_span.0), 10f64.powi(y_span.1), bottom, top);
    scene.axis = y.data("y");
    let axes = Axes { x, y, top, bottom };
    draw_axes(&mut scene, &axes, (x_span, y_span), &labels);
    if let Some((_, recorded)) = &recorded {
        draw_roof(&mut scene, recorded, &axes, &labels, true);
    }
    draw_theoretical(&mut scene, theoretical, roof.compute.median, &axes, divisor);
    draw_roof(&mut scene, &roof, &axes, &labels, false);
    draw_kernels(&mut scene, &kernels, &axes, &labels);
    scene.height = round(bottom + BOTTOM);
    scene.title = format!(
        "measured roofline, {} against {} per byte",
        labels.rate, labels.unit
    );
    scene.desc = format!(
        "{}: {:.0} GB/s; {}: {} {}; ridge point {:.1} {} per byte",
        labels.memory,
        to_giga(roof.bandwidth.median),
        labels.compute,
        format_sig(roof.compute.median / divisor),
        labels.rate,
        roof.ridge(),
        labels.unit
    );
    Some((scene, caption(&labels, &roof, recorded.as_ref())))
}

fn label(lab: &LabSpec, name: &str) -> String {
    lab.variant(name).map_or(name, |v| v.label()).to_string()
}

/// What the chart calls its rows and units.
struct Labels {
    memory: String,
    compute: String,
    /// The work's unit: "FLOP".
    unit: String,
    /// The rate axis's unit: "TFLOP/s", with the `divisor` that gives it.
    rate: String,
    divisor: f64,
}

struct Axes {
    x: Scale,
    y: Scale,
    top: f64,
    bottom: f64,
}

impl Axes {
    /// The SVG point of a rate (per second) at an intensity.
    fn at(&self, intensity: f64, rate: f64, divisor: f64) -> (f64, f64) {
        (self.x.pos(intensity), self.y.pos(rate / divisor))
    }
}

fn caption(labels: &Labels, roof: &Roof, recorded: Option<&(String, Roof)>) -> String {
    let mut text = format!(
        "The measured roofline, both axes logarithmic: the slope is {}'s bandwidth, the flat roof {}'s rate, \
         meeting at the ridge point, {:.1} {} per byte. Dots are the kernels at their own intensity; \
         whiskers span the least to the greatest stored sample; the dashed slope is the theoretical bandwidth \
         (memory clock × bus width).",
        labels.memory,
        labels.compute,
        roof.ridge(),
        labels.unit
    );
    if let Some((name, _)) = recorded {
        text.push_str(&format!(" The faint dashed roof is the {name}."));
    }
    text
}

fn legend(recorded: Option<&(String, Roof)>, theoretical: f64) -> Vec<(Swatch, String)> {
    let mut entries = vec![
        (Swatch::Stroke(roof_paint()), "measured roof".to_string()),
        (
            Swatch::Stroke(theoretical_paint()),
            format!("theoretical {:.0} GB/s", to_giga(theoretical)),
        ),
        (
            Swatch::Dot(Paint::filled(MEASURED)),
            "kernel at its own intensity".into(),
        ),
        (Swatch::Whisker, "min – max of the samples".into()),
    ];
    if let Some((name, _)) = recorded {
        entries.push((Swatch::Stroke(recorded_paint()), name.clone()));
    }
    entries
}

fn roof_paint() -> Paint {
    Paint::stroked(MEASURED, 2.5)
}

fn theoretical_paint() -> Paint {
    Paint::stroked(FOREGROUND, 1.2).dashed("6 4")
}

fn recorded_paint() -> Paint {
    Paint::stroked(FOREGROUND, 1.5).dashed("3 3").faint(0.6)
}

fn draw_axes(
    scene: &mut Scene,
    axes: &Axes,
    (x_span, y_span): ((i32, i32), (i32, i32)),
    labels: &Labels,
) {
    let y_ticks = power_ticks(&axes.y, 10.0, y_span, format_number);
    scene.grid(&y_ticks, false, (LEFT, WIDTH - RIGHT), LEFT - 6.0);
    let x_ticks = power_ticks(&axes.x, 2.0, x_span, format_power);
    scene.grid(&x_ticks, true, (axes.top, axes.bottom), axes.bottom + 16.0);
    let axis = Paint::stroked(FOREGROUND, 1.0);
    scene.line(
        "axis",
        (LEFT, axes.bottom),
        (WIDTH - RIGHT, axes.bottom),
        axis.clone(),
    );
    scene.line("axis", (LEFT, axes.top), (LEFT, axes.bottom), axis);
    let x_label = format!("arithmetic intensity ({} per byte)", labels.unit);
    scene.text("label", (LEFT, axes.bottom + 38.0), "start", x_label);
    scene.text(
        "label",
        (LEFT + 6.0, axes.top + 4.0),
        "start",
        labels.rate.clone(),
    );
}

/// The measured slope and flat roof, the ridge where they meet, and a whisker over the slope's
/// range with a mark at its median.
fn draw_roof(scene: &mut Scene, roof: &Roof, axes: &Axes, labels: &Labels, recorded: bool) {
    let d = labels.divisor;
    let (left, right) = (axes.x.lo(), axes.x.hi());
    let ridge = roof.ridge();
    let corners = [
        axes.at(left, roof.at(left), d),
        axes.at(ridge, roof.at(ridge), d),
        axes.at(right, roof.at(right), d),
    ];
    if recorded {
        scene.polyline("roof recorded", &corners, recorded_paint());
        return;
    }
    scene.polyline("roof", &corners, roof_paint());
    let (ridge_x, ridge_y) = corners[1];
    let paint = Paint::stroked(FOREGROUND, 1.0).dashed("2 3");
    scene.line("ridge", (ridge_x, ridge_y), (ridge_x, axes.bottom), paint);
    let words = format!("ridge: {:.1} {} per byte", ridge, labels.unit);
    scene.text(
        "ridge-label",
        (ridge_x + 4.0, axes.bottom - 8.0),
        "start",
        words,
    );
    // The slope's own whisker, halfway (in ratio) between the left edge and the ridge.
    let at = (left * ridge).sqrt();
    let b = &roof.bandwidth;
    let (x, lo) = axes.at(at, b.min * at, d);
    let (_, hi) = axes.at(at, b.max * at, d);
    scene.whisker(false, lo, hi, x, 3.0);
    let (_, median) = axes.at(at, b.median * at, d);
    scene.dots.push(Dot {
        class: "point slope",
        cx: x,
        cy: median,
        r: 3.0,
        paint: Paint {
            fill: "none".into(),
            ..Paint::stroked(MEASURED, 1.5)
        },
        datum: Some(Datum {
            value: b.median * at / d,
            field: "rate",
            series: "measured",
        }),
        tip: format!(
            "{}: {:.0} GB/s (samples {:.0} – {:.0})",
            labels.memory,
            to_giga(b.median),
            to_giga(b.min),
            to_giga(b.max)
        ),
    });
    // Below the rising slope, right of its whisker; above the flat roof, at its right end.
    let words = format!("{:.0} GB/s measured", to_giga(b.median));
    scene.text("roof-label", (x + 8.0, median + 16.0), "start", words);
    let words = format!(
        "{} {} measured",
        format_sig(roof.compute.median / d),
        labels.rate
    );
    scene.text(
        "roof-label",
        (WIDTH - RIGHT - 4.0, corners[2].1 - 8.0),
        "end",
        words,
    );
}

/// The theoretical bandwidth's slope, up to the measured compute roof.
fn draw_theoretical(
    scene: &mut Scene,
    bytes_per_second: f64,
    compute: f64,
    axes: &Axes,
    divisor: f64,
) {
    if bytes_per_second <= 0.0 {
        return;
    }
    let left = axes.x.lo();
    let meets = (compute / bytes_per_second).min(axes.x.hi());
    let points = [
        axes.at(left, bytes_per_second * left, divisor),
        axes.at(meets, bytes_per_second * meets, divisor),
    ];
    scene.polyline("theoretical", &points, theoretical_paint());
}

fn draw_kernels(scene: &mut Scene, kernels: &[Kernel], axes: &Axes, labels: &Labels) {
    let d = labels.divisor;
    for k in kernels {
        let (x, median) = axes.at(k.intensity, k.rate.median, d);
        let (_, lo) = axes.at(k.intensity, k.rate.min, d);
        let (_, hi) = axes.at(k.intensity, k.rate.max, d);
        scene.whisker(false, lo, hi, x, 3.0);
        scene.dots.push(Dot {
            class: "point",
            cx: x,
            cy: median,
            r: 4.5,
            paint: Paint::filled(MEASURED),
            datum: Some(Datum {
                value: k.rate.median / d,
                field: "rate",
                series: "measured",
            }),
            tip: format!(
                "{}: {} {} at {} {} per byte",
                k.label,
                format_sig(k.rate.median / d),
                labels.rate,
                format_sig(k.intensity),
                labels.unit
            ),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::testing::{results, sampled};
    use kernelbook_core::results::Work;
    use std::path::Path;

    const LAB: &str = r#"
name = "wall"
title = "Wall"
bytes = "8"
ridge = { compute = "fma", memory = "copy" }
[[buffers]]
name = "src"
len = "2"
fill = "random"
[[buffers]]
name = "dst"
len = "2"
fill = "poison"
[check]
reference = "copy"
input = "src"
output = "dst"
[[variants]]
name = "copy"
builtin = "memcpy"
args = ["dst", "src"]
[[variants]]
name = "fma"
kernel = "k"
grid = [1]
block = [32]
args = ["dst", "src"]
work = { count = "8", unit = "FLOP" }
"#;

    fn lab() -> LabSpec {
        LabSpec::parse(LAB, Path::new("labs/wall.toml")).expect("lab")
    }

    /// 4 GB in 1 ms (4000 GB/s, 2000 to 5000 over the samples); 64 TFLOP in 1 s (64 TFLOP/s) at
    /// 4096 FLOP per byte.
    fn measured() -> LabResults {
        let mut fma = sampled("fma", 16_000_000_000, &[1000.0]);
        fma.work = Some(Work {
            count: 64_000_000_000_000,
            unit: "FLOP".into(),
        });
        let copy = sampled("copy", 4_000_000_000, &[1.0, 2.0, 0.8]);
        results("wall", None, vec![copy, fma])
    }

    #[test]
    fn the_roofs_meet_at_the_measured_ridge_point() {
        let roof = Roof::measured(&lab(), &measured()).expect("both roofs");
        assert_eq!(roof.bandwidth.median, 4e12);
        assert_eq!((roof.bandwidth.min, roof.bandwidth.max), (2e12, 5e12));
        assert_eq!(roof.compute.median, 64e12);
        assert_eq!(roof.ridge(), 16.0);
        assert_eq!(roof.at(4.0), 16e12, "memory-bound left of the ridge");
        assert_eq!(roof.at(4096.0), 64e12, "compute-bound right of it");
    }

    #[test]
    fn kernels_stand_at_their_own_intensity_and_the_axes_hold_everything() {
        let kernels = kernels(&lab(), &measured());
        assert_eq!(kernels.len(), 1, "the copy does no work");
        assert_eq!(kernels[0].intensity, 4000.0);
        let roof = Roof::measured(&lab(), &measured()).expect("roofs");
        let (x, y) = spans(&[&roof], &kernels, crate::format::TERA, crate::format::TERA);
        // From the ridge / 16 = 1 up to 4 × 4000: 2^0 to 2^14.
        assert_eq!(x, (0, 14));
        // From the theoretical slope at 1 FLOP per byte (1 TFLOP/s) to twice the roof.
        assert_eq!(y, (0, 3));
    }

    #[test]
    fn the_chart_draws_the_roof_through_the_ridge_and_the_kernel_on_it() {
        let (scene, caption) = chart(&lab(), &measured(), None).expect("a roofline");
        let roof = scene
            .polylines
            .iter()
            .find(|p| p.class == "roof")
            .expect("roof");
        let corners: Vec<(f64, f64)> = roof
            .points
            .split(' ')
            .map(|p| {
                let (x, y) = p.split_once(',').expect("x,y");
                (x.parse().expect("x"), y.parse().expect("y"))
            })
            .collect();
        assert_eq!(corners.len(), 3);
        let ridge = scene
            .lines
            .iter()
            .find(|l| l.class == "ridge")
            .expect("ridge");
        assert_eq!((ridge.x1, ridge.y1), corners[1]);
        // The flat roof is level, and the kernel sits on it.
        assert_eq!(corners[1].1, corners[2].1);
        let fma = scene
            .dots
            .iter()
            .find(|d| d.class == "point")
            .expect("kernel");
        assert_eq!(fma.cy, corners[1].1);
        assert_eq!(fma.datum.as_ref().map(|d| d.value), Some(64.0));
        assert!(
            caption.contains("ridge point, 16.0 FLOP per byte"),
            "{caption}"
        );
        let theoretical = scene
            .polylines
            .iter()
            .find(|p| p.class == "theoretical")
            .expect("theoretical slope");
        assert!(theoretical.paint.dash.is_some());
    }

    #[test]
    fn without_a_measured_compute_rate_there_is_no_roofline() {
        let mut r = measured();
        r.variants[1].outcome = kernelbook_core::results::Outcome::Unavailable {
            reason: "no".into(),
        };
        assert!(chart(&lab(), &r, None).is_none());
    }
}
