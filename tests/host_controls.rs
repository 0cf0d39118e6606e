//! Host controls on real games through the real binary: seat changes, deadline moves, pause and
//! resume, abandoning, `pbem status --all`; the audit passes on the honest game that used them
//! (host copy, public copy, a receipt kept from before a key change) and fails when a control
//! record is forged or dropped or game.toml is changed without one.

use std::path::{Path, PathBuf};
use std::process::Command;

mod support;
use support::{keygen, pbem};
use predicates::prelude::*;

/// A Gettysburg game `g1` created 2026-07-01T12:00Z (step 1's deadline 72 hours later).
struct Table {
    tmp: tempfile::TempDir,
}

const START: &str = "2026-07-01T12:00:00Z";

impl Table {
    fn new() -> Self {
        Self::with(&[])
    }
    /// A table whose game g1 is made with `extra` flags for `pbem new`.
    fn with(extra: &[&str]) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let t = Table { tmp };
        t.create_with("g1", extra);
        t
    }
    fn create(&self, id: &str) {
        self.create_with(id, &[]);
    }
    fn create_with(&self, id: &str, extra: &[&str]) {
        keygen(self.path(), &format!("conf-{id}"));
        keygen(self.path(), &format!("union-{id}"));
        pbem()
            .arg("new")
            .arg(self.path().join(id))
            .args(["--rules", "gettysburg-campaign", "--now", START])
            .arg("--player")
            .arg(format!("confederate:lee@example.org:{}", self.path().join(format!("conf-{id}.pub")).display()))
            .arg("--player")
            .arg(format!("union:meade@example.org:{}", self.path().join(format!("union-{id}.pub")).display()))
            .args(extra)
            .assert()
            .success();
    }
    fn path(&self) -> &Path {
        self.tmp.path()
    }
    fn game(&self) -> PathBuf {
        self.path().join("g1")
    }
    /// `pbem form` for `role`, signed with `key`, submitted at `now`.
    fn submit(&self, role: &str, key: &Path, now: &str) -> assert_cmd::assert::Assert {
        let f = self.path().join(format!("{role}-{now}.toml"));
        pbem().arg("form").arg(self.game()).args(["--role", role, "-o"]).arg(&f).assert().success();
        pbem().arg("sign").arg("--key").arg(key).arg(&f).assert().success();
        pbem().arg("submit").arg(self.game()).arg(&f).args(["--now", now]).assert()
    }
    fn run(&self, args: &[&str]) -> String {
        let out = pbem().args(&args[..1]).arg(self.game()).args(&args[1..]).output().unwrap();
        assert!(out.status.success(), "pbem {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }
    fn record(&self, n: u64) -> PathBuf {
        self.game().join("records").join(format!("{n:06}.json"))
    }
    fn report(&self, n: u64, role: &str) -> String {
        std::fs::read_to_string(self.game().join("reports").join(format!("{n:06}")).join(format!("{role}.txt"))).unwrap()
    }
}

fn audit_passes(g: &Path) {
    pbem().arg("audit").arg(g).assert().success().stdout(predicate::str::contains("audit passed"));
}

fn audit_fails(g: &Path, what: &str) {
    pbem().arg("audit").arg(g).assert().failure().stderr(predicate::str::contains("audit failed").and(predicate::str::contains(what)));
}

/// A copy of the game without `host/` (what a host publishes).
fn public_copy(game: &Path, name: &str) -> PathBuf {
    let public = game.parent().unwrap().join(name);
    assert!(Command::new("cp").arg("-r").arg(game).arg(&public).status().unwrap().success());
    std::fs::remove_dir_all(public.join("host")).unwrap();
    public
}

/// Re-signs a record with the game's host key, as a dishonest host would.
fn resign(g: &Path, file: &Path) {
    std::fs::remove_file(format!("{}.sig", file.display())).unwrap();
    let out = Command::new("ssh-keygen").args(["-Y", "sign", "-n", "pbem-record", "-f"]).arg(g.join("host").join("host_key")).arg(file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{} holds no {from:?}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn a_seat_change_is_recorded_announced_and_audited_with_receipts_from_before() {
    let t = Table::new();
    let old_key = t.path().join("union-g1");
    t.submit("union", &old_key, "2026-07-01T13:00:00Z").success();
    let kept = t.path().join("kept-union-1.toml");
    std::fs::copy(t.game().join("receipts/000001/union-1.toml"), &kept).unwrap();
    std::fs::copy(t.game().join("receipts/000001/union-1.toml.sig"), t.path().join("kept-union-1.toml.sig")).unwrap();
    let new_key = keygen(t.path(), "union-new");
    let out = t.run(&["seat", "--role", "union", "--email", "hancock@example.org", "--key", &format!("{}.pub", new_key.display()), "--reason", "Meade moved away", "--now", "2026-07-01T14:00:00Z"]);
    assert!(out.contains("record 1: the host changed the seat of union: address hancock@example.org"), "{out}");
    let gt = std::fs::read_to_string(t.game().join("game.toml")).unwrap();
    assert!(gt.contains("hancock@example.org") && !gt.contains("meade@example.org"), "{gt}");
    for role in ["confederate", "union"] {
        let r = t.report(1, role);
        assert!(r.contains("NOTICE FROM THE HOST") && r.contains("the host changed the seat of union: address hancock@example.org") && r.contains("Meade moved away"), "{r}");
    }
    audit_passes(&t.game());
    pbem().arg("audit").arg(t.game()).arg("--receipt").arg(&kept).assert().success();
    // The old key signs no more; the new one does.
    t.submit("union", &old_key, "2026-07-01T15:00:00Z").failure().stderr(predicate::str::contains("signature for seat union"));
    t.submit("union", &new_key, "2026-07-01T15:00:00Z").success();
    t.submit("confederate", &t.path().join("conf-g1"), "2026-07-01T16:00:00Z").success();
    assert!(t.run(&["adjudicate", "--now", "2026-07-01T17:00:00Z"]).contains("resolved step(s) 1"));
    let rec: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(t.record(2)).unwrap()).unwrap();
    assert_eq!(rec["resolution"]["step"], 1);
    assert_eq!(rec["opening"]["step"], 2);
    audit_passes(&t.game());
    audit_passes(&public_copy(&t.game(), "public"));
    // The old holder's receipt: the order used was signed under the new holder's key, which
    // stayed in force (the change is announced): a loud warning naming it, and a pass. Only a
    // key swapped in and back fails (below).
    pbem().arg("audit").arg(t.game()).arg("--receipt").arg(&kept).assert().success().stdout(
        predicate::str::contains("warning: ")
            .and(predicate::str::contains("the host changed union's key while step 1 was open (seat change record(s) 1)"))
            .and(predicate::str::contains("audit passed")),
    );

    // game.toml changed without a record: refused.
    let gt_path = t.game().join("game.toml");
    edit(&gt_path, "lee@example.org", "longstreet@example.org");
    audit_fails(&t.game(), "was game.toml changed without a seat record?");
    std::fs::write(&gt_path, &gt).unwrap();
    audit_passes(&t.game());
}

#[test]
fn a_seat_change_can_set_the_seats_time_zone() {
    // Found by tester t18a-1: a new holder could not be given his own time zone (game.toml's is
    // part of the signed setup: edited by hand, the audit fails), so every mail showed the old
    // holder's.
    let t = Table::new();
    pbem().arg("seat").arg(t.game()).args(["--role", "union", "--time-zone", "Mars/Olympus", "--now", "2026-07-01T13:00:00Z"]).assert().failure().stderr(predicate::str::contains("--time-zone \"Mars/Olympus\"").and(predicate::str::contains("not an IANA time zone")));
    assert!(!t.record(1).exists(), "nothing written");
    let out = t.run(&["seat", "--role", "Union", "--time-zone", "America/Chicago", "--reason", "moved to Chicago", "--now", "2026-07-01T14:00:00Z"]);
    assert!(out.contains("the host changed the seat of union: address meade@example.org, key ") && out.contains(", time zone America/Chicago (moved to Chicago)"), "{out}");
    let gt = std::fs::read_to_string(t.game().join("game.toml")).unwrap();
    assert!(gt.contains("time_zone = \"America/Chicago\""), "{gt}");
    assert!(t.report(1, "union").contains("CDT"), "the union's deadline in its new zone: {}", t.report(1, "union"));
    assert!(!t.report(1, "confederate").contains("CDT"), "the other seat's stays in UTC");
    audit_passes(&t.game());
    audit_passes(&public_copy(&t.game(), "public"));
    // The independent verifier reads the new field too (where python3 with tomllib runs).
    if Command::new("python3").args(["-c", "import tomllib"]).output().is_ok_and(|o| o.status.success()) {
        let o = Command::new("python3").arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("verify/pbem_verify.py")).arg(t.game()).output().unwrap();
        assert!(o.status.success(), "{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    }
    // The same zone again changes nothing; the zone edited by hand fails the audit.
    pbem().arg("seat").arg(t.game()).args(["--role", "union", "--time-zone", "America/Chicago", "--now", "2026-07-01T14:30:00Z"]).assert().failure().stderr(predicate::str::contains("nothing to change"));
    edit(&t.game().join("game.toml"), "America/Chicago", "Europe/Berlin");
    audit_fails(&t.game(), "was game.toml changed without a seat record?");
}

#[test]
fn a_dropped_or_forged_seat_record_fails_the_audit() {
    let t = Table::new();
    let new_key = keygen(t.path(), "union-new");
    t.run(&["seat", "--role", "union", "--key", &format!("{}.pub", new_key.display()), "--now", "2026-07-01T14:00:00Z"]);
    audit_passes(&t.game());
    // Forged: the seat record names another key than game.toml holds (re-signed by the host).
    let r1 = t.record(1);
    let saved = std::fs::read(&r1).unwrap();
    let saved_sig = std::fs::read(format!("{}.sig", r1.display())).unwrap();
    edit(&r1, "\"email\": \"meade@example.org\"", "\"email\": \"someone@example.org\"");
    resign(&t.game(), &r1);
    audit_fails(&t.game(), "in more than seat union's address, key and time zone");
    std::fs::write(&r1, &saved).unwrap();
    std::fs::write(format!("{}.sig", r1.display()), &saved_sig).unwrap();
    audit_passes(&t.game());
    // Dropped: the record and its reports gone, game.toml as changed.
    std::fs::remove_file(&r1).unwrap();
    std::fs::remove_file(format!("{}.sig", r1.display())).unwrap();
    std::fs::remove_file(t.game().join("states/000001.json")).unwrap();
    std::fs::remove_dir_all(t.game().join("reports/000001")).unwrap();
    audit_fails(&t.game(), "setup: is not the hash of game.toml and scenario.toml as they are now");
}

#[test]
fn an_extended_deadline_delays_the_nmr_and_the_audit_follows_it() {
    let t = Table::new();
    let out = t.run(&["deadline", "--extend", "48h", "--reason", "holidays", "--now", "2026-07-02T12:00:00Z"]);
    assert!(out.contains("deadline to 2026-07-06T12:00:00Z"), "{out}");
    assert!(t.run(&["adjudicate", "--now", "2026-07-04T13:00:00Z"]).contains("nothing due"));
    assert!(t.run(&["status"]).contains("deadline 2026-07-06T12:00:00Z"));
    assert!(t.run(&["adjudicate", "--now", "2026-07-06T12:00:00Z"]).contains("resolved step(s) 1; NMR"));
    audit_passes(&t.game());
    t.run(&["deadline", "--to", "2026-07-20T00:00:00Z", "--now", "2026-07-07T12:00:00Z"]);
    audit_passes(&t.game());
    // Forged: the host moves the deadline back in the record it signed, to excuse an early NMR.
    let r = t.record(3);
    edit(&r, "\"deadline\": \"2026-07-20T00:00:00Z\"", "\"deadline\": \"2026-07-07T12:00:00Z\"");
    resign(&t.game(), &r);
    audit_fails(&t.game(), "a moved deadline must lie after the control's time");
    // A deadline in the past, or none at all, is refused.
    pbem().arg("deadline").arg(t.game()).args(["--to", "2026-07-01T00:00:00Z", "--now", "2026-07-08T00:00:00Z"]).assert().failure();
    pbem().arg("deadline").arg(t.game()).args(["--extend", "soon"]).assert().failure().stderr(predicate::str::contains("bad duration"));
}

#[test]
fn a_paused_game_resolves_nothing_and_resuming_moves_the_deadline_on() {
    let t = Table::new();
    t.run(&["pause", "--reason", "the host is away", "--now", "2026-07-02T12:00:00Z"]);
    assert!(t.report(1, "union").contains("PAUSED by the host since 2026-07-02T12:00:00Z"));
    let st = t.run(&["status"]);
    assert!(st.contains("PAUSED by the host since 2026-07-02T12:00:00Z"), "{st}");
    let adj = t.run(&["adjudicate", "--now", "2026-07-10T12:00:00Z"]);
    assert!(adj.contains("nothing due") && adj.contains("paused by the host"), "{adj}");
    pbem().arg("pause").arg(t.game()).args(["--reason", "again", "--now", "2026-07-10T12:00:00Z"]).assert().failure().stderr(predicate::str::contains("already paused"));
    // Orders are still taken in while paused.
    t.submit("union", &t.path().join("union-g1"), "2026-07-03T12:00:00Z").success();
    // Eight days paused: the deadline (2026-07-04T12:00Z) moves on eight days.
    let out = t.run(&["resume", "--now", "2026-07-10T12:00:00Z"]);
    assert!(out.contains("deadline is now 2026-07-12T12:00:00Z"), "{out}");
    assert!(t.run(&["adjudicate", "--now", "2026-07-11T12:00:00Z"]).contains("nothing due"));
    assert!(t.run(&["adjudicate", "--now", "2026-07-12T12:00:00Z"]).contains("resolved step(s) 1; NMR: confederate"));
    audit_passes(&t.game());
    audit_passes(&public_copy(&t.game(), "public"));
    // Forged: the resume record keeps the old deadline (re-signed), which would excuse the NMR.
    let r = t.record(2);
    edit(&r, "\"deadline\": \"2026-07-12T12:00:00Z\"", "\"deadline\": \"2026-07-04T12:00:00Z\"");
    resign(&t.game(), &r);
    audit_fails(&t.game(), "resumed, its deadline later by the time paused");
}

#[test]
fn a_control_records_report_counts_the_time_left_from_the_control() {
    // tester14 T14a-2: counted from when the step opened (2026-07-01T12:00Z), a resume's report
    // gave three days where two hours were left. Step 1's deadline is 2026-07-04T12:00Z.
    for wording in ["1", "0"] {
        controls_report_time_left(wording);
    }
}

/// The reports of a game of report wording `wording` (`pbem new --wording`, hidden) after a
/// resume and a deadline move; an earlier version's wording of them audits only in a game of
/// wording 0 (made before the mark: `report::WORDING`).
fn controls_report_time_left(wording: &str) {
    let t = Table::with(&["--wording", wording]);
    t.run(&["pause", "--reason", "away", "--now", "2026-07-04T10:00:00Z"]);
    assert!(t.run(&["resume", "--now", "2026-07-04T11:00:00Z"]).contains("deadline is now 2026-07-04T13:00:00Z"));
    let r = t.report(2, "union");
    assert!(r.contains("time left: 2 hours (when this report was written)"), "{r}");
    // T14a-4: the report cannot see orders already in; it names the seats asked.
    assert!(r.contains("  orders asked of (some may be in already): confederate (command), union (command)\n"), "{r}");
    assert!(r.contains("# Time left: 2 hours (when this form was made)"), "{r}");
    t.run(&["deadline", "--extend", "24h", "--now", "2026-07-04T12:00:00Z"]);
    let r = t.report(3, "union");
    assert!(r.contains("time left: 1 day 1 hour (when this report was written)"), "{r}");
    audit_passes(&t.game());
    // A report an earlier version wrote (the time left from when the step opened, the seats
    // asked headed as awaited) still audits in a game made before the wording mark; any other
    // figure does not, nor that wording in a game that carries its wording.
    let path = t.game().join("reports/000002/union.txt");
    let earlier = t.report(2, "union").replace("left: 2 hours", "left: 3 days 1 hour").replace("orders asked of (some may be in already):", "awaiting orders from:");
    std::fs::write(&path, earlier).unwrap();
    if wording == "0" {
        audit_passes(&t.game());
    } else {
        audit_fails(&t.game(), "the report");
    }
    std::fs::write(&path, t.report(2, "union").replace("left: 3 days 1 hour", "left: 5 hours")).unwrap();
    audit_fails(&t.game(), "the report");
}

#[test]
fn a_step_resolved_while_paused_fails_the_audit() {
    // A dishonest host pauses, then resolves anyway: it resolves on a copy of the pause record
    // without the pause and chains the resolution to the real one (re-signed). Checked on the
    // public copy (the reports would also differ).
    let t = Table::new();
    t.run(&["pause", "--reason", "away", "--now", "2026-07-02T12:00:00Z"]);
    let r1 = t.record(1);
    let paused = std::fs::read_to_string(&r1).unwrap();
    let paused_sig = std::fs::read(format!("{}.sig", r1.display())).unwrap();
    edit(&r1, ",\n    \"paused\": \"2026-07-02T12:00:00Z\"", "");
    resign(&t.game(), &r1);
    assert!(t.run(&["adjudicate", "--now", "2026-07-05T12:00:00Z"]).contains("resolved step(s) 1; NMR"));
    let unpaused_hash = pbem::commit::sha256_hex(&std::fs::read(&r1).unwrap());
    std::fs::write(&r1, &paused).unwrap();
    std::fs::write(format!("{}.sig", r1.display()), &paused_sig).unwrap();
    let r2 = t.record(2);
    edit(&r2, &unpaused_hash, &pbem::commit::sha256_hex(paused.as_bytes()));
    resign(&t.game(), &r2);
    let public = public_copy(&t.game(), "public");
    std::fs::remove_dir_all(public.join("states")).unwrap();
    std::fs::remove_dir_all(public.join("reports")).unwrap();
    audit_fails(&public, "while the host had paused the game");
}

#[test]
fn an_abandoned_game_ends_with_a_record_that_reveals_the_state_key() {
    let t = Table::new();
    t.submit("union", &t.path().join("union-g1"), "2026-07-01T13:00:00Z").success();
    pbem().arg("end").arg(t.game()).args(["--abandon", "--reason", ""]).assert().failure().stderr(predicate::str::contains("--reason"));
    let out = t.run(&["end", "--abandon", "--reason", "both players vanished", "--now", "2026-07-02T12:00:00Z"]);
    assert!(out.contains("ended the game without a result"), "{out}");
    let rec: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(t.record(1)).unwrap()).unwrap();
    assert!(rec["opening"].is_null() && rec["state_key"].is_string(), "{rec}");
    assert_eq!(rec["outcome"]["summary"], "The host ended the game without a result: both players vanished");
    assert!(t.report(1, "confederate").contains("GAME OVER"));
    assert!(t.run(&["status"]).contains("game over: The host ended the game without a result"));
    assert!(t.run(&["adjudicate", "--now", "2026-07-09T12:00:00Z"]).contains("game over"));
    pbem().arg("form").arg(t.game()).args(["--role", "confederate"]).assert().failure().stderr(predicate::str::contains("the game is over"));
    audit_passes(&t.game());
    audit_passes(&public_copy(&t.game(), "public"));
    pbem().arg("pause").arg(t.game()).args(["--reason", "x"]).assert().failure().stderr(predicate::str::contains("is over"));
}

#[test]
fn status_lists_every_game_under_a_root() {
    let t = Table::new();
    t.create("g2");
    t.submit("union", &t.path().join("union-g1"), "2026-07-01T13:00:00Z").success();
    pbem().arg("pause").arg(t.path().join("g2")).args(["--reason", "holidays", "--now", "2026-07-01T14:00:00Z"]).assert().success();
    let out = pbem().arg("status").arg(t.path()).args(["--now", "2026-07-02T12:00:00Z"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("GAME") && lines[0].contains("LEFT"), "{text}");
    let g1 = lines.iter().find(|l| l.starts_with("g1 ")).unwrap_or_else(|| panic!("{text}"));
    assert!(g1.contains("gettysburg-campaign") && g1.contains("confederate") && !g1.contains("union") && g1.contains("2026-07-04T12:00:00Z") && g1.contains("2d 0h"), "{g1}");
    let g2 = lines.iter().find(|l| l.starts_with("g2 ")).unwrap();
    assert!(g2.contains("paused since 2026-07-01T14:00:00Z"), "{g2}");
    // --all says it outright; a game folder still gets its own status.
    pbem().arg("status").arg("--all").arg(t.path()).assert().success().stdout(predicate::str::contains("g2 "));
    pbem().arg("status").arg(t.game()).assert().success().stdout(predicate::str::contains("game g1"));
    // A game that cannot be read gets its line, and the status says so to a monitoring script.
    std::fs::write(t.path().join("g2/game.toml"), "id = \"g2\"\nrules = ").unwrap();
    let out = pbem().arg("status").arg("--all").arg(t.path()).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("g1 ") && text.contains("g2: cannot be read"), "{text}");
}

/// A game id held by two folders (a backup copy `cp -a g1 g1.bak` inside the root), which
/// `adjudicate` skips (README "Broken or doubled game folders"): `status --all` lists both rows
/// and a note naming the id and both folders, and exits 1 as for an unreadable game.
#[test]
fn status_all_says_a_game_held_by_two_folders() {
    let t = Table::new();
    t.create("g2");
    let st = std::process::Command::new("cp").arg("-a").arg(t.game()).arg(t.path().join("g1.bak")).status().unwrap();
    assert!(st.success());
    let out = pbem().arg("status").arg("--all").arg(t.path()).args(["--now", "2026-07-02T12:00:00Z"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("g1 ")).count(), 2, "{text}");
    let (g1, bak) = (t.game().display().to_string(), t.path().join("g1.bak").display().to_string());
    let note = format!("game g1 is held by more than one folder ({g1}, {bak}): not adjudicated; remove all but one");
    assert!(text.lines().last() == Some(note.as_str()), "want {note:?} last in:\n{text}");
    assert!(!text.contains("game g2 is held"), "{text}");
    // With the copy gone, the status is clean again.
    std::fs::remove_dir_all(t.path().join("g1.bak")).unwrap();
    pbem().arg("status").arg("--all").arg(t.path()).assert().success().stdout(predicate::str::contains("more than one folder").not());
}

/// Answers every awaited seat of g1 at `now` (forms edited by `edit`), signed with the seat's key.
fn answer_all(t: &Table, now: &str, edit: &dyn Fn(String) -> String) {
    let st = t.run(&["status"]);
    for role in ["confederate", "union"] {
        if st.lines().any(|l| l.trim_start().starts_with(&format!("{role} (")) && l.contains("awaited")) {
            let f = t.path().join(format!("{role}-{now}.toml"));
            pbem().arg("form").arg(t.game()).args(["--role", role, "-o"]).arg(&f).assert().success();
            std::fs::write(&f, edit(std::fs::read_to_string(&f).unwrap())).unwrap();
            let key = t.path().join(if role == "union" { "union-g1" } else { "conf-g1" });
            pbem().arg("sign").arg("--key").arg(&key).arg(&f).assert().success();
            pbem().arg("submit").arg(t.game()).arg(&f).args(["--now", now]).assert().success();
        }
    }
}

#[test]
fn a_control_while_orders_are_withheld_keeps_them_due_at_the_rounds_end() {
    let t = Table::new();
    let at = |k: u32| format!("2026-07-01T{:02}:{:02}:00Z", 13 + k / 2, (k % 2) * 30);
    // No planned moves: the initiative's winner is asked mid-round, and the orders so far are
    // withheld until the round's end (as in tests/cli.rs).
    let no_plans = |text: String| text.split("[orders.moves]").next().unwrap().to_string();
    let (mut k, mut n) = (0, 0u64);
    loop {
        assert!(k < 30, "no mid-round step");
        answer_all(&t, &at(k), &no_plans);
        t.run(&["adjudicate", "--now", &at(k + 1)]);
        k += 2;
        n += 1;
        let rec: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(t.record(n)).unwrap()).unwrap();
        if rec["resolution"]["orders"].as_array().unwrap().iter().any(|o| o["withheld"] == true && o.get("withheld_until").is_none()) {
            break;
        }
    }
    // Mid-round, with orders withheld: the host moves the deadline.
    t.run(&["deadline", "--extend", "24h", "--now", &at(k)]);
    k += 1;
    audit_passes(&t.game());
    // Play on until a record reveals what was withheld.
    for _ in 0..20 {
        answer_all(&t, &at(k), &|text| text);
        t.run(&["adjudicate", "--now", &at(k + 1)]);
        k += 2;
        let last = std::fs::read_dir(t.game().join("records")).unwrap().count() as u64 / 2 - 1;
        if std::fs::read_to_string(t.record(last)).unwrap().contains("\"reveals\"") {
            audit_passes(&t.game());
            audit_passes(&public_copy(&t.game(), "public"));
            return;
        }
    }
    panic!("the round never ended");
}

/// Defects found by a tester (host abuse and crashes around the controls).
mod found {
    use super::*;

    fn seat_fails(t: &Table, args: &[&str], what: &str) {
        pbem().arg("seat").arg(t.game()).args(args).args(["--now", "2026-07-01T13:00:00Z"]).assert().failure().stderr(predicate::str::contains(what));
    }

    #[test]
    fn a_deadline_moves_only_later_and_at_most_a_year_ahead() {
        let t = Table::new();
        let at = ["--now", "2026-07-01T13:00:00Z"];
        // Cut to a second from now: the NMR would fall before anyone is told.
        pbem().arg("deadline").arg(t.game()).args(["--to", "2026-07-01T13:00:01Z"]).args(at).assert().failure().stderr(predicate::str::contains("can only be moved later"));
        // Past year 9999 (then a resume would write a time no record can hold).
        pbem().arg("deadline").arg(t.game()).args(["--to", "9999-12-31T23:59:59Z"]).args(at).assert().failure().stderr(predicate::str::contains("more than a year from now"));
        // A forged record moving it earlier fails the audit.
        t.run(&["deadline", "--extend", "24h", "--now", "2026-07-01T13:00:00Z"]);
        edit(&t.record(1), "2026-07-05T12:00:00Z", "2026-07-02T12:00:00Z");
        resign(&t.game(), &t.record(1));
        audit_fails(&t.game(), "may not be earlier than the one it replaces");
    }

    #[test]
    fn a_seat_never_takes_the_hosts_key_nor_a_seat_of_the_other_side() {
        let t = Table::new();
        let host_pub = t.game().join("host").join("host_key.pub");
        seat_fails(&t, &["--role", "union", "--key", host_pub.to_str().unwrap()], "the host's key");
        seat_fails(&t, &["--role", "union", "--email", "lee@example.org"], "of another side");
        let lee = t.path().join("conf-g1.pub");
        seat_fails(&t, &["--role", "union", "--key", lee.to_str().unwrap()], "of another side");
    }

    /// `pbem new` of a Flag Dash game in `t` with these `ROLE:EMAIL:KEY` seats (keys by name in
    /// `t`, made on first use) and extra arguments.
    fn new_flag_dash(t: &Table, id: &str, seats: &[&str], extra: &[&str]) -> assert_cmd::assert::Assert {
        let mut cmd = pbem();
        cmd.arg("new").arg(t.path().join(id)).args(["--rules", "flag-dash", "--now", START]).args(extra);
        for s in seats {
            let (front, key) = s.rsplit_once(':').unwrap();
            if !t.path().join(format!("{key}.pub")).exists() {
                keygen(t.path(), key);
            }
            cmd.arg("--player").arg(format!("{front}:{}", t.path().join(format!("{key}.pub")).display()));
        }
        cmd.assert()
    }

    #[test]
    fn new_and_seat_take_only_an_address_the_mailer_can_send_to() {
        let t = Table::new();
        let seats = |w1: &'static str| [w1, "white-2:w2@ex.org:w2", "red-1:r1@ex.org:r1", "red-2:r2@ex.org:r2"];
        // A trailing dot: the mailer refuses it, so every later mail run would fail.
        for bad in ["white-1:w1@ex.org.:w1", "white-1:w1@:w1", "white-1:<w1@ex.org>:w1"] {
            new_flag_dash(&t, "f", &seats(bad), &[]).failure().stderr(predicate::str::contains("--player white-1").and(predicate::str::contains("w1@")));
            assert!(!t.path().join("f").join("game.toml").exists());
        }
        new_flag_dash(&t, "f", &seats("white-1:w1@ex.org.:w1"), &[]).failure().stderr(predicate::str::contains("not a mail address"));
        new_flag_dash(&t, "f", &seats("white-1:w1@ex.org:w1"), &[]).success();
        for bad in ["w2@ex.org.", "meade@ex..org", "Meade <meade@example.org>"] {
            seat_fails(&t, &["--role", "union", "--email", bad], "--email");
        }
        seat_fails(&t, &["--role", "union", "--email", "meade@example.org."], "not a mail address");
        // A non-ASCII letter: no SMTP server without SMTPUTF8 takes it, and a mail queued to it
        // was refused by every run (found by tester T10).
        for bad in ["white-1:ü@bücher.de:w1", "white-1:w1@bücher.de:w1"] {
            new_flag_dash(&t, "f2", &seats(bad), &[]).failure().stderr(predicate::str::contains("--player white-1").and(predicate::str::contains("non-ASCII")));
            assert!(!t.path().join("f2").join("game.toml").exists());
        }
        for bad in ["ü@bücher.de", "meade@bücher.de"] {
            pbem().arg("seat").arg(t.game()).args(["--role", "union", "--email", bad, "--now", "2026-07-01T13:00:00Z"]).assert().failure().stderr(predicate::str::contains(format!("--email {bad:?}")).and(predicate::str::contains("non-ASCII")));
        }
        // The other side's address with a trailing dot or in another case is still its address.
        let g = t.path().join("f");
        for other in ["W2@EX.ORG", "w2@ex.org"] {
            pbem().arg("seat").arg(&g).args(["--role", "red-1", "--email", other, "--now", "2026-07-01T13:00:00Z"]).assert().failure().stderr(predicate::str::contains("of another side"));
        }
    }

    #[test]
    fn new_refuses_one_address_or_key_on_both_flag_dash_teams() {
        let t = Table::new();
        let other_side = "would share its";
        // The same address (in any case) or key on white-1 and red-1: refused, nothing made.
        for red1 in ["red-1:w1@ex.org:r1", "red-1:W1@Ex.Org:r1", "red-1:r1@ex.org:w1"] {
            let seats = ["white-1:w1@ex.org:w1", "white-2:w2@ex.org:w2", red1, "red-2:r2@ex.org:r2"];
            new_flag_dash(&t, "f", &seats, &[]).failure().stderr(predicate::str::contains(other_side).and(predicate::str::contains("of another side")));
            assert!(!t.path().join("f").join("game.toml").exists(), "{red1}");
        }
        // One person holding both seats of one team (players=3) stays allowed.
        let seats = ["white-1:w1@ex.org:w1", "white-2:W1@ex.org:w1", "red-1:r1@ex.org:r1", "red-2:r2@ex.org:r2"];
        new_flag_dash(&t, "f", &seats, &["--option", "players=3"]).success();
        // Two sides of a game without teams are two sides too.
        pbem()
            .arg("new")
            .arg(t.path().join("g2"))
            .args(["--rules", "gettysburg-campaign", "--now", START])
            .arg("--player")
            .arg(format!("confederate:lee@example.org:{}", t.path().join("conf-g1.pub").display()))
            .arg("--player")
            .arg(format!("union:LEE@example.org:{}", t.path().join("union-g1.pub").display()))
            .assert()
            .failure()
            .stderr(predicate::str::contains("seat confederate would share its address with seat union of another side"));
    }

    #[test]
    fn a_seat_change_killed_before_its_record_is_undone_and_after_it_finished() {
        let t = Table::new();
        let g = t.game();
        let before = std::fs::read(g.join("game.toml")).unwrap();
        // Killed before the record: the new game.toml waits in host/; the next run drops it.
        std::fs::write(g.join("host/game.toml.next"), String::from_utf8_lossy(&before).replace("meade@example.org", "hancock@example.org")).unwrap();
        t.run(&["status"]);
        pbem().arg("adjudicate").arg(&g).args(["--now", "2026-07-01T13:00:00Z"]).assert().success();
        assert!(!g.join("host/game.toml.next").exists());
        assert_eq!(std::fs::read(g.join("game.toml")).unwrap(), before);
        audit_passes(&g);
        // Killed after the record: the next run puts the new game.toml in place.
        t.run(&["seat", "--role", "union", "--email", "hancock@example.org", "--now", "2026-07-01T14:00:00Z"]);
        let after = std::fs::read(g.join("game.toml")).unwrap();
        std::fs::write(g.join("host/game.toml.next"), &after).unwrap();
        std::fs::write(g.join("game.toml"), &before).unwrap();
        pbem().arg("adjudicate").arg(&g).args(["--now", "2026-07-01T15:00:00Z"]).assert().success();
        assert_eq!(std::fs::read(g.join("game.toml")).unwrap(), after);
        audit_passes(&g);
        // A hand-edited game.toml is refused before a seat change could sign it in.
        edit(&g.join("game.toml"), "grace_hours = ", "grace_hours = 1");
        pbem().arg("seat").arg(&g).args(["--role", "union", "--email", "meade@example.org", "--now", "2026-07-01T16:00:00Z"]).assert().failure().stderr(predicate::str::contains("is not the setup the game's records name"));
    }

    #[test]
    fn a_kept_receipt_fails_when_the_order_used_was_signed_under_a_key_swapped_in_for_a_moment() {
        let t = Table::new();
        let meade = t.path().join("union-g1");
        t.submit("union", &meade, "2026-07-01T13:00:00Z").success();
        let kept = t.path().join("kept-union-1.toml");
        std::fs::copy(t.game().join("receipts/000001/union-1.toml"), &kept).unwrap();
        std::fs::copy(t.game().join("receipts/000001/union-1.toml.sig"), t.path().join("kept-union-1.toml.sig")).unwrap();
        // The host swaps in a key of its own, puts in an order for union and swaps back.
        let other = keygen(t.path(), "hosts-other");
        let key_arg = |k: &Path| format!("{}.pub", k.display());
        t.run(&["seat", "--role", "union", "--key", &key_arg(&other), "--reason", "key update", "--now", "2026-07-01T14:00:00Z"]);
        t.submit("union", &other, "2026-07-01T14:01:00Z").success();
        t.run(&["seat", "--role", "union", "--key", &key_arg(&meade), "--reason", "key update", "--now", "2026-07-01T14:02:00Z"]);
        t.submit("confederate", &t.path().join("conf-g1"), "2026-07-01T15:00:00Z").success();
        t.run(&["adjudicate", "--now", "2026-07-01T15:01:00Z"]);
        audit_passes(&t.game());
        pbem().arg("audit").arg(t.game()).arg("--receipt").arg(&kept).assert().failure().stderr(
            predicate::str::contains("record 3 used receipt 2 of union in step 1, an order signed with seat key SHA256:")
                .and(predicate::str::contains("the host changed union's key while step 1 was open (seat change record(s) 1, 2) and back to this receipt's key")),
        );
        // The player's own later order under the same key passes.
        let t = Table::new();
        t.submit("union", &meade_of(&t), "2026-07-01T13:00:00Z").success();
        let kept = t.path().join("kept-union-1.toml");
        std::fs::copy(t.game().join("receipts/000001/union-1.toml"), &kept).unwrap();
        std::fs::copy(t.game().join("receipts/000001/union-1.toml.sig"), t.path().join("kept-union-1.toml.sig")).unwrap();
        t.run(&["seat", "--role", "union", "--email", "hancock@example.org", "--now", "2026-07-01T14:00:00Z"]);
        t.submit("union", &meade_of(&t), "2026-07-01T14:01:00Z").success();
        t.submit("confederate", &t.path().join("conf-g1"), "2026-07-01T15:00:00Z").success();
        t.run(&["adjudicate", "--now", "2026-07-01T15:01:00Z"]);
        pbem().arg("audit").arg(t.game()).arg("--receipt").arg(&kept).assert().success().stdout(predicate::str::contains("record 2 used receipt 2"));
    }

    fn meade_of(t: &Table) -> PathBuf {
        t.path().join("union-g1")
    }

    #[test]
    fn status_counts_resolved_steps_not_records() {
        let t = Table::new();
        t.run(&["deadline", "--extend", "24h", "--now", "2026-07-01T13:00:00Z"]);
        t.run(&["pause", "--reason", "away", "--now", "2026-07-01T14:00:00Z"]);
        let s = t.run(&["status"]);
        assert!(s.contains("0 step(s) resolved"), "{s}");
    }
}

/// A copy of the game folder `from` at `to` (`cp -a`).
fn copy_game(from: &Path, to: &Path) {
    assert!(Command::new("cp").arg("-a").arg(from).arg(to).status().unwrap().success());
}

/// What a host control writes for its record `n`, in the order it writes them (the record's file,
/// the commit point, last): its signature, state, reports, the record's temp file; each as the
/// path inside the game folder.
fn control_writes(n: u64) -> Vec<String> {
    let n = format!("{n:06}");
    vec![format!("records/{n}.json.sig"), format!("states/{n}.json"), format!("reports/{n}"), format!("records/.{n}.json.A8Fro6")]
}

/// The game `base` with the first `k` files a completed control wrote in `done` (its record 1)
/// put in a copy at `to`: a control killed at that write point.
fn killed_at(base: &Path, done: &Path, k: usize, to: &Path) {
    copy_game(base, to);
    for (i, rel) in control_writes(1).iter().enumerate().take(k) {
        let from = if i == 3 { done.join("records/000001.json") } else { done.join(rel) };
        if from.is_dir() {
            copy_game(&from, &to.join(rel));
        } else {
            std::fs::copy(&from, to.join(rel)).unwrap();
        }
    }
}

#[test]
fn a_host_control_killed_before_its_record_leaves_nothing_the_next_run_keeps() {
    let t = Table::new();
    let base = t.path().join("base");
    copy_game(&t.game(), &base);
    let controls: [&[&str]; 3] = [&["deadline", "--extend", "2h", "--reason", "d"], &["pause", "--reason", "away"], &["end", "--abandon", "--reason", "gone"]];
    for (c, control) in controls.iter().enumerate() {
        let done = t.path().join(format!("done-{c}"));
        copy_game(&base, &done);
        pbem().args(&control[..1]).arg(&done).args(&control[1..]).args(["--now", "2026-07-01T13:00:00Z"]).assert().success();
        for k in 0..=control_writes(1).len() {
            let g = t.path().join(format!("killed-{c}-{k}"));
            killed_at(&base, &done, k, &g);
            // The next run that takes the game's lock clears what the killed one wrote: then the
            // audit passes and no file of record 1 is left.
            pbem().arg("adjudicate").arg(&g).args(["--now", "2026-07-01T13:02:00Z"]).assert().success().stdout(predicate::str::contains("nothing due"));
            for rel in control_writes(1) {
                assert!(!g.join(&rel).exists(), "{control:?} killed after {k} write(s): {rel} is left");
            }
            assert!(g.join("host/seeds/000001.hex").exists(), "the open step's host seed stays");
            audit_passes(&g);
            // The host gives the control again: it is done, once.
            pbem().args(&control[..1]).arg(&g).args(&control[1..]).args(["--now", "2026-07-01T13:03:00Z"]).assert().success();
            assert!(g.join("records/000001.json").exists() && !g.join("records/000002.json").exists());
            audit_passes(&g);
        }
    }
}

#[test]
fn a_killed_control_is_cleared_by_the_next_control_and_by_an_order_taken_in() {
    let t = Table::new();
    let base = t.path().join("base");
    copy_game(&t.game(), &base);
    let done = t.path().join("done");
    copy_game(&base, &done);
    pbem().arg("pause").arg(&done).args(["--reason", "away", "--now", "2026-07-01T13:00:00Z"]).assert().success();
    // Another control: its record 1 is its own.
    let g = t.path().join("control");
    killed_at(&base, &done, 4, &g);
    pbem().arg("deadline").arg(&g).args(["--extend", "2h", "--now", "2026-07-01T13:02:00Z"]).assert().success();
    assert!(!g.join("records/.000001.json.A8Fro6").exists());
    audit_passes(&g);
    // An order taken in (g1 holding what a killed control wrote).
    std::fs::remove_dir_all(t.game()).unwrap();
    killed_at(&base, &done, 3, &t.game());
    t.submit("union", &t.path().join("union-g1"), "2026-07-01T13:05:00Z").success();
    assert!(!t.game().join("states/000001.json").exists());
    audit_passes(&t.game());
}
