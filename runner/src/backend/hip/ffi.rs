//! The C API, declared by hand: the types, constants and function signatures of the HIP
//! runtime and hiprtc that this backend calls (see the module documentation of [`super`] for
//! why there are no generated bindings). Checked against `hip_runtime_api.h`, `driver_types.h`
//! and `hiprtc.h` of ROCm 5.2 and ROCm 6 (HIP's `include/hip`). Nothing here is called.

use std::ffi::{c_char, c_int, c_uint, c_void};

/// `hipError_t` (a C enum: an `int`).
pub(super) type HipStatus = c_int;
/// `hiprtcResult` (a C enum: an `int`).
pub(super) type RtcStatus = c_int;
pub(super) type HipStream = *mut c_void;
pub(super) type HipEvent = *mut c_void;
pub(super) type HipModule = *mut c_void;
pub(super) type HipFunction = *mut c_void;
pub(super) type RtcProgram = *mut c_void;

/// `hipError_t` values this backend names: the ones it reacts to and the ones
/// [`super::result::classify`] sorts into a kind. Identical in ROCm 5.2, 6.x and 7.x; HIP has
/// no counterpart of CUDA's hardware-exception codes (714 to 718).
pub(super) mod status {
    use super::HipStatus;
    pub const SUCCESS: HipStatus = 0;
    pub const INVALID_VALUE: HipStatus = 1;
    pub const OUT_OF_MEMORY: HipStatus = 2;
    pub const INVALID_CONFIGURATION: HipStatus = 9;
    pub const INVALID_PITCH_VALUE: HipStatus = 12;
    pub const INVALID_SYMBOL: HipStatus = 13;
    pub const INVALID_DEVICE_POINTER: HipStatus = 17;
    pub const INVALID_MEMCPY_DIRECTION: HipStatus = 21;
    pub const INSUFFICIENT_DRIVER: HipStatus = 35;
    pub const MISSING_CONFIGURATION: HipStatus = 52;
    pub const PRIOR_LAUNCH_FAILURE: HipStatus = 53;
    pub const INVALID_DEVICE_FUNCTION: HipStatus = 98;
    pub const NO_DEVICE: HipStatus = 100;
    /// What ROCm 5.2's `hipInit` answers on a machine without a GPU.
    pub const INVALID_DEVICE: HipStatus = 101;
    pub const INVALID_IMAGE: HipStatus = 200;
    pub const NO_BINARY_FOR_GPU: HipStatus = 209;
    pub const ECC_NOT_CORRECTABLE: HipStatus = 214;
    pub const UNSUPPORTED_LIMIT: HipStatus = 215;
    pub const INVALID_KERNEL_FILE: HipStatus = 218;
    pub const INVALID_HANDLE: HipStatus = 400;
    pub const ILLEGAL_STATE: HipStatus = 401;
    pub const NOT_FOUND: HipStatus = 500;
    pub const ILLEGAL_ADDRESS: HipStatus = 700;
    pub const LAUNCH_OUT_OF_RESOURCES: HipStatus = 701;
    pub const LAUNCH_TIME_OUT: HipStatus = 702;
    pub const ASSERT: HipStatus = 710;
    pub const LAUNCH_FAILURE: HipStatus = 719;
    pub const COOPERATIVE_LAUNCH_TOO_LARGE: HipStatus = 720;
    pub const NOT_SUPPORTED: HipStatus = 801;
}

pub(super) const HIPRTC_SUCCESS: RtcStatus = 0;
pub(super) const HIPRTC_ERROR_INVALID_OPTION: RtcStatus = 5;
pub(super) const HIPRTC_ERROR_COMPILATION: RtcStatus = 6;

/// `hipMemcpyKind`.
pub(super) const HIP_MEMCPY_HOST_TO_DEVICE: c_int = 1;
pub(super) const HIP_MEMCPY_DEVICE_TO_HOST: c_int = 2;
pub(super) const HIP_MEMCPY_DEVICE_TO_DEVICE: c_int = 3;

/// `hipHostMallocDefault`: ordinary page-locked memory (coherent, not write-combined, which the
/// CPU reads back slowly).
pub(super) const HIP_HOST_MALLOC_DEFAULT: c_uint = 0;

/// `hipDeviceAttribute_t` values (identical in ROCm 5.2, 6.x and 7.x: retired entries became
/// `hipDeviceAttributeUnusedN` and kept their numbers).
pub(super) mod attr {
    use std::ffi::c_int;
    pub const CLOCK_RATE: c_int = 5;
    pub const L2_CACHE_SIZE: c_int = 19;
    pub const COMPUTE_CAPABILITY_MAJOR: c_int = 23;
    pub const MAX_THREADS_PER_MULTIPROCESSOR: c_int = 57;
    pub const MEMORY_BUS_WIDTH: c_int = 59;
    pub const MEMORY_CLOCK_RATE: c_int = 60;
    pub const COMPUTE_CAPABILITY_MINOR: c_int = 61;
    pub const MULTIPROCESSOR_COUNT: c_int = 63;
    pub const MAX_SHARED_MEMORY_PER_BLOCK: c_int = 74;
    pub const MAX_REGISTERS_PER_MULTIPROCESSOR: c_int = 72;
    pub const SHARED_MEM_PER_BLOCK_OPTIN: c_int = 75;
    pub const SHARED_MEM_PER_MULTIPROCESSOR: c_int = 76;
    /// `hipDeviceAttributeWarpSize`: 64 on gfx9 (CDNA), 32 on RDNA.
    pub const WARP_SIZE: c_int = 87;
}

/// `hipFunction_attribute` values (the same numbering as CUDA's `CUfunction_attribute`).
pub(super) mod func_attr {
    use std::ffi::c_int;
    pub const SHARED_SIZE_BYTES: c_int = 1;
    pub const LOCAL_SIZE_BYTES: c_int = 3;
    pub const NUM_REGS: c_int = 4;
}

/// `hipUUID`: `struct { char bytes[16]; }`.
#[repr(C)]
pub(super) struct HipUuid {
    pub bytes: [u8; 16],
}

/// Which `hipDeviceProp_t` layout a properties function fills. Only `gcnArchName` is read, so
/// only its offset is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PropsLayout {
    /// `hipDeviceProp_tR0600` (ROCm 6 and 7): 1472 bytes.
    R0600,
    /// `hipDeviceProp_tR0000` (ROCm 5.x, and the legacy symbol of ROCm 6 and 7): 792 bytes in
    /// ROCm 5.2.
    R0000,
}

impl PropsLayout {
    /// Byte offset of `char gcnArchName[256]`.
    pub(super) fn arch_name_offset(self) -> usize {
        match self {
            PropsLayout::R0600 => 1160,
            PropsLayout::R0000 => 396,
        }
    }
}

/// Bytes handed to the properties function: well above either layout's size, so even a wrong
/// layout could not write past it.
pub(super) const PROPS_BUFFER_BYTES: usize = 4096;
/// Length of `gcnArchName`.
pub(super) const ARCH_NAME_BYTES: usize = 256;

pub(super) type FnInit = unsafe extern "C" fn(c_uint) -> HipStatus;
pub(super) type FnIntOut = unsafe extern "C" fn(*mut c_int) -> HipStatus;
pub(super) type FnDeviceGet = unsafe extern "C" fn(*mut c_int, c_int) -> HipStatus;
pub(super) type FnDeviceGetAttribute = unsafe extern "C" fn(*mut c_int, c_int, c_int) -> HipStatus;
pub(super) type FnDeviceGetName = unsafe extern "C" fn(*mut c_char, c_int, c_int) -> HipStatus;
pub(super) type FnDeviceTotalMem = unsafe extern "C" fn(*mut usize, c_int) -> HipStatus;
pub(super) type FnDeviceGetUuid = unsafe extern "C" fn(*mut HipUuid, c_int) -> HipStatus;
pub(super) type FnGetDeviceProperties = unsafe extern "C" fn(*mut c_void, c_int) -> HipStatus;
pub(super) type FnSetDevice = unsafe extern "C" fn(c_int) -> HipStatus;
pub(super) type FnMalloc = unsafe extern "C" fn(*mut *mut c_void, usize) -> HipStatus;
pub(super) type FnFree = unsafe extern "C" fn(*mut c_void) -> HipStatus;
pub(super) type FnHostMalloc = unsafe extern "C" fn(*mut *mut c_void, usize, c_uint) -> HipStatus;
pub(super) type FnMemcpyAsync =
    unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int, HipStream) -> HipStatus;
pub(super) type FnMemsetD8Async =
    unsafe extern "C" fn(*mut c_void, u8, usize, HipStream) -> HipStatus;
pub(super) type FnMemGetInfo = unsafe extern "C" fn(*mut usize, *mut usize) -> HipStatus;
pub(super) type FnModuleLoadData = unsafe extern "C" fn(*mut HipModule, *const c_void) -> HipStatus;
pub(super) type FnModuleUnload = unsafe extern "C" fn(HipModule) -> HipStatus;
pub(super) type FnModuleGetFunction =
    unsafe extern "C" fn(*mut HipFunction, HipModule, *const c_char) -> HipStatus;
pub(super) type FnFuncGetAttribute =
    unsafe extern "C" fn(*mut c_int, c_int, HipFunction) -> HipStatus;
pub(super) type FnOccupancy =
    unsafe extern "C" fn(*mut c_int, HipFunction, c_int, usize) -> HipStatus;
pub(super) type FnModuleLaunchKernel = unsafe extern "C" fn(
    HipFunction,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    HipStream,
    *mut *mut c_void,
    *mut *mut c_void,
) -> HipStatus;
pub(super) type FnStreamCreate = unsafe extern "C" fn(*mut HipStream) -> HipStatus;
pub(super) type FnStreamOp = unsafe extern "C" fn(HipStream) -> HipStatus;
pub(super) type FnEventCreate = unsafe extern "C" fn(*mut HipEvent) -> HipStatus;
pub(super) type FnEventRecord = unsafe extern "C" fn(HipEvent, HipStream) -> HipStatus;
pub(super) type FnEventOp = unsafe extern "C" fn(HipEvent) -> HipStatus;
pub(super) type FnEventElapsedTime =
    unsafe extern "C" fn(*mut f32, HipEvent, HipEvent) -> HipStatus;
pub(super) type FnErrorText = unsafe extern "C" fn(HipStatus) -> *const c_char;

pub(super) type FnRtcVersion = unsafe extern "C" fn(*mut c_int, *mut c_int) -> RtcStatus;
pub(super) type FnRtcCreateProgram = unsafe extern "C" fn(
    *mut RtcProgram,
    *const c_char,
    *const c_char,
    c_int,
    *const *const c_char,
    *const *const c_char,
) -> RtcStatus;
pub(super) type FnRtcCompileProgram =
    unsafe extern "C" fn(RtcProgram, c_int, *const *const c_char) -> RtcStatus;
pub(super) type FnRtcDestroyProgram = unsafe extern "C" fn(*mut RtcProgram) -> RtcStatus;
pub(super) type FnRtcSizeOut = unsafe extern "C" fn(RtcProgram, *mut usize) -> RtcStatus;
pub(super) type FnRtcBytesOut = unsafe extern "C" fn(RtcProgram, *mut c_char) -> RtcStatus;
pub(super) type FnRtcErrorString = unsafe extern "C" fn(RtcStatus) -> *const c_char;
