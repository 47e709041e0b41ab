//! [`Op::Pipeline`](crate::backend::Op::Pipeline) on top of a [`Vendor`]'s streams: the
//! order in which the chunks' copies, kernels and events are issued, written once for every
//! vendor that has several streams.

use super::{DeviceMemory, GpuDevice, HostMemory, Vendor, buffer, resolve};
use crate::backend::DeviceError;
use crate::backend::pipeline::Pipeline;
use kernelbook_core::results::timeline::{Part, Span};

impl<V: Vendor> GpuDevice<V> {
    /// Issues every chunk on its stream, each part between two events; the streams start
    /// after the main stream's work so far (the start event of a timed run) and the main
    /// stream waits for them all, so its end event follows the last part.
    pub(super) fn run_pipeline(&mut self, pipeline: &Pipeline) -> Result<(), DeviceError> {
        let operation = "pipeline";
        if pipeline.input == pipeline.output {
            return Err(DeviceError::invalid(
                operation,
                "the input and the output are the same buffer",
            ));
        }
        let streams = pipeline.streams as usize;
        self.vendor.open_streams(streams, pipeline.marks())?;
        let bytes = pipeline.bytes();
        let input = buffer(operation, &self.buffers, pipeline.input)?;
        let output = buffer(operation, &self.buffers, pipeline.output)?;
        if bytes > input.len() || bytes > output.len() {
            return Err(DeviceError::invalid(operation, "chunks out of bounds"));
        }
        let staged = self
            .pinned
            .as_mut()
            .filter(|p| p.len() >= bytes)
            .ok_or_else(|| DeviceError::invalid(operation, "nothing staged in pinned memory"))?;
        for stream in 0..streams {
            self.vendor.join_stream(stream, true)?;
        }
        let step = pipeline.chunk_bytes;
        for (chunk, launch) in pipeline.chunks.iter().enumerate() {
            let stream = pipeline.stream_of(chunk);
            let offset = chunk * step;
            let kernel = self
                .kernels
                .get(launch.kernel.0)
                .ok_or_else(|| DeviceError::invalid(operation, "no such kernel"))?;
            if let Some(sizes) = &kernel.param_sizes {
                crate::backend::check_kernel_args(&kernel.name, sizes, &launch.args)?;
            }
            let args = launch
                .args
                .iter()
                .map(|arg| resolve(&self.buffers, &self.tensor_maps, arg))
                .collect::<Result<Vec<_>, _>>()?;
            let mark = |part| Pipeline::mark(chunk, part);
            self.vendor.mark(stream, mark(Part::HostToDevice))?;
            self.vendor
                .copy_from_pinned_on(stream, input, staged, offset, step)?;
            self.vendor.mark(stream, mark(Part::HostToDevice) + 1)?;
            self.vendor.mark(stream, mark(Part::Kernel))?;
            self.vendor
                .launch_on(stream, kernel, &launch.shape, &args)?;
            self.vendor.mark(stream, mark(Part::Kernel) + 1)?;
            self.vendor.mark(stream, mark(Part::DeviceToHost))?;
            self.vendor
                .copy_to_pinned_on(stream, staged, output, offset, step)?;
            self.vendor.mark(stream, mark(Part::DeviceToHost) + 1)?;
        }
        for stream in 0..streams {
            self.vendor.join_stream(stream, false)?;
        }
        if self.last_pipeline.as_ref() != Some(pipeline) {
            self.last_pipeline = Some(pipeline.clone());
        }
        Ok(())
    }

    /// The spans of the pipeline run last, from its events (after the run's end event).
    pub(super) fn spans_of_last_pipeline(&mut self) -> Result<Vec<Span>, DeviceError> {
        let pipeline = self
            .last_pipeline
            .as_ref()
            .ok_or_else(|| DeviceError::invalid("pipeline", "no pipeline has run"))?;
        let times = (0..pipeline.marks())
            .map(|mark| self.vendor.mark_ms(mark).map(f64::from))
            .collect::<Result<Vec<_>, _>>()?;
        pipeline.spans(&times)
    }
}
