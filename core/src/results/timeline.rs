//! What a pipelined row's events say: when each chunk's copies and kernel ran on which stream,
//! relative to the row's first event, and how much the overlap saved against running the parts
//! one after another.

use serde::{Deserialize, Serialize};

/// One of the three parts of a chunk of a pipelined row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    /// The host → device copy from pinned memory (the copy engine of that direction).
    HostToDevice,
    Kernel,
    /// The device → host copy into pinned memory.
    DeviceToHost,
}

impl Part {
    pub const ALL: [Part; 3] = [Part::HostToDevice, Part::Kernel, Part::DeviceToHost];

    /// How the book names the part (and the engine it runs on).
    pub fn label(self) -> &'static str {
        match self {
            Part::HostToDevice => "host → device",
            Part::Kernel => "kernel",
            Part::DeviceToHost => "device → host",
        }
    }
}

/// One part of one chunk, as its two events timed it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Span {
    pub stream: u32,
    pub chunk: u32,
    pub part: Part,
    /// Milliseconds from the row's first event to the part's start event.
    pub start_ms: f64,
    /// Milliseconds from the row's first event to the part's end event.
    pub end_ms: f64,
}

impl Span {
    pub fn duration_ms(&self) -> f64 {
        self.end_ms - self.start_ms
    }
}

/// The events of one timed run of a pipelined row (the sample nearest the median).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    pub streams: u32,
    pub chunks: u32,
    /// Every part of every chunk, in the order they were issued.
    pub spans: Vec<Span>,
    /// From the first event to the last: the run's time.
    pub total_ms: f64,
}

impl Timeline {
    /// The time the parts take end to end, one after another: what no overlap would cost.
    pub fn serial_ms(&self) -> f64 {
        self.spans.iter().map(Span::duration_ms).sum()
    }

    /// The time the parts of one kind take together.
    pub fn part_ms(&self, part: Part) -> f64 {
        self.spans
            .iter()
            .filter(|s| s.part == part)
            .map(Span::duration_ms)
            .sum()
    }

    /// The serial sum over the run's time: 1 without overlap, up to 3 when the three parts
    /// run entirely side by side. `None` for a run of no time.
    pub fn overlap(&self) -> Option<f64> {
        (self.total_ms > 0.0).then(|| self.serial_ms() / self.total_ms)
    }

    /// The time overlap saved: the serial sum less the run's time.
    pub fn saved_ms(&self) -> f64 {
        self.serial_ms() - self.total_ms
    }

    /// The run's time if it were bound only by its longest kind of part (all copies of one
    /// direction, or all kernels, back to back): the best any number of streams can do.
    pub fn bound_ms(&self) -> f64 {
        Part::ALL
            .into_iter()
            .map(|part| self.part_ms(part))
            .fold(0.0, f64::max)
    }

    /// What is wrong with the spans, if anything: a part that ends before it starts, one
    /// outside the run, a stream or chunk out of range.
    pub fn problem(&self) -> Option<String> {
        if !self.total_ms.is_finite() || self.total_ms < 0.0 {
            return Some(format!("total {} ms", self.total_ms));
        }
        // Events on different streams are read against one first event: a few microseconds
        // of slack for the driver's rounding.
        let slack = 1e-3_f64.max(self.total_ms * 1e-6);
        self.spans.iter().find_map(|span| {
            let valid = span.start_ms.is_finite()
                && span.end_ms.is_finite()
                && span.start_ms >= -slack
                && span.end_ms >= span.start_ms
                && span.end_ms <= self.total_ms + slack
                && span.stream < self.streams
                && span.chunk < self.chunks;
            (!valid).then(|| {
                format!(
                    "chunk {} {} on stream {}: {} to {} ms of a {} ms run",
                    span.chunk,
                    span.part.label(),
                    span.stream,
                    span.start_ms,
                    span.end_ms,
                    self.total_ms
                )
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(stream: u32, chunk: u32, part: Part, start_ms: f64, end_ms: f64) -> Span {
        Span {
            stream,
            chunk,
            part,
            start_ms,
            end_ms,
        }
    }

    /// Two chunks on two streams, each part 1 ms: the second chunk's copy in runs beside the
    /// first's kernel.
    fn two_streams() -> Timeline {
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

    #[test]
    fn the_serial_sum_adds_every_part_and_the_overlap_divides_it_by_the_run() {
        let timeline = two_streams();
        assert_eq!(timeline.serial_ms(), 6.0);
        assert_eq!(timeline.overlap(), Some(1.5));
        assert_eq!(timeline.saved_ms(), 2.0);
        assert_eq!(timeline.part_ms(Part::Kernel), 2.0);
        assert_eq!(timeline.bound_ms(), 2.0);
        assert_eq!(timeline.problem(), None);
    }

    #[test]
    fn a_run_of_no_time_has_no_overlap_figure() {
        let timeline = Timeline {
            spans: Vec::new(),
            total_ms: 0.0,
            ..two_streams()
        };
        assert_eq!(timeline.overlap(), None);
    }

    #[test]
    fn a_part_past_the_run_or_on_an_unknown_stream_is_a_problem() {
        let mut late = two_streams();
        late.spans[5].end_ms = 9.0;
        assert!(
            late.problem()
                .expect("a problem")
                .contains("chunk 1 device → host")
        );
        let mut stray = two_streams();
        stray.spans[0].stream = 2;
        assert!(stray.problem().is_some());
        let mut backwards = two_streams();
        backwards.spans[1].end_ms = 0.5;
        assert!(backwards.problem().is_some());
    }

    #[test]
    fn a_timeline_reads_back_as_written() {
        let timeline = two_streams();
        let json = serde_json::to_string(&timeline).expect("json");
        assert!(json.contains("\"part\":\"host_to_device\""), "{json}");
        let back: Timeline = serde_json::from_str(&json).expect("a timeline");
        assert_eq!(back, timeline);
    }
}
