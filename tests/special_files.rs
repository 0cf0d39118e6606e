//! A FIFO, a link to `/dev/zero` or a folder where pbem keeps one of its own files (the routing
//! cache `ROOT/.mail/games`, a game's nonce index `host/nonces`, the mail log `ROOT/.mail/log`, a
//! queued mail) never holds a run or fills its memory (tester8's D1–D3): a hint is rebuilt, a
//! file pbem cannot do without is refused by name, and a queued mail that cannot be read stays
//! queued while the others are sent. Run as the real binary, each run under a time limit.

#[path = "mail/common.rs"]
mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use common::*;

/// The ways a file is put out of shape: a FIFO (no writer), a link to `/dev/zero`, a folder.
const KINDS: [&str; 3] = ["fifo", "dev-zero", "folder"];

fn make_special(path: &Path, kind: &str) {
    let _ = std::fs::remove_file(path);
    let _ = std::fs::remove_dir_all(path);
    match kind {
        "fifo" => assert!(std::process::Command::new("mkfifo").arg(path).status().unwrap().success()),
        "dev-zero" => std::os::unix::fs::symlink("/dev/zero", path).unwrap(),
        _ => std::fs::create_dir(path).unwrap(),
    }
}

struct Host {
    tmp: tempfile::TempDir,
    root: PathBuf,
    cfg: PathBuf,
    n: u32,
}

impl Host {
    /// Games g1 and g2 and a first intake (so the routing cache and the mail log exist).
    fn new() -> Host {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("turns");
        new_game(&root, "g1", 72);
        new_game(&root, "g2", 72);
        let (cfg, md) = (tmp.path().join("pbem-mail.toml"), tmp.path().join("Maildir"));
        for d in ["tmp", "new", "cur"] {
            std::fs::create_dir_all(md.join(d)).unwrap();
        }
        let (sent, maildir) = (tmp.path().join("sent").display().to_string(), md.display().to_string());
        std::fs::write(&cfg, format!("from = \"Judge <judge@example.net>\"\n[transport]\nkind = \"file\"\ndir = \"{sent}\"\n[intake]\nmaildir = \"{maildir}\"\n")).unwrap();
        let mut h = Host { tmp, root, cfg, n: 0 };
        let out = h.intake(&order_mail(&h.root.join("g1"), "union", 1));
        assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("accepted"), "{out:?}");
        h
    }

    /// Delivers `mail` and runs a cron run (`adjudicate --all --mail`) that takes it in, limited
    /// to a minute (a run held by a FIFO would fail the test here, not hang it).
    fn intake(&mut self, mail: &[u8]) -> std::process::Output {
        self.n += 1;
        let new = self.tmp.path().join("Maildir/new");
        std::fs::write(new.join(format!("{}.m{}.host", 1_700_000_000 + self.n, self.n)), mail).unwrap();
        let now = format!("2026-07-01T13:{:02}:00Z", self.n);
        Command::cargo_bin("pbem").unwrap().args(["adjudicate", "--all"]).arg(&self.root).arg("--mail").arg(&self.cfg).args(["--now", &now]).timeout(Duration::from_secs(60)).output().unwrap()
    }
}

/// The routing cache out of shape: the order mail is still taken in and the cache rebuilt as a
/// regular file.
#[test]
fn a_special_file_in_place_of_the_routing_cache_is_rebuilt() {
    let mut h = Host::new();
    let cache = h.root.join(".mail/games");
    for (i, kind) in KINDS.iter().enumerate() {
        make_special(&cache, kind);
        let out = h.intake(&order_mail(&h.root.join("g2"), "union", 10 + i as u32));
        let stdout = String::from_utf8_lossy(&out.stdout);
        if *kind == "folder" {
            // A folder cannot be replaced by the cache: the run still routes the mail.
            assert!(stdout.contains("accepted"), "{kind}: {out:?}");
            continue;
        }
        assert!(out.status.success() && stdout.contains("accepted"), "{kind}: {out:?}");
        assert!(std::fs::symlink_metadata(&cache).unwrap().file_type().is_file(), "{kind}: the cache is written anew");
    }
}

/// A game's nonce index out of shape: `submit` takes the order (the index rebuilt from the
/// receipts), within a minute and without reading `/dev/zero`.
#[test]
fn a_special_file_in_place_of_the_nonce_index_is_rebuilt() {
    let h = Host::new();
    let game = h.root.join("g2");
    for (i, kind) in ["fifo", "dev-zero"].iter().enumerate() {
        make_special(&game.join("host/nonces"), kind);
        let text = form(&game, "confederate", 20 + i as u32, &|s| s);
        let file = h.tmp.path().join(format!("o{i}.toml"));
        std::fs::write(&file, format!("{text}{}", sign("confederate", &text))).unwrap();
        let out = Command::cargo_bin("pbem").unwrap().arg("submit").arg(&game).arg(&file).args(["--now", "2026-07-01T13:30:00Z"]).timeout(Duration::from_secs(60)).output().unwrap();
        assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("accepted"), "{kind}: {out:?}");
    }
}

/// The mail log (not a hint: it holds which messages were handled) out of shape: the run stops
/// with an error naming it, at once, and handles no message twice later.
#[test]
fn a_special_file_in_place_of_the_mail_log_is_refused_by_name() {
    let mut h = Host::new();
    let log = h.root.join(".mail/log");
    make_special(&log, "fifo");
    let out = h.intake(&order_mail(&h.root.join("g2"), "union", 30));
    assert!(!out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("log: not a regular file"), "{out:?}");
}

/// A queued mail that is a FIFO: the other mails are sent, it stays queued, and the run says
/// which file it could not read.
#[test]
fn a_fifo_in_the_outbox_queue_holds_no_other_mail() {
    let mut h = Host::new();
    let queue = h.root.join(".mail/outbox/queue");
    std::fs::create_dir_all(&queue).unwrap();
    make_special(&queue.join("a.mail"), "fifo");
    let out = h.intake(&order_mail(&h.root.join("g2"), "union", 40));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("a.mail: not a regular file"), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("accepted"), "{out:?}");
    let sent = std::fs::read_dir(h.tmp.path().join("sent")).unwrap().count();
    assert!(sent >= 2, "the replies are sent despite the FIFO: {sent}");
    assert!(queue.join("a.mail").exists(), "the FIFO stays queued");
}

/// A FIFO, a link to `/dev/zero`, a folder or a dangling link among the Maildir's new messages
/// (tester9 D9, tester11 D7): each is named at every run and left in place, never read or waited
/// on; the real message beside them is taken in; and the run exits 1 until the host removes
/// them, as for any message that waits for the host (tester t25a-7: it exited 0).
#[test]
fn special_files_in_the_maildir_are_named_and_left() {
    let mut h = Host::new();
    let new = h.tmp.path().join("Maildir/new");
    for kind in KINDS {
        make_special(&new.join(format!("1690000000.{kind}.host")), kind);
    }
    std::os::unix::fs::symlink(h.tmp.path().join("nowhere"), new.join("1690000000.dangling.host")).unwrap();
    let out = h.intake(&order_mail(&h.root.join("g2"), "union", 41));
    let said = String::from_utf8_lossy(&out.stdout);
    for kind in KINDS.iter().chain(&["dangling"]) {
        let name = new.join(format!("1690000000.{kind}.host"));
        assert!(said.lines().any(|l| l.contains(&format!(": left for the next run: {}: ", name.display())) && l.contains("not a message; left in place")), "{kind}: {said}");
        assert!(name.symlink_metadata().is_ok(), "{kind} is left in place");
    }
    assert!(said.contains("accepted"), "{out:?}");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    // `pbem intake --quiet` says them on stderr, and exits 1 too; once they are gone, 0.
    let intake = |h: &Host| Command::cargo_bin("pbem").unwrap().args(["intake", "--quiet", "--root"]).arg(&h.root).arg("--config").arg(&h.cfg).args(["--now", "2026-07-01T14:00:00Z"]).timeout(Duration::from_secs(60)).output().unwrap();
    let out = intake(&h);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a message; left in place"), "{out:?}");
    for kind in KINDS.iter().chain(&["dangling"]) {
        let name = new.join(format!("1690000000.{kind}.host"));
        if name.is_dir() { std::fs::remove_dir(&name) } else { std::fs::remove_file(&name) }.unwrap();
    }
    let out = intake(&h);
    assert!(out.status.success(), "{out:?}");
}

/// A FIFO in place of a lock file (the game's, the root's intake lock), a key file or the mbox
/// a run reads (tester9 D5–D7): each is refused by name at once, none is waited on (a lock
/// file, opened to write without waiting, fails as "no such device" while the FIFO has no
/// reader, and as not a regular file while it has one).
#[test]
fn a_fifo_in_place_of_a_lock_a_key_or_an_mbox_is_refused_at_once() {
    let mut h = Host::new();
    let game = h.root.join("g2");
    let run = |args: &[&std::ffi::OsStr]| Command::cargo_bin("pbem").unwrap().args(args).timeout(Duration::from_secs(60)).output().unwrap();
    // The game's lock: submit names it.
    make_special(&game.join(".lock"), "fifo");
    let text = form(&game, "confederate", 50, &|s| s);
    let order = h.tmp.path().join("o50.toml");
    std::fs::write(&order, format!("{text}{}", sign("confederate", &text))).unwrap();
    let out = run(&["submit".as_ref(), game.as_os_str(), order.as_os_str(), "--now".as_ref(), "2026-07-01T13:40:00Z".as_ref()]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("g2/.lock: "), "{out:?}");
    std::fs::remove_file(game.join(".lock")).unwrap();
    // The root's intake lock: the cron run names it.
    let lock = h.root.join(".mail/intake.lock");
    make_special(&lock, "fifo");
    let out = h.intake(&order_mail(&game, "union", 51));
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("intake.lock: "), "{out:?}");
    std::fs::remove_file(&lock).unwrap();
    // A key file given to `sign`.
    let key = h.tmp.path().join("key");
    make_special(&key, "fifo");
    let out = run(&["sign".as_ref(), "--key".as_ref(), key.as_os_str(), order.as_os_str()]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("not a regular file"), "{out:?}");
    // An mbox given to intake.
    let mbox = h.tmp.path().join("mbox");
    make_special(&mbox, "fifo");
    let out = run(&["intake".as_ref(), "--root".as_ref(), h.root.as_os_str(), "--config".as_ref(), h.cfg.as_os_str(), "--mbox".as_ref(), mbox.as_os_str()]);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("not a regular file"), "{out:?}");
}

/// A FIFO in place of a game's `game.toml`: a sweep over the root names it and goes on, never
/// waiting on it (every command reads the game file first).
#[test]
fn a_fifo_in_place_of_a_game_file_holds_no_sweep() {
    let h = Host::new();
    make_special(&h.root.join("g2/game.toml"), "fifo");
    let out = Command::cargo_bin("pbem").unwrap().args(["adjudicate", "--all"]).arg(&h.root).args(["--now", "2026-07-01T13:50:00Z"]).timeout(Duration::from_secs(60)).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("g2/game.toml"), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("g1"), "the other game is swept: {out:?}");
}

/// `pbem audit` of a public copy that is a FIFO (or a device) says the copy is neither a folder
/// nor an archive, at once, instead of "Not a directory" for a `game.toml` inside it (tester9 D11).
#[test]
fn auditing_a_fifo_in_place_of_a_public_copy_says_what_it_is() {
    let tmp = tempfile::tempdir().unwrap();
    for kind in ["fifo", "dev-zero"] {
        let copy = tmp.path().join(format!("{kind}.tar"));
        make_special(&copy, kind);
        let out = Command::cargo_bin("pbem").unwrap().arg("audit").arg(&copy).timeout(Duration::from_secs(60)).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        assert!(err.contains("neither a game directory nor a public copy (a FIFO or a device)") && !err.contains("game.toml"), "{kind}: {err}");
    }
}

/// `pbem audit` of a game whose record is a FIFO, a link to `/dev/zero` or a folder says it is
/// no regular file, at once, not that it is missing (tester20 T20b-4).
#[test]
fn auditing_a_record_that_is_no_file_says_what_it_is() {
    let h = Host::new();
    let game = h.root.join("g1");
    let record = game.join("records/000000.json");
    let kept = std::fs::read(&record).unwrap();
    for kind in KINDS {
        make_special(&record, kind);
        let out = Command::cargo_bin("pbem").unwrap().arg("audit").arg(&game).timeout(Duration::from_secs(60)).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{kind}: {out:?}");
        assert!(err.contains("000000.json") && err.contains("not a regular file") && !err.contains("missing"), "{kind}: {err}");
    }
    make_special(&record, "folder");
    std::fs::remove_dir(&record).unwrap();
    std::fs::write(&record, kept).unwrap();
    Command::cargo_bin("pbem").unwrap().arg("audit").arg(&game).assert().success();
}

/// A host's withheld copy that is a FIFO, a link to `/dev/zero` or a folder is said to be no
/// regular file by the audit, not missing (tester21 T21a-3).
#[test]
fn a_withheld_copy_that_is_no_file_is_named_as_such() {
    let tmp = tempfile::tempdir().unwrap();
    let game = tmp.path().join("g");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("turns/demo-gettysburg-campaign-18630701");
    assert!(std::process::Command::new("cp").arg("-r").arg(&src).arg(&game).status().unwrap().success());
    let held = game.join("host/withheld/000009-confederate.json");
    assert!(held.is_file(), "the example game keeps a withheld copy");
    for kind in KINDS {
        make_special(&held, kind);
        let out = Command::cargo_bin("pbem").unwrap().arg("audit").arg(&game).timeout(Duration::from_secs(60)).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{kind}: {out:?}");
        assert!(err.contains("000009-confederate.json: not a regular file") && !err.contains("missing"), "{kind}: {err}");
    }
}
