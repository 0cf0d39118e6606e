//! The picture of the board: towns with their points, roads, corps in towns with strength, corps
//! advancing along a road, the turn and the Confederate score; drawn from the view only.
//!
//! Union counters are dark blue with square corners, Confederate counters light grey with round
//! corners, each with its corps and strength written on it (readable in greyscale).

use serde_json::Value;

use crate::picture::{Anchor, Boxed, Placer, Svg, around, colour, flow, label_box, text_width, wrap};

const COUNTER_W: f64 = 44.0;
const COUNTER_H: f64 = 20.0;
const PER_ROW: usize = 4;
const LABEL_SIZE: f64 = 13.0;
const LEGEND_ROW: f64 = 28.0;

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
    for (a, b) in road_lines(towns, places) {
        svg.line(a, b, colour::GREY, 3.0, None);
    }
}

/// A straight line on the map: its two ends, in pixels.
type Segment = ((f64, f64), (f64, f64));

/// Each road once, from the first of its two towns in name order to the other, as a line.
fn road_lines(towns: &[Value], places: &[(String, (f64, f64))]) -> Vec<Segment> {
    let mut out = Vec::new();
    for t in towns {
        let name = text(&t["name"]);
        let Some(a) = place(places, &name) else { continue };
        for other in t["roads_to"].as_array().into_iter().flatten() {
            let other = text(other);
            if other > name
                && let Some(b) = place(places, &other)
            {
                out.push((a, b));
            }
        }
    }
    out
}

/// A town's circle (ringed in orange once scored), filled in the colour of its holder.
fn town(svg: &mut Svg, t: &Value, at: (f64, f64)) {
    let fill = match t["holder"].as_str() {
        Some("union") => colour::BLUE,
        Some("confederate") => colour::LIGHT,
        _ => colour::PAPER,
    };
    if t["scored"].as_bool().unwrap_or(false) {
        svg.circle(at.0, at.1, 15.0, colour::ORANGE, Some((colour::INK, 1.0)));
    }
    svg.circle(at.0, at.1, 9.0, fill, Some((colour::INK, 2.0)));
}

/// A town's label (its name, its points, whether scored) and whether it is bold (it has points).
fn town_label(t: &Value) -> (String, bool) {
    let points = t["points"].as_u64().unwrap_or(0);
    let label = match (points, t["scored"].as_bool().unwrap_or(false)) {
        (0, _) => text(&t["name"]),
        (p, false) => format!("{} ({p})", text(&t["name"])),
        (p, true) => format!("{} ({p}, scored)", text(&t["name"])),
    };
    (label, points > 0)
}

/// Corps advancing along one road in one direction: where the town left and the town attacked
/// are drawn, and the corps.
struct Advance<'a> {
    from: (f64, f64),
    to: (f64, f64),
    corps: Vec<&'a Value>,
}

/// The corps advancing along roads, grouped by road and direction (first seen first).
fn advancing<'a>(corps: &'a [Value], places: &[(String, (f64, f64))]) -> Vec<Advance<'a>> {
    let mut groups: Vec<((&str, &str), Advance)> = Vec::new();
    for c in corps {
        let (Some(from), Some(to)) = (c["advancing"]["from"].as_str(), c["advancing"]["to"].as_str()) else { continue };
        let (Some(a), Some(b)) = (place(places, from), place(places, to)) else { continue };
        match groups.iter_mut().find(|g| g.0 == (from, to)) {
            Some(g) => g.1.corps.push(c),
            None => groups.push(((from, to), Advance { from: a, to: b, corps: vec![c] })),
        }
    }
    groups.into_iter().map(|(_, g)| g).collect()
}

/// How much a pixel of an advance's arrow under a label or another road's counters costs their
/// placing, in square pixels of overlap: a label crossing a whole arrow (~60 pixels) costs as
/// much as covering most of another label, so it goes elsewhere when it can.
const ARROW_WEIGHT: f64 = 25.0;

/// The same for a pixel of road under a label or counters: a row of three counters lying along a
/// road (~130 pixels) costs about as much as covering a third of another label, so it goes beside
/// the road when it can, and a road crossing a box costs little (tester t17b-4: counters hid the
/// roads they lay along, and which towns those join).
const ROAD_WEIGHT: f64 = 4.0;

/// How wide an advance's arrow is, in pixels.
const ARROW_WIDTH: f64 = 4.0;

/// Where the arrow of a road from `a` to `b` starts and ends (its head at the end): the middle
/// of the road, clear of the towns' circles and counters.
fn arrow_ends(a: (f64, f64), b: (f64, f64)) -> ((f64, f64), (f64, f64)) {
    let along = |f: f64| (a.0 + (b.0 - a.0) * f, a.1 + (b.1 - a.1) * f);
    (along(0.2), along(0.78))
}

/// The arrow of a road corps advance along, from the town left towards the town attacked, in the
/// colour of the side of its first corps.
fn arrow(svg: &mut Svg, a: (f64, f64), b: (f64, f64), side: &Value) {
    let ink = if *side == "union" { colour::BLUE } else { colour::VERMILLION };
    let (from, to) = arrow_ends(a, b);
    svg.polyline(&[from, to], ink, ARROW_WIDTH, None, true);
}

/// Everything laid out on the map: the labels (box, text, bold) and the counters (top left, corps).
struct Laid<'a> {
    labels: Vec<(Boxed, String, bool)>,
    counters: Vec<((f64, f64), &'a Value)>,
}

/// The counters of `corps` in box `b`, `per_row` a row, each row centred.
fn counters_in<'a>(b: Boxed, corps: &[&'a Value], per_row: usize) -> Vec<((f64, f64), &'a Value)> {
    let per_row = per_row.max(1);
    corps
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let (row, col) = (i / per_row, i % per_row);
            let in_row = (corps.len() - row * per_row).min(per_row) as f64;
            let x = b.x + (b.w - in_row * (COUNTER_W + 2.0) + 2.0) / 2.0 + col as f64 * (COUNTER_W + 2.0);
            ((x, b.y + row as f64 * (COUNTER_H + 3.0)), *c)
        })
        .collect()
}

/// The size of a block of `n` counters, `per_row` a row.
fn block(n: usize, per_row: usize) -> (f64, f64) {
    let (cols, rows) = (n.min(per_row).max(1), n.div_ceil(per_row.max(1)).max(1));
    (cols as f64 * (COUNTER_W + 2.0) - 2.0, rows as f64 * (COUNTER_H + 3.0) - 3.0)
}

/// Lays out the labels, the corps in towns and the corps advancing inside `map` (see the module
/// doc): towns first, then labels, then counters, each kept clear of what came before.
fn lay_out<'a>(towns: &[Value], corps: &'a [Value], places: &[(String, (f64, f64))], map: Boxed) -> Laid<'a> {
    let mut p = Placer::new(map);
    // A town's circle: 10 pixels about its place, 16 with the ring of a scored town.
    let radius = |name: &str| if towns.iter().any(|t| t["name"].as_str() == Some(name) && t["scored"] == true) { 16.0 } else { 10.0 };
    for (name, at) in places {
        let r = radius(name);
        p.take(Boxed { x: at.0 - r, y: at.1 - r, w: 2.0 * r, h: 2.0 * r });
    }
    // Roads stay in sight where they can (an advance's counters lie on their own road, below).
    let roads: Vec<(Segment, usize)> = road_lines(towns, places).into_iter().map(|(a, b)| ((a, b), p.take_line(a, b, ROAD_WEIGHT))).collect();
    let road_of = |a: (f64, f64), b: (f64, f64)| roads.iter().filter(|(ends, _)| *ends == (a, b) || *ends == (b, a)).map(|r| r.1).collect::<Vec<usize>>();
    // The arrows of corps advancing stay in sight: labels and other counters keep off them.
    // Its counters lie on the arrow's shaft (their own line), never on its head.
    let groups = advancing(corps, places);
    let mut shafts = Vec::new();
    for g in &groups {
        let (a, b) = arrow_ends(g.from, g.to);
        // The head, at the end, is kept clear even of its own counters: the way they go shows.
        let (len, head) = ((b.0 - a.0).hypot(b.1 - a.1).max(1.0), crate::picture::arrow_head_size(ARROW_WIDTH));
        let neck = (b.0 - (b.0 - a.0) * head / len, b.1 - (b.1 - a.1) * head / len);
        shafts.push(p.take_line(a, neck, ARROW_WEIGHT));
        p.take_line(neck, b, ARROW_WEIGHT);
    }
    let mut labels = Vec::new();
    for (t, (name, at)) in towns.iter().zip(places) {
        let (label, bold) = town_label(t);
        let (w, h) = label_box(&label, LABEL_SIZE, bold);
        if let Some(b) = p.place(&around(*at, w, h, radius(name).max(15.0), [0, 1, 2, 3])) {
            labels.push((b, label, bold));
        }
    }
    let mut counters = Vec::new();
    for (name, at) in places {
        let here: Vec<&Value> = corps.iter().filter(|c| c["town"].as_str() == Some(name.as_str())).collect();
        if here.is_empty() {
            continue;
        }
        let (w, h) = block(here.len(), PER_ROW);
        if let Some(b) = p.place(&around(*at, w, h, radius(name).max(14.0), [1, 2, 3, 0])) {
            counters.extend(counters_in(b, &here, PER_ROW));
        }
    }
    for (Advance { from: a, to: b, corps: on_road }, shaft) in groups.into_iter().zip(shafts) {
        let (w, h) = block(on_road.len(), 1);
        let along = |f: f64| (a.0 + (b.0 - a.0) * f, a.1 + (b.1 - a.1) * f);
        // On the arrow, else beside its middle (a short road, or one crowded with labels).
        let mut places: Vec<Boxed> = [0.45, 0.55, 0.35, 0.62, 0.28, 0.5, 0.4, 0.68, 0.22].iter().map(|&f| {
            let (x, y) = along(f);
            Boxed { x: x - w / 2.0, y: y - h / 2.0, w, h }
        }).collect();
        places.extend(around(along(0.5), w, h, 6.0, [1, 0, 2, 3]));
        let mut own = road_of(a, b);
        own.push(shaft);
        if let Some(at) = p.place_over(&places, &own) {
            counters.extend(counters_in(at, &on_road, 1));
        }
    }
    Laid { labels, counters }
}

/// A line of text: where (its baseline), what, its size, its anchor and whether bold.
type Line = ((f64, f64), String, f64, Anchor, bool);

/// The header's lines. The game's result goes on the right of the phase if it fits there, else on
/// lines of its own below it.
fn header(v: &Value, w: f64) -> Vec<Line> {
    let phase = text(&v["phase_text"]);
    let score = format!("Confederate points: {} of {} needed", text(&v["points"]["scored"]), text(&v["points"]["needed"]));
    let mut lines = vec![
        ((20.0, 30.0), text(&v["title"]), 20.0, Anchor::Start, true),
        ((20.0, 52.0), phase.clone(), 14.0, Anchor::Start, false),
        ((w - 20.0, 30.0), score, 16.0, Anchor::End, true),
    ];
    if let Some(summary) = v["game_over"]["summary"].as_str() {
        if text_width(&phase, 14.0, false) + 30.0 + text_width(summary, 13.0, false) <= w - 40.0 {
            lines.push(((w - 20.0, 52.0), summary.to_string(), 13.0, Anchor::End, false));
        } else {
            for (i, l) in wrap(summary, 13.0, false, w - 40.0).into_iter().enumerate() {
                lines.push(((20.0, 70.0 + 16.0 * i as f64), l, 13.0, Anchor::Start, false));
            }
        }
    }
    lines
}

/// The legend's entries: what its sample is (0 a Union counter, 1 a Confederate one, 2 a scored
/// town, 3 the two sides' advance arrows, 4 the towns each side holds) and its text. Every colour
/// on the map is in it (tester t17b-8: the Union's blue arrows and the towns' fills were not).
const LEGEND: [(usize, &str); 5] = [
    (0, "Union corps: number and strength (X 9: an example)"),
    (1, "Confederate corps: number and strength"),
    (2, "town scored by the Confederates; (n) its points"),
    (3, "corps advancing along a road on the town the arrow points to (Confederate, Union)"),
    (4, "town held by the Union (blue), by the Confederates (grey)"),
];

/// The width of legend entry `kind`'s sample.
fn sample_width(kind: usize) -> f64 {
    match kind {
        2 => 24.0,
        4 => 40.0,
        _ => COUNTER_W,
    }
}

/// Each legend entry's width: its sample, a gap and its text.
fn legend_widths() -> Vec<f64> {
    LEGEND.iter().map(|(k, t)| sample_width(*k) + 6.0 + text_width(t, 12.0, false)).collect()
}

fn legend(svg: &mut Svg, y: f64, at: &[(f64, usize)]) {
    for (&(kind, t), &(x, row)) in LEGEND.iter().zip(at) {
        let y = y + row as f64 * LEGEND_ROW;
        let side = if kind == 0 { "union" } else { "confederate" };
        match kind {
            0 | 1 => counter(svg, x, y, &serde_json::json!({ "side": side, "id": "X", "strength": 9 })),
            2 => {
                svg.circle(x + 12.0, y + 10.0, 12.0, colour::ORANGE, Some((colour::INK, 1.0)));
                svg.circle(x + 12.0, y + 10.0, 7.0, colour::PAPER, Some((colour::INK, 2.0)));
            }
            3 => {
                svg.polyline(&[(x + 2.0, y + 4.0), (x + COUNTER_W, y + 4.0)], colour::VERMILLION, 3.0, None, true);
                svg.polyline(&[(x + 2.0, y + 16.0), (x + COUNTER_W, y + 16.0)], colour::BLUE, 3.0, None, true);
            }
            _ => {
                svg.circle(x + 10.0, y + 10.0, 9.0, colour::BLUE, Some((colour::INK, 2.0)));
                svg.circle(x + 30.0, y + 10.0, 9.0, colour::LIGHT, Some((colour::INK, 2.0)));
            }
        }
        svg.text((x + sample_width(kind) + 6.0, y + 14.0), t, 12.0, Anchor::Start, false, colour::INK);
    }
}

/// The seat's planned moves as lines to show, each at most `width` pixels (continued lines
/// indented); none when there are none to show.
fn plan_lines(plans: &[String], width: f64) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for p in plans {
        for (i, l) in wrap(p, 12.0, false, width - 30.0).into_iter().enumerate() {
            out.push((l, if i == 0 { 30.0 } else { 50.0 }));
        }
    }
    out
}

/// The picture of view `v` (a side's view, or what both sides see) as an SVG document. The
/// `planned_moves` shown are the view's as given (the game's `picture` says "moved" for a corps
/// that carried out its moves, and gives none once the game is over).
pub fn draw(v: &Value) -> String {
    let towns = v["towns"].as_array().cloned().unwrap_or_default();
    let corps = v["corps"].as_array().cloned().unwrap_or_default();
    let plans: Vec<String> = if v["game_over"].is_null() { v["planned_moves"].as_array().into_iter().flatten().map(text).collect() } else { Vec::new() };
    let mut places = places(&towns);
    let right = places.iter().map(|(_, p)| p.0).fold(600.0, f64::max) + 130.0;
    let head = header(v, right);
    let head_bottom = head.iter().map(|(at, ..)| at.1).fold(52.0, f64::max) + 10.0;
    // Room for the header: the map moves down if a label above its top town would reach it.
    let top = places.iter().map(|(_, p)| p.1).fold(f64::INFINITY, f64::min);
    let dy = if top.is_finite() { (head_bottom + 34.0 - top).max(0.0) } else { 0.0 };
    for (_, p) in &mut places {
        p.1 += dy;
    }
    let bottom = places.iter().map(|(_, p)| p.1).fold(400.0 + dy, f64::max) + 80.0;
    let at = flow(&legend_widths(), 20.0, right - 20.0, 26.0);
    let legend_h = (at.iter().map(|(_, r)| *r).max().unwrap_or(0) + 1) as f64 * LEGEND_ROW;
    let plan_lines = plan_lines(&plans, right);
    let plan_h = if plan_lines.is_empty() { 0.0 } else { 26.0 + 16.0 * plan_lines.len() as f64 };
    let mut svg = Svg::new(right as u32, (bottom + legend_h + 12.0 + plan_h) as u32, &text(&v["title"]));
    for (at, t, size, anchor, bold) in &head {
        svg.text(*at, t, *size, *anchor, *bold, colour::INK);
    }
    roads(&mut svg, &towns, &places);
    let groups = advancing(&corps, &places);
    for g in &groups {
        arrow(&mut svg, g.from, g.to, &g.corps[0]["side"]);
    }
    for (t, (_, at)) in towns.iter().zip(&places) {
        town(&mut svg, t, *at);
    }
    let laid = lay_out(&towns, &corps, &places, Boxed { x: 4.0, y: head_bottom, w: right - 8.0, h: bottom - head_bottom });
    for (b, label, bold) in &laid.labels {
        svg.label_in(*b, label, LABEL_SIZE, *bold);
    }
    for ((x, y), c) in &laid.counters {
        counter(&mut svg, *x, *y, c);
    }
    legend(&mut svg, bottom, &at);
    if !plan_lines.is_empty() {
        let y = bottom + legend_h + 12.0;
        svg.text((20.0, y + 8.0), "Your planned moves (only your side sees these):", 12.0, Anchor::Start, true, colour::INK);
        for (i, (l, x)) in plan_lines.iter().enumerate() {
            svg.text((*x, y + 26.0 + 16.0 * i as f64), l, 12.0, Anchor::Start, false, colour::INK);
        }
    }
    svg.finish()
}
