//! Flag Dash through the real files: demo games (4 players; 2 players basic) play through signed
//! order files and audit clean, every report line stays under 100 characters, and one recorded
//! 4-player game is a snapshot. Regenerate after an intended change with
//! `INSTA_UPDATE=always cargo test --test flag_dash_demo`. The recorded game is one of report
//! wording 3 (`report::WORDING`), whose snapshots must not change (a game keeps its wording).

use std::collections::BTreeMap;
use std::path::Path;

use pbem::pipeline;

fn demo(dir: &Path, seed: u8, options: &[(&str, &str)]) -> pbem::demo::DemoSummary {
    demo_in_wording(dir, seed, options, pbem::report::WORDING)
}

/// [`demo`] in report wording `wording`.
fn demo_in_wording(dir: &Path, seed: u8, options: &[(&str, &str)], wording: u32) -> pbem::demo::DemoSummary {
    let start = pipeline::parse_time("2026-07-03T12:00:00Z").unwrap();
    let opts: BTreeMap<String, String> = options.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    pbem::demo::run_with_scenario("flag-dash", dir, [seed; 32], None, opts, start, wording).unwrap()
}

fn report(dir: &Path, n: u64, role: &str) -> String {
    std::fs::read_to_string(dir.join("reports").join(format!("{n:06}")).join(format!("{role}.txt"))).unwrap()
}

fn check_lines(dir: &Path, steps: u64, roles: &[&str]) {
    for n in 0..=steps {
        for role in roles {
            for line in report(dir, n, role).lines() {
                assert!(line.chars().count() < 100, "record {n} {role}: line too long: {line}");
            }
        }
    }
}

#[test]
fn flag_dash_recorded_four_player_game() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("g");
    let s = demo_in_wording(&dir, 0x46, &[], 3);
    assert!(s.audit.describe().contains("replayed"), "{s:?}");
    let roles = ["white-1", "white-2", "red-1", "red-2"];
    check_lines(&dir, s.steps, &roles);
    insta::assert_snapshot!("flag_dash_summary", format!("steps {}, orders {}\n{}", s.steps, s.orders, s.outcome));
    for n in [0, 1, s.steps] {
        let name = if n == s.steps { "flag_dash_last_white-1".to_string() } else { format!("flag_dash_{n}_white-1") };
        insta::assert_snapshot!(name, report(&dir, n, "white-1"));
    }
    // Nobody sees the other team's plan before it is revealed: red-1's report after step 0 shows
    // only Red's plans, and only once they are made.
    assert!(!report(&dir, 0, "red-1").contains("white-1:\n"));
}

#[test]
fn flag_dash_two_player_basic_demo_audits_clean() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("g");
    let s = demo(&dir, 0x47, &[("players", "2")]);
    assert!(s.audit.describe().contains("replayed"), "{s:?}");
    check_lines(&dir, s.steps, &["white", "red"]);
}

/// A long event is wrapped into one event of several lines; in the report only its first line has
/// a bullet and every further line sits under the text, never under a bullet of its own.
#[test]
fn flag_dash_wrapped_events_indent_under_their_text() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("g");
    let s = demo(&dir, 0x46, &[]);
    let mut wrapped = 0;
    for n in 1..=s.steps {
        let record: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("records").join(format!("{n:06}.json"))).unwrap()).unwrap();
        let text = report(&dir, n, "white-1");
        for e in record["resolution"]["events"].as_array().unwrap() {
            let lines: Vec<&str> = e["text"].as_str().unwrap().lines().collect();
            let shown = format!("  - {}", lines.iter().map(|l| l.to_string()).collect::<Vec<_>>().join("\n    "));
            assert!(text.contains(&shown), "record {n}: event not shown as one item:\n{shown}");
            if lines.len() > 1 {
                wrapped += 1;
                let indent = lines[0].len() - lines[0].trim_start().len();
                assert!(lines[1..].iter().all(|l| l.len() - l.trim_start().len() == indent), "{lines:?}");
            }
        }
    }
    assert!(wrapped > 0, "the demo has long events");
}

fn pbem() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("pbem").unwrap()
}

/// Determine Move Order through the real files: white-1 and white-2 both play #1 with no
/// `tie_first`, so white-1 is asked who moves first, sends nothing, and its NMR (the default) is
/// used. A game of report wording 4 tells the answer as the default, not as white-1's (a tester
/// read it as sent); one of wording 3 keeps "answers the tie". Both audit: adjudication and the
/// audit's replay word the event alike (`Ctx::unsent`).
#[test]
fn flag_dash_a_tie_left_unanswered_is_told_as_the_default() {
    let cases = [
        ("4", "white-1 did not answer the tie: by default, white-1 (the team's first seat) moves first."),
        ("3", "white-1 answers the tie: white-1 moves first."),
    ];
    for (wording, want) in cases {
        let report = unanswered_tie(wording);
        assert!(report.contains(&format!("\n  - {want}\n")), "wording {wording}: the step's events:\n{report}");
        assert!(report.contains(&format!("\n  {want}\n")), "wording {wording}: THE ROUND SO FAR:\n{report}");
    }
}

/// white-2's report of the step that took white-1's NMR for the tie, in a game of `wording`.
fn unanswered_tie(wording: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let roles = ["white-1", "white-2", "red-1", "red-2"];
    let g = tmp.path().join("g");
    let mut new = pbem();
    new.arg("new").arg(&g).args(["--rules", "flag-dash", "--option", "players=4", "--deadline-hours", "1", "--wording", wording]);
    new.args(["--now", "2026-07-03T12:00:00Z"]);
    for role in roles {
        let key = tmp.path().join(role);
        let st = std::process::Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(&key).status().unwrap();
        assert!(st.success());
        new.arg("--player").arg(format!("{role}:{role}@example.org:{}.pub", key.display()));
    }
    new.assert().success();
    for role in roles {
        let form = tmp.path().join(format!("{role}.toml"));
        pbem().arg("form").arg(&g).args(["--role", role, "-o"]).arg(&form).assert().success();
        let text = std::fs::read_to_string(&form).unwrap();
        std::fs::write(&form, text.lines().filter(|l| !l.starts_with("tie_first")).map(|l| format!("{l}\n")).collect::<String>()).unwrap();
        pbem().arg("sign").arg("--key").arg(tmp.path().join(role)).arg(&form).assert().success();
        pbem().arg("submit").arg(&g).arg(&form).args(["--now", "2026-07-03T12:10:00Z"]).assert().success();
    }
    pbem().arg("adjudicate").arg(&g).args(["--now", "2026-07-03T12:20:00Z"]).assert().success();
    pbem().arg("adjudicate").arg(&g).args(["--now", "2026-07-03T13:30:00Z"]).assert().success();
    pbem().arg("audit").arg(&g).assert().success();
    report(&g, 2, "white-2")
}
