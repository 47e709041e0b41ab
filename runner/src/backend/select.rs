//! Which GPUs of the host to measure on (`--devices all`, `--devices 0,2`,
//! `--devices GPU-d8d1645c`): the selection as written, and the GPUs of this host it picks.
//! Pure: the caller lists the GPUs ([`super::gpus`]).

use kernelbook_core::results::DeviceInfo;

/// A `--devices` value.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum DeviceSelection {
    /// The vendor's first GPU: what a command measures on without `--devices`.
    #[default]
    First,
    /// Every GPU the driver reports (those `CUDA_VISIBLE_DEVICES` leaves visible).
    All,
    /// These GPUs, in this order.
    Listed(Vec<DeviceRef>),
}

/// One GPU of a `--devices` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceRef {
    /// Its ordinal, as the driver numbers the GPUs (nvidia-smi's index where nothing hides one).
    Index(usize),
    /// Its UUID or the start of it, e.g. `GPU-d8d1645c`.
    Uuid(String),
}

/// A `--devices` value that cannot be read, or names no GPU of this host.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectError {
    #[error(
        "`{0}` is not a list of GPUs: write `all`, indices (`0,1`) or UUIDs (`GPU-d8d1645c`), separated by commas"
    )]
    Malformed(String),
    #[error("no GPU was found to measure on")]
    NoGpu,
    #[error("GPU {index} was asked for, but this machine has {count}: {listed}")]
    NoSuchIndex {
        index: usize,
        count: usize,
        listed: String,
    },
    #[error("no GPU of this machine has a UUID starting `{uuid}`: {listed}")]
    NoSuchUuid { uuid: String, listed: String },
    #[error("`{uuid}` starts the UUIDs of GPUs {first} and {second}: give more of it")]
    Ambiguous {
        uuid: String,
        first: usize,
        second: usize,
    },
}

impl std::str::FromStr for DeviceSelection {
    type Err = SelectError;

    fn from_str(text: &str) -> Result<Self, SelectError> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("all") {
            return Ok(DeviceSelection::All);
        }
        let malformed = || SelectError::Malformed(kernelbook_core::terminal::one_line(text).into());
        let refs = text
            .split(',')
            .map(str::trim)
            .map(|entry| {
                if entry.is_empty() || entry.chars().any(char::is_whitespace) {
                    Err(malformed())
                } else if entry.bytes().all(|b| b.is_ascii_digit()) {
                    entry.parse().map(DeviceRef::Index).map_err(|_| malformed())
                } else {
                    Ok(DeviceRef::Uuid(entry.to_string()))
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(DeviceSelection::Listed(refs))
    }
}

impl DeviceSelection {
    /// The ordinals of the GPUs of `gpus` (the host's, in the driver's order) this selection
    /// picks, each once, in the order asked for.
    pub fn resolve(&self, gpus: &[DeviceInfo]) -> Result<Vec<usize>, SelectError> {
        if gpus.is_empty() {
            return Err(SelectError::NoGpu);
        }
        let refs = match self {
            DeviceSelection::First => return Ok(vec![0]),
            DeviceSelection::All => return Ok((0..gpus.len()).collect()),
            DeviceSelection::Listed(refs) => refs,
        };
        let mut picked: Vec<usize> = Vec::new();
        for device in refs {
            let index = match device {
                DeviceRef::Index(index) if *index < gpus.len() => *index,
                DeviceRef::Index(index) => {
                    return Err(SelectError::NoSuchIndex {
                        index: *index,
                        count: gpus.len(),
                        listed: listed(gpus),
                    });
                }
                DeviceRef::Uuid(uuid) => by_uuid(uuid, gpus)?,
            };
            if !picked.contains(&index) {
                picked.push(index);
            }
        }
        Ok(picked)
    }
}

/// The one GPU whose UUID starts with `uuid` (ignoring case).
fn by_uuid(uuid: &str, gpus: &[DeviceInfo]) -> Result<usize, SelectError> {
    let wanted = uuid.to_ascii_lowercase();
    let mut matches = gpus
        .iter()
        .enumerate()
        .filter(|(_, gpu)| gpu.uuid.to_ascii_lowercase().starts_with(&wanted))
        .map(|(index, _)| index);
    match (matches.next(), matches.next()) {
        (Some(index), None) => Ok(index),
        (Some(first), Some(second)) => Err(SelectError::Ambiguous {
            uuid: uuid.to_string(),
            first,
            second,
        }),
        (None, _) => Err(SelectError::NoSuchUuid {
            uuid: uuid.to_string(),
            listed: listed(gpus),
        }),
    }
}

/// "0: NVIDIA H200 (GPU-d8d1645c-…), 1: …": the host's GPUs, for an error message.
fn listed(gpus: &[DeviceInfo]) -> String {
    gpus.iter()
        .enumerate()
        .map(|(index, gpu)| format!("{index}: {} ({})", gpu.name, gpu.uuid))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host() -> Vec<DeviceInfo> {
        let gpu = |uuid: &str| {
            let mut info = crate::plan::tests::h200();
            info.uuid = uuid.into();
            info
        };
        vec![
            gpu("GPU-d8d1645c-8517-03ad-8621-cfe1592a5c73"),
            gpu("GPU-b780f725-fe96-b196-3303-e4a68e6a6860"),
            gpu("GPU-b7000000-0000-0000-0000-000000000000"),
        ]
    }

    fn select(text: &str) -> Result<Vec<usize>, SelectError> {
        text.parse::<DeviceSelection>()?.resolve(&host())
    }

    #[test]
    fn all_indices_and_uuids_pick_gpus_in_the_order_asked() {
        assert_eq!(select("all"), Ok(vec![0, 1, 2]));
        assert_eq!(select("ALL"), Ok(vec![0, 1, 2]));
        assert_eq!(select("2,0"), Ok(vec![2, 0]));
        assert_eq!(select(" 1 , 1 ,0"), Ok(vec![1, 0]), "each GPU once");
        assert_eq!(select("GPU-b780"), Ok(vec![1]));
        assert_eq!(
            select("gpu-D8D1645C,2"),
            Ok(vec![0, 2]),
            "UUIDs ignore case"
        );
        assert_eq!(DeviceSelection::First.resolve(&host()), Ok(vec![0]));
    }

    #[test]
    fn a_gpu_the_host_lacks_is_named_with_the_gpus_it_has() {
        let err = select("3").expect_err("no GPU 3");
        assert!(
            err.to_string().starts_with(
                "GPU 3 was asked for, but this machine has 3: 0: NVIDIA H200 (GPU-d8d1645c"
            ),
            "{err}"
        );
        let err = select("GPU-ffff").expect_err("no such UUID");
        assert!(err.to_string().contains("starting `GPU-ffff`"), "{err}");
        assert_eq!(
            select("GPU-b7"),
            Err(SelectError::Ambiguous {
                uuid: "GPU-b7".into(),
                first: 1,
                second: 2
            })
        );
        assert_eq!(
            DeviceSelection::All.resolve(&[]),
            Err(SelectError::NoGpu),
            "a host without GPUs"
        );
    }

    #[test]
    fn malformed_lists_are_refused() {
        for text in ["", "0,,1", "0 1", ",", "99999999999999999999999"] {
            assert!(
                matches!(
                    text.parse::<DeviceSelection>(),
                    Err(SelectError::Malformed(_))
                ),
                "{text:?}"
            );
        }
    }
}
