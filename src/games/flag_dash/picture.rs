//! The picture of the board: the grid with coordinates, walls, tunnels and the secret tunnel, team
//! flags, characters (colour, mark and name; runner or defender, boosts, flags carried), traps,
//! cones and territories, and the steps of the round's account as paths; drawn from the view only.
//!
//! White's back row is at the bottom (as in the text board). Each pawn is drawn in its own colour
//! with its one-letter mark; White's pawns are round, Red's square; the flags are pennants marked
//! W and R: letters and shapes as well as colours.

use serde_json::Value;

use crate::picture::{Anchor, Svg, colour, text_width};

const CELL: f64 = 48.0;
const LEFT: f64 = 40.0;
const TOP: f64 = 80.0;

/// A pawn's fill and the ink of its mark, from its colour name (unknown names are grey).
fn pawn_colour(name: &str) -> (&'static str, &'static str) {
    match name.to_ascii_lowercase().as_str() {
        "green" => (colour::GREEN, "#FFFFFF"),
        "orange" => (colour::ORANGE, colour::INK),
        "black" => ("#000000", "#FFFFFF"),
        "purple" => (colour::PURPLE, colour::INK),
        "blue" => (colour::BLUE, "#FFFFFF"),
        "yellow" => (colour::YELLOW, colour::INK),
        "red" => (colour::VERMILLION, "#FFFFFF"),
        "white" => ("#FFFFFF", colour::INK),
        "pink" => ("#F4A6C6", colour::INK),
        "brown" => ("#8B5A2B", "#FFFFFF"),
        _ => (colour::LIGHT, colour::INK),
    }
}

/// The board's size and its coordinates.
struct Grid {
    columns: i32,
    rows: i32,
}

impl Grid {
    /// The top-left corner of square `name` (e.g. `c3`), if it is on the board.
    fn corner(&self, name: &str) -> Option<(f64, f64)> {
        let (c, r) = square(name)?;
        (c < self.columns && r < self.rows).then(|| self.corner_of(c, r))
    }

    fn corner_of(&self, c: i32, r: i32) -> (f64, f64) {
        (LEFT + c as f64 * CELL, TOP + (self.rows - 1 - r) as f64 * CELL)
    }

    fn centre(&self, name: &str) -> Option<(f64, f64)> {
        self.corner(name).map(|(x, y)| (x + CELL / 2.0, y + CELL / 2.0))
    }
}

/// Column and row (from 0) of a square's name such as `c3`.
fn square(name: &str) -> Option<(i32, i32)> {
    let q: crate::games::flag_dash::layout::Sq = name.parse().ok()?;
    (q.c >= 0 && q.r >= 0).then_some((q.c, q.r))
}

fn strs(v: &Value) -> Vec<String> {
    v.as_array().into_iter().flatten().filter_map(|x| x.as_str().map(String::from)).collect()
}

fn squares(svg: &mut Svg, g: &Grid, b: &Value) {
    let out: Vec<i64> = b["out_columns"].as_array().into_iter().flatten().filter_map(Value::as_i64).collect();
    let inside = |t: &str, c: i32, r: i32| {
        let (cs, rs) = (&b["territory"][t]["columns"], &b["territory"][t]["rows"]);
        let within = |v: &Value, x: i32| v[0].as_i64().is_some_and(|a| a <= x as i64) && v[1].as_i64().is_some_and(|z| x as i64 <= z);
        within(cs, c) && within(rs, r)
    };
    for r in 0..g.rows {
        for c in 0..g.columns {
            let (x, y) = g.corner_of(c, r);
            let fill = if out.contains(&(c as i64)) {
                "#8C8C8C"
            } else if inside("red", c, r) {
                "#F6DCCF"
            } else if inside("white", c, r) {
                "#FFFFFF"
            } else {
                colour::PAPER
            };
            svg.rect(x, y, CELL, CELL, fill, Some(("#BDBDBD", 1.0)));
        }
    }
    for c in 0..g.columns {
        let letter = ((b'a' + (c % 26) as u8) as char).to_string();
        let x = LEFT + (c as f64 + 0.5) * CELL;
        svg.text((x, TOP - 6.0), &letter, 12.0, Anchor::Middle, false, colour::INK);
        svg.text((x, TOP + g.rows as f64 * CELL + 15.0), &letter, 12.0, Anchor::Middle, false, colour::INK);
    }
    for r in 0..g.rows {
        let y = TOP + (g.rows - 1 - r) as f64 * CELL + CELL / 2.0 + 4.0;
        svg.text((LEFT - 8.0, y), &(r + 1).to_string(), 12.0, Anchor::End, false, colour::INK);
    }
}

/// Each team's territory outlined (White dashed, Red solid), with cones at the ends of an area
/// narrower than the board (Custom Layout: the scoring area between cones).
fn territories(svg: &mut Svg, g: &Grid, b: &Value) {
    for (t, ink, dash) in [("white", colour::INK, Some("8 4")), ("red", colour::VERMILLION, None)] {
        let v = &b["territory"][t];
        let (Some(c0), Some(c1), Some(r0), Some(r1)) = (v["columns"][0].as_i64(), v["columns"][1].as_i64(), v["rows"][0].as_i64(), v["rows"][1].as_i64()) else {
            continue;
        };
        let (x0, y1) = g.corner_of(c0 as i32, r0 as i32);
        let (x1, y0) = g.corner_of(c1 as i32, r1 as i32);
        let (x1, y1) = (x1 + CELL, y1 + CELL);
        let pts = [(x0 + 2.0, y0 + 2.0), (x1 - 2.0, y0 + 2.0), (x1 - 2.0, y1 - 2.0), (x0 + 2.0, y1 - 2.0), (x0 + 2.0, y0 + 2.0)];
        svg.polyline(&pts, ink, 3.0, dash, false);
        if (c1 - c0 + 1) < g.columns as i64 {
            let ym = (y0 + y1) / 2.0;
            for x in [x0, x1] {
                svg.polygon(&[(x, ym - 11.0), (x - 8.0, ym + 9.0), (x + 8.0, ym + 9.0)], colour::ORANGE, Some((colour::INK, 1.5)));
            }
        }
    }
}

fn walls(svg: &mut Svg, g: &Grid, b: &Value) {
    for w in b["walls"].as_array().into_iter().flatten() {
        let (Some(a), Some(z)) = (w[0].as_str().and_then(square), w[1].as_str().and_then(square)) else { continue };
        let (lo, hi) = if a <= z { (a, z) } else { (z, a) };
        let (x, y) = g.corner_of(hi.0, hi.1);
        let (from, to) = if lo.0 != hi.0 {
            ((x, y), (x, y + CELL)) // side by side: the left side of the right square
        } else {
            ((x, y + CELL), (x + CELL, y + CELL)) // one above the other: the lower side of the upper square
        };
        svg.line(from, to, colour::INK, 6.0, None);
    }
}

/// A tunnel: a dark ring, its white centre wide enough for the secret tunnel's mark (`S`, `Xw`,
/// `Xr`: tester t17b-7, the mark spilled onto the ring).
fn tunnel(svg: &mut Svg, at: (f64, f64), mark: &str) {
    svg.circle(at.0, at.1, 16.0, "#4D4D4D", Some((colour::INK, 1.5)));
    svg.circle(at.0, at.1, if mark.is_empty() { 8.0 } else { 11.5 }, "#FFFFFF", None);
    if !mark.is_empty() {
        svg.text((at.0, at.1 + 3.5), mark, 10.0, Anchor::Middle, true, colour::INK);
    }
}

/// A tunnel under a pawn, which hides its ring: the same ring, small, at the square's top-left
/// corner, drawn over the pawn (tester t17b-2: a pawn on a tunnel hid it).
fn tunnel_badge(svg: &mut Svg, at: (f64, f64), mark: &str) {
    let (x, y) = (at.0 - CELL / 2.0 + 9.0, at.1 - CELL / 2.0 + 9.0);
    svg.circle(x, y, 8.5, "#4D4D4D", Some((colour::INK, 1.0)));
    svg.circle(x, y, if mark.is_empty() { 3.5 } else { 6.5 }, "#FFFFFF", None);
    if !mark.is_empty() {
        svg.text((x, y + 2.5), mark, 7.0, Anchor::Middle, true, colour::INK);
    }
}

/// Every tunnel of view `v` as (square, mark): the board's (no mark), then the secret tunnel's
/// entrance `S` and exits `Xw`, `Xr` where the view shows them.
fn all_tunnels(v: &Value) -> Vec<(String, &'static str)> {
    let mut out: Vec<(String, &'static str)> = strs(&v["board_data"]["tunnels"]).into_iter().map(|t| (t, "")).collect();
    let st = &v["secret_tunnel"];
    for (key, mark) in [("entrance", "S"), ("white", "Xw"), ("red", "Xr")] {
        out.extend(st[key].as_str().map(|q| (q.to_string(), mark)));
    }
    out
}

fn tunnels(svg: &mut Svg, g: &Grid, v: &Value) {
    let b = &v["board_data"];
    for (t, mark) in all_tunnels(v) {
        if let Some(at) = g.centre(&t) {
            tunnel(svg, at, mark);
        }
    }
    for t in b["traps"].as_array().into_iter().flatten() {
        if let Some((x, y)) = t["at"].as_str().and_then(|q| g.corner(q)) {
            svg.polygon(&[(x + 4.0, y + CELL - 4.0), (x + 20.0, y + CELL - 4.0), (x + 12.0, y + CELL - 18.0)], colour::YELLOW, Some((colour::INK, 1.5)));
            svg.text((x + 12.0, y + CELL - 6.0), "T", 9.0, Anchor::Middle, true, colour::INK);
        }
    }
}

/// A team flag: a pennant `size` pixels tall from `top` (its pole's top), marked W or R in a
/// letter of at least 9 pixels (its capital 6.5 high, on a carried flag too).
fn pennant(svg: &mut Svg, top: (f64, f64), team: &str, size: f64) {
    let (fill, ink, mark) = if team == "white" { ("#FFFFFF", colour::INK, "W") } else { (colour::VERMILLION, "#FFFFFF", "R") };
    svg.line(top, (top.0, top.1 + size * 1.6), colour::INK, 2.0, None);
    svg.polygon(&[top, (top.0 + size * 1.3, top.1 + size * 0.5), (top.0, top.1 + size)], fill, Some((colour::INK, 1.5)));
    let letter = (size * 0.6).max(9.0);
    svg.text((top.0 + size * 0.42, top.1 + size * 0.5 + letter * 0.36), mark, letter, Anchor::Middle, true, ink);
}

/// The character flags a runner holds: a small flag in each one's colour below the pawn's left.
fn held_flags(svg: &mut Svg, at: (f64, f64), holds: &[String]) {
    for (i, name) in holds.iter().enumerate() {
        let x = at.0 - 23.0 + 10.0 * i as f64;
        svg.line((x, at.1 + 6.0), (x, at.1 + 23.0), colour::INK, 1.5, None);
        svg.rect(x, at.1 + 6.0, 9.0, 8.0, pawn_colour(name).0, Some((colour::INK, 1.0)));
    }
}

/// How far apart, in pixels along each axis, two paths over the same step between two squares
/// are drawn: a path's steps over a step some path took before are shifted by a multiple of it
/// (tester t17b-3: one character's path covered another's, and a path back over itself hid its
/// own start). Wider than a path's outline (7): they sit side by side with a gap.
const PATH_APART: f64 = 11.0;

/// The steps of the round's account: one path per character and run of connected steps, its
/// arrow stopping short of the pawn at its end; each run cut where it goes over a step already
/// drawn ([`PATH_APART`]).
fn paths(svg: &mut Svg, g: &Grid, b: &Value) {
    let steps = b["paths"].as_array().cloned().unwrap_or_default();
    // Each step as (character, from, to, how many steps between the same two squares came before).
    let mut taken: std::collections::BTreeMap<(String, String), usize> = std::collections::BTreeMap::new();
    // Each run: its character, how many times its steps were drawn before, its points.
    type Run = (String, usize, Vec<(f64, f64)>);
    let mut runs: Vec<Run> = Vec::new();
    for st in &steps {
        let name = st["name"].as_str().unwrap_or_default().to_string();
        let (Some(from), Some(to)) = (st["from"].as_str(), st["to"].as_str()) else { continue };
        let (Some(a), Some(z)) = (g.centre(from), g.centre(to)) else { continue };
        let key = if from <= to { (from.to_string(), to.to_string()) } else { (to.to_string(), from.to_string()) };
        let seen = taken.entry(key).or_insert(0);
        let k = *seen;
        *seen += 1;
        match runs.iter_mut().rev().find(|(n, _, _)| *n == name) {
            Some((_, kk, pts)) if *kk == k && pts.last() == Some(&a) => pts.push(z),
            _ => runs.push((name, k, vec![a, z])),
        }
    }
    // Only a character's last run ends at its pawn; the others end where the next begins.
    for (i, (name, k, mut pts)) in runs.iter().cloned().enumerate() {
        let (fill, _) = pawn_colour(&name);
        let last = !runs[i + 1..].iter().any(|(n, _, _)| *n == name);
        // 0, +1, -1, +2, ... times PATH_APART, on both axes (moves are never diagonal: Movement Rules).
        let shift = PATH_APART * (k.div_ceil(2) as f64) * if k % 2 == 1 { 1.0 } else { -1.0 };
        for p in &mut pts {
            *p = (p.0 + shift, p.1 + shift);
        }
        let n = pts.len();
        if last {
            let (p, q) = (pts[n - 2], pts[n - 1]);
            let len = ((q.0 - p.0).powi(2) + (q.1 - p.1).powi(2)).sqrt().max(1.0);
            let back = 18.0_f64.min(len / 2.0);
            pts[n - 1] = (q.0 - (q.0 - p.0) / len * back, q.1 - (q.1 - p.1) / len * back);
        }
        // A dark pawn's path is outlined in white, so that its dashes show (tester t17b-14).
        let outline = if fill == "#000000" { "#FFFFFF" } else { colour::INK };
        svg.polyline(&pts, outline, 7.0, None, false);
        svg.polyline(&pts, fill, 4.0, Some("7 4"), last);
    }
}

fn pawn(svg: &mut Svg, at: (f64, f64), c: &Value) {
    let name = c["name"].as_str().unwrap_or("?");
    let (fill, ink) = pawn_colour(name);
    let defender = c["role"].as_str().is_some_and(|r| r == "defender");
    let stroke = (colour::INK, if defender { 4.0 } else { 2.0 });
    if c["team"] == "White" {
        svg.circle(at.0, at.1, 17.0, fill, Some(stroke));
    } else {
        svg.rect(at.0 - 16.0, at.1 - 16.0, 32.0, 32.0, fill, Some(stroke));
    }
    svg.text((at.0, at.1 + 6.0), c["mark"].as_str().unwrap_or("?"), 17.0, Anchor::Middle, true, ink);
    let boosts = c["boosts"].as_u64().unwrap_or(0);
    if boosts > 0 {
        svg.circle(at.0 + 15.0, at.1 + 15.0, 8.0, "#FFFFFF", Some((colour::INK, 1.0)));
        svg.text((at.0 + 15.0, at.1 + 19.0), &format!("+{boosts}"), 9.0, Anchor::Middle, true, colour::INK);
    }
    held_flags(svg, at, &strs(&c["holds"]));
    if let Some(t) = c["carries"].as_str() {
        // Its pole stands right of the mark, whose letter it would otherwise cross (tester t17b-5).
        pennant(svg, (at.0 + 9.0, at.1 - 25.0), &t.to_ascii_lowercase(), 13.0);
    }
}

fn pieces(svg: &mut Svg, g: &Grid, v: &Value) {
    let b = &v["board_data"];
    for t in ["white", "red"] {
        let f = &b["flags"][t];
        if f["carried"].as_bool() == Some(false)
            && let Some((x, y)) = f["at"].as_str().and_then(|q| g.corner(q))
        {
            pennant(svg, (x + 14.0, y + 7.0), t, 20.0);
        }
    }
    let tunnels = all_tunnels(v);
    for c in v["characters"].as_array().into_iter().flatten() {
        let Some(q) = c["at"].as_str() else { continue };
        if let Some(at) = g.centre(q) {
            pawn(svg, at, c);
            for (_, mark) in tunnels.iter().filter(|(t, _)| t == q) {
                tunnel_badge(svg, at, mark);
            }
        }
    }
}

/// The side panel: phase, every character in words, the key, and the seat's own team's plans.
fn panel(v: &Value) -> Vec<(String, bool)> {
    let mut lines = vec![(v["phase_text"].as_str().unwrap_or("").to_string(), false)];
    lines.push((format!("Tiebreak marker: {}", v["tiebreak"].as_str().unwrap_or("?")), false));
    lines.push((String::new(), false));
    lines.push(("Characters".into(), true));
    for c in v["characters"].as_array().into_iter().flatten() {
        let mut t = format!("{} {} ({}, {}) on {}", c["mark"].as_str().unwrap_or("?"), c["name"].as_str().unwrap_or("?"), c["team"].as_str().unwrap_or("?"), c["role"].as_str().unwrap_or("?"), c["at"].as_str().unwrap_or("?"));
        if let Some(b) = c["boosts"].as_u64().filter(|&b| b > 0) {
            t.push_str(&format!(", {b} boost{}", if b == 1 { "" } else { "s" }));
        }
        if let Some(f) = c["carries"].as_str() {
            t.push_str(&format!(", carries the {f} flag"));
        }
        let holds = strs(&c["holds"]);
        if !holds.is_empty() {
            t.push_str(&format!(", holds character flags of {}", holds.join(", ")));
        }
        lines.push((t, false));
    }
    if v["board_data"]["setting_up"] == true {
        // tester t17b-9: the other team's half looked like its real set-up.
        lines.push((String::new(), false));
        lines.push(("Until both teams have set up, the board shows the".into(), false));
        lines.push(("scenario's default set-up: each team may change its half.".into(), false));
    }
    lines.push((String::new(), false));
    lines.push(("Key".into(), true));
    for k in [
        "round pawn: Team White; square pawn: Team Red; thick ring: defender",
        "+n: boosts; pennant W / R: a team flag (on a pawn: carried)",
        "small flags below a pawn: character flags it holds (their colours)",
        "dashed outline: White territory; solid: Red territory",
        "ring: tunnel (small, at a pawn's corner: under the pawn)",
        "S: secret tunnel entrance, Xw / Xr its exits",
        "T: trap; orange triangles: cones; thick line: wall",
        "dashed arrows: the latest round's moves",
    ] {
        lines.push((k.to_string(), false));
    }
    if v["board_data"]["out_columns"].as_array().is_some_and(|c| !c.is_empty()) {
        lines.push(("grey columns: out of play in this game".into(), false));
    }
    let plans: Vec<&Value> = v["team_plans"].as_array().into_iter().flatten().collect();
    if !plans.is_empty() {
        lines.push((String::new(), false));
        lines.push(("Your team's plans (only your team sees these)".into(), true));
        for p in plans {
            lines.push((p["role"].as_str().unwrap_or("?").to_string(), true));
            lines.extend(strs(&p["lines"]).into_iter().map(|l| (format!("  {l}"), false)));
        }
    }
    lines
}

/// The picture of view `v` (a seat's view, or what every seat sees) as an SVG document.
pub fn draw(v: &Value) -> String {
    let b = &v["board_data"];
    let g = Grid { columns: b["columns"].as_i64().unwrap_or(0).clamp(0, 26) as i32, rows: b["rows"].as_i64().unwrap_or(0).clamp(0, 99) as i32 };
    let panel_x = LEFT + g.columns as f64 * CELL + 30.0;
    let lines = panel(v);
    let lines: Vec<(String, bool, f64)> = lines.into_iter().map(|(l, b)| (l.trim_start().to_string(), b, 6.0 * (l.len() - l.trim_start().len()) as f64)).collect();
    let panel_w = lines.iter().map(|(l, b, indent)| indent + text_width(l, 12.0, *b)).fold(300.0, f64::max);
    let board_h = TOP + g.rows as f64 * CELL + 30.0;
    let height = board_h.max(TOP + 18.0 * lines.len() as f64 + 20.0);
    let mut svg = Svg::new((panel_x + panel_w + 20.0) as u32, height as u32, v["title"].as_str().unwrap_or(""));
    svg.text((20.0, 30.0), v["title"].as_str().unwrap_or(""), 18.0, Anchor::Start, true, colour::INK);
    squares(&mut svg, &g, b);
    territories(&mut svg, &g, b);
    walls(&mut svg, &g, b);
    tunnels(&mut svg, &g, v);
    paths(&mut svg, &g, b);
    pieces(&mut svg, &g, v);
    for (i, (l, bold, indent)) in lines.iter().enumerate() {
        svg.text((panel_x + indent, TOP + 12.0 + 18.0 * i as f64), l, 12.0, Anchor::Start, *bold, colour::INK);
    }
    svg.finish()
}
