//! The top-level modules of `preprocessor` use one another only as ARCHITECTURE.md's table allows,
//! with no circle (see `core/tests/support/layering.rs`).

// The checker's own test (`self_test`) runs in core's copy.
#[allow(dead_code)]
#[path = "../../core/tests/support/layering.rs"]
mod layering;

#[test]
fn the_modules_stack_as_architecture_md_says() {
    layering::check(env!("CARGO_MANIFEST_DIR"), "preprocessor");
}

/// The views only format: no view scales by 10^9 or 10^12 itself (`format.rs` does), and none
/// decides which builtin is a peer (`kernelbook_core::results::figures::Role` does).
#[test]
fn the_views_leave_units_and_roles_to_format_and_core() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut found = Vec::new();
    for (module, code) in layering::modules(&src) {
        for needle in [
            "1e9",
            "1e12",
            "Builtin::LibraryTranspose",
            "Builtin::TorchTranspose",
            "Builtin::LibrarySgemm",
        ] {
            if module != "format" && code.contains(needle) {
                found.push(format!("`{module}` has `{needle}`"));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}
