//! The side streams and timing events of a pipelined row ([`Op::Pipeline`]) on CUDA: streams
//! made with `cuStreamCreate` (non-blocking), events with timing, recorded with
//! `cuEventRecord` and read with `cuEventElapsedTime` against the device's start event. The
//! copies are the driver's `cuMemcpyHtoDAsync` / `cuMemcpyDtoHAsync` between page-locked
//! memory and a range of a buffer.
//!
//! [`Op::Pipeline`]: crate::backend::Op::Pipeline

use super::result::Check;
use crate::backend::DeviceError;
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaContext, CudaEvent, CudaSlice, CudaStream, PinnedHostSlice};
use std::sync::Arc;

/// Streams and events, made on first use and kept.
#[derive(Debug, Default)]
pub struct Streams {
    streams: Vec<Arc<CudaStream>>,
    marks: Vec<CudaEvent>,
}

impl Streams {
    /// At least `streams` streams and `marks` timing events.
    pub fn open(
        &mut self,
        ctx: &Arc<CudaContext>,
        streams: usize,
        marks: usize,
    ) -> Result<(), DeviceError> {
        while self.streams.len() < streams {
            self.streams
                .push(ctx.new_stream().during("pipeline streams")?);
        }
        while self.marks.len() < marks {
            let event = ctx
                .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                .during("pipeline events")?;
            self.marks.push(event);
        }
        Ok(())
    }

    pub fn stream(&self, stream: usize) -> Result<&Arc<CudaStream>, DeviceError> {
        self.streams
            .get(stream)
            .ok_or_else(|| DeviceError::invalid("pipeline", format!("no stream {stream}")))
    }

    pub fn event(&self, mark: usize) -> Result<&CudaEvent, DeviceError> {
        self.marks
            .get(mark)
            .ok_or_else(|| DeviceError::invalid("pipeline", format!("no event {mark}")))
    }
}

/// `buffer`'s device address at `offset`, once `offset + bytes` is inside it.
fn device_range(
    operation: &'static str,
    buffer: &CudaSlice<u8>,
    offset: usize,
    bytes: usize,
) -> Result<u64, DeviceError> {
    let end = offset.checked_add(bytes);
    if end.is_none_or(|end| end > cudarc::driver::DeviceSlice::len(buffer)) {
        return Err(DeviceError::invalid(operation, "range out of bounds"));
    }
    // With event tracking off, taking the address orders no stream.
    let (address, _ordered) = cudarc::driver::DevicePtr::device_ptr(buffer, buffer.stream());
    Ok(address + offset as u64)
}

/// Queues on `stream` a copy of `src[offset..offset + bytes]` into the same bytes of `dst`.
pub fn copy_from_pinned(
    stream: &CudaStream,
    dst: &CudaSlice<u8>,
    src: &PinnedHostSlice<u8>,
    offset: usize,
    bytes: usize,
) -> Result<(), DeviceError> {
    let operation = "host to device";
    let address = device_range(operation, dst, offset, bytes)?;
    let host = src.as_slice().during(operation)?;
    let host = host
        .get(offset..offset + bytes)
        .ok_or_else(|| DeviceError::invalid(operation, "range out of bounds"))?;
    stream.context().bind_to_thread().during(operation)?;
    // SAFETY: `address .. address + bytes` lies inside `dst` (checked above) and `host` is a
    // range of page-locked memory; both outlive the copy, as `GpuDevice` frees buffers and
    // staging memory only after synchronizing the main stream, which has joined this one.
    unsafe { cudarc::driver::result::memcpy_htod_async(address, host, stream.cu_stream()) }
        .during(operation)
}

/// Queues on `stream` a copy of `src[offset..offset + bytes]` into the same bytes of `dst`.
pub fn copy_to_pinned(
    stream: &CudaStream,
    dst: &mut PinnedHostSlice<u8>,
    src: &CudaSlice<u8>,
    offset: usize,
    bytes: usize,
) -> Result<(), DeviceError> {
    let operation = "device to host";
    let address = device_range(operation, src, offset, bytes)?;
    let host = dst.as_mut_slice().during(operation)?;
    let host = host
        .get_mut(offset..offset + bytes)
        .ok_or_else(|| DeviceError::invalid(operation, "range out of bounds"))?;
    stream.context().bind_to_thread().during(operation)?;
    // SAFETY: as for `copy_from_pinned`; the chunks of one pipeline are disjoint, so no other
    // queued copy writes these host bytes.
    unsafe { cudarc::driver::result::memcpy_dtoh_async(host, address, stream.cu_stream()) }
        .during(operation)
}

/// Milliseconds from `start` to `mark`, once `mark` has completed.
pub fn elapsed(start: &CudaEvent, mark: &CudaEvent) -> Result<f32, DeviceError> {
    mark.synchronize().during("time")?;
    start.elapsed_ms(mark).during("time")
}
