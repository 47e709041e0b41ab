//! The top-level modules of `runner` use one another only as ARCHITECTURE.md's table allows,
//! with no circle, and name no GPU vendor outside `backend/` (see `core/tests/support/layering.rs`).

// The checker's own test (`self_test`) runs in core's copy.
#[allow(dead_code)]
#[path = "../../core/tests/support/layering.rs"]
mod layering;

#[test]
fn the_modules_stack_as_architecture_md_says() {
    layering::check(env!("CARGO_MANIFEST_DIR"), "runner");
}
