//! Finding the GPU: whether the driver is installed, how many GPUs it reports, and what each is
//! ([`DeviceInfo`]), all without creating a context (cheap, and harmless while another process
//! owns the GPU).

use super::result;
use crate::backend::{DeviceError, DeviceErrorKind};
use cudarc::driver::sys::{self as cu, CUdevice_attribute};
use kernelbook_core::results::{Clocks, DeviceInfo};
use std::ffi::c_int;

/// The oldest driver this backend runs on, as `cuDriverGetVersion` reports it. cudarc is built
/// for the CUDA 13.0 API and resolves 13.0 entry points (e.g. `cuEventElapsedTime_v2`) by name,
/// and NVRTC 13 emits CUBINs for a 13.x driver; an older driver would fail to load them or make
/// cudarc panic on a missing symbol.
pub(super) const MIN_DRIVER_VERSION: i32 = 13000;

/// Whether the CUDA driver library (`libcuda.so.1`) can be loaded.
pub fn driver_present() -> bool {
    // SAFETY: `is_culib_present` only tries to dlopen the candidate library names and drops
    // them again; it calls no CUDA function and touches no shared state.
    unsafe { cu::is_culib_present() }
}

/// Why the CUDA backend cannot be used on this machine. Every message is one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    #[error("no CUDA driver found (libcuda.so.1 could not be loaded)")]
    NoDriver,
    #[error("the CUDA driver reports no GPU")]
    NoDevice,
    /// Neither on the library path nor where [`nvrtc_search`](super::nvrtc_search) looks.
    #[error(
        "NVRTC (libnvrtc.so.13) could not be loaded: it is not on the library path, in a \
         virtualenv, in .venv-nvrtc, nor in the user's or the system's site-packages; install it \
         with {}",
        super::nvrtc_search::INSTALL_HINT
    )]
    NoCompiler,
    #[error("GPU {ordinal} was asked for, but the CUDA driver reports only {count}")]
    NoSuchGpu { ordinal: usize, count: i32 },
    /// `found` is the driver's version as [`Probe::driver_version`] reads.
    #[error(
        "the CUDA driver supports CUDA {found}, kernelbook needs CUDA {needed} or newer \
         (NVIDIA driver 580 or newer)"
    )]
    OldDriver { found: String, needed: String },
    /// A driver call failed; the operation says what was being done.
    #[error(transparent)]
    Driver(DeviceError),
    #[error("NVRTC could not report its version: {0}")]
    NvrtcVersion(String),
}

impl Unavailable {
    /// A failed driver call while finding or opening the GPU. Running out of memory there means
    /// another process holds it.
    pub(super) fn driver(mut error: DeviceError) -> Unavailable {
        if error.kind == DeviceErrorKind::OutOfMemory {
            error
                .message
                .push_str(" (another process is using the GPU's memory)");
        }
        Unavailable::Driver(error)
    }
}

/// What the driver says about a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub info: DeviceInfo,
    /// e.g. "13.0 (NVIDIA 580.159.04)".
    pub driver_version: String,
}

/// Identifies GPU 0 without creating a context.
pub fn probe() -> Result<Probe, Unavailable> {
    probe_gpu(0)
}

/// Identifies GPU `ordinal` (counted as the driver counts them: among the GPUs
/// `CUDA_VISIBLE_DEVICES` leaves visible) without creating a context.
pub fn probe_gpu(ordinal: usize) -> Result<Probe, Unavailable> {
    probe_ordinal(ordinal).map(|(probe, _)| probe)
}

/// Identifies every GPU the driver reports, in its order, without creating a context.
pub fn probe_all() -> Result<Vec<Probe>, Unavailable> {
    let first = probe_ordinal(0)?.0;
    let count = result::device_count("the CUDA driver could not count its GPUs")
        .map_err(Unavailable::driver)?;
    let rest = (1..usize::try_from(count).unwrap_or(1)).map(probe_gpu);
    std::iter::once(Ok(first)).chain(rest).collect()
}

/// Identifies GPU `ordinal`; also returns the driver's raw version number.
pub(super) fn probe_ordinal(ordinal: usize) -> Result<(Probe, i32), Unavailable> {
    if !driver_present() {
        return Err(Unavailable::NoDriver);
    }
    let version = result::driver_version("the CUDA driver could not report its version")
        .map_err(Unavailable::driver)?;
    if !result::init("the CUDA driver could not start").map_err(Unavailable::driver)? {
        return Err(Unavailable::NoDevice);
    }
    let count = result::device_count("the CUDA driver could not count its GPUs")
        .map_err(Unavailable::driver)?;
    if count <= 0 {
        return Err(Unavailable::NoDevice);
    }
    let index = c_int::try_from(ordinal)
        .ok()
        .filter(|&index| index < count)
        .ok_or(Unavailable::NoSuchGpu { ordinal, count })?;
    let dev = result::device("the CUDA driver could not open the GPU", index)
        .map_err(Unavailable::driver)?;
    let info = device_info(dev).map_err(Unavailable::driver)?;
    let mut driver_version = format_driver_version(version);
    if let Some(module) = std::fs::read_to_string("/proc/driver/nvidia/version")
        .ok()
        .and_then(|text| kernel_module_version(&text))
    {
        driver_version = format!("{driver_version} (NVIDIA {module})");
    }
    let probe = Probe {
        info,
        driver_version,
    };
    Ok((probe, version))
}

fn device_info(dev: cu::CUdevice) -> Result<DeviceInfo, DeviceError> {
    use CUdevice_attribute::*;
    const WHAT: &str = "the CUDA driver could not describe the GPU";
    let attribute = |attribute| result::attribute(WHAT, dev, attribute);
    let major = to_u32(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?);
    let minor = to_u32(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?);
    let uuid = result::uuid(WHAT, dev)?;
    let memory_bytes = result::total_memory(WHAT, dev)?;
    Ok(DeviceInfo {
        backend: kernelbook_core::results::DeviceApi::Cuda,
        name: result::name(WHAT, dev)?,
        uuid: format_uuid(&uuid),
        arch: format!("sm_{major}{minor}"),
        compute_capability: (major, minor),
        sm_count: to_u32(attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?),
        l2_bytes: to_u64(attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?),
        memory_bytes: u64::try_from(memory_bytes).unwrap_or(u64::MAX),
        memory_clock_khz: to_u64(attribute(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?),
        bus_width_bits: to_u64(attribute(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?),
        sm_clock_khz: to_u64(attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE)?),
        max_threads_per_sm: to_u32(attribute(
            CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
        )?),
        max_shared_bytes_per_block: to_u64(attribute(
            CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        )?),
        warp_size: to_u32(attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE)?),
        // For the book's tables only: a driver that does not answer leaves a gap, not a failure.
        registers_per_sm: reported(attribute(
            CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
        ))
        .map(to_u32),
        shared_bytes_per_sm: reported(attribute(
            CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
        ))
        .map(to_u64),
    })
}

/// An attribute's value where the driver gave a positive one.
fn reported<E>(value: Result<i32, E>) -> Option<i32> {
    value.ok().filter(|&v| v > 0)
}

/// The SM and memory clocks of the GPU with this UUID now, from nvidia-smi (which reads them
/// through NVML; the runner only reads them).
pub(super) fn clocks(uuid: &str) -> Option<Clocks> {
    let output = std::process::Command::new("nvidia-smi")
        .args([
            "--query-gpu=clocks.sm,clocks.mem",
            "--format=csv,noheader,nounits",
            "-i",
            uuid,
        ])
        .output()
        .ok()?;
    parse_clocks(&String::from_utf8_lossy(&output.stdout))
}

/// Reads nvidia-smi's "1980, 3201" (SM and memory clocks in MHz).
fn parse_clocks(text: &str) -> Option<Clocks> {
    let mut numbers = text
        .lines()
        .next()?
        .split(',')
        .map(|v| v.trim().parse::<u32>());
    match (numbers.next(), numbers.next()) {
        (Some(Ok(sm_mhz)), Some(Ok(memory_mhz))) => Some(Clocks { sm_mhz, memory_mhz }),
        _ => None,
    }
}

/// The kernel module's version from `/proc/driver/nvidia/version`: the figure readers know
/// their driver by ("580.159.04"), beside the CUDA version the driver API reports.
fn kernel_module_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.starts_with("NVRM version:"))?;
    line.split_whitespace()
        .find(|word| word.chars().next().is_some_and(|c| c.is_ascii_digit()) && word.contains('.'))
        .map(str::to_string)
}

/// "13.0" from `cuDriverGetVersion`'s 13000 (major × 1000 + minor × 10).
pub(super) fn format_driver_version(version: i32) -> String {
    format!("{}.{}", version / 1000, (version % 1000) / 10)
}

/// A UUID as nvidia-smi prints it: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".
fn format_uuid(bytes: &[u8; 16]) -> String {
    let hex = |range: std::ops::Range<usize>| -> String {
        bytes[range].iter().map(|b| format!("{b:02x}")).collect()
    };
    format!(
        "GPU-{}-{}-{}-{}-{}",
        hex(0..4),
        hex(4..6),
        hex(6..8),
        hex(8..10),
        hex(10..16)
    )
}

/// A driver attribute that cannot be negative, as unsigned (0 if it somehow is).
pub(super) fn to_u32(value: i32) -> u32 {
    u32::try_from(value).unwrap_or(0)
}

fn to_u64(value: i32) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_clocks_from_nvidia_smi() {
        assert_eq!(
            parse_clocks("1980, 3201\n"),
            Some(Clocks {
                sm_mhz: 1980,
                memory_mhz: 3201
            })
        );
        assert_eq!(parse_clocks("[N/A], 3201\n"), None);
        assert_eq!(parse_clocks(""), None);
    }

    #[test]
    fn reads_the_kernel_module_version() {
        let text = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Tue Oct  7 16:32:12 UTC 2025\nGCC version:  gcc version 12.2.0\n";
        assert_eq!(kernel_module_version(text).as_deref(), Some("580.159.04"));
        assert_eq!(kernel_module_version("garbage"), None);
    }

    #[test]
    fn driver_versions_read_as_major_dot_minor() {
        assert_eq!(format_driver_version(13000), "13.0");
        assert_eq!(format_driver_version(12080), "12.8");
        assert_eq!(format_driver_version(12020), "12.2");
        assert_eq!(format_driver_version(11040), "11.4");
        assert_eq!(format_driver_version(13010), "13.1");
    }

    #[test]
    fn uuids_read_like_nvidia_smi() {
        let bytes = [
            0x4f, 0x0a, 0x1b, 0x2c, 0x3d, 0x4e, 0x5f, 0x60, 0x71, 0x82, 0x93, 0xa4, 0xb5, 0xc6,
            0xd7, 0xe8,
        ];
        assert_eq!(
            format_uuid(&bytes),
            "GPU-4f0a1b2c-3d4e-5f60-7182-93a4b5c6d7e8"
        );
        assert_eq!(
            format_uuid(&[0; 16]),
            "GPU-00000000-0000-0000-0000-000000000000"
        );
    }

    #[test]
    fn negative_attributes_read_as_zero() {
        assert_eq!(to_u32(-1), 0);
        assert_eq!(to_u32(132), 132);
        assert_eq!(to_u64(-5), 0);
        assert_eq!(to_u64(6144), 6144);
    }

    #[test]
    fn unavailable_messages_are_one_line() {
        for reason in [
            Unavailable::NoDriver,
            Unavailable::NoDevice,
            Unavailable::NoCompiler,
            Unavailable::NoSuchGpu {
                ordinal: 1,
                count: 1,
            },
            Unavailable::OldDriver {
                found: "12.8".into(),
                needed: "13.0".into(),
            },
            Unavailable::Driver(DeviceError::new("x", "y")),
            Unavailable::NvrtcVersion("x".into()),
        ] {
            assert!(!reason.to_string().contains('\n'));
        }
    }

    #[test]
    fn running_out_of_memory_while_opening_names_the_other_process() {
        let why = Unavailable::driver(DeviceError::of_kind(
            DeviceErrorKind::OutOfMemory,
            "the CUDA driver could not open the GPU",
            "CUDA_ERROR_OUT_OF_MEMORY: out of memory",
        ));
        assert_eq!(
            why.to_string(),
            "the CUDA driver could not open the GPU: CUDA_ERROR_OUT_OF_MEMORY: out of memory \
             (another process is using the GPU's memory)"
        );
    }
}
