//! Scenario files that read but could not be played (tester12 H4 H5 M3-M7 L6 L7): each is a
//! shipped scenario with one line changed, given to the real binary's `pbem demo`, which must
//! refuse it naming the file, the line and the field, exit 1 and write nothing.

mod support;

use support::pbem;

/// (game, shipped scenario, line to change, its replacement, the error after "FILE: scenario: ").
const CASES: &[(&str, &str, &str, &str, &str)] = &[
    // H4: the success bag's counts wrapped (4294967295 + 22 = 21) and every pull built the bag.
    ("throw-down-that-flag", "throw-down-that-flag-july-2.toml", "union_success = 8 ", "union_success = 4294967295 ",
        "success_bag.union_success: the bag would hold more than 1000 tokens (the printed game's holds a few dozen)"),
    // H5: casualties in men wrapped; Gettysburg's town points summed past u32 (wrong winner).
    ("throw-down-that-flag", "throw-down-that-flag-july-2.toml", "men_per_str = 11 ", "men_per_str = 4294967295 ", "rules.men_per_str: is 4294967295; at most 1000"),
    ("gettysburg-campaign", "gettysburg-campaign.toml", "points = 1        # reconstruction: Maryland\n", "points = 2147483648\n", "map.towns[6].points: must be between 0 and 99"),
    // M5: an army commander whose order key is `resign` or `draw`.
    ("gettysburg-campaign", "gettysburg-campaign.toml", "army_commander = \"Lee\"", "army_commander = \"Draw\"",
        "confederate.army_commander: \"Draw\" is a key order files use (`draw = ...`); rename the commander"),
    // M4 and L7: names orders or reports cannot carry.
    ("flag-dash", "flag-dash.toml", "name = \"Black\"", "name = \"Runner\"",
        "character[2].name: \"Runner\" is a word orders use (runner, defender, nobody, a direction or a space); rename the character"),
    ("flag-dash", "flag-dash.toml", "name = \"Green\"", "name = \"Gr\\neen\"", "character[0].name: holds the control character '\\n'; give text on one line without control characters"),
    ("gettysburg-campaign", "gettysburg-campaign.toml", "name = \"York\"", "name = \"York\\u001b[31m\"",
        "map.towns[13].name: holds the control character '\\u{1b}'; give text on one line without control characters"),
    // tester13 D8: a corps commander without a name; invisible format characters in a name.
    ("gettysburg-campaign", "gettysburg-campaign.toml", "commander = \"Sickles\"", "commander = \" \"",
        "union.corps[2].commander: must be non-empty, without leading or trailing spaces"),
    ("gettysburg-campaign", "gettysburg-campaign.toml", "name = \"York\"", "name = \"York\\u202E\"",
        "map.towns[13].name: holds the invisible format character '\\u{202e}'; give text without invisible or direction-changing characters"),
    // M6: games that cannot be won or do not end.
    ("gettysburg-campaign", "gettysburg-campaign.toml", "victory_points = 6 ", "victory_points = 600 ",
        "rules.victory_points: is 600, but the towns the Confederates can reach by road from Fredericksburg hold 14 points: they could never win"),
    ("gettysburg-campaign", "gettysburg-campaign.toml", "last_turn = 9 ", "last_turn = 4000000000 ", "rules.last_turn: must be between 1 and 100"),
    ("gettysburg-campaign", "gettysburg-campaign.toml", "start = \"Washington\"", "start = \"Fredericksburg\"",
        "union.start: both sides start in Fredericksburg; the sides start in different towns (§3)"),
    ("flag-dash", "flag-dash.toml", "round_limit = 40", "round_limit = 4000000000", "round_limit: must be between 1 and 1000"),
    // M3: Flag Dash layouts the rulebook excludes.
    ("flag-dash", "flag-dash.toml", "rows = [6, 10]", "rows = [5, 10]", "territory.red: overlaps territory.white; a space can be only one team's territory (Game End)"),
    ("flag-dash", "flag-dash.toml", "white = \"e1\"", "white = \"e7\"",
        "flags.white: e7 is not in White's half of the board; each team sets up its flag in its own half, outside the opposing territory (Custom Layout; Game End)"),
    ("flag-dash", "flag-dash.toml", "start = \"a3\"", "start = \"a7\"",
        "character[0].start: a7 is not in White's half of the board; each team sets up its characters in its own half (Custom Layout)"),
    ("flag-dash", "flag-dash-alternate.toml", "exits = { white = \"b10\"", "exits = { white = \"f6\"", "secret_tunnel.exits.white: f6 is the entrance; an exit is elsewhere (Alternate Board Setup)"),
    ("flag-dash", "flag-dash-alternate.toml", "entrance = \"f6\"", "entrance = \"f1\"", "secret_tunnel.entrance: f1 is a team flag's start space"),
    // M7: pictures that could not be drawn.
    ("gettysburg-campaign", "gettysburg-campaign.toml", "x = 689 ", "x = 20000 ", "map.towns[5].x: must be between 60 and 2000 pixels (the picture's canvas)"),
    ("throw-down-that-flag", "throw-down-that-flag-july-2.toml", "origin_x = 50 ", "origin_x = 7900 ",
        "map.picture: the picture of the board would be 8888x642 pixels; at most 8000 each way (smaller size or origin)"),
    // L6: landmark keys that are no row, objective spaces given twice.
    ("throw-down-that-flag", "throw-down-that-flag-july-2.toml", "9 = \"beyond", "99 = \"beyond", "map.landmarks.99: a landmark's key is a row number of the map, 1 to 9"),
    ("throw-down-that-flag", "throw-down-that-flag-july-2.toml", "objective = [\"A1\", \"B1\"", "objective = [\"A1\", \"A1\"", "map.objective[1]: \"A1\" is listed twice"),
    // tester15 T15-6: a board's size and a team's characters named no line.
    ("throw-down-that-flag", "throw-down-that-flag-july-2.toml", "rows = 9 ", "rows = 0 ", "map.rows: must be 2 to 60 (and columns 2 to 26)"),
    ("flag-dash", "flag-dash.toml", "columns = 9\n", "columns = 30\n", "columns: must be 3 to 26 (and rows 3 to 99)"),
    ("flag-dash", "flag-dash.toml", "seat = 2 ", "seat = 1 ", "character[0].team: team white needs exactly one runner of seat 1, one of seat 2 and one defender"),
];

/// Fields a case names that are not on its changed line: a table named as a whole, at its header.
const TABLE_LINES: &[(&str, &str)] = &[("map.picture", "[map.picture]"), ("territory.red", "[territory.red]"), ("character[0].team", "team = \"white\"")];

/// The line the error names (tester13 M8): the line changed (where `from` was in the shipped
/// `text`), or the header of the table the error `want` names as a whole.
fn line_of_field(text: &str, from: &str, want: &str) -> usize {
    let field = want.split_once(": ").map_or(want, |(f, _)| f);
    let at = TABLE_LINES.iter().find(|(f, _)| *f == field).map_or(from, |(_, at)| at);
    text[..text.find(at).unwrap()].matches('\n').count() + 1
}

#[test]
fn scenarios_that_could_not_be_played_are_refused_by_their_field() {
    let tmp = tempfile::tempdir().unwrap();
    for (k, (rules, shipped, from, to, want)) in CASES.iter().enumerate() {
        let text = std::fs::read_to_string(format!("{}/scenarios/{shipped}", env!("CARGO_MANIFEST_DIR"))).unwrap();
        assert!(text.contains(from), "case {k}: {shipped} has no {from:?}");
        let file = tmp.path().join(format!("case{k}.toml"));
        std::fs::write(&file, text.replacen(from, to, 1)).unwrap();
        let out = tmp.path().join(format!("demo{k}"));
        let run = pbem().args(["demo", "--rules", rules, "--scenario"]).arg(&file).arg("--out").arg(&out).assert().code(1);
        let err = String::from_utf8(run.get_output().stderr.clone()).unwrap();
        let line = line_of_field(&text, from, want);
        assert_eq!(err.trim_end(), format!("pbem: {}: scenario: line {line}: {want}", file.display()), "case {k}");
        assert!(!out.exists(), "case {k}: {} was written", out.display());
    }
}

#[test]
fn the_shipped_scenarios_still_play() {
    let tmp = tempfile::tempdir().unwrap();
    for (rules, shipped) in [("gettysburg-campaign", "gettysburg-campaign.toml"), ("flag-dash", "flag-dash-alternate.toml"), ("throw-down-that-flag", "throw-down-that-flag-july-3.toml")] {
        let file = format!("{}/scenarios/{shipped}", env!("CARGO_MANIFEST_DIR"));
        pbem().args(["demo", "--rules", rules, "--scenario", &file]).arg("--out").arg(tmp.path().join(shipped)).assert().success();
    }
}
