//! Property tests: no lab file and no size expression, however malformed, makes the parsers
//! panic; every error they report points at a line of the input.

use kernelbook_core::expr::{Expr, Params};
use kernelbook_core::spec::LabFile;
use proptest::prelude::*;
use std::path::Path;

const VALID: &str = include_str!("../../labs/transpose.toml");

/// Pieces of lab files, glued in random order: plausible enough to reach deep into validation.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("name = \"t\"\n".to_string()),
        Just("title = \"T\"\n".to_string()),
        Just("bytes = \"2 * n * n * 4\"\n".to_string()),
        Just("planned = true\n".to_string()),
        Just("ceiling = \"memcpy\"\n".to_string()),
        Just("timeout_s = 5\n".to_string()),
        Just("[params]\nn = 64\n".to_string()),
        Just("[[buffers]]\nname = \"in\"\nlen = \"n * n\"\nfill = \"random\"\n".to_string()),
        Just("[[buffers]]\nname = \"out\"\nlen = \"n*n\"\nfill = \"poison\"\n".to_string()),
        Just("[check]\nreference = \"transpose\"\ninput = \"in\"\noutput = \"out\"\nrows = \"n\"\ncols = \"n\"\n".to_string()),
        Just("[check]\nreference = \"copy\"\ninput = \"in\"\noutput = \"out\"\n".to_string()),
        Just("[[variants]]\nname = \"v\"\nkernel = \"k\"\ngrid = [\"n / 32\", 8]\nblock = [32, 8]\nargs = [\"out\", \"in\", \"n:i64\"]\n".to_string()),
        Just("[[variants]]\nname = \"m\"\nbuiltin = \"memcpy\"\nargs = [\"out\", \"in\"]\n".to_string()),
        Just("check = { reference = \"copy\", input = \"in\", output = \"out\" }\n".to_string()),
        Just("shared_bytes = \"n * 0\"\n".to_string()),
        "[a-z_]{1,8} = \"[ -~]{0,12}\"\n",
        "[a-z_]{1,8} = -?[0-9]{1,20}\n",
        "[\\[\\]{}=\"#\\n ]{1,6}",
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
        if let Err(err) = LabFile::parse(&text, Path::new("labs/x.toml")) {
            prop_assert!(err.line >= 1 && err.line <= text.lines().count() + 1, "{}", err);
        }
    }

    #[test]
    fn glued_fragments_never_panic(parts in proptest::collection::vec(fragment(), 0..14)) {
        let text = parts.concat();
        if let Err(err) = LabFile::parse(&text, Path::new("labs/x.toml")) {
            prop_assert!(err.line >= 1 && err.line <= text.lines().count() + 1, "{}", err);
        }
    }

    #[test]
    fn a_damaged_real_lab_never_panics(start in 0usize..4000, len in 0usize..200, insert in "[ -~\\n]{0,20}") {
        let start = VALID.floor_char_boundary(start.min(VALID.len()));
        let end = VALID.floor_char_boundary((start + len).min(VALID.len()));
        let text = format!("{}{}{}", &VALID[..start], insert, &VALID[end..]);
        if let Err(err) = LabFile::parse(&text, Path::new("labs/transpose.toml")) {
            prop_assert!(err.line >= 1 && err.line <= text.lines().count() + 1, "{}", err);
        }
    }

    #[test]
    fn expressions_never_panic(text in "[-+*/%() 0-9na_]{0,40}", n in any::<i64>()) {
        let _ = Expr::new(text).eval(&Params::from([("n".to_string(), n)]));
    }
}
