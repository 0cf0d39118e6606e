//! Pictures of the board: every record of a demo game of each of the three games has a picture
//! for each seat and for an observer, valid SVG that usvg reads back and the same bytes twice;
//! PNGs decode and are the same bytes twice; `pbem report --picture` writes both kinds; and a
//! picture never shows what the seat's text hides (the observer's shows only what every seat sees).

use std::collections::BTreeMap;
use std::path::Path;

use assert_cmd::Command;
use pbem::pipeline;
use predicates::str::contains;

fn demo(rules: &str, dir: &Path, seed: u8, options: &[(&str, &str)]) -> u64 {
    let start = pipeline::parse_time("2026-07-03T12:00:00Z").unwrap();
    let opts: BTreeMap<String, String> = options.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    pbem::demo::run(rules, dir, [seed; 32], opts, start).unwrap().steps
}

fn roles(dir: &Path) -> Vec<String> {
    let g = pipeline::load(dir).unwrap();
    g.gf.seats.iter().map(|s| s.role.clone()).collect()
}

/// Every record, every seat and the observer: a picture usvg reads, the same twice; PNGs (first
/// and last record) decode, the same bytes twice.
fn check_game(dir: &Path, steps: u64) {
    let mut seats: Vec<Option<String>> = roles(dir).into_iter().map(Some).collect();
    seats.push(None);
    let options = resvg::usvg::Options::default();
    for n in 0..=steps {
        for seat in &seats {
            let svg = pbem::picture::of_game(dir, Some(n), seat.as_deref()).unwrap();
            let tree = resvg::usvg::Tree::from_str(&svg, &options).unwrap_or_else(|e| panic!("record {n} {seat:?}: {e}"));
            assert!(tree.size().width() >= 400.0, "record {n} {seat:?}");
            if n == 0 || n == steps {
                assert_eq!(svg, pbem::picture::of_game(dir, Some(n), seat.as_deref()).unwrap(), "record {n} {seat:?}");
                let png = pbem::picture::png(&svg).unwrap();
                assert_eq!(png, pbem::picture::png(&svg).unwrap(), "record {n} {seat:?}: PNG bytes differ");
                let p = resvg::tiny_skia::Pixmap::decode_png(&png).unwrap();
                assert_eq!((p.width() as f32, p.height() as f32), (tree.size().width().ceil(), tree.size().height().ceil()));
            }
        }
    }
}

#[test]
fn gettysburg_campaign_pictures() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("g");
    let steps = demo("gettysburg-campaign", &dir, 7, &[]);
    check_game(&dir, steps);
    let svg = pbem::picture::of_game(&dir, Some(0), None).unwrap();
    for shown in ["Gettysburg (1)", "Washington (3)", "Confederate points: 0 of", "XII 2"] {
        assert!(svg.contains(shown), "{shown} missing");
    }
}

#[test]
fn flag_dash_pictures() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("g");
    let steps = demo("flag-dash", &dir, 0x46, &[]);
    check_game(&dir, steps);
    plans_only_to_their_team(&dir, steps);
    let dir2 = tmp.path().join("alternate");
    let start = pipeline::parse_time("2026-07-03T12:00:00Z").unwrap();
    let opts = BTreeMap::from([("abilities".to_string(), "true".to_string())]);
    let s = pbem::demo::run_with_scenario("flag-dash", &dir2, [3; 32], Some(Path::new("alternate")), opts, start).unwrap();
    check_game(&dir2, s.steps);
}

#[test]
fn throw_down_that_flag_pictures() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("g");
    let steps = demo("throw-down-that-flag", &dir, 5, &[]);
    check_game(&dir, steps);
    let svg = pbem::picture::of_game(&dir, Some(0), None).unwrap();
    assert!(svg.contains("Confederates break through here"));
    assert!(svg.contains(">Str 3</text>"));
    report_picture_writes_svg_and_png_for_a_seat_or_an_observer(tmp.path(), &dir);
}

/// A picture never shows what the text hides: in a Flag Dash round paused in Phase 2 (a tie
/// question or the spy), each team's plans are in its own seats' pictures only, as in their
/// reports; the observer sees neither team's.
fn plans_only_to_their_team(dir: &Path, steps: u64) {
    let game = pbem::games::by_rules("flag-dash").unwrap();
    let mut paused = 0;
    for n in 0..=steps {
        let state = std::fs::read_to_string(dir.join("states").join(format!("{n:06}.json"))).unwrap();
        let white = game.view(&state, "white-1").unwrap();
        let Some(plans) = white["team_plans"].as_array().filter(|p| !p.is_empty()) else { continue };
        paused += 1;
        let line = plans[0]["lines"][0].as_str().unwrap().replace('"', "&quot;");
        let seen = |seat: Option<&str>| pbem::picture::of_game(dir, Some(n), seat).unwrap().contains(&line);
        assert!(seen(Some("white-1")) && seen(Some("white-2")), "record {n}: White's own plan {line:?} is in its pictures");
        assert!(!seen(Some("red-1")) && !seen(Some("red-2")), "record {n}: White's plan {line:?} shown to Red");
        assert!(!seen(None), "record {n}: White's plan {line:?} shown to an observer");
    }
    assert!(paused > 0, "the demo has a round paused with plans in it");
}

/// `pbem report --picture` (the real binary): PNG for an observer, SVG and the report for a seat,
/// clear errors for a bad file name, seat or step.
fn report_picture_writes_svg_and_png_for_a_seat_or_an_observer(tmp: &Path, dir: &Path) {
    let pbem = || Command::cargo_bin("pbem").unwrap();
    let png = tmp.join("board.png");
    pbem().arg("report").arg(dir).arg("--picture").arg(&png).assert().success().stdout("").stderr(contains("wrote"));
    let bytes = std::fs::read(&png).unwrap();
    assert!(resvg::tiny_skia::Pixmap::decode_png(&bytes).is_ok());
    let svg = tmp.join("board.svg");
    pbem()
        .arg("report")
        .arg(dir)
        .args(["--role", "union", "--record", "0", "--picture"])
        .arg(&svg)
        .assert()
        .success()
        .stdout(contains("record 0"));
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg xmlns="));
    pbem().arg("report").arg(dir).arg("--picture").arg(tmp.join("board.gif")).assert().failure().stderr(contains("must end in .svg or .png"));
    pbem().arg("report").arg(dir).args(["--role", "nobody", "--picture"]).arg(&svg).assert().failure().stderr(contains("no seat"));
    pbem().arg("report").arg(dir).args(["--step", "999", "--picture"]).arg(&svg).assert().failure().stderr(contains("no record 999"));
    pbem().arg("report").arg(dir).assert().failure();
}
