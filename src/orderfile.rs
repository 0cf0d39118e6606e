//! Order files: a TOML document with a `[pbem]` header (game, step, role, host-seed commitment,
//! nonce) and the game's `[orders]` table; writing forms and locating fields for error messages.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::game::Orders;

/// The `[pbem]` table of an order file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// Game id the orders are for.
    pub game: String,
    /// Step number the orders are for.
    pub step: u64,
    /// Role giving the orders.
    pub role: String,
    /// The host-seed commitment of that step, copied from the form (hex).
    pub host_seed_commitment: String,
    /// 64 hex digits of fresh randomness, or empty (accepted with a warning).
    #[serde(default)]
    pub nonce: String,
}

/// A parsed order file.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderFile {
    /// The `[pbem]` header.
    pub header: Header,
    /// The game's orders (without `resign` and `draw`, which are the judge's: [`Ending`]).
    pub orders: Orders,
    /// What the player asks of the game's end (`resign`, `draw` in `[orders]`).
    pub ending: Ending,
}

/// A player's word on ending the game, written in `[orders]` of any order file (SPEC.md "Ending
/// by the players"): `resign = true` (concede: the seat's side loses), `draw = true` (offer or
/// agree a draw), `draw = false` (withdraw an offer).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ending {
    /// `resign = true`.
    pub resign: bool,
    /// `draw = true` or `draw = false`, when written.
    pub draw: Option<bool>,
}

/// Takes `resign` and `draw` out of `[orders]`: each a boolean, `resign` only `true`.
fn take_ending(text: &str, orders: &mut Orders) -> Result<Ending, ParseProblem> {
    let bad = |key: &str, message: &str| ParseProblem { line: locate(text, &format!("orders.{key}")), field: Some(format!("orders.{key}")), message: message.into() };
    let resign = match orders.remove("resign") {
        None => false,
        Some(toml::Value::Boolean(true)) => true,
        Some(_) => return Err(bad("resign", "write `resign = true` to resign (your side loses the game at once), or leave the line out")),
    };
    let draw = match orders.remove("draw") {
        None => None,
        Some(toml::Value::Boolean(b)) => Some(b),
        Some(_) => return Err(bad("draw", "write `draw = true` to offer or agree a draw, `draw = false` to withdraw your offer")),
    };
    if resign && draw.is_some() {
        return Err(bad("draw", "resign and draw exclude each other: write only one of them"));
    }
    Ok(Ending { resign, draw })
}

/// A problem found while parsing, with the 1-based line and the field when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseProblem {
    /// 1-based line number in the signed text.
    pub line: Option<usize>,
    /// Dotted field, e.g. `pbem.step`.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

/// [`parse`], remembered for the process by a SHA-256 of `text`: intake parses a mailed order
/// on its read-ahead thread, then again to route it and to check it (the same text each time).
pub fn parse_remembered(text: &str) -> Result<OrderFile, ParseProblem> {
    static PARSED: crate::memo::SharedMemo<[u8; 32], Result<OrderFile, ParseProblem>> = crate::memo::SharedMemo::new();
    PARSED.get_or(<sha2::Sha256 as sha2::Digest>::digest(text.as_bytes()).into(), |_| parse(text))
}

/// Parses order-file text (without any appended signature block).
///
/// Errors: TOML syntax (with line), missing or malformed `[pbem]` fields, missing `[orders]`,
/// unknown top-level tables.
pub fn parse(text: &str) -> Result<OrderFile, ParseProblem> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let line = e.span().map(|s| line_of(text, s.start));
        ParseProblem { line, field: None, message: format!("{}{}", e.message().trim(), typographic_hint(text, line)) }
    })?;
    for (key, value) in &table {
        if key != "pbem" && key != "orders" {
            // A key above every table (a line of orders written before [pbem]) is not a table
            // (tester20 T20c-7).
            let message = if value.is_table() {
                "unknown table: an order file has only [pbem] and [orders]".to_string()
            } else {
                format!("a key outside any table: an order file has only [pbem] and [orders] (to give it as an order, put it under [orders]: {key} = ...)")
            };
            return Err(ParseProblem { line: locate(text, key), field: Some(key.clone()), message });
        }
    }
    let header_value = table.get("pbem").ok_or_else(|| ParseProblem {
        line: None,
        field: Some("pbem".into()),
        message: "missing [pbem] header (game, step, role, host_seed_commitment, nonce): start from `pbem form`".into(),
    })?;
    let header = header_of(text, header_value)?;
    if !header.nonce.is_empty() && crate::commit::parse_32(&header.nonce).is_none() {
        return Err(ParseProblem {
            line: locate(text, "pbem.nonce"),
            field: Some("pbem.nonce".into()),
            message: format!("nonce must be 64 hex digits (or empty); you wrote {:?}", crate::text::clip(&header.nonce, 80)),
        });
    }
    let orders = match table.get("orders") {
        Some(toml::Value::Table(t)) => t.clone(),
        Some(_) => {
            return Err(ParseProblem {
                line: locate(text, "orders"),
                field: Some("orders".into()),
                message: "orders must be a table: [orders]".into(),
            })
        }
        None => Orders::new(),
    };
    let mut orders = orders;
    let ending = take_ending(text, &mut orders)?;
    Ok(OrderFile { header, orders, ending })
}

/// The `[pbem]` fields, in the order a form writes them: (name, what it holds, required).
const HEADER_FIELDS: [(&str, &str, bool); 5] = [
    ("game", "the game id, a string", true),
    ("step", "the step number, a whole number without quotes, e.g. step = 1", true),
    ("role", "your role, a string", true),
    ("host_seed_commitment", "the commitment copied from the form, a string", true),
    ("nonce", "64 hex digits or \"\", a string", false),
];

/// The `[pbem]` table read field by field, so that a problem names its field and line
/// (`pbem.step` on the line that writes it; a missing field on the `[pbem]` line). Accepts
/// exactly what deserializing [`Header`] accepts.
fn header_of(text: &str, value: &toml::Value) -> Result<Header, ParseProblem> {
    let problem = |field: String, message: String| ParseProblem { line: locate(text, &field), field: Some(field), message };
    let toml::Value::Table(t) = value else {
        return Err(problem("pbem".into(), "must be a table: [pbem] with game, step, role, host_seed_commitment, nonce".into()));
    };
    if let Some(k) = t.keys().find(|k| !HEADER_FIELDS.iter().any(|(f, _, _)| f == k)) {
        let known: Vec<&str> = HEADER_FIELDS.iter().map(|(f, _, _)| *f).collect();
        return Err(problem(format!("pbem.{k}"), format!("unknown field {k:?}: [pbem] has only {}", known.join(", "))));
    }
    let mut strings = BTreeMap::new();
    let mut step = None;
    for (name, holds, required) in HEADER_FIELDS {
        let field = format!("pbem.{name}");
        match (t.get(name), name) {
            (None, _) if required => return Err(ParseProblem { line: locate(text, "pbem"), field: Some(field), message: format!("missing: {holds} (start from the form)") }),
            (None, _) => {}
            (Some(toml::Value::Integer(n)), "step") if *n >= 0 => step = Some(*n as u64),
            (Some(toml::Value::String(s)), n) if n != "step" => {
                strings.insert(name, s.clone());
            }
            (Some(v), _) => return Err(problem(field, format!("want {holds}; found {}", describe(v)))),
        }
    }
    let mut take = |k: &str| strings.remove(k).unwrap_or_default();
    let step = step.unwrap_or_default();
    Ok(Header { game: take("game"), step, role: take("role"), host_seed_commitment: take("host_seed_commitment"), nonce: take("nonce") })
}

/// A TOML value as an error message quotes it: its kind and, when short, itself.
pub fn describe(v: &toml::Value) -> String {
    let shown = v.to_string();
    let kind = match v {
        toml::Value::String(_) => "the string",
        toml::Value::Integer(_) => "the number",
        toml::Value::Float(_) => "the number",
        toml::Value::Boolean(_) => "",
        toml::Value::Datetime(_) => "the date",
        toml::Value::Array(_) => "the list",
        toml::Value::Table(_) => "a table",
    };
    match (kind, shown.chars().count() <= 40) {
        ("a table", _) => kind.to_string(),
        ("", _) => shown,
        (k, true) => format!("{k} {shown}"),
        (k, false) => format!("{k} {}…", shown.chars().take(40).collect::<String>()),
    }
}

/// The value written at `field` of `orders` (a game's dotted field, `move1.card`, `cards[1]`).
pub fn value_at<'a>(orders: &'a Orders, field: &str) -> Option<&'a toml::Value> {
    let mut table = orders;
    let mut at: Option<&toml::Value> = None;
    for part in field.split('.') {
        if let Some(v) = at {
            table = v.as_table()?;
        }
        let mut v = table.get(part.split('[').next().unwrap_or(part).trim())?;
        for i in part.split('[').skip(1) {
            v = v.as_array()?.get(i.trim_end_matches(']').trim().parse::<usize>().ok()?)?;
        }
        at = Some(v);
    }
    at
}

/// `message` about a field whose written value is `v`, ending with what the player wrote
/// (`; you wrote "fwd"`) unless the message quotes it already, is about the key rather than its
/// value (an unknown field or key), or the value is a table or long: an order's problem repeats
/// the mistake beside the choices (tester16 T16c-7).
pub fn with_written(message: &str, v: &toml::Value) -> String {
    let shown = v.to_string();
    let raw = v.as_str().unwrap_or(&shown);
    let about_key = message.contains("unknown field") || message.contains("unknown key");
    // A list whose wrong item the message quotes already (`"Nobody" is not on any of your cards`).
    let item_shown = v.as_array().is_some_and(|a| a.iter().any(|x| message.contains(&x.to_string())));
    if about_key || item_shown || v.is_table() || shown.chars().count() > 60 || message.contains(&shown) || (!raw.trim().is_empty() && message.contains(&format!("`{raw}`"))) {
        return message.to_string();
    }
    format!("{message}; you wrote {shown}")
}

/// The quotes a word processor or mail program puts for `"` and `'`, which TOML does not take.
const TYPOGRAPHIC_QUOTES: [char; 6] = ['\u{201C}', '\u{201D}', '\u{2018}', '\u{2019}', '\u{201E}', '\u{00AB}'];

/// A hint for a syntax error on `line` of `text` (1-based) that holds typographic quotes
/// (`“forward”`): the likely cause, which the parser's message does not name (tester16 T16c-7).
fn typographic_hint(text: &str, line: Option<usize>) -> String {
    let on_line = line.and_then(|l| text.lines().nth(l.saturating_sub(1)));
    match on_line.and_then(|l| l.chars().find(|c| TYPOGRAPHIC_QUOTES.contains(c))) {
        Some(q) => format!("; the line holds the typographic quote {q}, which TOML does not take: write straight quotes \" or ' (an editor or mail program may have put curly ones)"),
        None => String::new(),
    }
}

/// 1-based line of byte offset `at` in `text`.
pub fn line_of(text: &str, at: usize) -> usize {
    // By bytes: `at` (from a parser's span) need not fall on a character boundary.
    text.as_bytes()[..at.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

/// Best-effort 1-based line where the dotted `field` (e.g. `orders.moves.I`) is written: the line of
/// the longest prefix of the path found as a table header or a `key =` line inside its table.
pub fn locate(text: &str, field: &str) -> Option<usize> {
    let want: Vec<&str> = field.split('.').collect();
    let mut table: Vec<String> = Vec::new();
    let mut best: Option<(usize, usize)> = None; // (matched length, line)
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let path: Vec<String> = if let Some(h) = line.strip_prefix('[') {
            let h = h.trim_start_matches('[');
            let end = h.find(']').unwrap_or(h.len());
            table = h[..end].split('.').map(|s| s.trim().trim_matches('"').to_string()).collect();
            table.clone()
        } else if let Some(eq) = line.find('=') {
            let mut p = table.clone();
            p.extend(line[..eq].split('.').map(|s| s.trim().trim_matches('"').to_string()));
            p
        } else {
            continue;
        };
        let matched = path.iter().zip(&want).take_while(|(a, b)| a.as_str() == **b).count();
        if matched == path.len() && matched > 0 && best.is_none_or(|(m, _)| matched > m) {
            best = Some((matched, i + 1));
        }
    }
    best.map(|(_, l)| l)
}

/// Writes an order form: comment lines (prompt and help), the `[pbem]` header and `[orders]`.
/// `nonce` is empty in forms inside reports (deterministic) and fresh in `pbem form`.
pub fn form_text(header: &Header, comments: &[String], orders: &Orders) -> String {
    let mut out = String::new();
    for c in comments {
        if c.is_empty() {
            out.push_str("#\n");
        } else {
            out.push_str("# ");
            out.push_str(c);
            out.push('\n');
        }
    }
    out.push_str("[pbem]\n");
    out.push_str(&toml::to_string(header).expect("header serializes"));
    out.push('\n');
    let mut wrapper = toml::Table::new();
    wrapper.insert("orders".into(), toml::Value::Table(orders.clone()));
    let body = toml::to_string(&wrapper).expect("orders serialize");
    if !body.contains("[orders]") {
        out.push_str("[orders]\n");
    }
    out.push_str(&body);
    crate::sig::normalize(out.as_bytes()).expect("a form is valid text")
}

/// Returns `text` with the `nonce` of `[pbem]`, whatever it holds, replaced by 32 fresh random
/// bytes from this machine, and that nonce (hex), or `None` if there is no `nonce = ...` line
/// under a `[pbem]` line. The caller must parse the result to make sure the nonce the file holds
/// is this one (TOML can write the key in other ways, which this line edit does not touch). `pbem sign` uses it: a nonce
/// already in a form may have been made by the host (`pbem form` runs on the host's machine), and
/// a host that knows a player's nonce could choose its own seed to suit (SPEC.md "Step seed").
pub fn fresh_nonce(text: &str) -> Option<(String, String)> {
    let mut in_header = false;
    let mut out = String::with_capacity(text.len() + 64);
    let mut replaced: Option<String> = None;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if t.starts_with('[') {
            in_header = t.starts_with("[pbem]");
        }
        if in_header
            && replaced.is_none()
            && let Some(rest) = t.strip_prefix("nonce")
            && rest.trim_start().starts_with('=')
        {
            let nonce = hex::encode(crate::commit::fresh_32());
            out.push_str(&format!("nonce = \"{nonce}\"\n"));
            replaced = Some(nonce);
            continue;
        }
        out.push_str(line);
    }
    replaced.map(|n| (out, n))
}

/// Returns `text` with an empty `nonce = ""` in `[pbem]` replaced by a fresh one, or `None` if the
/// nonce is already filled (or absent).
pub fn fill_nonce(text: &str) -> Option<String> {
    let mut in_header = false;
    let mut out = String::with_capacity(text.len() + 64);
    let mut filled = false;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if t.starts_with('[') {
            in_header = t.starts_with("[pbem]");
        }
        if in_header && !filled
            && let Some(rest) = t.strip_prefix("nonce") {
                let v = rest.trim_start().strip_prefix('=').map(str::trim);
                if v == Some("\"\"") || v == Some("''") {
                    out.push_str(&format!("nonce = \"{}\"\n", hex::encode(crate::commit::fresh_32())));
                    filled = true;
                    continue;
                }
            }
        out.push_str(line);
    }
    filled.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORM: &str = "# hi\n[pbem]\ngame = \"g\"\nstep = 2\nrole = \"union\"\nhost_seed_commitment = \"ab\"\nnonce = \"\"\n\n[orders]\ncards = [\"A\"]\n\n[orders.moves]\nI = \"York\"\n";

    #[test]
    fn parses_header_and_orders() {
        let f = parse(FORM).unwrap();
        assert_eq!(f.header.step, 2);
        assert_eq!(f.orders["cards"].as_array().unwrap().len(), 1);
    }

    /// A key above `[pbem]` is called a key outside any table, a stray table a table, each at
    /// its line (tester20 T20c-7).
    #[test]
    fn a_stray_key_and_a_stray_table_are_each_named_for_what_they_are() {
        let key = parse(&format!("tie_first = \"white\"\n{FORM}")).unwrap_err();
        assert_eq!((key.field.as_deref(), key.line), (Some("tie_first"), Some(1)), "{key:?}");
        assert!(key.message.starts_with("a key outside any table") && key.message.contains("under [orders]: tie_first = ..."), "{key:?}");
        let table = parse(&format!("{FORM}[extra]\nx = 1\n")).unwrap_err();
        assert!(table.message.starts_with("unknown table") && table.field.as_deref() == Some("extra"), "{table:?}");
    }

    #[test]
    fn resign_and_draw_are_taken_out_of_the_orders() {
        let f = parse(&FORM.replace("[orders]\n", "[orders]\ndraw = true\n")).unwrap();
        assert_eq!(f.ending, Ending { resign: false, draw: Some(true) });
        assert!(!f.orders.contains_key("draw") && f.orders.contains_key("cards"));
        assert_eq!(parse(FORM).unwrap().ending, Ending::default());
        let r = parse(&FORM.replace("[orders]\ncards = [\"A\"]\n", "[orders]\nresign = true\n")).unwrap();
        assert!(r.ending.resign);
        for (bad, field, line) in [("resign = false", "orders.resign", 10), ("resign = \"yes\"", "orders.resign", 10), ("draw = 1", "orders.draw", 10), ("resign = true\ndraw = true", "orders.draw", 11)] {
            let p = parse(&FORM.replace("[orders]\n", &format!("[orders]\n{bad}\n"))).unwrap_err();
            assert_eq!((p.field.as_deref(), p.line), (Some(field), Some(line)), "{bad}: {p:?}");
        }
    }

    #[test]
    fn locates_fields() {
        assert_eq!(locate(FORM, "pbem.step"), Some(4));
        assert_eq!(locate(FORM, "orders.cards"), Some(10));
        assert_eq!(locate(FORM, "orders.moves.I"), Some(13));
        assert_eq!(locate(FORM, "orders.moves.II"), Some(12));
    }

    #[test]
    fn the_header_accepts_what_its_serde_form_accepts() {
        // header_of reads field by field (for the messages); it must take the same files.
        for (from, to) in [("step = 2", "step = -2"), ("step = 2", "step = 2.0"), ("step = 2", "step = \"2\""), ("nonce = \"\"\n", ""), ("nonce = \"\"", "nonce = 1"), ("role = \"union\"\n", ""), ("game = \"g\"", "game = \"g\"\nx = 1"), ("game = \"g\"", "game = [\"g\"]")] {
            let text = FORM.replacen(from, to, 1);
            let table: toml::Table = text.parse().unwrap();
            let serde: Result<Header, _> = table["pbem"].clone().try_into();
            let ours = parse(&text);
            assert_eq!(ours.as_ref().ok().map(|f| &f.header), serde.as_ref().ok(), "{to}: {ours:?}");
            if let Err(p) = ours {
                assert!(p.field.as_deref().is_some_and(|f| f.starts_with("pbem.")) && p.line.is_some(), "{to}: {p:?}");
            }
        }
    }

    #[test]
    fn a_problem_repeats_the_value_written_unless_it_shows_it() {
        let orders: Orders = toml::from_str("cards = [\"A\", \"Zed\"]\n[move1]\ncard = \"fwd\"\ntoken = 9\n").unwrap();
        assert_eq!(value_at(&orders, "move1.card"), Some(&toml::Value::from("fwd")));
        assert_eq!(value_at(&orders, "cards[1]"), Some(&toml::Value::from("Zed")));
        assert_eq!(value_at(&orders, "move1.card.x"), None);
        assert_eq!(value_at(&orders, "move2"), None);
        let v = toml::Value::from("fwd");
        assert_eq!(with_written("one of your cards: forward, back", &v), "one of your cards: forward, back; you wrote \"fwd\"");
        assert_eq!(with_written("unknown card \"fwd\"", &v), "unknown card \"fwd\"");
        assert_eq!(with_written("unknown field `x`; accepted: a, b", &toml::Value::from(1)), "unknown field `x`; accepted: a, b");
        assert_eq!(with_written("a distance 2 to 10", &toml::Value::from(11)), "a distance 2 to 10; you wrote 11");
        assert_eq!(with_written("must be a table", &toml::Value::Table(Default::default())), "must be a table");
        let cards = toml::Value::Array(vec!["Nobody".into(), "Hancock".into()]);
        assert_eq!(with_written("\"Nobody\" is not on any of your cards", &cards), "\"Nobody\" is not on any of your cards");
        assert_eq!(with_written("play exactly 2 cards", &cards), "play exactly 2 cards; you wrote [\"Nobody\", \"Hancock\"]");
    }

    #[test]
    fn typographic_quotes_are_named_as_the_cause() {
        let p = parse(&FORM.replace("cards = [\"A\"]", "cards = [\u{201C}A\u{201D}]")).unwrap_err();
        assert_eq!(p.line, Some(10));
        assert!(p.message.ends_with("; the line holds the typographic quote \u{201C}, which TOML does not take: write straight quotes \" or ' (an editor or mail program may have put curly ones)"), "{}", p.message);
        assert!(!parse("[pbem]\ngame = \n").unwrap_err().message.contains("typographic"));
    }

    #[test]
    fn syntax_error_has_line() {
        let p = parse("[pbem]\ngame = \n").unwrap_err();
        assert_eq!(p.line, Some(2));
    }

    #[test]
    fn missing_header_field_is_named() {
        let p = parse("[pbem]\ngame = \"g\"\n[orders]\n").unwrap_err();
        assert!(p.message.contains("step"), "{}", p.message);
    }

    #[test]
    fn fresh_nonce_replaces_any_nonce() {
        let t = fill_nonce(FORM).unwrap();
        let a = parse(&t).unwrap().header.nonce;
        let (u, n) = fresh_nonce(&t).unwrap();
        let b = parse(&u).unwrap().header.nonce;
        assert_eq!(b, n);
        assert!(a.len() == 64 && b.len() == 64 && a != b);
        assert_eq!(parse(&u).unwrap().orders, parse(FORM).unwrap().orders);
        assert!(fresh_nonce("[orders]\nx = 1\n").is_none());
    }

    #[test]
    fn fill_nonce_fills_once() {
        let t = fill_nonce(FORM).unwrap();
        let f = parse(&t).unwrap();
        assert_eq!(f.header.nonce.len(), 64);
        assert!(fill_nonce(&t).is_none());
    }
}
