//! Compiler messages in the reader's coordinates. NVRTC names a kernel's source `NAME.cu` and
//! counts its lines from the top of the kernel block; the author wrote that block at some line
//! of a chapter. Every `NAME.cu(N)` in a log becomes `chapter.md:M`, so a compile error points
//! at the markdown line to fix.

use kernelbook_core::KernelSource;

/// Rewrites compiler locations in `log` to the kernel block's markdown file and line: NVRTC's
/// `NAME.cu(N)` and hiprtc's `/tmp/comgr-…/input/CompileSource:N:C` (hiprtc ignores the program
/// name it is given).
pub fn map_compile_log(log: &str, kernel: &KernelSource) -> String {
    map_hiprtc_locations(&map_nvrtc_locations(log, kernel), kernel)
}

fn map_hiprtc_locations(log: &str, kernel: &KernelSource) -> String {
    const SOURCE: &str = "CompileSource:";
    log.lines()
        .map(|line| {
            let Some(at) = line.find(SOURCE) else {
                return line.to_string();
            };
            // The path before `CompileSource` is a temporary folder: drop it with the name.
            let start = line[..at].rfind(char::is_whitespace).map_or(0, |i| i + 1);
            let after = &line[at + SOURCE.len()..];
            let digits = after.chars().take_while(char::is_ascii_digit).count();
            match after[..digits].parse::<usize>() {
                Ok(number) if number > 0 => format!(
                    "{}{}:{}{}",
                    &line[..start],
                    kernel.origin.file.display(),
                    kernel.origin.line + number - 1,
                    &after[digits..]
                ),
                _ => line.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + if log.ends_with('\n') { "\n" } else { "" }
}

fn map_nvrtc_locations(log: &str, kernel: &KernelSource) -> String {
    let needle = format!("{}.cu(", kernel.name);
    let mut out = String::with_capacity(log.len());
    let mut rest = log;
    while let Some(start) = rest.find(&needle) {
        let after = &rest[start + needle.len()..];
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        let line: Option<usize> = after[..digits].parse().ok();
        match (line, after[digits..].starts_with(')')) {
            (Some(line), true) if line > 0 => {
                out.push_str(&rest[..start]);
                out.push_str(&format!(
                    "{}:{}",
                    kernel.origin.file.display(),
                    kernel.origin.line + line - 1
                ));
                rest = &after[digits + 1..];
            }
            _ => {
                out.push_str(&rest[..start + needle.len()]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernelbook_core::SourceLocation;

    fn kernel() -> KernelSource {
        KernelSource {
            name: "transpose_tiled".into(),
            source: String::new(),
            origin: SourceLocation {
                file: "book/src/labs/lab2-transpose.md".into(),
                line: 60,
            },
            language: Default::default(),
        }
    }

    #[test]
    fn maps_every_location_to_the_markdown_line() {
        let log = "transpose_tiled.cu(1): error: expected a \";\"\n\
                   transpose_tiled.cu(12): warning: variable \"k\" was declared but never referenced\n\
                   1 error detected in the compilation of \"transpose_tiled.cu\".\n";
        assert_eq!(
            map_compile_log(log, &kernel()),
            "book/src/labs/lab2-transpose.md:60: error: expected a \";\"\n\
             book/src/labs/lab2-transpose.md:71: warning: variable \"k\" was declared but never referenced\n\
             1 error detected in the compilation of \"transpose_tiled.cu\".\n"
        );
    }

    #[test]
    fn maps_hiprtc_locations_too() {
        let log = "/tmp/comgr-2d8a3f/input/CompileSource:3:17: error: use of undeclared identifier 'k'\n    k = 1;\n";
        assert_eq!(
            map_compile_log(log, &kernel()),
            "book/src/labs/lab2-transpose.md:62:17: error: use of undeclared identifier 'k'\n    k = 1;\n"
        );
    }

    #[test]
    fn leaves_other_text_and_malformed_locations_alone() {
        let log = "copy.cu(3): error\ntranspose_tiled.cu(x): odd\ntranspose_tiled.cu(";
        assert_eq!(map_compile_log(log, &kernel()), log);
    }
}
