//! A pipelined row's work as the device runs it ([`super::Op::Pipeline`]): the staged host
//! input (pinned) split into chunks, each copied into the input buffer, run through a kernel
//! and copied from the output buffer back into the staging memory it came from, the chunks
//! dealt round-robin onto several streams; and the spans its events give.
//!
//! Each chunk's three parts are in order on its stream, and chunks touch disjoint bytes, so
//! writing a chunk's result over its own input in the staging memory is safe on any number of
//! streams.

use super::{DeviceError, DeviceErrorKind, KernelArg, KernelId};
use kernelbook_core::results::LaunchShape;
use kernelbook_core::results::timeline::{Part, Span};

/// One chunk's kernel launch (its arguments name the chunk).
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkLaunch {
    pub kernel: KernelId,
    pub shape: LaunchShape,
    pub args: Vec<KernelArg>,
}

/// See the [module documentation](self).
#[derive(Debug, Clone, PartialEq)]
pub struct Pipeline {
    pub streams: u32,
    pub input: super::BufferId,
    pub output: super::BufferId,
    /// Bytes each chunk copies in each direction; chunk `c` covers
    /// `c * chunk_bytes .. (c + 1) * chunk_bytes` of the staging memory and of both buffers.
    pub chunk_bytes: usize,
    pub chunks: Vec<ChunkLaunch>,
}

impl Pipeline {
    /// The stream chunk `chunk` is issued on.
    pub fn stream_of(&self, chunk: usize) -> usize {
        chunk % self.streams.max(1) as usize
    }

    /// The staging bytes the pipeline needs.
    pub fn bytes(&self) -> usize {
        self.chunk_bytes * self.chunks.len()
    }

    /// The events a run records: a start and an end for each part of each chunk, numbered
    /// [`Pipeline::mark`].
    pub fn marks(&self) -> usize {
        self.chunks.len() * Part::ALL.len() * 2
    }

    /// The number of `part`'s start event (its end is one more) of chunk `chunk`.
    pub fn mark(chunk: usize, part: Part) -> usize {
        let index = Part::ALL.iter().position(|p| *p == part).unwrap_or(0);
        (chunk * Part::ALL.len() + index) * 2
    }

    /// The spans of a run from each mark's time after the run's first event.
    pub fn spans(&self, mark_ms: &[f64]) -> Result<Vec<Span>, DeviceError> {
        if mark_ms.len() != self.marks() {
            return Err(DeviceError::new(
                "pipeline",
                format!("{} event times for {} events", mark_ms.len(), self.marks()),
            ));
        }
        let mut spans = Vec::with_capacity(self.marks() / 2);
        for chunk in 0..self.chunks.len() {
            for part in Part::ALL {
                let start = Pipeline::mark(chunk, part);
                spans.push(Span {
                    stream: self.stream_of(chunk) as u32,
                    chunk: chunk as u32,
                    part,
                    start_ms: mark_ms[start],
                    end_ms: mark_ms[start + 1],
                });
            }
        }
        Ok(spans)
    }
}

/// The event times a run would give on a GPU with one copy engine per direction and kernels
/// that fill it (one at a time), each part of a chunk taking `part_ms` (host → device, kernel,
/// device → host): every engine takes the parts in the order they were issued, every stream
/// its own in order. With the run's time, the last event's. The fake device's timeline, and
/// the arithmetic of the chapter's prediction.
pub fn simulate(pipeline: &Pipeline, part_ms: [f64; 3]) -> (Vec<f64>, f64) {
    let mut marks = vec![0.0; pipeline.marks()];
    let mut stream_free = vec![0.0_f64; pipeline.streams.max(1) as usize];
    let mut engine_free = [0.0_f64; 3];
    for chunk in 0..pipeline.chunks.len() {
        let stream = pipeline.stream_of(chunk);
        for (engine, part) in Part::ALL.into_iter().enumerate() {
            let start = stream_free[stream].max(engine_free[engine]);
            let end = start + part_ms[engine];
            let mark = Pipeline::mark(chunk, part);
            marks[mark] = start;
            marks[mark + 1] = end;
            stream_free[stream] = end;
            engine_free[engine] = end;
        }
    }
    let total = marks.iter().copied().fold(0.0, f64::max);
    (marks, total)
}

/// The error of a backend that runs one stream only.
pub fn no_streams() -> DeviceError {
    DeviceError::of_kind(
        DeviceErrorKind::Unavailable,
        "pipeline",
        "this backend runs one stream; pipelined rows (copies and kernels on several streams) \
         are not supported on it",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipeline(streams: u32, chunks: usize) -> Pipeline {
        let launch = ChunkLaunch {
            kernel: KernelId(0),
            shape: LaunchShape {
                grid: [1, 1, 1],
                block: [32, 1, 1],
                shared_bytes: 0,
            },
            args: Vec::new(),
        };
        Pipeline {
            streams,
            input: super::super::BufferId(0),
            output: super::super::BufferId(1),
            chunk_bytes: 16,
            chunks: vec![launch; chunks],
        }
    }

    #[test]
    fn chunks_go_round_robin_and_each_part_has_two_events() {
        let p = pipeline(3, 5);
        let streams: Vec<usize> = (0..5).map(|c| p.stream_of(c)).collect();
        assert_eq!(streams, [0, 1, 2, 0, 1]);
        assert_eq!(p.marks(), 30);
        assert_eq!(Pipeline::mark(1, Part::Kernel), 8);
        let times: Vec<f64> = (0..30).map(f64::from).collect();
        let spans = p.spans(&times).expect("spans");
        assert_eq!(spans.len(), 15);
        assert_eq!(spans[4].chunk, 1);
        assert_eq!(spans[4].part, Part::Kernel);
        assert_eq!(spans[4].stream, 1);
        assert_eq!((spans[4].start_ms, spans[4].end_ms), (8.0, 9.0));
        assert!(p.spans(&times[..29]).is_err());
    }

    #[test]
    fn one_stream_runs_the_parts_back_to_back() {
        let (marks, total) = simulate(&pipeline(1, 4), [1.0, 1.0, 1.0]);
        assert_eq!(total, 12.0);
        assert_eq!(marks[Pipeline::mark(3, Part::HostToDevice)], 9.0);
    }

    #[test]
    fn three_streams_of_equal_parts_overlap_all_three_engines() {
        // K chunks of three equal parts: K + 2 part-times once the engines all work at once.
        let p = pipeline(3, 6);
        let (marks, total) = simulate(&p, [1.0, 1.0, 1.0]);
        assert_eq!(total, 8.0);
        let spans = p.spans(&marks).expect("spans");
        // Chunk 1's copy in runs beside chunk 0's kernel.
        assert_eq!(spans[3].start_ms, spans[1].start_ms);
        // Two streams: the third chunk waits for its stream, so the D2H engine idles at times.
        let (_, two) = simulate(&pipeline(2, 6), [1.0, 1.0, 1.0]);
        assert!(two > 8.0 && two < 18.0, "{two}");
    }

    #[test]
    fn the_longest_part_bounds_the_run() {
        // Kernels twice as long as a copy: the kernels back to back, plus one copy each side.
        let (_, total) = simulate(&pipeline(4, 8), [1.0, 2.0, 1.0]);
        assert_eq!(total, 1.0 + 8.0 * 2.0 + 1.0);
    }
}
