//! Embeds `templates/` into the binary so reports render anywhere, and links the binary for a
//! fast start.
fn main() {
    minijinja_embed::embed_templates!("templates", &[".txt", ".html", ".css"][..]);
    list_templates();
    link_position_dependent();
}

/// Writes `OUT_DIR/templates_list.rs`: every embedded template as `(name, source)`, the same
/// files as `embed_templates!` above, for an environment that compiles a template only when it
/// is first asked for (`report::environment`: a report needs two of the nine).
fn list_templates() {
    fn walk(dir: &std::path::Path, base: &std::path::Path, out: &mut Vec<(String, std::path::PathBuf)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).expect("templates/").map(|e| e.expect("templates/").path()).collect();
        entries.sort();
        for path in entries {
            let hidden = path.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with('.'));
            if hidden {
                continue;
            } else if path.is_dir() {
                walk(&path, base, out);
            } else if [".txt", ".html", ".css"].iter().any(|x| path.to_string_lossy().ends_with(x)) {
                let name = path.strip_prefix(base).expect("under templates/").to_string_lossy().replace('\\', "/");
                out.push((name, path.canonicalize().expect("a template's path")));
            }
        }
    }
    let mut list = Vec::new();
    walk(std::path::Path::new("templates"), std::path::Path::new("templates"), &mut list);
    let items: String = list.iter().map(|(name, path)| format!("    ({name:?}, include_str!({:?})),\n", path.to_string_lossy())).collect();
    let out = std::path::Path::new(&std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("templates_list.rs");
    std::fs::write(out, format!("&[\n{items}]\n")).expect("OUT_DIR written");
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
