//! Pictures of the board: every record of a demo game of each of the three games has a picture
//! for each seat and for an observer, valid SVG that usvg reads back and the same bytes twice;
//! PNGs decode and are the same bytes twice; `pbem report --picture` writes both kinds; and a
//! picture never shows what the seat's text hides (the observer's shows only what every seat sees).
//!
//! Layout (tester16 T16c-1, T16b-2, T16c-2, T16c-12, T16c-3): every text carries its measured
//! width (`textLength`) and a fallback font list and lies inside the picture, even on a narrow
//! map; in Gettysburg and Throw Down That Flag no two texts overlap, and no Gettysburg label or
//! counter covers another; an advance arrow is drawn once, under the counters.
//!
//! Layout (tester16 T16c-1, T16b-2, T16c-2, T16c-12, T16c-3): every text carries its measured
//! width (`textLength`) and a fallback font list and lies inside the picture, even on a narrow
//! map; in Gettysburg and Throw Down That Flag no two texts overlap, and no Gettysburg label or
//! counter covers another; an advance arrow is drawn once, under the counters.

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

/// An attribute of an SVG element written on one line.
fn attr<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let i = line.find(&key)? + key.len();
    line[i..].find('"').map(|j| &line[i..i + j])
}

fn num(line: &str, name: &str) -> f64 {
    attr(line, name).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("no number {name} in {line}"))
}

/// Each text's words and box (left, top, right, bottom): its width is its `textLength`, its
/// height the font's from 0.75 of its size above the baseline to 0.2 below.
fn text_boxes(svg: &str) -> Vec<(String, [f64; 4])> {
    svg.lines()
        .filter(|l| l.starts_with("<text "))
        .map(|l| {
            let (x, y, size) = (num(l, "x"), num(l, "y"), num(l, "font-size"));
            let w = num(l, "textLength");
            let left = match attr(l, "text-anchor") {
                Some("middle") => x - w / 2.0,
                Some("end") => x - w,
                _ => x,
            };
            let words = l[l.find('>').unwrap() + 1..l.rfind("</text>").unwrap()].to_string();
            (words, [left, y - 0.75 * size, left + w, y + 0.2 * size])
        })
        .collect()
}

fn picture_size(svg: &str) -> (f64, f64) {
    let first = svg.lines().next().unwrap();
    (num(first, "width"), num(first, "height"))
}

/// Every text has its width and a font list ending in a generic family, and lies inside the
/// picture (tester16 T16b-2, T16c-2).
fn texts_fit(svg: &str, what: &str) {
    let (w, h) = picture_size(svg);
    for l in svg.lines().filter(|l| l.starts_with("<text ")) {
        assert!(attr(l, "font-family").is_some_and(|f| f.starts_with("DejaVu Sans,") && f.ends_with(", sans-serif")), "{what}: {l}");
        assert_eq!(attr(l, "lengthAdjust"), Some("spacingAndGlyphs"), "{what}: {l}");
    }
    for (words, [left, top, right, bottom]) in text_boxes(svg) {
        assert!(left >= 0.0 && right <= w && top >= 0.0 && bottom <= h, "{what}: {words:?} at {left}..{right} x {top}..{bottom} is outside the {w}x{h} picture");
    }
}

/// No two texts overlap or come within 2 pixels of each other (tester16 T16c-1, T16c-12).
fn texts_apart(svg: &str, what: &str) {
    let boxes = text_boxes(svg);
    for (i, (a, p)) in boxes.iter().enumerate() {
        for (b, q) in &boxes[i + 1..] {
            let apart = p[2] + 2.0 <= q[0] || q[2] + 2.0 <= p[0] || p[3] + 2.0 <= q[1] || q[3] + 2.0 <= p[1];
            assert!(apart, "{what}: {a:?} {p:?} touches {b:?} {q:?}");
        }
    }
}

/// In a Gettysburg picture no town label or corps counter on the map covers another, and each
/// advance arrow is drawn once, before (under) every counter (tester16 T16c-1).
fn gettysburg_boxes_apart(svg: &str, what: &str) {
    let lines: Vec<&str> = svg.lines().collect();
    let legend = lines.iter().find(|l| l.contains(">Union corps: number and strength")).map_or(f64::MAX, |l| num(l, "y") - 14.0);
    let boxed: Vec<(usize, [f64; 4])> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with("<rect ") && (attr(l, "stroke-width") == Some("0.5") || (attr(l, "width") == Some("44") && attr(l, "height") == Some("20"))))
        .map(|(i, l)| (i, [num(l, "x"), num(l, "y"), num(l, "x") + num(l, "width"), num(l, "y") + num(l, "height")]))
        .filter(|(_, b)| b[1] < legend)
        .collect();
    for (k, (i, p)) in boxed.iter().enumerate() {
        for (j, q) in &boxed[k + 1..] {
            let apart = p[2] <= q[0] + 0.05 || q[2] <= p[0] + 0.05 || p[3] <= q[1] + 0.05 || q[3] <= p[1] + 0.05;
            assert!(apart, "{what}: {} covers {}", lines[*i], lines[*j]);
        }
    }
    // The map's arrows (the legend's sample is below the map).
    let arrows: Vec<(usize, &str)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.starts_with("<polyline ") && attr(l, "stroke-width") == Some("4"))
        .map(|(i, l)| (i, attr(l, "points").unwrap()))
        .filter(|(_, p)| p.split([',', ' ']).nth(1).and_then(|y| y.parse::<f64>().ok()).is_some_and(|y| y < legend))
        .collect();
    let first_counter = lines.iter().position(|l| attr(l, "width") == Some("44")).unwrap_or(usize::MAX);
    for (k, (i, points)) in arrows.iter().enumerate() {
        assert!(arrows[k + 1..].iter().all(|(_, p)| p != points), "{what}: the arrow {points} is drawn twice");
        assert!(*i < first_counter, "{what}: the arrow {points} is drawn over a counter");
        // No town label hides any of it.
        let xy: Vec<f64> = points.split([',', ' ']).map(|v| v.parse().unwrap()).collect();
        for (j, b) in boxed.iter().filter(|(j, _)| attr(lines[*j], "stroke-width") == Some("0.5")) {
            assert!(!crosses((xy[0], xy[1]), (xy[2], xy[3]), b), "{what}: the label {} hides the arrow {points}", lines[*j]);
        }
    }
}

/// Whether the segment from `a` to `b` passes through box `b` (left, top, right, bottom), by
/// sampling it every half pixel.
fn crosses(a: (f64, f64), b: (f64, f64), bx: &[f64; 4]) -> bool {
    let n = ((b.0 - a.0).hypot(b.1 - a.1) * 2.0).ceil().max(1.0) as usize;
    (0..=n).any(|k| {
        let t = k as f64 / n as f64;
        let (x, y) = (a.0 + (b.0 - a.0) * t, a.1 + (b.1 - a.1) * t);
        x > bx[0] + 0.5 && x < bx[2] - 0.5 && y > bx[1] + 0.5 && y < bx[3] - 0.5
    })
}

/// Every record, every seat and the observer: a picture usvg reads, the same twice, its texts
/// inside it ([`texts_fit`]) and passing `check`; PNGs (first and last record) decode, the same
/// bytes twice.
fn check_game(dir: &Path, steps: u64, check: fn(&str, &str)) {
    let mut seats: Vec<Option<String>> = roles(dir).into_iter().map(Some).collect();
    seats.push(None);
    let options = resvg::usvg::Options::default();
    for n in 0..=steps {
        for seat in &seats {
            let svg = pbem::picture::of_game(dir, Some(n), seat.as_deref()).unwrap();
            let tree = resvg::usvg::Tree::from_str(&svg, &options).unwrap_or_else(|e| panic!("record {n} {seat:?}: {e}"));
            let what = format!("{} record {n} {seat:?}", dir.display());
            texts_fit(&svg, &what);
            check(&svg, &what);
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
    check_game(&dir, steps, |svg, what| {
        texts_apart(svg, what);
        gettysburg_boxes_apart(svg, what);
    });
    let svg = pbem::picture::of_game(&dir, Some(0), None).unwrap();
    for shown in ["Gettysburg (1)", "Washington (3)", "Confederate points: 0 of", "XII 2", "corps advancing along a road"] {
        assert!(svg.contains(shown), "{shown} missing");
    }
    assert!(!svg.contains("Union corps II, strength 5"), "the legend's sample is no real corps (tester16 T16c-12)");
    no_planned_moves_once_the_game_is_over(&dir, steps);
}

/// The picture of the game's end lists no planned moves (tester16 T16c-12; "moved" for a corps
/// that carried out its plan: `gettysburg_campaign::tests`, the demo never pauses after a move).
fn no_planned_moves_once_the_game_is_over(dir: &Path, steps: u64) {
    for side in ["union", "confederate"] {
        let svg = pbem::picture::of_game(dir, Some(steps), Some(side)).unwrap();
        assert!(svg.contains("The game is over") && !svg.contains("planned moves"), "{svg}");
    }
}

/// The Gettysburg scenario with `edit` made to its text, as a file in `tmp`.
fn gettysburg_scenario(tmp: &Path, name: &str, edit: impl Fn(&str) -> String) -> std::path::PathBuf {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/gettysburg-campaign.toml")).unwrap();
    let path = tmp.join(name);
    std::fs::write(&path, edit(&text)).unwrap();
    path
}

fn scenario_demo(rules: &str, dir: &Path, scenario: &Path) -> u64 {
    let start = pipeline::parse_time("2026-07-03T12:00:00Z").unwrap();
    pbem::demo::run_with_scenario(rules, dir, [9; 32], Some(scenario), BTreeMap::new(), start, pbem::report::WORDING).unwrap().steps
}

/// tester16 T16c-1: the tester's game (the real binary): at record 10 the Confederate I Corps
/// advancing from Hagerstown was drawn over Hagerstown's label, its arrow twice; and seven Union
/// corps in Gettysburg hid Westminster's label.
#[test]
fn gettysburg_labels_and_counters_never_collide() {
    let tmp = tempfile::tempdir().unwrap();
    let d1 = tmp.path().join("d1");
    let pbem = || Command::cargo_bin("pbem").unwrap();
    pbem().args(["demo", "--seed", "18630701000000000000000000000000000000000000000000000000000000ab", "--out"]).arg(&d1).assert().success();
    let svg_file = tmp.path().join("c10.svg");
    pbem().arg("report").arg(&d1).args(["--record", "10", "--role", "confederate", "--picture"]).arg(&svg_file).assert().success();
    let svg = std::fs::read_to_string(&svg_file).unwrap();
    assert!(svg.contains(">Hagerstown (1, scored)<") && svg.contains(">I 5<"), "the tester's picture: {svg}");
    for check in [texts_fit, texts_apart, gettysburg_boxes_apart] {
        check(&svg, "T16c-1 record 10");
    }
    let last = pipeline::load(&d1).unwrap().record.index;
    check_game(&d1, last, |svg, what| {
        texts_apart(svg, what);
        gettysburg_boxes_apart(svg, what);
    });
    let scenario = gettysburg_scenario(tmp.path(), "seven.toml", |t| t.replace("start = \"Washington\"", "start = \"Gettysburg\""));
    let dir = tmp.path().join("seven");
    let steps = scenario_demo("gettysburg-campaign", &dir, &scenario);
    let svg = pbem::picture::of_game(&dir, Some(0), None).unwrap();
    assert!(svg.contains(">Westminster (1)<") && svg.contains(">XII "), "{svg}");
    check_game(&dir, steps.min(3), |svg, what| {
        texts_apart(svg, what);
        gettysburg_boxes_apart(svg, what);
    });
}

/// tester16 T16b-2: on a narrow map (every town between x 100 and 500) the legend is not cut off
/// at the right edge: it wraps; the same for a small Throw Down That Flag map.
#[test]
fn narrow_maps_keep_their_legends_inside() {
    let tmp = tempfile::tempdir().unwrap();
    let scenario = gettysburg_scenario(tmp.path(), "narrow.toml", |t| {
        t.lines()
            .map(|l| match l.strip_prefix("x = ").and_then(|r| r.split_whitespace().next()).and_then(|x| x.parse::<f64>().ok()) {
                Some(x) => format!("x = {}", (100.0 + (x - 151.0) * 400.0 / 744.0).round()),
                None => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
    let dir = tmp.path().join("narrow");
    let steps = scenario_demo("gettysburg-campaign", &dir, &scenario);
    let svg = pbem::picture::of_game(&dir, Some(0), Some("union")).unwrap();
    assert!(picture_size(&svg).0 < 750.0, "a narrow picture: {svg}");
    assert!(svg.contains(">corps advancing along a road on the town the arrow points to (Confederate, Union)<"));
    check_game(&dir, steps.min(4), |_, _| {});
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/throw-down-that-flag-july-2.toml")).unwrap();
    let small = tmp.path().join("small.toml");
    std::fs::write(&small, text.replace("size = 34 ", "size = 10 ")).unwrap();
    let dir = tmp.path().join("small");
    let steps = scenario_demo("throw-down-that-flag", &dir, &small);
    check_game(&dir, steps.min(4), |_, _| {});
}

#[test]
fn flag_dash_pictures() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("g");
    let steps = demo("flag-dash", &dir, 0x46, &[]);
    check_game(&dir, steps, |_, _| {});
    plans_only_to_their_team(&dir, steps);
    held_and_carried_flags_are_drawn(&dir, steps);
    let dir2 = tmp.path().join("alternate");
    let start = pipeline::parse_time("2026-07-03T12:00:00Z").unwrap();
    let opts = BTreeMap::from([("abilities".to_string(), "true".to_string())]);
    let s = pbem::demo::run_with_scenario("flag-dash", &dir2, [3; 32], Some(Path::new("alternate")), opts, start, pbem::report::WORDING).unwrap();
    check_game(&dir2, s.steps, |_, _| {});
}

/// tester16 T16c-12: a runner's character flags are drawn (a small flag in each one's colour)
/// and named in the side panel; a carried team flag's letter is at least 9 pixels.
fn held_and_carried_flags_are_drawn(dir: &Path, steps: u64) {
    let (mut held, mut carried) = (0, 0);
    for n in 0..=steps {
        let svg = pbem::picture::of_game(dir, Some(n), None).unwrap();
        if svg.contains(", holds character flags of ") {
            held += 1;
            assert!(svg.contains(" width=\"9\" height=\"8\""), "record {n}: the held flags are drawn");
        }
        for l in svg.lines().filter(|l| l.ends_with(">W</text>") || l.ends_with(">R</text>")) {
            carried += 1;
            assert!(num(l, "font-size") >= 9.0, "record {n}: {l}");
        }
    }
    assert!(held > 0 && carried > 0, "the demo has held and carried flags");
}

#[test]
fn throw_down_that_flag_pictures() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("g");
    let steps = demo("throw-down-that-flag", &dir, 5, &[]);
    check_game(&dir, steps, texts_apart);
    let svg = pbem::picture::of_game(&dir, Some(0), None).unwrap();
    assert!(svg.contains("Confederates break through here"));
    assert!(svg.contains(">Str 3</text>"));
    report_picture_writes_svg_and_png_for_a_seat_or_an_observer(tmp.path(), &dir);
}

/// tester16 T16c-3, T16c-12: the day won by holding all 4 rounds (the tester's game, the real
/// binary) is "All 4 rounds played" in the picture, not "Round 5 of 4", and the result line keeps
/// clear of the break-through line's text.
#[test]
fn throw_down_that_flag_after_the_last_round() {
    let tmp = tempfile::tempdir().unwrap();
    let td1 = tmp.path().join("td1");
    let pbem = || Command::cargo_bin("pbem").unwrap();
    let seed = "00000000000000000000000000000000000000000000000000000000000000f2";
    pbem().args(["demo", "--rules", "throw-down-that-flag", "--seed", seed, "--out"]).arg(&td1).assert().success();
    let file = tmp.path().join("td1.svg");
    pbem().arg("report").arg(&td1).arg("--picture").arg(&file).assert().success();
    let svg = std::fs::read_to_string(&file).unwrap();
    assert!(svg.contains(">All 4 rounds played; broke through") && !svg.contains("Round 5 of 4"), "{svg}");
    assert!(svg.contains(">july-2: victory"), "{svg}");
    texts_fit(&svg, "td1");
    texts_apart(&svg, "td1");
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
        let line = plans[0]["lines"][0].as_str().unwrap().replace('"', "&quot;");
        let seen = |seat: Option<&str>| pbem::picture::of_game(dir, Some(n), seat).unwrap().contains(&line);
        // Once the game is over no picture shows plans (tester21 T21a-2), as no report does.
        if white["phase_text"].as_str().unwrap().starts_with("The game is over") {
            assert!(!seen(Some("white-1")), "record {n}: plans drawn after the game's end");
            continue;
        }
        paused += 1;
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

/// A Throw Down That Flag game the host ended: its picture says the game is over, as those of
/// the other games do (tester22 T22a-1).
#[test]
fn throw_down_that_flag_ended_by_the_host() {
    let tmp = tempfile::tempdir().unwrap();
    let pbem = || Command::cargo_bin("pbem").unwrap();
    assert!(std::process::Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(tmp.path().join("u")).status().unwrap().success());
    let g = tmp.path().join("td");
    pbem().arg("new").arg(&g).args(["--rules", "throw-down-that-flag", "--now", "2026-07-01T12:00:00Z", "--player"]).arg(format!("union:u@example.org:{}", tmp.path().join("u.pub").display())).assert().success();
    let picture = |name: &str| {
        let file = tmp.path().join(name);
        pbem().arg("report").arg(&g).args(["--role", "union", "--picture"]).arg(&file).assert().success();
        std::fs::read_to_string(&file).unwrap()
    };
    assert!(!picture("before.svg").contains(">The game is over"));
    pbem().arg("end").arg(&g).args(["--abandon", "--reason", "gone", "--now", "2026-07-01T13:00:00Z"]).assert().success();
    let svg = picture("after.svg");
    assert!(svg.contains(">The game is over"), "{svg}");
}
