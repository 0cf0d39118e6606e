//! What `pbem audit` says about a tampered game: one thing each, the file named once (with the
//! line where it is known), and for a report or state that differs from its replay, the first
//! differing line. Whole lines of the real binary's output are compared.

#[path = "mail/common.rs"]
mod common;

use std::path::{Path, PathBuf};

use assert_cmd::cargo::cargo_bin_cmd;
use common::*;

fn pbem() -> assert_cmd::Command {
    cargo_bin_cmd!("pbem")
}

/// `role`'s unedited form (nonce number `n`) signed and submitted to `game` through the binary
/// at 2026-07-01T13:00Z (the file written in `tmp`); returns the signed text.
fn submit(tmp: &Path, game: &Path, role: &str, n: u32) -> String {
    let text = form(game, role, n, &|f| f);
    let file = tmp.join(format!("{role}-{n}.toml"));
    std::fs::write(&file, format!("{text}{}", sign(role, &text))).unwrap();
    pbem().arg("submit").arg(game).arg(&file).args(["--now", "2026-07-01T13:00:00Z"]).assert().success();
    text
}

/// Game g1 with step 1 resolved (both seats' orders submitted through the binary).
fn game_with_a_step(tmp: &Path) -> PathBuf {
    let game = new_game(&tmp.join("turns"), "g1", 72);
    for role in ["union", "confederate"] {
        submit(tmp, &game, role, 1);
    }
    pbem().arg("adjudicate").arg(&game).args(["--now", "2026-07-01T13:05:00Z"]).assert().success();
    pbem().arg("audit").arg(&game).assert().success();
    game
}

/// The one line the failing audit prints.
fn audit_error(game: &Path) -> String {
    let out = pbem().arg("audit").arg(game).assert().code(1);
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    let lines: Vec<&str> = err.lines().filter(|l| !l.starts_with("warning:")).collect();
    assert_eq!(lines.len(), 1, "{err}");
    lines[0].to_string()
}

fn edit(path: &Path, f: impl Fn(String) -> String) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    std::fs::write(path, f(text.clone())).unwrap();
    text
}

#[test]
fn a_report_or_state_that_differs_from_its_replay_shows_the_first_differing_line() {
    let tmp = tempfile::tempdir().unwrap();
    let game = game_with_a_step(tmp.path());
    let rp = game.join("reports/000001/union.txt");
    let text = edit(&rp, |t| t.replacen("WHAT HAPPENED IN STEP 1", "WHAT HAPPENED IN STEP 7", 1));
    let line = text.lines().position(|l| l == "WHAT HAPPENED IN STEP 1").unwrap() + 1;
    assert_eq!(
        audit_error(&game),
        format!("pbem: audit failed: {}:{line}: the report differs from the replay: the file has \"WHAT HAPPENED IN STEP 7\", the replay has \"WHAT HAPPENED IN STEP 1\"", rp.display())
    );
    // Cut short: the file ends where the replay goes on.
    let kept: Vec<&str> = text.lines().collect();
    std::fs::write(&rp, format!("{}\n", kept[..kept.len() - 2].join("\n"))).unwrap();
    assert_eq!(
        audit_error(&game),
        format!("pbem: audit failed: {}:{}: the report differs from the replay: the file ends before it, the replay has {:?}", rp.display(), kept.len() - 1, kept[kept.len() - 2])
    );
    std::fs::write(&rp, &text).unwrap();
    let sp = game.join("states/000001.json");
    let state = edit(&sp, |t| t.replacen("\"round\": 1,", "\"round\": 4,", 1));
    let line = state.lines().position(|l| l.trim() == "\"round\": 1,").unwrap() + 1;
    assert_eq!(
        audit_error(&game),
        format!("pbem: audit failed: {}:{line}: the state differs from the replay: the file has \"  \\\"round\\\": 4,\", the replay has \"  \\\"round\\\": 1,\"", sp.display())
    );
}

#[test]
fn a_missing_signature_or_an_edited_setup_is_named_once() {
    let tmp = tempfile::tempdir().unwrap();
    let game = game_with_a_step(tmp.path());
    let sig = game.join("records/000001.json.sig");
    let saved = std::fs::read(&sig).unwrap();
    std::fs::remove_file(&sig).unwrap();
    assert_eq!(audit_error(&game), format!("pbem: audit failed: {}: missing", sig.display()));
    std::fs::write(&sig, saved).unwrap();
    let rsig = game.join("receipts/000001/union-1.toml.sig");
    std::fs::remove_file(&rsig).unwrap();
    assert_eq!(audit_error(&game), format!("pbem: audit failed: {}: missing", rsig.display()));

    // An edited game.toml is reported by record 0, which pins the setup, not by a receipt.
    let tmp = tempfile::tempdir().unwrap();
    let game = game_with_a_step(tmp.path());
    edit(&game.join("game.toml"), |t| t.replace("meade@example.org", "someone@example.org"));
    let r0 = game.join("records/000000.json");
    let line = std::fs::read_to_string(&r0).unwrap().lines().position(|l| l.trim_start().starts_with("\"setup\": ")).unwrap() + 1;
    assert_eq!(
        audit_error(&game),
        format!("pbem: audit failed: {}:{line}: setup: is not the hash of game.toml and scenario.toml as they are now: one of them was edited since the game began", r0.display())
    );
}

#[test]
fn a_receipt_that_is_not_toml_is_named_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let game = game_with_a_step(tmp.path());
    let rp = game.join("receipts/000001/union-1.toml");
    edit(&rp, |t| t.replacen("\nseq = ", "\nseq ", 1));
    let line = std::fs::read_to_string(&rp).unwrap().lines().position(|l| l.starts_with("seq ")).unwrap() + 1;
    let err = audit_error(&game);
    assert!(err.starts_with(&format!("pbem: audit failed: {}:{line}: not a receipt: ", rp.display())), "{err}");
    assert_eq!(err.matches(&rp.display().to_string()).count(), 1, "{err}");
}

/// Re-signs a record with the host's key, as a host rewriting history would.
fn resign(game: &Path, file: &Path) {
    std::fs::remove_file(format!("{}.sig", file.display())).unwrap();
    let out = std::process::Command::new("ssh-keygen").args(["-Y", "sign", "-n", "pbem-record", "-f"]).arg(game.join("host/host_key")).arg(file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_rewritten_record_is_named_by_the_one_thing_that_differs() {
    let tmp = tempfile::tempdir().unwrap();
    let game = game_with_a_step(tmp.path());
    let r1 = game.join("records/000001.json");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&r1).unwrap()).unwrap();
    let events = v["resolution"]["events"].as_array().unwrap();
    let i = events.iter().position(|e| e.get("roll").is_none()).unwrap();
    let was = events[i]["text"].as_str().unwrap().to_string();
    let _ = edit(&r1, |t| t.replacen(&format!("\"text\": {}", serde_json::to_string(&was).unwrap()), "\"text\": \"Nothing happened.\"", 1));
    resign(&game, &r1);
    assert_eq!(
        audit_error(&game),
        format!("pbem: audit failed: {}: resolution.events[{i}]: the record has \"Nothing happened.\", the replay of step 1 has {was:?}", r1.display())
    );
}

#[test]
fn a_receipt_whose_nonce_flag_belies_its_order_is_named_at_that_line() {
    // tester14 T14b-2: the audit passed a receipt re-signed by the host to say the order held no
    // nonce (or one it did not hold); the Python verifier failed it.
    let tmp = tempfile::tempdir().unwrap();
    let game = game_with_a_step(tmp.path());
    let rp = game.join("receipts/000001/union-1.toml");
    let was = edit(&rp, |t| t.replacen("\nnonce = true\n", "\nnonce = false\n", 1));
    assert!(was.contains("\nnonce = true\n"), "{was}");
    std::fs::remove_file(format!("{}.sig", rp.display())).unwrap();
    let out = std::process::Command::new("ssh-keygen").args(["-Y", "sign", "-n", "pbem-receipt", "-f"]).arg(game.join("host/host_key")).arg(&rp).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let line = std::fs::read_to_string(&rp).unwrap().lines().position(|l| l.starts_with("nonce = ")).unwrap() + 1;
    assert_eq!(audit_error(&game), format!("pbem: audit failed: {}:{line}: nonce: says false, but the order it receipts has a nonce", rp.display()));
}

#[test]
fn a_record_out_of_canonical_form_or_with_another_seed_is_named_at_the_line() {
    // tester14 T14b-4: these failures named the file alone.
    let tmp = tempfile::tempdir().unwrap();
    let game = game_with_a_step(tmp.path());
    let r1 = game.join("records/000001.json");
    let was = edit(&r1, |t| t.replacen("\n  \"index\": 1,\n", "\n  \"index\":  1,\n", 1));
    resign(&game, &r1);
    let line = was.lines().position(|l| l.starts_with("  \"index\": ")).unwrap() + 1;
    assert_eq!(audit_error(&game), format!("pbem: audit failed: {}:{line}: not in canonical form (pretty-printed JSON, keys in pbem's order, a final newline)", r1.display()));
    std::fs::write(&r1, &was).unwrap();
    let seed = serde_json::from_str::<serde_json::Value>(&was).unwrap()["resolution"]["seed"].as_str().unwrap().to_string();
    edit(&r1, |t| t.replacen(&seed, &"0".repeat(64), 1));
    resign(&game, &r1);
    let line = was.lines().position(|l| l.contains(&format!("\"seed\": \"{seed}\""))).unwrap() + 1;
    assert_eq!(audit_error(&game), format!("pbem: audit failed: {}:{line}: resolution.seed: the step seed of step 1 is not derived from the host seed and nonces", r1.display()));
}

#[test]
fn a_lost_or_edited_sealed_order_of_the_open_step_fails_the_audit_and_stops_adjudicate_clearly() {
    // tester14 T14a-7: a lost sealed copy passed the audit, then `adjudicate` failed with a bare
    // "No such file or directory"; an edited one would have been adjudicated.
    let tmp = tempfile::tempdir().unwrap();
    let game = new_game(&tmp.path().join("turns"), "g1", 72);
    submit(tmp.path(), &game, "union", 1);
    pbem().arg("audit").arg(&game).assert().success();
    let sealed = game.join("host/sealed/000001/union-1.txt");
    let kept = std::fs::read(&sealed).unwrap();
    let advice = "this is the host's sealed copy of union's order for step 1 (receipt 1, commitment";
    edit(&sealed, |t| t.replacen("[orders]", "[orders]\n# edited", 1));
    let err = audit_error(&game);
    assert!(err.starts_with(&format!("pbem: audit failed: {}: is not the order its receipt was issued for", sealed.display())), "{err}");
    assert!(err.contains(advice) && err.contains("Restore the game's host/ folder from a backup"), "{err}");
    std::fs::remove_file(&sealed).unwrap();
    let err = audit_error(&game);
    assert!(err.starts_with(&format!("pbem: audit failed: {}: missing: {advice}", sealed.display())), "{err}");
    // Past the deadline, adjudicate names the file and what to do, and writes nothing.
    let out = pbem().arg("adjudicate").arg(&game).args(["--now", "2026-07-10T13:00:00Z"]).assert().code(1);
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains(&format!("{}: missing: {advice}", sealed.display())) && err.contains("ask union to send the order again"), "{err}");
    assert!(!game.join("records/000001.json").exists());
    // The copy restored from a backup: the step resolves and the game audits.
    std::fs::write(&sealed, kept).unwrap();
    pbem().arg("adjudicate").arg(&game).args(["--now", "2026-07-10T13:00:00Z"]).assert().success();
    pbem().arg("audit").arg(&game).assert().success();
}

#[test]
fn a_game_in_a_newer_report_wording_is_refused_naming_the_line() {
    // `game.toml`'s `wording` (report::WORDING): a game whose reports a newer pbem words cannot
    // be audited or continued by this one without failing on its reports.
    let tmp = tempfile::tempdir().unwrap();
    let game = new_game(&tmp.path().join("turns"), "g1", 72);
    let gt = game.join("game.toml");
    let was = edit(&gt, |t| t.replacen(&format!("\nwording = {}\n", pbem::report::WORDING), "\nwording = 99\n", 1));
    let line = was.lines().position(|l| l.starts_with("wording = ")).unwrap() + 1;
    let want = format!("{}:{line}: wording: 99: this game's reports use report wording 99, which this pbem", gt.display());
    for cmd in ["audit", "status", "adjudicate"] {
        let out = pbem().arg(cmd).arg(&game).assert().failure();
        let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
        assert!(err.contains(&want) && err.contains("continue the game with a newer pbem"), "{cmd}: {err}");
    }
    // A value that is no wording names its field too (tester17 T17-8).
    std::fs::write(&gt, was.replacen(&format!("\nwording = {}\n", pbem::report::WORDING), "\nwording = -1\n", 1)).unwrap();
    let out = pbem().arg("status").arg(&game).assert().failure();
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains(&format!("{}:{line}: wording: ", gt.display())), "{err}");
}

#[test]
fn orders_that_differ_from_their_text_and_a_receipt_given_twice_are_named_at_their_line() {
    // tester14 T14b-4: these failures named the file alone. Step 1's orders are withheld: the
    // host's copy (host/withheld/) is what the audit joins and checks.
    let tmp = tempfile::tempdir().unwrap();
    let game = game_with_a_step(tmp.path());
    let held = game.join("host/withheld/000001-union.json");
    let text = std::fs::read_to_string(&held).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let role = lines.iter().position(|l| l.trim() == "\"role\": \"union\",").unwrap();
    // The first string value in the parsed orders, one letter longer (still the same JSON shape).
    let orders = lines.iter().position(|l| l.trim() == "\"orders\": {").unwrap();
    let value = orders + lines[orders..].iter().position(|l| l.trim_end_matches(',').ends_with('"')).unwrap();
    let mut changed: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    let at = changed[value].rfind('"').unwrap();
    changed[value].insert(at, 'x');
    std::fs::write(&held, changed.join("\n") + "\n").unwrap();
    assert_eq!(audit_error(&game), format!("pbem: audit failed: {}:{}: orders of union differ from the signed text", held.display(), role + 1));
    std::fs::write(&held, &text).unwrap();
    pbem().arg("audit").arg(&game).assert().success();
    // Receipt 1 of union given again as receipt 2 (re-signed by the host).
    let (rp1, rp2) = (game.join("receipts/000001/union-1.toml"), game.join("receipts/000001/union-2.toml"));
    let second = std::fs::read_to_string(&rp1).unwrap().replacen("\nseq = 1\n", "\nseq = 2\n", 1);
    std::fs::write(&rp2, &second).unwrap();
    let out = std::process::Command::new("ssh-keygen").args(["-Y", "sign", "-n", "pbem-receipt", "-f"]).arg(game.join("host/host_key")).arg(&rp2).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let line = second.lines().position(|l| l.starts_with("commitment = ")).unwrap() + 1;
    assert_eq!(audit_error(&game), format!("pbem: audit failed: {}:{line}: commitment: has the commitment of receipt 1: the same order accepted twice (a superseded order brought back?)", rp2.display()));
}

#[test]
fn a_superseded_sealed_order_edited_fails_the_audit_and_one_lost_does_not() {
    // tester14 T14b-8: the host's copies of superseded orders were never checked. tester17 T17-2:
    // one that is gone is read by nothing (a player who sent an order again to replace a lost
    // copy must leave a game that audits), so only a copy that is there is checked.
    let tmp = tempfile::tempdir().unwrap();
    let game = new_game(&tmp.path().join("turns"), "g1", 72);
    for (role, n) in [("union", 1), ("union", 2), ("confederate", 1)] {
        submit(tmp.path(), &game, role, n);
    }
    pbem().arg("adjudicate").arg(&game).args(["--now", "2026-07-01T13:05:00Z"]).assert().success();
    pbem().arg("audit").arg(&game).assert().success();
    let sealed = game.join("host/sealed/000001/union-1.txt");
    let kept = edit(&sealed, |t| t.replacen("[orders]", "[orders]\n# edited", 1));
    let err = audit_error(&game);
    assert!(err.starts_with(&format!("pbem: audit failed: {}: is not the order its receipt was issued for (its commitment differs: edited or damaged): this is the host's sealed copy of union's order for step 1 (receipt 1, commitment", sealed.display())), "{err}");
    assert!(err.ends_with("Restore the game's host/ folder from a backup (nothing reads this copy any more)"), "{err}");
    std::fs::write(&sealed, &kept).unwrap();
    let sig = game.join("host/sealed/000001/union-1.txt.sig");
    let signature = std::fs::read_to_string(&sig).unwrap();
    std::fs::write(&sig, sign("confederate", &String::from_utf8(kept.into_bytes()).unwrap())).unwrap();
    let err = audit_error(&game);
    assert!(err.starts_with(&format!("pbem: audit failed: {}: is not union's signature of the order", sig.display())), "{err}");
    std::fs::write(&sig, signature).unwrap();
    std::fs::remove_file(&sealed).unwrap();
    pbem().arg("audit").arg(&game).assert().success();
}

#[test]
fn a_damaged_sealed_signature_of_the_open_step_is_never_published_and_a_resent_order_mends_a_lost_copy() {
    // tester17 T17-1: a replaced `.sig` passed the audit, was published by adjudicate, and the
    // game failed its audit for good. T17-2: the advice given (send the order again) must lead
    // to a game that audits.
    let tmp = tempfile::tempdir().unwrap();
    let game = new_game(&tmp.path().join("turns"), "g1", 72);
    let text = submit(tmp.path(), &game, "union", 1);
    submit(tmp.path(), &game, "confederate", 1);
    let sig = game.join("host/sealed/000001/union-1.txt.sig");
    std::fs::write(&sig, sign("confederate", &text)).unwrap();
    let err = audit_error(&game);
    assert!(err.starts_with(&format!("pbem: audit failed: {}: is not union's signature of the order", sig.display())) && err.contains("ask union to send the order again"), "{err}");
    let out = pbem().arg("adjudicate").arg(&game).args(["--now", "2026-07-01T13:05:00Z"]).assert().code(1);
    assert!(String::from_utf8_lossy(&out.get_output().stderr).contains("is not union's signature of the order"));
    assert!(!game.join("records/000001.json").exists(), "nothing published");
    // The copy lost instead; union sends the order again, as the message says: the step resolves
    // and the game audits.
    std::fs::remove_file(game.join("host/sealed/000001/union-1.txt")).unwrap();
    std::fs::remove_file(&sig).unwrap();
    audit_error(&game);
    submit(tmp.path(), &game, "union", 2);
    pbem().arg("audit").arg(&game).assert().success();
    pbem().arg("adjudicate").arg(&game).args(["--now", "2026-07-01T13:05:00Z"]).assert().success();
    pbem().arg("audit").arg(&game).assert().success();
}

#[test]
fn a_damaged_withheld_copy_is_not_revealed() {
    // tester17 T17-4: an edited host/withheld copy failed the audit, but the next record revealed
    // it anyway and the game failed its audit for good.
    let tmp = tempfile::tempdir().unwrap();
    let game = game_with_a_step(tmp.path());
    let held = game.join("host/withheld/000001-union.json");
    let kept = std::fs::read_to_string(&held).unwrap();
    let sig = serde_json::from_str::<serde_json::Value>(&kept).unwrap()["signature"].as_str().unwrap().to_string();
    let other = sign("confederate", "something else\n");
    std::fs::write(&held, kept.replacen(&serde_json::to_string(&sig).unwrap(), &serde_json::to_string(&other).unwrap(), 1)).unwrap();
    let out = pbem().args(["end", "--abandon", "--reason", "closing"]).arg(&game).args(["--now", "2026-07-01T14:00:00Z"]).assert().code(1);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains(&format!("{}: signature: is not the seat's signature of the text: this is the host's copy of union's withheld order for step 1", held.display())) && err.contains("nothing was published"), "{err}");
    assert!(!game.join("records/000002.json").exists());
    // A copy whose step or role was edited fails the audit and is not revealed either
    // (tester20 T20b-2: both passed the audit, and the record revealing it failed it for good).
    for (from, to, says) in [("\"step\": 1", "\"step\": 0", "holds the orders of union in step 0, not those of union in step 1"), ("\"role\": \"union\"", "\"role\": \"confederate\"", "holds the orders of confederate in step 1, not those of union in step 1")] {
        assert!(kept.contains(from), "{kept}");
        std::fs::write(&held, kept.replacen(from, to, 1)).unwrap();
        let err = audit_error(&game);
        assert!(err.contains(&format!("{}: {says}", held.display())), "{err}");
        let out = pbem().args(["end", "--abandon", "--reason", "closing"]).arg(&game).args(["--now", "2026-07-01T14:00:00Z"]).assert().code(1);
        let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(err.contains(says) && err.contains("nothing was published"), "{err}");
        assert!(!game.join("records/000002.json").exists());
    }
    std::fs::write(&held, &kept).unwrap();
    pbem().args(["end", "--abandon", "--reason", "closing"]).arg(&game).args(["--now", "2026-07-01T14:00:00Z"]).assert().success();
    pbem().arg("audit").arg(&game).assert().success();
}

/// The open step's host seed is checked on the host's copy (tester t18b-6: an overwritten seed
/// file passed the audit, and the game could not resolve its step).
#[test]
fn the_open_steps_host_seed_is_checked_against_its_commitment() {
    let tmp = tempfile::tempdir().unwrap();
    let game = game_with_a_step(tmp.path());
    let seed = game.join("host/seeds/000002.hex");
    let good = std::fs::read(&seed).unwrap();
    std::fs::write(&seed, format!("{}\n", "0".repeat(64))).unwrap();
    assert_eq!(audit_error(&game), format!("pbem: audit failed: {}: host seed does not match the published commitment", seed.display()));
    std::fs::write(&seed, "nonsense\n").unwrap();
    assert_eq!(audit_error(&game), format!("pbem: audit failed: {}: not 64 hex digits", seed.display()));
    std::fs::remove_file(&seed).unwrap();
    assert!(audit_error(&game).contains("000002.hex"), "a missing seed is named");
    std::fs::write(&seed, good).unwrap();
    pbem().arg("audit").arg(&game).assert().success();
}

/// A receipt given to `audit --receipt`, or its signature, is read only up to an order file's
/// limit (tester t18b-4: a 5 GB file was read whole).
#[test]
fn a_held_receipt_too_large_is_refused_unread() {
    let tmp = tempfile::tempdir().unwrap();
    let game = game_with_a_step(tmp.path());
    let kept = tmp.path().join("kept.toml");
    std::fs::copy(game.join("receipts/000001/union-1.toml"), &kept).unwrap();
    std::fs::copy(game.join("receipts/000001/union-1.toml.sig"), tmp.path().join("kept.toml.sig")).unwrap();
    pbem().arg("audit").arg(&game).arg("--receipt").arg(&kept).assert().success();
    for file in [kept.clone(), tmp.path().join("kept.toml.sig")] {
        let saved = std::fs::read(&file).unwrap();
        std::fs::OpenOptions::new().write(true).open(&file).unwrap().set_len(5 << 30).unwrap();
        let out = pbem().arg("audit").arg(&game).arg("--receipt").arg(&kept).assert().code(1);
        let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert!(err.contains(&file.display().to_string()) && err.contains("5368709120 bytes is larger than") && err.contains("not read"), "{err}");
        std::fs::write(&file, saved).unwrap();
    }
}
