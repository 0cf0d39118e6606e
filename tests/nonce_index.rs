//! The nonce index (`DIR/host/nonces`, `pbem::nonces`) spares `submit` reading every stored
//! order, and never lets a used nonce through: deleted, corrupted, stale (an older copy) or
//! naming an order a crash cut off before its receipt, it is rebuilt from the files.

#[path = "mail/common.rs"]
mod common;

use std::io::Write;
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use common::*;

/// Writes the current form of `role` with nonce number `n` (edited), signed, and returns the file.
fn order(game: &Path, role: &str, n: u32, name: &str, edit: &dyn Fn(String) -> String) -> PathBuf {
    let text = form(game, role, n, edit);
    let file = game.parent().unwrap().join(name);
    std::fs::write(&file, format!("{text}{}", sign(role, &text))).unwrap();
    file
}

fn submit(game: &Path, file: &Path, now: &str) -> std::process::Output {
    Command::cargo_bin("pbem").unwrap().arg("submit").arg(game).arg(file).args(["--now", now]).output().unwrap()
}

fn accepted(game: &Path, file: &Path, now: &str) {
    let out = submit(game, file, now);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

fn index(game: &Path) -> PathBuf {
    game.join("host").join("nonces")
}

#[test]
fn a_reused_nonce_is_refused_whatever_became_of_the_index() {
    let tmp = tempfile::tempdir().unwrap();
    let g = new_game(&tmp.path().join("games"), "g1", 24);
    accepted(&g, &order(&g, "confederate", 1, "c1.toml", &|s| s), "2026-07-01T12:10:00Z");
    let before_union = std::fs::read(index(&g)).unwrap();
    accepted(&g, &order(&g, "union", 1, "u1.toml", &|s| s), "2026-07-01T12:11:00Z");
    let text = std::fs::read_to_string(index(&g)).unwrap();
    assert!(text.starts_with("pbem-nonces 2\n") && text.contains(" union-1 ") && text.contains(" confederate-1 "), "{text}");
    // Another text with union's nonce: a replay, refused with the index as written...
    let replay = order(&g, "union", 1, "replay.toml", &|s| format!("# second thoughts\n{s}"));
    type Damage<'a> = (&'a str, &'a dyn Fn(&Path));
    let damages: [Damage; 5] = [
        ("as written", &|_| {}),
        ("deleted", &|p| std::fs::remove_file(p).unwrap()),
        ("garbage", &|p| std::fs::write(p, b"\xff\x00 not an index").unwrap()),
        ("union's nonce changed, checksum not", &|p| {
            let t = std::fs::read_to_string(p).unwrap();
            let line = t.lines().find(|l| l.contains(" union-1 ")).unwrap();
            let nonce = line.split(' ').nth(2).unwrap();
            std::fs::write(p, t.replace(nonce, &"11".repeat(32))).unwrap();
        }),
        ("stale: the copy from before union's order", &|p| std::fs::write(p, &before_union).unwrap()),
    ];
    let kept = std::fs::read(index(&g)).unwrap();
    for (what, damage) in damages {
        std::fs::write(index(&g), &kept).unwrap();
        damage(&index(&g));
        let out = submit(&g, &replay, "2026-07-01T12:20:00Z");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains("this nonce was already used"), "index {what}: {err}");
        assert!(!g.join("receipts").join("000001").join("union-2.toml").exists(), "index {what}");
    }
    // ...and when it names an order a crash cut off before its receipt (sealed, never accepted),
    // that order's number is given again and its nonce is free.
    let cut = order(&g, "union", 2, "u2.toml", &|s| s);
    accepted(&g, &cut, "2026-07-01T12:21:00Z");
    let receipt = g.join("receipts").join("000001").join("union-2.toml");
    std::fs::remove_file(&receipt).unwrap();
    accepted(&g, &cut, "2026-07-01T12:22:00Z");
    assert!(receipt.exists());
    let text = std::fs::read_to_string(index(&g)).unwrap();
    assert_eq!(text.matches(" union-2 ").count(), 1, "{text}");
    // The replay is still refused, a fresh order is accepted as union's receipt 3.
    let out = submit(&g, &replay, "2026-07-01T12:23:00Z");
    assert!(String::from_utf8_lossy(&out.stderr).contains("this nonce was already used"));
    accepted(&g, &order(&g, "union", 3, "u3.toml", &|s| s), "2026-07-01T12:24:00Z");
    assert!(g.join("receipts").join("000001").join("union-3.toml").exists());
    Command::cargo_bin("pbem").unwrap().arg("audit").arg(&g).assert().success();
}

#[test]
fn the_index_carries_over_steps_and_a_nonce_of_an_earlier_step_stays_used() {
    let tmp = tempfile::tempdir().unwrap();
    let g = new_game(&tmp.path().join("games"), "g1", 24);
    accepted(&g, &order(&g, "confederate", 1, "c1.toml", &|s| s), "2026-07-01T12:10:00Z");
    accepted(&g, &order(&g, "union", 1, "u1.toml", &|s| s), "2026-07-01T12:11:00Z");
    Command::cargo_bin("pbem").unwrap().arg("adjudicate").arg(&g).args(["--now", "2026-07-01T12:12:00Z"]).assert().success();
    for deleted in [false, true] {
        if deleted {
            std::fs::remove_file(index(&g)).unwrap();
        }
        // Step 2's form with step 1's union nonce.
        assert!(asked(&g, "union"), "step 2 asks the union for orders");
        let file = order(&g, "union", 1, "again.toml", &|s| s);
        let out = submit(&g, &file, "2026-07-01T12:13:00Z");
        assert!(String::from_utf8_lossy(&out.stderr).contains("this nonce was already used"), "deleted {deleted}");
    }
}

/// Whether the open step asks `role` for orders.
fn asked(game: &Path, role: &str) -> bool {
    let g = pbem::pipeline::load(game).unwrap();
    g.record.opening.as_ref().is_some_and(|o| o.asks.iter().any(|a| a.role == role))
}

/// The index is appended to (one line an order, the file kept), not rewritten with every order;
/// a torn last line (a power loss mid-append) is left out, and the file is then replaced whole.
#[test]
fn orders_are_appended_to_the_index_and_a_torn_line_makes_it_replaced() {
    use std::os::unix::fs::MetadataExt;
    let tmp = tempfile::tempdir().unwrap();
    let g = new_game(&tmp.path().join("games"), "g1", 24);
    accepted(&g, &order(&g, "confederate", 1, "c1.toml", &|s| s), "2026-07-01T12:10:00Z");
    let inode = std::fs::metadata(index(&g)).unwrap().ino();
    let before = std::fs::read_to_string(index(&g)).unwrap();
    // Two orders in one batch: one append of two lines after what was there.
    let (u1, u2) = (order(&g, "union", 1, "u1.toml", &|s| s), order(&g, "union", 2, "u2.toml", &|s| s));
    let out = Command::cargo_bin("pbem").unwrap().arg("submit").arg(&g).arg(&u1).arg(&u2).args(["--now", "2026-07-01T12:11:00Z"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let after = std::fs::read_to_string(index(&g)).unwrap();
    assert_eq!(std::fs::metadata(index(&g)).unwrap().ino(), inode, "appended in place, not replaced");
    assert!(after.starts_with(&before) && after[before.len()..].lines().count() == 2, "{after}");
    // A torn last line: the replay of union's first order is still refused, and the next order
    // replaces the file with whole lines only.
    std::fs::OpenOptions::new().append(true).open(index(&g)).unwrap().write_all(b"1 union-9 ").unwrap();
    let replay = order(&g, "union", 1, "replay.toml", &|s| format!("# again\n{s}"));
    assert!(String::from_utf8_lossy(&submit(&g, &replay, "2026-07-01T12:12:00Z").stderr).contains("this nonce was already used"));
    accepted(&g, &order(&g, "union", 3, "u3.toml", &|s| s), "2026-07-01T12:13:00Z");
    let text = std::fs::read_to_string(index(&g)).unwrap();
    assert!(!text.contains("union-9") && text.ends_with('\n') && text.lines().count() == 5, "{text}");
    assert!(text.starts_with("pbem-nonces 2\n") && text.contains(" union-3 "), "{text}");
}
