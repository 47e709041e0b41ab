//! Horizontal bars, one per row of the table in its order: the row's figure (GB/s, work rate,
//! the kernel's count or time) or its speed-up over a baseline row, a whisker over the range of
//! its stored samples, the ceiling or baseline as a dashed line, peers hatched, and a row
//! without a result written out as a gap rather than drawn as a zero.

use super::Beside;
use super::measure::{Metric, Role, Spread, ceiling_words, gap_reason, role, speedup};
use super::scale::{from_floor, round, zero_based};
use super::scene::{
    CHAR_WIDTH, FOREGROUND, MEASURED, PEER, Paint, Rect, Scene, Swatch, WIDTH, hatch,
};
use crate::format::format_sig;
use kernelbook_core::results::{LabResults, VariantResult};
use kernelbook_core::spec::LabSpec;

const PAD: f64 = 12.0;
/// Room right of the axis's end for half its last label.
const RIGHT: f64 = 28.0;
/// Where a row's label line sits below the row's top, then its bar.
const LABEL_BASELINE: f64 = 12.0;
const BAR_TOP: f64 = 17.0;
const BAR: f64 = 14.0;
/// With several series (a live run beside the recorded GPU, or every GPU compared), a thinner
/// bar per series.
const SERIES_BAR: f64 = 9.0;
const SERIES_GAP: f64 = 2.0;
const ROW_GAP: f64 = 9.0;

/// One row of the chart: a bar per series.
#[derive(Debug, Clone, PartialEq)]
pub struct BarRow {
    pub label: String,
    pub role: Role,
    /// The row's figure in each of [`Bars::series`], in its order, or why it has none.
    pub figures: Vec<Result<Spread, String>>,
}

/// One series of bars: a GPU's figures (this build's, the recorded one's, one of those compared).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// In the legend: "median" alone; "NVIDIA H200, recorded" beside a live run.
    pub name: String,
    /// Before its figure on a row's label line, after the first series' figure ("NVIDIA H200,
    /// recorded: 3604 GB/s"); `None` writes the figure alone.
    pub short: Option<String>,
    /// The bars' `data-series`: "measured", "live", "recorded", a GPU's folder.
    pub key: String,
    pub look: Look,
}

/// How a series' bars are painted.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Look {
    /// By the row's role: measured blue, peers hatched, the reference outlined.
    ByRole,
    /// A dashed outline: the recorded GPU beside a live run.
    Outline,
    /// Filled in one colour whatever the row: a GPU of several compared.
    Colour(&'static str),
}

impl Series {
    /// The one series of a chart of one GPU's results.
    pub fn measured() -> Series {
        Series {
            name: "median".into(),
            short: None,
            key: "measured".into(),
            look: Look::ByRole,
        }
    }
}

/// The line every bar is read against: the ceiling, or a speed-up's 1×.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    pub value: f64,
    /// "ceiling: driver memcpy".
    pub words: String,
}

/// Everything a bar chart draws.
#[derive(Debug, Clone, PartialEq)]
pub struct Bars {
    pub rows: Vec<BarRow>,
    /// What the value axis is: "GB/s", "× as fast as transpose_tiled".
    pub axis_label: String,
    /// How a figure is written: "3605 GB/s", "2.41×".
    pub unit: Unit,
    /// How the figures move when every time doubles ([`Metric::field`]).
    pub field: &'static str,
    pub reference: Option<Reference>,
    /// One series, or (beside a live run) this GPU's then the recorded GPU's.
    pub series: Vec<Series>,
    /// Where the value axis starts: zero, or the `floor` of a zoomed % of ceiling.
    pub axis_from: f64,
}

/// How a bar's figure is written.
#[derive(Debug, Clone, PartialEq)]
pub enum Unit {
    /// "3605 GB/s".
    Suffix(String),
    /// "2.41×".
    Times,
}

impl Unit {
    fn write(&self, v: f64) -> String {
        match self {
            Unit::Suffix(unit) => format!("{} {unit}", format_sig(v)),
            Unit::Times => format!("{v:.2}×"),
        }
    }

    /// The bare figure, where the unit is said once already.
    fn bare(&self, v: f64) -> String {
        match self {
            Unit::Suffix(_) => format_sig(v),
            Unit::Times => format!("{v:.2}×"),
        }
    }
}

/// The lab's rows in its order, each with `figure` of its result (or why there is none) and,
/// beside a live run, of the recorded GPU's.
fn rows(
    lab: &LabSpec,
    results: &LabResults,
    beside: Option<Beside<'_>>,
    reference: Option<&str>,
    figure: &dyn Fn(&LabResults, &VariantResult) -> Option<Spread>,
    metric: &str,
) -> Vec<BarRow> {
    let of = |results: &LabResults, name: &str| {
        let v = results.variant(name);
        v.and_then(|v| figure(results, v))
            .ok_or_else(|| gap_reason(v, metric))
    };
    lab.variants
        .iter()
        .filter(|spec| drawn(lab, &spec.name))
        .map(|spec| BarRow {
            label: spec.label().to_string(),
            role: role(lab, &spec.name, reference),
            figures: [results]
                .into_iter()
                .chain(beside.map(|b| b.results))
                .map(|results| of(results, &spec.name))
                .collect(),
        })
        .collect()
}

/// Whether the chart draws row `name`: every row, unless `[chart] rows` names those it draws.
fn drawn(lab: &LabSpec, name: &str) -> bool {
    let rows = lab.chart.as_ref().and_then(|c| c.rows.as_ref());
    rows.is_none_or(|rows| rows.iter().any(|r| r == name))
}

/// The labels of the rows the chart leaves to the table.
fn table_only(lab: &LabSpec) -> Vec<String> {
    lab.variants
        .iter()
        .filter(|spec| !drawn(lab, &spec.name))
        .map(|spec| spec.label().to_string())
        .collect()
}

/// One series, or beside a live run two: this GPU's bars, then the recorded GPU's outlines.
fn series(results: &LabResults, beside: Option<Beside<'_>>) -> Vec<Series> {
    let Some(beside) = beside else {
        return vec![Series::measured()];
    };
    vec![
        Series {
            name: results.provenance.device.name.clone(),
            short: None,
            key: "live".into(),
            look: Look::ByRole,
        },
        Series {
            name: beside.name(),
            short: Some(beside.name()),
            key: "recorded".into(),
            look: Look::Outline,
        },
    ]
}

/// One bar per row of the lab's figure ([`Metric::of`]), the ceiling as a dashed line.
pub fn bar_chart(
    lab: &LabSpec,
    results: &LabResults,
    beside: Option<Beside<'_>>,
    id: &str,
) -> (Scene, String) {
    let metric = Metric::of(results);
    let ceiling = results.ceiling.as_deref();
    let floor = lab.chart.as_ref().and_then(|c| c.floor);
    if let Some((floor, name)) = floor.zip(ceiling)
        && ceiling_figure(&metric, results, name).is_some()
    {
        return percent_chart(lab, results, beside, id, (f64::from(floor), name));
    }
    let label = metric.label();
    let figure = |_: &LabResults, v: &VariantResult| metric.spread(v);
    let reference = ceiling.and_then(|name| {
        let value = metric.spread(results.variant(name)?)?.median;
        Some(Reference {
            value,
            words: ceiling_words(lab.variant(name).map_or(name, |v| v.label())),
        })
    });
    let bars = Bars {
        rows: rows(lab, results, beside, ceiling, &figure, &label),
        axis_label: label.clone(),
        unit: Unit::Suffix(label.clone()),
        field: metric.field(),
        reference,
        series: series(results, beside),
        axis_from: 0.0,
    };
    let caption = caption(
        &bars,
        &format!("{} of each row of the table", capitalised(&label)),
        &table_only(lab),
    );
    (draw(&bars, id, "bars"), caption)
}

/// The ceiling row's median figure in `results`.
fn ceiling_figure(metric: &Metric, results: &LabResults, ceiling: &str) -> Option<f64> {
    let median = metric.spread(results.variant(ceiling)?)?.median;
    (median > 0.0).then_some(median)
}

/// Each row's % of the ceiling (each GPU's own, measured in the same run) on an axis that starts
/// at `floor` %, so that rows within a few percent of each other are told apart.
fn percent_chart(
    lab: &LabSpec,
    results: &LabResults,
    beside: Option<Beside<'_>>,
    id: &str,
    (floor, ceiling): (f64, &str),
) -> (Scene, String) {
    let metric = Metric::of(results);
    let figure = |results: &LabResults, v: &VariantResult| {
        let whole = ceiling_figure(&metric, results, ceiling)?;
        let s = metric.spread(v)?;
        Some(Spread {
            median: 100.0 * s.median / whole,
            min: 100.0 * s.min / whole,
            max: 100.0 * s.max / whole,
        })
    };
    let ceiling_label = lab.variant(ceiling).map_or(ceiling, |v| v.label());
    let bars = Bars {
        rows: rows(
            lab,
            results,
            beside,
            Some(ceiling),
            &figure,
            &metric.label(),
        ),
        axis_label: format!("% of ceiling ({ceiling_label}), axis from {floor} %"),
        unit: Unit::Suffix("% of ceiling".into()),
        field: "percent",
        reference: Some(Reference {
            value: 100.0,
            words: format!("{} (100 %)", ceiling_words(ceiling_label)),
        }),
        series: series(results, beside),
        axis_from: floor,
    };
    let caption = caption(
        &bars,
        &format!(
            "Each row's {} as a % of the ceiling's ({ceiling_label}, the same run), on an axis zoomed to start at {floor} % so that the last few percent can be told apart",
            metric.label()
        ),
        &table_only(lab),
    );
    (draw(&bars, id, "bars"), caption)
}

/// How many times as fast as the `[chart]`'s baseline each row ran; `None` where the baseline
/// has no time to compare with.
pub fn speedup_chart(
    lab: &LabSpec,
    results: &LabResults,
    beside: Option<Beside<'_>>,
    id: &str,
) -> Option<(Scene, String)> {
    let baseline = lab.chart.as_ref()?.baseline.as_deref()?;
    let base = results.variant(baseline)?;
    speedup(base, base)?;
    let base_label = lab.variant(baseline).map_or(baseline, |v| v.label());
    let figure = |results: &LabResults, v: &VariantResult| speedup(results.variant(baseline)?, v);
    let bars = Bars {
        rows: rows(lab, results, beside, Some(baseline), &figure, "time"),
        axis_label: format!("× as fast as {base_label}"),
        unit: Unit::Times,
        field: "speedup",
        reference: Some(Reference {
            value: 1.0,
            words: format!("1×: {base_label}"),
        }),
        series: series(results, beside),
        axis_from: 0.0,
    };
    let caption = caption(
        &bars,
        &format!(
            "How many times as fast as {base_label} each row ran (its median time over the row's)"
        ),
        &table_only(lab),
    );
    Some((draw(&bars, id, "speedup"), caption))
}

/// The caption: what the bars are, and what each way of drawing them means.
pub fn caption(bars: &Bars, what: &str, table_only: &[String]) -> String {
    let mut parts = vec![format!(
        "{what}: bars are medians, whiskers span the fastest to the slowest stored sample"
    )];
    if let Some(reference) = &bars.reference {
        parts.push(format!("the dashed line is {}", reference.words));
    }
    if bars.rows.iter().any(|r| r.role == Role::Peer) {
        parts.push("hatched bars are peers (a library's implementation)".into());
    }
    if let [live, recorded] = &bars.series[..]
        && recorded.look == Look::Outline
    {
        parts.push(format!(
            "solid bars are {}, dashed outlines the {}",
            live.name, recorded.name
        ));
    }
    if !table_only.is_empty() {
        parts.push(format!(
            "rows that count their work another way are in the table only ({})",
            table_only.join("; ")
        ));
    }
    format!("{}.", parts.join("; "))
}

/// `text` with its first letter in upper case.
pub fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// A row's bar paint by its role.
fn paint(role: Role, id: &str) -> Paint {
    match role {
        Role::Own => Paint::filled(MEASURED),
        Role::Peer => Paint {
            fill: hatch(id),
            ..Paint::stroked(PEER, 1.2)
        },
        Role::Reference => Paint {
            fill: FOREGROUND.into(),
            fill_opacity: 0.2,
            ..Paint::stroked(FOREGROUND, 1.2)
        },
    }
}

/// A bar's paint: by its series' look and the row's role.
fn series_paint(look: Look, role: Role, id: &str) -> Paint {
    match look {
        Look::ByRole => paint(role, id),
        Look::Outline => Paint::stroked(MEASURED, 1.4).dashed("3 2"),
        Look::Colour(colour) => Paint::filled(colour),
    }
}

/// `text` cut to `chars` characters, an ellipsis marking the cut.
pub fn fit(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        return text.to_string();
    }
    let kept: String = text.chars().take(chars.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// The scene: legend, then each row's label, figure and bar(s), then the value axis.
pub fn draw(bars: &Bars, id: &str, kind: &str) -> Scene {
    let top = bars
        .rows
        .iter()
        .flat_map(|r| &r.figures)
        .filter_map(|f| f.as_ref().ok())
        .map(|s| s.max.max(s.median))
        .chain(bars.reference.as_ref().map(|r| r.value))
        .fold(0.0, f64::max);
    let (scale, ticks) = if bars.axis_from > 0.0 {
        from_floor(bars.axis_from, top, PAD, WIDTH - RIGHT)
    } else {
        zero_based(top, PAD, WIDTH - RIGHT)
    };
    let mut scene = Scene::new(scale.data("x"));
    let y0 = scene.legend(PAD, 6.0, legend(bars, id)) + 4.0;
    let bar_height = match bars.series.len() {
        0 | 1 => BAR,
        n => n as f64 * SERIES_BAR + (n - 1) as f64 * SERIES_GAP,
    };
    let row_height = BAR_TOP + bar_height + ROW_GAP;
    for (i, row) in bars.rows.iter().enumerate() {
        draw_row(
            &mut scene,
            bars,
            row,
            y0 + i as f64 * row_height,
            (&scale, id),
        );
    }
    let end = y0 + bars.rows.len() as f64 * row_height;
    scene.grid(&ticks, true, (y0, end), end + 14.0);
    if let Some(reference) = &bars.reference {
        // Through each row's bars, not its label line.
        let x = scale.pos(reference.value);
        let paint = Paint::stroked(FOREGROUND, 1.5).dashed("4 3");
        for i in 0..bars.rows.len() {
            let bar_top = y0 + i as f64 * row_height + BAR_TOP;
            let span = (bar_top - 3.0, bar_top + bar_height + 3.0);
            scene.line("reference", (x, span.0), (x, span.1), paint.clone());
        }
    }
    scene.line(
        "axis",
        (PAD, end),
        (WIDTH - RIGHT, end),
        Paint::stroked(FOREGROUND, 1.0),
    );
    scene.text("label", (PAD, end + 30.0), "start", bars.axis_label.clone());
    scene.height = round(end + 38.0);
    scene.title = match kind {
        "speedup" => format!("speed-up, {}", bars.axis_label),
        _ => format!("{} of each row", bars.axis_label),
    };
    scene.desc = describe(bars);
    scene
}

/// One row: its label and figures on a line, then its bar (or the reason it has none).
fn draw_row(
    scene: &mut Scene,
    bars: &Bars,
    row: &BarRow,
    top: f64,
    (scale, id): (&super::scale::Scale, &str),
) {
    scene.text(
        "row-label",
        (PAD, top + LABEL_BASELINE),
        "start",
        fit(&row.label, 52),
    );
    scene.text(
        "value",
        (WIDTH - PAD, top + LABEL_BASELINE),
        "end",
        figure_words(bars, row),
    );
    let height = if bars.series.len() > 1 {
        SERIES_BAR
    } else {
        BAR
    };
    let mut y = top + BAR_TOP;
    for (figure, series) in row.figures.iter().zip(&bars.series) {
        let paint = series_paint(series.look, row.role, id);
        match figure {
            Ok(spread) if spread.median < bars.axis_from => {
                let words = format!(
                    "{}: below {} %, where the axis starts",
                    bars.unit.write(spread.median),
                    bars.axis_from
                );
                scene.note("gap", (PAD + 4.0, y + height - 2.0), words);
            }
            Ok(spread) => {
                let end = scale.pos(spread.median);
                scene.rects.push(Rect {
                    class: "bar",
                    x: PAD,
                    y: round(y),
                    width: round((end - PAD).max(0.0)),
                    height,
                    paint,
                    datum: Some(super::scene::Datum {
                        value: spread.median,
                        field: bars.field,
                        series: series.key.clone(),
                    }),
                    tip: Some(format!(
                        "{}: {} (samples {} – {})",
                        tip_label(bars, row, series),
                        bars.unit.write(spread.median),
                        bars.unit.bare(spread.min),
                        bars.unit.bare(spread.max)
                    )),
                });
                let lo = scale.pos(spread.min.max(bars.axis_from));
                let hi = scale.pos(spread.max);
                scene.whisker(true, lo, hi, y + height / 2.0, height / 2.0 - 1.0);
            }
            Err(why) => {
                let chars = ((WIDTH - 2.0 * PAD) / CHAR_WIDTH) as usize;
                scene.note("gap", (PAD + 4.0, y + height - 2.0), fit(why, chars));
            }
        }
        y += height + SERIES_GAP;
    }
}

/// Whose bar a tooltip is: the row's label, and its series' name where there are several.
fn tip_label(bars: &Bars, row: &BarRow, series: &Series) -> String {
    if bars.series.len() > 1 {
        format!("{}, {}", row.label, series.name)
    } else {
        row.label.clone()
    }
}

/// The figures on a row's label line, a series' after the first led by its `short` name:
/// "3605 GB/s", or "3605 GB/s · NVIDIA H200, recorded: 3604 GB/s" beside a live run; "–" for
/// a row without one.
fn figure_words(bars: &Bars, row: &BarRow) -> String {
    let words = |f: &Result<Spread, String>| {
        f.as_ref()
            .map_or_else(|_| "–".to_string(), |s| bars.unit.write(s.median))
    };
    row.figures
        .iter()
        .zip(&bars.series)
        .map(|(figure, series)| match &series.short {
            Some(name) => format!("{name}: {}", words(figure)),
            None => words(figure),
        })
        .collect::<Vec<_>>()
        .join(" · ")
}

fn legend(bars: &Bars, id: &str) -> Vec<(Swatch, String)> {
    let mut entries = Vec::new();
    for series in &bars.series {
        let swatch = Swatch::Box(series_paint(series.look, Role::Own, id));
        entries.push((swatch, series.name.clone()));
    }
    if bars.rows.iter().any(|r| r.role == Role::Peer) {
        entries.push((Swatch::Box(paint(Role::Peer, id)), "peer".into()));
    }
    entries.push((Swatch::Whisker, "min – max of the samples".into()));
    if let Some(reference) = &bars.reference {
        let paint = Paint::stroked(FOREGROUND, 1.5).dashed("4 3");
        entries.push((Swatch::Stroke(paint), reference.words.clone()));
    }
    entries
}

/// Every figure the chart draws, for a screen reader: each series' by its name where there
/// are several.
fn describe(bars: &Bars) -> String {
    let words = |figure: &Result<Spread, String>| match figure {
        Ok(s) => format!(
            "{} ({} – {})",
            bars.unit.write(s.median),
            bars.unit.bare(s.min),
            bars.unit.bare(s.max)
        ),
        Err(why) => why.clone(),
    };
    bars.rows
        .iter()
        .map(|row| {
            let figures: Vec<String> = match &bars.series[..] {
                [_] => row.figures.iter().map(words).collect(),
                series => row
                    .figures
                    .iter()
                    .zip(series)
                    .map(|(figure, series)| format!("{} {}", series.name, words(figure)))
                    .collect(),
            };
            format!("{}: {}", row.label, figures.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spread(median: f64) -> Result<Spread, String> {
        Ok(Spread {
            median,
            min: median * 0.9,
            max: median * 1.1,
        })
    }

    fn ladder() -> Bars {
        Bars {
            rows: vec![
                BarRow {
                    label: "memcpy".into(),
                    role: Role::Reference,
                    figures: vec![spread(4000.0)],
                },
                BarRow {
                    label: "naive".into(),
                    role: Role::Own,
                    figures: vec![spread(500.0)],
                },
                BarRow {
                    label: "torch (peer)".into(),
                    role: Role::Peer,
                    figures: vec![Err("not measured here: no torch".into())],
                },
            ],
            axis_label: "GB/s".into(),
            unit: Unit::Suffix("GB/s".into()),
            field: "gbs",
            reference: Some(Reference {
                value: 4000.0,
                words: "ceiling: memcpy".into(),
            }),
            series: vec![Series::measured()],
            axis_from: 0.0,
        }
    }

    #[test]
    fn bar_lengths_are_proportional_to_the_figures() {
        let scene = draw(&ladder(), "chart-t", "bars");
        let bars: Vec<&Rect> = scene.rects.iter().filter(|r| r.class == "bar").collect();
        assert_eq!(bars.len(), 2, "the row without a result has no bar");
        // The axis runs from 0 to 5000 GB/s over 600 units.
        assert_eq!(scene.axis.to, 5000.0);
        assert_eq!(bars[0].width, round(4000.0 / 5000.0 * 600.0));
        assert_eq!(bars[1].width, round(500.0 / 5000.0 * 600.0));
        assert_eq!(bars[1].datum.as_ref().map(|d| d.value), Some(500.0));
        // The ceiling is a dashed line at the ceiling bar's end.
        let line = scene
            .lines
            .iter()
            .find(|l| l.class == "reference")
            .expect("a line");
        assert_eq!(line.x1, bars[0].x + bars[0].width);
        assert!(line.paint.dash.is_some());
    }

    #[test]
    fn whiskers_span_the_samples_and_gaps_are_written_out() {
        let scene = draw(&ladder(), "chart-t", "bars");
        let naive = &scene
            .rects
            .iter()
            .filter(|r| r.class == "bar")
            .nth(1)
            .expect("bar");
        let y = naive.y + naive.height / 2.0;
        let whisker = scene
            .lines
            .iter()
            .find(|l| l.class == "whisker" && l.y1 == y && l.y2 == y)
            .expect("a whisker through the bar");
        assert_eq!(whisker.x1, round(PAD + 450.0 / 5000.0 * 600.0));
        assert_eq!(whisker.x2, round(PAD + 550.0 / 5000.0 * 600.0));
        let gap = scene.texts.iter().find(|t| t.class == "gap").expect("gap");
        assert_eq!(gap.text, "not measured here: no torch");
        assert!(gap.italic);
        assert!(scene.desc.contains("torch (peer): not measured here"));
    }

    #[test]
    fn peers_are_hatched_and_the_reference_is_outlined() {
        let id = "chart-t";
        assert_eq!(paint(Role::Peer, id).fill, "url(#chart-t-hatch)");
        assert_eq!(paint(Role::Reference, id).stroke, FOREGROUND);
        let caption = caption(&ladder(), "GB/s of each row", &["transpose".into()]);
        assert!(
            caption.contains("the dashed line is ceiling: memcpy"),
            "{caption}"
        );
        assert!(caption.contains("hatched bars are peers"), "{caption}");
        assert!(
            caption.contains("in the table only (transpose)"),
            "{caption}"
        );
    }

    #[test]
    fn a_zoomed_axis_starts_at_its_floor_and_says_so() {
        let mut bars = ladder();
        bars.axis_from = 80.0;
        bars.rows[0].figures = vec![Ok(Spread {
            median: 100.0,
            min: 98.0,
            max: 104.0,
        })];
        bars.rows[1].figures = vec![Ok(Spread {
            median: 95.0,
            min: 70.0,
            max: 96.0,
        })];
        bars.rows.push(BarRow {
            label: "slow".into(),
            role: Role::Own,
            figures: vec![spread(50.0)],
        });
        bars.reference = Some(Reference {
            value: 100.0,
            words: "ceiling: memcpy (100 %)".into(),
        });
        let scene = draw(&bars, "chart-t", "bars");
        // From 80 % to a round 105 % above the highest whisker, by steps of 5.
        assert_eq!((scene.axis.from, scene.axis.to), (80.0, 105.0));
        let drawn: Vec<&Rect> = scene.rects.iter().filter(|r| r.class == "bar").collect();
        assert_eq!(drawn.len(), 2, "the row below the floor has no bar");
        assert_eq!(drawn[1].width, round((95.0 - 80.0) / 25.0 * 600.0));
        let tick = scene
            .texts
            .iter()
            .find(|t| t.class == "tick")
            .expect("a tick");
        assert_eq!(tick.text, "80");
        let whisker = scene
            .lines
            .iter()
            .filter(|l| l.class == "whisker")
            .map(|l| l.x1.min(l.x2))
            .fold(f64::MAX, f64::min);
        assert_eq!(whisker, PAD, "a whisker below the floor is cut at the axis");
        let gap = scene
            .texts
            .iter()
            .find(|t| t.class == "gap" && t.text.contains("below"));
        assert!(gap.is_some_and(|g| g.text.contains("below 80 %, where the axis starts")));
    }

    #[test]
    fn beside_a_live_run_each_row_has_two_bars() {
        let mut bars = ladder();
        bars.series = vec![
            Series {
                name: "RTX".into(),
                short: None,
                key: "live".into(),
                look: Look::ByRole,
            },
            Series {
                name: "NVIDIA H200, recorded".into(),
                short: Some("NVIDIA H200, recorded".into()),
                key: "recorded".into(),
                look: Look::Outline,
            },
        ];
        for row in &mut bars.rows {
            row.figures.push(spread(3000.0));
        }
        let scene = draw(&bars, "chart-t", "bars");
        let series: Vec<&str> = scene
            .rects
            .iter()
            .filter_map(|r| r.datum.as_ref().map(|d| d.series.as_str()))
            .collect();
        assert_eq!(series, ["live", "recorded", "live", "recorded", "recorded"]);
        let value = scene
            .texts
            .iter()
            .find(|t| t.class == "value")
            .expect("value");
        assert_eq!(value.text, "4000 GB/s · NVIDIA H200, recorded: 3000 GB/s");
        let legend: Vec<&str> = scene
            .texts
            .iter()
            .filter(|t| t.class == "legend")
            .map(|t| t.text.as_str())
            .collect();
        assert_eq!(legend[..2], ["RTX", "NVIDIA H200, recorded"]);
        let caption = caption(&bars, "GB/s", &[]);
        assert!(
            caption.contains("solid bars are RTX, dashed outlines the NVIDIA H200, recorded"),
            "{caption}"
        );
    }

    #[test]
    fn n_series_give_each_row_n_bars_in_the_series_order() {
        let mut bars = ladder();
        bars.series = ["A", "B", "C"]
            .into_iter()
            .map(|name| Series {
                name: name.into(),
                short: None,
                key: "measured".into(),
                look: Look::ByRole,
            })
            .collect();
        for row in &mut bars.rows {
            row.figures = vec![spread(1000.0), Err("no result".into()), spread(2000.0)];
        }
        let scene = draw(&bars, "chart-t", "bars");
        let drawn: Vec<&Rect> = scene.rects.iter().filter(|r| r.class == "bar").collect();
        assert_eq!(drawn.len(), 6, "two bars in each of the three rows");
        assert_eq!(drawn[1].y - drawn[0].y, 2.0 * (SERIES_BAR + SERIES_GAP));
        assert!(drawn.iter().all(|r| r.height == SERIES_BAR));
        assert_eq!(drawn[1].width, 2.0 * drawn[0].width);
        let value = scene
            .texts
            .iter()
            .find(|t| t.class == "value")
            .expect("value");
        assert_eq!(value.text, "1000 GB/s · – · 2000 GB/s");
        assert!(
            scene
                .desc
                .starts_with("memcpy: A 1000 GB/s (900 – 1100), B no result, C")
        );
    }

    #[test]
    fn long_labels_are_cut() {
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abc", 4), "abc");
    }
}
