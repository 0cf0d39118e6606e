//! Hours a host gives (deadlines, grace, reminders) are bounded where they are given, and a game
//! whose stored files hold more anyway fails alone: the real binary never panics on them, never
//! writes a time past year 9999 it could not read back, and a sweep resolves the other games.

use std::path::Path;

mod support;
use support::{keygen, pbem};

const START: &str = "2026-07-01T12:00:00Z";
/// Past step 1's deadline (72 hours after [`START`]).
const LATE: &str = "2026-07-04T13:00:00Z";

/// `pbem new ROOT/ID` for Gettysburg with both seats (keys made in `root`) and `extra` arguments.
fn new_game(root: &Path, id: &str, extra: &[&str]) -> assert_cmd::assert::Assert {
    let conf = keygen(root, &format!(".conf-{id}"));
    let union = keygen(root, &format!(".union-{id}"));
    pbem()
        .arg("new")
        .arg(root.join(id))
        .args(["--rules", "gettysburg-campaign"])
        .args(["--player", &format!("confederate:lee@example.org:{}.pub", conf.display())])
        .args(["--player", &format!("union:meade@example.org:{}.pub", union.display())])
        .args(if extra.contains(&"--now") { &[][..] } else { &["--now", START][..] })
        .args(extra)
        .assert()
}

/// `cmd` exits 1 (not a panic's 101) and its standard error ends in the line `pbem: LINE`.
fn fails_with(mut cmd: assert_cmd::Command, line: &str) {
    let out = cmd.output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.lines().last().is_some_and(|l| l.starts_with("pbem: ")) && err.ends_with(&format!("{line}\n")), "{err}");
}

/// `pbem CMD GAME ARGS`.
fn on(cmd: &str, game: &Path, args: &[&str]) -> assert_cmd::Command {
    let mut c = pbem();
    c.arg(cmd).arg(game).args(args);
    c
}

fn records(game: &Path) -> usize {
    std::fs::read_dir(game.join("records")).unwrap().filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".json")).count()
}

/// Sets `key = ...` in `game.toml`'s `[deadlines]` to `value`, as a host editing it by hand.
fn edit_deadlines(game: &Path, key: &str, value: &str) {
    let path = game.join("game.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let edited: Vec<String> = text.lines().map(|l| if l.starts_with(&format!("{key} =")) { format!("{key} = {value}") } else { l.to_string() }).collect();
    assert_ne!(edited.join("\n") + "\n", text);
    std::fs::write(&path, edited.join("\n") + "\n").unwrap();
}

#[test]
fn new_refuses_hours_past_a_year_naming_the_flag_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let cases: [(&[&str], &str); 5] = [
        (&["--grace-hours", "4294967295"], "--grace-hours 4294967295: at most 8784 hours (a year)"),
        (&["--deadline-hours", "4294967295"], "--deadline-hours 4294967295: at most 8784 hours (a year)"),
        (&["--deadline-hours", "8785"], "--deadline-hours 8785: at most 8784 hours (a year)"),
        (&["--deadline", "move=4294967295"], "--deadline move=4294967295: at most 8784 hours (a year)"),
        (&["--deadline-hours", "2000000000"], "--deadline-hours 2000000000: at most 8784 hours (a year)"),
    ];
    for (i, (extra, line)) in cases.into_iter().enumerate() {
        let out = new_game(root, &format!("g{i}"), extra).code(1).get_output().clone();
        assert_eq!(String::from_utf8(out.stderr).unwrap(), format!("pbem: {line}\n"));
        assert!(!root.join(format!("g{i}")).exists());
    }
    new_game(root, "year", &["--deadline-hours", "8784", "--grace-hours", "8784", "--deadline", "move=8784"]).success();
    pbem().arg("audit").arg(root.join("year")).assert().success();
    let help = String::from_utf8(pbem().args(["new", "--help"]).output().unwrap().stdout).unwrap();
    assert!(help.contains("1 to 8784, a year") && help.contains("at most 8784, a year"), "{help}");
}

#[test]
fn no_deadline_past_year_9999_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let out = new_game(root, "fut", &["--now", "9999-12-31T00:00:00Z"]).code(1).get_output().clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.ends_with("pbem: step 1's deadline: 9999-12-31T00:00:00Z and 72 hours later is past 9999-12-31T23:59:59Z, the last time pbem can write\n"), "{err}");
    assert!(!root.join("fut").exists());
    // Nor through an offset: 23:00 at -23:00 on the last day is in year 10000 in UTC.
    let out = new_game(root, "fut2", &["--now", "9999-12-31T23:00:00-23:00"]).failure().get_output().clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.ends_with("in UTC not between 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z\n") && !err.contains("+10000"), "{err}");
    assert!(!root.join("fut2").exists());
    // Nor a game whose first deadline and grace pass it: it could never be resolved (tester13 D6).
    let out = new_game(root, "fut3", &["--now", "9999-01-01T00:00:00Z", "--deadline-hours", "8000", "--grace-hours", "8784"]).code(1).get_output().clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.ends_with("pbem: step 1's deadline and grace: 9999-11-30T08:00:00Z and 8784 hours later is past 9999-12-31T23:59:59Z, the last time pbem can write\n"), "{err}");
    assert!(!root.join("fut3").exists());
    // A game near the end of time: a deadline moved or a resume that would pass it is refused.
    new_game(root, "end", &["--now", "9999-01-01T00:00:00Z"]).success();
    let g = root.join("end");
    // An extension too long for any clock is refused as too long (tester13 D4: it wrapped).
    fails_with(on("deadline", &g, &["--extend", "99999999999999999d", "--now", "9999-01-02T00:00:00Z"]), "duration \"99999999999999999d\": between a minute and a year");
    fails_with(on("deadline", &g, &["--extend", "4611686018427387905h", "--now", "9999-01-02T00:00:00Z"]), "duration \"4611686018427387905h\": between a minute and a year");
    let line = "the new deadline: 9999-01-04T00:00:00Z and 8784 hours later is past 9999-12-31T23:59:59Z, the last time pbem can write";
    fails_with(on("deadline", &g, &["--extend", "366d", "--now", "9999-01-02T00:00:00Z"]), line);
    pbem().arg("pause").arg(&g).args(["--reason", "away", "--now", "9999-01-01T01:00:00Z"]).assert().success();
    let line = "the deadline moved on by the time paused: 9999-01-04T00:00:00Z and 8711 hours later is past 9999-12-31T23:59:59Z, the last time pbem can write";
    fails_with(on("resume", &g, &["--now", "9999-12-30T00:00:00Z"]), line);
    assert_eq!(records(&g), 2);
    pbem().arg("audit").arg(&g).assert().success();
}

#[test]
fn a_hand_edited_huge_grace_fails_its_game_alone_in_a_sweep() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    std::fs::create_dir(&root).unwrap();
    new_game(&root, "a-bad", &[]).success();
    new_game(&root, "c-good", &[]).success();
    edit_deadlines(&root.join("a-bad"), "grace_hours", "4294967295");
    let why = "and 4294967295 hours later is past 9999-12-31T23:59:59Z, the last time pbem can write";
    // The game alone fails where its deadline and grace are worked out (exit 1, no panic); the
    // file is read as it is (an earlier version accepted hours past a year).
    let out = on("adjudicate", &root.join("a-bad"), &["--now", LATE]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8(out.stderr).unwrap().contains(why));
    on("status", &root.join("a-bad"), &[]).assert().success();
    // The sweep resolves the other game (its deadline passed) and names the broken one.
    let out = pbem().args(["adjudicate", "--all"]).arg(&root).args(["--now", LATE]).output().unwrap();
    let (stdout, stderr) = (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap());
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("c-good: resolved step(s) 1; NMR"), "{stdout}");
    assert!(stderr.contains(why), "{stderr}");
    assert_eq!((records(&root.join("a-bad")), records(&root.join("c-good"))), (1, 2));
}

/// The cron run (`adjudicate --all ROOT --mail CONFIG`) the same: the other game resolved and
/// mailed, the broken one named; a mail config with reminders more than a year before a deadline
/// is refused before any game is touched.
#[test]
fn the_cron_run_goes_on_past_a_broken_game_and_refuses_a_reminder_window_past_a_year() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    std::fs::create_dir(&root).unwrap();
    new_game(&root, "a-bad", &[]).success();
    new_game(&root, "c-good", &[]).success();
    let cfg = tmp.path().join("pbem-mail.toml");
    let mail = |hours: &str| std::fs::write(&cfg, format!("from = \"Judge <judge@example.net>\"\n[transport]\nkind = \"none\"\n[reminders]\nhours_before = {hours}\n")).unwrap();
    mail("4294967295");
    let cron = || {
        let mut c = pbem();
        c.args(["adjudicate", "--all"]).arg(&root).arg("--mail").arg(&cfg).args(["--now", LATE]);
        c
    };
    fails_with(cron(), &format!("{}: reminders.hours_before = 4294967295: at most 8784 hours (a year)", cfg.display()));
    assert_eq!(records(&root.join("c-good")), 1);
    mail("8784");
    edit_deadlines(&root.join("a-bad"), "grace_hours", "4294967295");
    let out = cron().output().unwrap();
    let (stdout, stderr) = (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap());
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("c-good: resolved step(s) 1; NMR"), "{stdout}");
    assert!(stderr.contains("a-bad") && stderr.contains("and 4294967295 hours later is past 9999-12-31T23:59:59Z"), "{stderr}");
    assert_eq!(records(&root.join("c-good")), 2);
}

/// A game an earlier version made with hours past a year (`--deadline-hours 9000` was accepted)
/// is read as it is and goes on (tester13 D2): the limit is where a game is made.
#[test]
fn a_game_with_hours_past_a_year_from_an_earlier_version_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    std::fs::create_dir(&root).unwrap();
    new_game(&root, "old", &[]).success();
    edit_deadlines(&root.join("old"), "default_hours", "9000");
    edit_deadlines(&root.join("old"), "grace_hours", "9000");
    on("status", &root.join("old"), &[]).assert().success();
    on("adjudicate", &root.join("old"), &["--now", LATE]).assert().success();
}
