//! CLI tests: the real `pbem` binary on real files, keys made by the real `ssh-keygen`.

use std::path::{Path, PathBuf};
use std::process::Command;

mod support;
use support::{keygen, pbem};
use predicates::prelude::*;

const SEED: &str = "00000000000000000000000000000000000000000000000000000000000000aa";

/// A fresh game with two players whose keys come from ssh-keygen.
struct Table {
    tmp: tempfile::TempDir,
}

impl Table {
    fn new() -> Self {
        Self::with(&[])
    }
    /// A game created with extra `pbem new` arguments.
    fn with(extra: &[&str]) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let t = Table { tmp };
        keygen(t.path(), "conf");
        keygen(t.path(), "union");
        pbem()
            .arg("new")
            .arg(t.game())
            .args(["--rules", "gettysburg-campaign", "--now", "2026-07-01T12:00:00Z"])
            .arg("--player")
            .arg(format!("confederate:lee@example.org:{}", t.path().join("conf.pub").display()))
            .arg("--player")
            .arg(format!("union:meade@example.org:{}", t.path().join("union.pub").display()))
            .args(extra)
            .assert()
            .success()
            .stdout(predicate::str::contains("created game g1"));
        t
    }
    fn path(&self) -> &Path {
        self.tmp.path()
    }
    fn game(&self) -> PathBuf {
        self.tmp.path().join("g1")
    }
    /// Writes `pbem form` for `role` to a file and returns its path.
    fn form(&self, role: &str, name: &str) -> PathBuf {
        let out = self.path().join(name);
        pbem().arg("form").arg(self.game()).args(["--role", role, "-o"]).arg(&out).assert().success();
        out
    }
    fn key(&self, role: &str) -> PathBuf {
        self.path().join(if role == "union" { "union" } else { "conf" })
    }
}

#[test]
fn help_lists_every_command() {
    let out = pbem().arg("--help").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for c in ["new", "status", "form", "sign", "verify", "submit", "adjudicate", "report", "audit", "demo"] {
        assert!(text.contains(&format!("  {c} ")), "--help lacks {c}: {text}");
        pbem().args([c, "--help"]).assert().success();
    }
}

/// `pbem sign --key K -` signs an order piped in and writes it to stdout, its signature appended
/// (the form it is pasted into mail in), and nothing else; stdin larger than an order file may be
/// is refused unread past the limit.
#[test]
fn sign_reads_stdin_and_writes_the_signed_order_to_stdout() {
    let t = Table::new();
    let form = std::fs::read(t.form("union", "union-1.toml")).unwrap();
    let out = pbem().arg("sign").arg("--key").arg(t.key("union")).arg("-").write_stdin(form).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let signed = t.path().join("piped.toml");
    std::fs::write(&signed, &out.stdout).unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).trim_end().ends_with("-----END SSH SIGNATURE-----"));
    pbem().arg("verify").arg("--game").arg(t.game()).arg(&signed).assert().success().stdout(predicate::str::contains("good signature by seat union"));
    pbem().arg("submit").arg(t.game()).arg(&signed).args(["--now", "2026-07-01T13:00:00Z"]).assert().success().stdout(predicate::str::contains("accepted"));
    pbem().arg("sign").arg("--key").arg(t.key("union")).arg("-").write_stdin(vec![b'#'; 2 << 20]).assert().failure().stderr(predicate::str::contains("<stdin>: larger than"));
}

#[test]
fn hand_played_step_with_ssh_keygen_and_pbem_sign() {
    let t = Table::new();
    pbem().arg("status").arg(t.game()).assert().success().stdout(predicate::str::contains("awaited"));
    // Confederate: signs with the real ssh-keygen, signature beside the file.
    let cf = t.form("confederate", "conf-1.toml");
    let st = Command::new("ssh-keygen").args(["-Y", "sign", "-n", "pbem-orders", "-f"]).arg(t.key("confederate")).arg(&cf).output().unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    // Union: signs with pbem sign, signature appended.
    let uf = t.form("union", "union-1.toml");
    pbem().arg("sign").arg("--key").arg(t.key("union")).arg(&uf).arg("--append").assert().success();
    pbem().arg("submit").arg(t.game()).arg(&cf).arg(&uf).args(["--now", "2026-07-01T13:00:00Z"]).assert().success()
        .stdout(predicate::str::contains("accepted").count(2));
    // Sending the same file again is harmless: the receipt in force comes back, also when it is
    // given twice in one batch (whose receipts share one sync, written after it).
    pbem().arg("submit").arg(t.game()).arg(&cf).args(["--now", "2026-07-01T13:01:00Z"]).assert().success()
        .stderr(predicate::str::contains("already received as receipt 1"));
    let again = t.form("union", "union-2.toml");
    pbem().arg("sign").arg("--key").arg(t.key("union")).arg(&again).arg("--append").assert().success();
    pbem().arg("submit").arg(t.game()).arg(&again).arg(&again).args(["--now", "2026-07-01T13:01:30Z"]).assert().success()
        .stderr(predicate::str::contains("already received as receipt 2"));
    // Another text reusing a nonce already used is a replay (signed with ssh-keygen, which keeps
    // the nonce; `pbem sign` would draw a fresh one).
    let text = std::fs::read_to_string(&cf).unwrap();
    std::fs::write(&cf, format!("# second thoughts\n{text}")).unwrap();
    std::fs::remove_file(pipeline_sig(&cf)).unwrap();
    let st = Command::new("ssh-keygen").args(["-Y", "sign", "-n", "pbem-orders", "-f"]).arg(t.key("confederate")).arg(&cf).output().unwrap();
    assert!(st.status.success(), "{}", String::from_utf8_lossy(&st.stderr));
    pbem().arg("submit").arg(t.game()).arg(&cf).args(["--now", "2026-07-01T13:02:00Z"]).assert().failure()
        .stderr(predicate::str::contains("nonce was already used"));
    pbem().arg("adjudicate").arg(t.game()).args(["--now", "2026-07-01T14:00:00Z"]).assert().success()
        .stdout(predicate::str::contains("resolved step(s) 1"));
    // Running again is a no-op (idempotent).
    pbem().arg("adjudicate").arg(t.game()).args(["--now", "2026-07-01T14:00:30Z"]).assert().success()
        .stdout(predicate::str::contains("nothing due"));
    pbem().arg("report").arg(t.game()).args(["--role", "union"]).assert().success()
        .stdout(predicate::str::contains("ORDERS RECEIVED FOR STEP 1"));
    pbem().arg("audit").arg(t.game()).assert().success().stdout(predicate::str::contains("audit passed"));
    // The old order is refused for the next step.
    pbem().arg("submit").arg(t.game()).arg(&uf).args(["--now", "2026-07-01T14:01:00Z"]).assert().failure()
        .stderr(predicate::str::contains("pending step is 2").or(predicate::str::contains("asks nothing")));
}

#[test]
fn pbem_sign_is_verified_by_ssh_keygen() {
    let t = Table::new();
    let uf = t.form("union", "u.toml");
    pbem().arg("sign").arg("--key").arg(t.key("union")).arg(&uf).assert().success();
    let allowed = t.path().join("allowed");
    std::fs::write(&allowed, format!("meade {}", std::fs::read_to_string(t.path().join("union.pub")).unwrap())).unwrap();
    let out = Command::new("ssh-keygen")
        .args(["-Y", "verify", "-n", "pbem-orders", "-I", "meade", "-f"])
        .arg(&allowed)
        .arg("-s")
        .arg(t.path().join("u.toml.sig"))
        .stdin(std::fs::File::open(&uf).unwrap())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    pbem().arg("verify").arg(&uf).arg("--game").arg(t.game()).assert().success().stdout(predicate::str::contains("seat union"));
}

#[test]
fn rejections_name_the_problem_and_store_nothing() {
    let t = Table::new();
    let receipts = t.game().join("receipts");
    // Wrong key: the union form signed with the Confederate key.
    let f = t.form("union", "wrongkey.toml");
    pbem().arg("sign").arg("--key").arg(t.key("confederate")).arg(&f).assert().success();
    pbem().arg("submit").arg(t.game()).arg(&f).assert().failure().stderr(predicate::str::contains("signature for seat union"));
    // Wrong namespace.
    let f = t.form("union", "ns.toml");
    let st = Command::new("ssh-keygen").args(["-Y", "sign", "-n", "file", "-f"]).arg(t.key("union")).arg(&f).output().unwrap();
    assert!(st.status.success());
    pbem().arg("submit").arg(t.game()).arg(&f).assert().failure().stderr(predicate::str::contains("namespace"));
    // One byte edited after signing.
    let f = t.form("union", "edited.toml");
    pbem().arg("sign").arg("--key").arg(t.key("union")).arg(&f).assert().success();
    let text = std::fs::read_to_string(&f).unwrap().replacen("step = 1", "step = 2", 1);
    std::fs::write(&f, text).unwrap();
    pbem().arg("submit").arg(t.game()).arg(&f).assert().failure().stderr(predicate::str::contains("signature"));
    // Another game.
    let f = t.form("union", "othergame.toml");
    let text = std::fs::read_to_string(&f).unwrap().replacen("game = \"g1\"", "game = \"g2\"", 1);
    std::fs::write(&f, text).unwrap();
    pbem().arg("sign").arg("--key").arg(t.key("union")).arg(&f).assert().success();
    let line = std::fs::read_to_string(&f).unwrap().lines().position(|l| l == "game = \"g2\"").unwrap() + 1;
    pbem().arg("submit").arg(t.game()).arg(&f).assert().failure()
        .stderr(predicate::str::contains(format!("othergame.toml:{line}: pbem.game: order is for game \"g2\"")));
    // Another role (signed by the right key for the role it claims, but that is not this seat's key).
    let f = t.form("union", "role.toml");
    let text = std::fs::read_to_string(&f).unwrap().replacen("role = \"union\"", "role = \"confederate\"", 1);
    std::fs::write(&f, text).unwrap();
    pbem().arg("sign").arg("--key").arg(t.key("union")).arg(&f).assert().success();
    pbem().arg("submit").arg(t.game()).arg(&f).assert().failure().stderr(predicate::str::contains("signature for seat confederate"));
    // A malformed nonce is refused already by `pbem sign`, which then signs nothing.
    let f = t.form("union", "badnonce.toml");
    let text = std::fs::read_to_string(&f).unwrap();
    let nonce_line = text.lines().find(|l| l.starts_with("nonce = ")).unwrap().to_string();
    std::fs::write(&f, text.replacen(&nonce_line, "nonce = \"aa\"", 1)).unwrap();
    let line = std::fs::read_to_string(&f).unwrap().lines().position(|l| l == "nonce = \"aa\"").unwrap() + 1;
    pbem().arg("sign").arg("--key").arg(t.key("union")).arg(&f).assert().failure()
        .stderr(predicate::str::contains(format!("badnonce.toml:{line}: pbem.nonce: nonce must be 64 hex digits (or empty); you wrote \"aa\"")));
    assert!(!pipeline_sig(&f).exists());
    // Unsigned.
    let f = t.form("union", "unsigned.toml");
    pbem().arg("submit").arg(t.game()).arg(&f).assert().failure().stderr(predicate::str::contains("not signed"));
    assert!(!receipts.exists() || std::fs::read_dir(&receipts).unwrap().next().is_none(), "a rejected order left a receipt");
}

#[test]
fn deadline_makes_nmr_and_game_runs_to_the_end() {
    let t = Table::new();
    // Before the deadline nothing is due.
    pbem().arg("adjudicate").arg("--all").arg(t.path()).args(["--now", "2026-07-02T12:00:00Z"]).assert().success()
        .stdout(predicate::str::contains("nothing due"));
    // Nobody sends anything: each step's deadline (72 h from its opening) passes and the game plays
    // out on NMR defaults, one step per run.
    let mut now = chrono::DateTime::parse_from_rfc3339("2026-07-01T12:00:00Z").unwrap();
    let mut over = false;
    for _ in 0..200 {
        now += chrono::Duration::hours(73);
        let out = pbem().arg("adjudicate").arg("--all").arg(t.path()).arg("--now").arg(now.to_rfc3339()).output().unwrap();
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("NMR"), "{text}");
        if text.contains("game over") {
            over = true;
            break;
        }
    }
    assert!(over, "the game did not end on NMR defaults");
    pbem().arg("status").arg(t.game()).assert().success().stdout(predicate::str::contains("game over"));
    pbem().arg("audit").arg(t.game()).assert().success();
}

#[test]
fn demo_is_reproducible_from_its_seed() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["a", "b"] {
        pbem().arg("demo").arg("--out").arg(tmp.path().join(name)).args(["--seed", SEED]).assert().success()
            .stdout(predicate::str::contains("audit passed"));
    }
    let diff = Command::new("diff").arg("-r").arg(tmp.path().join("a")).arg(tmp.path().join("b")).output().unwrap();
    assert!(diff.status.success(), "demo with one seed differs: {}", String::from_utf8_lossy(&diff.stdout));
}

/// Plays a demo game and returns (tempdir, game dir).
fn demo_game() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    pbem().arg("demo").arg("--out").arg(tmp.path().join("d")).args(["--seed", SEED]).assert().success();
    let g = tmp.path().join("d");
    (tmp, g)
}

fn first_record_with_orders(g: &Path) -> PathBuf {
    for i in 1.. {
        let p = g.join("records").join(format!("{i:06}.json"));
        let t = std::fs::read_to_string(&p).unwrap();
        if t.contains("\"text\": \"") {
            return p;
        }
    }
    unreachable!()
}

/// Re-signs a record with the host's key, as a dishonest host would after editing it: the audit
/// must then catch the edit through the players' signatures, commitments and the replay.
fn resign(g: &Path, record: &Path) {
    resign_as(g, record, "pbem-record");
}

/// Re-signs a file with the host's key in namespace `ns` (`pbem-record`, `pbem-receipt`).
fn resign_as(g: &Path, file: &Path, ns: &str) {
    std::fs::remove_file(pipeline_sig(file)).unwrap();
    let out = Command::new("ssh-keygen")
        .args(["-Y", "sign", "-n", ns, "-f"])
        .arg(g.join("host").join("host_key"))
        .arg(file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

fn pipeline_sig(p: &Path) -> PathBuf {
    PathBuf::from(format!("{}.sig", p.display()))
}

fn audit_fails(g: &Path, what: &str) {
    pbem().arg("audit").arg(g).assert().failure().stderr(predicate::str::contains("audit failed").and(predicate::str::contains(what)));
}

#[test]
fn audit_fails_on_an_edited_order_byte() {
    let (_t, g) = demo_game();
    let sealed = g.join("host").join("sealed").join("000001");
    let _ = sealed;
    let rec = first_record_with_orders(&g);
    let text = std::fs::read_to_string(&rec).unwrap().replacen("# built-in player", "# built-in Player", 1);
    std::fs::write(&rec, &text).unwrap();
    audit_fails(&g, "host signature");
    resign(&g, &rec);
    audit_fails(&g, "does not match its signature: it was changed after the player signed it");
}

#[test]
fn audit_fails_on_a_swapped_host_seed() {
    let (_t, g) = demo_game();
    let rec = g.join("records").join("000002.json");
    let text = std::fs::read_to_string(&rec).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let seed = v["resolution"]["host_seed"].as_str().unwrap().to_string();
    let other = format!("{}{}", &seed[2..], &seed[..2]);
    std::fs::write(&rec, text.replace(&seed, &other)).unwrap();
    audit_fails(&g, "000002.json");
    resign(&g, &rec);
    audit_fails(&g, "revealed host seed of step 2 does not match its commitment");
}

#[test]
fn audit_fails_on_an_edited_state() {
    let (_t, g) = demo_game();
    let st = g.join("states").join("000003.json");
    let text = std::fs::read_to_string(&st).unwrap();
    std::fs::write(&st, text.replacen("\"turn\": ", "\"turn\":  ", 1).replacen('1', "2", 1)).unwrap();
    audit_fails(&g, "the state differs from the replay");
}

#[test]
fn audit_fails_on_a_deleted_record() {
    let (_t, g) = demo_game();
    std::fs::remove_file(g.join("records").join("000004.json")).unwrap();
    audit_fails(&g, "000004.json");
}

#[test]
fn audit_fails_on_an_edited_report() {
    let (_t, g) = demo_game();
    let rp = g.join("reports").join("000002").join("union.txt");
    let text = std::fs::read_to_string(&rp).unwrap();
    std::fs::write(&rp, format!("{text}extra\n")).unwrap();
    audit_fails(&g, "union.txt");
}

/// `pbem audit --jobs 1` checks everything in order on one thread and prints what the audit on
/// every core prints; `--jobs 0` is refused.
#[test]
fn audit_on_one_thread_prints_what_the_audit_on_every_core_prints() {
    let g = Path::new(env!("CARGO_MANIFEST_DIR")).join("turns/demo-gettysburg-campaign-18630701");
    let run = |jobs: &[&str]| pbem().arg("audit").args(jobs).arg(&g).output().unwrap();
    let (one, every) = (run(&["--jobs", "1"]), run(&[]));
    assert!(one.status.success(), "{}", String::from_utf8_lossy(&one.stderr));
    assert_eq!((one.status, &one.stdout, &one.stderr), (every.status, &every.stdout, &every.stderr));
    assert!(String::from_utf8_lossy(&one.stdout).starts_with("audit passed: "));
    pbem().args(["audit", "--jobs", "0"]).arg(&g).assert().code(2);
}

#[test]
fn committed_example_game_audits_clean() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("turns");
    let games: Vec<_> = std::fs::read_dir(&root).unwrap().filter_map(|e| {
        let p = e.unwrap().path();
        p.join("game.toml").is_file().then_some(p)
    }).collect();
    assert!(!games.is_empty(), "no example game under turns/");
    for g in games {
        pbem().arg("audit").arg(&g).assert().success();
    }
}

#[test]
fn a_private_key_given_as_public_is_refused_without_echoing_it() {
    let tmp = tempfile::tempdir().unwrap();
    let a = keygen(tmp.path(), "a");
    keygen(tmp.path(), "b");
    let out = pbem()
        .arg("new")
        .arg(tmp.path().join("g"))
        .args(["--rules", "gettysburg-campaign"])
        .arg("--player")
        .arg(format!("confederate:a@x:{}", a.display()))
        .arg("--player")
        .arg(format!("union:b@x:{}.pub", tmp.path().join("b").display()))
        .assert()
        .failure()
        .stderr(predicate::str::contains("PRIVATE key"));
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(!err.contains("BEGIN OPENSSH"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn bad_deadline_policies_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    keygen(tmp.path(), "a");
    keygen(tmp.path(), "b");
    let players = |cmd: &mut assert_cmd::Command| {
        cmd.arg("--player").arg(format!("confederate:a@x:{}.pub", tmp.path().join("a").display()));
        cmd.arg("--player").arg(format!("union:b@x:{}.pub", tmp.path().join("b").display()));
    };
    let mut c = pbem();
    c.arg("new").arg(tmp.path().join("g1")).args(["--rules", "gettysburg-campaign", "--deadline", "retreet=24"]);
    players(&mut c);
    c.assert().failure().stderr(predicate::str::contains("no step kind \"retreet\""));
    let mut c = pbem();
    c.arg("new").arg(tmp.path().join("g2")).args(["--rules", "gettysburg-campaign", "--deadline-hours", "0"]);
    players(&mut c);
    c.assert().failure().stderr(predicate::str::contains("at least 1"));
    assert!(!tmp.path().join("g1").exists() && !tmp.path().join("g2").exists());
}

#[test]
fn missing_folders_are_errors() {
    let tmp = tempfile::tempdir().unwrap();
    pbem().arg("adjudicate").arg("--all").arg(tmp.path().join("nope")).assert().failure().stderr(predicate::str::contains("no such folder"));
    pbem().arg("audit").arg(tmp.path()).assert().failure().stderr(predicate::str::contains("not a pbem game directory"));
    let t = Table::new();
    pbem().arg("form").arg(t.game()).args(["--role", "union", "-o"]).arg(tmp.path().join("no").join("f.toml")).assert().failure()
        .stderr(predicate::str::contains("no such folder"));
}

#[test]
fn resending_orders_is_idempotent_but_a_superseded_order_is_refused() {
    let t = Table::new();
    // Orders without a nonce (signed by ssh-keygen from a form whose nonce was emptied).
    let mut files = Vec::new();
    for i in 0..2 {
        let f = t.form("union", &format!("e{i}.toml"));
        let text = std::fs::read_to_string(&f).unwrap();
        let nonce_line = text.lines().find(|l| l.starts_with("nonce = ")).unwrap().to_string();
        let text = format!("# draft {i}\n{}", text.replace(&nonce_line, "nonce = \"\""));
        std::fs::write(&f, text).unwrap();
        let st = Command::new("ssh-keygen").args(["-Y", "sign", "-n", "pbem-orders", "-f"]).arg(t.key("union")).arg(&f).output().unwrap();
        assert!(st.status.success());
        files.push(f);
    }
    pbem().arg("submit").arg(t.game()).arg(&files[0]).assert().success().stderr(predicate::str::contains("no nonce"));
    pbem().arg("submit").arg(t.game()).arg(&files[0]).assert().success().stderr(predicate::str::contains("already received as receipt 1"));
    pbem().arg("submit").arg(t.game()).arg(&files[1]).assert().success().stdout(predicate::str::contains("receipt 2"));
    pbem().arg("submit").arg(t.game()).arg(&files[0]).assert().failure().stderr(predicate::str::contains("later replaced"));
    pbem().arg("status").arg(t.game()).assert().success().stdout(predicate::str::contains("receipt 2"));
}

#[test]
fn a_leading_blank_line_added_by_a_mail_client_is_tolerated() {
    let t = Table::new();
    let f = t.form("union", "u.toml");
    pbem().arg("sign").arg("--key").arg(t.key("union")).arg(&f).arg("--append").assert().success();
    let text = std::fs::read_to_string(&f).unwrap();
    std::fs::write(&f, format!("\r\n\r\n{}", text.replace('\n', "\r\n"))).unwrap();
    pbem().arg("submit").arg(t.game()).arg(&f).assert().success();
}

#[test]
fn audit_fails_on_host_side_edits_and_a_cut_off_history() {
    let (_t, g) = demo_game();
    // The host's sealed copy of an order used in step 1.
    let sealed = g.join("host").join("sealed").join("000001").join("union-1.txt");
    let text = std::fs::read_to_string(&sealed).unwrap();
    std::fs::write(&sealed, text.replacen("[orders]", "[orders]\n", 1)).unwrap();
    audit_fails(&g, "union-1.txt");
    std::fs::write(&sealed, text).unwrap();
    pbem().arg("audit").arg(&g).assert().success();
    // Its signature, garbled: the audit names the signature file.
    let sealed_sig = g.join("host").join("sealed").join("000001").join("union-1.txt.sig");
    let sig_text = std::fs::read_to_string(&sealed_sig).unwrap();
    std::fs::write(&sealed_sig, sig_text.replacen("\n", "\n\n", 2)).unwrap();
    audit_fails(&g, "union-1.txt.sig");
    std::fs::write(&sealed_sig, sig_text).unwrap();
    // A host seed file.
    let seed = g.join("host").join("seeds").join("000001.hex");
    let s = std::fs::read_to_string(&seed).unwrap();
    std::fs::write(&seed, s.replacen(&s[..2], if &s[..2] == "00" { "11" } else { "00" }, 1)).unwrap();
    audit_fails(&g, "000001.hex");
    std::fs::write(&seed, s).unwrap();
    // The last record deleted: its state and reports are left behind.
    let last = std::fs::read_dir(g.join("records")).unwrap().count() / 2 - 1;
    let rec = g.join("records").join(format!("{last:06}.json"));
    std::fs::remove_file(&rec).unwrap();
    std::fs::remove_file(pipeline_sig(&rec)).unwrap();
    audit_fails(&g, &format!("exists without record {last}"));
}

#[test]
fn a_locked_game_is_skipped_by_adjudicate() {
    let t = Table::new();
    let lock = std::fs::File::options().create(true).truncate(false).write(true).open(t.game().join(".lock")).unwrap();
    lock.try_lock().unwrap();
    pbem().arg("adjudicate").arg(t.game()).args(["--now", "2030-01-01T00:00:00Z"]).assert().success()
        .stdout(predicate::str::contains("skipped, locked by another run"));
    drop(lock);
    pbem().arg("adjudicate").arg(t.game()).args(["--now", "2030-01-01T00:00:00Z"]).assert().success()
        .stdout(predicate::str::contains("resolved step(s) 1"));
}

#[test]
fn a_public_copy_without_host_files_audits_clean() {
    let (_t, g) = demo_game();
    std::fs::remove_dir_all(g.join("host")).unwrap();
    std::fs::remove_dir_all(g.join("players")).unwrap();
    pbem().arg("audit").arg(&g).assert().success().stdout(predicate::str::contains("audit passed"));
    // States (which may hold a paused round's plans) and reports (each for its own role) are not
    // published mid-game: a copy of records/ and receipts/ still audits, states by their hashes.
    std::fs::remove_dir_all(g.join("states")).unwrap();
    audit_fails(&g, "states: missing while reports/ is present");
    std::fs::remove_dir_all(g.join("reports")).unwrap();
    pbem().arg("audit").arg(&g).assert().success().stdout(predicate::str::contains("a public copy: no states/ or reports/"));
    // An edited record is still caught there.
    let rec = first_record_with_orders(&g);
    let text = std::fs::read_to_string(&rec).unwrap();
    std::fs::write(&rec, text.replacen("\"seed\": \"", "\"seed\": \"0", 1)).unwrap();
    audit_fails(&g, &rec.file_name().unwrap().to_string_lossy());
}

fn adjudicate_at(t: &Table, now: &str) -> String {
    let out = pbem().arg("adjudicate").arg(t.game()).args(["--now", now]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn record_json(t: &Table, n: u32) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(t.game().join("records").join(format!("{n:06}.json"))).unwrap()).unwrap()
}

#[test]
fn nmr_policy_wait_never_resolves_without_orders() {
    let t = Table::with(&["--nmr", "wait"]);
    assert!(adjudicate_at(&t, "2030-01-01T00:00:00Z").contains("nothing due"));
}

#[test]
fn a_grace_period_delays_the_nmr() {
    // Deadline 72 h after 2026-07-01T12:00Z, plus 2 h of grace.
    let t = Table::with(&["--grace-hours", "2"]);
    assert!(adjudicate_at(&t, "2026-07-04T13:00:00Z").contains("nothing due"));
    assert!(adjudicate_at(&t, "2026-07-04T14:00:00Z").contains("resolved step(s) 1; NMR"));
}

/// `status` in the grace after a deadline says the step is not resolved yet and for how long
/// (tester20 T20a-4); `status --all` too.
#[test]
fn status_in_the_grace_says_how_long_it_lasts() {
    let t = Table::with(&["--grace-hours", "2"]);
    let status = |args: &[&str], now: &str| {
        let out = pbem().arg("status").args(args).args(["--now", now]).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let game = t.game();
    let game = game.to_str().unwrap();
    let one = status(&[game], "2026-07-04T13:00:00Z");
    assert!(one.contains("(passed; grace: 1 hour left before the step is resolved without the missing orders)"), "{one}");
    let all = status(&["--all", t.path().to_str().unwrap()], "2026-07-04T13:00:00Z");
    assert!(all.contains("overdue 1h 0m, grace 1h 0m"), "{all}");
    let after = status(&[game], "2026-07-04T15:00:00Z");
    assert!(after.contains(" (passed)\n"), "{after}");
}

#[test]
fn nmr_policy_bot_hands_a_silent_seat_to_the_built_in_player() {
    for wording in ["1", "0"] {
        bot_covers_a_silent_seat(wording);
    }
}

/// [`nmr_policy_bot_hands_a_silent_seat_to_the_built_in_player`] in a game of report wording
/// `wording` (`pbem new --wording`, hidden): the earlier wording of its reports audits only in a
/// game made before the mark (0).
fn bot_covers_a_silent_seat(wording: &str) {
    let t = Table::with(&["--nmr", "bot", "--bot-after", "1", "--deadline-hours", "1", "--wording", wording]);
    // Step 1: both silent: default orders (first miss).
    adjudicate_at(&t, "2026-07-01T13:00:00Z");
    let r1 = record_json(&t, 1);
    for o in r1["resolution"]["orders"].as_array().unwrap() {
        assert_eq!(o["nmr"], "default", "{o}");
    }
    // Step 2: the Union player sends orders, the Confederate stays silent: the built-in player.
    let uf = t.form("union", "u2.toml");
    pbem().arg("sign").arg("--key").arg(t.key("union")).arg(&uf).assert().success();
    pbem().arg("submit").arg(t.game()).arg(&uf).args(["--now", "2026-07-01T13:10:00Z"]).assert().success();
    adjudicate_at(&t, "2026-07-01T14:10:00Z");
    let r2 = record_json(&t, 2);
    let orders = r2["resolution"]["orders"].as_array().unwrap();
    assert_eq!(orders[0]["role"], "confederate");
    assert_eq!(orders[0]["nmr"], "bot");
    assert!(orders[1].get("nmr").is_none());
    // Each report says whose orders stood in for the silent seat.
    let report = |n: &str| std::fs::read_to_string(t.game().join("reports").join(n).join("union.txt")).unwrap();
    assert!(report("000001").contains("confederate: NMR (no moves received): the default orders were used"), "{}", report("000001"));
    assert!(report("000002").contains("confederate: NMR (no moves received): the built-in player chose the orders"), "{}", report("000002"));
    pbem().arg("audit").arg(t.game()).assert().success();
    // A report an earlier version wrote for that record (its wording: the default orders) still
    // audits (tester13 D1), and no other wording does.
    let union2 = t.game().join("reports").join("000002").join("union.txt");
    let now = report("000002");
    std::fs::write(&union2, now.replace("the built-in player chose the orders", "the default orders were used")).unwrap();
    if wording == "0" {
        pbem().arg("audit").arg(t.game()).assert().success();
    } else {
        audit_fails(&t.game(), "reports/000002/union.txt");
    }
    std::fs::write(&union2, now.replace("the built-in player chose the orders", "the judge chose the orders")).unwrap();
    audit_fails(&t.game(), "reports/000002/union.txt");
    std::fs::write(&union2, &now).unwrap();
    // A host passing off default orders as the built-in player's is caught.
    let rec = t.game().join("records").join("000002.json");
    let text = std::fs::read_to_string(&rec).unwrap().replacen("\"nmr\": \"bot\"", "\"nmr\": \"default\"", 1);
    std::fs::write(&rec, text).unwrap();
    resign(&t.game(), &rec);
    audit_fails(&t.game(), "NMR orders of confederate in step 2");
}

#[test]
fn a_closed_pipe_ends_quietly() {
    // `pbem report ... | head -1`: no panic, no backtrace on stderr.
    let bin = assert_cmd::cargo::cargo_bin!("pbem");
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("(sleep 0.3; '{}' status '{}') | true", bin.display(), Path::new(env!("CARGO_MANIFEST_DIR")).join("turns").join("demo-gettysburg-campaign-18630701").display()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked") && !err.contains("Broken pipe"), "{err}");
}

#[test]
fn a_shipped_scenario_is_chosen_by_name_and_stored_with_the_game() {
    let tmp = tempfile::tempdir().unwrap();
    keygen(tmp.path(), "me");
    let new = |dir: &str, scenario: &str| {
        let mut c = pbem();
        c.arg("new").arg(tmp.path().join(dir)).args(["--rules", "throw-down-that-flag", "--scenario", scenario]);
        c.arg("--player").arg(format!("union:me@x:{}.pub", tmp.path().join("me").display()));
        c
    };
    new("g3", "july-3").assert().success();
    let stored = std::fs::read_to_string(tmp.path().join("g3").join("scenario.toml")).unwrap();
    assert!(stored.contains("name = \"july-3\""), "the game folder keeps the day played");
    new("gx", "july-4").assert().failure().stderr(predicate::str::contains("july-2, july-3"));
}

/// Signs and submits the current form of every asked role, optionally edited.
fn answer_all(t: &Table, now: &str, edit: &dyn Fn(&str, String) -> String) {
    let st = String::from_utf8(pbem().arg("status").arg(t.game()).output().unwrap().stdout).unwrap();
    for role in ["confederate", "union"] {
        if st.lines().any(|l| l.trim_start().starts_with(&format!("{role} (")) && l.contains("awaited")) {
            let f = t.form(role, &format!("{role}-{now}.toml"));
            let text = edit(role, std::fs::read_to_string(&f).unwrap());
            std::fs::write(&f, text).unwrap();
            pbem().arg("sign").arg("--key").arg(t.key(role)).arg(&f).assert().success();
            pbem().arg("submit").arg(t.game()).arg(&f).args(["--now", now]).assert().success();
        }
    }
}

#[test]
fn orders_still_secret_mid_round_are_withheld_from_records_until_the_round_ends() {
    let t = Table::new();
    // Step k happens at 13:00 + k half hours on the first day (deadlines are days away).
    let at = |k: u32| format!("2026-07-01T{:02}:{:02}:00Z", 13 + k / 2, (k % 2) * 30);
    let mut k = 0;
    // No planned moves: whoever wins the initiative is asked for its move mid-round. The nonces
    // are fresh, so the initiative may tie and end the round at once (§6): then play another.
    let no_plans = |_: &str, text: String| text.split("[orders.moves]").next().unwrap().to_string();
    let mut n = 0;
    let mut saw_withheld = false;
    while !saw_withheld {
        assert!(n < 10, "ten rounds without a mid-round step");
        answer_all(&t, &at(k), &no_plans);
        adjudicate_at(&t, &at(k + 1));
        k += 2;
        n += 1;
        loop {
            let rec = record_json(&t, n);
            let orders = rec["resolution"]["orders"].as_array().unwrap();
            let asks: Vec<String> = rec["opening"]["asks"].as_array().map(|a| a.iter().map(|x| x["kind"].as_str().unwrap().to_string()).collect()).unwrap_or_default();
            if asks.iter().all(|kind| kind == "command") {
                if saw_withheld {
                    // The record that closes the round reveals what was withheld.
                    assert!(!rec["reveals"].as_array().unwrap().is_empty(), "{rec}");
                }
                break;
            }
            // Mid-round: the orders are in the record only as commitments.
            for o in orders {
                assert_eq!(o["withheld"], true, "{o}");
                assert!(o.get("text").unwrap().is_null() && o["orders"].as_object().unwrap().is_empty(), "{o}");
            }
            saw_withheld = true;
            // A public copy is audited up to the first withheld orders (these, or a tied
            // initiative's earlier, §7), and its later records only for what needs no replay; the
            // host's copy is audited in full.
            let public = public_copy(&t.game(), &format!("public-{n}"));
            pbem().arg("audit").arg(&public).assert().success().stdout(
                predicate::str::contains("audit passed: up to record ")
                    .and(predicate::str::contains(format!("-{n} were checked without replay")).or(predicate::str::contains(format!("record {n} was checked without replay"))))
                    .and(predicate::str::contains("orders the game still keeps secret")),
            );
            pbem().arg("audit").arg(t.game()).assert().success().stdout(predicate::str::contains("up to record").not());
            // An edit of the host's withheld copy is blamed on that file.
            let withheld = std::fs::read_dir(t.game().join("host").join("withheld")).unwrap().next().unwrap().unwrap().path();
            let copy = std::fs::read_to_string(&withheld).unwrap();
            std::fs::write(&withheld, copy.replacen("Leave [pbem] as it is", "Leave [pbem] as it was", 1)).unwrap();
            audit_fails(&t.game(), &withheld.file_name().unwrap().to_string_lossy());
            std::fs::write(&withheld, copy).unwrap();
            // The host's copy without its withheld copy is not audited in part: it fails.
            let aside = t.path().join("withheld-aside");
            std::fs::rename(t.game().join("host").join("withheld"), &aside).unwrap();
            audit_fails(&t.game(), "missing: the host's copy keeps the withheld orders");
            std::fs::rename(&aside, t.game().join("host").join("withheld")).unwrap();
            answer_all(&t, &at(k), &|_, text| text);
            adjudicate_at(&t, &at(k + 1));
            k += 2;
            n += 1;
            assert!(k < 40, "the round never ended");
        }
    }
    pbem().arg("audit").arg(t.game()).assert().success();
    // Once revealed, the host's withheld copy must still be what the record revealed.
    for entry in std::fs::read_dir(t.game().join("host").join("withheld")).unwrap() {
        let withheld = entry.unwrap().path();
        let copy = std::fs::read_to_string(&withheld).unwrap();
        let edited = copy.replacen("Leave [pbem] as it is", "Leave [pbem] as it was", 1);
        assert_ne!(copy, edited);
        std::fs::write(&withheld, edited).unwrap();
        audit_fails(&t.game(), &withheld.file_name().unwrap().to_string_lossy());
        std::fs::write(&withheld, copy).unwrap();
    }
    // A host changing a late-revealed order (and re-signing the record) is caught.
    let rec = t.game().join("records").join(format!("{n:06}.json"));
    let text = std::fs::read_to_string(&rec).unwrap();
    let at = text.find("\"reveals\"").expect("the closing record has reveals");
    let edited = format!("{}{}", &text[..at], text[at..].replacen("Leave [pbem] as it is", "Leave [pbem] as it was", 1));
    assert_ne!(text, edited);
    std::fs::write(&rec, edited).unwrap();
    resign(&t.game(), &rec);
    // The host's own withheld copy no longer matches; without it, the player's signature fails.
    audit_fails(&t.game(), "differs from the orders of");
    // (Only the copies this record reveals: orders of a tied initiative earlier in the game stay
    // withheld until its end, and the host's copy must keep theirs.)
    for r in record_json(&t, n)["reveals"].as_array().unwrap() {
        let name = format!("{:06}-{}.json", r["step"].as_u64().unwrap(), r["role"].as_str().unwrap());
        std::fs::remove_file(t.game().join("host").join("withheld").join(name)).unwrap();
    }
    audit_fails(&t.game(), "does not match its signature");
}

/// A copy of the game folder without `host/`, as anyone may be given, beside the game.
fn public_copy(game: &Path, name: &str) -> PathBuf {
    let public = game.parent().unwrap().join(name);
    let st = Command::new("cp").arg("-r").arg(game).arg(&public).status().unwrap();
    assert!(st.success());
    std::fs::remove_dir_all(public.join("host")).unwrap();
    public
}

/// Plays the game out on NMR defaults after `from`, one step per run 73 hours apart.
fn play_out_on_defaults(t: &Table, from: &str) {
    let mut now = chrono::DateTime::parse_from_rfc3339(from).unwrap();
    for _ in 0..300 {
        now += chrono::Duration::hours(73);
        if adjudicate_at(t, &now.to_rfc3339()).contains("game over") {
            return;
        }
    }
    panic!("the game did not end on NMR defaults");
}

fn record_text(game: &Path, n: u64) -> String {
    std::fs::read_to_string(game.join("records").join(format!("{n:06}.json"))).unwrap()
}

#[test]
fn commands_of_a_tied_initiative_stay_secret_until_the_game_ends() {
    // Gettysburg §7: on an initiative tie the commands are not carried out, the cards (Lee too)
    // return to the hand, and the opponent is not told which they were. The Confederates play Lee
    // in step 1 of fresh games (fresh nonces) until the dice tie.
    let lee = |role: &str, text: String| {
        if role != "confederate" {
            return text;
        }
        let head = text.split("\n[orders]\n").next().unwrap();
        format!("{head}\n[orders]\ncards = [\"Lee\"]\nlee = \"I\"\n\n[orders.moves]\nI = [\"Manassas\", \"Leesburg\"]\n")
    };
    let mut tries = 0;
    let t = loop {
        tries += 1;
        assert!(tries <= 80, "no initiative tie in 80 fresh games");
        let t = Table::new();
        answer_all(&t, "2026-07-01T13:00:00Z", &lee);
        adjudicate_at(&t, "2026-07-01T13:30:00Z");
        if record_text(&t.game(), 1).contains("Initiative tie") {
            break t;
        }
    };
    let g = t.game();
    // The record keeps the commitments only, marked withheld until the game's end.
    let text = record_text(&g, 1);
    assert!(!text.contains("\"Lee\"") && !text.contains("lee = ") && !text.contains("Manassas\\\", \\\"Leesburg"), "{text}");
    let rec = record_json(&t, 1);
    for o in rec["resolution"]["orders"].as_array().unwrap() {
        assert_eq!((&o["withheld"], &o["withheld_until"]), (&serde_json::json!(true), &serde_json::json!("game-end")), "{o}");
        assert!(o["text"].is_null() && o["signature"].is_null() && o["orders"].as_object().unwrap().is_empty(), "{o}");
        assert!(o["commitment"].is_string(), "{o}");
    }
    // Only the Confederate report says Lee returns to the hand.
    let report = |role: &str| std::fs::read_to_string(g.join("reports").join("000001").join(format!("{role}.txt"))).unwrap();
    assert!(report("confederate").contains("Lee returns to your hand unused; your opponent is not told"));
    assert!(!report("union").contains("returns to your hand"));
    // The host audits everything; a public copy up to the secret orders, and says so.
    pbem().arg("audit").arg(&g).assert().success().stdout(predicate::str::contains("up to record").not());
    let public = public_copy(&g, "public-tie");
    pbem().arg("audit").arg(&public).assert().success().stdout(
        predicate::str::contains("audit passed: up to record 0 (")
            .and(predicate::str::contains("record 1 holds orders the game still keeps secret"))
            .and(predicate::str::contains("audit again when they are revealed")),
    );
    // Without replay, the public copy still checks every order's receipt and the step seeds whose
    // nonces are all known: a withheld order's commitment swapped (and re-signed) is caught.
    let commitment = rec["resolution"]["orders"][1]["commitment"].as_str().unwrap().to_string();
    let forged = public_copy(&g, "public-forged");
    let fpath = forged.join("records").join("000001.json");
    std::fs::write(&fpath, text.replacen(&commitment, &"ab".repeat(32), 1)).unwrap();
    resign(&g, &fpath);
    audit_fails(&forged, "commitment: is not the commitment of the order of union that record 1 used");
    // One more step on NMR defaults; then a forged seed in record 2 is caught without replay.
    adjudicate_at(&t, "2026-07-04T14:31:00Z");
    let forged = public_copy(&g, "public-forged-seed");
    let fpath = forged.join("records").join("000002.json");
    let r2 = std::fs::read_to_string(&fpath).unwrap();
    let seed = record_json(&t, 2)["resolution"]["seed"].as_str().unwrap().to_string();
    std::fs::write(&fpath, r2.replacen(&seed, &"00".repeat(32), 1)).unwrap();
    resign(&g, &fpath);
    audit_fails(&forged, "step seed of step 2 is not derived from the host seed and nonces");
    // A host marking them as due at the round's end (and re-signing) is caught.
    let host_copy = t.path().join("host-copy");
    assert!(Command::new("cp").arg("-r").arg(&g).arg(&host_copy).status().unwrap().success());
    let rpath = host_copy.join("records").join("000001.json");
    std::fs::write(&rpath, text.replace(",\n        \"withheld_until\": \"game-end\"", "")).unwrap();
    resign(&host_copy, &rpath);
    audit_fails(&host_copy, "withheld until the round's end, but the game's rule says withheld until the game's end");
    // Played to the end: the last record reveals them.
    play_out_on_defaults(&t, "2026-07-04T14:31:00Z");
    let last = std::fs::read_dir(g.join("records")).unwrap().count() as u64 / 2 - 1;
    let end = record_json(&t, last as u32);
    assert!(end["outcome"].is_object());
    let reveals = end["reveals"].as_array().expect("the last record reveals");
    for role in ["confederate", "union"] {
        assert!(reveals.iter().any(|r| r["step"] == 1 && r["role"] == role), "{role} of step 1 not revealed: {reveals:?}");
    }
    let lee_revealed = reveals.iter().find(|r| r["step"] == 1 && r["role"] == "confederate").unwrap();
    assert_eq!(lee_revealed["orders"]["cards"], serde_json::json!(["Lee"]));
    pbem().arg("audit").arg(&g).assert().success();
    let public = public_copy(&g, "public-end");
    pbem().arg("audit").arg(&public).assert().success().stdout(predicate::str::contains("up to record").not());
    // A last record that leaves them out (re-signed) is caught.
    let rpath = public.join("records").join(format!("{last:06}.json"));
    let text = std::fs::read_to_string(&rpath).unwrap();
    let (from, to) = (text.find("  \"reveals\": [").unwrap(), text.find("  \"opening\": ").unwrap());
    std::fs::write(&rpath, format!("{}{}", &text[..from], &text[to..])).unwrap();
    resign(&g, &rpath);
    audit_fails(&public, "the game is over, but the orders of confederate in step 1, union in step 1");
    // The host's copy, holding them in host/withheld/, names what the last record should reveal.
    std::fs::copy(&rpath, g.join("records").join(format!("{last:06}.json"))).unwrap();
    std::fs::copy(pipeline_sig(&rpath), pipeline_sig(&g.join("records").join(format!("{last:06}.json")))).unwrap();
    audit_fails(&g, "but the orders due now are confederate of step 1, union of step 1");
}

#[test]
fn events_for_one_player_reach_their_report_but_not_the_public_record() {
    let (_t, g) = demo_game();
    let record = std::fs::read_to_string(g.join("records").join("000001.json")).unwrap();
    assert!(!record.contains("\"to\":"), "a private event is in the public record");
    let union = std::fs::read_to_string(g.join("reports").join("000001").join("union.txt")).unwrap();
    let confederate = std::fs::read_to_string(g.join("reports").join("000001").join("confederate.txt")).unwrap();
    let private: Vec<&str> = union.lines().filter(|l| l.contains("You play")).collect();
    assert!(!private.is_empty(), "the Union report tells its own plays");
    assert!(private.iter().all(|l| !confederate.contains(l) && !record.contains(l.trim_start_matches("  - "))));
    pbem().arg("audit").arg(&g).assert().success();
}

/// A time `hours` after the RFC 3339 time `t`, as records write it.
fn later(t: &str, hours: i64) -> String {
    (chrono::DateTime::parse_from_rfc3339(t).unwrap() + chrono::Duration::hours(hours)).format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Replaces `from` by `to` in a record (each must occur) and re-signs it as the host.
fn edit_record(g: &Path, n: u64, edits: &[(&str, &str)]) {
    let path = g.join("records").join(format!("{n:06}.json"));
    let mut text = std::fs::read_to_string(&path).unwrap();
    for (from, to) in edits {
        assert!(text.contains(from), "{from} not in record {n}");
        text = text.replace(from, to);
    }
    std::fs::write(&path, text).unwrap();
    resign(g, &path);
}

#[test]
fn audit_checks_each_deadline_against_the_game_file() {
    let (_t, g) = demo_game();
    let r0: serde_json::Value = serde_json::from_str(&record_text(&g, 0)).unwrap();
    let deadline = r0["opening"]["deadline"].as_str().unwrap().to_string();
    // One hour more for step 1 than game.toml gives (72 hours from its opening).
    let late = later(&deadline, 1);
    edit_record(&g, 0, &[(&format!("\"deadline\": \"{deadline}\""), &format!("\"deadline\": \"{late}\""))]);
    let line = record_text(&g, 0).lines().position(|l| l.contains(&late)).unwrap() + 1;
    audit_fails(&g, &format!("000000.json:{line}: opening.deadline: is not opening.opened"));
    audit_fails(&g, "plus the 72 hours game.toml gives step 1's asks (command, command)");
}

#[test]
fn audit_catches_an_nmr_before_the_deadline_and_grace() {
    // Deadline 72 h after 2026-07-01T12:00Z, plus 2 h of grace: both seats NMR at 14:00 is fair.
    let t = Table::with(&["--grace-hours", "2"]);
    assert!(adjudicate_at(&t, "2026-07-04T14:00:00Z").contains("NMR"));
    pbem().arg("audit").arg(t.game()).assert().success();
    // A host that ran the step an hour early, with every time made consistent, is still caught.
    edit_record(&t.game(), 1, &[("2026-07-04T14:00:00Z", "2026-07-04T13:00:00Z"), ("2026-07-07T14:00:00Z", "2026-07-07T13:00:00Z")]);
    audit_fails(&t.game(), "000001.json:");
    audit_fails(&t.game(), "resolution.resolved: confederate is NMR in step 1, resolved before its deadline 2026-07-04T12:00:00Z plus 2 grace hour(s) (2026-07-04T14:00:00Z)");
}

#[test]
fn audit_catches_times_going_backwards() {
    let (_t, g) = demo_game();
    let r1: serde_json::Value = serde_json::from_str(&record_text(&g, 1)).unwrap();
    let resolved = r1["resolution"]["resolved"].as_str().unwrap().to_string();
    let deadline = r1["opening"]["deadline"].as_str().unwrap().to_string();
    // Step 2 opened an hour after step 1 was resolved (its deadline moved along).
    let copy = g.parent().unwrap().join("copy");
    assert!(Command::new("cp").arg("-r").arg(&g).arg(&copy).status().unwrap().success());
    edit_record(&copy, 1, &[
        (&format!("\"opened\": \"{resolved}\""), &format!("\"opened\": \"{}\"", later(&resolved, 1))),
        (&format!("\"deadline\": \"{deadline}\""), &format!("\"deadline\": \"{}\"", later(&deadline, 1))),
    ]);
    audit_fails(&copy, "opening.opened: differs from resolution.resolved");
    // Step 1 resolved before it opened.
    edit_record(&g, 1, &[(&resolved, "2000-01-01T00:00:00Z"), (&deadline, "2000-01-04T00:00:00Z")]);
    audit_fails(&g, "resolution.resolved: is before step 1 opened");
}

#[test]
fn audit_catches_a_receipt_issued_outside_its_step() {
    let (_t, g) = demo_game();
    let receipt = g.join("receipts").join("000002").join("union-1.toml");
    let text = std::fs::read_to_string(&receipt).unwrap();
    let line = text.lines().position(|l| l.starts_with("received = ")).unwrap();
    let received = text.lines().nth(line).unwrap().to_string();
    for (when, what) in [("2099-01-01T00:00:00Z", "is after step 2 was resolved in record 2"), ("2000-01-01T00:00:00Z", "is before step 2 opened")] {
        std::fs::write(&receipt, text.replace(&received, &format!("received = \"{when}\""))).unwrap();
        resign_as(&g, &receipt, "pbem-receipt");
        audit_fails(&g, &format!("receipts/000002/union-1.toml:{}: received: {what}", line + 1));
    }
}

#[test]
fn a_player_holding_a_receipt_catches_a_host_that_dropped_their_newer_order() {
    let t = Table::new();
    // The Union sends two orders for step 1 (receipts 1 and 2), the Confederates one.
    for (role, name) in [("union", "u1.toml"), ("union", "u2.toml"), ("confederate", "c1.toml")] {
        let f = t.form(role, name);
        pbem().arg("sign").arg("--key").arg(t.key(role)).arg(&f).assert().success();
        pbem().arg("submit").arg(t.game()).arg(&f).args(["--now", "2026-07-01T13:00:00Z"]).assert().success();
    }
    // What the Union player keeps from the receipt mails.
    let held = t.path().join("held");
    std::fs::create_dir_all(&held).unwrap();
    let receipts = t.game().join("receipts").join("000001");
    for name in ["union-1.toml", "union-1.toml.sig", "union-2.toml", "union-2.toml.sig"] {
        std::fs::copy(receipts.join(name), held.join(name)).unwrap();
    }
    // An honest game: both receipts check.
    let honest = t.path().join("honest");
    assert!(Command::new("cp").arg("-r").arg(t.game()).arg(&honest).status().unwrap().success());
    adjudicate_on(&honest, "2026-07-01T13:30:00Z");
    pbem().arg("audit").arg(&honest).arg("--receipt").arg(held.join("union-1.toml")).arg("--receipt").arg(held.join("union-2.toml")).assert().success()
        .stdout(predicate::str::contains("record 1 used receipt 2"));
    // A dishonest host deletes the newer order and its receipt before adjudicating: its own
    // files audit clean, but the player's receipt 2 shows what happened.
    std::fs::remove_file(receipts.join("union-2.toml")).unwrap();
    std::fs::remove_file(receipts.join("union-2.toml.sig")).unwrap();
    for name in ["union-2.txt", "union-2.txt.sig"] {
        std::fs::remove_file(t.game().join("host").join("sealed").join("000001").join(name)).unwrap();
    }
    adjudicate_at(&t, "2026-07-01T13:30:00Z");
    pbem().arg("audit").arg(t.game()).assert().success();
    pbem().arg("audit").arg(t.game()).arg("--receipt").arg(held.join("union-2.toml")).assert().failure()
        .stderr(predicate::str::contains("missing from the game"));
    // A receipt edited by the player fails its host signature.
    let text = std::fs::read_to_string(held.join("union-1.toml")).unwrap();
    std::fs::write(held.join("union-1.toml"), text.replacen("seq = 1", "seq = 3", 1)).unwrap();
    pbem().arg("audit").arg(t.game()).arg("--receipt").arg(held.join("union-1.toml")).assert().failure()
        .stderr(predicate::str::contains("host signature"));
}

fn adjudicate_on(dir: &Path, now: &str) {
    pbem().arg("adjudicate").arg(dir).args(["--now", now]).assert().success();
}

#[test]
fn state_commitments_cannot_be_matched_by_guessing_until_the_game_ends() {
    let t = Table::new();
    answer_all(&t, "2026-07-01T13:00:00Z", &|_, text| text);
    adjudicate_at(&t, "2026-07-01T13:30:00Z");
    // The state holds secrets (standing orders, a paused round's plans); its plain hash would
    // let anyone test guesses, so the record carries a commitment salted with a secret key.
    let rec = record_json(&t, 1);
    let state = std::fs::read(t.game().join("states").join("000001.json")).unwrap();
    assert_ne!(rec["state"].as_str().unwrap(), pbem::commit::sha256_hex(&state));
    assert!(rec.get("state_key").is_none(), "the key stays secret while the game goes on");
    // A public copy mid-game audits, saying the commitments wait for the key.
    let public = t.path().join("public");
    std::fs::create_dir_all(&public).unwrap();
    for item in ["game.toml", "scenario.toml", "records", "receipts"] {
        assert!(Command::new("cp").arg("-r").arg(t.game().join(item)).arg(&public).status().unwrap().success());
    }
    pbem().arg("audit").arg(&public).assert().success().stdout(predicate::str::contains("state commitments not checked yet"));
}

#[test]
fn the_last_record_reveals_the_state_key_and_a_false_one_is_caught() {
    let (_t, g) = demo_game();
    let last = std::fs::read_dir(g.join("records")).unwrap().count() / 2 - 1;
    let rec = g.join("records").join(format!("{last:06}.json"));
    let text = std::fs::read_to_string(&rec).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let key = v["state_key"].as_str().expect("the last record reveals the state key").to_string();
    assert_eq!(std::fs::read_to_string(g.join("host").join("state_key.hex")).unwrap().trim(), key);
    // With the key revealed, a public copy checks every state commitment.
    let public = g.parent().unwrap().join("public");
    std::fs::create_dir_all(&public).unwrap();
    for item in ["game.toml", "scenario.toml", "records", "receipts"] {
        assert!(Command::new("cp").arg("-r").arg(g.join(item)).arg(&public).status().unwrap().success());
    }
    pbem().arg("audit").arg(&public).assert().success().stdout(predicate::str::contains("every replayed state matching its record's commitment"));
    // A host revealing another key (and re-signing) is caught, in its copy and in the public one.
    let other = format!("{}{}", if key.starts_with('0') { '1' } else { '0' }, &key[1..]);
    std::fs::write(&rec, text.replacen(&key, &other, 1)).unwrap();
    resign(&g, &rec);
    audit_fails(&g, "differs from the state key revealed");
    let public_rec = public.join("records").join(format!("{last:06}.json"));
    std::fs::copy(&rec, &public_rec).unwrap();
    std::fs::copy(pipeline_sig(&rec), pipeline_sig(&public_rec)).unwrap();
    audit_fails(&public, "state commitment");
}

#[test]
#[cfg(unix)]
fn what_is_not_public_is_the_hosts_alone_on_a_shared_machine() {
    use std::os::unix::fs::PermissionsExt;
    let t = Table::new();
    // `host/sealed` is made with the game, so that a step's first order makes only its own
    // folders (issue 11), and as private as the rest of `host/`.
    for dir in ["host", "states", "reports", "host/sealed"] {
        let mode = std::fs::metadata(t.game().join(dir)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{dir}/");
    }
    assert!(t.game().join("receipts").is_dir());
}

#[test]
fn a_superseded_order_brought_back_by_the_host_or_a_nonce_in_capitals_is_caught() {
    let t = Table::new();
    for (role, name) in [("union", "a.toml"), ("union", "b.toml"), ("confederate", "c.toml")] {
        let f = t.form(role, name);
        pbem().arg("sign").arg("--key").arg(t.key(role)).arg(&f).assert().success();
        pbem().arg("submit").arg(t.game()).arg(&f).args(["--now", "2026-07-01T13:00:00Z"]).assert().success();
    }
    // A nonce already used, written in capitals, is the same nonce: refused.
    let used = std::fs::read_to_string(t.path().join("a.toml")).unwrap();
    let nonce = used.lines().find_map(|l| l.strip_prefix("nonce = \"")).unwrap().trim_end_matches('"').to_string();
    let f = t.form("union", "caps.toml");
    let text = std::fs::read_to_string(&f).unwrap();
    let line = text.lines().find(|l| l.starts_with("nonce = ")).unwrap().to_string();
    std::fs::write(&f, text.replacen(&line, &format!("nonce = \"{}\"", nonce.to_uppercase()), 1)).unwrap();
    let st = Command::new("ssh-keygen").args(["-Y", "sign", "-n", "pbem-orders", "-f"]).arg(t.key("union")).arg(&f).output().unwrap();
    assert!(st.status.success());
    pbem().arg("submit").arg(t.game()).arg(&f).args(["--now", "2026-07-01T13:05:00Z"]).assert().failure()
        .stderr(predicate::str::contains("this nonce was already used"));
    // The host re-issues the superseded order A as receipt 3 (signed with its key), so A is used.
    let receipts = t.game().join("receipts").join("000001");
    let sealed = t.game().join("host").join("sealed").join("000001");
    std::fs::copy(sealed.join("union-1.txt"), sealed.join("union-3.txt")).unwrap();
    std::fs::copy(sealed.join("union-1.txt.sig"), sealed.join("union-3.txt.sig")).unwrap();
    let r1 = std::fs::read_to_string(receipts.join("union-1.toml")).unwrap();
    std::fs::write(receipts.join("union-3.toml"), r1.replacen("seq = 1", "seq = 3", 1)).unwrap();
    std::fs::copy(receipts.join("union-1.toml.sig"), receipts.join("union-3.toml.sig")).unwrap();
    resign_as(&t.game(), &receipts.join("union-3.toml"), "pbem-receipt");
    adjudicate_at(&t, "2026-07-01T13:30:00Z");
    audit_fails(&t.game(), "has the commitment of receipt 1: the same order accepted twice");
}

#[test]
fn a_receipt_kept_by_a_player_pins_the_game_setup() {
    let t = Table::new();
    let f = t.form("union", "u.toml");
    pbem().arg("sign").arg("--key").arg(t.key("union")).arg(&f).assert().success();
    pbem().arg("submit").arg(t.game()).arg(&f).args(["--now", "2026-07-01T13:00:00Z"]).assert().success();
    let held = t.path().join("held");
    std::fs::create_dir_all(&held).unwrap();
    let receipts = t.game().join("receipts").join("000001");
    for name in ["union-1.toml", "union-1.toml.sig"] {
        std::fs::copy(receipts.join(name), held.join(name)).unwrap();
    }
    pbem().arg("audit").arg(t.game()).arg("--receipt").arg(held.join("union-1.toml")).assert().success();
    // The host rewrites game.toml (here: a week of grace before any NMR), then record 0's setup
    // hash, and re-signs it.
    let gt = t.game().join("game.toml");
    let game_toml = std::fs::read_to_string(&gt).unwrap();
    let rewritten = game_toml.replacen("grace_hours = 0", "grace_hours = 168", 1);
    assert_ne!(game_toml, rewritten);
    std::fs::write(&gt, &rewritten).unwrap();
    let scenario = std::fs::read(t.game().join("scenario.toml")).unwrap();
    let (old, new) = (pbem::pipeline::setup_hash(game_toml.as_bytes(), &scenario), pbem::pipeline::setup_hash(rewritten.as_bytes(), &scenario));
    let r0 = t.game().join("records").join("000000.json");
    let text = std::fs::read_to_string(&r0).unwrap();
    let old_record = pbem::commit::sha256_hex(text.as_bytes());
    std::fs::write(&r0, text.replacen(&old, &new, 1)).unwrap();
    resign(&t.game(), &r0);
    let new_record = pbem::commit::sha256_hex(&std::fs::read(&r0).unwrap());
    // The reports pin the old record 0: the host rewrites them too (a report a player kept would
    // still show the old one).
    for role in ["confederate", "union"] {
        let rp = t.game().join("reports").join("000000").join(format!("{role}.txt"));
        let text = std::fs::read_to_string(&rp).unwrap();
        std::fs::write(&rp, text.replacen(&old_record, &new_record, 1)).unwrap();
    }
    // The game's own receipt still names the old setup...
    audit_fails(&t.game(), "names another setup than game.toml and scenario.toml");
    // ...so the host re-issues it too; the game's files are consistent again, but the receipt the
    // player kept is not.
    let r = std::fs::read_to_string(receipts.join("union-1.toml")).unwrap();
    std::fs::write(receipts.join("union-1.toml"), r.replacen(&old, &new, 1).replacen(&old_record, &new_record, 1)).unwrap();
    resign_as(&t.game(), &receipts.join("union-1.toml"), "pbem-receipt");
    pbem().arg("audit").arg(t.game()).assert().success();
    pbem().arg("audit").arg(t.game()).arg("--receipt").arg(held.join("union-1.toml")).assert().failure()
        .stderr(predicate::str::contains("was issued for another setup of this game"));
}

#[test]
fn pbem_sign_replaces_a_nonce_the_form_came_with() {
    // `pbem form` runs on the host's machine, so the nonce it writes is the host's: signing draws
    // the player's own (SPEC.md "Step seed").
    let t = Table::new();
    let f = t.form("union", "u.toml");
    let nonce = |text: &str| text.lines().find(|l| l.starts_with("nonce = ")).unwrap().to_string();
    let before = nonce(&std::fs::read_to_string(&f).unwrap());
    pbem().arg("sign").arg("--key").arg(t.key("union")).arg(&f).assert().success();
    let after = nonce(&std::fs::read_to_string(&f).unwrap());
    assert_ne!(before, after);
    assert_eq!(after.len(), "nonce = \"\"".len() + 64);
    pbem().arg("submit").arg(t.game()).arg(&f).args(["--now", "2026-07-01T13:00:00Z"]).assert().success();
    // A nonce written another way TOML allows (a quoted key) is not left in place: sign refuses.
    let g = t.form("confederate", "c.toml");
    let text = std::fs::read_to_string(&g).unwrap();
    let line = nonce(&text);
    std::fs::write(&g, text.replacen(&line, &line.replacen("nonce", "\"nonce\"", 1), 1)).unwrap();
    pbem().arg("sign").arg("--key").arg(t.key("confederate")).arg(&g).assert().failure()
        .stderr(predicate::str::contains("the nonce could not be replaced"));
    // A nonce of zeros (the NMR placeholder) is no randomness: refused at submission.
    let z = t.form("confederate", "z.toml");
    let text = std::fs::read_to_string(&z).unwrap();
    std::fs::write(&z, text.replacen(&nonce(&text), &format!("nonce = \"{}\"", "0".repeat(64)), 1)).unwrap();
    let st = Command::new("ssh-keygen").args(["-Y", "sign", "-n", "pbem-orders", "-f"]).arg(t.key("confederate")).arg(&z).output().unwrap();
    assert!(st.status.success());
    pbem().arg("submit").arg(t.game()).arg(&z).args(["--now", "2026-07-01T13:00:00Z"]).assert().failure()
        .stderr(predicate::str::contains("a nonce of zeros is no randomness"));
}

#[test]
fn a_history_cut_short_is_caught_by_its_receipts() {
    let (t, g) = demo_game();
    let held = t.path().join("held");
    assert!(Command::new("cp").arg("-r").arg(g.join("receipts")).arg(&held).status().unwrap().success());
    // The host deletes the last two records (the game's end and its reveals with them).
    let last = std::fs::read_dir(g.join("records")).unwrap().count() as u64 / 2 - 1;
    for n in [last - 1, last] {
        let rec = g.join("records").join(format!("{n:06}.json"));
        std::fs::remove_file(&rec).unwrap();
        std::fs::remove_file(pipeline_sig(&rec)).unwrap();
        std::fs::remove_file(g.join("states").join(format!("{n:06}.json"))).unwrap();
        std::fs::remove_dir_all(g.join("reports").join(format!("{n:06}"))).unwrap();
    }
    // Receipts for the step the deleted record opened give it away...
    audit_fails(&g, "receipts for a step no record opened");
    // ...so it deletes them too; the game's files are consistent, but a receipt the player kept
    // for that step is not.
    std::fs::remove_dir_all(g.join("receipts").join(format!("{last:06}"))).unwrap();
    // The host seed drawn for that step gives it away too...
    audit_fails(&g, &format!("holds the host seed of step {last}, which no record reached"));
    // ...so it deletes the host's files of the removed steps as well.
    std::fs::remove_file(g.join("host").join("seeds").join(format!("{last:06}.hex"))).unwrap();
    let _ = std::fs::remove_dir_all(g.join("host").join("sealed").join(format!("{last:06}")));
    for f in std::fs::read_dir(g.join("host").join("withheld")).into_iter().flatten() {
        let p = f.unwrap().path();
        if p.file_name().unwrap().to_str().unwrap()[..6].parse::<u64>().unwrap() >= last - 1 {
            std::fs::remove_file(p).unwrap();
        }
    }
    pbem().arg("audit").arg(&g).assert().success();
    let kept = std::fs::read_dir(held.join(format!("{last:06}"))).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|x| x == "toml")).unwrap();
    pbem().arg("audit").arg(&g).arg("--receipt").arg(&kept).assert().failure()
        .stderr(predicate::str::contains("the history was rewritten or cut short"));
}

#[test]
fn a_key_path_in_game_toml_or_a_withheld_mark_in_a_game_that_never_withholds_is_refused() {
    // Throw Down That Flag publishes every step at once: a public copy whose record marks orders
    // withheld (to switch the replay off) is refused.
    let tmp = tempfile::tempdir().unwrap();
    let g = tmp.path().join("t");
    pbem().arg("demo").args(["--rules", "throw-down-that-flag", "--out"]).arg(&g).args(["--seed", SEED]).assert().success();
    let public = public_copy(&g, "public");
    std::fs::remove_dir_all(public.join("states")).unwrap();
    std::fs::remove_dir_all(public.join("reports")).unwrap();
    let mut v = record_json_at(&public, 1);
    let o = &mut v["resolution"]["orders"][0];
    o["text"] = serde_json::Value::Null;
    o["signature"] = serde_json::Value::Null;
    o["orders"] = serde_json::json!({});
    o["withheld"] = serde_json::json!(true);
    let path = public.join("records").join("000001.json");
    std::fs::write(&path, pbem::model::record_bytes(&serde_json::from_value(v).unwrap())).unwrap();
    resign(&g, &path);
    audit_fails(&public, "publishes every step at once");
    // A seat key given in game.toml as a file path (whose contents could change while game.toml,
    // and so the setup hash, stays the same) is refused.
    let t = Table::new();
    let gt = t.game().join("game.toml");
    let text = std::fs::read_to_string(&gt).unwrap();
    let line = text.lines().find(|l| l.starts_with("key = \"ssh-ed25519")).unwrap().to_string();
    let keyfile = t.path().join("seat.pub");
    std::fs::write(&keyfile, format!("{}\n", line.trim_start_matches("key = \"").trim_end_matches('"'))).unwrap();
    std::fs::write(&gt, text.replacen(&line, &format!("key = \"{}\"", keyfile.display()), 1)).unwrap();
    audit_fails(&t.game(), "its second word is not a key");
}

fn record_json_at(g: &Path, n: u64) -> serde_json::Value {
    serde_json::from_str(&record_text(g, n)).unwrap()
}

/// Base64 of `bytes` in 76-character lines, as a mail client writes a body part.
fn base64_lines(bytes: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for c in bytes.chunks(3) {
        let n = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        for i in 0..4 {
            s.push(if i <= c.len() { A[(n >> (18 - 6 * i) & 63) as usize] as char } else { '=' });
        }
    }
    s.as_bytes().chunks(76).map(|l| format!("{}\r\n", std::str::from_utf8(l).unwrap())).collect()
}

#[test]
fn a_kept_report_pins_the_history_and_the_end_of_the_game() {
    let (t, g) = demo_game();
    let last = std::fs::read_dir(g.join("records")).unwrap().count() / 2 - 1;
    let report = |n: usize, role: &str| std::fs::read_to_string(g.join("reports").join(format!("{n:06}")).join(format!("{role}.txt"))).unwrap();
    let keep = |name: &str, text: &str| {
        let p = t.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    };
    // What players keep: the final report as text, a mid-game report quoted in a reply, and the
    // final report as a whole saved mail (its body base64-encoded, as clients send UTF-8).
    let fin = keep("final.txt", &report(last, "union"));
    // A reply that quotes an older report below the final one: every block counts.
    let older: String = report(last - 1, "union").lines().map(|l| format!("> {l}\n")).collect();
    let thread = keep("thread.txt", &format!("{}\n{older}", report(last, "union")));
    let quoted: String = report(3, "confederate").lines().map(|l| format!("> {l}\n")).collect();
    let mid = keep("mid.txt", &format!("On Friday the judge wrote:\n{quoted}\nThanks.\n"));
    let eml = keep("final.eml", &format!(
        "From: judge@example.org\r\nTo: meade@example.org\r\nSubject: [pbem] final result\r\nMIME-Version: 1.0\r\n\
         Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n{}",
        base64_lines(report(last, "confederate").as_bytes())
    ));
    let audit = |reports: &[&Path]| {
        let mut c = pbem();
        c.arg("audit").arg(&g);
        for r in reports {
            c.arg("--report").arg(r);
        }
        c.assert()
    };
    audit(&[&fin, &mid, &eml, &thread]).success().stdout(
        predicate::str::contains(format!("the game ends with record {last} as this report says"))
            .and(predicate::str::contains("record 3 is in the game with this report's hash"))
            .and(predicate::str::contains("final.eml: the game ends")),
    );
    // A forged hash, another game's report, and a report edited to say the game ended.
    let mid_text = report(3, "confederate");
    let hash = mid_text.lines().find_map(|l| l.trim().strip_prefix("sha256: ")).unwrap().to_string();
    let forged = keep("forged.txt", &mid_text.replace(&hash, &format!("{}{}", if hash.starts_with('0') { "1" } else { "0" }, &hash[1..])));
    audit(&[&forged]).failure().stderr(predicate::str::contains("forged.txt").and(predicate::str::contains("the history was rewritten")));
    let id = mid_text.lines().find_map(|l| l.trim().strip_prefix("game:   ")).unwrap().to_string();
    let other = keep("other.txt", &mid_text.replace(&format!("game:   {id}\n"), "game:   g2\n"));
    audit(&[&other]).failure().stderr(predicate::str::contains(format!("is a report of game g2, not of {id}")));
    let over = keep("over.txt", &mid_text.replace("over:   no, the game goes on", "over:   yes"));
    audit(&[&over]).failure().stderr(predicate::str::contains("the report was edited"));
    // The host removes the final record with its state and reports: the game's files alone still
    // audit clean, and so does the mid-game report; the kept final report does not.
    let rec = g.join("records").join(format!("{last:06}.json"));
    std::fs::remove_file(&rec).unwrap();
    std::fs::remove_file(pipeline_sig(&rec)).unwrap();
    std::fs::remove_file(g.join("states").join(format!("{last:06}.json"))).unwrap();
    std::fs::remove_dir_all(g.join("reports").join(format!("{last:06}"))).unwrap();
    audit(&[&mid]).success();
    audit(&[&thread]).failure().stderr(predicate::str::contains("thread.txt").and(predicate::str::contains("cut short")));
    audit(&[&fin]).failure().stderr(
        predicate::str::contains(format!("follows record {last}"))
            .and(predicate::str::contains(format!("{last:06}.json is missing")))
            .and(predicate::str::contains("cut short, and the end of the game removed")),
    );
}

#[test]
fn audit_notices_host_files_of_steps_no_record_reached() {
    let (_t, g) = demo_game();
    let last = std::fs::read_dir(g.join("records")).unwrap().count() / 2 - 1;
    // The host removes the last two records with their states, reports and the receipts of the step
    // the removed record opened; the host seed it drew for that step stays behind.
    for n in [last, last - 1] {
        let rec = g.join("records").join(format!("{n:06}.json"));
        std::fs::remove_file(&rec).unwrap();
        std::fs::remove_file(pipeline_sig(&rec)).unwrap();
        std::fs::remove_file(g.join("states").join(format!("{n:06}.json"))).unwrap();
        std::fs::remove_dir_all(g.join("reports").join(format!("{n:06}"))).unwrap();
    }
    let _ = std::fs::remove_dir_all(g.join("receipts").join(format!("{last:06}")));
    audit_fails(&g, &format!("{last:06}.hex: holds the host seed of step {last}, which no record reached (the last record is {})", last - 2));
}

#[test]
fn a_report_template_without_the_pin_block_is_refused_before_anything_is_written() {
    let t = Table::new();
    let tpl = t.path().join("tpl");
    std::fs::create_dir(&tpl).unwrap();
    std::fs::write(tpl.join("report.txt"), "{{ title }}: report for {{ role }}\n{% include \"games/\" ~ rules ~ \".txt\" %}\n").unwrap();
    pbem().arg("adjudicate").arg("--templates").arg(&tpl).arg(t.game()).args(["--now", "2026-07-05T12:00:00Z"]).assert().failure()
        .stderr(predicate::str::contains("report.txt must show {{ pin }} (the KEEP THIS REPORT block)"));
    assert!(!t.game().join("states").join("000001.json").exists(), "a state was written for a step whose reports failed");
    assert!(!t.game().join("records").join("000001.json").exists());
    // With the built-in templates the step resolves as before.
    pbem().arg("adjudicate").arg(t.game()).args(["--now", "2026-07-05T12:00:00Z"]).assert().success();
    pbem().arg("audit").arg(t.game()).assert().success();
}

/// A folder named like a template in the override folder is refused, naming it (not a silent fall
/// back to the built-in template: tester9 D10); nothing of the step is written.
#[test]
fn a_folder_in_place_of_a_template_file_is_refused() {
    let t = Table::new();
    let tpl = t.path().join("tpl");
    std::fs::create_dir_all(tpl.join("report.txt")).unwrap();
    pbem().arg("adjudicate").arg("--templates").arg(&tpl).arg(t.game()).args(["--now", "2026-07-05T12:00:00Z"]).assert().failure()
        .stderr(predicate::str::contains(format!("{}: a folder, where a template file is expected", tpl.join("report.txt").display())));
    assert!(!t.game().join("records").join("000001.json").exists());
}

/// `FILE` with `c` put into its appended armored signature, at the 70th base64 character: a
/// character of several bytes there straddles a 70-byte line of the re-wrapped block.
fn with_char_in_armor(file: &Path, c: char) {
    let text = std::fs::read_to_string(file).unwrap();
    let at = text.find("-----BEGIN SSH SIGNATURE-----\n").unwrap() + "-----BEGIN SSH SIGNATURE-----\n".len() + 69;
    let mut bad = text.clone();
    bad.insert(at, c);
    std::fs::write(file, bad).unwrap();
}

#[test]
fn a_non_ascii_character_in_the_armor_is_refused_not_a_crash() {
    let t = Table::new();
    for (i, c) in ['\u{e9}', '\u{2014}', '\u{1F600}'].into_iter().enumerate() {
        let f = t.form("union", &format!("accent-{i}.toml"));
        pbem().arg("sign").arg("--key").arg(t.key("union")).arg(&f).arg("--append").assert().success();
        with_char_in_armor(&f, c);
        let not_base64 = predicate::str::contains("not base64");
        pbem().arg("verify").arg(&f).arg("--game").arg(t.game()).assert().code(1).stderr(not_base64.clone());
        pbem().arg("verify").arg(&f).arg("--key").arg(t.path().join("union.pub")).assert().code(1).stderr(not_base64.clone());
        pbem().arg("submit").arg(t.game()).arg(&f).assert().code(1).stderr(not_base64);
    }
    // In a detached signature too.
    let f = t.form("union", "detached.toml");
    pbem().arg("sign").arg("--key").arg(t.key("union")).arg(&f).assert().success();
    with_char_in_armor(&pipeline_sig(&f), '\u{e9}');
    pbem().arg("submit").arg(t.game()).arg(&f).assert().code(1).stderr(predicate::str::contains("not base64"));
    assert!(!t.game().join("receipts").exists() || std::fs::read_dir(t.game().join("receipts")).unwrap().next().is_none());
}

/// A sparse file of `len` bytes (no disk used): only its length says how large it is.
fn sparse(path: &Path, len: u64) -> PathBuf {
    std::fs::File::create(path).unwrap().set_len(len).unwrap();
    path.to_path_buf()
}

#[test]
fn order_signature_and_key_files_are_size_limited() {
    let t = Table::new();
    let limit = predicate::str::contains("larger than an order file may be (1048576 bytes)");
    for len in [(1 << 20) + 1, 1 << 30] {
        let big = sparse(&t.path().join("big.toml"), len);
        pbem().arg("verify").arg(&big).arg("--game").arg(t.game()).assert().code(1).stderr(limit.clone().and(predicate::str::contains("big.toml")));
        pbem().arg("verify").arg(&big).arg("--key").arg(t.path().join("union.pub")).assert().code(1).stderr(limit.clone());
        pbem().arg("submit").arg(t.game()).arg(&big).assert().code(1).stderr(limit.clone());
        pbem().arg("sign").arg("--key").arg(t.key("union")).arg(&big).assert().code(1).stderr(limit.clone());
    }
    // A detached signature beside a good order.
    let f = t.form("union", "u.toml");
    sparse(&pipeline_sig(&f), (1 << 20) + 1);
    pbem().arg("submit").arg(t.game()).arg(&f).assert().code(1)
        .stderr(predicate::str::contains("u.toml.sig").and(predicate::str::contains("larger than a signature file may be")));
    // Key files.
    let f = t.form("union", "v.toml");
    let key = sparse(&t.path().join("huge.pub"), 1 << 20);
    pbem().arg("verify").arg(&f).arg("--key").arg(&key).assert().code(1)
        .stderr(predicate::str::contains("huge.pub").and(predicate::str::contains("larger than a key file may be (65536 bytes)")));
    let key = sparse(&t.path().join("huge"), 1 << 20);
    pbem().arg("sign").arg("--key").arg(&key).arg(&f).assert().code(1)
        .stderr(predicate::str::contains("larger than a key file may be"));
}

#[test]
fn a_withheld_copy_left_by_an_interrupted_run_is_cleared_and_a_stray_one_fails_the_audit() {
    // A run killed after writing a withheld copy of step 1 and before its record: the copy is
    // junk. The next adjudication resolves step 1 again (published now, or withheld afresh).
    let t = Table::new();
    let stale = t.game().join("host").join("withheld").join("000001-union.json");
    std::fs::create_dir_all(stale.parent().unwrap()).unwrap();
    std::fs::write(&stale, "{\"step\": 1, \"role\": \"union\", \"text\": \"# seq 1\"}\n").unwrap();
    pbem().arg("adjudicate").arg(t.game()).args(["--now", "2026-07-05T12:00:00Z"]).assert().success();
    let text = std::fs::read_to_string(&stale).unwrap_or_default();
    assert!(!text.contains("# seq 1"), "the interrupted run's copy is gone: {text}");
    pbem().arg("audit").arg(t.game()).assert().success();
    // A copy of orders a record published, put there since: the audit names it.
    let (_d, g) = demo_game();
    let rec: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(g.join("records").join("000001.json")).unwrap()).unwrap();
    let published = rec["resolution"]["orders"].as_array().unwrap().iter().find(|o| !o["withheld"].as_bool().unwrap_or(false)).unwrap();
    let role = published["role"].as_str().unwrap();
    let stray = g.join("host").join("withheld").join(format!("000001-{role}.json"));
    std::fs::create_dir_all(stray.parent().unwrap()).unwrap();
    std::fs::write(&stray, "{}\n").unwrap();
    audit_fails(&g, &format!("000001-{role}.json: holds withheld orders of {role} in step 1, but record"));
}

#[test]
fn a_game_with_a_record_missing_in_the_middle_goes_no_further() {
    // A record lost from the middle of the chain (deleted, or a bad restore): the next step would
    // be written in the gap and later ones over the records after it, so every command that would
    // load the game to go on refuses, naming the missing record, and nothing after it changes.
    let (_t, g) = demo_game();
    let gap = g.join("records").join("000010.json");
    std::fs::remove_file(&gap).unwrap();
    let after: Vec<_> = (11..14).map(|n| std::fs::read(g.join("records").join(format!("{n:06}.json"))).unwrap()).collect();
    let late = ["--now", "2026-08-01T00:00:00Z"];
    for cmd in [&["adjudicate"][..], &["status"][..]] {
        pbem().args(cmd).arg(&g).args(late).assert().failure()
            .stderr(predicate::str::contains("000010.json"))
            .stderr(predicate::str::contains("later records exist up to"));
    }
    assert!(!gap.exists());
    for (i, bytes) in after.iter().enumerate() {
        assert_eq!(&std::fs::read(g.join("records").join(format!("{:06}.json", 11 + i))).unwrap(), bytes);
    }
    // The audit names the same gap as its own finding.
    audit_fails(&g, "missing (deleted record?): later records exist");
}

#[test]
fn a_game_with_a_record_missing_its_signature_goes_no_further() {
    // The host signature of a record is written before the record: lost or deleted later, every
    // command that would load the game to go on refuses, naming it (a record signed after it
    // would chain to one no audit can check); the audit fails on it too.
    let (_t, g) = demo_game();
    let sig = g.join("records").join("000010.json.sig");
    std::fs::remove_file(&sig).unwrap();
    let late = ["--now", "2026-08-01T00:00:00Z"];
    for cmd in [&["adjudicate"][..], &["status"][..]] {
        pbem().args(cmd).arg(&g).args(late).assert().failure()
            .stderr(predicate::str::contains("000010.json.sig"))
            .stderr(predicate::str::contains("missing (deleted signature?)"));
    }
    assert!(!sig.exists());
    let out = pbem().arg("audit").arg(&g).output().unwrap();
    assert!(!out.status.success());
}

/// The process id of a process that has ended (a temp name of a killed run holds one).
fn dead_pid() -> u32 {
    let mut c = Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

/// The hidden folders in `dir`.
fn hidden(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap()).filter(|e| e.path().is_dir()).map(|e| e.file_name().to_string_lossy().into_owned()).filter(|n| n.starts_with('.')).collect();
    v.sort();
    v
}

#[test]
fn a_killed_new_leaves_only_a_hidden_folder_that_no_run_sees_and_the_next_new_removes() {
    // `pbem new` builds the game in a hidden folder beside its place, renamed into place last: a
    // `new` of g2 killed at any write point leaves that folder (here with every file but the
    // rename), its process gone.
    let t = Table::new();
    let root = t.path();
    let left = root.join(format!(".g2.{}.0.tmp", dead_pid()));
    assert!(Command::new("cp").arg("-a").arg(t.game()).arg(&left).status().unwrap().success());
    // Another game's: over an hour old, and one whose run may still be going.
    let (old, young) = (root.join(format!(".g8.{}.0.tmp", dead_pid())), root.join(format!(".g9.{}.0.tmp", dead_pid())));
    for d in [&old, &young] {
        std::fs::create_dir(d).unwrap();
        std::fs::write(d.join("game.toml"), "").unwrap();
    }
    assert!(Command::new("touch").args(["-d", "2 hours ago"]).arg(&old).status().unwrap().success());
    // No sweep, status or mail run sees it.
    let out = pbem().args(["adjudicate", "--all"]).arg(root).args(["--now", "2026-07-01T13:00:00Z"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let names: Vec<String> = [&left, &old, &young].iter().map(|d| d.file_name().unwrap().to_string_lossy().into_owned()).collect();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("g1: nothing due") && names.iter().all(|n| !text.contains(n.as_str())), "{text}");
    let out = pbem().args(["status", "--all"]).arg(root).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && names.iter().all(|n| !text.contains(n.as_str())) && !text.contains("more than one folder"), "{text}");
    // The next `new` of g2 removes it (and the other game's old one) and makes g2.
    let made = root.join("g2");
    pbem().arg("new").arg(&made).args(["--rules", "gettysburg-campaign", "--now", "2026-07-01T12:00:00Z"])
        .arg("--player").arg(format!("confederate:lee@example.org:{}", root.join("conf.pub").display()))
        .arg("--player").arg(format!("union:meade@example.org:{}", root.join("union.pub").display()))
        .assert().success().stdout(predicate::str::contains("created game g2"));
    assert_eq!(hidden(root), [young.file_name().unwrap().to_string_lossy().into_owned()]);
    pbem().arg("audit").arg(&made).assert().success();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(made.join("host")).unwrap().permissions().mode() & 0o777, 0o700);
    }
    // An empty folder made for it beforehand takes the game, its mode kept.
    let empty = root.join("g3");
    std::fs::create_dir(&empty).unwrap();
    pbem().arg("new").arg(&empty).args(["--rules", "gettysburg-campaign", "--now", "2026-07-01T12:00:00Z"])
        .arg("--player").arg(format!("confederate:lee@example.org:{}", root.join("conf.pub").display()))
        .arg("--player").arg(format!("union:meade@example.org:{}", root.join("union.pub").display()))
        .assert().success();
    pbem().arg("audit").arg(&empty).assert().success();
    assert_eq!(hidden(root), [young.file_name().unwrap().to_string_lossy().into_owned()]);
}

/// Throw Down That Flag's short account of a step whose orders the seat did not send says they
/// were the default orders, not "your order" (tester20 T20c-2, report wording 2), and the game
/// audits.
#[test]
fn a_short_account_says_an_nmr_order_was_not_yours() {
    for (nmr, says) in [(&["--nmr", "defaults"][..], "(the default orders: you sent none)"), (&["--nmr", "bot", "--bot-after", "0"][..], "(the built-in player's orders: you sent none)")] {
        let tmp = tempfile::tempdir().unwrap();
        keygen(tmp.path(), "union");
        let game = tmp.path().join("t3");
        pbem().arg("new").arg(&game).args(["--rules", "throw-down-that-flag", "--scenario", "july-3", "--now", "2026-07-01T12:00:00Z"]).args(nmr)
            .arg("--player").arg(format!("union:u@example.org:{}", tmp.path().join("union.pub").display())).assert().success();
        for now in ["2026-07-05T00:00:00Z", "2026-07-09T00:00:00Z", "2026-07-13T00:00:00Z"] {
            pbem().arg("adjudicate").arg(&game).args(["--now", now]).assert().success();
        }
        let report = String::from_utf8(pbem().arg("report").arg(&game).args(["--role", "union"]).output().unwrap().stdout).unwrap();
        let flat = report.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains(says) && !flat.contains("(your order)"), "{nmr:?}: {report}");
        // Wrapped again as the game wraps its lines (tester21 T21a-6): none runs past 90 columns
        // and its indent.
        let short: Vec<&str> = report.lines().skip_while(|l| !l.contains("In short")).take_while(|l| !l.contains("In full")).collect();
        assert!(short.len() > 1 && short.iter().all(|l| l.chars().count() <= 96), "{nmr:?}: {short:#?}");
        pbem().arg("audit").arg(&game).assert().success();
    }
}

/// An output file the user names is written as a shell's `>` would, whole (tester T24b-1: a link
/// was replaced by a file of the link's mode 0777, and `-o /dev/stdout` replaced the system's
/// link): a link is followed and its target keeps its mode; a FIFO is written through; `-` is
/// standard output, with no "wrote" line in it.
#[test]
fn an_output_through_a_link_a_fifo_or_dash_is_written_where_it_points() {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let t = Table::new();
    let form = |out: &Path| pbem().arg("form").arg(t.game()).args(["--role", "union", "-o"]).arg(out).output().unwrap();
    // A form but for its nonce (fresh each time).
    let unnonced = |b: Vec<u8>| String::from_utf8(b).unwrap().lines().filter(|l| !l.starts_with("nonce = ")).collect::<Vec<_>>().join("\n");
    let expected = unnonced(pbem().arg("form").arg(t.game()).args(["--role", "union"]).output().unwrap().stdout);
    assert!(expected.contains("[pbem]"));
    let (target, link) = (t.path().join("target.toml"), t.path().join("link.toml"));
    std::fs::write(&target, "old").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
    std::os::unix::fs::symlink("target.toml", &link).unwrap();
    assert!(form(&link).status.success());
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
    assert_eq!(unnonced(std::fs::read(&target).unwrap()), expected);
    assert_eq!(std::fs::metadata(&target).unwrap().permissions().mode() & 0o777, 0o640, "the target keeps its mode");
    // A link to a name not made yet: made there.
    std::os::unix::fs::symlink("made.toml", t.path().join("dangling")).unwrap();
    assert!(form(&t.path().join("dangling")).status.success());
    assert_eq!(unnonced(std::fs::read(t.path().join("made.toml")).unwrap()), expected);
    // `-`: standard output, the form alone.
    let dash = form(Path::new("-"));
    assert!(dash.status.success());
    assert_eq!(unnonced(dash.stdout), expected);
    assert!(!t.path().join("-").exists());
    // A link to a pipe (`/dev/stdout` is a link to this): the form on standard output alone.
    let piped = form(Path::new("/proc/self/fd/1"));
    assert!(piped.status.success(), "{}", String::from_utf8_lossy(&piped.stderr));
    assert_eq!(unnonced(piped.stdout), expected);
    // A FIFO: written through to its reader, still a FIFO.
    let fifo = t.path().join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let through = form(&fifo);
    assert!(through.status.success(), "{}", String::from_utf8_lossy(&through.stderr));
    assert_eq!(unnonced(reader.join().unwrap()), expected);
    assert!(through.stdout.is_empty(), "no \"wrote\" line for a stream");
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO stays a FIFO");
    // A picture through a link (the link stays).
    std::os::unix::fs::symlink("board.svg", t.path().join("picture-link.svg")).unwrap();
    pbem().arg("report").arg(t.game()).arg("--picture").arg(t.path().join("picture-link.svg")).assert().success();
    assert!(std::fs::symlink_metadata(t.path().join("picture-link.svg")).unwrap().file_type().is_symlink());
    assert!(std::fs::read_to_string(t.path().join("board.svg")).unwrap().starts_with("<svg"));
    // A public copy through a link too.
    std::os::unix::fs::symlink("public.tar", t.path().join("public-link")).unwrap();
    pbem().arg("public").arg(t.game()).arg("--out").arg(t.path().join("public-link")).assert().success();
    assert!(std::fs::metadata(t.path().join("public.tar")).unwrap().permissions().mode() & 0o002 == 0);
}
