//! The second verifier, `verify/pbem_verify.py` (Python, from SPEC.md alone), on the example game
//! (passes) and on tampered public copies of it: one per tamper class the Rust audit catches
//! without replay, each failing with the file (and field) named; on games whose seat keys are
//! RSA or ECDSA; and on files that are not part of a game. Skipped, with the reason printed,
//! only where `python3` is missing; `ssh-keygen` is required as by `tests/ssh_interop.rs`.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use sha2::{Digest, Sha256};

const EXAMPLE: &str = "turns/demo-gettysburg-campaign-18630701";

/// True when `python3` runs (at least 3.11, for `tomllib`); otherwise prints why the tests skip.
fn have_python() -> bool {
    let ok = Command::new("python3").args(["-c", "import sys, tomllib; sys.exit(0)"]).output().is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: python3 (3.11 or later, with tomllib) is not installed, so verify/pbem_verify.py cannot run");
    }
    ok
}

fn verify(dir: &Path) -> Output {
    Command::new("python3").arg("verify/pbem_verify.py").arg(dir).output().expect("python3 runs")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// A public copy of the example game at its end (no `host/`, no `reports/`) in `tmp/g`, and its
/// host key (mode 0600, as ssh-keygen wants it) in `tmp/host_key` to re-sign what a test changes.
fn public_copy(tmp: &Path) -> PathBuf {
    let src = Path::new(EXAMPLE);
    let dir = tmp.join("g");
    for part in ["records", "receipts", "states"] {
        copy_tree(&src.join(part), &dir.join(part));
    }
    for f in ["game.toml", "scenario.toml"] {
        fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    host_key(tmp);
    dir
}

/// The example game's host key in `tmp/host_key` (mode 0600, as ssh-keygen wants it).
fn host_key(tmp: &Path) {
    let key = tmp.join("host_key");
    fs::copy(Path::new(EXAMPLE).join("host/host_key"), &key).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).unwrap();
    }
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        } else {
            fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// Replaces the first `from` in `dir/rel` with `to` (which must be there).
fn edit(dir: &Path, rel: &str, from: &str, to: &str) {
    let p = dir.join(rel);
    let t = fs::read_to_string(&p).unwrap();
    assert!(t.contains(from), "{rel} holds no {from:?}");
    fs::write(&p, t.replacen(from, to, 1)).unwrap();
}

/// Changes the first hex digit after the first `prefix` in `dir/rel` (a hash or seed field).
fn flip(dir: &Path, rel: &str, prefix: &str) {
    let p = dir.join(rel);
    let t = fs::read_to_string(&p).unwrap();
    let at = t.find(prefix).unwrap_or_else(|| panic!("{rel} holds no {prefix:?}")) + prefix.len();
    let c = if &t[at..at + 1] == "0" { "1" } else { "0" };
    fs::write(&p, format!("{}{c}{}", &t[..at], &t[at + 1..])).unwrap();
}

/// Re-signs `dir/rel` with the host key in namespace `ns`, as a host rewriting history would.
fn resign(tmp: &Path, dir: &Path, rel: &str, ns: &str) {
    let file = dir.join(rel);
    let sig = PathBuf::from(format!("{}.sig", file.display()));
    fs::remove_file(&sig).unwrap();
    let o = Command::new("ssh-keygen")
        .args(["-Y", "sign", "-n", ns, "-f"])
        .arg(tmp.join("host_key"))
        .arg(&file)
        .env_remove("SSH_AUTH_SOCK")
        .output()
        .expect("ssh-keygen must be installed (Debian package openssh-client)");
    assert!(o.status.success(), "ssh-keygen -Y sign {rel}: {}", text(&o));
}

fn sha(dir: &Path, rel: &str) -> String {
    Sha256::digest(fs::read(dir.join(rel)).unwrap()).iter().map(|b| format!("{b:02x}")).collect()
}

/// Re-signs record `n` after an edit and mends the chain after it: record `n + 1`'s `prev` and
/// the `record` of step `n + 1`'s receipts, each re-signed, so that only the edit itself is wrong.
fn resign_record_and_rechain(tmp: &Path, dir: &Path, n: u32, old_hash: &str) {
    resign(tmp, dir, &format!("records/{n:06}.json"), "pbem-record");
    let new_hash = sha(dir, &format!("records/{n:06}.json"));
    let next = format!("records/{:06}.json", n + 1);
    if dir.join(&next).exists() {
        edit(dir, &next, &format!("\"prev\": \"{old_hash}\""), &format!("\"prev\": \"{new_hash}\""));
        resign(tmp, dir, &next, "pbem-record");
    }
    let receipts = dir.join(format!("receipts/{:06}", n + 1));
    if receipts.is_dir() {
        for e in fs::read_dir(&receipts).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            if name.ends_with(".toml") {
                let rel = format!("receipts/{:06}/{name}", n + 1);
                edit(dir, &rel, &format!("record = \"{old_hash}\""), &format!("record = \"{new_hash}\""));
                resign(tmp, dir, &rel, "pbem-receipt");
            }
        }
    }
}

/// Asserts the verifier fails on `dir` with exit 1 naming `file` (relative to the game) and `why`.
fn assert_fails(dir: &Path, class: &str, file: &str, why: &str) {
    let o = verify(dir);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{class}: want exit 1, got {:?}: {out}", o.status.code());
    let named = format!("FAIL: {}: ", dir.join(file).display());
    assert!(out.starts_with(&named), "{class}: want the failure to name {file}, got: {out}");
    assert!(out.contains(why), "{class}: want {why:?} in: {out}");
}

#[test]
fn the_python_verifier_passes_the_example_game_and_its_own_vectors() {
    if !have_python() {
        return;
    }
    let o = Command::new("python3").args(["verify/pbem_verify.py", "--self-test"]).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let o = verify(Path::new(EXAMPLE));
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("15 records") && out.contains("24 signed orders") && out.contains("14 of 14 step seeds"), "{out}");
    assert!(out.contains("42 rolls and draws re-derived") && out.contains("all 15 match states/"), "{out}");
    // The outcome is the host's word, not re-derived: the summary must not pass it off as checked.
    assert!(out.contains("(winner: confederate; not replayed here)") && out.contains("the outcome and winner of a game played to its end (shown as the host signed them, not replayed)"), "{out}");
    // A public copy (no host/, no reports/) verifies the same, and leaves no file behind.
    let tmp = tempfile::tempdir().unwrap();
    let dir = public_copy(tmp.path());
    let o = verify_in(&dir, &tmp.path().join("tmp"));
    assert!(o.status.success(), "{}", text(&o));
}

/// One tamper: a name, what it does to a fresh public copy, and the file and words the failure names.
type Tamper = (&'static str, fn(&Path, &Path), &'static str, &'static str);

const LAST: &str = "records/000014.json";

fn tampers() -> Vec<Tamper> {
    vec![
        ("a record byte changed", |_, d| edit(d, "records/000012.json", "initiative", "inítiative"), "records/000012.json.sig", "signature does not verify"),
        ("a record changed and re-signed: a roll in the log", |t, d| {
            edit(d, LAST, "\"value\": 1", "\"value\": 2");
            resign(t, d, LAST, "pbem-record");
        }, LAST, "resolution.events[0].roll.value"),
        ("a host seed", |t, d| {
            flip(d, LAST, "\"host_seed\": \"");
            resign(t, d, LAST, "pbem-record");
        }, LAST, "resolution.host_seed: does not match the commitment"),
        ("a revealed order", |t, d| {
            edit(d, LAST, "# built-in player for union", "# built-in player for Union");
            resign(t, d, LAST, "pbem-record");
        }, LAST, "resolution.orders[1].signature: signature does not verify for seat:union"),
        ("an order revealed late", |t, d| {
            edit(d, LAST, "step = 9\\nrole = \\\"confederate", "step = 9\\nrole =  \\\"confederate");
            resign(t, d, LAST, "pbem-record");
        }, LAST, "reveals[0].signature: signature does not verify for seat:confederate"),
        ("a step seed", |t, d| {
            flip(d, LAST, "\"seed\": \"");
            resign(t, d, LAST, "pbem-record");
        }, LAST, "resolution.seed: is not derived"),
        ("a broken chain link", |t, d| {
            flip(d, LAST, "\"prev\": \"");
            resign(t, d, LAST, "pbem-record");
        }, LAST, "prev: is not the SHA-256 of records/000013.json"),
        ("a state commitment", |t, d| {
            flip(d, LAST, "\"state\": \"");
            resign(t, d, LAST, "pbem-record");
        }, LAST, "state: is not the commitment to states/000014.json"),
        ("a deadline", |t, d| {
            let old = sha(d, "records/000013.json");
            edit(d, "records/000013.json", "\"deadline\": \"2026-07", "\"deadline\": \"2026-08");
            resign_record_and_rechain(t, d, 13, &old);
        }, "records/000013.json", "opening.deadline"),
        ("a receipt changed", |_, d| edit(d, "receipts/000014/union-1.toml", "seq = 1", "seq = 1 "), "receipts/000014/union-1.toml.sig", "signature does not verify"),
        ("a receipt changed and re-signed: its commitment", |t, d| {
            flip(d, "receipts/000014/union-1.toml", "commitment = \"");
            resign(t, d, "receipts/000014/union-1.toml", "pbem-receipt");
        }, "receipts/000014/union-1.toml", "commitment: does not match the order of union"),
        ("a receipt time", |t, d| {
            let rel = "receipts/000014/union-1.toml";
            edit(d, rel, "received = \"2026-07", "received = \"2026-08");
            resign(t, d, rel, "pbem-receipt");
        }, "receipts/000014/union-1.toml", "received: 2026-08"),
        ("a receipt deleted", |_, d| {
            fs::remove_file(d.join("receipts/000014/union-1.toml")).unwrap();
            fs::remove_file(d.join("receipts/000014/union-1.toml.sig")).unwrap();
        }, "receipts/000014/union-1.toml", "missing: the receipt of the order of union"),
        ("a record deleted", |_, d| {
            fs::remove_file(d.join("records/000007.json")).unwrap();
            fs::remove_file(d.join("records/000007.json.sig")).unwrap();
        }, "records/000007.json", "missing"),
        ("game.toml rewritten", |_, d| edit(d, "game.toml", "grace_hours = 0", "grace_hours = 1"), "records/000000.json", "setup: is not the setup hash"),
    ]
}

#[test]
fn the_python_verifier_fails_each_tampered_copy_naming_the_file() {
    if !have_python() {
        return;
    }
    for (class, tamper, file, why) in tampers() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = public_copy(tmp.path());
        tamper(tmp.path(), &dir);
        assert_fails(&dir, class, file, why);
    }
}

/// A public copy mid-game, past a step whose orders are withheld (records 0-11): the Rust audit
/// cannot replay records 9-11, yet re-derives their rolls from the step seed, as the verifier does.
#[test]
fn a_roll_changed_in_a_record_the_audit_cannot_replay_fails_both_verifiers() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = public_copy(tmp.path());
    for n in 12..=14 {
        fs::remove_file(dir.join(format!("records/{n:06}.json"))).unwrap();
        fs::remove_file(dir.join(format!("records/{n:06}.json.sig"))).unwrap();
    }
    // Step 12 is open with no order in yet (its receipts would pin record 11 by hash).
    for n in 12..=14 {
        fs::remove_dir_all(dir.join(format!("receipts/{n:06}"))).unwrap();
    }
    fs::remove_dir_all(dir.join("states")).unwrap();
    let audit = || assert_cmd::Command::cargo_bin("pbem").unwrap().arg("audit").arg(&dir).output().unwrap();
    let o = audit();
    assert!(o.status.success() && text(&o).contains("records 9-11 were checked without replay"), "{}", text(&o));
    let rec = "records/000011.json";
    let r: serde_json::Value = serde_json::from_slice(&fs::read(dir.join(rec)).unwrap()).unwrap();
    let v = r["resolution"]["events"][0]["roll"]["value"].as_u64().unwrap();
    edit(&dir, rec, &format!("\"value\": {v}"), &format!("\"value\": {}", v % 6 + 1));
    resign(tmp.path(), &dir, rec, "pbem-record");
    let o = audit();
    let out = text(&o);
    assert!(!o.status.success() && out.contains("000011.json") && out.contains("resolution.events[0].roll"), "{out}");
    if have_python() {
        assert_fails(&dir, "a roll in an unreplayed record", rec, "resolution.events[0].roll.value");
    }
}

/// `pbem` (the binary under test) with `args`; panics with its output unless it succeeds.
fn pbem_ok(args: &[&str]) -> String {
    let o = assert_cmd::Command::cargo_bin("pbem").unwrap().args(args).output().unwrap();
    assert!(o.status.success(), "pbem {args:?}: {}", text(&o));
    text(&o)
}

/// The other games: Flag Dash (a paused round's plans withheld until the round's end) and Throw
/// Down That Flag (draws from a bag), played by `pbem demo`; and a game of NMRs under the `bot`
/// policy (default orders first, then the built-in player's, drawn from their own stream).
#[test]
fn the_python_verifier_passes_the_other_games_and_nmr_games() {
    if !have_python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    for (rules, seed, want) in [("flag-dash", "46", "0 rolls and draws"), ("throw-down-that-flag", "12", "step seeds")] {
        let dir = tmp.path().join(rules);
        pbem_ok(&["demo", "--rules", rules, "--seed", &seed.repeat(32), "--out", dir.to_str().unwrap()]);
        let o = verify(&dir);
        assert!(o.status.success() && text(&o).contains(want), "{rules}: {}", text(&o));
    }
    let tdtf = verify(&tmp.path().join("throw-down-that-flag"));
    assert!(!text(&tdtf).contains(" 0 rolls and draws"), "{}", text(&tdtf));

    let g = tmp.path().join("nmr");
    let keys = Path::new(EXAMPLE).join("players");
    let seat = |role: &str| format!("{role}:{role}@example.org:{}", keys.join(role).join("id_ed25519.pub").display());
    pbem_ok(&["new", g.to_str().unwrap(), "--rules", "gettysburg-campaign", "--player", &seat("confederate"), "--player", &seat("union"),
        "--nmr", "bot", "--bot-after", "1", "--deadline-hours", "24", "--grace-hours", "2", "--now", "2026-07-01T12:00:00Z"]);
    // Each step is due 24 hours after it opened plus 2 hours of grace.
    for now in ["2026-07-02T14:00:00Z", "2026-07-03T16:00:00Z", "2026-07-04T18:00:00Z"] {
        assert!(pbem_ok(&["adjudicate", g.to_str().unwrap(), "--now", now]).contains("NMR"));
    }
    let o = verify(&g);
    assert!(o.status.success() && text(&o).contains("6 NMR"), "{}", text(&o));
    let key = tmp.path().join("host_key");
    fs::copy(g.join("host/host_key"), &key).unwrap();
    let last = "records/000003.json";
    let copy = tmp.path().join("nmr-kind");
    copy_tree(&g, &copy);
    // A built-in player's orders passed off as the defaults (or the other way round).
    edit(&copy, last, "\"nmr\": \"bot\"", "\"nmr\": \"default\"");
    resign(tmp.path(), &copy, last, "pbem-record");
    assert_fails(&copy, "an NMR kind", last, "resolution.orders[0].nmr");
    // The last step run an hour early, every time made consistent: before its deadline and grace.
    edit(&g, last, "\"resolved\": \"2026-07-04T18:00:00Z\"", "\"resolved\": \"2026-07-04T17:00:00Z\"");
    edit(&g, last, "\"opened\": \"2026-07-04T18:00:00Z\"", "\"opened\": \"2026-07-04T17:00:00Z\"");
    edit(&g, last, "\"deadline\": \"2026-07-05T18:00:00Z\"", "\"deadline\": \"2026-07-05T17:00:00Z\"");
    resign(tmp.path(), &g, last, "pbem-record");
    assert_fails(&g, "an NMR before its deadline", last, "resolution.resolved: confederate is NMR, resolved before the deadline");
}

/// An order saved "UTF-8 with BOM" (as Windows Notepad does) and signed un-normalized with
/// ssh-keygen keeps its byte-order mark in the signed bytes: pbem accepts it and both verifiers
/// pass the game (tester11 D2: the Python one read the mark as TOML and failed it).
#[test]
fn an_order_signed_with_a_byte_order_mark_passes_both_verifiers() {
    if !have_python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let (g, t) = (tmp.path().join("g"), tmp.path());
    let keys = Path::new(EXAMPLE).join("players").join("union");
    let key = t.join("id_ed25519");
    fs::copy(keys.join("id_ed25519"), &key).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).unwrap();
    }
    let seat = format!("union:u@example.org:{}", keys.join("id_ed25519.pub").display());
    pbem_ok(&["new", g.to_str().unwrap(), "--rules", "throw-down-that-flag", "--player", &seat]);
    let form = t.join("o.toml");
    pbem_ok(&["form", g.to_str().unwrap(), "--role", "union", "-o", form.to_str().unwrap()]);
    let mut bom = b"\xef\xbb\xbf".to_vec();
    bom.extend(fs::read(&form).unwrap());
    fs::write(&form, bom).unwrap();
    let signed = Command::new("ssh-keygen").args(["-q", "-Y", "sign", "-n", "pbem-orders", "-f"]).arg(&key).arg(&form).output().unwrap();
    assert!(signed.status.success(), "{}", text(&signed));
    pbem_ok(&["submit", g.to_str().unwrap(), form.to_str().unwrap()]);
    pbem_ok(&["adjudicate", g.to_str().unwrap()]);
    let record = fs::read_to_string(g.join("records").join("000001.json")).unwrap();
    assert!(record.contains("\"text\": \"\u{feff}"), "the mark is in the signed bytes revealed: {record}");
    pbem_ok(&["audit", g.to_str().unwrap()]);
    let o = verify(&g);
    assert!(o.status.success(), "{}", text(&o));
}

/// A game that used every host control (a seat's key changed with orders received before and
/// after it, a deadline moved, a pause and a resume, then abandoned) passes; game.toml changed
/// without a seat record, or a forged resume (re-signed, the chain mended), fails naming the record.
#[test]
fn the_python_verifier_follows_the_host_controls() {
    if !have_python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let g = tmp.path().join("g");
    let gs = g.to_str().unwrap();
    let keys = Path::new(EXAMPLE).join("players");
    let seat = |role: &str| format!("{role}:{role}@example.org:{}", keys.join(role).join("id_ed25519.pub").display());
    pbem_ok(&["new", gs, "--rules", "gettysburg-campaign", "--player", &seat("confederate"), "--player", &seat("union"), "--now", "2026-07-01T12:00:00Z"]);
    let new_key = tmp.path().join("union_new");
    let o = Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-C", "union-new", "-f"]).arg(&new_key).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let submit = |key: &Path, now: &str| {
        let f = tmp.path().join(format!("union-{now}.toml"));
        pbem_ok(&["form", gs, "--role", "union", "-o", f.to_str().unwrap()]);
        pbem_ok(&["sign", "--key", key.to_str().unwrap(), f.to_str().unwrap()]);
        pbem_ok(&["submit", gs, f.to_str().unwrap(), "--now", now]);
    };
    submit(&keys.join("union").join("id_ed25519"), "2026-07-01T13:00:00Z");
    pbem_ok(&["seat", gs, "--role", "union", "--key", &format!("{}.pub", new_key.display()), "--now", "2026-07-01T14:00:00Z"]);
    submit(&new_key, "2026-07-01T15:00:00Z");
    pbem_ok(&["deadline", gs, "--extend", "24h", "--now", "2026-07-01T16:00:00Z"]);
    pbem_ok(&["pause", gs, "--reason", "holidays", "--now", "2026-07-01T17:00:00Z"]);
    assert!(pbem_ok(&["resume", gs, "--now", "2026-07-02T17:00:00Z"]).contains("2026-07-06T12:00:00Z"));
    assert!(pbem_ok(&["adjudicate", gs, "--now", "2026-07-06T12:00:00Z"]).contains("resolved step(s) 1; NMR: confederate"));
    pbem_ok(&["end", gs, "--abandon", "--reason", "the Confederate player vanished", "--now", "2026-07-06T13:00:00Z"]);
    pbem_ok(&["audit", gs]);
    let o = verify(&g);
    assert!(o.status.success() && text(&o).contains("1 signed orders, 1 NMR, 1 of 1 step seeds"), "{}", text(&o));
    assert!(text(&o).contains("note: the order of union used in step 1 (receipt 2) was signed under another key of the seat than its receipt(s) 1"), "{}", text(&o));
    fs::copy(g.join("host/host_key"), tmp.path().join("host_key")).unwrap();

    let copy = tmp.path().join("toml");
    copy_tree(&g, &copy);
    edit(&copy, "game.toml", "confederate@example.org", "someone@example.org");
    assert_fails(&copy, "game.toml changed without a record", "records/000001.json", "was game.toml changed without a seat record?");

    let rec = "records/000004.json";
    let (old4, old5) = (sha(&g, rec), sha(&g, "records/000005.json"));
    edit(&g, rec, "\"deadline\": \"2026-07-06T12:00:00Z\"", "\"deadline\": \"2026-07-05T12:00:00Z\"");
    resign_record_and_rechain(tmp.path(), &g, 4, &old4);
    resign_record_and_rechain(tmp.path(), &g, 5, &old5);
    assert_fails(&g, "a forged resume", rec, "resumed, its deadline later by the time paused");
}

/// `verify/pbem_verify.py` on `path` with its own temporary folder `tmp` (which it must leave empty).
fn verify_in(path: &Path, tmp: &Path) -> Output {
    fs::create_dir_all(tmp).unwrap();
    let o = Command::new("python3").arg("verify/pbem_verify.py").arg(path).env("TMPDIR", tmp).output().expect("python3 runs");
    assert_eq!(fs::read_dir(tmp).unwrap().count(), 0, "the verifier left files in its temporary folder: {}", text(&o));
    o
}

/// The public copy a game's web page offers (`pbem public`, one tar archive) verifies as its
/// folder does (README "Checking a game without pbem"); one tampered inside fails naming the
/// member as `pbem audit` does (`GAME.tar:GAME/records/...`).
#[test]
fn the_python_verifier_reads_a_public_copy_archive() {
    if !have_python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let tar_file = tmp.path().join("demo.tar");
    pbem_ok(&["public", "--out", tar_file.to_str().unwrap(), EXAMPLE]);
    let o = verify_in(&tar_file, &tmp.path().join("tmp"));
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("15 records") && out.contains("24 signed orders") && out.contains("this copy has no states/"), "{out}");

    // Unpacked, a roll changed in the last record and re-signed, packed again.
    let unpacked = tmp.path().join("x");
    tar::Archive::new(fs::File::open(&tar_file).unwrap()).unpack(&unpacked).unwrap();
    let id = fs::read_dir(&unpacked).unwrap().next().unwrap().unwrap().file_name().into_string().unwrap();
    let game = unpacked.join(&id);
    host_key(tmp.path());
    edit(&game, LAST, "\"value\": 1", "\"value\": 2");
    resign(tmp.path(), &game, LAST, "pbem-record");
    let bad = tmp.path().join("tampered.tar");
    let mut b = tar::Builder::new(fs::File::create(&bad).unwrap());
    b.append_dir_all(&id, &game).unwrap();
    b.into_inner().unwrap();
    let o = verify_in(&bad, &tmp.path().join("tmp"));
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let named = format!("FAIL: {}:{id}/{LAST}: resolution.events[0].roll.value", bad.display());
    assert!(out.starts_with(&named), "want {named:?}, got: {out}");
}

/// A tar of one `(name, type, size, data)` entry after a plain `g/game.toml`, the name written
/// as it is (the tar crate's builder refuses `..` and absolute paths).
fn raw_tar(name: &str, kind: tar::EntryType, size: u64, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, kind, size, data) in [("g/game.toml", tar::EntryType::Regular, 1, &b"x"[..]), (name, kind, size, data)] {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(kind);
        h.set_size(size);
        h.set_mode(0o644);
        h.as_gnu_mut().unwrap().name[..name.len()].copy_from_slice(name.as_bytes());
        if kind.is_symlink() || kind.is_hard_link() {
            h.set_link_name("/etc/passwd").unwrap();
        }
        h.set_cksum();
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(data);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    out.resize(out.len() + 1024, 0);
    out
}

/// An archive that is no public copy is refused before anything is checked or written outside
/// its temporary folder: exit 2 (cannot run), naming the archive and the member.
#[test]
fn the_python_verifier_refuses_a_bad_archive_with_exit_2() {
    if !have_python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let regular = tar::EntryType::Regular;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("not a tar", b"not a tar at all".to_vec(), "not a tar archive"),
        ("a symbolic link", raw_tar("g/scenario.toml", tar::EntryType::Symlink, 0, b""), "g/scenario.toml: not a plain file"),
        ("a hard link", raw_tar("g/scenario.toml", tar::EntryType::Link, 0, b""), "g/scenario.toml: not a plain file"),
        ("a `..` path", raw_tar("g/../../evil", regular, 1, b"x"), "g/../../evil: a path with `..`"),
        ("an absolute path", raw_tar("/tmp/evil", regular, 1, b"x"), "/tmp/evil: an absolute path"),
        ("a second folder", raw_tar("h/game.toml", regular, 1, b"x"), "h/game.toml: outside the game folder g/"),
        ("a host file", raw_tar("g/host/host_key", regular, 1, b"x"), "g/host/host_key: not a file of a public copy"),
        ("a state", raw_tar("g/states/000000.json", regular, 1, b"x"), "g/states/000000.json: not a file of a public copy"),
        ("a file twice", raw_tar("g/game.toml", regular, 1, b"y"), "g/game.toml: twice in the archive"),
        ("a tar bomb", raw_tar("g/scenario.toml", regular, 2 << 30, b""), "larger than a public copy may be"),
    ];
    for (class, bytes, why) in cases {
        let file = tmp.path().join("bad.tar");
        fs::write(&file, bytes).unwrap();
        let o = verify_in(&file, &tmp.path().join("tmp"));
        let out = text(&o);
        assert_eq!(o.status.code(), Some(2), "{class}: {out}");
        assert!(out.contains(&format!("{}: {why}", file.display())), "{class}: want {why:?} in: {out}");
        assert!(!tmp.path().join("evil").exists() && !Path::new("/tmp/evil").exists(), "{class}");
    }
}

/// A fresh key of `ssh-keygen -t kind -b bits` (no passphrase) at `path`.
fn keygen(path: &Path, kind: &str, bits: &str) {
    let o = Command::new("ssh-keygen").args(["-q", "-t", kind, "-b", bits, "-N", "", "-C", "u", "-f"]).arg(path).output().unwrap();
    assert!(o.status.success(), "ssh-keygen -t {kind} -b {bits}: {}", text(&o));
}

/// `ssh-keygen -Y sign -n ns -f key` of `data` given on its standard input: the armored signature.
fn sign_stdin(key: &Path, ns: &str, data: &[u8]) -> String {
    let mut child = Command::new("ssh-keygen")
        .args(["-q", "-Y", "sign", "-n", ns, "-f"])
        .arg(key)
        .env_remove("SSH_AUTH_SOCK")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(data).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "ssh-keygen -Y sign: {}", text(&o));
    String::from_utf8(o.stdout).unwrap()
}

/// Seat keys of every type `ssh-keygen` makes that pbem accepts but Ed25519 (that one is the
/// example game's): an honest game passes both checkers; the order's text changed, or signed by
/// another key of the same type (each record re-signed by the host), fails naming the signature.
#[test]
fn the_python_verifier_checks_rsa_and_ecdsa_seat_keys() {
    if !have_python() {
        return;
    }
    let rec = "records/000001.json";
    for (kind, bits) in [("rsa", "3072"), ("ecdsa", "256"), ("ecdsa", "384"), ("ecdsa", "521")] {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path();
        let (g, key, form) = (t.join("g"), t.join("u"), t.join("o.toml"));
        keygen(&key, kind, bits);
        let seat = format!("union:u@example.org:{}.pub", key.display());
        pbem_ok(&["new", g.to_str().unwrap(), "--rules", "throw-down-that-flag", "--player", &seat]);
        pbem_ok(&["form", g.to_str().unwrap(), "--role", "union", "-o", form.to_str().unwrap()]);
        pbem_ok(&["sign", "--key", key.to_str().unwrap(), form.to_str().unwrap()]);
        pbem_ok(&["submit", g.to_str().unwrap(), form.to_str().unwrap()]);
        pbem_ok(&["adjudicate", g.to_str().unwrap()]);
        pbem_ok(&["audit", g.to_str().unwrap()]);
        let o = verify(&g);
        assert!(o.status.success() && text(&o).contains("1 signed orders"), "{kind} {bits}: {}", text(&o));
        fs::copy(g.join("host/host_key"), t.join("host_key")).unwrap();

        // One space more in the signed text (the same TOML), the record re-signed by the host.
        let changed = t.join("changed");
        copy_tree(&g, &changed);
        edit(&changed, rec, "role = \\\"union\\\"", "role =  \\\"union\\\"");
        resign(t, &changed, rec, "pbem-record");
        assert_fails(&changed, &format!("{kind} {bits}: a changed order"), rec, "resolution.orders[0].signature: signature does not verify for seat:union");

        // The same text signed by another key of the same type.
        let other = t.join("other");
        copy_tree(&g, &other);
        let r: serde_json::Value = serde_json::from_slice(&fs::read(other.join(rec)).unwrap()).unwrap();
        let order = &r["resolution"]["orders"][0];
        let (signed, old_sig) = (order["text"].as_str().unwrap(), order["signature"].as_str().unwrap());
        keygen(&t.join("other_key"), kind, bits);
        let new_sig = sign_stdin(&t.join("other_key"), "pbem-orders", signed.as_bytes());
        let json = |s: &str| serde_json::to_string(s).unwrap();
        edit(&other, rec, &json(old_sig), &json(&new_sig));
        resign(t, &other, rec, "pbem-record");
        assert_fails(&other, &format!("{kind} {bits}: another key's signature"), rec, "resolution.orders[0].signature: signature does not verify for seat:union");
    }
}

/// The two checkers agree on what is not part of a game: `pbem public`'s archive with the host's
/// key added is refused by both (the verifier: exit 2, as for any archive that is no public
/// copy); in a game folder, notes in `records/` and `receipts/` are ignored by both, but a file
/// named like a record that is none still fails.
#[test]
fn both_checkers_refuse_an_archive_member_not_public_and_ignore_notes_in_a_folder() {
    if !have_python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let tar_file = tmp.path().join("demo.tar");
    pbem_ok(&["public", "--out", tar_file.to_str().unwrap(), EXAMPLE]);
    let unpacked = tmp.path().join("x");
    tar::Archive::new(fs::File::open(&tar_file).unwrap()).unpack(&unpacked).unwrap();
    let id = fs::read_dir(&unpacked).unwrap().next().unwrap().unwrap().file_name().into_string().unwrap();
    let game = unpacked.join(&id);
    fs::create_dir(game.join("host")).unwrap();
    fs::copy(Path::new(EXAMPLE).join("host/host_key"), game.join("host/host_key")).unwrap();
    let extra = tmp.path().join("extra.tar");
    let mut b = tar::Builder::new(fs::File::create(&extra).unwrap());
    b.append_dir_all(&id, &game).unwrap();
    b.into_inner().unwrap();
    let why = format!("{id}/host/host_key: not a file of a public copy");
    let o = assert_cmd::Command::cargo_bin("pbem").unwrap().arg("audit").arg(&extra).output().unwrap();
    assert!(!o.status.success() && text(&o).contains(&why), "pbem audit: {}", text(&o));
    let o = verify_in(&extra, &tmp.path().join("tmp"));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains(&format!("{}: {why}", extra.display())), "{}", text(&o));

    let dir = tmp.path().join("g");
    copy_tree(Path::new(EXAMPLE), &dir);
    for notes in ["records/notes.txt", "receipts/notes.txt", "receipts/000001/notes.txt"] {
        fs::write(dir.join(notes), "my notes\n").unwrap();
    }
    pbem_ok(&["audit", dir.to_str().unwrap()]);
    let o = verify(&dir);
    assert!(o.status.success() && text(&o).contains("15 records"), "{}", text(&o));
    fs::write(dir.join("records/x.json"), "{}\n").unwrap();
    assert_fails(&dir, "a file named like a record", "records/x.json", "not a record file");
}

/// A record that is a FIFO, a link to `/dev/zero` or a folder is refused by the Python verifier
/// at once, naming it, as pbem refuses it (tester20 T20b-3: it waited on the FIFO and read
/// `/dev/zero` without end); stopped by SIGTERM, it leaves no temporary folder.
#[test]
fn the_python_verifier_refuses_a_record_that_is_no_file() {
    if !have_python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = public_copy(tmp.path());
    let record = dir.join("records/000002.json");
    for kind in ["fifo", "dev-zero", "folder"] {
        let _ = fs::remove_file(&record);
        let _ = fs::remove_dir_all(&record);
        match kind {
            "fifo" => assert!(Command::new("mkfifo").arg(&record).status().unwrap().success()),
            "dev-zero" => std::os::unix::fs::symlink("/dev/zero", &record).unwrap(),
            _ => fs::create_dir(&record).unwrap(),
        }
        let o = Command::new("timeout").args(["60", "python3", "verify/pbem_verify.py"]).arg(&dir).output().unwrap();
        let out = text(&o);
        assert_eq!(o.status.code(), Some(1), "{kind}: {out}");
        assert!(out.starts_with(&format!("FAIL: {}: ", record.display())) && out.contains("not a regular file"), "{kind}: {out}");
    }
    // SIGTERM while it waits on ssh-keygen (a stand-in that sleeps): its temporary folder goes.
    let _ = fs::remove_dir_all(&record);
    fs::copy(Path::new(EXAMPLE).join("records/000002.json"), &record).unwrap();
    let (scratch, bin) = (tmp.path().join("scratch"), tmp.path().join("bin"));
    fs::create_dir(&scratch).unwrap();
    fs::create_dir(&bin).unwrap();
    fs::write(bin.join("ssh-keygen"), "#!/bin/sh\nexec sleep 20\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(bin.join("ssh-keygen"), fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let mut child = Command::new("python3").arg("verify/pbem_verify.py").arg(&dir).env("TMPDIR", &scratch).env("PATH", path).spawn().unwrap();
    let waiting = (0..200).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(50));
        fs::read_dir(&scratch).unwrap().count() > 0
    });
    assert!(waiting, "the verifier made its temporary folder");
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    child.wait().unwrap();
    assert_eq!(fs::read_dir(&scratch).unwrap().count(), 0, "no temporary folder left");
}

/// A path that is not there cannot be verified (exit 2, "no such file or folder"), and a
/// `game.toml` that is a FIFO is said to be no regular file, not missing (tester21 T21b-7,
/// T21a-4).
#[test]
fn the_python_verifier_says_a_missing_path_cannot_be_checked_and_names_a_special_game_file() {
    if !have_python() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let o = verify(&tmp.path().join("nonexistent.tar"));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("nonexistent.tar: no such file or folder"), "{}", text(&o));
    let fifo = tmp.path().join("ff.tar");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let o = Command::new("timeout").args(["60", "python3", "verify/pbem_verify.py"]).arg(&fifo).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("neither a game folder nor a public copy (a FIFO or a device)"), "{}", text(&o));
    let dir = public_copy(tmp.path());
    fs::remove_file(dir.join("game.toml")).unwrap();
    assert!(Command::new("mkfifo").arg(dir.join("game.toml")).status().unwrap().success());
    let o = Command::new("timeout").args(["60", "python3", "verify/pbem_verify.py"]).arg(&dir).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("game.toml: not a regular file"), "{}", text(&o));
}
