//! The charts of a built book, read back from its HTML: each chart's value axis and each mark's
//! figure, what that figure is (`data-field`), and the figure its place on the chart stands for.

use std::path::Path;

/// One mark of a chart: a bar or a dot.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub value: f64,
    /// "gbs", "rate", "time", "counter" or "speedup".
    pub field: String,
    pub series: String,
    /// The figure the mark's coordinate along the value axis stands for.
    pub drawn: f64,
}

/// One chart: the page and figure id it was found at, and its marks in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub page: String,
    pub id: String,
    pub width: f64,
    pub height: f64,
    /// How far apart two values may be and still be drawn at the same place: a tenth of an SVG
    /// unit along the axis.
    pub resolution: f64,
    pub log: bool,
    pub marks: Vec<Mark>,
}

/// The value of `name="..."` in a tag.
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let len = tag[start..].find('"')?;
    Some(&tag[start..start + len])
}

fn number(tag: &str, name: &str) -> f64 {
    attr(tag, name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no number {name} in {tag}"))
}

/// The chart's value axis, from its `<svg>` tag: the value at a coordinate.
struct Axis {
    orient: String,
    log: bool,
    from_px: f64,
    to_px: f64,
    from: f64,
    to: f64,
}

impl Axis {
    fn of(svg: &str) -> Axis {
        Axis {
            orient: attr(svg, "data-value-axis").expect("an axis").to_string(),
            log: attr(svg, "data-scale") == Some("log"),
            from_px: number(svg, "data-from-px"),
            to_px: number(svg, "data-to-px"),
            from: number(svg, "data-from"),
            to: number(svg, "data-to"),
        }
    }

    fn value_at(&self, px: f64) -> f64 {
        let t = (px - self.from_px) / (self.to_px - self.from_px);
        if self.log {
            self.from * (self.to / self.from).powf(t)
        } else {
            self.from + (self.to - self.from) * t
        }
    }

    /// Where a mark ends along the axis: a bar's far end, a dot's centre.
    fn coordinate(&self, tag: &str) -> f64 {
        match (tag.starts_with("<rect"), self.orient.as_str()) {
            (true, "x") => number(tag, "x") + number(tag, "width"),
            (true, _) => number(tag, "y"),
            (false, "x") => number(tag, "cx"),
            (false, _) => number(tag, "cy"),
        }
    }

    fn resolution(&self) -> f64 {
        let per_px = 0.1 / (self.to_px - self.from_px).abs();
        if self.log {
            per_px * (self.to / self.from).ln()
        } else {
            per_px * (self.to - self.from)
        }
    }
}

/// The marks of one chart's SVG.
fn marks(svg: &str, axis: &Axis) -> Vec<Mark> {
    svg.split('<')
        .skip(1)
        .map(|piece| format!("<{}", piece.split('>').next().unwrap_or_default()))
        .filter(|tag| {
            (tag.starts_with("<rect") || tag.starts_with("<circle"))
                && tag.contains(" data-value=\"")
        })
        .map(|tag| Mark {
            value: number(&tag, "data-value"),
            field: attr(&tag, "data-field").unwrap_or_default().to_string(),
            series: attr(&tag, "data-series").unwrap_or_default().to_string(),
            drawn: axis.value_at(axis.coordinate(&tag)),
        })
        .collect()
}

/// Every chart of the pages under `book_dir`, page by page in order.
pub fn charts_of(book_dir: &Path, pages: &[std::path::PathBuf]) -> Vec<Chart> {
    let mut found = Vec::new();
    for page in pages {
        let html = std::fs::read_to_string(book_dir.join(page)).expect("page");
        // A lab section's chart; a timeline (`{{#timeline}}`) draws one run's events, not
        // figures, and its layout is read back by the preprocessor's own tests.
        for figure in html
            .split("<figure class=\"kernelbook-chart")
            .skip(1)
            .filter(|figure| !figure.starts_with(" kernelbook-chart-timeline"))
        {
            let id = attr(figure, "id").expect("a chart's id").to_string();
            let svg_start = figure.find("<svg").expect("an svg");
            let svg = &figure[svg_start..figure.find("</svg>").expect("closed")];
            let tag = &svg[..svg.find('>').expect("tag")];
            let axis = Axis::of(tag);
            found.push(Chart {
                page: page.display().to_string(),
                id,
                width: number(tag, "width"),
                height: number(tag, "height"),
                resolution: axis.resolution(),
                log: axis.log,
                marks: marks(svg, &axis),
            });
        }
    }
    found
}

/// Whether a mark stands where its figure puts it, to the drawing's precision.
pub fn drawn_where_it_says(chart: &Chart, mark: &Mark) -> bool {
    let slack = chart.resolution * 0.6;
    if chart.log {
        (mark.drawn / mark.value).ln().abs() <= slack
    } else {
        (mark.drawn - mark.value).abs() <= slack + 1e-9
    }
}

/// What a figure becomes when every time doubles: bandwidths and rates halve, times double,
/// speed-ups and the kernels' own counts stay.
pub fn doubled(field: &str, value: f64) -> f64 {
    match field {
        "gbs" | "rate" => value / 2.0,
        "time" => value * 2.0,
        _ => value,
    }
}
