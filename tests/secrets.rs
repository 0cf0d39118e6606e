//! Secrets stay where README says: the real binary takes orders in by mail with TMPDIR pointed at
//! a plain file (no temp file may be made there), files under a game's `host/` are 0600 in 0700
//! folders, the Maildir's done/ and failed/ are 0700, and `status` and `audit` warn when `host/`
//! can be read by others.
#![cfg(unix)]

#[path = "mail/common.rs"]
mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use assert_cmd::cargo::cargo_bin_cmd;
use common::*;

fn mode(p: &Path) -> u32 {
    std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
}

/// Every file and folder under `dir` (not `dir` itself).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out.sort();
    out
}

fn deliver(maildir: &Path, name: &str, bytes: &[u8]) {
    for d in ["tmp", "new", "cur"] {
        std::fs::create_dir_all(maildir.join(d)).unwrap();
    }
    std::fs::write(maildir.join("new").join(name), bytes).unwrap();
}

/// `pbem intake` of `maildir` into `root` with a queue-only config under `tmp`, and `TMPDIR` set to
/// `temp` if given; returns what it printed.
fn intake(tmp: &Path, root: &Path, maildir: &Path, temp: Option<&Path>) -> String {
    let cfg = tmp.join("pbem-mail.toml");
    std::fs::write(&cfg, "from = \"Judge <judge@example.net>\"\n[transport]\nkind = \"none\"\n").unwrap();
    let mut cmd = cargo_bin_cmd!("pbem");
    if let Some(t) = temp {
        cmd.env("TMPDIR", t);
    }
    let out = cmd.args(["intake", "--now", "2026-07-01T13:00:00Z", "--root"]).arg(root).arg("--maildir").arg(maildir).arg("--config").arg(&cfg).assert().success();
    String::from_utf8_lossy(&out.get_output().stdout).to_string()
}

#[test]
fn mailed_orders_leave_no_file_outside_root_mail_and_host_files_are_private() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 72);
    let maildir = tmp.path().join("Maildir");
    deliver(&maildir, "u1", &order_mail(&game, "union", 1));
    deliver(&maildir, "c1", &order_mail(&game, "confederate", 1));
    deliver(&maildir, "spam", b"From: someone@example.com\nSubject: hello\n\nno orders here\n");
    // TMPDIR names a plain file: any temp file made there, even one removed at once, fails.
    let temp = tmp.path().join("TMPDIR");
    std::fs::write(&temp, "").unwrap();
    let stdout = intake(tmp.path(), &root, &maildir, Some(&temp));
    assert_eq!(stdout.matches("  accepted").count(), 2, "{stdout}");
    // Orders by mail are checked in memory: no copy anywhere, not even in the mail state.
    assert!(!root.join(".mail").join("tmp").exists());
    assert_eq!(mode(&root.join(".mail")), 0o700);
    for folder in ["done", "failed"] {
        let d = maildir.join(folder);
        assert!(d.is_dir(), "{folder}/ made: {stdout}");
        assert_eq!(mode(&d), 0o700, "{folder}/ holds players' orders");
    }
    // The orders are stored sealed; the step resolves (seeds read, withheld and sealed files kept).
    cargo_bin_cmd!("pbem").env("TMPDIR", &temp).args(["adjudicate", "--now", "2026-07-05T13:00:00Z"]).arg(&game).assert().success();
    let host = game.join("host");
    assert_eq!(mode(&host), 0o700);
    let files = walk(&host);
    assert!(files.iter().any(|p| p.to_string_lossy().contains("sealed")), "{files:?}");
    for p in &files {
        let want = if p.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode(p), want, "{} is {:o}", p.display(), mode(p));
    }
    // Nothing to warn about.
    let out = cargo_bin_cmd!("pbem").arg("status").arg(&game).assert().success();
    assert!(out.get_output().stderr.is_empty(), "{}", String::from_utf8_lossy(&out.get_output().stderr));
}

#[test]
fn order_copies_an_older_version_left_are_removed_by_the_next_intake() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 72);
    // What a run of an older version (which copied each order there) killed in the middle of
    // submitting left: its folder, the copy and its lock.
    let mail_tmp = root.join(".mail").join("tmp");
    std::fs::create_dir_all(mail_tmp.join("4242-abcdef012345")).unwrap();
    std::fs::write(mail_tmp.join("4242-abcdef012345").join("orders.toml"), form(&game, "union", 1, &|s| s)).unwrap();
    std::fs::write(mail_tmp.join("4242-abcdef012345.lock"), "").unwrap();
    std::fs::create_dir_all(mail_tmp.join("4243-000000000000")).unwrap();
    let maildir = tmp.path().join("Maildir");
    deliver(&maildir, "u1", &order_mail(&game, "union", 1));
    intake(tmp.path(), &root, &maildir, None);
    assert!(!mail_tmp.exists(), "{:?}", walk(&mail_tmp));
}

#[test]
fn status_and_audit_warn_when_host_can_be_read_by_others() {
    let tmp = tempfile::tempdir().unwrap();
    let game = new_game(&tmp.path().join("turns"), "g1", 72);
    let quiet = |cmd: &str| {
        let out = cargo_bin_cmd!("pbem").arg(cmd).arg(&game).assert().success();
        String::from_utf8_lossy(&out.get_output().stderr).to_string()
    };
    assert_eq!(quiet("status"), "");
    assert_eq!(quiet("audit"), "");
    // A host who copied the game with a umask of 022, or ran chmod -R a+r.
    std::fs::set_permissions(game.join("host").join("host_key"), std::fs::Permissions::from_mode(0o644)).unwrap();
    for cmd in ["status", "audit"] {
        let err = quiet(cmd);
        assert_eq!(err.lines().count(), 1, "{cmd}: one line: {err}");
        assert!(err.starts_with("warning: ") && err.contains("host is readable by other users (host/host_key)") && err.contains("chmod -R go-rwx"), "{cmd}: {err}");
    }
    std::fs::set_permissions(game.join("host"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let err = quiet("status");
    assert!(err.contains("(host and 1 more)"), "{err}");
}
