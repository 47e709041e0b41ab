//! The top-level modules of `cli` use one another only as ARCHITECTURE.md's table allows,
//! with no circle (see `core/tests/support/layering.rs`).

// The checker's own test (`self_test`) runs in core's copy.
#[allow(dead_code)]
#[path = "../../core/tests/support/layering.rs"]
mod layering;

#[test]
fn the_modules_stack_as_architecture_md_says() {
    layering::check(env!("CARGO_MANIFEST_DIR"), "cli");
}
