//! The cron line under overlap, as a host meets it: a second cron run or a piped `intake --stdin`
//! while another run holds the root's intake lock, a game that is busy or cannot be read, a backup
//! copy of a game inside ROOT, and a clock read before a lock was taken. Each runs the real binary
//! beside a lock the test holds (a run in progress), and checks that no order the judge holds is
//! resolved as NMR.

#[path = "mail/common.rs"]
mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::*;
use pbem::mail::intake::{self, Disposition, Source};
use pbem::mail::HostConfig;
use pbem::model::Record;
use pbem::pipeline::{self, Clock, Entropy};

/// After the deadline (12:00 + 1 h) of a game made by `new_game(_, _, 1)`.
const LATE: &str = "2026-07-01T14:00:00Z";

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_pbem"))
}

/// A host config taking mail from `TMP/Maildir`, queueing replies (no transport).
fn config(tmp: &Path) -> PathBuf {
    for sub in ["new", "cur", "tmp"] {
        std::fs::create_dir_all(tmp.join("Maildir").join(sub)).unwrap();
    }
    let cfg = tmp.join("pbem-mail.toml");
    std::fs::write(&cfg, format!("from = \"Judge <judge@example.net>\"\n[intake]\nmaildir = \"{}\"\n[transport]\nkind = \"none\"\n", tmp.join("Maildir").display())).unwrap();
    cfg
}

fn deliver(tmp: &Path, name: &str, bytes: &[u8]) {
    let md = tmp.join("Maildir");
    std::fs::write(md.join("tmp").join(name), bytes).unwrap();
    std::fs::rename(md.join("tmp").join(name), md.join("new").join(name)).unwrap();
}

/// Holds `ROOT/.mail/intake.lock` as a running intake or cron run would.
fn hold_root_lock(root: &Path) -> std::fs::File {
    std::fs::create_dir_all(root.join(".mail")).unwrap();
    let f = std::fs::File::options().create(true).truncate(false).write(true).open(root.join(".mail").join("intake.lock")).unwrap();
    f.try_lock().unwrap();
    f
}

fn cron(root: &Path, cfg: &Path, now: Option<&str>) -> Child {
    let mut c = Command::new(bin());
    c.args(["adjudicate", "--all"]).arg(root).arg("--mail").arg(cfg);
    if let Some(t) = now {
        c.args(["--now", t]);
    }
    c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

/// Waits for a child, with its exit status and output.
fn finish(c: Child) -> (bool, String, String) {
    let out = c.wait_with_output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// True while the child has not exited after `ms` milliseconds.
fn still_running(c: &mut Child, ms: u64) -> bool {
    std::thread::sleep(Duration::from_millis(ms));
    c.try_wait().unwrap().is_none()
}

fn record(game: &Path, n: u64) -> Option<Record> {
    pipeline::read_record(&pipeline::load(game).unwrap().dir, n).ok()
}

/// The roles resolved as NMR in record `n`.
fn nmr_roles(game: &Path, n: u64) -> Vec<String> {
    let r = record(game, n).expect("the step was resolved");
    r.resolution.unwrap().orders.iter().filter(|o| o.seq.is_none()).map(|o| o.role.clone()).collect()
}

#[test]
fn a_cron_run_waits_for_a_running_intake_and_never_nmrs_an_order_in_the_maildir() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 1);
    let cfg = config(tmp.path());
    // Meade's order arrived before the deadline; Lee sent nothing.
    deliver(tmp.path(), "1782907200.M1P1.host", &order_mail(&game, "union", 1));
    let lock = hold_root_lock(&root);
    let mut run = cron(&root, &cfg, Some(LATE));
    assert!(still_running(&mut run, 700), "a cron run must wait while another run holds the intake lock");
    assert!(record(&game, 1).is_none(), "nothing resolved while the lock is held");
    drop(lock);
    let (ok, out, err) = finish(run);
    assert!(ok, "{out}\n{err}");
    assert_eq!(nmr_roles(&game, 1), vec!["confederate".to_string()], "{out}");
}

#[test]
fn a_piped_message_waiting_for_the_lock_is_taken_in_before_any_nmr() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 1);
    let cfg = config(tmp.path());
    let lock = hold_root_lock(&root);
    // The MTA pipes Meade's order in while a run holds the lock; then cron starts too.
    let mut pipe = Command::new(bin())
        .args(["intake", "--stdin", "--now", LATE, "--root"])
        .arg(&root)
        .arg("--config")
        .arg(&cfg)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    pipe.stdin.take().unwrap().write_all(&order_mail(&game, "union", 1)).unwrap();
    assert!(still_running(&mut pipe, 500), "the pipe waits for the lock");
    let mut run = cron(&root, &cfg, Some(LATE));
    assert!(still_running(&mut run, 500), "the cron run waits for the lock");
    drop(lock);
    let (ok_pipe, out_pipe, err_pipe) = finish(pipe);
    let (ok, out, err) = finish(run);
    assert!(ok_pipe && ok, "{out_pipe}\n{err_pipe}\n{out}\n{err}");
    assert_eq!(nmr_roles(&game, 1), vec!["confederate".to_string()], "pipe: {out_pipe}\ncron: {out}");
    // Whichever run got the lock first, the pipe says what became of its message; it never says
    // there was nothing new, which reads as a duplicate (found by tester15).
    assert!(out_pipe.contains("accepted") || out_pipe.contains("taken in by another run while this one waited"), "{out_pipe}");
    assert!(!out_pipe.contains("no new messages"), "{out_pipe}");
}

#[test]
fn a_spooled_message_holds_a_plain_adjudication_back_from_nmr() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 1);
    let spool = root.join(".mail").join("spool");
    for sub in ["new", "cur"] {
        std::fs::create_dir_all(spool.join(sub)).unwrap();
    }
    std::fs::write(spool.join("new").join("01782907200.000000.abc"), order_mail(&game, "union", 1)).unwrap();
    let out = Command::new(bin()).args(["adjudicate", "--now", LATE]).arg(&game).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("step 1 is due but not resolved: a message with orders for it waits in"), "{stdout}");
    assert!(record(&game, 1).is_none());
    // Taken in by the cron line, the order counts.
    let cfg = config(tmp.path());
    let (ok, out, err) = finish(cron(&root, &cfg, Some(LATE)));
    assert!(ok, "{out}\n{err}");
    assert_eq!(nmr_roles(&game, 1), vec!["confederate".to_string()], "{out}");
}

#[test]
fn a_backup_copy_of_a_game_captures_no_order_and_is_not_adjudicated() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 1);
    let backup = root.join("g1.bak");
    assert!(Command::new("cp").arg("-a").arg(&game).arg(&backup).status().unwrap().success());
    let cfg = config(tmp.path());
    deliver(tmp.path(), "1782907200.M1P1.host", &order_mail(&game, "union", 1));
    let (ok, out, err) = finish(cron(&root, &cfg, Some(LATE)));
    assert!(!ok, "the host must hear of it: {out}\n{err}");
    assert!(err.contains("game g1 is held by more than one folder"), "{err}");
    assert!(out.contains("left for the next run") && out.contains("more than one folder"), "{out}");
    for dir in [&game, &backup] {
        assert!(pipeline::read_receipts(&pipeline::load(dir).unwrap().dir, 1).unwrap().is_empty(), "no receipt in {}", dir.display());
        assert!(record(dir, 1).is_none(), "{} not adjudicated", dir.display());
    }
    // Nor does a plain `adjudicate --all` (no mail) resolve either copy.
    let plain = Command::new(bin()).args(["adjudicate", "--now", LATE, "--all"]).arg(&root).output().unwrap();
    assert!(!plain.status.success());
    assert!(String::from_utf8_lossy(&plain.stderr).contains("game g1 is held by more than one folder"), "{}", String::from_utf8_lossy(&plain.stderr));
    assert!(record(&game, 1).is_none() && record(&backup, 1).is_none());
    // The host removes the copy: the order is taken in and counts.
    std::fs::remove_dir_all(&backup).unwrap();
    let (ok, out, err) = finish(cron(&root, &cfg, Some(LATE)));
    assert!(ok, "{out}\n{err}");
    assert_eq!(nmr_roles(&game, 1), vec!["confederate".to_string()], "{out}");
}

#[test]
fn a_busy_or_unreadable_game_holds_back_only_its_own_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let g1 = new_game(&root, "g1", 72);
    let g2 = new_game(&root, "g2", 72);
    // g3's game.toml has a typo, but its id still reads: orders for it wait, others do not.
    let g3 = root.join("g3");
    std::fs::create_dir_all(&g3).unwrap();
    std::fs::write(g3.join("game.toml"), "id = \"g3\"\nrules = \"gettysburg-campaign\n").unwrap();
    let maildir = tmp.path().join("Maildir");
    for sub in ["new", "cur", "tmp"] {
        std::fs::create_dir_all(maildir.join(sub)).unwrap();
    }
    let with_game = |m: Vec<u8>, id: &str| String::from_utf8(m).unwrap().replacen("game = \"g1\"", &format!("game = \"{id}\""), 1).into_bytes();
    deliver(tmp.path(), "1782907201.M1P1.host", &order_mail(&g1, "union", 1)); // g1 is busy: waits
    deliver(tmp.path(), "1782907202.M2P2.host", &order_mail(&g2, "confederate", 1)); // other game, other sender
    deliver(tmp.path(), "1782907203.M3P3.host", &with_game(order_mail(&g1, "confederate", 3), "g9")); // no such game
    deliver(tmp.path(), "1782907204.M4P4.host", &with_game(order_mail(&g1, "confederate", 4), "g3")); // unreadable g3: waits
    deliver(tmp.path(), "1782907205.M5P5.host", &order_mail(&g1, "confederate", 2)); // g1 (and Lee) again: waits
    let busy = std::fs::File::options().create(true).truncate(false).write(true).open(g1.join(".lock")).unwrap();
    busy.try_lock().unwrap();
    let cfg = HostConfig::queue_only("judge <judge@example.net>");
    let h = intake::run(&root, &Source::Maildir(maildir.clone()), &cfg, pipeline::parse_time("2026-07-01T13:00:00Z").unwrap()).unwrap();
    let got: Vec<(Disposition, &str)> = h.iter().map(|h| (h.disposition, h.reason.as_str())).collect();
    assert_eq!(h[0].disposition, Disposition::Retry, "{got:?}");
    assert!(h[0].reason.contains("game g1 was busy"), "{got:?}");
    assert_eq!(h[1].disposition, Disposition::Done, "another game's order is not held back: {got:?}");
    assert!(h[1].orders[0].receipt.is_some(), "{got:?}");
    assert_eq!(h[2].disposition, Disposition::Done, "an unknown game is refused, not held: {got:?}");
    assert!(h[2].orders[0].error.as_deref().unwrap_or("").contains("there is no game \"g9\""), "{got:?}");
    assert_eq!(h[3].disposition, Disposition::Retry, "{got:?}");
    assert!(h[3].reason.contains("cannot be read"), "{got:?}");
    assert_eq!(h[4].disposition, Disposition::Retry, "{got:?}");
    assert!(h[4].reason.contains("same game waits"), "{got:?}");
    drop(busy);
}

#[test]
fn a_cron_run_reports_an_unreadable_game_on_stderr_and_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 1);
    let bad = root.join("g0");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::write(bad.join("game.toml"), "id = \"g0\"\nrules = [\n").unwrap();
    let cfg = config(tmp.path());
    deliver(tmp.path(), "1782907200.M1P1.host", &order_mail(&game, "union", 1));
    let (ok, out, err) = finish(cron(&root, &cfg, Some(LATE)));
    assert!(!ok);
    assert!(err.contains("g0:") && err.contains("game.toml"), "{err}");
    assert_eq!(nmr_roles(&game, 1), vec!["confederate".to_string()], "{out}");
}

#[test]
fn a_step_is_never_resolved_before_its_newest_receipt() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 1);
    let order = tmp.path().join("union.toml");
    let text = form(&game, "union", 1, &|s| s);
    std::fs::write(&order, format!("{text}{}", sign("union", &text))).unwrap();
    // Received at 14:00, after the deadline (the step takes orders until it is resolved).
    let ok = Command::new(bin()).args(["submit", "--now", LATE]).arg(&game).arg(&order).output().unwrap();
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    // The clock steps back to 13:30: resolving now would put the record before the receipt.
    let back = Command::new(bin()).args(["adjudicate", "--now", "2026-07-01T13:30:00Z"]).arg(&game).output().unwrap();
    let err = String::from_utf8_lossy(&back.stderr);
    assert!(!back.status.success(), "{err}");
    assert!(err.contains("before receipt 1 of union for step 1 (2026-07-01T14:00:00Z)"), "{err}");
    assert!(record(&game, 1).is_none());
    // A second order stamped before the first is refused the same way.
    let text2 = form(&game, "union", 2, &|s| s);
    std::fs::write(&order, format!("{text2}{}", sign("union", &text2))).unwrap();
    let back = Command::new(bin()).args(["submit", "--now", "2026-07-01T13:30:00Z"]).arg(&game).arg(&order).output().unwrap();
    assert!(!back.status.success());
    assert!(String::from_utf8_lossy(&back.stderr).contains("before receipt 1 of union"), "{}", String::from_utf8_lossy(&back.stderr));
    // With the clock right again, the step resolves and the game audits.
    assert!(Command::new(bin()).args(["adjudicate", "--now", "2026-07-01T14:05:00Z"]).arg(&game).status().unwrap().success());
    let audit = Command::new(bin()).arg("audit").arg(&game).output().unwrap();
    assert!(audit.status.success(), "{}", String::from_utf8_lossy(&audit.stdout));
}

#[test]
fn a_record_written_while_a_run_waited_for_the_lock_is_no_clock_jump() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 1);
    let cfg = config(tmp.path());
    let lock = hold_root_lock(&root);
    // A cron run on the real clock starts and waits...
    let mut run = cron(&root, &cfg, None);
    assert!(still_running(&mut run, 2100), "it waits for the lock");
    // ...while the run holding the lock resolves step 1 a second or two later.
    for role in ["confederate", "union"] {
        let f = tmp.path().join(format!("{role}.toml"));
        let text = form(&game, role, 1, &|s| s);
        std::fs::write(&f, format!("{text}{}", sign(role, &text))).unwrap();
        pipeline::submit(&game, &[f], Clock::System).unwrap().pop().unwrap().unwrap();
    }
    let a = pipeline::adjudicate(&game, Clock::System, &mut Entropy::seeded([5; 32])).unwrap();
    assert_eq!(a.resolved, vec![1]);
    drop(lock);
    let (ok, out, err) = finish(run);
    assert!(ok, "a record newer than the run's start is not a clock jump:\n{out}\n{err}");
    assert!(!err.contains("refusing to act"), "{err}");
}

/// An intake of a Maildir skipped while another run holds the root's lock says so, and not that
/// there are no new messages (tester T23a-3: both lines were printed).
#[test]
fn a_skipped_intake_does_not_say_there_are_no_new_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    new_game(&root, "g1", 24);
    let cfg = config(tmp.path());
    let md = tmp.path().join("Maildir");
    for sub in ["new", "cur", "tmp"] {
        std::fs::create_dir_all(md.join(sub)).unwrap();
    }
    std::fs::write(md.join("new").join("1.M1.host"), "From: x@example.org\nSubject: status\n\nstatus\n").unwrap();
    let lock = hold_root_lock(&root);
    let out = Command::new(bin()).args(["intake", "--maildir"]).arg(&md).arg("--root").arg(&root).arg("--config").arg(&cfg).output().unwrap();
    drop(lock);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.contains("skipped: another intake is running") && !stdout.contains("no new messages"), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    assert!(md.join("new").join("1.M1.host").exists(), "left for the next run");
}

/// A signed order file of `role` (nonce number `n`) submitted to `game` at `at`.
fn submit_at(tmp: &Path, game: &Path, role: &str, n: u32, at: &str) {
    let f = tmp.join(format!("{role}-{n}.toml"));
    let text = form(game, role, n, &|s| s);
    std::fs::write(&f, format!("{text}{}", sign(role, &text))).unwrap();
    pipeline::submit(game, &[f], pipeline::parse_time(at).unwrap()).unwrap().pop().unwrap().unwrap();
}

#[test]
fn an_order_that_arrives_while_the_run_takes_mail_in_is_used() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let g1 = new_game(&root, "g1", 1);
    let g2 = new_game(&root, "g2", 1);
    let g3 = new_game(&root, "g3", 1);
    let cfg = config(tmp.path());
    // g1: Lee's order is in, Meade's comes by mail. g3: both are in, and Meade sends a newer one.
    submit_at(tmp.path(), &g1, "confederate", 1, "2026-07-01T12:30:00Z");
    submit_at(tmp.path(), &g3, "confederate", 1, "2026-07-01T12:30:00Z");
    submit_at(tmp.path(), &g3, "union", 1, "2026-07-01T12:30:00Z");
    // The pass is slowed by g2, whose game stays busy: its order waits 5 s for the lock.
    deliver(tmp.path(), "1782907200.M1P1.host", &order_mail(&g2, "union", 1));
    let busy = std::fs::File::options().create(true).truncate(false).write(true).open(g2.join(".lock")).unwrap();
    busy.try_lock().unwrap();
    let run = cron(&root, &cfg, Some(LATE));
    std::thread::sleep(Duration::from_millis(2500));
    deliver(tmp.path(), "1782907201.M2P2.host", &order_mail(&g1, "union", 1));
    let newer = order_mail(&g3, "union", 2);
    deliver(tmp.path(), "1782907202.M3P3.host", &newer);
    let (ok, out, err) = finish(run);
    drop(busy);
    assert!(ok, "{out}\n{err}");
    assert!(nmr_roles(&g1, 1).is_empty(), "Meade's order arrived before the step was resolved:\n{out}");
    let used = record(&g3, 1).unwrap().resolution.unwrap().orders.into_iter().find(|o| o.role == "union").unwrap();
    assert_eq!(used.seq, Some(2), "the newer order counts:\n{out}");
    assert!(record(&g2, 1).is_none(), "g2's order waits, so g2 waits:\n{out}");
}

#[test]
fn a_piped_order_and_a_later_maildir_order_count_in_the_order_they_arrived() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 72);
    let cfg = config(tmp.path());
    let lock = hold_root_lock(&root);
    // The first order comes by pipe and is spooled; the pipe is then killed (the MTA's timeout).
    let mut pipe = Command::new(bin())
        .args(["intake", "--stdin", "--now", "2026-07-01T13:00:00Z", "--root"])
        .arg(&root)
        .arg("--config")
        .arg(&cfg)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    pipe.stdin.take().unwrap().write_all(&order_mail(&game, "union", 1)).unwrap();
    let spool = root.join(".mail").join("spool").join("new");
    for _ in 0..100 {
        if std::fs::read_dir(&spool).map(|d| d.count() > 0).unwrap_or(false) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    pipe.kill().unwrap();
    pipe.wait().unwrap();
    // The second, newer order is delivered to the Maildir a second later.
    deliver(tmp.path(), "1782910801.M1P1.host", &order_mail(&game, "union", 2));
    drop(lock);
    let (ok, out, err) = finish(cron(&root, &cfg, Some("2026-07-01T13:05:00Z")));
    assert!(ok, "{out}\n{err}");
    let newest = pipeline::latest_receipts(&pipeline::load(&game).unwrap().dir, 1).unwrap()["union"].clone();
    let second = hex::encode(pbem::commit::order_commitment("g1", 1, "union", form(&game, "union", 2, &|s| s).as_bytes()));
    assert_eq!(newest.commitment, second, "the order sent last counts:\n{out}");
}

#[test]
fn a_game_folder_nobody_may_read_is_reported_not_taken_for_no_game() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 72);
    let hidden = new_game(&root, "g4", 72);
    let cfg = config(tmp.path());
    deliver(tmp.path(), "1782907200.M1P1.host", &with_game_id(order_mail(&game, "union", 1), "g4"));
    deliver(tmp.path(), "1782907201.M2P2.host", &order_mail(&game, "union", 2));
    // As root, permissions do not bite: run the judge as nobody, on files nobody owns.
    let as_root = unsafe { libc::geteuid() } == 0;
    if as_root {
        assert!(Command::new("chown").args(["-R", "65534:65534"]).arg(tmp.path()).status().unwrap().success());
        assert!(Command::new("chmod").args(["755"]).arg(tmp.path()).status().unwrap().success());
    }
    std::fs::set_permissions(&hidden, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    let mut c = if as_root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(bin());
        c
    } else {
        Command::new(bin())
    };
    let out = c.args(["adjudicate", "--now", "2026-07-01T13:00:00Z", "--all"]).arg(&root).arg("--mail").arg(&cfg).output().unwrap();
    std::fs::set_permissions(&hidden, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert!(stderr.contains("g4") && stderr.contains("ermission denied"), "{stderr}");
    assert!(!stdout.contains("there is no game"), "an order for it is not refused as for no game:\n{stdout}");
    assert!(stdout.contains("left for the next run"), "{stdout}");
    assert!(std::fs::read_dir(tmp.path().join("Maildir/done")).map(|d| d.count()).unwrap_or(0) >= 1, "g1's own order is taken in:\n{stdout}");
}

fn with_game_id(m: Vec<u8>, id: &str) -> Vec<u8> {
    String::from_utf8(m).unwrap().replacen("game = \"g1\"", &format!("game = \"{id}\""), 1).into_bytes()
}

#[test]
fn an_order_for_an_unknown_game_waiting_on_a_broken_folder_holds_back_only_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let g1 = new_game(&root, "g1", 72);
    let g5 = root.join("g5");
    std::fs::create_dir_all(&g5).unwrap();
    std::fs::write(g5.join("game.toml"), "garbage = [\n").unwrap(); // not even its id reads
    config(tmp.path());
    deliver(tmp.path(), "1782907201.M1P1.host", &with_game_id(order_mail(&g1, "union", 1), "g1x")); // a typo: may be g5
    deliver(tmp.path(), "1782907202.M2P2.host", &order_mail(&g1, "union", 2)); // the same sender, the right game
    deliver(tmp.path(), "1782907203.M3P3.host", &order_mail(&g1, "confederate", 1));
    let cfg = HostConfig::queue_only("judge <judge@example.net>");
    let h = intake::run(&root, &Source::Maildir(tmp.path().join("Maildir")), &cfg, pipeline::parse_time("2026-07-01T13:00:00Z").unwrap()).unwrap();
    let got: Vec<(Disposition, &str)> = h.iter().map(|h| (h.disposition, h.reason.as_str())).collect();
    assert_eq!(h[0].disposition, Disposition::Retry, "{got:?}");
    assert!(h[1].orders[0].receipt.is_some() && h[2].orders[0].receipt.is_some(), "{got:?}");
}

/// A cron run on the real clock reads it for each game once that game is locked: an order that
/// `pbem submit` files while the run is busy with other games (here: taking in mail for a game
/// that stays locked) is newer than the run's start, and is no clock that went back.
#[test]
fn an_order_submitted_while_the_run_is_busy_elsewhere_is_no_clock_jump() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let g1 = new_game(&root, "g1", 1);
    let g2 = new_game(&root, "g2", 1);
    let cfg = config(tmp.path());
    // g2 stays busy, so the run's intake waits 5 s for it; g1 is long past its deadline.
    deliver(tmp.path(), "1782907200.M1P1.host", &order_mail(&g2, "union", 1));
    let busy = std::fs::File::options().create(true).truncate(false).write(true).open(g2.join(".lock")).unwrap();
    busy.try_lock().unwrap();
    let run = cron(&root, &cfg, None);
    std::thread::sleep(Duration::from_millis(2500));
    let f = tmp.path().join("confederate-1.toml");
    let text = form(&g1, "confederate", 1, &|s| s);
    std::fs::write(&f, format!("{text}{}", sign("confederate", &text))).unwrap();
    pipeline::submit(&g1, &[f], Clock::System).unwrap().pop().unwrap().unwrap();
    let (ok, out, err) = finish(run);
    drop(busy);
    assert!(ok && !err.contains("refusing to act"), "{out}\n{err}");
    let used = record(&g1, 1).expect("g1's step resolved").resolution.unwrap();
    assert!(used.orders.iter().any(|o| o.role == "confederate" && o.seq == Some(1)), "the order submitted meanwhile counts:\n{out}");
}

#[test]
fn an_order_that_arrives_while_its_step_is_resolved_holds_the_step_back() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 1);
    // The mail host's check says yes before the step is resolved and no after it (an order was
    // spooled meanwhile, tester16 T16a-3): nothing of the resolution stays.
    let mut asked = 0;
    let mut check = |_: &pbem::model::GameFile, _: &pbem::model::Opening| {
        asked += 1;
        if asked == 1 { Ok(()) } else { Err("mail for this game arrived".to_string()) }
    };
    let a = pipeline::adjudicate_with(&game, pipeline::parse_time(LATE).unwrap(), &mut Entropy::Os, &mut check).unwrap();
    assert_eq!(asked, 2, "asked before resolving and again before the record");
    assert_eq!(a.held, Some((1, "mail for this game arrived".to_string())));
    assert!(record(&game, 1).is_none());
    for left in ["states/000001.json", "records/000001.json.sig", "reports/000001"] {
        assert!(!game.join(left).exists(), "{left} left by the held resolution");
    }
    // The order is taken in and counts; the step is resolved once, and the game audits.
    let cfg = config(tmp.path());
    deliver(tmp.path(), "1782907200.M1P1.host", &order_mail(&game, "union", 1));
    let (ok, out, err) = finish(cron(&root, &cfg, Some(LATE)));
    assert!(ok, "{out}\n{err}");
    assert_eq!(nmr_roles(&game, 1), vec!["confederate".to_string()], "{out}");
    let audit = Command::new(bin()).arg("audit").arg(&game).output().unwrap();
    assert!(audit.status.success(), "{}", String::from_utf8_lossy(&audit.stdout));
}

#[test]
fn an_order_for_a_step_resolved_before_it_was_taken_in_is_told_so() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 1);
    let cfg = config(tmp.path());
    // Meade's order for step 1, which reaches the judge after the cron run resolved it.
    let late = order_mail(&game, "union", 1);
    let (ok, out, err) = finish(cron(&root, &cfg, Some(LATE)));
    assert!(ok, "{out}\n{err}");
    let mut pipe = Command::new(bin()).args(["intake", "--stdin", "--now", LATE, "--root"]).arg(&root).arg("--config").arg(&cfg).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    pipe.stdin.take().unwrap().write_all(&late).unwrap();
    let (ok, out, err) = finish(pipe);
    assert!(ok, "{out}\n{err}");
    let resolved = record(&game, 1).unwrap().resolution.unwrap().resolved;
    // In the seat's zone (UTC here), as the reply's other times (tester18 T18-6).
    let resolved = pbem::when::long(pbem::when::parse_time(&resolved).unwrap(), chrono_tz::UTC);
    let want = format!("order is for step 1, but the pending step is 2: step 1 was resolved at {resolved} (its deadline had passed) before this order was taken in; your seat had no orders in it");
    assert!(out.contains(&want), "{out}");
    assert!(!out.contains("replayed"), "{out}");
}

#[test]
fn an_order_piped_as_a_cron_run_resolves_its_step_counts_or_is_told_it_came_after() {
    // At deadline + 1 s, the cron run and the MTA's pipe start together (tester16 T16a-3). Either
    // the order is taken in before the step is resolved, or its reply says the step was resolved
    // before it was taken in: never that it may be an old or replayed order.
    for round in 0..3 {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("turns");
        let game = new_game(&root, "g1", 1);
        let cfg = config(tmp.path());
        let order = order_mail(&game, "union", 1);
        let at = "2026-07-01T13:00:01Z";
        let run = cron(&root, &cfg, Some(at));
        let mut pipe = Command::new(bin()).args(["intake", "--stdin", "--now", at, "--root"]).arg(&root).arg("--config").arg(&cfg).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        std::thread::sleep(Duration::from_millis(5 * round));
        pipe.stdin.take().unwrap().write_all(&order).unwrap();
        let (ok_pipe, out_pipe, err_pipe) = finish(pipe);
        let (ok, out, err) = finish(run);
        assert!(ok && ok_pipe, "{out}\n{err}\n{out_pipe}\n{err_pipe}");
        let outbox = pbem::mail::Outbox::under(&root);
        let texts: Vec<String> = outbox.pending().unwrap().iter().filter_map(|id| outbox.queued_message(id).unwrap()).map(|m| read_mail(&m).text).collect();
        assert!(texts.iter().all(|t| !t.contains("replayed")), "{texts:?}");
        if nmr_roles(&game, 1).contains(&"union".to_string()) {
            assert!(texts.iter().any(|t| t.contains("step 1 was resolved at") && t.contains("before this order was taken in")), "{texts:?}");
        }
    }
}
