//! Property tests: no markdown, however malformed, makes the chapter scanner panic, and every
//! error it reports points at a line of the chapter.

use mdbook_kernelbook::scan::{BookIndex, scan_chapter};
use proptest::prelude::*;
use std::path::Path;

/// Pieces of chapters around the constructs the scanner cares about.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("```cuda kernel=k\n".to_string()),
        Just("```cuda kernel=k2 extra=1\n".to_string()),
        Just("```cuda kernel=\n".to_string()),
        Just("```cuda\n".to_string()),
        Just("~~~cu kernel=t\n".to_string()),
        Just("```\n".to_string()),
        Just("~~~\n".to_string()),
        Just("    indented code\n".to_string()),
        Just("{{#lab transpose}}".to_string()),
        Just("{{#lab}}".to_string()),
        Just("{{#lab a b}}".to_string()),
        Just("{{#lab ".to_string()),
        Just("{{#labs x}}".to_string()),
        Just("}}".to_string()),
        Just("`{{#lab x}}`".to_string()),
        Just("<div>\n".to_string()),
        Just("> [!NOTE]\n> text\n".to_string()),
        Just("- item\n  ```cuda kernel=inlist\n  x\n  ```\n".to_string()),
        Just("\r\n".to_string()),
        Just("\n".to_string()),
        Just("é🚀\u{0}".to_string()),
        "[ -~]{0,20}",
        any::<String>(),
    ]
}

/// Inputs per property: 4000 in an ordinary test run; set KERNELBOOK_FUZZ_CASES for a longer one.
fn cases() -> u32 {
    std::env::var("KERNELBOOK_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4000)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        if let Err(err) = scan_chapter(&text, Path::new("c.md")) {
            prop_assert!(err.location.line >= 1 && err.location.line <= text.lines().count() + 1, "{}", err);
        }
    }

    #[test]
    fn glued_fragments_never_panic(parts in proptest::collection::vec(fragment(), 0..24)) {
        let text = parts.concat();
        match scan_chapter(&text, Path::new("c.md")) {
            Ok(scan) => {
                for directive in &scan.directives {
                    prop_assert_eq!(&text[directive.range.clone()], format!("{{{{#lab {}}}}}", directive.lab));
                }
                for block in &scan.kernels {
                    prop_assert!(block.range.end <= text.len());
                }
            }
            Err(err) => prop_assert!(err.location.line >= 1 && err.location.line <= text.lines().count() + 1, "{}", err),
        }
        let _ = BookIndex::build([(Path::new("a.md"), text.as_str()), (Path::new("b.md"), text.as_str())]);
    }
}
