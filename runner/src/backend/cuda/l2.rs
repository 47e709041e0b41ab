//! L2 controls through the driver: `cuCtxSetLimit` for the fetch granularity and the
//! persisting set-aside, the stream's `CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW` for the
//! window, `cuCtxResetPersistingL2Cache` after a variant; each read back as the driver has it.

use super::result::{self, Check};
use crate::backend::DeviceError;
use crate::backend::l2::{L2Report, L2Request, VendorWindow};
use cudarc::driver::sys::{
    self as cu, CUaccessProperty, CUdevice_attribute, CUlaunchAttributeID, CUlimit,
};
use cudarc::driver::{CudaContext, CudaSlice, CudaStream};

const OPERATION: &str = "L2 controls";

/// Sets `request` on `ctx` and `stream` (after the work queued before it) and reads it back.
pub(super) fn set(
    ctx: &CudaContext,
    stream: &CudaStream,
    request: &L2Request,
    window: Option<VendorWindow<'_, CudaSlice<u8>>>,
) -> Result<L2Report, DeviceError> {
    ctx.bind_to_thread().during(OPERATION)?;
    // The limits are the context's: no kernel may be running while they change.
    stream.synchronize().during(OPERATION)?;
    if let Some(bytes) = request.fetch_granularity {
        set_limit(CUlimit::CU_LIMIT_MAX_L2_FETCH_GRANULARITY, bytes)?;
    }
    let attribute = |attribute| {
        ctx.attribute(attribute)
            .ok()
            .and_then(|value| u64::try_from(value).ok())
    };
    let max_persisting =
        attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE);
    if let Some(bytes) = request.persisting_bytes {
        // Clamped to what the GPU sets aside at most, as the programming guide does before
        // the call: the result keeps the request and what the driver then reports.
        let bytes = max_persisting.map_or(bytes, |max| bytes.min(max));
        set_limit(CUlimit::CU_LIMIT_PERSISTING_L2_CACHE_SIZE, bytes)?;
    }
    set_window(stream, window)?;
    if request.reset_persisting_lines {
        // SAFETY: no arguments; the context is current on this thread (bound above).
        unsafe { cu::cuCtxResetPersistingL2Cache() }
            .result()
            .during(OPERATION)?;
    }
    Ok(L2Report {
        fetch_granularity: get_limit(CUlimit::CU_LIMIT_MAX_L2_FETCH_GRANULARITY)?,
        persisting_bytes: get_limit(CUlimit::CU_LIMIT_PERSISTING_L2_CACHE_SIZE)?,
        window: get_window(stream)?,
        max_persisting_bytes: max_persisting,
        max_window_bytes: attribute(
            CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE,
        ),
    })
}

fn set_limit(limit: CUlimit, bytes: u64) -> Result<(), DeviceError> {
    let value = usize::try_from(bytes)
        .map_err(|_| DeviceError::invalid(OPERATION, format!("{bytes} bytes is too many")))?;
    // SAFETY: plain values; the context is current on this thread.
    unsafe { cu::cuCtxSetLimit(limit, value) }
        .result()
        .map_err(|e| result::error(OPERATION, e))
}

fn get_limit(limit: CUlimit) -> Result<u64, DeviceError> {
    let mut value: usize = 0;
    // SAFETY: `value` is a live local the driver writes one `size_t` to.
    unsafe { cu::cuCtxGetLimit(&mut value, limit) }
        .result()
        .map_err(|e| result::error(OPERATION, e))?;
    Ok(value as u64)
}

/// Gives `stream` the window (or none: zero bytes, which the driver takes as no window).
fn set_window(
    stream: &CudaStream,
    window: Option<VendorWindow<'_, CudaSlice<u8>>>,
) -> Result<(), DeviceError> {
    let policy = match window {
        Some(window) => {
            // The guard orders the stream after writes to the buffer; the window records only
            // the address.
            let (address, _ordered) = cudarc::driver::DevicePtr::device_ptr(window.buffer, stream);
            cu::CUaccessPolicyWindow {
                base_ptr: address as *mut std::ffi::c_void,
                num_bytes: window.bytes,
                hitRatio: window.hit_ratio,
                hitProp: CUaccessProperty::CU_ACCESS_PROPERTY_PERSISTING,
                missProp: CUaccessProperty::CU_ACCESS_PROPERTY_STREAMING,
            }
        }
        None => cu::CUaccessPolicyWindow {
            base_ptr: std::ptr::null_mut(),
            num_bytes: 0,
            hitRatio: 0.0,
            hitProp: CUaccessProperty::CU_ACCESS_PROPERTY_NORMAL,
            missProp: CUaccessProperty::CU_ACCESS_PROPERTY_NORMAL,
        },
    };
    // SAFETY: a zeroed attribute value is a valid bit pattern for the union (64 bytes of
    // plain data), and only its `accessPolicyWindow` member is written and read.
    let mut value: cu::CUstreamAttrValue = unsafe { std::mem::zeroed() };
    value.accessPolicyWindow = policy;
    // SAFETY: `value` is a live local the driver reads; the stream is this context's, alive.
    unsafe {
        cu::cuStreamSetAttribute(
            stream.cu_stream(),
            CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW,
            &value,
        )
    }
    .result()
    .map_err(|e| result::error(OPERATION, e))
}

/// The stream's window as the driver has it: bytes and hit ratio, `None` where it has none.
fn get_window(stream: &CudaStream) -> Result<Option<(u64, f32)>, DeviceError> {
    // SAFETY: as in `set_window`: plain data, zeroed.
    let mut value: cu::CUstreamAttrValue = unsafe { std::mem::zeroed() };
    // SAFETY: `value` is a live local the driver writes; the stream is alive.
    unsafe {
        cu::cuStreamGetAttribute(
            stream.cu_stream(),
            CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW,
            &mut value,
        )
    }
    .result()
    .map_err(|e| result::error(OPERATION, e))?;
    // SAFETY: the driver wrote the `accessPolicyWindow` member, which is plain data.
    let window = unsafe { value.accessPolicyWindow };
    Ok((window.num_bytes > 0).then_some((window.num_bytes as u64, window.hitRatio)))
}
