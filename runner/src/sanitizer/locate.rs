//! A finding in the reader's coordinates: the tool's `NAME.cu:N` becomes the chapter's line
//! (kernelbook compiles a kernel block as program `NAME.cu`, its lines counted from the top
//! of the block, as [`crate::diagnostics`] maps compiler messages), and a device address
//! becomes an element of one of the lab's buffers.

use super::finding::Site;
use kernelbook_core::spec::ElemType;
use kernelbook_core::{KernelSource, SourceLocation};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The kernels a run compiled, by which a site's file and line are taken back to where the
/// kernel was written.
#[derive(Debug, Clone, Copy)]
pub struct Sources<'a> {
    pub kernels: &'a [KernelSource],
}

/// A site of the source, where the reader wrote it, with the line's text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placed {
    pub at: SourceLocation,
    /// The kernel the line belongs to.
    pub kernel: String,
    /// The line itself, trimmed.
    pub code: Option<String>,
}

impl Sources<'_> {
    /// Where `site` was written: `NAME.cu:N` is line N of kernel NAME's block; a file named as
    /// a kernel's own origin (a `#line` directive put it there) is taken at its word.
    pub fn place(&self, site: &Site) -> Option<Placed> {
        let (file, line) = (site.file.as_deref()?, site.line?);
        let name = Path::new(file).file_name()?.to_str()?;
        if let Some(kernel) = self
            .kernels
            .iter()
            .find(|k| name.strip_suffix(".cu") == Some(k.name.as_str()))
        {
            return Some(Placed {
                at: SourceLocation {
                    file: kernel.origin.file.clone(),
                    line: kernel.origin.line + line.checked_sub(1)?,
                },
                kernel: kernel.name.clone(),
                code: code_line(kernel, line),
            });
        }
        // A `#line N "chapter.md"` directive: the tool prints the chapter's own line (and,
        // with `--strip-paths yes`, its file name only).
        let kernel = self.kernels.iter().find(|k| {
            let origin = &k.origin.file;
            origin.as_path() == Path::new(file)
                || origin.file_name().and_then(|n| n.to_str()) == Some(name)
        })?;
        let offset = line.checked_sub(kernel.origin.line)?;
        Some(Placed {
            at: SourceLocation {
                file: kernel.origin.file.clone(),
                line,
            },
            kernel: kernel.name.clone(),
            code: code_line(kernel, offset + 1),
        })
    }

    /// The first of `sites` that is in a kernel of the book (a fault in a header is reported
    /// at the kernel line that called it).
    pub fn first_placed<'s>(&self, sites: impl IntoIterator<Item = &'s Site>) -> Option<Placed> {
        sites.into_iter().find_map(|site| self.place(site))
    }
}

/// Line `line` (1-based) of a kernel block, trimmed; `None` past its end or where blank.
fn code_line(kernel: &KernelSource, line: usize) -> Option<String> {
    let text = kernel.source.lines().nth(line.checked_sub(1)?)?.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// One of the lab's buffers as the device holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceBuffer {
    pub name: String,
    pub elem: ElemType,
    pub address: u64,
    pub bytes: u64,
}

impl DeviceBuffer {
    pub fn len(&self) -> u64 {
        self.bytes / self.elem.size() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Where an address falls against the lab's buffers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "where", rename_all = "snake_case")]
pub enum Spot {
    /// Inside buffer `buffer`, `byte` bytes from its start: element `byte / size`.
    Inside { buffer: usize, byte: u64 },
    /// `bytes` past the end of buffer `buffer` (0: the first byte after its last).
    After { buffer: usize, bytes: u64 },
    /// `bytes` before the start of buffer `buffer` (1: the byte just before).
    Before { buffer: usize, bytes: u64 },
}

/// The place of `address` among `buffers`: inside one, else past the end of the nearest one
/// below it or before the start of the nearest one above it, whichever is closer. `None`
/// with no buffers.
pub fn spot(buffers: &[DeviceBuffer], address: u64) -> Option<Spot> {
    if let Some(buffer) = buffers
        .iter()
        .position(|b| address >= b.address && address - b.address < b.bytes)
    {
        return Some(Spot::Inside {
            buffer,
            byte: address - buffers[buffer].address,
        });
    }
    let after = buffers
        .iter()
        .enumerate()
        .filter(|(_, b)| address >= b.address + b.bytes)
        .map(|(i, b)| {
            (
                address - (b.address + b.bytes),
                Spot::After {
                    buffer: i,
                    bytes: 0,
                },
            )
        })
        .min_by_key(|(distance, _)| *distance);
    let before = buffers
        .iter()
        .enumerate()
        .filter(|(_, b)| address < b.address)
        .map(|(i, b)| {
            (
                b.address - address,
                Spot::Before {
                    buffer: i,
                    bytes: 0,
                },
            )
        })
        .min_by_key(|(distance, _)| *distance);
    let (distance, spot) = match (after, before) {
        (Some(a), Some(b)) => {
            if a.0 <= b.0 {
                a
            } else {
                b
            }
        }
        (Some(a), None) => a,
        (None, Some(b)) => b,
        (None, None) => return None,
    };
    Some(match spot {
        Spot::After { buffer, .. } => Spot::After {
            buffer,
            bytes: distance,
        },
        Spot::Before { buffer, .. } => Spot::Before {
            buffer,
            bytes: distance,
        },
        inside => inside,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel() -> KernelSource {
        KernelSource {
            name: "oob_tail".into(),
            source: "// shifts\nextern \"C\" __global__ void oob_tail(const float* in, float* out, int n)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) {\n        out[i + 1] = in[i];\n    }\n}\n".into(),
            origin: SourceLocation {
                file: "book/src/exercises/drill-sanitizer.md".into(),
                line: 40,
            },
            language: Default::default(),
        }
    }

    fn site(file: &str, line: usize) -> Site {
        Site {
            function: Some("oob_tail".into()),
            file: Some(file.into()),
            line: Some(line),
        }
    }

    #[test]
    fn a_programs_line_is_the_blocks_line_in_the_chapter() {
        let kernels = [kernel()];
        let sources = Sources { kernels: &kernels };
        let placed = sources.place(&site("oob_tail.cu", 6)).expect("placed");
        assert_eq!(
            placed.at.to_string(),
            "book/src/exercises/drill-sanitizer.md:45"
        );
        assert_eq!(placed.code.as_deref(), Some("out[i + 1] = in[i];"));
        // A full path, as `--strip-paths no` prints it, names the same program.
        assert!(sources.place(&site("/tmp/x/oob_tail.cu", 6)).is_some());
        assert_eq!(sources.place(&site("other.cu", 6)), None);
        assert_eq!(sources.place(&site("oob_tail.cu", 0)), None);
    }

    #[test]
    fn a_line_directive_gives_the_chapters_line_itself() {
        let kernels = [kernel()];
        let sources = Sources { kernels: &kernels };
        for file in [
            "drill-sanitizer.md",
            "book/src/exercises/drill-sanitizer.md",
        ] {
            let placed = sources.place(&site(file, 45)).expect("placed");
            assert_eq!(placed.at.line, 45, "{file}");
            assert_eq!(placed.code.as_deref(), Some("out[i + 1] = in[i];"));
        }
        // Above the block: not in this kernel.
        assert_eq!(sources.place(&site("drill-sanitizer.md", 12)), None);
    }

    fn buffers() -> Vec<DeviceBuffer> {
        let buffer = |name: &str, address| DeviceBuffer {
            name: name.into(),
            elem: ElemType::F32,
            address,
            bytes: 4096,
        };
        vec![buffer("in", 0x1000_0000), buffer("out", 0x1000_2000)]
    }

    #[test]
    fn an_address_is_inside_past_or_before_the_nearest_buffer() {
        let buffers = buffers();
        assert_eq!(
            spot(&buffers, 0x1000_2004),
            Some(Spot::Inside { buffer: 1, byte: 4 })
        );
        assert_eq!(
            spot(&buffers, 0x1000_3000),
            Some(Spot::After {
                buffer: 1,
                bytes: 0
            })
        );
        // Between the two: past the end of `in` is nearer than the start of `out`.
        assert_eq!(
            spot(&buffers, 0x1000_1004),
            Some(Spot::After {
                buffer: 0,
                bytes: 4
            })
        );
        assert_eq!(
            spot(&buffers, 0x1000_1ffc),
            Some(Spot::Before {
                buffer: 1,
                bytes: 4
            })
        );
        assert_eq!(spot(&[], 0x10), None);
    }
}
