//! Identifying a GPU without opening it: its count, attributes, architecture name and the
//! runtime's version. See [`super`] for how the architecture name is read.

use super::ffi::*;
use super::loader::{Runtime, Unavailable, runtime};
use super::result::HipError;
use kernelbook_core::results::DeviceInfo;
use std::ffi::{c_char, c_int, c_void};

/// What the runtime says about a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub info: DeviceInfo,
    /// e.g. "HIP 6.2.41133 (amdgpu 6.8.5)".
    pub driver_version: String,
}

/// Why a GPU the runtime reported could not be described (the text of an
/// [`Unavailable::Runtime`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum DescribeError {
    #[error(transparent)]
    Hip(#[from] HipError),
    #[error("{file} exports neither hipGetDevicePropertiesR0600 nor hipGetDeviceProperties")]
    NoProperties { file: String },
    #[error(
        "the architecture name read from hipDeviceProp_t ({layout} layout) is not a gfx target: \
         this HIP runtime's struct layout is not one kernelbook knows"
    )]
    UnknownLayout { layout: &'static str },
}

/// Identifies AMD GPU 0.
pub fn probe() -> Result<Probe, Unavailable> {
    probe_gpu(0)
}

/// Identifies AMD GPU `ordinal` (counted as HIP counts them: among the GPUs
/// `HIP_VISIBLE_DEVICES` leaves visible).
pub fn probe_gpu(ordinal: usize) -> Result<Probe, Unavailable> {
    let rt = runtime()?;
    probe_ordinal(rt, ordinal).map(|(probe, _)| probe)
}

/// Identifies every AMD GPU the runtime reports, in its order.
pub fn probe_all() -> Result<Vec<Probe>, Unavailable> {
    let rt = runtime()?;
    let count = usize::try_from(device_count(rt)?).unwrap_or(0);
    (0..count)
        .map(|ordinal| probe_ordinal(rt, ordinal).map(|(probe, _)| probe))
        .collect()
}

/// Identifies GPU `ordinal`; also returns its `hipDevice_t`.
pub(super) fn probe_ordinal(rt: &Runtime, ordinal: usize) -> Result<(Probe, c_int), Unavailable> {
    let count = device_count(rt)?;
    let index = c_int::try_from(ordinal)
        .ok()
        .filter(|&index| index < count)
        .ok_or_else(|| {
            Unavailable::Runtime(format!(
                "GPU {ordinal} was asked for, but the HIP runtime reports only {count}"
            ))
        })?;
    let mut device: c_int = 0;
    // SAFETY: the runtime writes one int through a pointer to a live local; `index` is in range.
    rt.check(unsafe { (rt.device_get)(&mut device, index) })
        .map_err(|e| {
            Unavailable::Runtime(format!("the HIP runtime could not open GPU {index}: {e}"))
        })?;
    let info = device_info(rt, device).map_err(|e| {
        Unavailable::Runtime(format!("the HIP runtime could not describe the GPU: {e}"))
    })?;
    let version = rt.version().map_err(|e| {
        Unavailable::Runtime(format!("the HIP runtime could not report its version: {e}"))
    })?;
    let mut driver_version = format!("HIP {}", format_hip_version(version));
    if let Some(module) = std::fs::read_to_string("/sys/module/amdgpu/version")
        .ok()
        .map(|text| text.trim().to_string())
        .filter(|text| !text.is_empty() && !text.contains(char::is_whitespace))
    {
        driver_version = format!("{driver_version} (amdgpu {module})");
    }
    Ok((
        Probe {
            info,
            driver_version,
        },
        device,
    ))
}

/// Starts the runtime and counts its GPUs; no GPU at all is [`Unavailable::NoDevice`].
fn device_count(rt: &Runtime) -> Result<c_int, Unavailable> {
    // SAFETY: `hipInit` takes flags (which must be 0) and has no pointer arguments.
    let init = unsafe { (rt.init)(0) };
    let mut count: c_int = 0;
    // SAFETY: the runtime writes one int through a pointer to a live local.
    let counted = unsafe { (rt.get_device_count)(&mut count) };
    if init != status::SUCCESS {
        // Without a GPU, ROCm 5.2's `hipInit` answers "invalid device" and the count "no
        // device"; newer versions answer "no device" to both.
        if init == status::NO_DEVICE
            || counted == status::NO_DEVICE
            || (init == status::INVALID_DEVICE && (counted != status::SUCCESS || count == 0))
        {
            return Err(Unavailable::NoDevice);
        }
        return Err(Unavailable::Runtime(format!(
            "the HIP runtime ({}) could not start: {}",
            rt.file,
            rt.error_text(init)
        )));
    }
    if counted == status::NO_DEVICE || (counted == status::SUCCESS && count <= 0) {
        return Err(Unavailable::NoDevice);
    }
    rt.check(counted).map_err(|e| {
        Unavailable::Runtime(format!("the HIP runtime could not count its GPUs: {e}"))
    })?;
    Ok(count)
}

fn device_info(rt: &Runtime, device: c_int) -> Result<DeviceInfo, DescribeError> {
    let attribute = |which| rt.attribute(device, which);
    let arch = arch_name(rt, device)?;
    let mut name_buffer = [0 as c_char; 256];
    // SAFETY: the runtime writes at most `len` bytes, NUL included, into the buffer.
    rt.check(unsafe { (rt.device_get_name)(name_buffer.as_mut_ptr(), 256, device) })?;
    let name = text_from_c_chars(&name_buffer).trim().to_string();
    let mut memory_bytes = 0usize;
    // SAFETY: the runtime writes one `size_t` through a pointer to a live local.
    rt.check(unsafe { (rt.device_total_mem)(&mut memory_bytes, device) })?;
    let uuid = uuid(rt, device);
    let major = to_u32(attribute(attr::COMPUTE_CAPABILITY_MAJOR)?);
    let minor = to_u32(attribute(attr::COMPUTE_CAPABILITY_MINOR)?);
    let shared_per_block = to_u64(attribute(attr::MAX_SHARED_MEMORY_PER_BLOCK)?);
    // AMD GPUs have no opt-in for more LDS; some versions report 0 here, some the same value.
    let shared_opt_in = attribute(attr::SHARED_MEM_PER_BLOCK_OPTIN)
        .map(to_u64)
        .unwrap_or(0);
    Ok(DeviceInfo {
        backend: kernelbook_core::results::DeviceApi::Hip,
        name: if name.is_empty() { arch.clone() } else { name },
        uuid,
        compute_capability: (major, minor),
        sm_count: to_u32(attribute(attr::MULTIPROCESSOR_COUNT)?),
        l2_bytes: to_u64(attribute(attr::L2_CACHE_SIZE)?),
        memory_bytes: u64::try_from(memory_bytes).unwrap_or(u64::MAX),
        memory_clock_khz: to_u64(attribute(attr::MEMORY_CLOCK_RATE)?),
        bus_width_bits: to_u64(attribute(attr::MEMORY_BUS_WIDTH)?),
        sm_clock_khz: to_u64(attribute(attr::CLOCK_RATE)?),
        max_threads_per_sm: to_u32(attribute(attr::MAX_THREADS_PER_MULTIPROCESSOR)?),
        max_shared_bytes_per_block: shared_per_block.max(shared_opt_in),
        warp_size: attribute(attr::WARP_SIZE)
            .ok()
            .map(to_u32)
            .filter(|&size| size > 0)
            .unwrap_or_else(|| derived_warp_size(&arch)),
        // For the book's tables only: a runtime that does not answer leaves a gap.
        registers_per_sm: reported(attribute(attr::MAX_REGISTERS_PER_MULTIPROCESSOR)).map(to_u32),
        shared_bytes_per_sm: reported(attribute(attr::SHARED_MEM_PER_MULTIPROCESSOR)).map(to_u64),
        arch,
    })
}

/// An attribute's value where the runtime gave a positive one.
fn reported<E>(value: Result<c_int, E>) -> Option<c_int> {
    value.ok().filter(|&v| v > 0)
}

/// The wavefront size where the runtime does not report it: 64 on gfx9 (GCN and CDNA: MI50 to
/// MI300), 32 on gfx10 and later (RDNA), which run wave32 by default.
fn derived_warp_size(arch: &str) -> u32 {
    if arch.starts_with("gfx9") { 64 } else { 32 }
}

/// The GPU's UUID, or "" where the runtime has no `hipDeviceGetUuid` or it fails.
fn uuid(rt: &Runtime, device: c_int) -> String {
    let Some(get_uuid) = rt.device_get_uuid else {
        return String::new();
    };
    let mut uuid = HipUuid { bytes: [0; 16] };
    // SAFETY: the runtime writes one 16-byte `hipUUID` into a live local of that layout.
    match rt.check(unsafe { get_uuid(&mut uuid, device) }) {
        Ok(()) => format_uuid(&uuid.bytes),
        Err(_) => String::new(),
    }
}

/// The GPU's architecture ("gfx90a") from `hipDeviceProp_t::gcnArchName`.
fn arch_name(rt: &Runtime, device: c_int) -> Result<String, DescribeError> {
    let Some((get_properties, layout)) = rt.get_device_properties else {
        return Err(DescribeError::NoProperties {
            file: rt.file.clone(),
        });
    };
    // u64s, so the buffer is aligned as the struct (8 bytes) requires.
    let mut words = vec![0u64; PROPS_BUFFER_BYTES / 8];
    // SAFETY: the function fills one `hipDeviceProp_t` of `layout` (at most 1472 bytes, see
    // `PropsLayout`) at the start of a zeroed, 8-aligned buffer of 4096 bytes that lives for
    // the whole call.
    rt.check(unsafe { get_properties(words.as_mut_ptr().cast::<c_void>(), device) })?;
    let bytes: Vec<u8> = words.iter().flat_map(|word| word.to_ne_bytes()).collect();
    arch_from_properties(&bytes, layout.arch_name_offset()).ok_or(DescribeError::UnknownLayout {
        layout: match layout {
            PropsLayout::R0600 => "R0600",
            PropsLayout::R0000 => "R0000",
        },
    })
}

/// The architecture in a `hipDeviceProp_t` whose `gcnArchName` starts at `offset`.
fn arch_from_properties(bytes: &[u8], offset: usize) -> Option<String> {
    let field = bytes.get(offset..offset.checked_add(ARCH_NAME_BYTES)?)?;
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    let text = std::str::from_utf8(field.get(..end)?).ok()?;
    parse_gcn_arch_name(text)
}

/// The compile target in a `gcnArchName`: "gfx90a:sramecc+:xnack-" → "gfx90a". The feature
/// flags are dropped: code compiled for the bare target runs with either setting.
pub fn parse_gcn_arch_name(name: &str) -> Option<String> {
    let target = name.trim().split(':').next()?.trim();
    let digits = target.strip_prefix("gfx")?;
    let valid = !digits.is_empty()
        && digits.len() <= 8
        && digits.chars().all(|c| c.is_ascii_alphanumeric());
    valid.then(|| target.to_string())
}

/// "6.2.41133" from `hipRuntimeGetVersion`'s 60241133 (major × 10⁷ + minor × 10⁵ + patch).
pub fn format_hip_version(version: i32) -> String {
    if version <= 0 {
        return format!("unknown ({version})");
    }
    format!(
        "{}.{}.{}",
        version / 10_000_000,
        (version / 100_000) % 100,
        version % 100_000
    )
}

/// A UUID as `rocm-smi` prints it. ROCm's UUID is 16 ASCII characters (hex digits), shown as
/// "GPU-" followed by them; other bytes are shown as hex in the 8-4-4-4-12 form.
fn format_uuid(bytes: &[u8; 16]) -> String {
    if bytes.iter().all(|b| b.is_ascii_alphanumeric()) {
        return format!("GPU-{}", String::from_utf8_lossy(bytes));
    }
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

/// Text from a NUL-terminated `c_char` buffer, without the terminator.
fn text_from_c_chars(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .map(|c| u8::from_ne_bytes(c.to_ne_bytes()))
        .take_while(|&b| b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// An attribute that cannot be negative, as unsigned (0 if it somehow is).
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
    fn a_wavefront_is_64_threads_on_gfx9_and_32_after() {
        assert_eq!(derived_warp_size("gfx90a"), 64);
        assert_eq!(derived_warp_size("gfx942"), 64);
        assert_eq!(derived_warp_size("gfx1100"), 32);
    }

    #[test]
    fn hip_versions_read_as_major_minor_patch() {
        assert_eq!(format_hip_version(50221153), "5.2.21153");
        assert_eq!(format_hip_version(60241133), "6.2.41133");
        assert_eq!(format_hip_version(70051831), "7.0.51831");
        assert_eq!(format_hip_version(0), "unknown (0)");
    }

    #[test]
    fn arch_names_lose_their_feature_flags() {
        assert_eq!(
            parse_gcn_arch_name("gfx90a:sramecc+:xnack-").as_deref(),
            Some("gfx90a")
        );
        assert_eq!(
            parse_gcn_arch_name("gfx942:sramecc+:xnack-").as_deref(),
            Some("gfx942")
        );
        assert_eq!(parse_gcn_arch_name("gfx1100").as_deref(), Some("gfx1100"));
        assert_eq!(
            parse_gcn_arch_name(" gfx908:xnack- ").as_deref(),
            Some("gfx908")
        );
        assert_eq!(parse_gcn_arch_name(""), None);
        assert_eq!(parse_gcn_arch_name("gfx"), None);
        assert_eq!(parse_gcn_arch_name("AMD Instinct MI210"), None);
        assert_eq!(parse_gcn_arch_name("gfx9 0a"), None);
        assert_eq!(parse_gcn_arch_name("sm_90"), None);
    }

    #[test]
    fn the_arch_name_is_read_at_each_layouts_offset() {
        for layout in [PropsLayout::R0600, PropsLayout::R0000] {
            let mut props = vec![0u8; PROPS_BUFFER_BYTES];
            props[..18].copy_from_slice(b"AMD Instinct MI210");
            let offset = layout.arch_name_offset();
            let arch = b"gfx90a:sramecc+:xnack-";
            props[offset..offset + arch.len()].copy_from_slice(arch);
            assert_eq!(
                arch_from_properties(&props, offset).as_deref(),
                Some("gfx90a")
            );
        }
        // The wrong offset reads no architecture, and a short buffer is not read past.
        let props = vec![0u8; PROPS_BUFFER_BYTES];
        assert_eq!(arch_from_properties(&props, 396), None);
        assert_eq!(arch_from_properties(&props[..500], 396), None);
        assert_eq!(arch_from_properties(&props, usize::MAX), None);
        // An unterminated field is read to its end.
        let mut props = vec![b'x'; 1500];
        props[1160..1166].copy_from_slice(b"gfx942");
        assert_eq!(arch_from_properties(&props, 1160), None);
        props[1166] = 0;
        assert_eq!(
            arch_from_properties(&props, 1160).as_deref(),
            Some("gfx942")
        );
    }

    #[test]
    fn uuids_read_like_rocm_smi() {
        assert_eq!(format_uuid(b"6f2b8a2d1c3e4f50"), "GPU-6f2b8a2d1c3e4f50");
        assert_eq!(
            format_uuid(&[0; 16]),
            "GPU-00000000-0000-0000-0000-000000000000"
        );
    }

    #[test]
    fn c_text_stops_at_the_terminator() {
        let chars: Vec<c_char> = b"AMD Instinct MI210\0junk"
            .iter()
            .map(|&b| c_char::from_ne_bytes([b]))
            .collect();
        assert_eq!(text_from_c_chars(&chars), "AMD Instinct MI210");
        assert_eq!(to_u32(-1), 0);
        assert_eq!(to_u64(4096), 4096);
    }

    #[test]
    fn describe_errors_keep_the_old_messages() {
        assert_eq!(
            DescribeError::UnknownLayout { layout: "R0600" }.to_string(),
            "the architecture name read from hipDeviceProp_t (R0600 layout) is not a gfx \
             target: this HIP runtime's struct layout is not one kernelbook knows"
        );
    }
}
