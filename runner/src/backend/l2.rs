//! L2 controls behind [`Device::set_l2`](super::Device::set_l2): the L2's fetch granularity,
//! the set-aside for persisting lines and the stream's access-policy window, with what the
//! driver reports back once they are set. Only the CUDA backend sets them; the others say so.

use super::{BufferId, DeviceError, DeviceErrorKind};

/// What to set. `None` limits are left as they are; `window: None` clears the stream's window.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct L2Request {
    /// `CU_LIMIT_MAX_L2_FETCH_GRANULARITY`, bytes (0 to 128).
    pub fetch_granularity: Option<u64>,
    /// `CU_LIMIT_PERSISTING_L2_CACHE_SIZE`, bytes.
    pub persisting_bytes: Option<u64>,
    pub window: Option<WindowRequest>,
    /// Turn every persisting line back into a normal one (`cuCtxResetPersistingL2Cache`), as
    /// after a variant, so that the next one finds no lines left pinned.
    pub reset_persisting_lines: bool,
}

/// An access-policy window over the first `bytes` of `buffer`: `hit_ratio` of its accesses
/// persist, the others stream.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WindowRequest {
    pub buffer: BufferId,
    pub bytes: usize,
    pub hit_ratio: f32,
}

/// What the driver reports once the request is set.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct L2Report {
    pub fetch_granularity: u64,
    pub persisting_bytes: u64,
    /// The stream's window, bytes and hit ratio; `None` where it has none.
    pub window: Option<(u64, f32)>,
    pub max_persisting_bytes: Option<u64>,
    pub max_window_bytes: Option<u64>,
}

/// A window request with the buffer resolved, for a vendor's implementation.
#[derive(Debug)]
pub struct VendorWindow<'a, B> {
    pub buffer: &'a B,
    pub bytes: usize,
    pub hit_ratio: f32,
}

/// Why a backend without L2 controls refuses them.
pub fn unsupported() -> DeviceError {
    DeviceError::of_kind(
        DeviceErrorKind::Unavailable,
        "L2 controls",
        "this backend sets no L2 controls (fetch granularity, persisting lines, access-policy \
         window): they are CUDA driver calls (cuCtxSetLimit, cuStreamSetAttribute), made on an \
         NVIDIA GPU only",
    )
}
