//! The due index (`DIR/.due`, `pbem::due`) lets an idle sweep skip a game, and never makes a due
//! game wait: deleted, corrupted, stale or outrun by a receipt, an edited game file or a newer
//! record, the game is loaded and adjudicated as without it.

#[path = "mail/common.rs"]
mod common;

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use common::*;
use pbem::pipeline::{self, Entropy};

const IDLE: &str = "2026-07-01T12:30:00Z";

fn sweep(root: &Path, now: &str) -> String {
    let out = Command::cargo_bin("pbem").unwrap().args(["adjudicate", "--all"]).arg(root).args(["--now", now]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Submits the current form of `role` (nonce number `n`) to `game` at `now`.
fn submit(game: &Path, role: &str, n: u32, now: &str) {
    let text = form(game, role, n, &|s| s);
    let file = game.parent().unwrap().join(format!("{role}-{n}.toml"));
    std::fs::write(&file, format!("{text}{}", sign(role, &text))).unwrap();
    let r = pipeline::submit(game, &[file], pipeline::parse_time(now).unwrap()).unwrap();
    r.into_iter().for_each(|a| drop(a.unwrap()));
}

fn index(game: &Path) -> String {
    std::fs::read_to_string(game.join(".due")).unwrap()
}

#[test]
fn an_idle_sweep_writes_the_index_and_the_same_lines_come_from_it() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("games");
    let g = new_game(&root, "g1", 24);
    let first = sweep(&root, IDLE);
    assert!(first.contains("g1: nothing due"), "{first}");
    assert!(index(&g).starts_with("pbem-due 7\n"), "{}", index(&g));
    // From the index: the same line, and the game is not loaded (a state it would refuse is not read).
    let state = g.join("states").join("000000.json");
    let kept = std::fs::read(&state).unwrap();
    std::fs::write(&state, b"{}").unwrap();
    assert_eq!(sweep(&root, IDLE), first);
    std::fs::write(&state, kept).unwrap();
}

/// An index an earlier version wrote (`pbem-due 5`, replaced by rename, without a checksum) is
/// not believed: the game is loaded and its index written anew, in place.
#[test]
fn an_index_of_the_previous_format_is_written_anew() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("games");
    let g = new_game(&root, "g1", 24);
    let first = sweep(&root, IDLE);
    let old = index(&g).lines().filter(|l| !l.starts_with("sum ")).collect::<Vec<_>>().join("\n").replace("pbem-due 7", "pbem-due 5") + "\n";
    std::fs::write(g.join(".due"), &old).unwrap();
    // (A first sweep loads the game and makes no root index line; one would hold here.)
    let _ = std::fs::remove_file(root.join(".due-index"));
    assert_eq!(sweep(&root, IDLE), first);
    assert!(index(&g).starts_with("pbem-due 7\n"), "loaded and written anew: {}", index(&g));
}

#[test]
fn orders_all_in_make_the_game_due_before_its_deadline_despite_the_index() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("games");
    let g = new_game(&root, "g1", 24);
    sweep(&root, IDLE);
    submit(&g, "union", 1, "2026-07-01T12:40:00Z");
    assert!(sweep(&root, "2026-07-01T12:45:00Z").contains("nothing due"));
    submit(&g, "confederate", 1, "2026-07-01T12:50:00Z");
    let out = sweep(&root, "2026-07-01T12:55:00Z");
    assert!(out.contains("g1: resolved step(s) 1"), "{out}");
}

#[test]
fn the_deadline_makes_the_game_due_despite_the_index() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("games");
    new_game(&root, "g1", 24);
    sweep(&root, IDLE);
    let out = sweep(&root, "2026-07-02T12:00:00Z");
    assert!(out.contains("g1: resolved step(s) 1"), "{out}");
}

/// An index saying "not due for a year" (deadline and due time), as a stale one might: the
/// newest record's deadline is not read, its stamp tells whether it changed.
fn far_future(game: &Path) -> String {
    edited(game, &[("until", "1830000000"), ("deadline", "1830000000")])
}

/// The index of `game` with the lines of the given fields replaced.
fn edited(game: &Path, fields: &[(&str, &str)]) -> String {
    let line = |l: &str| match fields.iter().find(|(f, _)| l.split_once(' ').is_some_and(|(name, _)| name == *f)) {
        Some((f, v)) => format!("{f} {v}"),
        None => l.to_string(),
    };
    // Its checksum made again (as anyone who can write the folder can): the index's own checks
    // are what must refuse it.
    let body = index(game).lines().filter(|l| !l.starts_with("sum ")).map(line).collect::<Vec<_>>().join("\n") + "\n";
    format!("{body}sum {}\n", &pbem::commit::sha256_hex(body.as_bytes())[..16])
}

#[test]
fn a_deleted_or_corrupted_index_is_rebuilt_and_never_holds_a_due_game() {
    for damage in ["delete", "garbage", "truncated", "directory"] {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("games");
        let g = new_game(&root, "g1", 24);
        sweep(&root, IDLE);
        let due = g.join(".due");
        match damage {
            "delete" => std::fs::remove_file(&due).unwrap(),
            "garbage" => std::fs::write(&due, b"\xff\x00 not an index").unwrap(),
            "truncated" => std::fs::write(&due, &far_future(&g).as_bytes()[..40]).unwrap(),
            _ => {
                std::fs::remove_file(&due).unwrap();
                std::fs::create_dir(&due).unwrap();
            }
        }
        assert!(sweep(&root, IDLE).contains("g1: nothing due"), "{damage}");
        let out = sweep(&root, "2026-07-02T12:00:00Z");
        assert!(out.contains("g1: resolved step(s) 1"), "{damage}: {out}");
        if damage != "directory" {
            assert!(index(&g).contains("record 1 "), "{damage}: rebuilt after the step: {}", index(&g));
        }
    }
}

#[test]
fn a_stale_index_is_not_trusted() {
    // Each case: an index claiming nothing is due for two years, made stale by one change; the
    // step's deadline has passed, so a sweep that loads the game resolves it.
    for change in ["nothing", "receipts", "game file", "newer record", "record replaced"] {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("games");
        let g = new_game(&root, "g1", 24);
        sweep(&root, IDLE);
        let old = far_future(&g);
        match change {
            "nothing" => {}
            "receipts" => {
                submit(&g, "union", 1, "2026-07-01T12:40:00Z");
                submit(&g, "confederate", 1, "2026-07-01T12:41:00Z");
            }
            "game file" => {
                // The host edits the game file by hand.
                let f = g.join("game.toml");
                let text = std::fs::read_to_string(&f).unwrap();
                std::fs::write(&f, text + "# edited by hand\n").unwrap();
            }
            "newer record" => {
                // A step resolved by a run that died before rewriting the index.
                pipeline::adjudicate(&g, pipeline::parse_time("2026-07-02T12:00:00Z").unwrap(), &mut Entropy::seeded([1; 32])).unwrap();
            }
            _ => {
                // The game folder restored from another copy: record 0 differs.
                let r = g.join("records").join("000000.json");
                let text = std::fs::read_to_string(&r).unwrap();
                std::fs::write(&r, format!("{text} ")).unwrap();
            }
        }
        std::fs::write(g.join(".due"), &old).unwrap();
        let out = sweep(&root, "2026-07-03T13:00:00Z");
        if change == "nothing" {
            // The control: an index nothing has outdated is trusted (so the cases below test something).
            assert!(out.contains("g1: nothing due"), "{out}");
        } else {
            assert!(out.contains("g1: resolved step(s)"), "{change}: {out}");
        }
    }
}

#[test]
fn after_a_host_control_orders_all_in_still_make_the_game_due() {
    // A host control is a record that resolves no step: record and step numbers part, and the
    // index must look for receipts under the open step, not under the record after the newest.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("games");
    let g = new_game(&root, "g1", 24);
    pbem::control::apply(&g, pbem::control::Request::Deadline(pbem::control::DeadlineMove::Extend(chrono::Duration::hours(24))), "holidays", pipeline::parse_time("2026-07-01T12:10:00Z").unwrap()).unwrap();
    assert!(sweep(&root, "2026-07-01T12:20:00Z").contains("nothing due"));
    submit(&g, "union", 1, "2026-07-01T12:40:00Z");
    submit(&g, "confederate", 1, "2026-07-01T12:50:00Z");
    let out = sweep(&root, "2026-07-01T12:55:00Z");
    assert!(!out.contains("nothing due") && g.join("records/000002.json").is_file(), "{out}");
}

/// The cron run (`--mail`) reads an idle game's index once: no `game.toml`, state or mail is read
/// for it while there is nothing new to mail and no reminder due; a reminder still goes out.
#[test]
fn an_idle_game_costs_the_cron_run_no_load_and_reminders_still_go_out() {
    use pbem::mail::{HostConfig, cron};
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("games");
    let g = new_game(&root, "g1", 24);
    let cfg = HostConfig::queue_only("judge <judge@example.net>");
    let mut e = pipeline::Entropy::seeded([9; 32]);
    let r = cron::run(&root, &cfg, pipeline::parse_time(IDLE).unwrap(), &mut e).unwrap();
    assert_eq!(r.queued.len(), 2, "the opening reports: {r:?}");
    // The state and game file made unreadable: an idle run must not need them.
    let state = g.join("states").join("000000.json");
    let kept = std::fs::read(&state).unwrap();
    std::fs::write(&state, b"{}").unwrap();
    let r = cron::run(&root, &cfg, pipeline::parse_time("2026-07-01T13:00:00Z").unwrap(), &mut e).unwrap();
    assert!(r.queued.is_empty() && !r.games[0].failed, "{r:?}");
    std::fs::write(&state, &kept).unwrap();
    // Within the reminder window (11 hours before the deadline) the game's mail is prepared.
    let r = cron::run(&root, &cfg, pipeline::parse_time("2026-07-02T01:00:00Z").unwrap(), &mut e).unwrap();
    assert_eq!(r.queued.len(), 2, "reminders: {r:?}");
    // Still inside the window, with both reminders known to the outbox: not loaded again.
    std::fs::write(&state, b"{}").unwrap();
    let r = cron::run(&root, &cfg, pipeline::parse_time("2026-07-02T02:00:00Z").unwrap(), &mut e).unwrap();
    assert!(r.queued.is_empty() && !r.games[0].failed, "{r:?}");
    std::fs::write(&state, &kept).unwrap();
    // A reminder the outbox no longer knows (its queued file gone): the game is loaded and the
    // reminder queued again, as without the shortcut.
    let queue = root.join(".mail/outbox/queue");
    let gone = std::fs::read_dir(&queue).unwrap().map(|e| e.unwrap().path()).find(|p| p.file_name().unwrap().to_string_lossy().starts_with("pbem-reminder-")).unwrap();
    std::fs::remove_file(&gone).unwrap();
    let r = cron::run(&root, &cfg, pipeline::parse_time("2026-07-02T03:00:00Z").unwrap(), &mut e).unwrap();
    assert_eq!(r.queued.len(), 1, "the reminder again: {r:?}");
    // The index gone: loaded, and nothing queued twice.
    std::fs::remove_file(g.join(".due")).unwrap();
    let r = cron::run(&root, &cfg, pipeline::parse_time("2026-07-02T04:00:00Z").unwrap(), &mut e).unwrap();
    assert!(r.queued.is_empty() && !r.games[0].failed, "{r:?}");
}

/// A copy of a game made with its index (`cp -a`) is still found: the id comes from the index.
#[test]
fn a_copy_with_its_index_is_found_as_a_duplicate() {
    use pbem::mail::{HostConfig, cron};
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("games");
    let g = new_game(&root, "g1", 24);
    sweep(&root, IDLE);
    assert!(index(&g).contains("\nid g1\n"), "{}", index(&g));
    assert!(std::process::Command::new("cp").arg("-a").arg(&g).arg(root.join("g1.bak")).status().unwrap().success());
    let cfg = HostConfig::queue_only("judge <judge@example.net>");
    let r = cron::run(&root, &cfg, pipeline::parse_time(IDLE).unwrap(), &mut pipeline::Entropy::seeded([9; 32])).unwrap();
    assert_eq!(r.games.len(), 2);
    for run in &r.games {
        assert!(run.failed && run.summary.contains("game g1 is held by more than one folder"), "{r:?}");
    }
    assert!(r.queued.is_empty());
}

/// Due steps of different games run in parallel; the lines still come in the games' order.
#[test]
fn a_sweep_resolves_many_due_games_and_prints_them_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("games");
    let names: Vec<String> = (1..=6).map(|i| format!("g{i}")).collect();
    for n in &names {
        new_game(&root, n, 1);
    }
    let out = sweep(&root, "2026-07-01T14:00:00Z");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), names.len(), "{out}");
    for (line, n) in lines.iter().zip(&names) {
        assert!(line.starts_with(&root.join(n).display().to_string()) && line.contains("resolved step(s) 1"), "{out}");
    }
}

/// Waits until the game's folders have been quiet for longer than [`pbem::due::FRESH_NS`] (their
/// change time cannot be set back, so only waiting makes a stamp old enough to be trusted).
fn quiet() {
    std::thread::sleep(std::time::Duration::from_nanos(pbem::due::FRESH_NS as u64 + 200_000_000));
}

/// The stamp of `path` as the index keeps it: size and change time (ns).
fn stamp(path: &Path) -> (u64, u128) {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).unwrap();
    (m.len(), m.ctime() as u128 * 1_000_000_000 + m.ctime_nsec() as u128)
}

/// A 24-hour game g1 with union's order in (the first sweep, with the folder quiet first when
/// `wait`, says nothing is due): the folder, its root and the game.
fn union_in(wait: bool) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("games");
    let g = new_game(&root, "g1", 24);
    submit(&g, "union", 1, "2026-07-01T12:40:00Z");
    if wait {
        quiet();
    }
    assert!(sweep(&root, "2026-07-01T12:45:00Z").contains("g1: nothing due"));
    (tmp, root, g)
}

/// The next sweep resolves g1's step 1.
fn resolves_step_1(root: &Path) {
    let out = sweep(root, "2026-07-01T12:55:00Z");
    assert!(out.contains("g1: resolved step(s) 1"), "{out}");
}

/// With a receipt in, the index stands on the receipts folder's stamp: trusted once the folder
/// has been quiet for a while, and a receipt filed after it makes the game due.
#[test]
fn a_receipt_filed_after_the_index_makes_the_game_due() {
    let (_tmp, root, g) = union_in(true);
    // From the index (the state it would refuse is not read).
    let state = g.join("states").join("000000.json");
    let kept = std::fs::read(&state).unwrap();
    std::fs::write(&state, b"{}").unwrap();
    assert!(sweep(&root, "2026-07-01T12:46:00Z").contains("g1: nothing due"));
    std::fs::write(&state, kept).unwrap();
    submit(&g, "confederate", 1, "2026-07-01T12:50:00Z");
    resolves_step_1(&root);
}

/// A receipt filed in the same tick of the kernel's coarse clock as the index was written leaves
/// the folder's change time as the index saw it: such a fresh stamp is not trusted.
#[test]
fn a_receipt_filed_in_the_index_clock_tick_makes_the_game_due() {
    let (_tmp, root, g) = union_in(false);
    submit(&g, "confederate", 1, "2026-07-01T12:50:00Z");
    // The tick had not moved on: the index shows the folder's stamp as it is now, the last
    // receipt in (its `written` time stays the sweep's, less than FRESH_NS later).
    let (size, time) = stamp(&g.join("receipts/000001"));
    std::fs::write(g.join(".due"), edited(&g, &[("receipts", &format!("{size} {time}"))])).unwrap();
    resolves_step_1(&root);
}

/// Setting the receipts folder's modification time back (`touch -d`, or a restore by `cp -a` or
/// `rsync -a`) after the last order came in does not hide it: the index stamps the change time.
#[test]
fn a_receipts_folder_with_its_modification_time_set_back_still_makes_the_game_due() {
    let (_tmp, root, g) = union_in(true);
    let folder = g.join("receipts/000001");
    let before = std::fs::metadata(&folder).unwrap().modified().unwrap();
    submit(&g, "confederate", 1, "2026-07-01T12:50:00Z");
    std::fs::File::open(&folder).unwrap().set_modified(before).unwrap();
    resolves_step_1(&root);
}

/// A game whose step is due at its deadline (no grace, NMR defaults), its deadline passed.
fn past_deadline(root: &Path) -> PathBuf {
    let g = new_game(root, "g1", 24);
    assert!(sweep(root, IDLE).contains("g1: nothing due"));
    g
}

/// A hand-made index cannot hold a due game: not one written in the future, nor one whose open
/// step has no deadline, or is due by time later than its deadline (or never) where the game
/// file's grace hours and NMR policy do not say so.
#[test]
fn a_forged_index_never_holds_a_due_game() {
    let far = "99999999999999999999";
    let forgeries: [&[(&str, &str)]; 4] = [
        &[("until", "never"), ("deadline", "never"), ("written", far)],
        &[("until", "never")],
        &[("until", "1830000000")],
        &[("until", "1830000000"), ("deadline", "1830000000"), ("written", far)],
    ];
    for fields in forgeries {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("games");
        let g = past_deadline(&root);
        std::fs::write(g.join(".due"), edited(&g, fields)).unwrap();
        let out = sweep(&root, "2027-06-09T00:00:00Z");
        assert!(out.contains("g1: resolved step(s) 1"), "{fields:?}: {out}");
    }
}

/// Where the game file says so, the index's due time after the deadline (grace hours) or never
/// (`--nmr wait`) is believed: such games are still skipped by an idle sweep.
#[test]
fn grace_hours_and_nmr_wait_keep_the_index_trusted() {
    use pbem::model::{Deadlines, NmrMode, NmrPolicy};
    for (grace, policy) in [(5, NmrMode::Defaults), (0, NmrMode::Wait)] {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("games");
        let g = new_game_with(&root, "g1", Deadlines { default_hours: 24, grace_hours: grace, ..Default::default() }, NmrPolicy { policy, bot_after: 0 });
        // Past the deadline, within the grace hours (or waiting for orders for ever).
        let now = "2026-07-02T13:00:00Z";
        assert!(sweep(&root, now).contains("g1: nothing due"), "{grace} {policy:?}");
        let field = |f: &str| index(&g).lines().find_map(|l| l.strip_prefix(f).map(str::to_string)).unwrap();
        assert_ne!(field("until "), field("deadline "), "{grace} {policy:?}: due by time after the deadline, or never");
        let state = g.join("states").join("000000.json");
        let kept = std::fs::read(&state).unwrap();
        std::fs::write(&state, b"{}").unwrap();
        assert!(sweep(&root, now).contains("g1: nothing due"), "from the index: {grace} {policy:?}");
        std::fs::write(&state, kept).unwrap();
    }
}

/// The sweep lists the root by the entries' file types: folders without a game file, files and
/// hidden folders are no games, a symbolic link to a game folder is one. A folder whose
/// `game.toml` is a folder is a broken game, named on stderr with a failing exit, not silently
/// none (tester9 D8).
#[test]
fn a_sweep_takes_only_game_folders() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("games");
    new_game(&root, "g1", 24);
    new_game(&tmp.path().join("elsewhere"), "g2", 24);
    std::fs::create_dir_all(root.join("notes")).unwrap();
    std::fs::create_dir_all(root.join("odd").join("game.toml")).unwrap();
    std::fs::write(root.join("README"), "games\n").unwrap();
    std::fs::create_dir_all(root.join(".trash")).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("elsewhere").join("g2"), root.join("g2")).unwrap();
    for broken in [true, false] {
        let out = Command::cargo_bin("pbem").unwrap().args(["adjudicate", "--all"]).arg(&root).args(["--now", IDLE]).output().unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 2, "{stdout}");
        assert!(lines[0].ends_with("g1: nothing due") && lines[1].ends_with("g2: nothing due"), "{stdout}");
        let named = stderr.contains(&format!("{}: not a regular file", root.join("odd").join("game.toml").display()));
        assert_eq!((out.status.success(), named), (!broken, broken), "{stderr}");
        std::fs::remove_dir(root.join("odd").join("game.toml")).unwrap_or(());
    }
}

/// Every file under `dir` (relative path and bytes), in order, leaving out lock and index files.
fn tree(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                todo.push(p);
            } else if name != ".lock" && name != ".due" {
                out.push((p.strip_prefix(dir).unwrap().display().to_string(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// A sweep writes its steps' records after one sync of all their files (`store::Group`): the
/// games come out byte for byte as when each is adjudicated on its own with the same entropy, every
/// lock is released, and each game's due index stamps its new record; and the mails it queues are
/// the same bytes as when each game's are queued on its own.
#[test]
fn a_sweeps_shared_commit_gives_the_same_games_as_one_by_one() {
    use pbem::mail::{HostConfig, cron};
    let tmp = tempfile::tempdir().unwrap();
    let (swept, alone) = (tmp.path().join("swept"), tmp.path().join("alone"));
    let names: Vec<String> = (1..=5).map(|i| format!("g{i}")).collect();
    for n in &names {
        new_game(&swept, n, 1);
        new_game(&alone, n, 1);
    }
    let later = pipeline::parse_time("2026-07-01T14:00:00Z").unwrap();
    let cfg = HostConfig::queue_only("judge <judge@example.net>");
    let r = cron::run(&swept, &cfg, later, &mut Entropy::seeded([7; 32])).unwrap();
    assert!(r.games.iter().all(|g| g.summary.contains("resolved step(s) 1")), "{r:?}");
    let mut e = Entropy::seeded([7; 32]);
    for n in &names {
        pipeline::adjudicate(&alone.join(n), later, &mut e).unwrap();
    }
    for n in &names {
        let (a, b) = (tree(&swept.join(n)), tree(&alone.join(n)));
        assert!(a.iter().any(|(p, _)| p.ends_with("000001.json")), "{n}: no record 1");
        assert_eq!(a.iter().map(|(p, _)| p).collect::<Vec<_>>(), b.iter().map(|(p, _)| p).collect::<Vec<_>>(), "{n}");
        assert!(a == b, "{n}: a file differs");
        drop(pbem::store::GameDir::new(swept.join(n)).lock().expect("the lock is released"));
        assert!(index(&swept.join(n)).contains("\nrecord 1 "), "{}", index(&swept.join(n)));
    }
    // The report mails, composed by the run on every core, are those queued game by game.
    let outbox = pbem::mail::Outbox::under(&alone);
    let queued: Vec<String> = names.iter().flat_map(|n| cron::queue_game_mail(&alone.join(n), &cfg, &outbox, later).unwrap()).collect();
    assert_eq!(r.queued, queued);
    assert!(queued.len() >= 10, "{queued:?}");
    for part in ["outbox", "mailed"] {
        let (a, b) = (tree(&swept.join(".mail").join(part)), tree(&alone.join(".mail").join(part)));
        assert_eq!(a.iter().map(|(p, _)| p).collect::<Vec<_>>(), b.iter().map(|(p, _)| p).collect::<Vec<_>>(), "{part}");
        assert!(a == b, "{part}: a file differs");
    }
}

/// `ROOT/.due-index`, the index of every game under a root.
fn root_index(root: &Path) -> String {
    std::fs::read_to_string(root.join(".due-index")).unwrap()
}

/// The root index with the line of each game in `names` saying nothing is due for two years (its
/// due time and deadline), as a stale or hand-made line might: only its stamps can tell.
fn root_far_future(root: &Path, names: &[&str]) -> String {
    let line = |l: &str| {
        let mut f: Vec<String> = l.split(' ').map(str::to_string).collect();
        if names.contains(&f[0].as_str()) && f.len() == 17 {
            f[12] = "1830000000".into();
            f[13] = "1830000000".into();
        }
        f.join(" ")
    };
    root_index(root).lines().map(line).collect::<Vec<_>>().join("\n") + "\n"
}

fn pbem() -> Command {
    Command::cargo_bin("pbem").unwrap()
}

#[test]
fn a_sweep_skips_idle_games_by_the_root_index_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("games");
    let g = new_game(&root, "g1", 24);
    let first = sweep(&root, IDLE);
    assert!(!root.join(".due-index").exists() || !root_index(&root).contains("\ng1 "), "a game loaded this sweep has no line yet");
    assert_eq!(sweep(&root, IDLE), first);
    assert!(root_index(&root).starts_with("pbem-due-index 2\ng1 "), "{}", root_index(&root));
    // Neither the game's own index nor its state is read for an idle game now.
    std::fs::remove_file(g.join(".due")).unwrap();
    let state = g.join("states").join("000000.json");
    let kept = std::fs::read(&state).unwrap();
    std::fs::write(&state, b"{}").unwrap();
    assert_eq!(sweep(&root, IDLE), first);
    std::fs::write(&state, kept).unwrap();
    // Its deadline still makes it due.
    assert!(sweep(&root, "2026-07-02T12:00:00Z").contains("g1: resolved step(s) 1"));
}

/// Each case: every line of the root index says nothing is due for two years, the games' own
/// indexes are gone, and one change outdates a line; the deadlines have passed, so a sweep that
/// does not trust the line loads the game and resolves its step.
#[test]
fn a_stale_root_index_line_never_holds_a_due_game() {
    let changes = ["nothing", "pbem submit", "pbem intake", "game file edited", "newer record", "folders swapped", "record replaced"];
    for change in changes {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("games");
        let (g1, g2) = (new_game(&root, "g1", 24), new_game(&root, "g2", 48));
        sweep(&root, IDLE);
        sweep(&root, IDLE);
        let mut changed = vec!["g1"];
        match change {
            "nothing" => changed.clear(),
            "pbem submit" => {
                let text = form(&g1, "union", 1, &|s| s);
                let file = tmp.path().join("union.toml");
                std::fs::write(&file, format!("{text}{}", sign("union", &text))).unwrap();
                pbem().args(["submit", "--now", "2026-07-01T12:40:00Z"]).arg(&g1).arg(&file).assert().success();
            }
            "pbem intake" => {
                let md = tmp.path().join("Maildir");
                for sub in ["new", "cur", "tmp"] {
                    std::fs::create_dir_all(md.join(sub)).unwrap();
                }
                std::fs::write(md.join("new").join("1.host:2,"), order_mail(&g1, "union", 1)).unwrap();
                let cfg = tmp.path().join("pbem-mail.toml");
                std::fs::write(&cfg, "from = \"judge <judge@example.net>\"\n[transport]\nkind = \"none\"\n").unwrap();
                pbem().args(["intake", "--now", "2026-07-01T12:40:00Z", "--root"]).arg(&root).arg("--maildir").arg(&md).arg("--config").arg(&cfg).assert().success();
                assert!(g1.join("receipts").join("000001").is_dir(), "the order was taken in");
            }
            "game file edited" => {
                let f = g1.join("game.toml");
                let text = std::fs::read_to_string(&f).unwrap();
                std::fs::write(&f, text + "# edited by hand\n").unwrap();
            }
            "newer record" => {
                pipeline::adjudicate(&g1, pipeline::parse_time("2026-07-02T12:00:00Z").unwrap(), &mut Entropy::seeded([1; 32])).unwrap();
            }
            "folders swapped" => {
                // Each line now names a folder holding the other game.
                std::fs::rename(&g1, root.join("tmp")).unwrap();
                std::fs::rename(&g2, &g1).unwrap();
                std::fs::rename(root.join("tmp"), &g2).unwrap();
                changed.push("g2");
            }
            _ => {
                // The newest record rewritten in place (its folder unchanged).
                let r = g1.join("records").join("000000.json");
                let text = std::fs::read_to_string(&r).unwrap();
                std::fs::write(&r, format!("{text} ")).unwrap();
            }
        }
        std::fs::write(root.join(".due-index"), root_far_future(&root, &["g1", "g2"])).unwrap();
        for g in [&g1, &g2] {
            let _ = std::fs::remove_file(g.join(".due"));
        }
        let out = pbem().args(["adjudicate", "--all"]).arg(&root).args(["--now", "2026-07-03T13:00:00Z"]).output().unwrap();
        let out = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        for name in ["g1", "g2"] {
            let line = out.lines().find(|l| l.contains(&format!("{name}:"))).unwrap_or_default();
            if changed.contains(&name) {
                // Loaded: resolved (or refused for the record changed by hand), never "nothing due".
                assert!(!line.contains("nothing due") && !line.is_empty(), "{change}: {out}");
            } else {
                assert!(line.contains("nothing due"), "{change}: the control, an unchanged line is trusted: {out}");
            }
        }
    }
}

#[test]
fn a_damaged_root_index_is_ignored_and_rewritten() {
    for damage in ["garbage", "truncated", "out of order", "directory", "other folder"] {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("games");
        new_game(&root, "g1", 24);
        new_game(&root, "g2", 24);
        sweep(&root, IDLE);
        sweep(&root, IDLE);
        let good = root_far_future(&root, &["g1", "g2"]);
        let file = root.join(".due-index");
        match damage {
            "garbage" => std::fs::write(&file, b"\xff\x00 not an index").unwrap(),
            "truncated" => std::fs::write(&file, &good.as_bytes()[..good.len() - 5]).unwrap(),
            "out of order" => {
                let mut lines: Vec<&str> = good.lines().collect();
                lines.swap(1, 2);
                std::fs::write(&file, lines.join("\n") + "\n").unwrap();
            }
            "directory" => {
                std::fs::remove_file(&file).unwrap();
                std::fs::create_dir(&file).unwrap();
            }
            _ => std::fs::write(&file, good.replace("\ng2 ", "\ng3 ")).unwrap(),
        }
        let out = sweep(&root, "2026-07-03T13:00:00Z");
        // A line names its folder: g2's, moved to a g3 that does not exist, is not g2's (and g1's,
        // intact, is trusted: the control).
        let g1_held = damage == "other folder";
        assert!(out.contains("g1: nothing due") == g1_held && out.contains("g2: resolved step(s)"), "{damage}: {out}");
        if damage != "directory" {
            sweep(&root, "2026-07-03T13:05:00Z");
            assert!(root_index(&root).starts_with("pbem-due-index 2\ng1 "), "{damage}: rewritten: {}", root_index(&root));
        }
    }
}

/// A step resolved removes the temp files a killed run left in the game folders it writes and in
/// its orders' folders (a process that is gone), and leaves a live process's alone.
#[test]
fn a_resolved_step_removes_the_temp_files_of_killed_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("games");
    let g = new_game(&root, "g1", 1);
    // A process id that is not alive: a child that has exited and been reaped.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let live = std::process::id();
    let dead_temps = [g.join(format!("states/.000001.json.{dead}.3.tmp")), g.join(format!("records/.000001.json.{dead}.4.tmp")), g.join(format!("receipts/000001/.union-1.toml.{dead}.0.tmp"))];
    for t in &dead_temps {
        std::fs::create_dir_all(t.parent().unwrap()).unwrap();
        std::fs::write(t, b"half").unwrap();
    }
    let kept = g.join(format!("states/.000009.json.{live}.1.tmp"));
    std::fs::write(&kept, b"in progress").unwrap();
    // In the orders' folders, which only a holder of the game's lock writes, whatever their age
    // or process: atomic-write-file's of a killed `pbem submit` a minute old (tester T24b-2), ours.
    let order_temps = [g.join("receipts/000001/.union-2.toml.aB3dE9"), g.join(format!("receipts/000001/.union-3.toml.{live}.7.tmp"))];
    // And what an order never accepted left there (killed before its receipt: tester T24b-3),
    // beside an accepted order's files, which stay.
    submit(&g, "union", 1, "2026-07-01T12:30:00Z");
    let accepted: Vec<PathBuf> = ["receipts/000001/union-1.toml", "receipts/000001/union-1.toml.sig", "host/sealed/000001/union-1.txt", "host/sealed/000001/union-1.txt.sig"].iter().map(|p| g.join(p)).collect();
    let unreceipted = [g.join("receipts/000001/union-2.toml.sig"), g.join("host/sealed/000001/union-2.txt"), g.join("host/sealed/000001/union-2.txt.sig")];
    for t in order_temps.iter().chain(&unreceipted) {
        std::fs::write(t, b"half").unwrap();
    }
    let out = sweep(&root, "2026-07-01T14:00:00Z");
    assert!(out.contains("resolved step(s) 1"), "{out}");
    for t in dead_temps.iter().chain(&order_temps).chain(&unreceipted) {
        assert!(!t.exists(), "{} left", t.display());
    }
    assert!(kept.exists(), "a live process's temp file was removed");
    for f in &accepted {
        assert!(f.is_file(), "{} removed", f.display());
    }
}

/// A cron run that queues mail removes the temp files a run killed while queueing left in the
/// outbox queue (a process that is gone).
#[test]
fn a_cron_run_that_queues_mail_removes_the_temp_files_a_killed_run_left_in_the_queue_and_marks() {
    use pbem::mail::{HostConfig, cron};
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("games");
    new_game(&root, "g1", 24);
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let queue = root.join(".mail").join("outbox").join("queue");
    std::fs::create_dir_all(&queue).unwrap();
    let left = queue.join(format!(".pbem-report-x.eml.{dead}.0.tmp"));
    std::fs::write(&left, b"half a mail").unwrap();
    let cfg = HostConfig::queue_only("judge <judge@example.net>");
    let r = cron::run(&root, &cfg, pipeline::parse_time(IDLE).unwrap(), &mut Entropy::seeded([9; 32])).unwrap();
    assert_eq!(r.queued.len(), 2, "the opening reports: {r:?}");
    assert!(!left.exists(), "the killed run's temp file is left in the queue");
    // Killed after queueing, while writing the game's mailed mark: the next run queues nothing
    // new (the mails are known) but removes the mark's temp file, and a file transport's folder
    // loses the temp file of a message a killed run was writing (atomic-write-file's, once old).
    let mailed = root.join(".mail").join("mailed");
    std::fs::remove_file(mailed.join("g1")).unwrap();
    let mark_left = mailed.join(format!(".g1.{dead}.0.tmp"));
    std::fs::write(&mark_left, b"0").unwrap();
    let sent = tmp.path().join("sent");
    std::fs::create_dir_all(&sent).unwrap();
    let sent_left = sent.join(".pbem-report-x.eml.AbC123");
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::create(&sent_left).unwrap().set_modified(old).unwrap();
    let mut cfg = cfg;
    cfg.transport = pbem::mail::config::TransportConfig::File { dir: sent.clone() };
    let r = cron::run(&root, &cfg, pipeline::parse_time(IDLE).unwrap(), &mut Entropy::seeded([9; 32])).unwrap();
    assert!(r.queued.is_empty(), "{r:?}");
    assert!(!mark_left.exists(), "the killed run's temp file is left among the mailed marks");
    assert!(mailed.join("g1").exists());
    assert!(!sent_left.exists(), "the killed run's temp file is left in the file transport's folder");
    assert_eq!(std::fs::read_dir(&sent).unwrap().count(), 2, "the two reports sent");
}

/// A FIFO or a link to an endless file where a sweep keeps an index (`DIR/.due`,
/// `ROOT/.due-index`) is passed over like a damaged index: never waited on, never read without
/// end, and the sweep's lines are the same.
#[test]
fn a_special_file_in_place_of_an_index_is_passed_over() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("games");
    let g = new_game(&root, "g1", 24);
    let first = sweep(&root, IDLE);
    for path in [g.join(".due"), root.join(".due-index")] {
        for fifo in [true, false] {
            let _ = std::fs::remove_file(&path);
            if fifo {
                assert!(std::process::Command::new("mkfifo").arg(&path).status().unwrap().success());
            } else {
                std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
            }
            let out = Command::cargo_bin("pbem").unwrap().args(["adjudicate", "--all"]).arg(&root).args(["--now", IDLE]).timeout(std::time::Duration::from_secs(60)).output().unwrap();
            assert!(out.status.success(), "{}: {}", path.display(), String::from_utf8_lossy(&out.stderr));
            assert_eq!(String::from_utf8_lossy(&out.stdout), first, "{}", path.display());
        }
    }
}

/// A FIFO in place of a game's mailed mark (`ROOT/.mail/mailed/ID`) holds no cron run: the game's
/// mail is not queued and its line says why; the other games go on.
#[test]
fn a_fifo_in_place_of_a_mailed_mark_holds_no_cron_run() {
    use pbem::mail::{HostConfig, cron};
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("games");
    new_game(&root, "g1", 24);
    new_game(&root, "g2", 24);
    let cfg = HostConfig::queue_only("judge <judge@example.net>");
    let mut e = pipeline::Entropy::seeded([9; 32]);
    let r = cron::run(&root, &cfg, pipeline::parse_time(IDLE).unwrap(), &mut e).unwrap();
    assert_eq!(r.queued.len(), 4, "the opening reports: {r:?}");
    let mark = root.join(".mail/mailed/g1");
    std::fs::remove_file(&mark).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(&mark).status().unwrap().success());
    let r = cron::run(&root, &cfg, pipeline::parse_time("2026-07-01T13:00:00Z").unwrap(), &mut e).unwrap();
    assert!(r.queued.is_empty(), "{r:?}");
    assert!(r.games[0].failed && r.games[0].summary.contains("not a small regular file"), "{r:?}");
    assert!(!r.games[1].failed, "{r:?}");
}

/// A host config that queues mail and sends none, in `dir`.
fn queue_config(dir: &Path) -> PathBuf {
    let cfg = dir.join("pbem-mail.toml");
    std::fs::write(&cfg, "from = \"judge <judge@example.net>\"\n[transport]\nkind = \"none\"\n").unwrap();
    cfg
}

/// A cron run (`adjudicate --all ROOT --mail CFG`) of the real binary at `now`; fails the test on
/// a non-zero exit or after a minute (a run held by a special file).
fn cron_run(root: &Path, cfg: &Path, now: &str) -> String {
    let out = pbem().args(["adjudicate", "--all"]).arg(root).arg("--mail").arg(cfg).args(["--now", now]).timeout(std::time::Duration::from_secs(60)).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The names in the outbox queue (a mail is `ID.mail`, or `ID.eml` with `ID.toml`).
fn queue_names(root: &Path) -> std::collections::BTreeSet<String> {
    let queue = root.join(".mail/outbox/queue");
    std::fs::read_dir(&queue).map(|rd| rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).filter(|n| !n.starts_with('.')).collect()).unwrap_or_default()
}

/// `ROOT/.mail/mailed-index`, the snapshot of the mailed marks.
fn marks_snapshot(root: &Path) -> PathBuf {
    root.join(".mail").join(pbem::mail::marks::SNAPSHOT)
}

/// Games `g1` and `g2` (24-hour deadlines) whose step 1 was resolved by a plain sweep and whose
/// reports of record 1 were queued by a cron run, which left the marks' snapshot; returns the
/// root, the host config and the queue's names of `g1`'s record-1 report mails.
fn reports_of_record_1_queued(tmp: &Path) -> (PathBuf, PathBuf, Vec<String>) {
    let root = tmp.join("games");
    new_game(&root, "g1", 24);
    new_game(&root, "g2", 24);
    let cfg = queue_config(tmp);
    cron_run(&root, &cfg, IDLE);
    assert!(sweep(&root, "2026-07-02T12:30:00Z").contains("g1: resolved step(s) 1"));
    let before = queue_names(&root);
    cron_run(&root, &cfg, "2026-07-02T12:35:00Z");
    let new: Vec<String> = queue_names(&root).difference(&before).cloned().collect();
    assert_eq!(new.iter().filter(|n| n.starts_with("pbem-report-") && !n.ends_with(".toml")).count(), 4, "record 1's reports: {new:?}");
    let text = std::fs::read_to_string(marks_snapshot(&root)).unwrap();
    // Each game's mark: record 1 and its hash.
    let mark = |g: &str| std::fs::read_to_string(root.join(".mail/mailed").join(g)).unwrap();
    let lines = format!("\ng1 {}g2 {}end\n", mark("g1"), mark("g2"));
    assert!(text.starts_with("pbem-mailed-index 2\n") && text.ends_with(&lines) && mark("g1").starts_with("1 "), "{text}");
    // The report mails of g1: queued again only when g1 is loaded.
    let g1: Vec<String> = new.into_iter().filter(|n| std::fs::read_to_string(root.join(".mail/outbox/queue").join(n)).unwrap().contains("[pbem g1]")).collect();
    assert!(!g1.is_empty());
    (root, cfg, g1)
}

/// The outbox forgets the mails `names` (as if never queued).
fn forget_mails(root: &Path, names: &[String]) {
    for n in names {
        let stem = n.rsplit_once('.').unwrap().0;
        for ext in ["mail", "eml", "toml"] {
            let _ = std::fs::remove_file(root.join(".mail/outbox/queue").join(format!("{stem}.{ext}")));
        }
    }
}

/// A mark replaced or removed under the marks' snapshot (`ROOT/.mail/mailed-index`) moves the
/// marks' folder: the snapshot no longer holds, the marks are read, and the game whose mark says
/// its newest reports were not queued has them queued again (here the outbox forgot them too).
#[test]
fn a_report_is_still_mailed_after_its_mark_changed_under_the_snapshot() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, cfg, g1) = reports_of_record_1_queued(tmp.path());
    let mark = root.join(".mail/mailed/g1");
    // The control: with the marks as they are, nothing is queued.
    forget_mails(&root, &g1);
    cron_run(&root, &cfg, "2026-07-02T12:40:00Z");
    assert!(g1.iter().all(|n| !queue_names(&root).contains(n)), "queued again though the mark says sent");
    // A mark replaced (temp file and rename, as a restore would) with an older record.
    let tmp_mark = root.join(".mail/mailed/.g1.new");
    std::fs::write(&tmp_mark, "0\n").unwrap();
    std::fs::rename(&tmp_mark, &mark).unwrap();
    cron_run(&root, &cfg, "2026-07-02T12:45:00Z");
    assert!(g1.iter().all(|n| queue_names(&root).contains(n)), "g1's reports of record 1 queued again: {:?}", queue_names(&root));
    assert!(std::fs::read_to_string(&mark).unwrap().starts_with("1 "), "the mark names record 1 (and its hash)");
    // A mark removed: the game's newest reports are queued (a game first seen by a mail run).
    forget_mails(&root, &g1);
    std::fs::remove_file(&mark).unwrap();
    cron_run(&root, &cfg, "2026-07-02T12:50:00Z");
    assert!(g1.iter().all(|n| queue_names(&root).contains(n)), "{:?}", queue_names(&root));
    assert!(std::fs::read_to_string(&mark).unwrap().starts_with("1 "), "the mark names record 1 (and its hash)");
    let text = std::fs::read_to_string(marks_snapshot(&root)).unwrap();
    assert!(names_record_1(&text), "{text}");
}

/// True when marks' snapshot `text` ends with the lines of `g1` and `g2`, each naming record 1
/// and a hash (`ID 1 SHA`).
fn names_record_1(text: &str) -> bool {
    let lines: Vec<&str> = text.lines().rev().take(3).collect();
    let names = |l: &str, id: &str| l.strip_prefix(id).and_then(|r| r.strip_prefix(" 1 ")).is_some_and(|h| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()));
    lines.len() == 3 && lines[0] == "end" && names(lines[1], "g2") && names(lines[2], "g1")
}

/// A way to damage the marks' snapshot (at its path, given its text), and its name.
type Damage<'a> = (&'a str, &'a dyn Fn(&Path, &str));

/// A snapshot deleted, cut short, too large, or a FIFO or a link to an endless file in its place
/// is passed over: the run neither waits nor reads without end, reads the marks themselves (here
/// a mark edited in place, which a holding snapshot does not see: see `mail::marks`), and
/// writes the snapshot anew.
#[test]
fn a_deleted_damaged_or_special_snapshot_is_passed_over_and_the_marks_read() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, cfg, g1) = reports_of_record_1_queued(tmp.path());
    let snapshot = marks_snapshot(&root);
    let mark = root.join(".mail/mailed/g1");
    let stale = |root: &Path| {
        forget_mails(root, &g1);
        std::fs::write(&mark, "0\n").unwrap();
    };
    // The control: the snapshot holds, the mark edited in place is not read.
    stale(&root);
    let held = cron_run(&root, &cfg, "2026-07-02T12:40:00Z");
    assert!(g1.iter().all(|n| !queue_names(&root).contains(n)), "{held}");
    // Each damage made to the snapshot as the last run left it (its stamp holding).
    let more: String = (0..1000).map(|i| format!("z{i:04} 1\n")).collect();
    let cases: [Damage; 5] = [
        ("deleted", &|p, _| std::fs::remove_file(p).unwrap()),
        ("cut short", &|p, good| std::fs::write(p, &good[..good.len() - 4]).unwrap()),
        ("too large for the root", &|p, good| std::fs::write(p, good.replace("\nend\n", &format!("\n{more}end\n"))).unwrap()),
        ("a FIFO", &|p, _| {
            std::fs::remove_file(p).unwrap();
            assert!(std::process::Command::new("mkfifo").arg(p).status().unwrap().success());
        }),
        ("a link to /dev/zero", &|p, _| {
            std::fs::remove_file(p).unwrap();
            std::os::unix::fs::symlink("/dev/zero", p).unwrap();
        }),
    ];
    for (minute, (what, damage)) in (41..).zip(cases) {
        let good = std::fs::read_to_string(&snapshot).unwrap();
        assert!(names_record_1(&good), "{what}: the snapshot before: {good}");
        stale(&root);
        damage(&snapshot, &good);
        cron_run(&root, &cfg, &format!("2026-07-02T12:{minute}:00Z"));
        assert!(g1.iter().all(|n| queue_names(&root).contains(n)), "{what}: g1's reports queued again");
        assert!(std::fs::read_to_string(&mark).unwrap().starts_with("1 "), "{what}: the mark names record 1 (and its hash)");
        let meta = std::fs::symlink_metadata(&snapshot).unwrap();
        assert!(meta.is_file(), "{what}: written anew");
    }
}

/// Two cron runs at once: the second waits for the root lock the first holds from its intake to
/// the snapshot of the marks (`mail::cron::run`), so each report is queued once and the snapshot
/// the last run leaves says what the marks say.
#[test]
fn concurrent_cron_runs_leave_a_snapshot_that_agrees_with_the_marks() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("games");
    for i in 0..6 {
        new_game(&root, &format!("g{i}"), if i % 2 == 0 { 1 } else { 24 });
    }
    let cfg = queue_config(tmp.path());
    cron_run(&root, &cfg, IDLE);
    // A run holding the root lock: another cron run waits for it and writes nothing meanwhile.
    let lock = std::fs::File::options().write(true).open(root.join(".mail/intake.lock")).unwrap();
    lock.try_lock().unwrap();
    let snapshot = marks_snapshot(&root);
    let before = std::fs::read(&snapshot).unwrap();
    let bin = assert_cmd::cargo::cargo_bin!("pbem");
    let spawn = |now: &str| std::process::Command::new(bin).args(["adjudicate", "--quiet", "--all"]).arg(&root).arg("--mail").arg(&cfg).args(["--now", now]).spawn().unwrap();
    let mut waiting = spawn("2026-07-01T14:00:00Z");
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(waiting.try_wait().unwrap().is_none(), "the run did not wait for the root lock");
    assert_eq!(std::fs::read(&snapshot).unwrap(), before);
    let names = queue_names(&root);
    drop(lock);
    // A second run started at once with it.
    let mut other = spawn("2026-07-01T14:00:00Z");
    assert!(waiting.wait().unwrap().success() && other.wait().unwrap().success());
    let queued = queue_names(&root);
    let reports = queued.difference(&names).filter(|n| n.starts_with("pbem-report-") && !n.ends_with(".toml")).count();
    assert_eq!(reports, 6, "the three due games' reports: {queued:?}");
    let text = std::fs::read_to_string(&snapshot).unwrap();
    // A mark is `N SHA`; so is its snapshot line.
    let mark = |i: i32| std::fs::read_to_string(root.join(format!(".mail/mailed/g{i}"))).unwrap().trim_end().to_string();
    let lines: Vec<String> = (0..6).map(|i| format!("g{i} {}", mark(i))).collect();
    assert!(text.ends_with(&format!("\n{}\nend\n", lines.join("\n"))), "{text}\n{lines:?}");
    assert!(lines.iter().filter(|l| l.split(' ').nth(1) == Some("1")).count() == 3, "{lines:?}");
}

/// A host control killed before its record (the commit point) leaves its signature, written
/// first: neither index takes the game for idle then, so the next sweep loads it under its lock
/// and clears what the control wrote, and the audit passes. By the game's own index and by the
/// root index's line alone.
#[test]
fn a_control_killed_before_its_record_is_cleared_by_the_next_sweep() {
    let tmp = tempfile::tempdir().unwrap();
    let done = tmp.path().join("done");
    for by_root_line in [false, true] {
        let root = tmp.path().join(format!("games-{by_root_line}"));
        let g = new_game(&root, "g1", 24);
        let first = sweep(&root, IDLE);
        if by_root_line {
            assert_eq!(sweep(&root, IDLE), first);
            assert!(root_index(&root).contains("\ng1 "), "{}", root_index(&root));
        }
        let _ = std::fs::remove_dir_all(&done);
        assert!(std::process::Command::new("cp").arg("-a").arg(&g).arg(&done).status().unwrap().success());
        pbem().arg("deadline").arg(&done).args(["--extend", "2h", "--now", "2026-07-01T12:20:00Z"]).assert().success();
        for rel in ["records/000001.json.sig", "states/000001.json"] {
            std::fs::copy(done.join(rel), g.join(rel)).unwrap();
        }
        assert!(sweep(&root, IDLE).contains("g1: nothing due"));
        assert!(!g.join("records/000001.json.sig").exists() && !g.join("states/000001.json").exists(), "the killed control's files are left");
        pbem().arg("audit").arg(&g).assert().success();
        // The game is idle by its index again.
        assert_eq!(sweep(&root, IDLE), first);
    }
}
