//! The measured roofline of a lab with a `ridge`: work rate against arithmetic intensity, both
//! axes logarithmic. The slope is the memory row's measured bandwidth, the flat roof the compute
//! row's measured rate, and they meet at the ridge point; each row that does work and moves
//! bytes is a dot at its own intensity. The theoretical bandwidth (memory clock × bus width, from
//! the device properties) is a dashed slope beside the measured one. Nothing here is typed in:
//! a GPU with no measured compute rate gets no roofline.

use super::Beside;
use super::measure::{Metric, Spread, time_spread};
use super::scale::{Scale, format_number, format_power, power_span, power_ticks, round};
use super::scene::{
    CHAR_WIDTH, Datum, Dot, FOREGROUND, MEASURED, Paint, Scene, Swatch, Text, WIDTH,
};
use crate::format::{format_sig, from_giga, to_giga};
use kernelbook_core::results::{LabResults, VariantResult, figures};
use kernelbook_core::spec::LabSpec;

const LEFT: f64 = 64.0;
const RIGHT: f64 = 24.0;
const PLOT_HEIGHT: f64 = 320.0;
const BOTTOM: f64 = 48.0;

/// The measured roofs, in work per second and bytes per second.
#[derive(Debug, Clone, PartialEq)]
pub struct Roof {
    pub bandwidth: Spread,
    pub compute: Spread,
    /// The ridge's `tensor` row's work rate (the tensor cores'), a second flat roof above the
    /// first, where the lab names one and it was measured.
    pub tensor: Option<Spread>,
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
        let tensor = ridge
            .tensor
            .as_ref()
            .and_then(|name| work_rate(results.variant(name)?))
            .filter(|tensor| tensor.median > compute.median);
        (bandwidth.median > 0.0 && compute.median > 0.0).then_some(Roof {
            bandwidth,
            compute,
            tensor,
        })
    }

    /// Work per byte where the slope meets the flat roof (both medians are positive).
    pub fn ridge(&self) -> f64 {
        figures::ridge(self.compute.median, self.bandwidth.median).unwrap_or(f64::NAN)
    }

    /// Work per byte where the slope meets the tensor roof, if there is one.
    pub fn tensor_ridge(&self) -> Option<f64> {
        figures::ridge(self.tensor.as_ref()?.median, self.bandwidth.median)
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

/// Where a row's bytes come from, and so what its intensity means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Traffic {
    /// Nsight Compute's DRAM bytes read and written in that row's profile: what it really
    /// moved through HBM.
    Dram,
    /// The bytes the lab says it must move (no counters for the row): each input read once,
    /// each output written once, the least any kernel of the lab could move.
    Compulsory,
}

/// A row drawn at its own intensity: its work over the bytes it moved.
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    /// The row's name, short enough to write beside its dot.
    pub name: String,
    pub label: String,
    pub intensity: f64,
    pub traffic: Traffic,
    pub rate: Spread,
}

/// Every measured row that does work and moves bytes, at its HBM intensity where its profile
/// counted DRAM bytes and at its compulsory intensity where not. A row that does no work (the
/// copy) has no intensity: its bandwidth is the slope.
pub fn kernels(lab: &LabSpec, results: &LabResults) -> Vec<Kernel> {
    results
        .variants
        .iter()
        .filter_map(|v| {
            let work = v.work.as_ref()?.count as f64;
            let (intensity, traffic) = match figures::dram_intensity(results, &v.name) {
                Some(intensity) => (intensity, Traffic::Dram),
                None => (work / v.bytes_moved as f64, Traffic::Compulsory),
            };
            let intensity = Some(intensity).filter(|i| i.is_finite() && *i > 0.0)?;
            Some(Kernel {
                name: v.name.clone(),
                label: lab
                    .variant(&v.name)
                    .map_or(v.name.as_str(), |s| s.label())
                    .to_string(),
                intensity,
                traffic,
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
        .flat_map(|r| std::iter::once(r.ridge()).chain(r.tensor_ridge()))
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
    let fast = roofs
        .iter()
        .flat_map(|r| std::iter::once(r.compute.max).chain(r.tensor.as_ref().map(|t| t.max)))
        .fold(0.0, f64::max)
        * 2.0;
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
    let traffic: Vec<Traffic> = kernels.iter().map(|k| k.traffic).collect();
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
        memory_name: ridge.memory.clone(),
        compute: label(lab, &ridge.compute),
        unit,
        rate: rate_label,
        divisor,
    };
    let mut scene = Scene::new(x.data("x"));
    let top = scene.legend(LEFT, 6.0, legend(recorded.as_ref(), theoretical, &traffic)) + 8.0;
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
    draw_tensor_roof(&mut scene, &roof, &axes, &labels);
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
    if let (Some(tensor), Some(ridge)) = (&roof.tensor, roof.tensor_ridge()) {
        scene.desc.push_str(&format!(
            "; tensor roof: {} {}; its ridge point {:.1} {} per byte",
            format_sig(tensor.median / divisor),
            labels.rate,
            ridge,
            labels.unit
        ));
    }
    for k in &kernels {
        scene.desc.push_str(&format!(
            "; {}: {} {} at {} {} per byte ({})",
            k.name,
            format_sig(k.rate.median / divisor),
            labels.rate,
            format_sig(k.intensity),
            labels.unit,
            match k.traffic {
                Traffic::Dram => "DRAM counters",
                Traffic::Compulsory => "compulsory bytes",
            }
        ));
    }
    Some((scene, caption(&labels, &roof, recorded.as_ref())))
}

fn label(lab: &LabSpec, name: &str) -> String {
    lab.variant(name).map_or(name, |v| v.label()).to_string()
}

/// What the chart calls its rows and units.
struct Labels {
    memory: String,
    /// The memory row's name, short enough for the slope's label.
    memory_name: String,
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
         meeting at the ridge point, {:.1} {} per byte. The {} row does no arithmetic, so it has no dot: its \
         bandwidth is the slope. Each other row is a dot at its own intensity, its work over the bytes it \
         moved: filled where Nsight Compute counted that row's DRAM bytes read and written (its intensity \
         against HBM), hollow where the row has no counters and stands at its compulsory intensity (every \
         input read once, every output written once); whiskers span the least to the greatest stored sample; the dashed slope is the theoretical bandwidth \
         (memory clock × bus width).",
        labels.memory,
        labels.compute,
        roof.ridge(),
        labels.unit,
        labels.memory_name
    );
    if let Some(ridge) = roof.tensor_ridge() {
        text.push_str(&format!(
            " The upper flat roof is the tensor cores' measured rate (a BF16 product): the slope \
             continues up to it, and its ridge point moves right to {ridge:.1} {} per byte, so a row \
             between the two ridge points, compute-bound under the FP32 roof, is memory-bound under this one.",
            labels.unit
        ));
    }
    if let Some((name, _)) = recorded {
        text.push_str(&format!(" The faint dashed roof is the {name}."));
    }
    text
}

fn legend(
    recorded: Option<&(String, Roof)>,
    theoretical: f64,
    traffic: &[Traffic],
) -> Vec<(Swatch, String)> {
    let mut entries = vec![
        (Swatch::Stroke(roof_paint()), "measured roof".to_string()),
        (
            Swatch::Stroke(theoretical_paint()),
            format!("theoretical {:.0} GB/s", to_giga(theoretical)),
        ),
    ];
    if traffic.contains(&Traffic::Dram) {
        entries.push((
            Swatch::Dot(dram_paint()),
            "at its HBM intensity (DRAM counters)".into(),
        ));
    }
    if traffic.contains(&Traffic::Compulsory) {
        entries.push((
            Swatch::Dot(compulsory_paint()),
            "at its compulsory intensity (no counters)".into(),
        ));
    }
    entries.push((Swatch::Whisker, "min – max of the samples".into()));
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
    // The copy does no arithmetic, so it has no intensity and no dot of its own: its
    // bandwidth is the slope, named in the empty corner above it (the rungs left of the ridge
    // stand below it).
    let b = &roof.bandwidth;
    let words = format!(
        "slope: {}, {:.0} GB/s measured ({:.0} – {:.0} over the samples)",
        labels.memory_name,
        to_giga(b.median),
        to_giga(b.min),
        to_giga(b.max)
    );
    scene.text("roof-label", (LEFT + 6.0, axes.top + 22.0), "start", words);
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

/// The tensor roof: the slope continued from the FP32 ridge up to the tensor rate, the flat
/// tensor roof to the right edge, and its ridge marked like the first.
fn draw_tensor_roof(scene: &mut Scene, roof: &Roof, axes: &Axes, labels: &Labels) {
    let (Some(tensor), Some(ridge)) = (&roof.tensor, roof.tensor_ridge()) else {
        return;
    };
    let d = labels.divisor;
    let first = roof.ridge();
    let corners = [
        axes.at(first, roof.bandwidth.median * first, d),
        axes.at(ridge, tensor.median, d),
        axes.at(axes.x.hi(), tensor.median, d),
    ];
    scene.polyline(
        "roof tensor",
        &corners,
        Paint::stroked(MEASURED, 1.8).dashed("8 3"),
    );
    let (ridge_x, ridge_y) = corners[1];
    let paint = Paint::stroked(FOREGROUND, 1.0).dashed("2 3");
    scene.line("ridge", (ridge_x, ridge_y), (ridge_x, axes.bottom), paint);
    let words = format!("tensor ridge: {:.1} {} per byte", ridge, labels.unit);
    scene.text(
        "ridge-label",
        (ridge_x + 4.0, axes.bottom - 24.0),
        "start",
        words,
    );
    let words = format!(
        "{} {} measured (tensor cores, BF16)",
        format_sig(tensor.median / d),
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
    let mut taken: Vec<Area> = scene.texts.iter().map(Area::of_text).collect();
    for k in kernels {
        let (x, median) = axes.at(k.intensity, k.rate.median, d);
        taken.push(Area::around(x, median, 5.0));
    }
    for k in kernels {
        let (x, median) = axes.at(k.intensity, k.rate.median, d);
        let (_, lo) = axes.at(k.intensity, k.rate.min, d);
        let (_, hi) = axes.at(k.intensity, k.rate.max, d);
        scene.whisker(false, lo, hi, x, 3.0);
        let (class, paint, bytes) = match k.traffic {
            Traffic::Dram => ("point", dram_paint(), "Nsight Compute's DRAM bytes"),
            Traffic::Compulsory => (
                "point compulsory",
                compulsory_paint(),
                "compulsory bytes, no counters",
            ),
        };
        scene.dots.push(Dot {
            class,
            cx: x,
            cy: median,
            r: 4.5,
            paint,
            datum: Some(Datum {
                value: k.rate.median / d,
                field: "rate",
                series: "measured".into(),
            }),
            tip: format!(
                "{}: {} {} at {} {} per byte ({bytes})",
                k.label,
                format_sig(k.rate.median / d),
                labels.rate,
                format_sig(k.intensity),
                labels.unit
            ),
        });
        let (at, anchor) = free_place(&taken, x, median, &k.name);
        taken.push(Area::of(at, anchor, &k.name));
        scene.text("kernel-label", at, anchor, k.name.clone());
    }
}

fn dram_paint() -> Paint {
    Paint::filled(MEASURED)
}

fn compulsory_paint() -> Paint {
    Paint {
        fill: "none".into(),
        ..Paint::stroked(MEASURED, 1.5)
    }
}

/// A label's place beside a dot at (`x`, `y`): right of it, left, above or below, the first
/// that overlaps no other label or dot (right of it where none is free).
fn free_place(taken: &[Area], x: f64, y: f64, words: &str) -> ((f64, f64), &'static str) {
    let places = [
        ((x + 8.0, y + 4.0), "start"),
        ((x - 8.0, y + 4.0), "end"),
        ((x, y - 9.0), "middle"),
        ((x, y + 17.0), "middle"),
    ];
    places
        .into_iter()
        .find(|(at, anchor)| {
            let area = Area::of(*at, anchor, words);
            !taken.iter().any(|t| t.overlaps(&area))
        })
        .unwrap_or(places[0])
}

/// The box a label or a dot covers, in SVG pixels.
#[derive(Debug, Clone, Copy)]
struct Area {
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
}

impl Area {
    /// A 12-pixel label written at `at` (its baseline) with `anchor`.
    fn of(at: (f64, f64), anchor: &str, words: &str) -> Area {
        let width = words.chars().count() as f64 * CHAR_WIDTH;
        let left = match anchor {
            "end" => at.0 - width,
            "middle" => at.0 - width / 2.0,
            _ => at.0,
        };
        Area {
            left,
            right: left + width,
            top: at.1 - 10.0,
            bottom: at.1 + 2.0,
        }
    }

    fn of_text(text: &Text) -> Area {
        Area::of((text.x, text.y), text.anchor, &text.text)
    }

    fn around(x: f64, y: f64, r: f64) -> Area {
        Area {
            left: x - r,
            right: x + r,
            top: y - r,
            bottom: y + r,
        }
    }

    fn overlaps(&self, other: &Area) -> bool {
        self.left < other.right
            && other.left < self.right
            && self.top < other.bottom
            && other.top < self.bottom
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::testing::{results, sampled};
    use kernelbook_core::results::{KernelProfile, ProfileRun, ProfiledVariant, Work};
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
            .find(|d| d.class == "point compulsory")
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

    /// A tensor row at 8 × the FMA rate: its roof is drawn above the first, and its ridge
    /// point stands 8 × further right against the same slope.
    #[test]
    fn a_tensor_row_draws_a_second_roof_and_moves_the_ridge() {
        let lab = LAB
            .replace(
                r#"ridge = { compute = "fma", memory = "copy" }"#,
                r#"ridge = { compute = "fma", memory = "copy", tensor = "tensor" }"#,
            )
            .replace(
                "[[variants]]\nname = \"fma\"",
                "[[variants]]\nname = \"tensor\"\nkernel = \"k\"\ngrid = [1]\nblock = [32]\n\
                 args = [\"dst\", \"src\"]\nwork = { count = \"8\", unit = \"FLOP\" }\n\
                 [[variants]]\nname = \"fma\"",
            );
        let lab = LabSpec::parse(&lab, Path::new("labs/wall.toml")).expect("lab");
        let mut results = measured();
        let mut tensor = sampled("tensor", 16_000_000_000, &[125.0]);
        tensor.work = Some(Work {
            count: 64_000_000_000_000,
            unit: "FLOP".into(),
        });
        results.variants.push(tensor);
        let roof = Roof::measured(&lab, &results).expect("roofs");
        assert_eq!(roof.ridge(), 16.0);
        assert_eq!(roof.tensor_ridge(), Some(128.0));
        let (scene, caption) = chart(&lab, &results, None).expect("a roofline");
        let tensor = scene
            .polylines
            .iter()
            .find(|p| p.class == "roof tensor")
            .expect("the tensor roof");
        assert_eq!(tensor.points.split(' ').count(), 3);
        let ridges = scene.lines.iter().filter(|l| l.class == "ridge").count();
        assert_eq!(ridges, 2, "a ridge mark for each roof");
        assert!(
            caption.contains("moves right to 128.0 FLOP per byte"),
            "{caption}"
        );
        // Without the tensor row measured, the chart is the one-roof chart.
        let (scene, _) = chart(&lab, &measured(), None).expect("a roofline");
        assert!(!scene.polylines.iter().any(|p| p.class == "roof tensor"));
    }

    /// `measured()` with Nsight Compute's DRAM bytes for the FMA row: 32 TB read and written.
    fn profiled() -> LabResults {
        let mut r = measured();
        r.profile = Some(ProfileRun {
            kernels: vec![ProfiledVariant {
                variant: "fma".into(),
                counters: KernelProfile {
                    dram_bytes: Some(32e12),
                    ..KernelProfile::default()
                },
            }],
            ..ProfileRun::default()
        });
        r
    }

    /// The intensity a dot's x stands for on the chart's log₂ axis, read from two of its ticks.
    fn intensity_at(scene: &Scene, px: f64) -> f64 {
        let ticks: Vec<(f64, f64)> = scene
            .texts
            .iter()
            .filter(|t| t.class == "tick" && t.anchor == "middle")
            .map(|t| {
                let v = match t.text.strip_prefix("1/") {
                    Some(d) => 1.0 / d.parse::<f64>().expect("tick"),
                    None => t.text.parse().expect("tick"),
                };
                (t.x, v)
            })
            .collect();
        let ((x0, v0), (x1, v1)) = (ticks[0], ticks[ticks.len() - 1]);
        v0 * (v1 / v0).powf((px - x0) / (x1 - x0))
    }

    #[test]
    fn a_row_with_dram_counters_stands_at_its_hbm_intensity_and_is_labelled() {
        let kernels = kernels(&lab(), &profiled());
        assert_eq!(kernels[0].traffic, Traffic::Dram);
        assert_eq!(kernels[0].intensity, 2.0, "64 TFLOP over 32 TB");
        let (scene, caption) = chart(&lab(), &profiled(), None).expect("a roofline");
        let dot = scene.dots.iter().find(|d| d.class == "point").expect("fma");
        assert!((intensity_at(&scene, dot.cx) / 2.0 - 1.0).abs() < 0.01);
        assert!(dot.tip.contains("DRAM bytes"), "{}", dot.tip);
        assert!(
            scene
                .texts
                .iter()
                .any(|t| t.class == "kernel-label" && t.text == "fma")
        );
        assert!(
            caption.contains("The copy row does no arithmetic"),
            "{caption}"
        );
        // The copy gets no dot: only the FMA row stands for a figure.
        assert_eq!(scene.dots.iter().filter(|d| d.datum.is_some()).count(), 1);
    }

    #[test]
    fn a_row_without_counters_is_drawn_hollow_at_its_compulsory_intensity() {
        let (scene, _) = chart(&lab(), &measured(), None).expect("a roofline");
        let dot = scene
            .dots
            .iter()
            .find(|d| d.class == "point compulsory")
            .expect("fma, without counters");
        assert_eq!(dot.paint.fill, "none");
        assert!((intensity_at(&scene, dot.cx) / 4000.0 - 1.0).abs() < 0.01);
        assert!(dot.tip.contains("compulsory"), "{}", dot.tip);
        let legend: Vec<&str> = scene
            .texts
            .iter()
            .filter(|t| t.class == "legend")
            .map(|t| t.text.as_str())
            .collect();
        assert!(legend.contains(&"at its compulsory intensity (no counters)"));
        assert!(!legend.contains(&"at its HBM intensity (DRAM counters)"));
    }

    #[test]
    fn labels_take_a_free_place_beside_their_dot() {
        let taken = [Area::of((108.0, 104.0), "start", "naive")];
        // Right of the dot at (100, 100) is taken: the label goes to its left.
        assert_eq!(free_place(&taken, 100.0, 100.0, "tiled_8").1, "end");
        assert_eq!(free_place(&[], 100.0, 100.0, "tiled_8").1, "start");
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
