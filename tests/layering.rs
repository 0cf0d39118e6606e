//! The crate's modules form layers: no module imports one that imports it back (ARCHITECTURE.md
//! "Layering"). Reads the `crate::`/`super::`/`self::` paths of every file under `src/` (code
//! before its `#[cfg(test)]`) and fails naming the modules of any cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every module of `src/` (`a::b`) with the text of its file before `#[cfg(test)]`.
fn modules(dir: &Path, prefix: &[String], out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            modules(&path, &[prefix, &[name]].concat(), out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let module = if ["mod", "lib", "main"].contains(&name.as_str()) { prefix.to_vec() } else { [prefix, &[name]].concat() };
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or("").to_string();
            out.insert(module.join("::"), code);
        }
    }
}

/// The paths a file names: `crate::a::b`, `super::x`, and each item of `super::{x, y::z}`.
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for start in ["crate::", "super::", "self::"] {
        for (i, _) in code.match_indices(start) {
            if code[..i].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            let rest = &code[i..];
            let head: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
            let segs: Vec<String> = head.split("::").filter(|s| !s.is_empty()).map(str::to_string).collect();
            out.push(segs.clone());
            if rest[head.len()..].starts_with('{') {
                let body = rest[head.len() + 1..].split('}').next().unwrap_or("");
                for item in body.split(',') {
                    let item: String = item.trim().chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
                    out.push([segs.clone(), item.split("::").map(str::to_string).collect()].concat());
                }
            }
        }
    }
    out
}

/// The module each file imports from, as `module -> imported modules`.
fn graph(mods: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut edges = BTreeMap::new();
    for (m, code) in mods {
        let parts: Vec<&str> = if m.is_empty() { vec![] } else { m.split("::").collect() };
        let mut to = BTreeSet::new();
        for segs in paths(code) {
            let (mut base, mut rest): (Vec<&str>, &[String]) = (parts.clone(), &segs[1..]);
            match segs[0].as_str() {
                "crate" => base.clear(),
                "super" => {
                    base.pop();
                    while rest.first().is_some_and(|s| s == "super") {
                        base.pop();
                        rest = &rest[1..];
                    }
                }
                _ => {}
            }
            let found = (1..=rest.len()).rev().map(|k| [base.iter().map(|s| s.to_string()).collect::<Vec<_>>(), rest[..k].to_vec()].concat().join("::")).find(|c| mods.contains_key(c));
            if let Some(b) = found.filter(|b| b != m && !b.is_empty() && !m.starts_with(&format!("{b}::"))) {
                to.insert(b);
            }
        }
        edges.insert(m.clone(), to);
    }
    edges
}

/// Modules reachable from `from` (itself excluded unless on a cycle).
fn reach(edges: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<&String> = edges[from].iter().collect();
    while let Some(m) = todo.pop() {
        if seen.insert(m.clone()) {
            todo.extend(edges.get(m).into_iter().flatten());
        }
    }
    seen
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    let mut mods = BTreeMap::new();
    modules(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &[], &mut mods);
    mods.retain(|m, _| !m.ends_with("tests"));
    let edges = graph(&mods);
    let cycles: Vec<String> = edges.keys().filter(|m| reach(&edges, m).contains(*m)).cloned().collect();
    assert!(cycles.is_empty(), "modules on an import cycle: {}", cycles.join(", "));
}

#[test]
fn the_reader_sees_a_cycle() {
    let mods: BTreeMap<String, String> = [
        ("a".to_string(), "use crate::b::Thing;".to_string()),
        ("b".to_string(), "use super::{c::x, d};".to_string()),
        ("c".to_string(), "fn f() { crate::a::g() }".to_string()),
        ("d".to_string(), "// crate::a in a comment still counts".to_string()),
    ]
    .into();
    let edges = graph(&mods);
    assert!(reach(&edges, "a").contains("a"));
    assert_eq!(edges["b"], ["c".to_string(), "d".to_string()].into());
}
