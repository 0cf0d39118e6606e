//! The command line's conventions: completions, man pages, documented exit codes, options shown
//! only where they act, case-insensitive roles, and the warning for a `--now` in the future.

use std::path::Path;
use std::process::Command;

use assert_cmd::cargo::cargo_bin_cmd;
use predicates::prelude::*;

fn pbem() -> assert_cmd::Command {
    cargo_bin_cmd!("pbem")
}

const COMMANDS: [&str; 14] = ["new", "status", "form", "sign", "verify", "submit", "adjudicate", "intake", "report", "audit", "simulate", "demo", "completions", "man"];

/// A game `g1` in `dir` with two ssh-keygen Ed25519 seats, confederate and union.
fn game(dir: &Path) {
    for name in ["conf", "union"] {
        let st = Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(dir.join(name)).status().unwrap();
        assert!(st.success());
    }
    pbem().arg("new").arg(dir.join("g1")).args(["--rules", "gettysburg-campaign", "--now", "2026-07-01T12:00:00Z", "--player"])
        .arg(format!("confederate:lee@example.org:{}", dir.join("conf.pub").display()))
        .arg("--player")
        .arg(format!("union:meade@example.org:{}", dir.join("union.pub").display()))
        .assert()
        .success();
}

#[test]
fn completions_for_every_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = pbem().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("pbem") && text.contains("adjudicate") && text.contains("append"), "{shell}: {text}");
        // Only what --help shows (tester20 T20c-5): no hidden option, every shown one.
        assert!(!text.contains("--now") && !text.contains("--wording"), "{shell}: a hidden option offered");
        assert!(text.contains("grace-hours") && text.contains("bot-after") && text.contains("receipt"), "{shell}: {text}");
    }
    pbem().args(["completions", "tcsh"]).assert().code(2).stderr(predicate::str::contains("possible values"));
}

#[test]
fn man_pages_for_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("man1");
    pbem().arg("man").arg(&dir).assert().success().stdout(predicate::str::contains("wrote man pages"));
    let main = std::fs::read_to_string(dir.join("pbem.1")).unwrap();
    assert!(main.starts_with(".ie") || main.contains(".TH pbem"), "{main}");
    assert!(main.contains("75"), "the exit codes are in the main page");
    for c in COMMANDS {
        let page = std::fs::read_to_string(dir.join(format!("pbem-{c}.1"))).unwrap_or_else(|e| panic!("pbem-{c}.1: {e}"));
        assert!(page.contains(".TH"), "{c}");
    }
    assert!(std::fs::read_to_string(dir.join("pbem-sign.1")).unwrap().contains("ssh\\-agent"));
    // tester16 T16c-13: the name once in NAME; the exit statuses in their own section; each
    // command's synopsis its `--help` usage, option values and all (`--key <KEY>`).
    assert!(main.contains(".SH NAME\npbem \\- a play\\-by\\-email turn processor"), "{main}");
    assert!(main.contains(".SH \"EXIT STATUS\"\n.TP\n0\nsuccess\n") && main.contains(".TP\n75\ntry again later") && !main.contains("EXTRA"), "{main}");
    assert_eq!(main.matches(".ds Aq").count(), 2, "{main}");
    let plain = |roff: &str| roff.replace("\\fB", "").replace("\\fR", "").replace("\\fI", "").replace("\\-", "-");
    for c in COMMANDS {
        let page = std::fs::read_to_string(dir.join(format!("pbem-{c}.1"))).unwrap();
        let synopsis = page.split(".SH SYNOPSIS\n").nth(1).and_then(|r| r.lines().next()).unwrap();
        let help = String::from_utf8(pbem().args([c, "--help"]).output().unwrap().stdout).unwrap();
        let usage = help.lines().find_map(|l| l.strip_prefix("Usage: ")).unwrap();
        assert_eq!(plain(synopsis).trim(), usage, "{c}");
    }
    let sign = std::fs::read_to_string(dir.join("pbem-sign.1")).unwrap();
    assert!(sign.contains("\\-\\-key <KEY>"), "{sign}");
}

#[test]
fn help_documents_exit_codes_and_shows_options_only_where_they_act() {
    pbem().arg("--help").assert().success().stdout(
        predicate::str::contains("Exit status:").and(predicate::str::contains("2   usage error")).and(predicate::str::contains("75  try again later")),
    );
    pbem().arg("--bogus").assert().code(2);
    let top = String::from_utf8(pbem().arg("--help").output().unwrap().stdout).unwrap();
    for c in COMMANDS {
        // Each command's help opens with its own text, the one `pbem --help` lists for it (the
        // commands' arguments are built lazily, and a doc comment on an argument struct would
        // take that place).
        let listed = top.lines().find_map(|l| l.trim_start().strip_prefix(c).filter(|r| r.starts_with("  ")).map(str::trim)).unwrap();
        let own = pbem().args([c, "--help"]).output().unwrap().stdout;
        assert!(String::from_utf8(own).unwrap().starts_with(listed), "{c} --help does not open with {listed:?}");
    }
    for c in COMMANDS {
        let out = pbem().args([c, "--help"]).output().unwrap();
        assert!(out.status.success(), "{c}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(!text.contains("--now"), "{c} --help shows --now: {text}");
        let renders = ["new", "adjudicate", "audit", "demo"].contains(&c);
        assert_eq!(text.contains("--templates"), renders, "{c}: {text}");
    }
    // --now still works where it was (tests and replays use it).
    pbem().args(["adjudicate", "--now", "2026-07-01T12:00:00Z", "/nonexistent"]).assert().code(1);
}

#[test]
fn roles_are_case_insensitive_and_an_unknown_role_lists_the_seats() {
    let tmp = tempfile::tempdir().unwrap();
    game(tmp.path());
    let g = tmp.path().join("g1");
    pbem().arg("form").arg(&g).args(["--role", "Union"]).assert().success().stdout(predicate::str::contains("role = \"union\""));
    pbem().arg("report").arg(&g).args(["--role", "CONFEDERATE"]).assert().success();
    for cmd in ["form", "report"] {
        pbem().arg(cmd).arg(&g).args(["--role", "unoin"]).assert().code(1)
            .stderr(predicate::str::contains("no seat \"unoin\" in game g1; its seats are confederate, union"));
    }
    pbem().arg("seat").arg(&g).args(["--role", "UNION", "--email", "meade2@example.org", "--now", "2026-07-01T12:10:00Z"]).assert().success()
        .stdout(predicate::str::contains("seat of union"));
}

/// Every place a role is typed on the command line takes it in any case, and the game stores the
/// game's spelling (tester16 T16c-5): `new --player Confederate:...`, `--time-zone UNION=...`.
#[test]
fn a_new_game_takes_roles_in_any_case_and_stores_the_games_spelling() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    for name in ["conf", "union"] {
        assert!(Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(d.join(name)).status().unwrap().success());
    }
    pbem().arg("new").arg(d.join("g1")).args(["--rules", "gettysburg-campaign", "--now", "2026-07-01T12:00:00Z", "--time-zone", "UNION=Europe/Paris", "--player"])
        .arg(format!("Confederate:lee@example.org:{}", d.join("conf.pub").display()))
        .arg("--player")
        .arg(format!("UNION:meade@example.org:{}", d.join("union.pub").display()))
        .assert()
        .success();
    let gf = std::fs::read_to_string(d.join("g1/game.toml")).unwrap();
    assert!(gf.contains("role = \"confederate\"") && gf.contains("role = \"union\"") && !gf.contains("UNION") && !gf.contains("Confederate"), "{gf}");
    assert!(gf.contains("Europe/Paris"), "{gf}");
    pbem().arg("report").arg(d.join("g1")).args(["--role", "union"]).assert().success();
}

#[test]
fn a_now_in_the_future_warns_how_to_go_on() {
    let tmp = tempfile::tempdir().unwrap();
    game(tmp.path());
    let g = tmp.path().join("g1");
    pbem().arg("adjudicate").arg(&g).args(["--now", "2999-01-01T00:00:00Z"]).assert().success()
        .stderr(predicate::str::contains("is ahead of this machine's clock").and(predicate::str::contains("pass --now 2999-01-01T00:00:00Z or later")));
    // The game is now ahead of any earlier clock, as the warning said, and goes on with a --now
    // at or after that time.
    pbem().arg("adjudicate").arg(&g).args(["--now", "2026-07-01T12:30:00Z"]).assert().code(1)
        .stderr(predicate::str::contains("before its record 1 (2999-01-01T00:00:00Z)"));
    pbem().arg("status").arg(&g).assert().success().stderr(predicate::str::is_empty());
    // A command that writes nothing to the game is not warned (tester21 T21a-8).
    pbem().arg("status").arg(&g).args(["--now", "2999-06-01T00:00:00Z"]).assert().success().stderr(predicate::str::is_empty());
    pbem().arg("adjudicate").arg(&g).args(["--now", "2999-01-01T00:00:00Z"]).assert().success();
}

/// `audit --all ROOT`: one line per game and a summary, exit 1 when any fails, nothing on stderr
/// when it is not a terminal (no progress bar).
#[test]
fn audit_all_checks_every_game_under_a_root() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("games");
    std::fs::create_dir(&root).unwrap();
    game(tmp.path());
    std::fs::rename(tmp.path().join("g1"), root.join("a")).unwrap();
    let two = tmp.path().join("two");
    std::fs::create_dir(&two).unwrap();
    game(&two);
    std::fs::rename(two.join("g1"), root.join("b")).unwrap();
    let out = pbem().args(["audit", "--all"]).arg(&root).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines[0].contains("/a: audit passed") && lines[1].contains("/b: audit passed"), "{text}");
    assert!(lines[2].ends_with(": 2 passed, 0 failed"), "{text}");

    // One game's record edited: that game fails, the other still passes, status 1.
    let rec = root.join("b/records/000000.json");
    let edited = std::fs::read_to_string(&rec).unwrap().replacen("\"g1\"", "\"g2\"", 1);
    std::fs::write(&rec, edited).unwrap();
    let out = pbem().args(["audit", "--all"]).arg(&root).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("/a: audit passed") && text.contains("/b: FAILED: ") && text.contains("1 passed, 1 failed"), "{text}");
    pbem().args(["audit", "--all"]).arg(tmp.path().join("nowhere")).assert().code(1).stderr(predicate::str::contains("no such folder"));
    pbem().args(["audit", "--all"]).arg(&root).arg(root.join("a")).assert().code(2);
}

#[test]
fn a_suggested_command_quotes_a_path_the_shell_would_split() {
    // tester12 L3: `man -l T/man dir ü/pbem.1` split at the space when pasted.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("man dir ü");
    let out = pbem().arg("man").arg(&dir).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(&format!("`man -l '{}/pbem.1'`", dir.display())), "{text}");
    let plain = tmp.path().join("man1");
    let out = pbem().arg("man").arg(&plain).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(&format!("`man -l {}/pbem.1`", plain.display())), "{text}");
}

/// `verify` needs one of --key and --game: without either it is a usage error, exit status 2
/// (tester16 T16c-10).
#[test]
fn verify_without_a_key_or_a_game_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let f = tmp.path().join("f.toml");
    std::fs::write(&f, "[pbem]\n").unwrap();
    pbem().arg("verify").arg(&f).assert().code(2).stderr(predicate::str::contains("--key <KEY>|--game <GAME>"));
    pbem().arg("verify").arg(&f).args(["--key", "k.pub", "--game", "g"]).assert().code(2);
}

/// `status DIR` on a folder without game.toml: a root when games are in its folders, else an
/// error that says it is neither, as `--help` describes DIR; `--all` lists even an empty root
/// (tester16 T16c-11).
#[test]
fn status_of_a_folder_without_a_game_says_what_it_is() {
    let tmp = tempfile::tempdir().unwrap();
    let e = tmp.path().join("e");
    std::fs::create_dir(&e).unwrap();
    pbem().arg("status").arg(&e).assert().code(1)
        .stderr(format!("pbem: {}: no game.toml, and no game in its folders: neither a game directory nor a root of games (`--all` lists a root even when it holds none)\n", e.display()));
    pbem().args(["status", "--all"]).arg(&e).assert().success().stdout(predicate::str::contains("(no games)"));
    game(&e);
    pbem().arg("status").arg(&e).assert().success().stdout(predicate::str::starts_with("GAME"));
    let help = String::from_utf8(pbem().args(["status", "--help"]).output().unwrap().stdout).unwrap();
    assert!(help.contains("chosen too when DIR has no game.toml and games in its folders"), "{help}");
}

/// An error quoting what a file holds shows its control characters as escapes: a key holding a
/// terminal's escape sequence never reaches the terminal as it is.
#[test]
fn an_error_quoting_a_file_shows_control_characters_as_escapes() {
    let tmp = tempfile::tempdir().unwrap();
    game(tmp.path());
    let f = tmp.path().join("o.toml");
    let form = pbem().arg("form").arg(tmp.path().join("g1")).args(["--role", "union"]).output().unwrap();
    std::fs::write(&f, [b"\"bad\\u001b[31mkey\" = 1\n".as_slice(), &form.stdout].concat()).unwrap();
    let out = pbem().arg("sign").arg("--key").arg(tmp.path().join("union")).arg(&f).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("bad\\u{1b}[31mkey") && !err.contains('\u{1b}'), "{err}");
}

/// Output that cannot be written (a full disk: `/dev/full`) is an exit status of 1 with a line
/// saying so, never a panic (101) or a silent 0, for pbem's own lines, clap's `--version` and
/// `--help`, and a completion script; the work itself still happens (tester t25f D4b).
#[cfg(target_os = "linux")]
#[test]
fn output_that_cannot_be_written_is_a_failure_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    game(dir.path());
    let full = || std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let g = dir.path().join("g1");
    for args in [vec!["status", g.to_str().unwrap()], vec!["--version"], vec!["--help"], vec!["completions", "bash"], vec!["report", g.to_str().unwrap(), "--role", "union"]] {
        let out = Command::new(assert_cmd::cargo::cargo_bin!("pbem")).args(&args).stdout(full()).output().unwrap();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("pbem: cannot write to standard output: No space left on device"), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // An error message that cannot be written either still fails with the error's status.
    let out = Command::new(assert_cmd::cargo::cargo_bin!("pbem")).args(["status", "/nonexistent/game"]).stderr(full()).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    // A step adjudicated with its summary line lost is still adjudicated.
    let out = Command::new(assert_cmd::cargo::cargo_bin!("pbem")).args(["adjudicate", g.to_str().unwrap(), "--now", "2026-07-20T12:00:00Z"]).stdout(full()).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    pbem().args(["status", g.to_str().unwrap()]).assert().success().stdout(predicate::str::contains("1 step(s) resolved"));
}

/// A command that changes files outlives a reader of its output that went away (a closed pipe):
/// `submit` of two orders takes both, then exits 1 naming the broken pipe, where SIGPIPE had
/// ended it after the first's line (tester t19a D1: `intake | true` left its replies unsent);
/// a command that only reads still ends quietly by SIGPIPE, as `| head` expects. A file's bytes
/// asked for as `-` that cannot be written say it is standard output (t19a D3).
#[cfg(target_os = "linux")]
#[test]
fn a_command_that_changes_files_outlives_a_closed_pipe() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    game(dir.path());
    let g = dir.path().join("g1");
    let mut files = Vec::new();
    for role in ["union", "confederate"] {
        let f = dir.path().join(format!("{role}.toml"));
        pbem().arg("form").arg(&g).args(["--role", role, "-o"]).arg(&f).assert().success();
        let key = dir.path().join(if role == "union" { "union" } else { "conf" });
        pbem().arg("sign").arg("--key").arg(&key).arg(&f).assert().success();
        files.push(f);
    }
    let closed_pipe = || {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        writer
    };
    let bin = assert_cmd::cargo::cargo_bin!("pbem");
    let before = pbem().arg("status").arg(&g).arg("--now").arg("2026-07-01T12:04:00Z").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&before.stdout).matches("): awaited").count(), 2);
    let out = Command::new(bin).arg("submit").arg(&g).args(&files).arg("--now").arg("2026-07-01T12:05:00Z").stdout(closed_pipe()).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot write to standard output: Broken pipe"), "{out:?}");
    let status = pbem().arg("status").arg(&g).arg("--now").arg("2026-07-01T12:06:00Z").output().unwrap();
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("union (command):") && !text.contains("): awaited"), "both orders taken: {text}");
    let out = Command::new(bin).arg("status").arg(&g).stdout(closed_pipe()).output().unwrap();
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{out:?}");
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = Command::new(bin).arg("form").arg(&g).args(["--role", "union", "-o", "-"]).stdout(full).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("pbem: cannot write to standard output: No space left"), "{out:?}");
}

/// The binary loads no system libm (src/math.rs): the C math functions its code and resvg call are
/// pbem's own (the pure-Rust `libm` crate), the same bits on every machine, and one library less
/// to load at each start. glibc's loader lists what it would load (`ldd`'s way).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn the_binary_loads_no_system_libm() {
    let out = Command::new(assert_cmd::cargo::cargo_bin!("pbem")).env("LD_TRACE_LOADED_OBJECTS", "1").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("libc.so"), "{text}");
    assert!(!text.contains("libm.so"), "{text}");
}
