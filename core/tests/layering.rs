//! The top-level modules of `core` use one another only as ARCHITECTURE.md's table allows,
//! with no circle (see `core/tests/support/layering.rs`).

#[path = "support/layering.rs"]
mod layering;

#[test]
fn the_modules_stack_as_architecture_md_says() {
    layering::check(env!("CARGO_MANIFEST_DIR"), "core");
}

#[test]
fn the_layering_check_finds_circles_forbidden_edges_and_vendor_names() {
    layering::self_test();
}
