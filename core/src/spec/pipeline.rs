//! `pipeline = { chunks = K, streams = S }`: a kernel variant whose work is split into K chunks,
//! each copied host → device from pinned memory, run through the variant's kernel and copied
//! back, the chunks dealt round-robin onto S streams. S = 1 is the serial baseline; more streams
//! let one chunk's copies overlap another's kernel.
//!
//! The chunk's host → device copy fills the check's input buffer and the device → host copy
//! reads its output buffer, each over the chunk's share of the bytes; the kernel's expressions
//! see `chunk` (0 to K − 1), `chunks` and `streams` beside the lab's parameters.

use crate::expr::Params;
use serde::Deserialize;

/// The most streams a pipelined row may use: past the copy engines and one kernel, more add
/// nothing to overlap.
pub const MAX_STREAMS: u32 = 8;
/// The most chunks a pipelined row may split its work into (each has three parts and six events).
pub const MAX_CHUNKS: u32 = 256;

/// What a pipelined row declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineSpec {
    pub chunks: u32,
    pub streams: u32,
}

impl PipelineSpec {
    /// What is wrong with the numbers, if anything.
    pub fn problem(&self) -> Option<String> {
        if !(1..=MAX_STREAMS).contains(&self.streams) {
            return Some(format!(
                "pipeline `streams = {}`: give 1 (the serial baseline) to {MAX_STREAMS}",
                self.streams
            ));
        }
        if !(1..=MAX_CHUNKS).contains(&self.chunks) {
            return Some(format!(
                "pipeline `chunks = {}`: give 1 to {MAX_CHUNKS}",
                self.chunks
            ));
        }
        if self.chunks < self.streams {
            return Some(format!(
                "pipeline of {} chunks on {} streams: some streams would have nothing to do; \
                 give at least as many chunks as streams",
                self.chunks, self.streams
            ));
        }
        None
    }

    /// The names the variant's expressions see, for chunk `chunk`.
    pub fn bind(&self, params: &mut Params, chunk: u32) {
        params.insert("chunk".into(), i64::from(chunk));
        params.insert("chunks".into(), i64::from(self.chunks));
        params.insert("streams".into(), i64::from(self.streams));
    }

    /// The stream chunk `chunk` is issued on: round-robin.
    pub fn stream_of(&self, chunk: u32) -> u32 {
        chunk % self.streams
    }
}

#[cfg(test)]
mod tests {
    use crate::spec::LabSpec;
    use std::path::Path;

    const LAB: &str = r#"name = "pipe"
title = "Pipe"
bytes = "2 * n * 4"
[params]
n = 1024
[[buffers]]
name = "in"
len = "n"
fill = "random"
[[buffers]]
name = "out"
len = "n"
fill = "poison"
[check]
reference = "scale"
input = "in"
output = "out"
factor = "-1"
[[variants]]
name = "piped"
kernel = "negate_chunk"
pipeline = { chunks = 4, streams = 2 }
grid = ["n / chunks / 256"]
block = [256]
args = ["out", "in", "chunk * (n / chunks):i64", "n / chunks"]
"#;

    #[test]
    fn a_pipelined_row_parses_and_its_expressions_see_the_chunk() {
        let lab = LabSpec::parse(LAB, Path::new("labs/pipe.toml")).expect("lab");
        let variant = &lab.variants[0];
        let pipeline = variant.pipeline.as_ref().expect("pipeline").get_ref();
        assert_eq!((pipeline.chunks, pipeline.streams), (4, 2));
        let params = lab.params_for(variant);
        assert_eq!(params.get("chunks"), Some(&4));
        assert_eq!(params.get("streams"), Some(&2));
        assert_eq!(params.get("chunk"), Some(&0));
        assert_eq!(pipeline.stream_of(3), 1);
    }

    #[test]
    fn bad_pipelines_are_refused_at_their_line() {
        let line = LAB
            .lines()
            .position(|l| l.starts_with("pipeline"))
            .expect("a pipeline line")
            + 1;
        for (bad, says) in [
            ("{ chunks = 4, streams = 0 }", "streams = 0"),
            ("{ chunks = 4, streams = 9 }", "streams = 9"),
            (
                "{ chunks = 2, streams = 3 }",
                "at least as many chunks as streams",
            ),
            ("{ chunks = 0, streams = 1 }", "chunks = 0"),
        ] {
            let text = LAB.replace("{ chunks = 4, streams = 2 }", bad);
            let err = LabSpec::parse(&text, Path::new("labs/pipe.toml")).expect_err(bad);
            assert_eq!(err.line, line, "{bad}: {err}");
            assert!(err.message.contains(says), "{bad}: {err}");
            assert!(err.to_string().starts_with("labs/pipe.toml:"), "{err}");
        }
        let builtin = LAB.replace(
            "kernel = \"negate_chunk\"",
            "builtin = \"memcpy\"\nkernel = \"negate_chunk\"",
        );
        assert!(LabSpec::parse(&builtin, Path::new("p.toml")).is_err());
        let typo = LAB.replace("streams = 2 }", "stream = 2 }");
        let err = LabSpec::parse(&typo, Path::new("labs/pipe.toml")).expect_err("typo");
        assert!(err.message.contains("stream"), "{err}");
    }
}
