//! Thin checked calls: the driver calls this backend makes below cudarc's safe layer, each
//! returning a [`DeviceError`], and the one conversion of a driver status into an error of the
//! right [`DeviceErrorKind`], which decides whether the measuring process must be replaced.

use crate::backend::{DeviceError, DeviceErrorKind};
use cudarc::driver::sys::{self as cu, CUdevice_attribute, CUresult};
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtrMut, DriverError};
use std::ffi::c_int;

/// What a driver status means for the caller. Sticky: the CUDA documentation says the context
/// (or process) is left unusable and "the process must be terminated and relaunched" (a fault
/// in a kernel, a hardware error); the request errors leave the device as usable as before.
pub fn classify(status: CUresult) -> DeviceErrorKind {
    use CUresult::*;
    match status {
        CUDA_ERROR_ILLEGAL_ADDRESS
        | CUDA_ERROR_LAUNCH_FAILED
        | CUDA_ERROR_ILLEGAL_INSTRUCTION
        | CUDA_ERROR_MISALIGNED_ADDRESS
        | CUDA_ERROR_INVALID_ADDRESS_SPACE
        | CUDA_ERROR_INVALID_PC
        | CUDA_ERROR_HARDWARE_STACK_ERROR
        | CUDA_ERROR_ASSERT
        | CUDA_ERROR_LAUNCH_TIMEOUT
        | CUDA_ERROR_ECC_UNCORRECTABLE
        | CUDA_ERROR_NVLINK_UNCORRECTABLE
        | CUDA_ERROR_CONTAINED
        | CUDA_ERROR_TENSOR_MEMORY_LEAK
        | CUDA_ERROR_EXTERNAL_DEVICE
        | CUDA_ERROR_MPS_CLIENT_TERMINATED
        | CUDA_ERROR_CONTEXT_IS_DESTROYED
        | CUDA_ERROR_DEINITIALIZED => DeviceErrorKind::Sticky,
        CUDA_ERROR_OUT_OF_MEMORY => DeviceErrorKind::OutOfMemory,
        CUDA_ERROR_INVALID_VALUE
        | CUDA_ERROR_INVALID_HANDLE
        | CUDA_ERROR_INVALID_DEVICE
        | CUDA_ERROR_INVALID_CONTEXT
        | CUDA_ERROR_NOT_FOUND
        | CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
        | CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING
        | CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE
        | CUDA_ERROR_INVALID_CLUSTER_SIZE
        | CUDA_ERROR_INVALID_IMAGE
        | CUDA_ERROR_NO_BINARY_FOR_GPU
        | CUDA_ERROR_INVALID_PTX
        | CUDA_ERROR_UNSUPPORTED_PTX_VERSION
        | CUDA_ERROR_INVALID_SOURCE
        | CUDA_ERROR_UNSUPPORTED_LIMIT
        | CUDA_ERROR_ILLEGAL_STATE
        | CUDA_ERROR_FUNCTION_NOT_LOADED
        | CUDA_ERROR_INVALID_RESOURCE_TYPE
        | CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION => DeviceErrorKind::Invalid,
        CUDA_ERROR_NOT_SUPPORTED
        | CUDA_ERROR_NO_DEVICE
        | CUDA_ERROR_DEVICE_UNAVAILABLE
        | CUDA_ERROR_STUB_LIBRARY
        | CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER
        | CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
        | CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE
        | CUDA_ERROR_JIT_COMPILER_NOT_FOUND
        | CUDA_ERROR_JIT_COMPILATION_DISABLED => DeviceErrorKind::Unavailable,
        _ => DeviceErrorKind::Other,
    }
}

/// The driver's name and description of an error, e.g.
/// "CUDA_ERROR_OUT_OF_MEMORY: out of memory".
pub(super) fn message(error: &DriverError) -> String {
    let name = error.error_name().map(|s| s.to_string_lossy().into_owned());
    let text = error
        .error_string()
        .map(|s| s.to_string_lossy().into_owned());
    let hint = match error.0 {
        CUresult::CUDA_ERROR_DEVICE_UNAVAILABLE => {
            " (the GPU is busy: another process holds it in exclusive compute mode)"
        }
        _ => "",
    };
    match (name, text) {
        (Ok(name), Ok(text)) => format!("{name}: {text}{hint}"),
        (Ok(name), Err(_)) => format!("{name}{hint}"),
        _ => format!("{:?}{hint}", error.0),
    }
}

/// A failed driver call during `operation`.
pub(super) fn error(operation: &'static str, error: DriverError) -> DeviceError {
    DeviceError::of_kind(classify(error.0), operation, message(&error))
}

/// A failed driver call during `operation`, about `subject` (e.g. "kernel `copy`").
pub(super) fn error_about(
    operation: &'static str,
    subject: &str,
    error: DriverError,
) -> DeviceError {
    DeviceError::of_kind(
        classify(error.0),
        operation,
        format!("{subject}: {}", message(&error)),
    )
}

/// Names the operation a cudarc call served.
pub(super) trait Check<T> {
    fn during(self, operation: &'static str) -> Result<T, DeviceError>;
}

impl<T> Check<T> for Result<T, DriverError> {
    fn during(self, operation: &'static str) -> Result<T, DeviceError> {
        self.map_err(|e| error(operation, e))
    }
}

/// `cuDriverGetVersion` (major × 1000 + minor × 10), which needs no `cuInit`.
pub(super) fn driver_version(operation: &'static str) -> Result<i32, DeviceError> {
    let mut version: c_int = 0;
    // SAFETY: the driver writes one int through a pointer to a live local.
    unsafe { cu::cuDriverGetVersion(&mut version) }
        .result()
        .during(operation)?;
    Ok(version)
}

/// `cuInit`; `Ok(false)` where the driver reports no GPU at all.
pub(super) fn init(operation: &'static str) -> Result<bool, DeviceError> {
    match cudarc::driver::result::init() {
        Ok(()) => Ok(true),
        Err(DriverError(CUresult::CUDA_ERROR_NO_DEVICE)) => Ok(false),
        Err(e) => Err(error(operation, e)),
    }
}

pub(super) fn device_count(operation: &'static str) -> Result<c_int, DeviceError> {
    cudarc::driver::result::device::get_count().during(operation)
}

/// The device handle of GPU `index` (after [`init`]).
pub(super) fn device(operation: &'static str, index: c_int) -> Result<cu::CUdevice, DeviceError> {
    cudarc::driver::result::device::get(index).during(operation)
}

/// One attribute of a device from [`device`].
pub(super) fn attribute(
    operation: &'static str,
    dev: cu::CUdevice,
    attribute: CUdevice_attribute,
) -> Result<i32, DeviceError> {
    // SAFETY: `dev` came from `cuDeviceGet` after a successful `cuInit` (the driver rejects any
    // other value with an error); the driver writes one int to a local.
    unsafe { cudarc::driver::result::device::get_attribute(dev, attribute) }.during(operation)
}

pub(super) fn total_memory(
    operation: &'static str,
    dev: cu::CUdevice,
) -> Result<usize, DeviceError> {
    // SAFETY: as for `attribute`.
    unsafe { cudarc::driver::result::device::total_mem(dev) }.during(operation)
}

pub(super) fn name(operation: &'static str, dev: cu::CUdevice) -> Result<String, DeviceError> {
    cudarc::driver::result::device::get_name(dev).during(operation)
}

pub(super) fn uuid(operation: &'static str, dev: cu::CUdevice) -> Result<[u8; 16], DeviceError> {
    let uuid = cudarc::driver::result::device::get_uuid(dev).during(operation)?;
    Ok(uuid.bytes.map(|c| u8::from_ne_bytes(c.to_ne_bytes())))
}

/// Queues a memset of the whole slice on `stream`.
pub(super) fn memset(
    operation: &'static str,
    ctx: &CudaContext,
    stream: &CudaStream,
    slice: &mut CudaSlice<u8>,
    byte: u8,
) -> Result<(), DeviceError> {
    ctx.bind_to_thread().during(operation)?;
    let bytes = slice.len();
    let (ptr, _record) = slice.device_ptr_mut(stream);
    // SAFETY: `ptr` is the start of a live allocation of `bytes` bytes owned by `slice`, which
    // is borrowed mutably for this call and was allocated on `stream`; any byte pattern is a
    // valid `u8`.
    unsafe { cudarc::driver::result::memset_d8_async(ptr, byte, bytes, stream.cu_stream()) }
        .during(operation)
}

/// The byte size of parameter `index` of the function (`cuFuncGetParamInfo`); `Ok(None)` past
/// the last parameter.
pub(super) fn param_size(
    operation: &'static str,
    function: &CudaFunction,
    index: usize,
) -> Result<Option<usize>, DeviceError> {
    let mut offset = 0usize;
    let mut size = 0usize;
    // SAFETY: the function handle is valid while `function` (which holds its module) lives;
    // the driver writes two `usize`s through pointers to live locals.
    let status =
        unsafe { cu::cuFuncGetParamInfo(function.cu_function(), index, &mut offset, &mut size) };
    match status {
        CUresult::CUDA_SUCCESS => Ok(Some(size)),
        // Documented answer for an index past the last parameter.
        CUresult::CUDA_ERROR_INVALID_VALUE => Ok(None),
        other => Err(error(operation, DriverError(other))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_in_a_kernel_are_sticky() {
        for status in [
            CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
            CUresult::CUDA_ERROR_LAUNCH_FAILED,
            CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION,
            CUresult::CUDA_ERROR_MISALIGNED_ADDRESS,
            CUresult::CUDA_ERROR_INVALID_ADDRESS_SPACE,
            CUresult::CUDA_ERROR_INVALID_PC,
            CUresult::CUDA_ERROR_HARDWARE_STACK_ERROR,
            CUresult::CUDA_ERROR_ASSERT,
            CUresult::CUDA_ERROR_LAUNCH_TIMEOUT,
            CUresult::CUDA_ERROR_ECC_UNCORRECTABLE,
            CUresult::CUDA_ERROR_CONTAINED,
            CUresult::CUDA_ERROR_TENSOR_MEMORY_LEAK,
        ] {
            assert_eq!(classify(status), DeviceErrorKind::Sticky, "{status:?}");
        }
    }

    #[test]
    fn wrong_requests_leave_the_device_usable() {
        for status in [
            CUresult::CUDA_ERROR_INVALID_VALUE,
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            CUresult::CUDA_ERROR_NOT_FOUND,
            CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES,
            CUresult::CUDA_ERROR_INVALID_IMAGE,
            CUresult::CUDA_ERROR_NO_BINARY_FOR_GPU,
            CUresult::CUDA_ERROR_INVALID_PTX,
            CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION,
        ] {
            assert_eq!(classify(status), DeviceErrorKind::Invalid, "{status:?}");
        }
    }

    #[test]
    fn memory_missing_features_and_the_rest() {
        assert_eq!(
            classify(CUresult::CUDA_ERROR_OUT_OF_MEMORY),
            DeviceErrorKind::OutOfMemory
        );
        assert_eq!(
            classify(CUresult::CUDA_ERROR_NOT_SUPPORTED),
            DeviceErrorKind::Unavailable
        );
        assert_eq!(
            classify(CUresult::CUDA_ERROR_UNKNOWN),
            DeviceErrorKind::Other
        );
        assert_eq!(
            classify(CUresult::CUDA_ERROR_NOT_READY),
            DeviceErrorKind::Other
        );
    }
}
