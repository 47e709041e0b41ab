//! The SVG of a chart as plain elements, each with its own fill and stroke, so that it reads the
//! same without the stylesheet: text and axes in `currentColor` (the theme's foreground, black
//! without a stylesheet), measured marks in one blue and peers in one orange that both keep a
//! 3:1 contrast on white and on mdBook's dark backgrounds, and every distinction also made by a
//! pattern, a dash or a label. `templates/chart.hbs` writes the elements out (escaped).

use super::scale::{AxisData, Tick, round};
use serde::Serialize;

pub const WIDTH: f64 = 640.0;
/// An estimate of the width of one character of the 12-pixel labels.
pub const CHAR_WIDTH: f64 = 6.6;

/// The measured marks: #2b79a2 has a contrast of 4.8 on white and 3.8 on the coal theme.
pub const MEASURED: &str = "#2b79a2";
/// Peers: #c2410c has 5.2 on white and 3.5 on coal.
pub const PEER: &str = "#c2410c";
pub const FOREGROUND: &str = "currentColor";
/// A colour per series where several GPUs are compared, a seventh reusing the first: blue,
/// orange, green, magenta, ochre, grey, each with a contrast of at least 4.2 on white and 3.3
/// on mdBook's coal, navy and ayu backgrounds.
pub const SERIES: [&str; 6] = [MEASURED, PEER, "#2f8549", "#a8459c", "#8a6d00", "#7a7a7a"];

/// How an element is painted, written out as presentation attributes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Paint {
    pub fill: String,
    pub fill_opacity: f64,
    pub stroke: &'static str,
    pub stroke_opacity: f64,
    pub stroke_width: f64,
    pub dash: Option<&'static str>,
}

impl Paint {
    pub fn filled(colour: &str) -> Paint {
        Paint {
            fill: colour.into(),
            fill_opacity: 1.0,
            stroke: "none",
            stroke_opacity: 1.0,
            stroke_width: 1.0,
            dash: None,
        }
    }

    pub fn stroked(colour: &'static str, width: f64) -> Paint {
        Paint {
            fill: "none".into(),
            fill_opacity: 1.0,
            stroke: colour,
            stroke_opacity: 1.0,
            stroke_width: width,
            dash: None,
        }
    }

    pub fn dashed(self, dash: &'static str) -> Paint {
        Paint {
            dash: Some(dash),
            ..self
        }
    }

    pub fn faint(self, opacity: f64) -> Paint {
        Paint {
            stroke_opacity: opacity,
            ..self
        }
    }
}

/// A line: an axis, a gridline, a whisker, a reference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Line {
    pub class: &'static str,
    pub x1: f64,
    pub y1: f64,
    pub x2: f64,
    pub y2: f64,
    pub paint: Paint,
}

/// What a mark stands for, for a reader of the SVG: its figure, how that figure moves when
/// every time doubles ([`super::measure::Metric::field`]), and which GPU's it is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Datum {
    pub value: f64,
    pub field: &'static str,
    /// "live" or "recorded" beside a live measurement, a GPU's folder where GPUs are compared;
    /// "measured" otherwise.
    pub series: String,
}

/// A bar, or a legend swatch (no datum).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rect {
    pub class: &'static str,
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
    pub paint: Paint,
    pub datum: Option<Datum>,
    /// The tooltip.
    pub tip: Option<String>,
}

/// A measured point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dot {
    pub class: &'static str,
    pub cx: f64,
    pub cy: f64,
    pub r: f64,
    pub paint: Paint,
    pub datum: Option<Datum>,
    pub tip: String,
}

/// A line through several points: a model's curve, a sweep's trace, a roof.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Polyline {
    pub class: &'static str,
    /// SVG `points`: "x,y x,y …".
    pub points: String,
    pub paint: Paint,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Text {
    pub class: &'static str,
    pub x: f64,
    pub y: f64,
    /// "start", "middle" or "end".
    pub anchor: &'static str,
    pub text: String,
    pub italic: bool,
}

/// Everything one chart's SVG holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scene {
    pub width: f64,
    pub height: f64,
    /// What a screen reader says: the chart in a line, then every figure it draws.
    pub title: String,
    pub desc: String,
    /// The axis the marks' values lie along.
    pub axis: AxisData,
    /// Gridlines, drawn under everything else.
    pub grid_lines: Vec<Line>,
    /// Axes, whiskers and reference lines, drawn over the bars and curves.
    pub lines: Vec<Line>,
    pub rects: Vec<Rect>,
    pub polylines: Vec<Polyline>,
    pub dots: Vec<Dot>,
    pub texts: Vec<Text>,
}

impl Scene {
    /// An empty scene; its height is set once everything is placed.
    pub fn new(axis: AxisData) -> Scene {
        Scene {
            width: WIDTH,
            height: 0.0,
            title: String::new(),
            desc: String::new(),
            axis,
            grid_lines: Vec::new(),
            lines: Vec::new(),
            rects: Vec::new(),
            polylines: Vec::new(),
            dots: Vec::new(),
            texts: Vec::new(),
        }
    }

    pub fn line(&mut self, class: &'static str, from: (f64, f64), to: (f64, f64), paint: Paint) {
        self.lines.push(Line {
            class,
            x1: round(from.0),
            y1: round(from.1),
            x2: round(to.0),
            y2: round(to.1),
            paint,
        });
    }

    pub fn text(
        &mut self,
        class: &'static str,
        at: (f64, f64),
        anchor: &'static str,
        text: String,
    ) {
        self.texts.push(Text {
            class,
            x: round(at.0),
            y: round(at.1),
            anchor,
            text,
            italic: false,
        });
    }

    /// Text that stands for something missing: italic, so that it does not read as a label.
    pub fn note(&mut self, class: &'static str, at: (f64, f64), text: String) {
        self.text(class, at, "start", text);
        if let Some(last) = self.texts.last_mut() {
            last.italic = true;
        }
    }

    pub fn polyline(&mut self, class: &'static str, points: &[(f64, f64)], paint: Paint) {
        let points = points
            .iter()
            .map(|(x, y)| format!("{},{}", round(*x), round(*y)))
            .collect::<Vec<_>>()
            .join(" ");
        self.polylines.push(Polyline {
            class,
            points,
            paint,
        });
    }

    /// A min–max whisker across `at` (horizontal if `horizontal`), with end caps.
    pub fn whisker(&mut self, horizontal: bool, lo: f64, hi: f64, at: f64, cap: f64) {
        let paint = Paint::stroked(FOREGROUND, 1.2);
        let point = |along: f64, across: f64| {
            if horizontal {
                (along, across)
            } else {
                (across, along)
            }
        };
        self.line("whisker", point(lo, at), point(hi, at), paint.clone());
        for end in [lo, hi] {
            self.line(
                "whisker",
                point(end, at - cap),
                point(end, at + cap),
                paint.clone(),
            );
        }
    }

    /// Gridlines and tick labels along the value axis (`vertical` gridlines for a horizontal
    /// axis), from `span.0` to `span.1` across it; labels sit at `label_at`.
    pub fn grid(&mut self, ticks: &[Tick], vertical: bool, span: (f64, f64), label_at: f64) {
        for tick in ticks {
            let (from, to, label, anchor) = if vertical {
                (
                    (tick.pos, span.0),
                    (tick.pos, span.1),
                    (tick.pos, label_at),
                    "middle",
                )
            } else {
                (
                    (span.0, tick.pos),
                    (span.1, tick.pos),
                    (label_at, tick.pos + 4.0),
                    "end",
                )
            };
            self.line(
                "grid",
                from,
                to,
                Paint::stroked(FOREGROUND, 1.0).faint(0.15),
            );
            self.text("tick", label, anchor, tick.label.clone());
        }
    }

    /// A row of legend entries from (`x`, `y`), wrapped at the chart's width; returns the y
    /// under the last row.
    pub fn legend(&mut self, x: f64, y: f64, entries: Vec<(Swatch, String)>) -> f64 {
        let (mut at_x, mut at_y) = (x, y);
        for (swatch, text) in entries {
            let width = 22.0 + text.chars().count() as f64 * CHAR_WIDTH + 16.0;
            if at_x > x && at_x + width > WIDTH - 8.0 {
                at_x = x;
                at_y += 18.0;
            }
            swatch.draw(self, at_x, at_y);
            self.text("legend", (at_x + 22.0, at_y + 9.0), "start", text);
            at_x += width;
        }
        at_y + 18.0
    }
}

/// What a legend entry shows beside its words.
#[derive(Debug, Clone, PartialEq)]
pub enum Swatch {
    /// A small filled or outlined box, painted like the marks it stands for.
    Box(Paint),
    /// A short line, painted like the line it stands for.
    Stroke(Paint),
    /// A whisker.
    Whisker,
    /// A dot.
    Dot(Paint),
    /// A cross (a row with no result).
    Cross,
}

impl Swatch {
    fn draw(self, scene: &mut Scene, x: f64, y: f64) {
        match self {
            Swatch::Box(paint) => scene.rects.push(Rect {
                class: "swatch",
                x: round(x),
                y: round(y),
                width: 16.0,
                height: 10.0,
                paint,
                datum: None,
                tip: None,
            }),
            Swatch::Stroke(paint) => scene.line("swatch", (x, y + 5.0), (x + 16.0, y + 5.0), paint),
            Swatch::Whisker => scene.whisker(true, x + 2.0, x + 14.0, y + 5.0, 4.0),
            Swatch::Dot(paint) => scene.dots.push(Dot {
                class: "swatch",
                cx: round(x + 8.0),
                cy: round(y + 5.0),
                r: 4.0,
                paint,
                datum: None,
                tip: String::new(),
            }),
            Swatch::Cross => scene.text("swatch gap", (x + 8.0, y + 9.0), "middle", "✕".into()),
        }
    }
}

/// The fill of a peer's bar: the chart's hatch pattern (defined in the template, named after the
/// chart's id).
pub fn hatch(id: &str) -> String {
    format!("url(#{id}-hatch)")
}
