//! Embeds `templates/` into the binary so reports render anywhere, and links the binary for a
//! fast start.
fn main() {
    minijinja_embed::embed_templates!("templates", &[".txt", ".html", ".css"][..]);
    link_position_dependent();
}

/// A cron sweep and every piped mail start a process, so start-up counts (issue 11). Linked as a
/// position-independent executable, the loader applies ~48,000 relative relocations at every
/// start and copies the 1.3 MB of tables they touch (vtables, string tables) into private pages.
/// On x86-64 Linux with the GNU toolchain the binary is linked position-dependent instead: no
/// start-up relocations, and those pages stay shared with the page cache. The cost is that the
/// binary's own code is not placed at a random address (shared libraries still are).
fn link_position_dependent() {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ARCH") == "x86_64" && var("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
