//! `pbem simulate` through the real binary, for every game: a few games, the table's shape, and
//! the same seed giving the same output.

use assert_cmd::cargo::cargo_bin_cmd;

const SEED: &str = "00000000000000000000000000000000000000000000000000000000000000b9";

fn simulate(args: &[&str]) -> String {
    let out = cargo_bin_cmd!("pbem").args(["simulate", "--games", "3", "--seed", SEED]).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Checks the header, the table (a row per side, then no winner, then all games, whose counts add
/// up) and returns the table's rows as cells.
fn check_table(text: &str, unit: &str, sides: &[&str]) -> Vec<Vec<String>> {
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains(", 3 games, seed ") && lines[0].ends_with(SEED), "{text}");
    assert_eq!(lines[1], format!("| side | wins | win rate | mean {unit} | mean steps |"), "{text}");
    assert_eq!(lines[2], "|---|---:|---:|---:|---:|");
    let rows: Vec<Vec<String>> =
        lines[3..3 + sides.len() + 2].iter().map(|l| l.trim_matches('|').split('|').map(|c| c.trim().to_string()).collect()).collect();
    let labels: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    let mut want = sides.to_vec();
    want.extend(["no winner", "all games"]);
    assert_eq!(labels, want, "{text}");
    let wins: Vec<u32> = rows.iter().map(|r| r[1].parse().unwrap()).collect();
    assert_eq!(wins[..wins.len() - 1].iter().sum::<u32>(), 3, "{text}");
    assert_eq!(rows.last().unwrap()[1..3], ["3", "100.0%"].map(String::from)[..], "{text}");
    let all_length: f64 = rows.last().unwrap()[3].parse().unwrap();
    let all_steps: f64 = rows.last().unwrap()[4].parse().unwrap();
    assert!(all_length >= 1.0 && all_steps >= 1.0, "{text}");
    rows
}

#[test]
fn gettysburg_campaign_with_and_without_the_optional_fire() {
    for fire in ["false", "true"] {
        let args = ["--rules", "gettysburg-campaign", "--option", &format!("optional-fire={fire}")];
        let text = simulate(&args);
        assert!(text.starts_with(&format!("gettysburg-campaign, scenario gettysburg-campaign, options optional-fire={fire}, policy sensible")), "{text}");
        check_table(&text, "turns", &["confederate", "union"]);
        assert!(text.contains("mean Confederate points per game:"), "{text}");
        assert_eq!(text, simulate(&args), "the same seed gives the same output");
    }
    let naive = simulate(&["--rules", "gettysburg-campaign", "--policy", "naive"]);
    assert!(naive.starts_with("gettysburg-campaign, scenario gettysburg-campaign, options (none), policy naive"), "{naive}");
    check_table(&naive, "turns", &["confederate", "union"]);
}

#[test]
fn flag_dash_two_and_four_players_on_every_board() {
    for board in ["basic", "cones", "alternate"] {
        for (players, abilities) in [("2", "false"), ("4", "true")] {
            let args = ["--rules", "flag-dash", "--scenario", board, "--option", &format!("players={players}"), "--option", &format!("abilities={abilities}")];
            let text = simulate(&args);
            check_table(&text, "rounds", &["white", "red"]);
            assert_eq!(text, simulate(&args), "the same seed gives the same output");
        }
    }
}

#[test]
fn throw_down_that_flag_keeps_its_policies_and_casualties() {
    let args = ["--rules", "throw-down-that-flag", "--scenario", "july-2", "--option", "campaign=true", "--policy", "naive"];
    let text = simulate(&args);
    assert!(text.starts_with("throw-down-that-flag, scenario july-2, options campaign=true, policy naive"), "{text}");
    check_table(&text, "rounds", &["union"]);
    assert!(text.contains("mean Str lost per game:"), "{text}");
    assert_eq!(text, simulate(&args));
    let other = cargo_bin_cmd!("pbem").args(["simulate", "--games", "3"]).args(args).output().unwrap();
    assert_ne!(String::from_utf8(other.stdout).unwrap(), text, "another seed, another run");
}

#[test]
fn a_bad_policy_or_option_is_refused_by_name() {
    let out = cargo_bin_cmd!("pbem").args(["simulate", "--rules", "flag-dash", "--policy", "naive", "--games", "1"]).output().unwrap();
    // A usage error, in a whole sentence (tester16 T16c-9).
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "pbem: --policy naive: Flag Dash has no policy \"naive\"; its only policy is built-in (the default)\n");
    let out = cargo_bin_cmd!("pbem").args(["simulate", "--rules", "gettysburg-campaign", "--option", "optional-fire=maybe"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "pbem: option optional-fire: must be true or false\n");
}

#[test]
fn the_table_is_the_same_whatever_the_jobs() {
    let run = |jobs: &str| {
        let args = ["simulate", "--rules", "throw-down-that-flag", "--scenario", "july-3", "--games", "9", "--jobs", jobs];
        let out = cargo_bin_cmd!("pbem").args(args).output().unwrap();
        assert!(out.status.success(), "--jobs {jobs}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let one = run("1");
    assert!(one.contains(", 9 games, "), "{one}");
    for jobs in ["2", "5"] {
        assert_eq!(run(jobs), one, "--jobs {jobs}");
    }
    let out = cargo_bin_cmd!("pbem").args(["simulate", "--jobs", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}
