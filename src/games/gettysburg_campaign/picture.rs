//! The picture of the board: towns with their points, roads, corps in towns with strength, corps
//! advancing along a road, the turn and the Confederate score; drawn from the view only.
//!
//! Union counters are dark blue with square corners, Confederate counters light grey with round
//! corners, each with its corps and strength written on it (readable in greyscale).

use serde_json::Value;

use crate::picture::{Anchor, Svg, colour};

const COUNTER_W: f64 = 44.0;
const COUNTER_H: f64 = 20.0;
const PER_ROW: usize = 4;

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Each town's name and place: from the scenario's `x`/`y`, else on a circle (older scenarios).
fn places(towns: &[Value]) -> Vec<(String, (f64, f64))> {
    let n = towns.len().max(1) as f64;
    towns
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let at = match (t["x"].as_f64(), t["y"].as_f64()) {
                (Some(x), Some(y)) => (x, y),
                _ => {
                    let a = std::f64::consts::TAU * i as f64 / n;
                    (480.0 + 330.0 * a.sin(), 420.0 - 290.0 * a.cos())
                }
            };
            (text(&t["name"]), at)
        })
        .collect()
}

fn place(places: &[(String, (f64, f64))], name: &str) -> Option<(f64, f64)> {
    places.iter().find(|(n, _)| n == name).map(|(_, p)| *p)
}

fn counter(svg: &mut Svg, x: f64, y: f64, corps: &Value) {
    let union = corps["side"] == "union";
    let (fill, ink, rx) = if union { (colour::BLUE, "#FFFFFF", "0") } else { (colour::LIGHT, colour::INK, "6") };
    let a = [
        ("x", crate::picture::num(x)),
        ("y", crate::picture::num(y)),
        ("width", crate::picture::num(COUNTER_W)),
        ("height", crate::picture::num(COUNTER_H)),
        ("rx", rx.to_string()),
        ("fill", fill.to_string()),
        ("stroke", colour::INK.to_string()),
        ("stroke-width", "1".to_string()),
    ];
    svg.element("rect", &a, None);
    let label = format!("{} {}", text(&corps["id"]), text(&corps["strength"]));
    svg.text((x + COUNTER_W / 2.0, y + 14.5), &label, 11.5, Anchor::Middle, true, ink);
}

fn roads(svg: &mut Svg, towns: &[Value], places: &[(String, (f64, f64))]) {
    for t in towns {
        let name = text(&t["name"]);
        let Some(a) = place(places, &name) else { continue };
        for other in t["roads_to"].as_array().into_iter().flatten() {
            let other = text(other);
            // Each road once: from the first of its two towns in name order.
            if other <= name {
                continue;
            }
            if let Some(b) = place(places, &other) {
                svg.line(a, b, colour::GREY, 3.0, None);
            }
        }
    }
}

fn town(svg: &mut Svg, t: &Value, at: (f64, f64)) {
    let fill = match t["holder"].as_str() {
        Some("union") => colour::BLUE,
        Some("confederate") => colour::LIGHT,
        _ => colour::PAPER,
    };
    let points = t["points"].as_u64().unwrap_or(0);
    let scored = t["scored"].as_bool().unwrap_or(false);
    if scored {
        svg.circle(at.0, at.1, 15.0, colour::ORANGE, Some((colour::INK, 1.0)));
    }
    svg.circle(at.0, at.1, 9.0, fill, Some((colour::INK, 2.0)));
    let label = match (points, scored) {
        (0, _) => text(&t["name"]),
        (p, false) => format!("{} ({p})", text(&t["name"])),
        (p, true) => format!("{} ({p}, scored)", text(&t["name"])),
    };
    svg.label(at.0, at.1 - 19.0, &label, 13.0, points > 0);
}

fn corps_in_towns(svg: &mut Svg, corps: &[Value], places: &[(String, (f64, f64))]) {
    for (name, at) in places {
        let here: Vec<&Value> = corps.iter().filter(|c| c["town"].as_str() == Some(name.as_str())).collect();
        for (i, c) in here.iter().enumerate() {
            let (row, col) = (i / PER_ROW, i % PER_ROW);
            let in_row = (here.len() - row * PER_ROW).min(PER_ROW) as f64;
            let x = at.0 - in_row * (COUNTER_W + 2.0) / 2.0 + col as f64 * (COUNTER_W + 2.0);
            counter(svg, x, at.1 + 14.0 + row as f64 * (COUNTER_H + 3.0), c);
        }
    }
}

/// Corps advancing along a road: an arrow from the town left towards the town attacked, the
/// counter on it.
fn advancing(svg: &mut Svg, corps: &[Value], places: &[(String, (f64, f64))]) {
    let mut drawn: Vec<(String, String)> = Vec::new();
    for c in corps {
        let (Some(from), Some(to)) = (c["advancing"]["from"].as_str(), c["advancing"]["to"].as_str()) else { continue };
        let (Some(a), Some(b)) = (place(places, from), place(places, to)) else { continue };
        let along = |f: f64| (a.0 + (b.0 - a.0) * f, a.1 + (b.1 - a.1) * f);
        let ink = if c["side"] == "union" { colour::BLUE } else { colour::VERMILLION };
        svg.polyline(&[along(0.2), along(0.78)], ink, 4.0, None, true);
        let key = (from.to_string(), to.to_string());
        let k = drawn.iter().filter(|d| **d == key).count() as f64;
        drawn.push(key);
        let p = along(0.45);
        counter(svg, p.0 - COUNTER_W / 2.0, p.1 - COUNTER_H / 2.0 + k * (COUNTER_H + 3.0), c);
    }
}

fn header(svg: &mut Svg, v: &Value) {
    let w = svg.width() as f64;
    svg.text((20.0, 30.0), &text(&v["title"]), 20.0, Anchor::Start, true, colour::INK);
    svg.text((20.0, 52.0), &text(&v["phase_text"]), 14.0, Anchor::Start, false, colour::INK);
    let score = format!("Confederate points: {} of {} needed", text(&v["points"]["scored"]), text(&v["points"]["needed"]));
    svg.text((w - 20.0, 30.0), &score, 16.0, Anchor::End, true, colour::INK);
    if let Some(summary) = v["game_over"]["summary"].as_str() {
        svg.text((w - 20.0, 52.0), summary, 13.0, Anchor::End, false, colour::INK);
    }
}

fn legend(svg: &mut Svg, y: f64, plans: &[String]) {
    let sample = |side: &str| serde_json::json!({ "side": side, "id": "II", "strength": 5 });
    counter(svg, 20.0, y, &sample("union"));
    svg.text((70.0, y + 14.0), "Union corps II, strength 5", 12.0, Anchor::Start, false, colour::INK);
    counter(svg, 270.0, y, &sample("confederate"));
    svg.text((320.0, y + 14.0), "Confederate corps", 12.0, Anchor::Start, false, colour::INK);
    svg.circle(480.0, y + 10.0, 12.0, colour::ORANGE, Some((colour::INK, 1.0)));
    svg.circle(480.0, y + 10.0, 7.0, colour::PAPER, Some((colour::INK, 2.0)));
    svg.text((498.0, y + 14.0), "town scored by the Confederates; (n) its points", 12.0, Anchor::Start, false, colour::INK);
    if !plans.is_empty() {
        svg.text((20.0, y + 42.0), "Your planned moves (only your side sees these):", 12.0, Anchor::Start, true, colour::INK);
        for (i, p) in plans.iter().enumerate() {
            svg.text((30.0, y + 60.0 + 16.0 * i as f64), p, 12.0, Anchor::Start, false, colour::INK);
        }
    }
}

/// The picture of view `v` (a side's view, or what both sides see) as an SVG document.
pub fn draw(v: &Value) -> String {
    let towns = v["towns"].as_array().cloned().unwrap_or_default();
    let corps = v["corps"].as_array().cloned().unwrap_or_default();
    let plans: Vec<String> = v["planned_moves"].as_array().into_iter().flatten().map(text).collect();
    let places = places(&towns);
    let right = places.iter().map(|(_, p)| p.0).fold(600.0, f64::max) + 130.0;
    let bottom = places.iter().map(|(_, p)| p.1).fold(400.0, f64::max) + 80.0;
    let plan_rows = if plans.is_empty() { 0.0 } else { 30.0 + 16.0 * plans.len() as f64 };
    let mut svg = Svg::new(right as u32, (bottom + 40.0 + plan_rows) as u32, &text(&v["title"]));
    header(&mut svg, v);
    roads(&mut svg, &towns, &places);
    for (t, (_, at)) in towns.iter().zip(&places) {
        town(&mut svg, t, *at);
    }
    corps_in_towns(&mut svg, &corps, &places);
    advancing(&mut svg, &corps, &places);
    legend(&mut svg, bottom, &plans);
    svg.finish()
}
