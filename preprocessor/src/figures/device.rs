//! `{{#device LAB PROPERTY}}`: a property of the GPU a lab's results come from, as the book's
//! reference tables show it — what the driver reported (SM count, L2, clocks), the theoretical
//! peaks that follow from those, and on-chip rates from [`kernelbook_core::peaks`]. A property a
//! recording lacks (recorded before the runner read it) or an architecture without a cited
//! constant is a gap, never a number from another GPU.

use super::{Gap, ParseError};
use kernelbook_core::peaks;
use kernelbook_core::results::DeviceInfo;

/// A property `{{#device}}` can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Property {
    /// The GPU's name ("NVIDIA H200"), the default.
    Name,
    Sms,
    SmClockGhz,
    L2Mib,
    MemoryGib,
    MemoryClockMhz,
    BusWidthBits,
    /// Theoretical DRAM bandwidth (memory clock × 2 × bus width), GB/s.
    PeakGbs,
    /// That bandwidth shared out over the SMs, GB/s.
    PeakGbsPerSm,
    RegisterKibPerSm,
    SharedKibPerSm,
    /// 32-bit FMA lanes per SM (a cited per-architecture constant).
    Fp32Lanes,
    Fp32PeakTflops,
    /// Aggregate shared-memory bandwidth: 32 banks × 4 B × SMs × clock, TB/s.
    SmemTbs,
    SmemGbsPerSm,
    /// Register operands the FMAs of one SM read: lanes × 3 × 4 B × clock, TB/s.
    RegisterTbsPerSm,
    RegisterTbs,
}

/// How a property's value is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// A whole number, as the lab tables print GB/s and clocks ("4814", "3201").
    Whole,
    /// Three significant figures, trailing zeros dropped ("1.98", "33.5", "253", "60").
    Sig,
}

type Value = fn(&DeviceInfo) -> Result<f64, Gap>;

const PROPERTIES: [(&str, Property, Format, Value); 16] = [
    ("sms", Property::Sms, Format::Whole, |d| {
        Ok(d.sm_count.into())
    }),
    ("sm_clock_ghz", Property::SmClockGhz, Format::Sig, |d| {
        Ok(d.sm_clock_khz as f64 / 1e6)
    }),
    ("l2_mib", Property::L2Mib, Format::Sig, |d| {
        Ok(d.l2_bytes as f64 / MIB)
    }),
    ("memory_gib", Property::MemoryGib, Format::Sig, |d| {
        Ok(d.memory_bytes as f64 / MIB / 1024.0)
    }),
    (
        "memory_clock_mhz",
        Property::MemoryClockMhz,
        Format::Whole,
        |d| reported(d.memory_clock_khz as f64 / 1e3, "memory clock"),
    ),
    (
        "bus_width_bits",
        Property::BusWidthBits,
        Format::Whole,
        |d| reported(d.bus_width_bits as f64, "memory bus width"),
    ),
    ("peak_gbs", Property::PeakGbs, Format::Whole, |d| {
        reported(d.theoretical_gbs(), "memory clock and bus width")
    }),
    (
        "peak_gbs_per_sm",
        Property::PeakGbsPerSm,
        Format::Sig,
        |d| {
            reported(d.theoretical_gbs(), "memory clock and bus width")
                .map(|gbs| gbs / f64::from(d.sm_count))
        },
    ),
    (
        "register_kib_per_sm",
        Property::RegisterKibPerSm,
        Format::Sig,
        |d| {
            let registers = d
                .registers_per_sm
                .ok_or_else(|| unrecorded("registers per SM"))?;
            Ok(f64::from(registers) * 4.0 / 1024.0)
        },
    ),
    (
        "shared_kib_per_sm",
        Property::SharedKibPerSm,
        Format::Sig,
        |d| {
            let bytes = d
                .shared_bytes_per_sm
                .ok_or_else(|| unrecorded("shared memory per SM"))?;
            Ok(bytes as f64 / 1024.0)
        },
    ),
    ("fp32_lanes", Property::Fp32Lanes, Format::Whole, |d| {
        lanes(d).map(f64::from)
    }),
    (
        "fp32_peak_tflops",
        Property::Fp32PeakTflops,
        Format::Sig,
        |d| Ok(peaks::fp32_peak_gflops(lanes(d)?, d.sm_count, d.sm_clock_khz) / 1e3),
    ),
    ("smem_tbs", Property::SmemTbs, Format::Sig, |d| {
        Ok(peaks::shared_memory_gbs(nvidia(d)?.sm_count, d.sm_clock_khz) / 1e3)
    }),
    (
        "smem_gbs_per_sm",
        Property::SmemGbsPerSm,
        Format::Sig,
        |d| Ok(peaks::shared_memory_gbs(1, nvidia(d)?.sm_clock_khz)),
    ),
    (
        "register_tbs_per_sm",
        Property::RegisterTbsPerSm,
        Format::Sig,
        |d| Ok(peaks::register_read_gbs_per_sm(lanes(d)?, d.sm_clock_khz) / 1e3),
    ),
    ("register_tbs", Property::RegisterTbs, Format::Sig, |d| {
        let per_sm = peaks::register_read_gbs_per_sm(lanes(d)?, d.sm_clock_khz);
        Ok(per_sm * f64::from(d.sm_count) / 1e3)
    }),
];

const MIB: f64 = 1024.0 * 1024.0;

fn reported(value: f64, what: &'static str) -> Result<f64, Gap> {
    if value > 0.0 {
        Ok(value)
    } else {
        Err(Gap::NotReported(what))
    }
}

fn unrecorded(what: &'static str) -> Gap {
    Gap::NotRecorded(what)
}

fn not_cited(what: &'static str, d: &DeviceInfo) -> Gap {
    Gap::NotCited {
        what,
        arch: d.arch.clone(),
        name: d.name.clone(),
    }
}

/// The bank layout of [`peaks::SHARED_BANKS`] is NVIDIA's, cited for NVIDIA GPUs only.
fn nvidia(d: &DeviceInfo) -> Result<&DeviceInfo, Gap> {
    if d.backend == kernelbook_core::results::DeviceApi::Cuda {
        Ok(d)
    } else {
        Err(not_cited("shared-memory bank layout", d))
    }
}

fn lanes(d: &DeviceInfo) -> Result<u32, Gap> {
    peaks::fp32_lanes_per_sm(d).ok_or_else(|| not_cited("FP32 lane count", d))
}

impl Property {
    /// The property a directive names; `None` names the GPU.
    pub fn parse(word: Option<&str>) -> Result<Property, ParseError> {
        let Some(word) = word else {
            return Ok(Property::Name);
        };
        if word == "name" {
            return Ok(Property::Name);
        }
        PROPERTIES
            .iter()
            .find(|(name, ..)| *name == word)
            .map(|(_, property, ..)| *property)
            .ok_or_else(|| {
                let names: Vec<&str> = PROPERTIES.iter().map(|(name, ..)| *name).collect();
                ParseError::UnknownProperty {
                    word: word.to_string(),
                    names: names.join(", "),
                }
            })
    }

    /// The property of `device`, as the page shows it (the name unescaped).
    pub fn text(self, device: &DeviceInfo) -> Result<String, Gap> {
        if self == Property::Name {
            return Ok(device.name.clone());
        }
        let (_, _, format, value) = PROPERTIES
            .iter()
            .find(|(_, property, ..)| *property == self)
            .ok_or(Gap::NotCited {
                what: "definition of this property",
                arch: device.arch.clone(),
                name: device.name.clone(),
            })?;
        let value = value(device)?;
        Ok(match format {
            Format::Whole => format!("{value:.0}"),
            Format::Sig => super::significant(value),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h200() -> DeviceInfo {
        let text = include_str!("../../../labs/recorded/nvidia-h200-882b8b4e/strided.json");
        let results = kernelbook_core::results::LabResults::from_json(text).expect("recording");
        DeviceInfo {
            registers_per_sm: Some(65_536),
            shared_bytes_per_sm: Some(233_472),
            ..results.provenance.device
        }
    }

    fn text(word: &str, device: &DeviceInfo) -> Result<String, String> {
        let property = Property::parse(Some(word)).map_err(|e| e.to_string())?;
        property.text(device).map_err(|e| e.to_string())
    }

    #[test]
    fn the_h200s_properties_read_as_the_tables_print_them() {
        let d = h200();
        for (word, shown) in [
            ("name", "NVIDIA H200"),
            ("sms", "132"),
            ("sm_clock_ghz", "1.98"),
            ("l2_mib", "60"),
            ("memory_gib", "140"),
            ("memory_clock_mhz", "3201"),
            ("bus_width_bits", "6016"),
            ("peak_gbs", "4814"),
            ("peak_gbs_per_sm", "36.5"),
            ("register_kib_per_sm", "256"),
            ("shared_kib_per_sm", "228"),
            ("fp32_lanes", "128"),
            ("fp32_peak_tflops", "66.9"),
            ("smem_tbs", "33.5"),
            ("smem_gbs_per_sm", "253"),
            ("register_tbs_per_sm", "3.04"),
            ("register_tbs", "401"),
        ] {
            assert_eq!(text(word, &d).as_deref(), Ok(shown), "{word}");
        }
        assert_eq!(Property::parse(None), Ok(Property::Name));
    }

    #[test]
    fn what_a_recording_or_an_architecture_lacks_is_a_gap_with_a_reason() {
        let mut d = h200();
        d.registers_per_sm = None;
        d.memory_clock_khz = 0;
        d.compute_capability = (6, 1);
        let err = text("register_kib_per_sm", &d).expect_err("unrecorded");
        assert!(err.contains("do not record the registers per SM"), "{err}");
        let err = text("peak_gbs", &d).expect_err("unreported");
        assert!(err.contains("did not report"), "{err}");
        let err = text("register_tbs", &d).expect_err("no constant");
        assert!(err.contains("no cited FP32 lane count"), "{err}");
        d.backend = kernelbook_core::results::DeviceApi::Hip;
        let err = text("smem_tbs", &d).expect_err("not NVIDIA's banks");
        assert!(err.contains("no cited shared-memory bank layout"), "{err}");
        let err = Property::parse(Some("speed"))
            .expect_err("unknown")
            .to_string();
        assert!(err.contains("unknown device property `speed`"), "{err}");
    }
}
