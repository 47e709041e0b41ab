//! Property tests: no lab file and no size expression, however malformed, makes the parsers
//! panic; every error they report points at a line of the input.

use kernelbook_core::expr::{Expr, ExprError, MAX_DEPTH, Params};
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

    /// Parentheses and minus signs nested up to 60 000 deep, around a valid core, with junk
    /// maybe after it: within the limit a value or an error, past it the depth error, never a
    /// stack overflow.
    #[test]
    fn deep_expressions_are_errors_not_aborts(
        opens in proptest::collection::vec(prop_oneof![Just("("), Just("-"), Just(" ( "), Just("- ")], 1..8),
        depth in 0usize..60_000,
        closes in 0usize..2,
        tail in "[-+*/%() 0-9n]{0,6}",
    ) {
        let open: String = opens.concat();
        let per_repeat = opens.len();
        let parens = open.matches('(').count();
        let repeats = depth / per_repeat;
        let close = ")".repeat(parens * repeats * closes);
        let text = format!("{}n{close}{tail}", open.repeat(repeats));
        let result = Expr::new(&text).eval(&Params::from([("n".to_string(), 7)]));
        if repeats * per_repeat > MAX_DEPTH {
            match result {
                Err(ExprError::Syntax { message, .. }) => prop_assert!(
                    message.contains("nested more than") || message.contains("expected"),
                    "{message}"
                ),
                other => prop_assert!(false, "expected a syntax error, got {:?}", other),
            }
        }
    }

    #[test]
    fn expressions_never_panic(text in "[-+*/%() 0-9na_]{0,40}", n in any::<i64>()) {
        let _ = Expr::new(text).eval(&Params::from([("n".to_string(), n)]));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases((cases() / 10).max(1)))]

    /// A lab file whose size expression nests deeply: an error at its line. (A tenth of the
    /// cases: each parses a lab file of up to 20 kB twice.)
    #[test]
    fn a_lab_with_a_deep_expression_is_an_error_at_its_line(depth in 200usize..10_000) {
        let deep = format!("{}n{}", "(".repeat(depth), ")".repeat(depth));
        let text = VALID.replacen("bytes = \"", &format!("bytes = \"{deep} + "), 1);
        match LabFile::parse(&text, Path::new("labs/transpose.toml")) {
            Err(err) => {
                prop_assert_eq!(err.line, 6, "{}", err);
                prop_assert!(err.to_string().len() < 2000, "the message quotes the expression in part");
            }
            Ok(_) => prop_assert!(depth <= MAX_DEPTH, "{} levels were accepted", depth),
        }
    }
}
