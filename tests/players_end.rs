//! A game its players end, through the real binary: a seat resigns by a signed order (its side
//! loses), every seat agrees a draw (standing offers, withdrawn by orders without one); both
//! verifiers (`pbem audit` on the host copy and the public archive, `verify/pbem_verify.py`) pass
//! the honest game and fail a resignation the host forged or an outcome it changed.

use std::path::{Path, PathBuf};
use std::process::Command;

mod support;
use support::{keygen, pbem};
use predicates::prelude::*;

/// A Gettysburg game `g1` created 2026-07-01T12:00Z; both seats are asked in step 1.
struct Table {
    tmp: tempfile::TempDir,
}

impl Table {
    fn new() -> Self {
        let t = Table { tmp: tempfile::tempdir().unwrap() };
        keygen(t.path(), "confederate");
        keygen(t.path(), "union");
        let seat = |role: &str, mail: &str| format!("{role}:{mail}:{}", t.path().join(format!("{role}.pub")).display());
        pbem()
            .arg("new")
            .arg(t.game())
            .args(["--rules", "gettysburg-campaign", "--now", "2026-07-01T12:00:00Z", "--player"])
            .arg(seat("confederate", "lee@example.org"))
            .arg("--player")
            .arg(seat("union", "meade@example.org"))
            .assert()
            .success();
        t
    }
    fn path(&self) -> &Path {
        self.tmp.path()
    }
    fn game(&self) -> PathBuf {
        self.path().join("g1")
    }
    /// `pbem form` for `role`, changed by `edit`, signed with `key` (default: the seat's own).
    fn order(&self, role: &str, name: &str, key: Option<&Path>, edit: &dyn Fn(String) -> String) -> PathBuf {
        let f = self.path().join(format!("{name}.toml"));
        pbem().arg("form").arg(self.game()).args(["--role", role, "-o"]).arg(&f).assert().success();
        std::fs::write(&f, edit(std::fs::read_to_string(&f).unwrap())).unwrap();
        let own = self.path().join(role);
        pbem().arg("sign").arg("--key").arg(key.unwrap_or(&own)).arg(&f).assert().success();
        f
    }
    fn submit(&self, f: &Path, now: &str) -> assert_cmd::assert::Assert {
        pbem().arg("submit").arg(self.game()).arg(f).args(["--now", now]).assert()
    }
    fn run(&self, args: &[&str]) -> String {
        let out = pbem().args(&args[..1]).arg(self.game()).args(&args[1..]).output().unwrap();
        assert!(out.status.success(), "pbem {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }
    fn record(&self, n: u64) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(self.game().join("records").join(format!("{n:06}.json"))).unwrap()).unwrap()
    }
}

/// The form with `[orders]` replaced by `body`.
fn only(body: &'static str) -> impl Fn(String) -> String {
    move |form: String| format!("{}[orders]\n{body}", &form[..form.find("\n[orders]\n").unwrap() + 1])
}

/// The form's own orders with `line` added to `[orders]`.
fn with(line: &'static str) -> impl Fn(String) -> String {
    move |form: String| form.replacen("\n[orders]\n", &format!("\n[orders]\n{line}\n"), 1)
}

fn audit_passes(g: &Path) {
    pbem().arg("audit").arg(g).assert().success().stdout(predicate::str::contains("audit passed"));
}

/// The public archive (`pbem public`) passes `pbem audit FILE` too.
fn public_audit_passes(g: &Path) {
    let tar = g.parent().unwrap().join("public.tar");
    pbem().arg("public").arg("--out").arg(&tar).arg(g).assert().success();
    pbem().arg("audit").arg(&tar).assert().success().stdout(predicate::str::contains("audit passed"));
}

/// The Python verifier's verdict on `g` (`None` where python3 with tomllib is missing).
fn python(g: &Path) -> Option<(bool, String)> {
    let ok = Command::new("python3").args(["-c", "import tomllib"]).output().is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: python3 (3.11 or later, with tomllib) is not installed");
        return None;
    }
    let out = Command::new("python3").arg("verify/pbem_verify.py").arg(g).output().unwrap();
    Some((out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned()))
}

/// Writes `text` over `file` of game `g` and signs it again with the host key in namespace `ns`
/// (`pbem-record`, `pbem-receipt`): a host that forges what it signs.
fn host_rewrites(g: &Path, file: &Path, text: &str, ns: &str) {
    std::fs::write(file, text).unwrap();
    std::fs::remove_file(format!("{}.sig", file.display())).unwrap();
    let out = Command::new("ssh-keygen").args(["-Y", "sign", "-n", ns, "-f"]).arg(g.join("host/host_key")).arg(file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `pbem audit` of `g` fails saying `audit_says`, and the Python verifier (if it can run) fails
/// saying `python_says`.
fn both_verifiers_fail(g: &Path, audit_says: impl predicates::Predicate<str>, python_says: &str) {
    pbem().arg("audit").arg(g).assert().failure().stderr(audit_says);
    if let Some((ok, out)) = python(g) {
        assert!(!ok && out.contains(python_says), "{out}");
    }
}

#[test]
fn a_resignation_ends_the_game_the_other_side_wins_and_both_verifiers_pass() {
    let t = Table::new();
    // Resigning gives no other orders.
    let mixed = t.order("union", "mixed", None, &with("resign = true"));
    t.submit(&mixed, "2026-07-01T12:30:00Z").failure().stderr(predicate::str::contains("orders.resign").and(predicate::str::contains("stands alone")));
    // `resign = false` is refused as soon as the file is read (here by `pbem sign`), with its line.
    let bad = t.path().join("bad.toml");
    pbem().arg("form").arg(t.game()).args(["--role", "union", "-o"]).arg(&bad).assert().success();
    std::fs::write(&bad, only("resign = false\n")(std::fs::read_to_string(&bad).unwrap())).unwrap();
    pbem().arg("sign").arg("--key").arg(t.path().join("union")).arg(&bad).assert().failure()
        .stderr(predicate::str::contains("orders.resign: write `resign = true` to resign"));
    let c = t.order("confederate", "c", None, &with(""));
    let f = t.order("union", "resign", None, &only("resign = true\n"));
    t.submit(&f, "2026-07-01T13:00:00Z").success().stdout(predicate::str::contains("game over: union resigned: confederate wins."));
    let rec = t.record(1);
    assert_eq!(rec["control"]["action"], "resign", "{rec}");
    assert_eq!(rec["control"]["orders"][0]["role"], "union");
    assert!(rec["control"]["orders"][0]["text"].as_str().unwrap().contains("resign = true"));
    assert_eq!(rec["outcome"]["winner"], "confederate");
    assert!(rec["opening"].is_null() && rec["state_key"].is_string(), "{rec}");
    let report = t.run(&["report", "--role", "confederate"]);
    assert!(report.contains("THE PLAYERS ENDED THE GAME") && report.contains("union resigned by a signed order"), "{report}");
    assert!(report.contains("GAME OVER\n  union resigned: confederate wins."), "{report}");
    // tester17 T17-3: a game its players ended asks no question and lists no plans (wording 1).
    assert!(!report.contains("QUESTION FOR YOU") && !report.contains("PLANNED MOVES"), "{report}");
    // tester20 T20c-6: nor is it headed with the phase it stopped in (wording 2).
    assert!(report.contains("\nThe game is over. You play the ") && !report.contains("command phase"), "{report}");
    let status = t.run(&["status"]);
    assert!(status.contains("game over: union resigned") && status.contains("ended by the players (record 1)"), "{status}");
    assert!(t.run(&["adjudicate", "--now", "2026-07-09T12:00:00Z"]).contains("game over"));
    t.submit(&c, "2026-07-01T14:00:00Z").failure().stderr(predicate::str::contains("the game is over"));
    audit_passes(&t.game());
    public_audit_passes(&t.game());
    if let Some((ok, out)) = python(&t.game()) {
        assert!(ok && out.contains("union resigned: confederate wins."), "{out}");
    }
    // tester15 T15-8: the audit counts the order the end quotes, and a player's receipt of a step
    // the end came before is told so (it said "not resolved yet").
    let receipts = t.game().join("receipts/000001");
    let out = pbem().arg("audit").arg(t.game()).arg("--receipt").arg(receipts.join("union-1.toml")).output().unwrap();
    let out = String::from_utf8(out.stdout).unwrap();
    assert!(out.contains("union-1.toml: receipt 1 of union in step 1 is in the game; record 1 ended the game quoting this order (union resigned: confederate wins.)"), "{out}");
    assert!(out.contains("audit passed: 2 records, 0 signed orders (1 more quoted by the end), 0 NMR"), "{out}");
}

#[test]
fn a_draw_needs_every_seats_standing_offer_and_orders_without_one_withdraw_it() {
    let t = Table::new();
    // An asked seat offers a draw with its orders; one without orders is refused.
    let bare = t.order("union", "bare", None, &only("draw = true\n"));
    t.submit(&bare, "2026-07-01T12:10:00Z").failure().stderr(predicate::str::contains("orders.cards"));
    let u1 = t.order("union", "u1", None, &with("draw = true"));
    t.submit(&u1, "2026-07-01T12:20:00Z").success().stdout(predicate::str::contains("draw offered by union"));
    let c1 = t.order("confederate", "c1", None, &with(""));
    t.submit(&c1, "2026-07-01T12:30:00Z").success().stdout(predicate::str::contains("game over").not()).stderr(predicate::str::contains("withdraws").not());
    assert!(t.run(&["adjudicate", "--now", "2026-07-01T13:00:00Z"]).contains("resolved step(s) 1"));
    // The other seat's report of the step tells it of the offer (tester21 T21b-1, wording 2),
    // unless an initiative tie keeps the step's orders secret (the dice follow the players'
    // nonces: either may happen here).
    let report = t.run(&["report", "--role", "confederate"]);
    let withheld = t.record(1)["resolution"]["orders"].as_array().unwrap().iter().any(|o| o["withheld"] == true);
    assert_eq!(report.contains("DRAW OFFERED WITH THE ORDERS OF THIS STEP\n  union: an offer stands until"), !withheld, "{report}");
    // Step 2: union's new orders without `draw` withdraw its offer, so confederate's alone ends nothing.
    // The seat is told so: the form mailed to it does not repeat the offer (tester t17a-1).
    let u2 = t.order("union", "u2", None, &with(""));
    t.submit(&u2, "2026-07-01T13:10:00Z").success().stderr(predicate::str::contains("this order withdraws your draw offer (your orders of step 1 offered a draw); to keep the offer, send these orders again with `draw = true`"));
    let c2 = t.order("confederate", "c2", None, &with("draw = true"));
    t.submit(&c2, "2026-07-01T13:20:00Z").success().stdout(predicate::str::contains("game over").not());
    assert!(!t.game().join("records").join("000002.json").exists(), "no record ended the game");
    // Union offers again: every seat's newest order says draw = true.
    let u3 = t.order("union", "u3", None, &with("draw = true"));
    t.submit(&u3, "2026-07-01T13:30:00Z").success().stdout(predicate::str::contains("game over: Drawn: every seat agreed a draw (confederate, union)."));
    let rec = t.record(2);
    assert_eq!(rec["control"]["action"], "draw", "{rec}");
    assert!(rec["outcome"]["winner"].is_null());
    let seqs: Vec<(u64, u64)> = rec["control"]["orders"].as_array().unwrap().iter().map(|o| (o["step"].as_u64().unwrap(), o["seq"].as_u64().unwrap())).collect();
    assert_eq!(seqs, vec![(2, 1), (2, 2)], "confederate's step-2 order and union's second one");
    audit_passes(&t.game());
    public_audit_passes(&t.game());
    if let Some((ok, out)) = python(&t.game()) {
        assert!(ok && out.contains("Drawn"), "{out}");
    }
}

#[test]
fn a_seat_change_withdraws_the_earlier_holders_draw_offer() {
    // tester14 T14a-1: union offered a draw, then the seat went to a new player with another key;
    // the confederate's offer must not draw the game on the old holder's word, only once the new
    // holder offers too.
    let t = Table::new();
    let u1 = t.order("union", "u1", None, &with("draw = true"));
    t.submit(&u1, "2026-07-01T12:20:00Z").success().stdout(predicate::str::contains("draw offered by union"));
    keygen(t.path(), "hancock");
    let key = t.path().join("hancock.pub");
    t.run(&["seat", "--role", "union", "--email", "hancock@example.org", "--key", key.to_str().unwrap(), "--reason", "meade left", "--now", "2026-07-01T12:30:00Z"]);
    let c1 = t.order("confederate", "c1", None, &with("draw = true"));
    t.submit(&c1, "2026-07-01T12:40:00Z").success().stdout(predicate::str::contains("game over").not());
    assert_eq!(t.record(1)["control"]["action"], "seat");
    assert!(!t.game().join("records").join("000002.json").exists(), "no record ended the game");
    let u2 = t.order("union", "u2", Some(&t.path().join("hancock")), &with("draw = true"));
    t.submit(&u2, "2026-07-01T12:50:00Z").success().stdout(predicate::str::contains("game over: Drawn: every seat agreed a draw (confederate, union)."));
    assert_eq!(t.record(2)["control"]["action"], "draw");
    audit_passes(&t.game());
    if let Some((ok, out)) = python(&t.game()) {
        assert!(ok && out.contains("Drawn"), "{out}");
    }
}

#[test]
fn a_resignation_the_host_signed_itself_fails_both_verifiers() {
    let t = Table::new();
    // A dishonest host puts its own key in union's seat for a moment, "accepts" a resignation it
    // signed, and puts game.toml back: receipt and record are host-signed and consistent.
    let gt = t.game().join("game.toml");
    let honest = std::fs::read_to_string(&gt).unwrap();
    let key_of = |p: PathBuf| std::fs::read_to_string(p).unwrap().split_whitespace().take(2).collect::<Vec<_>>().join(" ");
    let union = key_of(t.path().join("union.pub"));
    let host = key_of(t.game().join("host").join("host_key.pub"));
    std::fs::write(&gt, honest.replace(&union, &host)).unwrap();
    let f = t.order("union", "forged", Some(&t.game().join("host").join("host_key")), &only("resign = true\n"));
    t.submit(&f, "2026-07-01T13:00:00Z").success();
    std::fs::write(&gt, &honest).unwrap();
    both_verifiers_fail(&t.game(), predicate::str::contains("control.orders[0].signature: not union's signature"), "control.orders[0].signature");
}

#[test]
fn a_resignation_record_with_another_outcome_fails_both_verifiers() {
    let t = Table::new();
    let f = t.order("union", "resign", None, &only("resign = true\n"));
    t.submit(&f, "2026-07-01T13:00:00Z").success();
    let rp = t.game().join("records").join("000001.json");
    let text = std::fs::read_to_string(&rp).unwrap();
    let changed = text.replace("\"winner\": \"confederate\"", "\"winner\": \"union\"").replace("union resigned: confederate wins.", "union resigned: union wins.");
    assert_ne!(text, changed);
    host_rewrites(&t.game(), &rp, &changed, "pbem-record");
    both_verifiers_fail(&t.game(), predicate::str::contains("000001.json: outcome"), "outcome");
}

/// A new game of `rules` in `dir/g` with `options`, one seat per role (keys `dir/ROLE`).
fn game_of(dir: &Path, rules: &str, options: &[&str], roles: &[&str]) -> PathBuf {
    game_with(dir, rules, &options.iter().flat_map(|o| ["--option", o]).collect::<Vec<_>>(), roles)
}

/// [`game_of`] with `args` given to `pbem new` as they are.
fn game_with(dir: &Path, rules: &str, args: &[&str], roles: &[&str]) -> PathBuf {
    let g = dir.join("g");
    let mut cmd = pbem();
    cmd.arg("new").arg(&g).args(["--rules", rules, "--now", "2026-07-02T12:00:00Z"]).args(args);
    for role in roles {
        keygen(dir, role);
        cmd.arg("--player").arg(format!("{role}:{role}@example.org:{}.pub", dir.join(role).display()));
    }
    cmd.assert().success();
    g
}

/// `role` of the game `g` resigns at `now`; returns what `pbem submit` printed.
fn resign_in(g: &Path, role: &str, now: &str) -> String {
    let dir = g.parent().unwrap();
    let f = dir.join(format!("{role}-resign.toml"));
    pbem().arg("form").arg(g).args(["--role", role, "-o"]).arg(&f).assert().success();
    std::fs::write(&f, only("resign = true\n")(std::fs::read_to_string(&f).unwrap())).unwrap();
    pbem().arg("sign").arg("--key").arg(dir.join(role)).arg(&f).assert().success();
    let out = pbem().arg("submit").arg(g).arg(&f).args(["--now", now]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn in_flag_dash_one_seat_resigns_for_its_team_and_the_other_team_wins() {
    let tmp = tempfile::tempdir().unwrap();
    let g = game_of(tmp.path(), "flag-dash", &["players=4"], &["red-1", "red-2", "white-1", "white-2"]);
    let out = resign_in(&g, "white-2", "2026-07-02T13:00:00Z");
    assert!(out.contains("game over: white-2 (side white) resigned: red wins."), "{out}");
    // Headed as over, not with the phase it stopped in (tester20 T20c-6, wording 2).
    let report = String::from_utf8(pbem().arg("report").arg(&g).args(["--role", "red-1"]).output().unwrap().stdout).unwrap();
    assert!(report.contains("\nThe game is over (round 1). You hold seat red-1") && !report.contains("plan moves"), "{report}");
    audit_passes(&g);
    public_audit_passes(&g);
    if let Some((ok, out)) = python(&g) {
        assert!(ok && out.contains("red wins"), "{out}");
    }
}

/// A game made before report wording 2 keeps its reports as they were: headed with the phase
/// the game stopped in (the audit replays them byte for byte).
#[test]
fn a_game_of_an_earlier_wording_keeps_its_heading_when_its_players_end_it() {
    let tmp = tempfile::tempdir().unwrap();
    let g = game_with(tmp.path(), "flag-dash", &["--option", "players=4", "--wording", "1"], &["red-1", "red-2", "white-1", "white-2"]);
    resign_in(&g, "white-2", "2026-07-02T13:00:00Z");
    let report = String::from_utf8(pbem().arg("report").arg(&g).args(["--role", "red-1"]).output().unwrap().stdout).unwrap();
    assert!(report.contains("\nRound 1 of at most 40: Phase 1, plan moves. You hold seat red-1"), "{report}");
    audit_passes(&g);
}

#[test]
fn in_solitaire_resigning_loses_the_game_and_a_draw_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let g = game_of(tmp.path(), "throw-down-that-flag", &[], &["union"]);
    let f = tmp.path().join("draw.toml");
    pbem().arg("form").arg(&g).args(["--role", "union", "-o"]).arg(&f).assert().success();
    std::fs::write(&f, with("draw = true")(std::fs::read_to_string(&f).unwrap())).unwrap();
    pbem().arg("sign").arg("--key").arg(tmp.path().join("union")).arg(&f).assert().success();
    pbem().arg("submit").arg(&g).arg(&f).args(["--now", "2026-07-02T12:30:00Z"]).assert().failure()
        .stderr(predicate::str::contains("orders.draw: a game of one side cannot be drawn"));
    let out = resign_in(&g, "union", "2026-07-02T13:00:00Z");
    assert!(out.contains("game over: union resigned: the game is lost."), "{out}");
    audit_passes(&g);
    if let Some((ok, out)) = python(&g) {
        assert!(ok, "{out}");
    }
}

/// A table where union resigned and the run died after the receipt, before the end record
/// (its files never written).
fn resigned_and_crashed() -> Table {
    let t = Table::new();
    let f = t.order("union", "resign", None, &only("resign = true\n"));
    t.submit(&f, "2026-07-01T13:00:00Z").success();
    let g = t.game();
    for p in ["records/000001.json", "records/000001.json.sig", "states/000001.json"] {
        std::fs::remove_file(g.join(p)).unwrap();
    }
    std::fs::remove_dir_all(g.join("reports/000001")).unwrap();
    t
}

#[test]
fn an_end_whose_record_a_crash_lost_is_written_by_the_next_adjudication() {
    let t = resigned_and_crashed();
    let g = t.game();
    // Past the deadline: the step is due, but the resignation ends the game instead of an NMR.
    let out = t.run(&["adjudicate", "--now", "2026-07-05T12:00:00Z"]);
    assert!(out.contains("game over") && !out.contains("resolved step"), "{out}");
    assert_eq!(t.record(1)["control"]["action"], "resign");
    audit_passes(&g);
}

#[test]
fn a_host_control_after_a_resignation_a_crash_left_unrecorded_writes_the_end_first() {
    // tester15 T15-1: a seat change in between made the resignation no longer count, and its
    // resign-only order then stood as the seat's orders, so no adjudication could resolve the
    // step. tester14 T14a-6: a host control in that window did not finish the end first. Every
    // control (seat, pause, deadline, abandon) now writes the end and is refused: the game is over.
    // tester17 T17-9: `status` says so before any run writes the end.
    let status = resigned_and_crashed().run(&["status"]);
    assert!(status.contains("game over: union resigned: confederate wins. (the players' accepted orders ended it; the next submit, adjudicate or host control writes its record)"), "{status}");
    for control in [&["seat", "--role", "union", "--email", "hancock@example.org", "--reason", "meade left"][..], &["pause", "--reason", "away"], &["deadline", "--extend", "1d"], &["end", "--abandon", "--reason", "host"]] {
        let t = resigned_and_crashed();
        let out = pbem().arg(control[0]).arg(t.game()).args(&control[1..]).args(["--now", "2026-07-01T14:00:00Z"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains("game g1 is over: union resigned: confederate wins. (the players' accepted orders ended it; its record 1"), "{control:?}: {err}");
        assert_eq!(t.record(1)["control"]["action"], "resign", "{control:?}");
        assert!(!t.game().join("records/000002.json").exists(), "{control:?}: nothing after the end");
        audit_passes(&t.game());
    }
}

#[test]
fn a_draw_record_whose_quoted_receipt_belies_its_nonce_fails_the_audit() {
    // tester15 T15-2: the receipts of orders a draw record quotes were not checked for their
    // nonce flag (those of resolved steps were).
    let t = Table::new();
    let u = t.order("union", "u", None, &with("draw = true"));
    t.submit(&u, "2026-07-01T12:20:00Z").success();
    let c = t.order("confederate", "c", None, &with("draw = true"));
    t.submit(&c, "2026-07-01T12:30:00Z").success().stdout(predicate::str::contains("game over: Drawn"));
    let rp = t.game().join("receipts/000001/union-1.toml");
    let text = std::fs::read_to_string(&rp).unwrap();
    assert!(text.contains("\nnonce = true\n"), "{text}");
    host_rewrites(&t.game(), &rp, &text.replacen("\nnonce = true\n", "\nnonce = false\n", 1), "pbem-receipt");
    let says = predicate::str::contains("union-1.toml:").and(predicate::str::contains("nonce: says false, but the order it receipts has a nonce"));
    both_verifiers_fail(&t.game(), says, "nonce: says false");
}

#[test]
fn a_draw_on_an_offer_a_seat_change_withdrew_fails_both_verifiers() {
    // tester15 T15-4: a host could quote the earlier holder's offer in a draw record; the audit
    // checked it only against the key in force at its receipt. A game that carries its report
    // wording (`game.toml` `wording`) was made by a version that counts only the present key's
    // offers, so the audit holds its draws to that.
    let t = Table::new();
    let u1 = t.order("union", "u1", None, &with("draw = true"));
    t.submit(&u1, "2026-07-01T12:20:00Z").success();
    keygen(t.path(), "hancock");
    let key = t.path().join("hancock.pub");
    t.run(&["seat", "--role", "union", "--email", "hancock@example.org", "--key", key.to_str().unwrap(), "--reason", "meade left", "--now", "2026-07-01T12:30:00Z"]);
    let c1 = t.order("confederate", "c1", None, &with("draw = true"));
    t.submit(&c1, "2026-07-01T12:40:00Z").success();
    let u2 = t.order("union", "u2", Some(&t.path().join("hancock")), &with("draw = true"));
    t.submit(&u2, "2026-07-01T12:50:00Z").success().stdout(predicate::str::contains("game over: Drawn"));
    // The host drops the new holder's order and quotes the old one in the draw record instead.
    let json = |f: &str| serde_json::to_string(&std::fs::read_to_string(t.game().join("host/sealed/000001").join(f)).unwrap()).unwrap();
    let (new_text, new_sig, old_text, old_sig) = (json("union-2.txt"), json("union-2.txt.sig"), json("union-1.txt"), json("union-1.txt.sig"));
    for f in ["receipts/000001/union-2.toml", "receipts/000001/union-2.toml.sig", "host/sealed/000001/union-2.txt", "host/sealed/000001/union-2.txt.sig"] {
        std::fs::remove_file(t.game().join(f)).unwrap();
    }
    let rp = t.game().join("records").join("000002.json");
    let text = std::fs::read_to_string(&rp).unwrap();
    assert_eq!(text.matches("\"seq\": 2,").count(), 1, "{text}");
    let forged = text.replace(&new_text, &old_text).replace(&new_sig, &old_sig).replace("\"seq\": 2,", "\"seq\": 1,");
    assert!(forged.contains(&old_text) && forged.contains(&old_sig), "{forged}");
    host_rewrites(&t.game(), &rp, &forged, "pbem-record");
    both_verifiers_fail(&t.game(), predicate::str::contains("control.orders[1].signature: a draw offer signed with a key seat union no longer held"), "control.orders[1]");
}

#[test]
fn an_end_quoting_an_order_a_step_used_counts_it_once_and_a_held_receipt_is_told_of_the_end() {
    // tester17 T17-6: the audit counted union's step-1 offer twice (used, and quoted by the draw);
    // `--receipt` on it did not say the end quotes it.
    let t = Table::new();
    let u1 = t.order("union", "u1", None, &with("draw = true"));
    t.submit(&u1, "2026-07-01T12:20:00Z").success();
    let c1 = t.order("confederate", "c1", None, &with(""));
    t.submit(&c1, "2026-07-01T12:30:00Z").success();
    assert!(t.run(&["adjudicate", "--now", "2026-07-01T13:00:00Z"]).contains("resolved step(s) 1"));
    let c2 = t.order("confederate", "c2", None, &with("draw = true"));
    t.submit(&c2, "2026-07-01T13:10:00Z").success().stdout(predicate::str::contains("game over: Drawn"));
    let out = t.run(&["audit", "--receipt", t.game().join("receipts/000001/union-1.toml").to_str().unwrap()]);
    assert!(out.contains("audit passed: 3 records, 2 signed orders (1 more quoted by the end), 0 NMR"), "{out}");
    assert!(out.contains("union-1.toml: receipt 1 of union in step 1 is in the game; record 1 used receipt 1, which record 2 quotes in ending the game"), "{out}");
}

#[test]
fn a_held_receipt_is_warned_of_a_resignation_signed_under_a_key_the_host_put_in() {
    // tester17 T17-5: the host changed union's key mid-step and "resigned" for the seat; the
    // player's receipt of their own order got no warning (a used order would have given one).
    let t = Table::new();
    let u1 = t.order("union", "u1", None, &with(""));
    t.submit(&u1, "2026-07-01T12:20:00Z").success();
    keygen(t.path(), "hancock");
    let key = t.path().join("hancock.pub");
    t.run(&["seat", "--role", "union", "--email", "hancock@example.org", "--key", key.to_str().unwrap(), "--reason", "x", "--now", "2026-07-01T12:30:00Z"]);
    let u2 = t.order("union", "u2", Some(&t.path().join("hancock")), &only("resign = true\n"));
    t.submit(&u2, "2026-07-01T12:40:00Z").success().stdout(predicate::str::contains("game over"));
    let out = t.run(&["audit", "--receipt", t.game().join("receipts/000001/union-1.toml").to_str().unwrap()]);
    assert!(out.contains("warning: ") && out.contains("record 2 ended the game quoting receipt 2 of union in step 1") && out.contains("the host changed union's key while step 1 was open"), "{out}");
}

/// The site after a host control and a resignation: each step's page shows the receipts of the
/// step it resolves (not of the step numbered as the record), a control's page and line say what
/// the host did, and the last page quotes the signed order that ended the game (tester22 T22b-1,
/// T22b-2, T22b-3).
#[test]
fn the_site_follows_steps_not_record_numbers_and_tells_controls_and_ends() {
    let t = Table::new();
    t.run(&["deadline", "--extend", "24h", "--reason", "holidays", "--now", "2026-07-01T12:10:00Z"]);
    let c = t.order("confederate", "c", None, &with(""));
    let u = t.order("union", "u", None, &with(""));
    t.submit(&c, "2026-07-01T12:30:00Z").success();
    t.submit(&u, "2026-07-01T12:31:00Z").success();
    t.run(&["adjudicate", "--now", "2026-07-01T12:32:00Z"]);
    assert!(t.record(2)["resolution"]["step"] == 1, "record 2 resolves step 1");
    let f = t.order("union", "resign", None, &only("resign = true\n"));
    t.submit(&f, "2026-07-01T13:00:00Z").success();
    let site = t.path().join("site");
    pbem().arg("publish").arg(t.game()).arg("--out").arg(&site).assert().success();
    let page = |n: u64| std::fs::read_to_string(site.join(format!("g1/step-{n}.html"))).unwrap();
    let resolved = page(2);
    assert!(resolved.contains("<h1>Gettysburg Campaign: Step 1</h1>") && resolved.contains("<h2>Receipts of step 1</h2>"), "{resolved}");
    assert!(resolved.contains("<tr><td>confederate</td><td>1</td>") && resolved.contains("<tr><td>union</td><td>1</td>"), "{resolved}");
    let control = page(1);
    assert!(control.contains("Record 1: the host") && control.contains("the host moved the deadline to") && control.contains("(holidays)"), "{control}");
    let index = std::fs::read_to_string(site.join("g1/index.html")).unwrap();
    assert!(index.contains("the host moved the deadline to") && index.matches("the game is set up").count() == 1, "{index}");
    let end = page(3);
    assert!(end.contains("union's signed order (step 2, receipt 1)") && end.contains("resign = true") && end.contains("BEGIN SSH SIGNATURE"), "{end}");
}

/// tester t17c-1: an offer in orders the game withholds past their step (a Gettysburg round that
/// goes on with a move question, §8) is told to every seat by the record that reveals them (report
/// wording 3), unless the seat has sent later orders since. Union offers a draw with every order;
/// the first record that reveals orders of union's tells the confederate of the newest offer. The
/// dice (the players' nonces) decide whether step 1 asks a move question or the initiative ties
/// (§7: its orders are withheld to the game's end), and whether union sends orders again before
/// the reveal: the game is played again on a new table until an offer still stands then.
#[test]
fn a_draw_offer_in_withheld_orders_is_told_when_they_are_revealed() {
    let asks = |t: &Table, n: u64| -> Vec<String> { t.record(n)["opening"]["asks"].as_array().into_iter().flatten().map(|a| a["role"].as_str().unwrap().to_string()).collect() };
    for _ in 0..8 {
        let t = Table::new();
        let u1 = t.order("union", "u1", None, &only("cards = [\"Reynolds\", \"Hancock\"]\ndraw = true\n"));
        t.submit(&u1, "2026-07-01T12:10:00Z").success();
        let c1 = t.order("confederate", "c1", None, &only("cards = [\"Longstreet\"]\n"));
        t.submit(&c1, "2026-07-01T12:20:00Z").success();
        t.run(&["adjudicate", "--now", "2026-07-01T13:00:00Z"]);
        if asks(&t, 1).len() != 1 {
            continue;
        }
        // The round goes on: each question answered with the form as it is, union's offering a draw.
        let mut n = 1;
        while t.record(n)["reveals"].as_array().is_none_or(|r| r.is_empty()) {
            for role in asks(&t, n) {
                let f = t.order(&role, &format!("s{n}-{role}"), None, &|s| if role == "union" { with("draw = true")(s) } else { s });
                t.submit(&f, &format!("2026-07-0{}T12:00:00Z", n + 1)).success();
            }
            t.run(&["adjudicate", "--now", &format!("2026-07-0{}T13:00:00Z", n + 1)]);
            n += 1;
            assert!(n < 8, "no record revealed the withheld orders");
        }
        let newest = t.record(n)["reveals"].as_array().unwrap().iter().filter(|r| r["role"] == "union").filter_map(|r| r["step"].as_u64()).max();
        let sent_since = t.record(n)["resolution"]["orders"].as_array().into_iter().flatten().any(|o| o["role"] == "union" && o["seq"].is_u64());
        let report = t.run(&["report", "--role", "confederate", "--record", &n.to_string()]);
        let told = report.find("DRAW OFFERED WITH ORDERS REVEALED NOW\n").map(|at| report[at..].lines().nth(1).unwrap_or_default().to_string());
        let want = newest.filter(|_| !sent_since).map(|s| format!("  union, with its orders of step {s}"));
        assert_eq!(told, want, "{report}");
        audit_passes(&t.game());
        // Until a table where the offer still stands when it is revealed.
        if want.is_some() {
            return;
        }
    }
    panic!("on none of eight tables did an offer still stand when its orders were revealed");
}
