//! Pictures of the board: a small SVG writer the games draw with, the observer's share of the
//! seats' views, and SVG to PNG (resvg with an embedded font, so the bytes are the same on any
//! machine).
//!
//! Every text carries its width as `textLength` (measured in the embedded font, [`text_width`]),
//! so a browser without that font draws it in a fallback one squeezed or stretched to the same
//! width: the boxes a picture is laid out with ([`Boxed`], [`Placer`]) hold on any machine.
//!
//! A game draws in `src/games/<game>/picture.rs` from its `view` only (the one redaction path),
//! so a picture shows nothing its report text hides. Pictures are drawn on demand; they are not
//! stored in the game folder and not audited.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::error::{Error, Result, Setting};

/// The one font every picture uses (embedded below, never a system font).
pub const FONT: &str = "DejaVu Sans";

/// The `font-family` of every text: the embedded font, then fonts with much its shape for a
/// browser without it (each text's `textLength` keeps its width whatever font is used).
pub const FONT_FAMILY: &str = "DejaVu Sans, Bitstream Vera Sans, Verdana, Arial, sans-serif";

const FONT_REGULAR: &[u8] = include_bytes!("../assets/fonts/DejaVuSans-subset.ttf");
const FONT_BOLD: &[u8] = include_bytes!("../assets/fonts/DejaVuSans-Bold-subset.ttf");

/// Colours that stay apart for colour-blind readers (Okabe and Ito) and, paired with a light or
/// dark fill, in greyscale. Pictures pair every colour with a letter or a shape as well.
pub mod colour {
    /// Dark blue (dark in greyscale).
    pub const BLUE: &str = "#0072B2";
    /// Vermillion (middle grey).
    pub const VERMILLION: &str = "#D55E00";
    /// Orange (light grey).
    pub const ORANGE: &str = "#E69F00";
    /// Sky blue (light grey).
    pub const SKY: &str = "#56B4E9";
    /// Bluish green (middle grey).
    pub const GREEN: &str = "#009E73";
    /// Yellow (very light).
    pub const YELLOW: &str = "#F0E442";
    /// Reddish purple (middle grey).
    pub const PURPLE: &str = "#CC79A7";
    /// Text and outlines.
    pub const INK: &str = "#1A1A1A";
    /// Light grey (a Confederate counter, a wall-free floor).
    pub const LIGHT: &str = "#D9D9D9";
    /// Middle grey (walls, roads).
    pub const GREY: &str = "#7F7F7F";
    /// The paper.
    pub const PAPER: &str = "#FBF8F0";
}

/// An SVG document being drawn: elements are appended in order (later ones on top).
#[derive(Debug, Clone)]
pub struct Svg {
    width: u32,
    height: u32,
    body: String,
}

/// A number as SVG text: at most one decimal, no `-0`, the same on every machine.
pub fn num(x: f64) -> String {
    let r = (x * 10.0).round() / 10.0;
    if r == 0.0 {
        return "0".into();
    }
    if r.fract() == 0.0 { format!("{r:.0}") } else { format!("{r:.1}") }
}

/// `s` escaped for XML text and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Where a text is anchored horizontally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// At its left end.
    Start,
    /// At its middle.
    Middle,
    /// At its right end.
    End,
}

impl Svg {
    /// A blank `width` x `height` picture on paper, titled `title` (the SVG `<title>`).
    pub fn new(width: u32, height: u32, title: &str) -> Svg {
        let mut svg = Svg { width: width.max(1), height: height.max(1), body: String::new() };
        let _ = writeln!(svg.body, "<title>{}</title>", esc(title));
        svg.rect(0.0, 0.0, width as f64, height as f64, colour::PAPER, None);
        svg
    }

    /// Width in pixels.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Height in pixels.
    pub fn height(&self) -> u32 {
        self.height
    }

    /// Appends a raw element; `attrs` are written in order, their values escaped.
    pub fn element(&mut self, name: &str, attrs: &[(&str, String)], text: Option<&str>) {
        self.body.push('<');
        self.body.push_str(name);
        for (k, v) in attrs {
            let _ = write!(self.body, " {k}=\"{}\"", esc(v));
        }
        match text {
            Some(t) => {
                let _ = writeln!(self.body, ">{}</{name}>", esc(t));
            }
            None => self.body.push_str("/>\n"),
        }
    }

    /// A rectangle; `stroke` is (colour, width).
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, stroke: Option<(&str, f64)>) {
        let mut a = vec![("x", num(x)), ("y", num(y)), ("width", num(w)), ("height", num(h)), ("fill", fill.to_string())];
        push_stroke(&mut a, stroke);
        self.element("rect", &a, None);
    }

    /// A circle.
    pub fn circle(&mut self, cx: f64, cy: f64, r: f64, fill: &str, stroke: Option<(&str, f64)>) {
        let mut a = vec![("cx", num(cx)), ("cy", num(cy)), ("r", num(r)), ("fill", fill.to_string())];
        push_stroke(&mut a, stroke);
        self.element("circle", &a, None);
    }

    /// A straight line; `dash` e.g. `Some("6 4")`; round ends unless dashed ([`cap`]).
    pub fn line(&mut self, from: (f64, f64), to: (f64, f64), colour: &str, width: f64, dash: Option<&str>) {
        let mut a = vec![
            ("x1", num(from.0)),
            ("y1", num(from.1)),
            ("x2", num(to.0)),
            ("y2", num(to.1)),
            ("stroke", colour.to_string()),
            ("stroke-width", num(width)),
            ("stroke-linecap", cap(dash).to_string()),
        ];
        if let Some(d) = dash {
            a.push(("stroke-dasharray", d.to_string()));
        }
        self.element("line", &a, None);
    }

    /// A closed polygon through `points`.
    pub fn polygon(&mut self, points: &[(f64, f64)], fill: &str, stroke: Option<(&str, f64)>) {
        let mut a = vec![("points", points_text(points)), ("fill", fill.to_string())];
        push_stroke(&mut a, stroke);
        self.element("polygon", &a, None);
    }

    /// An open path through `points` (at least two), ending in an arrow head when `arrow`.
    pub fn polyline(&mut self, points: &[(f64, f64)], colour: &str, width: f64, dash: Option<&str>, arrow: bool) {
        if points.len() < 2 {
            return;
        }
        let mut a = vec![
            ("points", points_text(points)),
            ("fill", "none".to_string()),
            ("stroke", colour.to_string()),
            ("stroke-width", num(width)),
            ("stroke-linejoin", "round".to_string()),
            ("stroke-linecap", cap(dash).to_string()),
        ];
        if let Some(d) = dash {
            a.push(("stroke-dasharray", d.to_string()));
        }
        self.element("polyline", &a, None);
        if arrow {
            let (p, q) = (points[points.len() - 2], points[points.len() - 1]);
            self.arrow_head(p, q, colour, arrow_head_size(width));
        }
    }

    /// A filled triangular arrow head at `to`, pointing away from `from`.
    pub fn arrow_head(&mut self, from: (f64, f64), to: (f64, f64), colour: &str, size: f64) {
        let (dx, dy) = (to.0 - from.0, to.1 - from.1);
        let len = (dx * dx + dy * dy).sqrt();
        if len < 1e-6 {
            return;
        }
        let (ux, uy) = (dx / len, dy / len);
        let back = (to.0 - ux * size, to.1 - uy * size);
        let (nx, ny) = (-uy * size * 0.5, ux * size * 0.5);
        self.polygon(&[to, (back.0 + nx, back.1 + ny), (back.0 - nx, back.1 - ny)], colour, None);
    }

    /// A line of text at `at` = (x, y) (its baseline), `size` pixels, bold when `bold`. Runs of
    /// white space are written as one space (as SVG draws them), and the text's width in the
    /// embedded font as its `textLength` (`lengthAdjust="spacingAndGlyphs"`): another font is
    /// drawn to the same width.
    pub fn text(&mut self, at: (f64, f64), text: &str, size: f64, anchor: Anchor, bold: bool, fill: &str) {
        let text = collapse(text);
        if text.is_empty() {
            return;
        }
        let (x, y) = at;
        let anchor = match anchor {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        };
        let mut a = vec![
            ("x", num(x)),
            ("y", num(y)),
            ("font-family", FONT_FAMILY.to_string()),
            ("font-size", num(size)),
            ("text-anchor", anchor.to_string()),
            ("fill", fill.to_string()),
        ];
        if bold {
            a.push(("font-weight", "bold".to_string()));
        }
        a.push(("textLength", num(text_width(&text, size, bold))));
        a.push(("lengthAdjust", "spacingAndGlyphs".to_string()));
        self.element("text", &a, Some(&text));
    }

    /// Text on a light box so it reads over lines (a label); `size` pixels, anchored at its middle,
    /// its baseline at `y`. The box is [`label_box`] placed there.
    pub fn label(&mut self, x: f64, y: f64, text: &str, size: f64, bold: bool) {
        let (w, h) = label_box(text, size, bold);
        self.label_in(Boxed { x: x - w / 2.0, y: y - size, w, h }, text, size, bold);
    }

    /// A label ([`Svg::label`]) filling box `b` (one [`label_box`] gave the size of).
    pub fn label_in(&mut self, b: Boxed, text: &str, size: f64, bold: bool) {
        self.rect(b.x, b.y, b.w, b.h, colour::PAPER, Some((colour::GREY, 0.5)));
        self.text((b.x + b.w / 2.0, b.y + size), text, size, Anchor::Middle, bold, colour::INK);
    }

    /// The whole SVG document.
    pub fn finish(self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">",
            w = self.width,
            h = self.height
        );
        out.push_str(&self.body);
        out.push_str("</svg>\n");
        out
    }
}

fn push_stroke(a: &mut Vec<(&str, String)>, stroke: Option<(&str, f64)>) {
    if let Some((c, w)) = stroke {
        a.push(("stroke", c.to_string()));
        a.push(("stroke-width", num(w)));
    }
}

fn points_text(points: &[(f64, f64)]) -> String {
    points.iter().map(|(x, y)| format!("{},{}", num(*x), num(*y))).collect::<Vec<_>>().join(" ")
}

/// `text` as SVG draws it by default: runs of white space (line breaks too) as one space, none at
/// either end.
pub fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The width in pixels of `text` ([`collapse`]d) at `size` pixels in the embedded font (bold when
/// `bold`): the sum of its glyphs' advances (0.6 of `size` for a character the font lacks).
pub fn text_width(text: &str, size: f64, bold: bool) -> f64 {
    static FACES: OnceLock<Option<(ttf_parser::Face<'static>, ttf_parser::Face<'static>)>> = OnceLock::new();
    let faces = FACES.get_or_init(|| Some((ttf_parser::Face::parse(FONT_REGULAR, 0).ok()?, ttf_parser::Face::parse(FONT_BOLD, 0).ok()?)));
    let text = collapse(text);
    let Some((regular, heavy)) = faces else { return text.chars().count() as f64 * size * 0.6 };
    let face = if bold { heavy } else { regular };
    let em = f64::from(face.units_per_em().max(1));
    text.chars()
        .map(|c| match face.glyph_index(c).and_then(|g| face.glyph_hor_advance(g)) {
            Some(adv) => f64::from(adv) / em * size,
            None => size * 0.6,
        })
        .sum()
}

/// The width and height in pixels of a label's box ([`Svg::label`]) for `text` at `size`.
pub fn label_box(text: &str, size: f64, bold: bool) -> (f64, f64) {
    (text_width(text, size, bold) + 6.0, size * 1.3)
}

/// `text` broken at spaces into lines each at most `width` pixels wide at `size` (a word wider
/// than that on a line of its own).
pub fn wrap(text: &str, size: f64, bold: bool, width: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if text_width(&format!("{line} {word}"), size, bold) <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// Where items of the given widths go in rows from `left` to at most `right`, `gap` pixels
/// apart: each item's left edge and row (from 0). An item wider than a row gets a row of its own.
pub fn flow(widths: &[f64], left: f64, right: f64, gap: f64) -> Vec<(f64, usize)> {
    let (mut x, mut row) = (left, 0);
    let mut out = Vec::with_capacity(widths.len());
    for &w in widths {
        if x > left && x + w > right {
            (x, row) = (left, row + 1);
        }
        out.push((x, row));
        x += w + gap;
    }
    out
}

/// A box in a picture: its left, top, width and height in pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Boxed {
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub w: f64,
    /// Height.
    pub h: f64,
}

impl Boxed {
    /// The area in square pixels that this box and `o` share (0 when they only touch, or share
    /// a strip under a hundredth of a pixel: rounding).
    pub fn overlap(&self, o: &Boxed) -> f64 {
        let w = (self.x + self.w).min(o.x + o.w) - self.x.max(o.x);
        let h = (self.y + self.h).min(o.y + o.h) - self.y.max(o.y);
        if w > 0.01 && h > 0.01 { w * h } else { 0.0 }
    }

    /// The area of this box outside `within`.
    fn outside(&self, within: &Boxed) -> f64 {
        self.w * self.h - self.overlap(within)
    }
}

/// Lays boxes out so that none overlaps another: each is put at the first of its candidate places
/// clear of the boxes taken before and inside the bounds (else where it overlaps least, the first
/// of equals), and taken. Deterministic: the same boxes in the same order give the same places.
#[derive(Debug, Clone)]
pub struct Placer {
    bounds: Boxed,
    taken: Vec<Boxed>,
    /// Lines later boxes keep off ([`Placer::take_line`]).
    lines: Vec<Stroke>,
}

/// A line boxes keep off: from `a` to `b`, each pixel of it under a box costing `weight` square
/// pixels of overlap.
#[derive(Debug, Clone, Copy)]
struct Stroke {
    a: (f64, f64),
    b: (f64, f64),
    weight: f64,
}

impl Stroke {
    /// How many pixels of the line lie inside box `b` (Liang–Barsky clipping).
    fn inside(&self, b: &Boxed) -> f64 {
        let (dx, dy) = (self.b.0 - self.a.0, self.b.1 - self.a.1);
        let (mut t0, mut t1) = (0.0f64, 1.0f64);
        for (p, q) in [(-dx, self.a.0 - b.x), (dx, b.x + b.w - self.a.0), (-dy, self.a.1 - b.y), (dy, b.y + b.h - self.a.1)] {
            if p == 0.0 {
                if q < 0.0 {
                    return 0.0;
                }
            } else if p < 0.0 {
                t0 = t0.max(q / p);
            } else {
                t1 = t1.min(q / p);
            }
        }
        if t1 > t0 { (t1 - t0) * dx.hypot(dy) } else { 0.0 }
    }
}

impl Placer {
    /// A placer for boxes inside `bounds`, nothing taken yet.
    pub fn new(bounds: Boxed) -> Placer {
        Placer { bounds, taken: Vec::new(), lines: Vec::new() }
    }

    /// Marks `b` as taken (something drawn there that later boxes keep clear of).
    pub fn take(&mut self, b: Boxed) {
        self.taken.push(b);
    }

    /// Marks the line from `a` to `b` as one later boxes keep off (an arrow a label must not
    /// hide): each pixel of it under a box costs `weight` square pixels of overlap. Returns its
    /// number, for [`Placer::place_over`].
    pub fn take_line(&mut self, a: (f64, f64), b: (f64, f64), weight: f64) -> usize {
        self.lines.push(Stroke { a, b, weight });
        self.lines.len() - 1
    }

    /// The candidate chosen (see [`Placer`]), now taken; `None` for no candidates.
    pub fn place(&mut self, candidates: &[Boxed]) -> Option<Boxed> {
        self.place_over(candidates, &[])
    }

    /// [`Placer::place`] for a box that may lie on the lines numbered `over` (counters on their
    /// own arrow): those do not count.
    pub fn place_over(&mut self, candidates: &[Boxed], over: &[usize]) -> Option<Boxed> {
        let lines: Vec<Stroke> = self.lines.iter().enumerate().filter(|(i, _)| !over.contains(i)).map(|(_, l)| *l).collect();
        let crossed = |b: &Boxed| lines.iter().map(|l| l.weight * l.inside(b)).sum::<f64>();
        let cost = |b: &Boxed| b.outside(&self.bounds) + self.taken.iter().map(|t| b.overlap(t)).sum::<f64>() + crossed(b);
        let mut best: Option<(f64, Boxed)> = None;
        for c in candidates {
            let k = cost(c);
            if best.is_none_or(|(bk, _)| k < bk) {
                best = Some((k, *c));
            }
            if k == 0.0 {
                break;
            }
        }
        let (_, b) = best?;
        self.taken.push(b);
        Some(b)
    }
}

/// The size (length) of the head [`Svg::polyline`] draws on an arrow `width` pixels wide.
pub fn arrow_head_size(width: f64) -> f64 {
    width * 3.0 + 4.0
}

/// Candidate places for a `w` x `h` box beside point `at`, kept `clear` pixels from it: in the
/// order of `sides` (0 above, 1 below, 2 right, 3 left), then the four corners, then all of it
/// again 14 and 28 pixels further out.
pub fn around(at: (f64, f64), w: f64, h: f64, clear: f64, sides: [usize; 4]) -> Vec<Boxed> {
    let (x, y) = at;
    let mut out = Vec::new();
    for d in [0.0, 14.0, 28.0] {
        let c = clear + d;
        let side = [
            Boxed { x: x - w / 2.0, y: y - c - h, w, h },
            Boxed { x: x - w / 2.0, y: y + c, w, h },
            Boxed { x: x + c, y: y - h / 2.0, w, h },
            Boxed { x: x - c - w, y: y - h / 2.0, w, h },
        ];
        out.extend(sides.iter().map(|&i| side[i % 4]));
        let k = c * 0.7;
        out.extend([(x + k, y - k - h), (x - k - w, y - k - h), (x + k, y + k), (x - k - w, y + k)].map(|(x, y)| Boxed { x, y, w, h }));
    }
    out
}

/// What every seat sees: the parts of the seats' views that are the same in all of them
/// (objects key by key, anything else whole; what differs becomes `null`). The observer's
/// picture is drawn from it, so it shows only what every seat's report shows.
pub fn common(views: &[Value]) -> Value {
    let Some((first, rest)) = views.split_first() else { return Value::Null };
    match first {
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (k, v) in map {
                let mut all = vec![v.clone()];
                for other in rest {
                    match other.get(k) {
                        Some(x) => all.push(x.clone()),
                        None => break,
                    }
                }
                if all.len() == views.len() {
                    out.insert(k.clone(), common(&all));
                }
            }
            Value::Object(out)
        }
        v if rest.iter().all(|x| x == v) => v.clone(),
        _ => Value::Null,
    }
}

/// Writes the picture `svg` to `path`: the SVG text for a name ending in `.svg`, a PNG for
/// `.png` (a file the user named: [`crate::store::write_user_file`], whole or not at all, through
/// a symbolic link).
///
/// Errors: [`Error::Setting`] for another ending, [`Error::Picture`], [`Error::Io`].
pub fn write(path: &Path, svg: &str) -> Result<()> {
    let ext = path.extension().and_then(|e| e.to_str()).map(|e| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("svg") => crate::store::write_user_file(path, svg.as_bytes()).map(drop),
        Some("png") => crate::store::write_user_file(path, &png(svg)?).map(drop),
        _ => Err(Error::setting(Setting::Picture(path.to_path_buf()), "the name must end in .svg or .png")),
    }
}

/// The picture of game `dir` after record `step` (default: the newest) as `seat` may see it
/// (`None`: an observer), drawn from that record's state.
///
/// Errors: the game's files ([`crate::pipeline::load`]), no such record yet, a game without
/// pictures ([`Error::Usage`]).
pub fn of_game(dir: &Path, step: Option<u64>, seat: Option<&str>) -> Result<String> {
    let g = crate::pipeline::load(dir)?;
    let n = step.unwrap_or(g.record.index);
    if n > g.record.index {
        return Err(Error::Usage(format!("no record {n} yet (newest is {})", g.record.index)));
    }
    let state = if n == g.record.index { g.state } else { crate::store::read_text(&g.dir.state(n))? };
    let ended = if n == g.record.index { g.record.outcome.is_some() } else { crate::pipeline::read_record(&g.dir, n)?.outcome.is_some() };
    g.game.picture(&state, seat, ended)?.ok_or_else(|| Error::Usage(format!("{} draws no picture", g.game.title())))
}

/// The view a picture for `seat` is drawn from: the seat's own view, or for an observer
/// (`None`) what every seat sees ([`common`]). `None` for a seat the game does not have.
/// `ended` (the record ended the game, perhaps outside play: a resignation, a draw, the host):
/// the view's phase says the game is over and it holds no plans or question (tester21 T21a-2:
/// the picture of a resigned game was headed "command phase").
pub fn view_for<G: crate::game::Game + ?Sized>(game: &G, state: &G::State, seat: Option<&str>, ended: bool) -> Option<Value> {
    let roles = game.roles(state);
    let mut v = match seat {
        Some(r) if roles.iter().any(|x| x == r) => game.view(state, r),
        Some(_) => return None,
        None => common(&roles.iter().map(|r| game.view(state, r)).collect::<Vec<_>>()),
    };
    if ended && let Some(o) = v.as_object_mut() {
        if o.get("phase_text").and_then(Value::as_str).is_some_and(|p| !p.starts_with("The game is over")) {
            o.insert("phase_text".into(), Value::from("The game is over"));
        }
        // A game whose view carries its result (Throw Down That Flag) says it is over there
        // (tester22 T22a-1: its picture still showed the round it stopped in, and no end).
        if o.get("game_over").is_some_and(Value::is_null) {
            o.insert("game_over".into(), serde_json::json!({ "summary": "The game is over" }));
        }
        for plans in ["team_plans", "planned_moves", "question", "asking"] {
            o.remove(plans);
        }
    }
    (!v.is_null()).then_some(v)
}

/// The line cap of a stroke dashed by `dash`: square-cut for a dashed one, whose round caps
/// (half the stroke's width beyond each end of every dash) would close gaps narrower than the
/// stroke and draw it solid (tester21 T21b-5); round for a solid one.
fn cap(dash: Option<&str>) -> &'static str {
    if dash.is_some() { "butt" } else { "round" }
}

fn options() -> &'static resvg::usvg::Options<'static> {
    static OPTIONS: OnceLock<resvg::usvg::Options<'static>> = OnceLock::new();
    OPTIONS.get_or_init(|| {
        let mut db = resvg::usvg::fontdb::Database::new();
        db.load_font_data(FONT_REGULAR.to_vec());
        db.load_font_data(FONT_BOLD.to_vec());
        db.set_sans_serif_family(FONT);
        resvg::usvg::Options { font_family: FONT.to_string(), fontdb: Arc::new(db), ..resvg::usvg::Options::default() }
    })
}

/// The SVG document `svg` drawn as a PNG (resvg, the embedded font only: the same bytes on any
/// machine). The last picture drawn on this thread is kept and given again for the same SVG:
/// the seats of a game that hides nothing on the board see the same picture, and a step's report
/// mails are composed one after another on one thread, so each step draws it once, not once a
/// seat (drawing and compressing is ~25 ms, most of a report mail's cost).
///
/// Errors: [`Error::Picture`] if the SVG cannot be read or is too large to draw.
pub fn png(svg: &str) -> Result<Vec<u8>> {
    thread_local! {
        static LAST: std::cell::RefCell<Option<(String, Vec<u8>)>> = const { std::cell::RefCell::new(None) };
    }
    if let Some(png) = LAST.with(|l| l.borrow().as_ref().filter(|(s, _)| s == svg).map(|(_, p)| p.clone())) {
        return Ok(png);
    }
    let png = draw_png(svg)?;
    LAST.with(|l| *l.borrow_mut() = Some((svg.to_string(), png.clone())));
    Ok(png)
}

/// [`png`] without the kept picture.
fn draw_png(svg: &str) -> Result<Vec<u8>> {
    let tree = resvg::usvg::Tree::from_str(svg, options()).map_err(|e| Error::Picture(format!("SVG: {e}")))?;
    let size = tree.size().to_int_size();
    if size.width() > 8000 || size.height() > 8000 {
        return Err(Error::Picture(format!("{}x{} pixels is too large to draw", size.width(), size.height())));
    }
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height())
        .ok_or_else(|| Error::Picture("empty picture".into()))?;
    resvg::render(&tree, resvg::tiny_skia::Transform::default(), &mut pixmap.as_mut());
    encode_rgb(&pixmap).map_err(|e| Error::Picture(format!("PNG: {e}")))
}

/// A drawn picture as an RGB PNG: pictures are opaque (drawn on paper), and dropping the alpha
/// channel and filtering each row makes a mail's attachment much smaller. zlib's default level,
/// not its best: on the games' pictures it is within 1% of the size (about 84 KB for a
/// Gettysburg map) at a third of the time (15 ms, not 49 ms, measured in README "Speed"), and
/// every report mail carries one picture.
fn encode_rgb(pixmap: &resvg::tiny_skia::Pixmap) -> std::result::Result<Vec<u8>, png::EncodingError> {
    let rgb: Vec<u8> = pixmap.data().chunks_exact(4).flat_map(|p| [p[0], p[1], p[2]]).collect();
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, pixmap.width(), pixmap.height());
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    enc.set_compression(png::Compression::Default);
    enc.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
    enc.write_header()?.write_image_data(&rgb)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A dashed stroke is cut square so its gaps show; a solid one keeps round ends (tester21
    /// T21b-5: round caps closed the gaps of a dashed arrow).
    #[test]
    fn dashed_strokes_are_cut_square() {
        let mut svg = Svg::new(100, 100, "t");
        svg.line((0.0, 0.0), (50.0, 0.0), "#000", 4.0, Some("7 4"));
        svg.polyline(&[(0.0, 10.0), (50.0, 10.0)], "#000", 4.0, Some("7 4"), false);
        svg.line((0.0, 20.0), (50.0, 20.0), "#000", 4.0, None);
        let text = svg.finish();
        assert_eq!(text.matches("stroke-linecap=\"butt\"").count(), 2, "{text}");
        assert_eq!(text.matches("stroke-linecap=\"round\"").count(), 1, "{text}");
    }

    #[test]
    fn numbers_are_short_and_stable() {
        assert_eq!(num(12.0), "12");
        assert_eq!(num(12.345), "12.3");
        assert_eq!(num(-0.01), "0");
    }

    #[test]
    fn text_is_escaped() {
        let mut s = Svg::new(10, 10, "a<b");
        s.text((1.0, 1.0), "x & \"y\"", 10.0, Anchor::Start, false, colour::INK);
        let out = s.finish();
        assert!(out.contains("<title>a&lt;b</title>"));
        assert!(out.contains(">x &amp; &quot;y&quot;</text>"));
    }

    #[test]
    fn common_keeps_only_what_every_view_shares() {
        let a = json!({"board": [1, 2], "plans": ["mine"], "me": {"team": "white", "round": 2}});
        let b = json!({"board": [1, 2], "plans": ["theirs"], "me": {"team": "red", "round": 2}});
        assert_eq!(common(&[a, b]), json!({"board": [1, 2], "plans": null, "me": {"team": null, "round": 2}}));
    }

    #[test]
    fn png_is_the_same_bytes_twice_and_draws_text() {
        let mut s = Svg::new(120, 40, "t");
        s.text((60.0, 25.0), "Gettysburg 3", 14.0, Anchor::Middle, true, colour::INK);
        let svg = s.finish();
        let a = png(&svg).unwrap();
        assert_eq!(a, png(&svg).unwrap());
        assert_eq!(a, draw_png(&svg).unwrap(), "the kept picture is the one drawn anew");
        assert_eq!(&a[1..4], b"PNG");
        let blank_svg = Svg::new(120, 40, "t").finish();
        let blank = png(&blank_svg).unwrap();
        assert_ne!(a, blank, "the text was drawn (the embedded font was found)");
        // Another picture in between: each SVG still gets its own.
        assert_eq!(png(&svg).unwrap(), a);
        assert_eq!(png(&blank_svg).unwrap(), blank);
    }

    /// The drawn width (ink) of one text element in `svg` as resvg lays it out.
    fn drawn_width(text_element: &str) -> f32 {
        let svg = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"900\" height=\"60\">{text_element}</svg>");
        resvg::usvg::Tree::from_str(&svg, options()).unwrap().root().bounding_box().width()
    }

    /// tester16 T16c-2: the widths the layout uses are the embedded font's, and resvg draws a
    /// text to its `textLength` (so the PNGs keep the layout, as a browser does with any font).
    #[test]
    fn text_widths_are_the_fonts_and_text_length_is_honoured() {
        for (t, size, bold) in [("Hagerstown (1, scored)", 13.0, true), ("Westminster (1)", 13.0, true), ("Union corps: number and strength", 12.0, false), ("III 4", 11.5, true)] {
            let weight = if bold { " font-weight=\"bold\"" } else { "" };
            let plain = drawn_width(&format!("<text x=\"10\" y=\"40\" font-family=\"{FONT_FAMILY}\" font-size=\"{size}\"{weight}>{t}</text>"));
            let w = text_width(t, size, bold);
            assert!((f64::from(plain) - w).abs() < 0.04 * w + 2.0, "{t}: drawn {plain}, measured {w}");
            let stretched = drawn_width(&format!(
                "<text x=\"10\" y=\"40\" font-family=\"{FONT_FAMILY}\" font-size=\"{size}\"{weight} textLength=\"{}\" lengthAdjust=\"spacingAndGlyphs\">{t}</text>",
                2.0 * w
            ));
            assert!((f64::from(stretched) - 2.0 * f64::from(plain)).abs() < 0.04 * w + 4.0, "{t}: {stretched} is not twice {plain}");
        }
        let mut s = Svg::new(100, 20, "t");
        s.text((1.0, 10.0), "  two\n  lines ", 10.0, Anchor::Start, false, colour::INK);
        let out = s.finish();
        assert!(out.contains(&format!(" textLength=\"{}\" lengthAdjust=\"spacingAndGlyphs\">two lines</text>", num(text_width("two lines", 10.0, false)))), "{out}");
    }

    #[test]
    fn placer_keeps_boxes_apart_and_flow_wraps() {
        let mut p = Placer::new(Boxed { x: 0.0, y: 0.0, w: 100.0, h: 100.0 });
        p.take(Boxed { x: 40.0, y: 10.0, w: 20.0, h: 20.0 });
        let cands = around((50.0, 50.0), 20.0, 10.0, 20.0, [0, 1, 2, 3]);
        let b = p.place(&cands).unwrap();
        assert_eq!(b, cands[1], "above is taken: below");
        assert!(p.place(&[Boxed { x: 90.0, y: 0.0, w: 20.0, h: 5.0 }, Boxed { x: 0.0, y: 90.0, w: 10.0, h: 5.0 }]).is_some_and(|b| b.x == 0.0), "inside the bounds");
        assert_eq!(flow(&[50.0, 50.0, 50.0], 10.0, 130.0, 10.0), vec![(10.0, 0), (70.0, 0), (10.0, 1)]);
        assert_eq!(wrap("one two three", 10.0, false, text_width("one two", 10.0, false)), vec!["one two", "three"]);
    }

    #[test]
    fn bad_svg_is_an_error_not_a_panic() {
        assert!(png("<svg").is_err());
        assert!(png("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"0\" height=\"0\"/>").is_err());
    }
}
