//! The library speaks of settings (a deadline, a seat, a reason, a policy), never of flags; the
//! command line names the flag that gave each refused or missing setting. Each case runs the real
//! binary and compares the whole line it prints.

use std::path::Path;

mod support;
use support::{keygen, pbem};

const START: &str = "2026-07-01T12:00:00Z";

/// `pbem ARGS` fails with exit status 1 and prints exactly `pbem: LINE` on standard error.
fn fails_with(args: &[&str], line: &str) {
    fails_with_status(args, line, 1);
}

/// `pbem ARGS` fails as a usage error (exit status 2: a value none of a flag's choices, a missing
/// argument) and prints exactly `pbem: LINE` on standard error.
fn usage_error(args: &[&str], line: &str) {
    fails_with_status(args, line, 2);
}

fn fails_with_status(args: &[&str], line: &str, status: i32) {
    let out = pbem().args(args).output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(status), "pbem {args:?}: {err}");
    assert_eq!(err, format!("pbem: {line}\n"), "pbem {args:?}");
}

/// `pbem new DIR` for Gettysburg with both seats (keys made in `tmp`) and `extra` arguments.
fn new_args(tmp: &Path, dir: &str, extra: &[&str]) -> Vec<String> {
    let conf = keygen(tmp, &format!("conf-{dir}"));
    let union = keygen(tmp, &format!("union-{dir}"));
    let mut args: Vec<String> = vec!["new".into(), tmp.join(dir).display().to_string()];
    args.extend(["--rules", "gettysburg-campaign", "--now", START].map(String::from));
    args.extend(["--player".into(), format!("confederate:lee@example.org:{}.pub", conf.display())]);
    args.extend(["--player".into(), format!("union:meade@example.org:{}.pub", union.display())]);
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn new_names_the_flags_of_refused_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let a = new_args(t, "g1", &["--deadline", "retreet=5"]);
    fails_with(&strs(&a), "--deadline retreet=5: this game has no step kind \"retreet\"; kinds: command, move, vacate-or-defend, combat-order, fire-option, casualty, retreat");
    let a = new_args(t, "g2", &["--deadline", "move=0"]);
    fails_with(&strs(&a), "--deadline move=0: deadline hours must be at least 1");
    let a = new_args(t, "g3", &["--id", "no spaces"]);
    fails_with(&strs(&a), "game id \"no spaces\": use 1-64 ASCII letters (a-z, A-Z), digits, '-', '_' or '.', not starting with '.' or '-' (set it with --id)");
    // `.` and `..` named the mail marks' folder or its parent (tester t18b-2).
    for (g, id) in [("g3a", "."), ("g3b", ".."), ("g3c", ".hidden"), ("g3d", "-x")] {
        let a = new_args(t, g, &[&format!("--id={id}")]);
        fails_with(&strs(&a), &format!("game id {id:?}: use 1-64 ASCII letters (a-z, A-Z), digits, '-', '_' or '.', not starting with '.' or '-' (set it with --id)"));
        assert!(!t.join(g).exists(), "{g} was written");
    }
    let a = new_args(t, "g4", &["--option", "press=some"]);
    fails_with(&strs(&a), "--option press=some: want press=none, press=team or press=all");
    let mut a = new_args(t, "g5", &[]);
    a.truncate(a.len() - 2);
    usage_error(&strs(&a), "this game needs exactly one --player for each role: confederate, union (got: confederate)");
    for g in ["g1", "g2", "g3", "g4", "g5"] {
        assert!(!t.join(g).exists(), "{g} was written");
    }
    // Edited by hand into `game.toml`, such an id is refused where the file is read, naming it.
    pbem().args(strs(&new_args(t, "g6", &[]))).assert().success();
    let file = t.join("g6").join("game.toml");
    std::fs::write(&file, std::fs::read_to_string(&file).unwrap().replacen("id = \"g6\"", "id = \"..\"", 1)).unwrap();
    let out = pbem().arg("status").arg(t.join("g6")).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code() == Some(1) && err.contains("game.toml") && err.contains("id") && err.contains("\"..\" cannot name a game"), "{err}");
}

#[test]
fn host_controls_name_the_flags_of_refused_and_missing_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    pbem().args(strs(&new_args(t, "g1", &[]))).assert().success();
    let g = t.join("g1").display().to_string();
    let now = "2026-07-01T13:00:00Z";
    fails_with(&["seat", &g, "--role", "meade", "--email", "a@b.c", "--now", now], "--role meade: no such seat; seats: confederate, union");
    usage_error(&["seat", &g, "--role", "union", "--now", now], "pbem seat: give --email, --key, --time-zone or more of them");
    fails_with(&["seat", &g, "--role", "union", "--email", "nobody", "--now", now], "--email \"nobody\": not a mail address: Invalid input");
    let long = "x".repeat(501);
    fails_with(&["pause", &g, "--reason", &long, "--now", now], "--reason: one line of at most 500 characters");
    usage_error(&["end", &g, "--abandon", "--reason", " ", "--now", now], "pbem end --abandon needs --reason (it goes into the last record)");
    let gif = t.join("board.gif").display().to_string();
    fails_with(&["report", &g, "--picture", &gif], &format!("--picture {gif}: the name must end in .svg or .png"));
}

#[test]
fn simulate_and_demo_name_their_flags() {
    // A value none of a flag's choices is a usage error, exit status 2 (tester16 T16c-9).
    let rules = "--rules chess: one of gettysburg-campaign, throw-down-that-flag, flag-dash";
    usage_error(&["simulate", "--rules", "chess", "--games", "1"], rules);
    usage_error(&["demo", "--rules", "chess", "--out", "/nonexistent/d"], rules);
    usage_error(&["new", "/nonexistent/g", "--rules", "chess", "--player", "a:b:ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"], rules);
    usage_error(&["simulate", "--policy", "reckless", "--games", "1"], "--policy reckless: Throw Down That Flag has no policy \"reckless\"; its policies are sensible (the default), naive");
    usage_error(&["simulate", "--rules", "flag-dash", "--policy", "naive", "--games", "5"], "--policy naive: Flag Dash has no policy \"naive\"; its only policy is built-in (the default)");
    usage_error(&["simulate", "--games", "0"], "--games 0: play at least one game");
    let shipped = "no such file, nor a scenario shipped with Throw Down That Flag: july-2, july-3";
    fails_with(&["simulate", "--scenario", "bogus", "--games", "1"], &format!("--scenario bogus: {shipped}"));
    let tmp = tempfile::tempdir().unwrap();
    // A folder or a device given as the scenario is named for what it is, not as missing (tester12 L1).
    let folder = tmp.path().display().to_string();
    let not_file = "not a regular file (a FIFO, a device or a folder); not read";
    fails_with(&["simulate", "--scenario", &folder, "--games", "1"], &format!("--scenario {folder}: {folder}: {not_file}"));
    fails_with(&["simulate", "--scenario", "/dev/zero", "--games", "1"], &format!("--scenario /dev/zero: /dev/zero: {not_file}"));
    let seed = "0".repeat(64);
    let demo = tmp.path().join("d").display().to_string();
    fails_with(&["demo", "--scenario", "/dev/zero", "--out", &demo, "--seed", &seed], &format!("/dev/zero: {not_file}"));
    std::fs::write(tmp.path().join("kept.txt"), "mine").unwrap();
    let out = tmp.path().display().to_string();
    fails_with(&["demo", "--out", &out, "--seed", &"0".repeat(64)], &format!("{out}: already exists and is not empty; choose a new --out"));
}

#[test]
fn a_clock_behind_the_game_is_refused_with_the_flag_that_would_do() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    pbem().args(strs(&new_args(t, "g1", &[]))).assert().success();
    let g = t.join("g1").display().to_string();
    let early = "2026-06-30T12:00:00Z";
    let line = format!("refusing to act on game g1: the clock says {early}, before its record 0 ({START}); fix the clock (or pass --now)");
    fails_with(&["pause", &g, "--reason", "r", "--now", early], &line);
    fails_with(&["adjudicate", &g, "--now", early], &format!("{g}: {line}"));
    let form = t.join("union.toml");
    pbem().args(["form", &g, "--role", "union", "-o"]).arg(&form).args(["--now", START]).assert().success();
    let out = pbem().args(["submit", &g]).arg(&form).args(["--now", early]).output().unwrap();
    assert_eq!(String::from_utf8(out.stderr).unwrap(), format!("pbem: not submitted: {line}\n"));
}
