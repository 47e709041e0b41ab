//! Verify, then time: one variant's check on freshly poisoned output, its warm-up runs, and
//! samples taken until the stopping rule is satisfied.

use super::Progress;
use crate::backend::{BufferId, Device, DeviceError, Op};
use crate::ops::{Prepared, Readback, Step};
use crate::plan::{CounterPlan, TimingPlan};
use crate::references::{self, Comparison, POISON_BYTE};
use kernelbook_core::results::timeline::{Span, Timeline};
use kernelbook_core::results::{CounterResult, Outcome};
use kernelbook_core::spec::ElemType;
use kernelbook_core::stats::Summary;
use std::time::Instant;

/// A variant's outcome, its own counter's values, and the seconds its samples took.
#[derive(Debug, Clone, PartialEq)]
pub struct Timed {
    pub outcome: Outcome,
    pub counter: Option<CounterResult>,
    /// Wall-clock seconds from the first sample to the last (flushes and restores included),
    /// what nvbench calls a state's cold walltime; `None` where it was not timed.
    pub sampling_seconds: Option<f64>,
    /// A pipelined row's events, for the sample nearest the median.
    pub timeline: Option<Timeline>,
}

impl Timed {
    /// An outcome without samples.
    pub fn untimed(outcome: Outcome) -> Timed {
        Timed {
            outcome,
            counter: None,
            sampling_seconds: None,
            timeline: None,
        }
    }
}

/// What a variant's check compares against.
#[derive(Debug, Clone, Copy)]
pub struct Expectation<'a> {
    /// `None` for the variant the others are checked against: it is run, not compared.
    pub expected: Option<&'a [u8]>,
    pub elem: ElemType,
    pub comparison: &'a Comparison,
}

/// How one variant is sampled.
#[derive(Debug, Clone, Copy)]
pub struct Sampling<'a> {
    pub timing: &'a TimingPlan,
    pub flush_l2: bool,
    /// The kernel's own counter, read after every sample.
    pub counter: Option<(BufferId, &'a CounterPlan)>,
    /// Copies that put back the buffers the variant overwrites in place, run (untimed) before
    /// the check, every warm-up run and every sample.
    pub restore: &'a [Step],
}

/// Runs `prepared` once on poisoned outputs and compares; if it is right, warms up and times
/// it. `scratch` is reused from variant to variant: a fresh buffer of hundreds of MiB costs a
/// page fault per page every time.
pub fn verify_and_time(
    device: &mut dyn Device,
    prepared: &Prepared,
    poisoned: &[BufferId],
    expectation: &Expectation<'_>,
    sampling: &Sampling<'_>,
    scratch: &mut Vec<u8>,
    progress: &mut dyn Progress,
) -> Result<Timed, DeviceError> {
    let timed: Vec<Op<'_>> = prepared.timed.iter().map(|step| step.op()).collect();
    let op = match timed.as_slice() {
        [one] => *one,
        several => Op::Sequence(several),
    };
    let restore = |device: &mut dyn Device| -> Result<(), DeviceError> {
        for step in sampling.restore {
            device.run(&step.op())?;
        }
        Ok(())
    };
    restore(device)?;
    if let Some(expected) = expectation.expected {
        let verified = Expectation {
            expected: Some(expected),
            ..*expectation
        };
        if let Some(mismatch) = verify(device, prepared, &op, poisoned, &verified, scratch)? {
            return Ok(Timed::untimed(Outcome::WrongResult { mismatch }));
        }
    } else {
        run_once(device, prepared, &op, poisoned)?;
    }
    progress.mark("checked");
    for _ in 0..sampling.timing.warmup_runs {
        restore(device)?;
        device.run(&op)?;
    }
    device.synchronize()?;
    time(device, &op, sampling, progress)
}

/// [`run_once`] of everything `prepared` times, as its check runs it (for a profiler).
pub(super) fn run_prepared_once(
    device: &mut dyn Device,
    prepared: &Prepared,
    poisoned: &[BufferId],
) -> Result<(), DeviceError> {
    let timed: Vec<Op<'_>> = prepared.timed.iter().map(|step| step.op()).collect();
    let op = match timed.as_slice() {
        [one] => *one,
        several => Op::Sequence(several),
    };
    run_once(device, prepared, &op, poisoned)
}

/// One run on poisoned outputs after the setup steps, as the check runs it.
fn run_once(
    device: &mut dyn Device,
    prepared: &Prepared,
    op: &Op<'_>,
    poisoned: &[BufferId],
) -> Result<(), DeviceError> {
    for id in poisoned {
        device.fill(*id, POISON_BYTE)?;
    }
    if let Some(staging) = &prepared.staging {
        device.stage_host(staging.pinned, &staging.data)?;
    }
    for step in &prepared.setup {
        device.run(&step.op())?;
    }
    device.run(op)?;
    device.synchronize()
}

/// The first difference from the reference after one run on poisoned outputs, if any.
fn verify(
    device: &mut dyn Device,
    prepared: &Prepared,
    op: &Op<'_>,
    poisoned: &[BufferId],
    expectation: &Expectation<'_>,
    scratch: &mut Vec<u8>,
) -> Result<Option<kernelbook_core::results::Mismatch>, DeviceError> {
    let expected = expectation.expected.unwrap_or_default();
    run_once(device, prepared, op, poisoned)?;
    let actual: &[u8] = match prepared.readback {
        Readback::Buffer(id) => device.read_back(id, expected.len())?,
        Readback::Host { pinned } => {
            // The readback overwrites every byte: only a new size costs zeroing.
            scratch.resize(expected.len(), 0);
            device.read_host(pinned, scratch)?;
            scratch
        }
    };
    Ok(references::first_mismatch(
        expected,
        actual,
        expectation.elem,
        expectation.comparison,
    ))
}

/// Samples `op` with the L2 flushed before each sample (where asked), until the rule stops.
fn time(
    device: &mut dyn Device,
    op: &Op<'_>,
    sampling: &Sampling<'_>,
    progress: &mut dyn Progress,
) -> Result<Timed, DeviceError> {
    let rule = &sampling.timing.rule;
    let started = Instant::now();
    let mut samples = Vec::new();
    let mut counted = Vec::new();
    let mut spans = Vec::new();
    let stop_reason = loop {
        if let Some(reason) = rule.verdict(&samples, started.elapsed().as_secs_f64()) {
            break reason;
        }
        for step in sampling.restore {
            device.run(&step.op())?;
        }
        if sampling.flush_l2 {
            device.flush_l2()?;
        }
        samples.push(device.time(op)?);
        if let Op::Pipeline(_) = op {
            spans.push(device.pipeline_spans()?);
        }
        if let Some((buffer, counter)) = sampling.counter {
            let mut raw = [0u8; 8];
            device.download(buffer, &mut raw)?;
            counted.push(u64::from_le_bytes(raw) as f64 / counter.per as f64);
        }
        progress.samples(samples.len());
    };
    let sampling_seconds = started.elapsed().as_secs_f64();
    let summary = Summary::of(&samples)
        .ok_or_else(|| DeviceError::new("timing", format!("no valid samples (got {samples:?})")))?;
    let timeline = median_timeline(op, &samples, summary.median_ms, spans);
    let counter = sampling.counter.map(|(_, c)| CounterResult {
        unit: c.unit.clone(),
        per: c.per,
        values: counted,
    });
    Ok(Timed {
        outcome: Outcome::Measured {
            noisy: summary.is_noisy(rule),
            summary,
            stop_reason,
            samples_ms: samples,
        },
        counter,
        sampling_seconds: Some(sampling_seconds),
        timeline,
    })
}

/// The timeline of the sample nearest `median_ms`, for a pipeline whose every sample gave its
/// spans.
fn median_timeline(
    op: &Op<'_>,
    samples: &[f64],
    median_ms: f64,
    mut spans: Vec<Vec<Span>>,
) -> Option<Timeline> {
    let Op::Pipeline(pipeline) = op else {
        return None;
    };
    if spans.len() != samples.len() {
        return None;
    }
    let nearest = (0..samples.len()).min_by(|&a, &b| {
        let off = |i: usize| (samples[i] - median_ms).abs();
        off(a).total_cmp(&off(b))
    })?;
    Some(Timeline {
        streams: pipeline.streams,
        chunks: pipeline.chunks.len() as u32,
        spans: spans.swap_remove(nearest),
        total_ms: samples[nearest],
    })
}
