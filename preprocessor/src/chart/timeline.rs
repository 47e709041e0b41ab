//! A pipelined row's timeline (`{{#timeline LAB.VARIANT}}`): one lane per stream and engine
//! (host → device copy, kernel, device → host copy), a bar per part of each chunk from its
//! start event to its end event, on a time axis from the run's first event. Coordinates are
//! computed in [`layout`], which a test reads back; [`svg`] writes them out as the other charts'
//! SVG (each element its own fill, the numbers in `data-` attributes).

use super::scale::{Tick, round, zero_based};
use kernelbook_core::results::timeline::{Part, Timeline};
use std::fmt::Write;

const WIDTH: f64 = 640.0;
const LEFT: f64 = 150.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 12.0;
const LANE: f64 = 18.0;
/// Room under the lanes for the time axis.
const AXIS: f64 = 34.0;

/// One lane: a stream's work of one kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Lane {
    pub stream: u32,
    pub part: Part,
    /// The lane's top edge.
    pub y: f64,
    pub label: String,
}

/// One part of one chunk.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    /// Index into [`Layout::lanes`].
    pub lane: usize,
    pub chunk: u32,
    pub x: f64,
    pub width: f64,
    pub start_ms: f64,
    pub end_ms: f64,
}

/// Everything the SVG places.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub width: f64,
    pub height: f64,
    pub lanes: Vec<Lane>,
    pub bars: Vec<Bar>,
    /// Along the time axis, in ms.
    pub ticks: Vec<Tick>,
    /// Where 0 ms and the axis's last tick lie, and that tick's time.
    pub from_px: f64,
    pub to_px: f64,
    pub to_ms: f64,
}

/// The fill of each part: the two copy engines in blue and teal, the kernel in orange, each at
/// least 3:1 against the light and the dark themes' backgrounds (the browser test checks it).
fn fill(part: Part) -> &'static str {
    match part {
        Part::HostToDevice => "#4e79a7",
        Part::Kernel => "#c8651b",
        Part::DeviceToHost => "#3d8c86",
    }
}

fn part_name(part: Part) -> &'static str {
    match part {
        Part::HostToDevice => "host_to_device",
        Part::Kernel => "kernel",
        Part::DeviceToHost => "device_to_host",
    }
}

/// The lanes and bars of `timeline`.
pub fn layout(timeline: &Timeline) -> Layout {
    let lanes: Vec<Lane> = (0..timeline.streams)
        .flat_map(|stream| Part::ALL.into_iter().map(move |part| (stream, part)))
        .enumerate()
        .map(|(i, (stream, part))| Lane {
            stream,
            part,
            y: TOP + i as f64 * LANE,
            label: format!("stream {stream} · {}", part.label()),
        })
        .collect();
    let end = timeline
        .spans
        .iter()
        .map(|s| s.end_ms)
        .fold(timeline.total_ms, f64::max);
    let (scale, ticks) = zero_based(end, LEFT, WIDTH - RIGHT);
    let bars = timeline
        .spans
        .iter()
        .filter_map(|span| {
            let lane = lanes
                .iter()
                .position(|l| l.stream == span.stream && l.part == span.part)?;
            let x = scale.pos(span.start_ms);
            Some(Bar {
                lane,
                chunk: span.chunk,
                x,
                // A part too short to see still shows as a sliver.
                width: round((scale.pos(span.end_ms) - x).max(0.5)),
                start_ms: span.start_ms,
                end_ms: span.end_ms,
            })
        })
        .collect();
    Layout {
        width: WIDTH,
        height: TOP + lanes.len() as f64 * LANE + AXIS,
        lanes,
        bars,
        ticks,
        from_px: LEFT,
        to_px: WIDTH - RIGHT,
        to_ms: scale.hi(),
    }
}

/// The figure: the SVG and a caption with the run's figures.
pub fn svg(id: &str, title: &str, timeline: &Timeline) -> String {
    let layout = layout(timeline);
    let mut out = String::new();
    let axis_y = TOP + layout.lanes.len() as f64 * LANE;
    // `write!` into a String cannot fail.
    let _ = write!(
        out,
        "<figure class=\"kernelbook-chart kernelbook-chart-timeline\" id=\"{id}\" data-kind=\"timeline\">\
         <svg class=\"kernelbook-chart-svg\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" \
         xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" font-family=\"sans-serif\" font-size=\"11\" \
         fill=\"currentColor\" data-value-axis=\"x\" data-from-px=\"{from}\" data-to-px=\"{to}\" \
         data-from=\"0\" data-to=\"{to_ms}\"><title>{title}</title>",
        w = layout.width,
        h = layout.height,
        from = layout.from_px,
        to = layout.to_px,
        to_ms = layout.to_ms,
        title = escape(title),
    );
    for tick in &layout.ticks {
        let _ = write!(
            out,
            "<line class=\"grid\" x1=\"{x}\" y1=\"{TOP}\" x2=\"{x}\" y2=\"{axis_y}\" stroke=\"currentColor\" stroke-opacity=\"0.15\"/>\
             <text class=\"tick\" x=\"{x}\" y=\"{y}\" text-anchor=\"middle\">{label}</text>",
            x = tick.pos,
            y = axis_y + 14.0,
            label = escape(&tick.label),
        );
    }
    let _ = write!(
        out,
        "<text class=\"axis-title\" x=\"{x}\" y=\"{y}\" text-anchor=\"middle\">ms from the first event</text>",
        x = (layout.from_px + layout.to_px) / 2.0,
        y = axis_y + 30.0,
    );
    for lane in &layout.lanes {
        let _ = write!(
            out,
            "<text class=\"lane\" x=\"{x}\" y=\"{y}\" text-anchor=\"end\" data-stream=\"{s}\" data-part=\"{p}\">{label}</text>",
            x = LEFT - 6.0,
            y = lane.y + LANE * 0.7,
            s = lane.stream,
            p = part_name(lane.part),
            label = escape(&lane.label),
        );
    }
    for bar in &layout.bars {
        let lane = &layout.lanes[bar.lane];
        let _ = write!(
            out,
            "<rect class=\"part\" x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\" fill=\"{fill}\" \
             stroke=\"#ffffff\" stroke-width=\"0.5\" data-stream=\"{s}\" data-part=\"{p}\" data-chunk=\"{c}\" \
             data-start-ms=\"{start}\" data-end-ms=\"{end}\"><title>chunk {c}, {what} on stream {s}: \
             {start_text} to {end_text}</title></rect>",
            x = bar.x,
            y = lane.y + 2.0,
            w = bar.width,
            h = LANE - 4.0,
            fill = fill(lane.part),
            s = lane.stream,
            p = part_name(lane.part),
            c = bar.chunk,
            start = bar.start_ms,
            end = bar.end_ms,
            what = lane.part.label(),
            start_text = crate::format::format_ms(bar.start_ms),
            end_text = crate::format::format_ms(bar.end_ms),
        );
    }
    let _ = write!(
        out,
        "</svg><figcaption>{}</figcaption></figure>",
        escape(&caption(timeline))
    );
    out
}

/// What the chart shows, in words, with the run's figures.
pub fn caption(timeline: &Timeline) -> String {
    let overlap = timeline
        .overlap()
        .map_or_else(|| "no".to_string(), |o| format!("{o:.2}×"));
    format!(
        "{} chunks on {} stream{}: each bar one chunk's copy or kernel, from the two events around \
         it. The run took {} against a serial sum of its parts of {} ({overlap} overlap); its \
         longest kind of part took {} in all.",
        timeline.chunks,
        timeline.streams,
        if timeline.streams == 1 { "" } else { "s" },
        crate::format::format_ms(timeline.total_ms),
        crate::format::format_ms(timeline.serial_ms()),
        crate::format::format_ms(timeline.bound_ms()),
    )
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernelbook_core::results::timeline::Span;

    fn timeline() -> Timeline {
        let span = |stream, chunk, part, start_ms, end_ms| Span {
            stream,
            chunk,
            part,
            start_ms,
            end_ms,
        };
        Timeline {
            streams: 2,
            chunks: 2,
            spans: vec![
                span(0, 0, Part::HostToDevice, 0.0, 1.0),
                span(0, 0, Part::Kernel, 1.0, 2.0),
                span(0, 0, Part::DeviceToHost, 2.0, 3.0),
                span(1, 1, Part::HostToDevice, 1.0, 2.0),
                span(1, 1, Part::Kernel, 2.0, 3.0),
                span(1, 1, Part::DeviceToHost, 3.0, 4.0),
            ],
            total_ms: 4.0,
        }
    }

    /// The time a coordinate stands for, read back as a reader of the SVG would.
    fn ms_at(layout: &Layout, x: f64) -> f64 {
        (x - layout.from_px) / (layout.to_px - layout.from_px) * layout.to_ms
    }

    #[test]
    fn one_lane_per_stream_and_engine_and_bars_where_the_events_put_them() {
        let layout = layout(&timeline());
        assert_eq!(layout.lanes.len(), 6);
        assert_eq!(layout.lanes[4].label, "stream 1 · kernel");
        assert_eq!(layout.bars.len(), 6);
        for bar in &layout.bars {
            assert!(
                (ms_at(&layout, bar.x) - bar.start_ms).abs() < 0.01,
                "{bar:?}"
            );
            let end = ms_at(&layout, bar.x + bar.width);
            assert!((end - bar.end_ms).abs() < 0.01, "{bar:?}");
        }
        // Chunk 1's copy in sits in stream 1's first lane, level with chunk 0's kernel.
        let (copy, kernel) = (&layout.bars[3], &layout.bars[1]);
        assert_eq!(layout.lanes[copy.lane].part, Part::HostToDevice);
        assert_eq!(layout.lanes[copy.lane].stream, 1);
        assert_eq!(copy.x, kernel.x);
        assert!(layout.lanes[copy.lane].y > layout.lanes[kernel.lane].y);
    }

    #[test]
    fn the_svg_carries_every_bar_with_its_times_and_a_caption_of_the_runs_figures() {
        let svg = svg("timeline-x", "A <pipeline>", &timeline());
        assert_eq!(svg.matches("<rect class=\"part\"").count(), 6);
        assert_eq!(svg.matches("<text class=\"lane\"").count(), 6);
        assert!(svg.contains("data-part=\"device_to_host\" data-chunk=\"1\" data-start-ms=\"3\" data-end-ms=\"4\""), "{svg}");
        assert!(svg.contains("<title>A &lt;pipeline&gt;</title>"));
        assert!(
            svg.contains("against a serial sum of its parts of 6.000 ms (1.50× overlap)"),
            "{svg}"
        );
        assert!(
            !svg.contains('\n'),
            "one line, so that Markdown keeps it one HTML block"
        );
    }
}
