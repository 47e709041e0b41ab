//! A code object's kernel metadata: the `NT_AMDGPU_METADATA` note of an AMDGPU ELF file (code
//! object v3 and newer), a MessagePack map. The ELF file is read with `object`, the note with
//! `rmpv`; both refuse truncated or inconsistent input instead of reading past it, which
//! matters because the image reaches `hipModuleLoadData` only after this check.

use object::LittleEndian as LE;
use object::elf::{FileHeader64, NoteType};
use object::read::elf::{FileHeader, SectionHeader};
use rmpv::Value;

/// `EM_AMDGPU`, the ELF machine number of AMD GPU code objects.
pub const EM_AMDGPU: u16 = object::elf::EM_AMDGPU.0;
/// `NT_AMDGPU_METADATA`: the note holding code object metadata (v3 and newer, MessagePack).
const NT_AMDGPU_METADATA: NoteType = NoteType(32);
/// The owner name of AMDGPU notes.
const AMDGPU_NOTE_OWNER: &[u8] = b"AMDGPU";
/// Nesting deeper than this is refused. `rmpv` counts a container and its contents as one
/// level each, so metadata (four levels of maps and arrays) needs about a dozen.
const MAX_MSGPACK_DEPTH: usize = 32;

/// What a code object's metadata says about one kernel.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KernelMetadata {
    /// Byte size of each explicit argument, in order (hidden arguments the runtime fills in,
    /// `hidden_*`, left out): what `hipModuleLaunchKernel` reads through `kernelParams`.
    pub arg_sizes: Vec<usize>,
    pub vgprs: u32,
    /// Accumulation registers (gfx90a and newer), where reported.
    pub agprs: Option<u32>,
    pub sgprs: u32,
    pub vgpr_spills: u32,
    pub sgpr_spills: u32,
    /// Scratch (private segment) bytes per work-item.
    pub private_bytes: u32,
    /// Static LDS (group segment) bytes per work-group.
    pub lds_bytes: u32,
    pub wavefront_size: u32,
}

/// The file header of a 64-bit little-endian ELF file for AMD GPUs.
fn amdgpu_header(image: &[u8]) -> Option<&FileHeader64<LE>> {
    FileHeader64::<LE>::parse(image).ok().filter(|header| {
        header.is_little_endian() && header.e_machine(LE) == object::elf::EM_AMDGPU
    })
}

/// Whether `image` is a 64-bit little-endian ELF file for AMD GPUs (`e_machine == EM_AMDGPU`),
/// which is what hiprtc returns and `hipModuleLoadData` loads.
pub fn is_amdgpu_elf(image: &[u8]) -> bool {
    amdgpu_header(image).is_some()
}

/// The payload of the code object's first `NT_AMDGPU_METADATA` note, if any.
fn amdgpu_metadata(image: &[u8]) -> Option<&[u8]> {
    let sections = amdgpu_header(image)?.section_headers(LE, image).ok()?;
    sections.iter().find_map(|section| {
        let mut notes = section.notes(LE, image).ok()??;
        while let Ok(Some(note)) = notes.next() {
            if note.name() == AMDGPU_NOTE_OWNER && note.n_type(LE) == NT_AMDGPU_METADATA {
                return Some(note.desc());
            }
        }
        None
    })
}

/// One MessagePack value, or `None` for malformed, truncated or too deeply nested input.
fn decode_msgpack(mut bytes: &[u8]) -> Option<Value> {
    rmpv::decode::read_value_with_max_depth(&mut bytes, MAX_MSGPACK_DEPTH).ok()
}

/// The value of a string key in a map.
fn get<'v>(value: &'v Value, key: &str) -> Option<&'v Value> {
    value
        .as_map()?
        .iter()
        .find(|(k, _)| k.as_str() == Some(key))
        .map(|(_, v)| v)
}

/// Reads kernel `name`'s entry from an AMDGPU code object's metadata (code object v3 or newer).
pub fn kernel_metadata(image: &[u8], name: &str) -> Option<KernelMetadata> {
    let root = decode_msgpack(amdgpu_metadata(image)?)?;
    let symbol = format!("{name}.kd");
    let kernel = get(&root, "amdhsa.kernels")?.as_array()?.iter().find(|k| {
        get(k, ".name").and_then(Value::as_str) == Some(name)
            || get(k, ".symbol").and_then(Value::as_str) == Some(symbol.as_str())
    })?;
    let mut arg_sizes = Vec::new();
    let args = get(kernel, ".args").and_then(Value::as_array);
    for arg in args.map(Vec::as_slice).unwrap_or(&[]) {
        let kind = get(arg, ".value_kind")?.as_str()?;
        if kind.starts_with("hidden_") {
            continue;
        }
        arg_sizes.push(usize::try_from(get(arg, ".size")?.as_u64()?).ok()?);
    }
    let number = |key: &str| {
        get(kernel, key)
            .and_then(Value::as_u64)
            .and_then(|v| u32::try_from(v).ok())
    };
    Some(KernelMetadata {
        arg_sizes,
        vgprs: number(".vgpr_count").unwrap_or(0),
        agprs: number(".agpr_count"),
        sgprs: number(".sgpr_count").unwrap_or(0),
        vgpr_spills: number(".vgpr_spill_count").unwrap_or(0),
        sgpr_spills: number(".sgpr_spill_count").unwrap_or(0),
        private_bytes: number(".private_segment_fixed_size").unwrap_or(0),
        lds_bytes: number(".group_segment_fixed_size").unwrap_or(0),
        wavefront_size: number(".wavefront_size").unwrap_or(0),
    })
}

/// One line of resources for the compile log (hiprtc itself reports none).
pub(super) fn resource_line(name: &str, m: &KernelMetadata) -> String {
    let agprs = m.agprs.map(|n| format!(", {n} AGPRs")).unwrap_or_default();
    format!(
        "amdgpu: {name}: {} VGPRs{agprs}, {} SGPRs, {} VGPRs and {} SGPRs spilled, {} bytes \
         scratch per work-item, {} bytes LDS, wave{}",
        m.vgprs,
        m.sgprs,
        m.vgpr_spills,
        m.sgpr_spills,
        m.private_bytes,
        m.lds_bytes,
        m.wavefront_size
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `NT_AMDGPU_METADATA` payload hiprtc (ROCm 5.2) wrote for `copy_scalar` for gfx90a.
    const COPY_SCALAR_METADATA: &[u8] = b"\x83\xaeamdhsa.kernels\x91\xde\x00\x11\xab.agpr_count\
          \x00\xa5.args\x93\x84\xae.address_space\xa6global\xa7.offset\x00\xa5.size\x08\xab.val\
          ue_kind\xadglobal_buffer\x85\xa7.access\xa9read_only\xae.address_space\xa6global\xa7.\
          offset\x08\xa5.size\x08\xab.value_kind\xadglobal_buffer\x83\xa7.offset\x10\xa5.size\
          \x04\xab.value_kind\xa8by_value\xb9.group_segment_fixed_size\x00\xb6.kernarg_segment\
          _align\x08\xb5.kernarg_segment_size\x14\xa9.language\xa8OpenCL C\xb1.language_versio\
          n\x92\x02\x00\xb8.max_flat_workgroup_size\xcd\x04\x00\xa5.name\xabcopy_scalar\xbb.pr\
          ivate_segment_fixed_size\x00\xab.sgpr_count\x11\xb1.sgpr_spill_count\x00\xa7.symbol\
          \xaecopy_scalar.kd\xb3.uses_dynamic_stack\xc2\xab.vgpr_count\x11\xb1.vgpr_spill_coun\
          t\x00\xaf.wavefront_size@\xadamdhsa.target\xb9amdgcn-amd-amdhsa--gfx90a\xaeamdhsa.ve\
          rsion\x92\x01\x01";

    /// `SHT_NOTE`.
    const SHT_NOTE: u32 = 7;

    /// A minimal 64-bit AMDGPU ELF file with one note section holding `notes`.
    fn elf_with_notes(notes: &[u8]) -> Vec<u8> {
        let mut image = vec![0u8; 64];
        image[..4].copy_from_slice(b"\x7fELF");
        image[4] = 2; // ELFCLASS64
        image[5] = 1; // little-endian
        image[6] = 1; // EV_CURRENT
        image[18..20].copy_from_slice(&EM_AMDGPU.to_le_bytes());
        let notes_at = image.len();
        image.extend_from_slice(notes);
        while !image.len().is_multiple_of(8) {
            image.push(0);
        }
        let table_at = image.len();
        // Section 0 (null), section 1 (the notes).
        image.extend_from_slice(&[0u8; 64]);
        let mut header = [0u8; 64];
        header[4..8].copy_from_slice(&SHT_NOTE.to_le_bytes());
        header[0x18..0x20].copy_from_slice(&(notes_at as u64).to_le_bytes());
        header[0x20..0x28].copy_from_slice(&(notes.len() as u64).to_le_bytes());
        image.extend_from_slice(&header);
        image[0x28..0x30].copy_from_slice(&(table_at as u64).to_le_bytes());
        image[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
        image[0x3c..0x3e].copy_from_slice(&2u16.to_le_bytes());
        image
    }

    fn note(owner: &[u8], kind: u32, desc: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&(owner.len() as u32 + 1).to_le_bytes());
        out.extend_from_slice(&(desc.len() as u32).to_le_bytes());
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(owner);
        out.push(0);
        while !out.len().is_multiple_of(4) {
            out.push(0);
        }
        out.extend_from_slice(desc);
        while !out.len().is_multiple_of(4) {
            out.push(0);
        }
        out
    }

    fn metadata_note(desc: &[u8]) -> Vec<u8> {
        note(AMDGPU_NOTE_OWNER, NT_AMDGPU_METADATA.0, desc)
    }

    /// MessagePack bytes of `value`, written by `rmpv`.
    fn encode(value: &Value) -> Vec<u8> {
        let mut bytes = Vec::new();
        let written = rmpv::encode::write_value(&mut bytes, value);
        assert!(written.is_ok(), "{written:?}");
        bytes
    }

    fn map(entries: &[(&str, Value)]) -> Value {
        Value::Map(
            entries
                .iter()
                .map(|(key, value)| (Value::from(*key), value.clone()))
                .collect(),
        )
    }

    #[test]
    fn recognises_amdgpu_elf_code_objects() {
        let image = elf_with_notes(&[]);
        assert!(is_amdgpu_elf(&image));
        let mut x86 = image.clone();
        x86[18..20].copy_from_slice(&62u16.to_le_bytes()); // EM_X86_64
        assert!(!is_amdgpu_elf(&x86));
        let mut elf32 = image.clone();
        elf32[4] = 1;
        assert!(!is_amdgpu_elf(&elf32));
        let mut big_endian = image.clone();
        big_endian[5] = 2;
        assert!(!is_amdgpu_elf(&big_endian));
        assert!(!is_amdgpu_elf(b"\x7fELF"));
        assert!(!is_amdgpu_elf(b""));
        assert!(!is_amdgpu_elf(b"__CLANG_OFFLOAD_BUNDLE__"));
    }

    #[test]
    fn reads_kernel_metadata_from_a_code_object() {
        let image = elf_with_notes(&metadata_note(COPY_SCALAR_METADATA));
        let metadata = kernel_metadata(&image, "copy_scalar");
        assert_eq!(
            metadata,
            Some(KernelMetadata {
                arg_sizes: vec![8, 8, 4],
                vgprs: 17,
                agprs: Some(0),
                sgprs: 17,
                vgpr_spills: 0,
                sgpr_spills: 0,
                private_bytes: 0,
                lds_bytes: 0,
                wavefront_size: 64,
            })
        );
        assert_eq!(kernel_metadata(&image, "copy_float4"), None);
        // Other owners and note types are skipped.
        let mut notes = note(b"GNU", 1, b"abcd");
        notes.extend(note(AMDGPU_NOTE_OWNER, 10, b"yaml"));
        notes.extend(metadata_note(COPY_SCALAR_METADATA));
        let image = elf_with_notes(&notes);
        assert_eq!(
            kernel_metadata(&image, "copy_scalar").map(|m| m.arg_sizes),
            Some(vec![8, 8, 4])
        );
        let line = resource_line(
            "copy_scalar",
            &kernel_metadata(&image, "copy_scalar").unwrap_or_default(),
        );
        assert!(
            line.starts_with("amdgpu: copy_scalar: 17 VGPRs, 0 AGPRs, 17 SGPRs"),
            "{line}"
        );
        assert!(!line.contains('\n'));
    }

    #[test]
    fn hidden_arguments_are_not_counted() {
        let arg = |size: u64, kind: &str| {
            map(&[
                (".size", Value::from(size)),
                (".value_kind", Value::from(kind)),
            ])
        };
        let root = map(&[(
            "amdhsa.kernels",
            Value::Array(vec![map(&[
                (".symbol", Value::from("k.kd")),
                (
                    ".args",
                    Value::Array(vec![
                        arg(8, "global_buffer"),
                        arg(4, "by_value"),
                        arg(8, "hidden_global_offset_x"),
                    ]),
                ),
                (".vgpr_count", Value::from(40)),
                (".agpr_count", Value::from(-1)),
            ])]),
        )]);
        let image = elf_with_notes(&metadata_note(&encode(&root)));
        // Found by its symbol (`k.kd`) where `.name` is missing; a negative count is absent.
        let metadata = kernel_metadata(&image, "k");
        assert_eq!(
            metadata,
            Some(KernelMetadata {
                arg_sizes: vec![8, 4],
                vgprs: 40,
                ..KernelMetadata::default()
            })
        );
        // An argument without a size makes the metadata unreadable rather than wrong.
        let root = map(&[(
            "amdhsa.kernels",
            Value::Array(vec![map(&[
                (".name", Value::from("k")),
                (
                    ".args",
                    Value::Array(vec![map(&[(".value_kind", Value::from("by_value"))])]),
                ),
            ])]),
        )]);
        let image = elf_with_notes(&metadata_note(&encode(&root)));
        assert_eq!(kernel_metadata(&image, "k"), None);
    }

    #[test]
    fn msgpack_decoding_refuses_truncated_or_hostile_input() {
        assert_eq!(decode_msgpack(&[0x05]), Some(Value::from(5)));
        assert_eq!(
            decode_msgpack(&[0xa2, b'h', b'i'])
                .as_ref()
                .and_then(Value::as_str),
            Some("hi")
        );
        // rmpv reads the reserved tag as nil, which no metadata field accepts.
        assert_eq!(decode_msgpack(&[0xc1]), Some(Value::Nil));
        // Truncated input, a huge claimed length, deep nesting.
        assert_eq!(decode_msgpack(&[0xa5, b'a']), None);
        assert_eq!(decode_msgpack(&[0xdd, 0xff, 0xff, 0xff, 0xff]), None);
        assert_eq!(decode_msgpack(&[0xdf, 0xff, 0xff, 0xff, 0xff, 0x01]), None);
        assert_eq!(decode_msgpack(&[0x91; 100]), None);
        assert_eq!(decode_msgpack(&[]), None);
        // Every truncation of real metadata fails cleanly.
        for end in 0..COPY_SCALAR_METADATA.len() {
            assert_eq!(decode_msgpack(&COPY_SCALAR_METADATA[..end]), None);
        }
        // What rmpv writes, it reads back.
        let decoded = decode_msgpack(COPY_SCALAR_METADATA);
        assert!(decoded.is_some());
        if let Some(value) = decoded {
            assert_eq!(decode_msgpack(&encode(&value)), Some(value));
        }
    }

    #[test]
    fn malformed_elf_files_have_no_metadata() {
        let image = elf_with_notes(&metadata_note(COPY_SCALAR_METADATA));
        for end in 0..image.len() {
            assert_eq!(kernel_metadata(&image[..end], "copy_scalar"), None);
        }
        let mut bad_table = image.clone();
        bad_table[0x28..0x30].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(kernel_metadata(&bad_table, "copy_scalar"), None);
        // A section table that claims more entries than the file holds is refused.
        let mut bad_count = image.clone();
        bad_count[0x3c..0x3e].copy_from_slice(&u16::MAX.to_le_bytes());
        assert_eq!(kernel_metadata(&bad_count, "copy_scalar"), None);
        let mut bad_entry_size = image.clone();
        bad_entry_size[0x3a..0x3c].copy_from_slice(&32u16.to_le_bytes());
        assert_eq!(kernel_metadata(&bad_entry_size, "copy_scalar"), None);
        let mut bad_note = metadata_note(COPY_SCALAR_METADATA);
        bad_note[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            kernel_metadata(&elf_with_notes(&bad_note), "copy_scalar"),
            None
        );
        // Metadata that is not a map of kernels is no metadata.
        let image = elf_with_notes(&metadata_note(b"\xc1\xc1\xc1\xc1"));
        assert_eq!(kernel_metadata(&image, "copy_scalar"), None);
    }
}
