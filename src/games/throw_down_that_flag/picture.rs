//! The picture of the board: the hex map with its companies (letter, Str, gun, colors), the
//! objective spaces and the edge the Confederates break through; drawn from the view only.
//!
//! First Minnesota companies are dark blue squares with a capital letter, Confederate companies
//! light grey with round corners and a small letter (as in the text map); a gun marker is a
//! black dot with a white sight (a cross in a ring: no letter, which company G's would echo), the
//! colors a pennant, yellow for the First Minnesota's and vermillion for the Confederates':
//! shapes and letters as well as colours.

use serde_json::Value;

use crate::picture::{Anchor, Svg, colour, flow, num, text_width, wrap};

/// The hex layout: centre-to-corner size and the centre of A1, in pixels.
struct Layout {
    size: f64,
    x: f64,
    y: f64,
}

impl Layout {
    fn from_view(v: &Value) -> Layout {
        let n = |k: &str, d: f64| v["hex"][k].as_f64().unwrap_or(d).max(1.0);
        Layout { size: n("size", 34.0).min(200.0), x: n("origin_x", 50.0), y: n("origin_y", 130.0) }
    }

    /// The picture's width and height in pixels: the map, the landmarks right of it (360 pixels)
    /// and the key below it (70 pixels).
    fn canvas(&self, cols: u32, rows: u32) -> (u32, u32) {
        let map_right = self.centre(cols.max(1), 1).0;
        let map_bottom = self.centre(0, rows.max(1) - 1).1 + self.size;
        ((map_right + 10.0 + 360.0) as u32, (map_bottom + 70.0) as u32)
    }

    /// The centre of the space in column `c`, row `r` (zero-based; odd rows shifted right).
    fn centre(&self, c: u32, r: u32) -> (f64, f64) {
        let w = 3f64.sqrt() * self.size;
        (self.x + w * (c as f64 + 0.5 * (r % 2) as f64), self.y + 1.5 * self.size * r as f64)
    }

    fn corners(&self, at: (f64, f64)) -> Vec<(f64, f64)> {
        (0..6)
            .map(|i| {
                let a = std::f64::consts::PI / 180.0 * (60.0 * i as f64 - 30.0);
                (at.0 + self.size * a.cos(), at.1 + self.size * a.sin())
            })
            .collect()
    }
}

fn name(c: u32, r: u32) -> String {
    format!("{}{}", (b'A' + (c % 26) as u8) as char, r + 1)
}

fn parse(name: &str) -> Option<(u32, u32)> {
    crate::games::throw_down_that_flag::hex::Space::parse(name).map(|p| (p.col, p.row))
}

/// A square `2 × half` pixels wide about `at`, its corners rounded by `rx`, filled with `fill`
/// (`"none"`: only its outline), outlined in `stroke` (colour, width).
fn square(svg: &mut Svg, at: (f64, f64), half: f64, rx: &str, fill: &str, stroke: (&str, &str)) {
    let a = [
        ("x", num(at.0 - half)),
        ("y", num(at.1 - half)),
        ("width", num(2.0 * half)),
        ("height", num(2.0 * half)),
        ("rx", rx.to_string()),
        ("fill", fill.to_string()),
        ("stroke", stroke.0.to_string()),
        ("stroke-width", stroke.1.to_string()),
    ];
    svg.element("rect", &a, None);
}

fn company(svg: &mut Svg, at: (f64, f64), k: &Value, union: bool) {
    let (fill, ink, rx) = if union { (colour::BLUE, "#FFFFFF", "0") } else { (colour::LIGHT, colour::INK, "8") };
    square(svg, at, 19.0, rx, fill, (colour::INK, "1.5"));
    let letter = k["letter"].as_str().unwrap_or("?");
    let letter = if union { letter.to_ascii_uppercase() } else { letter.to_ascii_lowercase() };
    svg.text((at.0, at.1 + 2.0), &letter, 17.0, Anchor::Middle, true, ink);
    svg.text((at.0, at.1 + 15.0), &format!("Str {}", k["str"]), 9.5, Anchor::Middle, false, ink);
    if k["gun"].as_bool() == Some(true) {
        gun(svg, (at.0 + 13.0, at.1 - 12.0));
    }
    if k["colors"].as_bool() == Some(true) {
        // In the counter's top-left corner, clear of its letter (tester t17b-11).
        pennant(svg, (at.0 - 16.5, at.1 - 17.0), union);
    }
}

/// A gun marker: a black dot with a white sight.
fn gun(svg: &mut Svg, at: (f64, f64)) {
    svg.circle(at.0, at.1, 7.0, colour::INK, Some(("#FFFFFF", 1.0)));
    svg.circle(at.0, at.1, 3.5, colour::INK, Some(("#FFFFFF", 1.2)));
    svg.line((at.0 - 5.5, at.1), (at.0 + 5.5, at.1), "#FFFFFF", 1.2, None);
    svg.line((at.0, at.1 - 5.5), (at.0, at.1 + 5.5), "#FFFFFF", 1.2, None);
}

/// The colors: a pennant from `top` (its pole's top), the First Minnesota's (`union`) or the
/// Confederates'.
fn pennant(svg: &mut Svg, top: (f64, f64), union: bool) {
    let fill = if union { colour::YELLOW } else { colour::VERMILLION };
    svg.line(top, (top.0, top.1 + 15.0), colour::INK, 1.5, None);
    svg.polygon(&[top, (top.0 + 9.0, top.1 + 3.5), (top.0, top.1 + 7.0)], fill, Some((colour::INK, 1.0)));
}

/// The key's entries: what its sample is (0 a First Minnesota company, 1 a Confederate one, 2 a
/// gun, 3 the two sides' colors), the sample's width and the text. The sample companies are X
/// and x, which no scenario has (tester t17b-13: the sample "E, Str 3" read as the real
/// company E).
const LEGEND: [(usize, f64, &str); 4] = [
    (0, 40.0, "First Minnesota company: letter and Str (X: an example)"),
    (1, 40.0, "Confederate company"),
    (2, 14.0, "gun marker"),
    (3, 24.0, "colors (First Minnesota, Confederate)"),
];
const LEGEND_ROW: f64 = 46.0;

/// Where the key's entries go in a picture `width` pixels wide (see [`flow`]).
fn legend_flow(width: f64) -> Vec<(f64, usize)> {
    let widths: Vec<f64> = LEGEND.iter().map(|(_, w, t)| w + 6.0 + text_width(t, 12.0, false)).collect();
    flow(&widths, 20.0, width - 20.0, 26.0)
}

fn legend(svg: &mut Svg, y: f64, at: &[(f64, usize)]) {
    let sample = |l: &str| serde_json::json!({ "letter": l, "str": 3, "gun": false, "colors": false });
    for (&(kind, w, t), &(x, row)) in LEGEND.iter().zip(at) {
        let y = y + row as f64 * LEGEND_ROW;
        match kind {
            0 => company(svg, (x + 20.0, y + 20.0), &sample("X"), true),
            1 => company(svg, (x + 20.0, y + 20.0), &sample("x"), false),
            2 => gun(svg, (x + 7.0, y + 20.0)),
            _ => {
                pennant(svg, (x + 1.0, y + 12.0), true);
                pennant(svg, (x + 13.0, y + 12.0), false);
            }
        }
        svg.text((x + w + 6.0, y + 24.0), t, 12.0, Anchor::Start, false, colour::INK);
    }
}

/// The header's lines, (baseline, text, size, bold), each at most `width` pixels: the title,
/// where the day stands ("All N rounds played" once the last round is over) and the game's
/// result, wrapped.
fn header(v: &Value, width: f64) -> Vec<(f64, String, f64, bool)> {
    let title = format!("{} ({})", v["title"].as_str().unwrap_or(""), v["scenario"].as_str().unwrap_or(""));
    let (round, rounds) = (v["round"].as_u64().unwrap_or(0), v["rounds"].as_u64().unwrap_or(0));
    let when = if rounds > 0 && round > rounds { format!("All {rounds} rounds played") } else { format!("Round {round} of {rounds}") };
    let mut line = format!("{when}; broke through {} of {}; First Minnesota Str lost {}", v["breakthroughs"], v["breakthrough_limit"], v["str_lost"]);
    if v["colors_taken"].as_bool() == Some(true) {
        line.push_str("; Confederate colors taken");
    }
    let mut lines: Vec<(String, bool)> = wrap(&line, 13.0, false, width - 40.0).into_iter().map(|l| (l, false)).collect();
    lines.extend(wrap(&tokens_line(v), 13.0, false, width - 40.0).into_iter().map(|l| (l, false)));
    if let Some(summary) = v["game_over"]["summary"].as_str() {
        lines.extend(wrap(summary, 13.0, true, width - 40.0).into_iter().map(|l| (l, true)));
    }
    let below = lines.into_iter().enumerate().map(|(i, (l, bold))| (52.0 + 18.0 * i as f64, l, 13.0, bold));
    std::iter::once((30.0, title, 18.0, true)).chain(below).collect()
}

/// Where the round's activation tokens stand, as the rulebook's two rows of circles under the map
/// hold them, and the company asked to act (ringed on the map): "Activation tokens drawn this
/// round: B, G; colors 1 of 3; 11 in the bag. Company H is asked to act (ringed)." (tester
/// t17b-10: the picture showed neither).
fn tokens_line(v: &Value) -> String {
    let letters: Vec<&str> = v["letters_row"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let drawn = if letters.is_empty() { "none".to_string() } else { letters.join(", ") };
    let mut line = format!("Activation tokens drawn this round: {drawn}; colors {} of 3; {} in the bag.", v["colors_row"], v["bag_size"]);
    if let Some(k) = v["asking"].as_str() {
        line.push_str(&format!(" Company {k} is asked to act (ringed)."));
    }
    line
}

/// The ring around the company asked to act, drawn under its counter.
fn asked_ring(svg: &mut Svg, at: (f64, f64)) {
    square(svg, at, 25.0, "6", "none", (colour::VERMILLION, "4"));
}

/// The text over the edge the Confederates break through.
const EDGE: &str = "Confederates break through here (shaded spaces: the objective)";

/// The width the picture needs beyond the map's: for its title, status line and the text over
/// the edge (from the map's left), and the landmarks right of the map starting at `landmark_x`.
fn text_width_needed(v: &Value, landmark_x: f64, map_left: f64) -> f64 {
    let title = format!("{} ({})", v["title"].as_str().unwrap_or(""), v["scenario"].as_str().unwrap_or(""));
    let landmarks = v["landmarks"].as_object().into_iter().flatten().filter_map(|(k, t)| t.as_str().map(|t| text_width(&format!("row {k}: {t}"), 11.0, false)));
    let status = text_width("Round 99 of 99; broke through 99 of 99; First Minnesota Str lost 999", 13.0, false);
    let edge = map_left + text_width(EDGE, 12.0, true) + 20.0;
    landmarks.map(|w| landmark_x + w + 20.0).fold((text_width(&title, 18.0, true).max(status) + 40.0).max(edge), f64::max)
}

/// The width and height in pixels of the picture of a `columns` x `rows` map drawn with hexes of
/// `size` and space A1's centre at (`origin_x`, `origin_y`) (the scenario check keeps it drawable):
/// the map with its landmarks and key. A picture ([`draw`]) is wider for a longer title or
/// landmark (a few hundred pixels at most), taller by the lines of the game's result and a key
/// that wraps on a narrow map.
pub fn canvas(size: u32, origin_x: u32, origin_y: u32, columns: u32, rows: u32) -> (u32, u32) {
    let l = Layout { size: f64::from(size).clamp(1.0, 200.0), x: f64::from(origin_x).max(1.0), y: f64::from(origin_y).max(1.0) };
    l.canvas(columns, rows)
}

/// The picture of view `v` as an SVG document: at least [`canvas`] in size, wider for a long
/// title or landmark, taller for the game's result (the map moves down below it) or a key that
/// wraps.
pub fn draw(v: &Value) -> String {
    let mut l = Layout::from_view(v);
    let (cols, rows) = (v["columns"].as_u64().unwrap_or(0).min(26) as u32, v["rows"].as_u64().unwrap_or(0).min(99) as u32);
    let objective: Vec<String> = v["objective"].as_array().into_iter().flatten().filter_map(|x| x.as_str().map(String::from)).collect();
    let landmark_x = l.centre(cols.max(1), 1).0 + 10.0;
    let (w0, h0) = l.canvas(cols, rows);
    let width = f64::from(w0).max(text_width_needed(v, landmark_x, l.x - l.size)).ceil();
    let head = header(v, width);
    // The break-through line's text stays 20 pixels below the header's last line.
    let head_bottom = head.last().map_or(52.0, |h| h.0);
    let dy = (head_bottom + 20.0 - (l.y - l.size - 14.0)).max(0.0);
    l.y += dy;
    let map_right = l.centre(cols.max(1), 1).0;
    let map_bottom = l.centre(0, rows.max(1) - 1).1 + l.size;
    let at = legend_flow(width);
    let legend_rows = at.iter().map(|(_, r)| *r).max().unwrap_or(0) as f64;
    let height = f64::from(h0) + dy + legend_rows * LEGEND_ROW;
    let mut svg = Svg::new(width as u32, height as u32, v["title"].as_str().unwrap_or(""));
    for (y, t, size, bold) in &head {
        svg.text((20.0, *y), t, *size, Anchor::Start, *bold, colour::INK);
    }
    let edge_y = l.y - l.size - 8.0;
    svg.line((l.x - l.size, edge_y), (map_right, edge_y), colour::VERMILLION, 4.0, Some("10 5"));
    svg.text((l.x - l.size, edge_y - 6.0), EDGE, 12.0, Anchor::Start, true, colour::INK);
    for r in 0..rows {
        for c in 0..cols {
            let fill = if objective.contains(&name(c, r)) { "#F3D9C4" } else { colour::PAPER };
            svg.polygon(&l.corners(l.centre(c, r)), fill, Some((colour::GREY, 1.0)));
        }
    }
    let placed = |key: &str| {
        let list: Vec<((f64, f64), &Value)> = v[key].as_array().into_iter().flatten().filter_map(|k| k["at"].as_str().and_then(parse).filter(|&(c, r)| c < cols && r < rows).map(|(c, r)| (l.centre(c, r), k))).collect();
        list
    };
    // The ring of the company asked to act under the spaces' names (tester t17c-2: it hid one).
    for (at, _) in placed("union").into_iter().filter(|(_, k)| k["letter"].as_str().is_some_and(|x| v["asking"].as_str() == Some(x))) {
        asked_ring(&mut svg, at);
    }
    for r in 0..rows {
        for c in 0..cols {
            let at = l.centre(c, r);
            svg.text((at.0, at.1 + l.size * 0.8), &name(c, r), 8.0, Anchor::Middle, false, colour::GREY);
        }
        let y = l.centre(0, r).1 + 4.0;
        if let Some(t) = v["landmarks"][(r + 1).to_string()].as_str() {
            svg.text((landmark_x, y), &format!("row {}: {t}", r + 1), 11.0, Anchor::Start, false, colour::INK);
        }
    }
    for (key, union) in [("union", true), ("confederate", false)] {
        for (at, k) in placed(key) {
            company(&mut svg, at, k, union);
        }
    }
    legend(&mut svg, map_bottom + 10.0, &at);
    svg.finish()
}
