//! Throw Down That Flag through the real files: the demo plays each scenario (and the campaign)
//! through signed order files and audits clean; one recorded July 2 game is a snapshot.
//! Regenerate after an intended change with `INSTA_UPDATE=always cargo test --test tdtf_demo`.
//! The recorded July 2 game is one of report wording 3 (`report::WORDING`), whose snapshots must
//! not change (a game keeps its wording); `tdtf_wording_4_*` are the present wording's.

use std::collections::BTreeMap;

use pbem::pipeline;

/// A demo game; `options` may name the day with `scenario`, which becomes `--scenario NAME`.
fn demo(dir: &std::path::Path, seed: u8, options: &[(&str, &str)]) -> pbem::demo::DemoSummary {
    demo_in_wording(dir, seed, options, pbem::report::WORDING)
}

/// [`demo`] in report wording `wording`.
fn demo_in_wording(dir: &std::path::Path, seed: u8, options: &[(&str, &str)], wording: u32) -> pbem::demo::DemoSummary {
    let start = pipeline::parse_time("2026-07-02T12:00:00Z").unwrap();
    let opts: BTreeMap<String, String> = options.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let day = opts.get("scenario").map(std::path::PathBuf::from);
    pbem::demo::run_with_scenario("throw-down-that-flag", dir, [seed; 32], day.as_deref(), opts, start, wording).unwrap()
}

fn report(dir: &std::path::Path, n: u64) -> String {
    std::fs::read_to_string(dir.join("reports").join(format!("{n:06}")).join("union.txt")).unwrap()
}

#[test]
fn tdtf_demo_plays_each_scenario_and_audits_clean() {
    // July 2 is played by `tdtf_recorded_july_2_game`; the campaign's two days are both played in
    // memory by the game's own tests, and here through the files only with July 3.
    for options in [vec![("scenario", "july-3")]] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("g");
        let s = demo(&dir, 0x12, &options);
        assert!(s.steps >= 1 && s.audit.describe().contains("replayed"), "{options:?}: {s:?}");
        assert!(!s.outcome.is_empty());
        insta::assert_snapshot!("tdtf_july_3_summary", format!("steps {}, orders {}\n{}", s.steps, s.orders, s.outcome));
        for n in 0..=s.steps {
            for line in report(&dir, n).lines() {
                assert!(line.chars().count() < 100, "{options:?} record {n}: line too long: {line}");
            }
        }
    }
}

#[test]
fn tdtf_recorded_july_2_game() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("g");
    let s = demo_in_wording(&dir, 0x02, &[], 3);
    assert!(s.audit.describe().contains("replayed"));
    for n in 0..=s.steps {
        for line in report(&dir, n).lines() {
            assert!(line.chars().count() < 100, "record {n}: line too long: {line}");
        }
    }
    insta::assert_snapshot!("tdtf_july_2_summary", format!("steps {}, orders {}\n{}", s.steps, s.orders, s.outcome));
    insta::assert_snapshot!("tdtf_july_2_first", report(&dir, 1));
    insta::assert_snapshot!("tdtf_july_2_last", report(&dir, s.steps));
}

#[test]
fn tdtf_simulate_prints_win_rate_and_casualties() {
    let out = assert_cmd::Command::cargo_bin("pbem")
        .unwrap()
        .args(["simulate", "--rules", "throw-down-that-flag", "--scenario", "july-3", "--games", "4", "--policy", "naive"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("| union |") && text.contains("mean Str lost per game:") && text.contains("mean men lost per game:"), "{text}");
}

fn pbem() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("pbem").unwrap()
}

/// Standing orders through the real files: a step that plays many activations by standing orders
/// is told in short (a line per activation token) above the full account; draws read as
/// sentences; the report lists the success bag and says exactly what the standing orders changed.
#[test]
fn tdtf_a_stretch_of_standing_orders_is_summarised() {
    let tmp = tempfile::tempdir().unwrap();
    let key = tmp.path().join("me");
    let st = std::process::Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(&key).status().unwrap();
    assert!(st.success());
    let g = tmp.path().join("g");
    pbem()
        .arg("new")
        .arg(&g)
        .args(["--rules", "throw-down-that-flag", "--now", "2026-07-02T12:00:00Z", "--player"])
        .arg(format!("union:me@example.org:{}.pub", key.display()))
        .assert()
        .success();
    let form = tmp.path().join("o.toml");
    pbem().arg("form").arg(&g).args(["--role", "union", "-o"]).arg(&form).assert().success();
    let text = std::fs::read_to_string(&form).unwrap();
    assert!(text.contains("# [orders.standing.A] for company A (its fields override all's, one by one)"), "{text}");
    let standing = "\n[orders.standing.all]\nmelee = 8\nshoot = 6\nrange = 3\nmove = \"nearest\"\n[orders.standing.H]\nmove = \"hold\"\n";
    std::fs::write(&form, text + standing).unwrap();
    pbem().arg("sign").arg("--key").arg(&key).arg(&form).assert().success();
    pbem().arg("submit").arg(&g).arg(&form).args(["--now", "2026-07-02T12:30:00Z"]).assert().success();
    pbem().arg("adjudicate").arg(&g).args(["--now", "2026-07-02T13:00:00Z"]).assert().success();
    let r = report(&g, 1);
    for line in r.lines() {
        assert!(line.chars().count() < 100, "line too long: {line}");
    }
    let head = r.find("  In short, a line per activation token").unwrap_or_else(|| panic!("{r}"));
    let full = r.find("  In full, every event and draw:").unwrap();
    assert!(head < full);
    let short: Vec<&str> = r[head..full].lines().filter(|l| l.starts_with("  * ")).collect();
    assert!(short.len() >= 2 && short.iter().any(|l| l.contains("(standing order)")), "{r}");
    assert!(r.contains("Standing orders, all companies: new: melee 8 tokens, shoot 6 tokens, range 3, move nearest."), "{r}");
    assert!(r.contains("Standing orders, company H: new: move hold."), "{r}");
    assert!(r.contains("token is pulled from the activation bag") && !r.contains(": drew "), "{r}");
    assert!(r.contains("SUCCESS BAG") && r.contains("First Minnesota: 8 successes, 3 flames; Confederate: 7 successes"), "{r}");
    assert!(r.contains("H: melee when adjacent with 8 tokens; shoot the nearest within 3 with 6 tokens;"), "{r}");
    pbem().arg("audit").arg(&g).assert().success();
}

#[test]
fn tdtf_a_day_held_to_its_last_round_says_all_rounds_played() {
    // tester16 T16c-3: a day won by holding the fourth round read "Round 5 of 4" (report wording
    // 1: `report::WORDING`).
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("td1");
    let seed = format!("{}f2", "0".repeat(62));
    pbem().args(["demo", "--rules", "throw-down-that-flag", "--seed", &seed, "--out"]).arg(&dir).assert().success();
    let last = std::fs::read_to_string(dir.join("reports").join(format!("{:06}", pbem::store::GameDir::new(&dir).last_record().unwrap().unwrap())).join("union.txt")).unwrap();
    assert!(last.contains("\nAll 4 rounds played. Breakthroughs: 1 of 2 lose the day.\n"), "{last}");
    assert!(!last.contains("Round 5 of 4"), "{last}");
}

/// Report wording 4 through the real files, a whole campaign game by the built-in players (seed
/// 0x12): record 0 says how the campaign is won (README: both days; the rulebook has none);
/// record 1's form lists the moves through a company of the player's (Player Activations, Move);
/// record 17's short account tells the shot's result before the company's own loss and its colors
/// passing; record 33's marks where July 3 begins and still says how the campaign is won. The same
/// game made in wording 3 keeps every old text (a game keeps its wording: its reports replay).
#[test]
fn tdtf_wording_4_campaign() {
    let tmp = tempfile::tempdir().unwrap();
    let (now, then) = (tmp.path().join("w4"), tmp.path().join("w3"));
    let s = demo_in_wording(&now, 0x12, &[("campaign", "true")], 4);
    let s3 = demo_in_wording(&then, 0x12, &[("campaign", "true")], 3);
    assert!(s.audit.describe().contains("replayed") && s3.audit.describe().contains("replayed"));
    assert_eq!((s.steps, &s.outcome), (s3.steps, &s3.outcome), "the same game in either wording");
    for n in 0..=s.steps {
        for line in report(&now, n).lines() {
            assert!(line.chars().count() < 100, "record {n}: line too long: {line}");
        }
    }
    let rule = "Campaign (pbem's; the rulebook has none): won only if both days are won.";
    let begins = "  * The campaign's next day begins: July 3, 1863:";
    let (r0, r1, r17, r33) = (report(&now, 0), report(&now, 1), report(&now, 17), report(&now, 33));
    assert!(r0.contains(rule) && r33.contains(rule) && !report(&now, s.steps).contains(rule), "{r0}");
    assert!(r1.contains("# Through a company of yours (a move of two spaces, not ending there): "), "{r1}");
    assert!(r17.contains("a hit (Confederate E\n    down to Str 1, your A out of the fight, the First Minnesota colors pass to your D,"), "{r17}");
    assert!(r33.contains(begins), "{r33}");
    let old = (0..=s3.steps).map(|n| report(&then, n)).collect::<Vec<_>>().join("\n");
    assert!(!old.contains(rule) && !old.contains("# Through a company") && !old.contains(begins));
    assert!(report(&then, 17).contains("(the First\n    Minnesota colors pass to your D, your A out of the fight,"), "{}", report(&then, 17));
    for (n, r) in [(0, r0), (1, r1), (17, r17), (33, r33)] {
        insta::assert_snapshot!(format!("tdtf_wording_4_campaign_{n}"), r);
    }
}

/// Campaign (pbem's, README "Throw Down That Flag orders"): once July 2 is lost, the reports of
/// wording 4 say the campaign is lost while July 3 is played for its own result, instead of how
/// it is won (tester t19a D4); wording 3's have neither line.
#[test]
fn tdtf_a_lost_july_2_says_the_campaign_is_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let (now, then) = (tmp.path().join("w4"), tmp.path().join("w3"));
    let s = demo_in_wording(&now, 0x01, &[("campaign", "true")], 4);
    let s3 = demo_in_wording(&then, 0x01, &[("campaign", "true")], 3);
    let lost = "Campaign (pbem's; the rulebook has none): lost, since a day of it was lost";
    let how = "Campaign (pbem's; the rulebook has none): won only if both days are won.";
    let all: Vec<String> = (0..=s.steps).map(|n| report(&now, n)).collect();
    let first_lost = all.iter().position(|r| r.contains(lost)).expect("a report after the lost July 2");
    assert!(all[first_lost].contains("  july-2: defeat"), "{}", all[first_lost]);
    assert!(all[..first_lost].iter().all(|r| !r.contains("july-2: defeat")));
    assert!(all[first_lost..].iter().all(|r| !r.contains(how)), "no report after the defeat tells how to win");
    let old = (0..=s3.steps).map(|n| report(&then, n)).collect::<Vec<_>>().join("\n");
    assert!(!old.contains(lost) && !old.contains(how));
}
