//! The outbox under overlapping runs, with the real binary (tester16 T16a-2): a reply queued by a
//! run that finds another run sending (`ROOT/.mail/outbox/.lock` taken) must not sit in the queue
//! once every run has exited. The run that finds the lock taken waits for it a while; the run
//! holding it looks at the queue again before it lets it go.

#[path = "mail/common.rs"]
mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::*;
use pbem::mail::Outbox;

/// After the deadline (12:00 + 72 h) of a game made by `new_game(_, _, 72)`.
const LATE: &str = "2026-07-05T12:00:00Z";

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_pbem"))
}

/// A host config whose `transport` section is `transport` (no mail source of its own).
fn config(tmp: &Path, transport: &str) -> PathBuf {
    let cfg = tmp.join("pbem-mail.toml");
    std::fs::write(&cfg, format!("from = \"Judge <judge@example.net>\"\n[transport]\n{transport}\n")).unwrap();
    cfg
}

/// `pbem intake --stdin` of `msg`, running.
fn intake(root: &Path, cfg: &Path, msg: &[u8]) -> Child {
    let mut c = Command::new(bin())
        .args(["intake", "--stdin", "--now", LATE, "--root"])
        .arg(root)
        .arg("--config")
        .arg(cfg)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(msg).unwrap();
    c
}

/// Waits for a child: (success, stdout, stderr).
fn finish(c: Child) -> (bool, String, String) {
    let out = c.wait_with_output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// The mails a `kind = "file"` transport wrote to `dir`.
fn delivered(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.count())
}

#[test]
fn a_run_that_finds_the_outbox_busy_waits_for_it_and_sends_its_reply() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 72);
    let sent = tmp.path().join("sent");
    let cfg = config(tmp.path(), &format!("kind = \"file\"\ndir = \"{}\"", sent.display()));
    // Another run is sending (`flock turns/.mail/outbox/.lock sleep 1`).
    let outbox = Outbox::under(&root);
    std::fs::create_dir_all(&outbox.dir).unwrap();
    let lock = std::fs::File::create(outbox.dir.join(".lock")).unwrap();
    lock.lock().unwrap();
    let mut run = intake(&root, &cfg, &order_mail(&game, "union", 1));
    std::thread::sleep(Duration::from_millis(1000));
    assert!(run.try_wait().unwrap().is_none(), "the run waits for the outbox");
    drop(lock);
    let (ok, out, err) = finish(run);
    assert!(ok, "{out}\n{err}");
    assert!(out.contains("outbox: 1 queued in this run, 1 sent, 0 waiting\n"), "{out}");
    assert!(outbox.pending().unwrap().is_empty() && delivered(&sent) == 1, "{out}");
}

#[test]
fn a_reply_queued_while_a_run_sends_is_sent_by_that_run() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 72);
    let (second, got, marker) = (tmp.path().join("second.eml"), tmp.path().join("got"), tmp.path().join("second.out"));
    std::fs::write(&second, order_mail(&game, "confederate", 1)).unwrap();
    std::fs::create_dir_all(&got).unwrap();
    // A sendmail that, handed its first mail, runs a second intake to its end (it finds the
    // outbox busy past its wait and leaves its reply queued) before it takes the mail.
    let script = tmp.path().join("sendmail");
    let cfg_path = tmp.path().join("pbem-mail.toml");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nif [ ! -e {m} ]; then {bin} intake --stdin --now {LATE} --root {root} --config {cfg} < {second} > {m} 2>&1; fi\ncat > {got}/$$.eml\n",
            m = marker.display(),
            bin = bin().display(),
            root = root.display(),
            cfg = cfg_path.display(),
            second = second.display(),
            got = got.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let cfg = config(tmp.path(), &format!("kind = \"sendmail\"\ncommand = \"{}\"", script.display()));
    let (ok, out, err) = finish(intake(&root, &cfg, &order_mail(&game, "union", 1)));
    assert!(ok, "{out}\n{err}");
    let inner = std::fs::read_to_string(&marker).unwrap();
    assert!(inner.contains("outbox: 1 queued in this run, 0 sent, 2 waiting (another run is sending them)"), "{inner}");
    assert!(out.contains("outbox: 1 queued in this run, 2 sent, 0 waiting\n"), "the holder sends the other run's reply too: {out}");
    assert!(Outbox::under(&root).pending().unwrap().is_empty());
    assert_eq!(delivered(&got), 2);
}

#[test]
fn a_cron_run_and_three_piped_messages_at_once_leave_nothing_queued() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 72);
    let sent = tmp.path().join("sent");
    let cfg = config(tmp.path(), &format!("kind = \"file\"\ndir = \"{}\"", sent.display()));
    let mut runs = vec![Command::new(bin()).args(["adjudicate", "--all"]).arg(&root).arg("--mail").arg(&cfg).args(["--now", LATE]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()];
    for n in 1..=3 {
        runs.push(intake(&root, &cfg, &order_mail(&game, "union", n)));
    }
    let mut outs = Vec::new();
    for r in runs {
        let (ok, out, err) = finish(r);
        assert!(ok, "{out}\n{err}");
        outs.push(out);
    }
    let left = Outbox::under(&root).pending().unwrap();
    assert!(left.is_empty(), "{left:?} left queued after every run exited:\n{}", outs.join("\n"));
}
