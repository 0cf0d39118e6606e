//! The kept trail `host/trail` (what a new step needs of the earlier records, kept so a step does
//! not read every record of a long game) is a hint: deleted, damaged or forged, the steps come
//! out byte for byte as they do with it (SPEC.md "NMR policy": the built-in player takes over
//! after `bot_after` missed steps, which the kept miss counts decide).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pbem::pipeline::{self, Entropy};

#[path = "support/seats.rs"]
mod seats;

/// Every file under `dir` by relative path, but the kept trail.
fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else if !p.ends_with("host/trail") && !p.ends_with(".lock") {
                out.insert(p.strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// A new two-seat Throw Down That Flag game in `dir`, one-hour deadlines, the built-in player
/// after `bot_after` missed steps.
fn create(dir: &Path, bot_after: u32, start: chrono::DateTime<chrono::Utc>) {
    let seats = seats::seats("throw-down-that-flag");
    let new = pipeline::NewGame {
        id: Some("trail".into()),
        rules: "throw-down-that-flag".into(),
        scenario: None,
        options: Default::default(),
        seats,
        deadlines: pbem::model::Deadlines { default_hours: 1, ..Default::default() },
        nmr: pbem::model::NmrPolicy { policy: pbem::model::NmrMode::Bot, bot_after },
        wording: pbem::report::WORDING,
    };
    pipeline::create(dir, new, start, &mut Entropy::seeded([7; 32])).unwrap();
}

/// The newest record's index and bytes.
fn newest(dir: &Path) -> (u64, Vec<u8>) {
    let n = std::fs::read_dir(dir.join("records")).unwrap().filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "json")).count() as u64 - 1;
    (n, std::fs::read(dir.join(format!("records/{n:06}.json"))).unwrap())
}

/// A kept trail for record `n` naming `sha256`, every seat with no misses and nothing withheld,
/// with a checksum line that is right (`good`) or not.
fn forged(n: u64, sha256: &str, good: bool) -> String {
    let json = format!(r#"{{"record":{n},"sha256":"{sha256}","withheld":[],"misses":{{}}}}"#);
    let sum = pbem::commit::sha256_hex(if good { json.as_bytes() } else { b"something else" });
    format!("{json}\n{sum}\n")
}

#[test]
fn a_damaged_or_forged_kept_trail_changes_no_step() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let start = pipeline::parse_time("2026-07-01T12:00:00Z").unwrap();
    // Every step an NMR: the built-in player takes over after 18 misses, so a wrong miss count
    // kept past step 16 would change the orders of the steps after it.
    create(&a, 18, start);
    create(&b, 18, start);
    let (mut ea, mut eb) = (Entropy::seeded([3; 32]), Entropy::seeded([3; 32]));
    let mut steps = 0;
    for k in 1..=60i64 {
        let now = start + chrono::Duration::minutes(61 * k);
        let (n, bytes) = newest(&b);
        let trail = b.join("host/trail");
        let _ = std::fs::remove_file(&trail);
        match k % 6 {
            0 => {}
            1 => std::fs::write(&trail, "not a kept trail\n").unwrap(),
            // A well-formed trail for another record's bytes, then one for this record whose
            // checksum line is wrong: neither is trusted.
            2 => std::fs::write(&trail, forged(n, &pbem::commit::sha256_hex(b"another record"), true)).unwrap(),
            3 => std::fs::write(&trail, forged(n, &pbem::commit::sha256_hex(&bytes), false)).unwrap(),
            // Not a regular file: a FIFO (never waited on) or a link to an endless file (never read).
            4 => assert!(std::process::Command::new("mkfifo").arg(&trail).status().unwrap().success()),
            _ => std::os::unix::fs::symlink("/dev/zero", &trail).unwrap(),
        }
        let ra = pipeline::adjudicate(&a, now, &mut ea).unwrap();
        let rb = pipeline::adjudicate(&b, now, &mut eb).unwrap();
        assert_eq!(ra.resolved, rb.resolved);
        steps += ra.resolved.len();
        if ra.over {
            break;
        }
    }
    assert!(steps > 20, "the game should run past the first kept trail (16 records): {steps} steps");
    assert!(a.join("host/trail").exists(), "a long game keeps its trail");
    assert_eq!(files(&a), files(&b));
}
