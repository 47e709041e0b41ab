//! Thin checked calls: a `hipError_t` or `hiprtcResult` becomes a typed error that keeps the
//! status code, and a HIP status is sorted into a [`DeviceErrorKind`], so that the caller can
//! tell a fault that poisoned the context from a request that was merely wrong.

use super::ffi::{HipStatus, RtcStatus, status};
use super::loader::{RtcApi, Runtime};
use crate::backend::{DeviceError, DeviceErrorKind};
use std::ffi::{CStr, c_char, c_int};

/// A HIP runtime call that failed: its status and the runtime's text for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct HipError {
    pub status: HipStatus,
    /// e.g. "hipErrorOutOfMemory: out of memory", on one line.
    pub message: String,
}

impl HipError {
    pub fn kind(&self) -> DeviceErrorKind {
        classify(self.status)
    }

    /// The error as the [`crate::backend::Device`] methods report it.
    pub fn during(self, operation: &'static str) -> DeviceError {
        DeviceError::of_kind(self.kind(), operation, self.message)
    }
}

/// What kind of failure a `hipError_t` is.
///
/// Sticky: what HIP documents as ending a kernel abnormally or as leaving the device in an
/// error state: an illegal address, a device-side assert, a timed-out or failed launch (and a
/// later call's report of one), an uncorrectable ECC error, and `hipErrorIllegalState`, which
/// HIP also answers for "a device that is in an error state" (replacing the measuring process
/// costs less than letting every later lab fail). HIP has no codes for CUDA's hardware
/// exceptions (illegal instruction, misaligned address, invalid PC): such a fault is reported
/// as one of the launch failures above.
pub fn classify(code: HipStatus) -> DeviceErrorKind {
    use status::*;
    match code {
        ILLEGAL_ADDRESS | LAUNCH_FAILURE | LAUNCH_TIME_OUT | ASSERT | PRIOR_LAUNCH_FAILURE
        | ECC_NOT_CORRECTABLE | ILLEGAL_STATE => DeviceErrorKind::Sticky,
        OUT_OF_MEMORY => DeviceErrorKind::OutOfMemory,
        INVALID_VALUE
        | INVALID_CONFIGURATION
        | INVALID_PITCH_VALUE
        | INVALID_SYMBOL
        | INVALID_DEVICE_POINTER
        | INVALID_MEMCPY_DIRECTION
        | MISSING_CONFIGURATION
        | INVALID_DEVICE_FUNCTION
        | INVALID_DEVICE
        | INVALID_IMAGE
        | NO_BINARY_FOR_GPU
        | INVALID_KERNEL_FILE
        | INVALID_HANDLE
        | NOT_FOUND
        | LAUNCH_OUT_OF_RESOURCES
        | COOPERATIVE_LAUNCH_TOO_LARGE => DeviceErrorKind::Invalid,
        NOT_SUPPORTED | NO_DEVICE | INSUFFICIENT_DRIVER | UNSUPPORTED_LIMIT => {
            DeviceErrorKind::Unavailable
        }
        _ => DeviceErrorKind::Other,
    }
}

/// A hiprtc call that failed; a source that does not compile is reported as
/// [`crate::backend::CompileError::Rejected`] instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub(super) struct RtcError {
    pub status: RtcStatus,
    pub message: String,
}

impl Runtime {
    /// "hipErrorOutOfMemory: out of memory", or the name alone where both say the same.
    pub(super) fn error_text(&self, status: HipStatus) -> String {
        // SAFETY: both functions take any error code and return a pointer to a static
        // NUL-terminated string, or null (handled by `static_text`).
        let (name, text) = unsafe {
            (
                static_text((self.get_error_name)(status)),
                static_text((self.get_error_string)(status)),
            )
        };
        let message = match (name, text) {
            (Some(name), Some(text)) if name == text || text.is_empty() => name,
            (Some(name), Some(text)) => format!("{name}: {text}"),
            (Some(name), None) => name,
            (None, Some(text)) => text,
            (None, None) => format!("HIP error {status}"),
        };
        one_line(&message)
    }

    pub(super) fn check(&self, status: HipStatus) -> Result<(), HipError> {
        if status == status::SUCCESS {
            Ok(())
        } else {
            Err(HipError {
                status,
                message: self.error_text(status),
            })
        }
    }

    /// `hipRuntimeGetVersion`, e.g. 60241133 for HIP 6.2.41133.
    pub(super) fn version(&self) -> Result<c_int, HipError> {
        let mut version: c_int = 0;
        // SAFETY: the runtime writes one int through a pointer to a live local.
        self.check(unsafe { (self.runtime_get_version)(&mut version) })?;
        Ok(version)
    }

    pub(super) fn attribute(&self, device: c_int, attribute: c_int) -> Result<c_int, HipError> {
        let mut value: c_int = 0;
        // SAFETY: the runtime writes one int through a pointer to a live local; `device` came
        // from `hipDeviceGet` and an unknown attribute is answered with an error code.
        self.check(unsafe { (self.device_get_attribute)(&mut value, attribute, device) })?;
        Ok(value)
    }
}

impl RtcApi {
    pub(super) fn error_text(&self, status: RtcStatus) -> String {
        // SAFETY: `hiprtcGetErrorString` takes any code and returns a static string or null.
        let text = unsafe { static_text((self.get_error_string)(status)) };
        one_line(&text.unwrap_or_else(|| format!("hiprtc error {status}")))
    }

    pub(super) fn check(&self, status: RtcStatus) -> Result<(), RtcError> {
        if status == super::ffi::HIPRTC_SUCCESS {
            Ok(())
        } else {
            Err(RtcError {
                status,
                message: self.error_text(status),
            })
        }
    }
}

/// Text from a static C string, or `None` for a null pointer.
///
/// # Safety
///
/// `text` must be null or point to a NUL-terminated string that stays valid during the call.
unsafe fn static_text(text: *const c_char) -> Option<String> {
    if text.is_null() {
        return None;
    }
    // SAFETY: non-null and NUL-terminated, as the caller guarantees.
    Some(
        unsafe { CStr::from_ptr(text) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// The message on one line (library messages sometimes end with a newline).
pub(super) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use DeviceErrorKind::*;

    /// Every code [`classify`] names, with its name in HIP's headers and its kind.
    const CLASSIFIED: [(HipStatus, &str, DeviceErrorKind); 29] = [
        (status::ILLEGAL_ADDRESS, "hipErrorIllegalAddress", Sticky),
        (status::LAUNCH_FAILURE, "hipErrorLaunchFailure", Sticky),
        (status::LAUNCH_TIME_OUT, "hipErrorLaunchTimeOut", Sticky),
        (status::ASSERT, "hipErrorAssert", Sticky),
        (
            status::PRIOR_LAUNCH_FAILURE,
            "hipErrorPriorLaunchFailure",
            Sticky,
        ),
        (
            status::ECC_NOT_CORRECTABLE,
            "hipErrorECCNotCorrectable",
            Sticky,
        ),
        (status::ILLEGAL_STATE, "hipErrorIllegalState", Sticky),
        (status::OUT_OF_MEMORY, "hipErrorOutOfMemory", OutOfMemory),
        (status::INVALID_VALUE, "hipErrorInvalidValue", Invalid),
        (
            status::INVALID_CONFIGURATION,
            "hipErrorInvalidConfiguration",
            Invalid,
        ),
        (
            status::INVALID_PITCH_VALUE,
            "hipErrorInvalidPitchValue",
            Invalid,
        ),
        (status::INVALID_SYMBOL, "hipErrorInvalidSymbol", Invalid),
        (
            status::INVALID_DEVICE_POINTER,
            "hipErrorInvalidDevicePointer",
            Invalid,
        ),
        (
            status::INVALID_MEMCPY_DIRECTION,
            "hipErrorInvalidMemcpyDirection",
            Invalid,
        ),
        (
            status::MISSING_CONFIGURATION,
            "hipErrorMissingConfiguration",
            Invalid,
        ),
        (
            status::INVALID_DEVICE_FUNCTION,
            "hipErrorInvalidDeviceFunction",
            Invalid,
        ),
        (status::INVALID_DEVICE, "hipErrorInvalidDevice", Invalid),
        (status::INVALID_IMAGE, "hipErrorInvalidImage", Invalid),
        (status::NO_BINARY_FOR_GPU, "hipErrorNoBinaryForGpu", Invalid),
        (
            status::INVALID_KERNEL_FILE,
            "hipErrorInvalidKernelFile",
            Invalid,
        ),
        (status::INVALID_HANDLE, "hipErrorInvalidHandle", Invalid),
        (status::NOT_FOUND, "hipErrorNotFound", Invalid),
        (
            status::LAUNCH_OUT_OF_RESOURCES,
            "hipErrorLaunchOutOfResources",
            Invalid,
        ),
        (
            status::COOPERATIVE_LAUNCH_TOO_LARGE,
            "hipErrorCooperativeLaunchTooLarge",
            Invalid,
        ),
        (status::NOT_SUPPORTED, "hipErrorNotSupported", Unavailable),
        (status::NO_DEVICE, "hipErrorNoDevice", Unavailable),
        (
            status::INSUFFICIENT_DRIVER,
            "hipErrorInsufficientDriver",
            Unavailable,
        ),
        (
            status::UNSUPPORTED_LIMIT,
            "hipErrorUnsupportedLimit",
            Unavailable,
        ),
        (status::SUCCESS, "hipSuccess", Other),
    ];

    #[test]
    fn hip_statuses_are_sorted_into_kinds() {
        for (code, name, kind) in CLASSIFIED {
            assert_eq!(classify(code), kind, "{name} ({code})");
        }
        // hipErrorNotReady, hipErrorUnknown, hipErrorRuntimeOther, an unknown code.
        for code in [600, 999, 1053, -1, 12345] {
            assert_eq!(classify(code), Other, "{code}");
        }
        let error = HipError {
            status: status::ILLEGAL_ADDRESS,
            message: "hipErrorIllegalAddress: an illegal memory access was encountered".into(),
        };
        let device_error = error.during("synchronize");
        assert!(device_error.is_sticky());
        assert_eq!(
            device_error.to_string(),
            "synchronize: hipErrorIllegalAddress: an illegal memory access was encountered"
        );
    }

    /// The numbers above are the installed runtime's, where one is installed (ROCm 5.2's
    /// `libamdhip64` answers `hipGetErrorName` without a GPU).
    #[test]
    fn classified_codes_carry_the_runtimes_names() {
        let Ok(rt) = super::super::loader::runtime() else {
            return;
        };
        for (code, name, _) in CLASSIFIED {
            let text = rt.error_text(code);
            assert!(
                text == name || text.starts_with(&format!("{name}:")),
                "{code}: {text}"
            );
        }
    }

    #[test]
    fn messages_fit_one_line() {
        assert_eq!(
            one_line("out of memory\n  (device 0)\n"),
            "out of memory (device 0)"
        );
    }
}
