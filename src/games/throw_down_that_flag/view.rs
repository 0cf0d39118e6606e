//! What the player sees: the only path from state to the report. The game is solitaire, so the
//! player sees everything except the order of tokens inside the bags.

use serde_json::{Value, json};

use super::forms::{describe, prompt};
use super::hex::Space;
use super::orders::{field_texts, standing_text};
use super::state::{Side, State};

/// The map as text rows: First Minnesota companies in capitals, Confederates in small letters,
/// each with its Str, `+` for a gun marker and `^` for the colors; `=` marks an empty objective.
/// As reports of wording 0 to 2 show it: a company's cell starts one column left of an empty
/// space's, and one with both marks runs into the next cell (`H3+^I3+`).
pub fn map_rows(s: &State) -> Vec<String> {
    map_rows_worded(s, false)
}

/// [`map_rows`] as reports of wording 3 show it: each cell's letter under its column's, and one
/// mark for a company with a gun marker and the colors both, `*` (tester t17b-12).
pub fn map_rows_aligned(s: &State) -> Vec<String> {
    map_rows_worded(s, true)
}

fn map_rows_worded(s: &State, aligned: bool) -> Vec<String> {
    let (c, r) = (s.scenario.map.columns, s.scenario.map.rows);
    let obj = s.scenario.objective();
    let mut rows = Vec::new();
    let mut head = String::from("     ");
    for col in 0..c {
        head.push_str(&format!(" {}  ", (b'A' + col as u8) as char));
    }
    rows.push(head.trim_end().to_string());
    for row in 0..r {
        let mut line = format!("{:>3}  ", row + 1);
        if row % 2 == 1 {
            line.push_str("  ");
        }
        for col in 0..c {
            let p = Space { col, row };
            let cell = match s.at(p) {
                Some(i) => {
                    let k = &s.companies[i];
                    let l = if k.side == Side::Union { k.letter.clone() } else { k.letter.to_ascii_lowercase() };
                    match (aligned, k.gun, k.colors) {
                        (false, ..) => format!("{l}{}{}{}", k.str.min(9), if k.gun { '+' } else { ' ' }, if k.colors { '^' } else { ' ' }),
                        (true, gun, colors) => format!(" {l}{}{}", k.str.min(9), match (gun, colors) { (true, true) => '*', (true, false) => '+', (false, true) => '^', (false, false) => ' ' }),
                    }
                }
                None if obj.contains(&p) => " =  ".into(),
                None => " .  ".into(),
            };
            line.push_str(&cell);
        }
        if let Some(l) = s.scenario.map.landmarks.get(&(row + 1).to_string()) {
            line.push_str(&format!(" {l}"));
        }
        rows.push(line.trim_end().to_string());
    }
    rows
}

/// The standing orders, one item per entry (wrapped lines joined by newlines) (`all` first): what each company's order does, with the
/// fields of its own entry named when `all` gives the rest.
pub fn standing_lines(s: &State) -> Vec<String> {
    let mut out: Vec<String> = s.standing.get("all").map(|st| format!("all: {}", standing_text(st))).into_iter().collect();
    for (k, own) in s.standing.iter().filter(|(k, _)| k.as_str() != "all") {
        let Some(i) = s.companies.iter().position(|c| c.side == Side::Union && &c.letter == k) else { continue };
        let st = s.standing_for(i).unwrap_or_default();
        let mut line = format!("{k}: {}", standing_text(&st));
        if s.standing.contains_key("all") {
            let fields: Vec<String> = field_texts(own).into_iter().map(|(f, v)| format!("{f} {v}")).collect();
            line.push_str(&format!(" (its own: {}; the rest from all)", fields.join(", ")));
        }
        out.push(line);
    }
    out.into_iter().map(|l| super::forms::wrap(&l, 92)).collect()
}

/// What the success bag holds (the same full bag for every attack), e.g. "First Minnesota: 8
/// successes, 3 flames; Confederate: 7 successes, 3 flames; 5 blanks (26 tokens)".
pub fn success_bag_text(s: &State) -> String {
    let b = &s.scenario.success_bag;
    let n = |k: u32, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
    format!(
        "First Minnesota: {}, {}; Confederate: {}, {}; {} ({} tokens)",
        n(b.union_success, "success", "successes"),
        n(b.union_flame, "flame", "flames"),
        n(b.confederate_success, "success", "successes"),
        n(b.confederate_flame, "flame", "flames"),
        n(b.blank, "blank", "blanks"),
        b.total()
    )
}

/// The view of the player.
pub fn view(s: &State) -> Value {
    let company = |i: usize| {
        let k = &s.companies[i];
        json!({
            "letter": k.letter, "side": k.side.name(), "str": k.str, "start_str": k.start_str,
            "gun": k.gun, "colors": k.colors, "at": k.at.map(|p| p.name()),
            "broke_through": k.broke_through, "text": describe(s, i),
        })
    };
    let list = |side: Side| -> Vec<Value> { (0..s.companies.len()).filter(|&i| s.companies[i].side == side).map(company).collect() };
    let standing = standing_lines(s);
    let mut bag: Vec<String> = s.bag.iter().map(|t| t.name()).collect();
    bag.dedup();
    let mut v = json!({
        "title": s.scenario.title,
        "scenario": s.scenario.name,
        "round": s.round,
        "rounds": s.scenario.rules.rounds,
        "breakthroughs": s.breakthroughs(),
        "breakthrough_limit": s.scenario.rules.breakthrough,
        "colors_win": s.scenario.rules.colors_win,
        "colors_taken": s.colors_taken,
        // Where the Confederate colors are: a company on the map, or none (their bearer broke
        // through, so they can no longer be taken).
        "enemy_colors": s.colors_of(Side::Confederate).map(|i| format!("company {} at {}", s.companies[i].letter, s.companies[i].at.map(|p| p.name()).unwrap_or_default())),
        "map": map_rows(s),
        "map_aligned": map_rows_aligned(s),
        "columns": s.scenario.map.columns,
        "rows": s.scenario.map.rows,
        "objective": s.scenario.objective().iter().map(|p| p.name()).collect::<Vec<_>>(),
        "landmarks": s.scenario.map.landmarks,
        "hex": s.scenario.map.picture,
        "letters_row": s.letters_row,
        "colors_row": s.colors_row,
        "bag_size": s.bag.len(),
        "bag": bag,
        "removed": s.removed.iter().map(|t| t.name()).collect::<Vec<_>>(),
        "str_lost": s.str_lost(),
        "men_lost": s.str_lost() * s.scenario.rules.men_per_str,
        "standing": standing,
        "success_bag": success_bag_text(s),
        // A stretch of two tokens or more is told in short above the full account (report.txt).
        "step_summary": (s.summary.len() >= 2).then(|| json!({
            "head": "In short, a line per activation token (successes and flames First Minnesota:Confederate):",
            "lines": s.summary.iter().map(|l| super::forms::wrap(l, 90)).collect::<Vec<_>>(),
            "full": "In full, every event and draw:",
        })),
        "days": s.days,
        "next_day": s.next.as_ref().map(|n| n.title.clone()),
        // A campaign still going (a day to come, or one played): reports of wording 4 say how it
        // is won (pbem's campaign, README "Throw Down That Flag orders").
        "campaign": s.outcome.is_none() && (s.next.is_some() || !s.days.is_empty()),
        "question": s.asking.filter(|_| s.outcome.is_none()).map(|_| json!({ "kind": "activation", "prompt": prompt(s) })),
        // The company the question is about (the picture rings it).
        "asking": s.asking.filter(|_| s.outcome.is_none()).map(|i| s.companies[i].letter.clone()),
        "game_over": s.outcome,
    });
    // Values built here are moved in (`json!` would copy each by serializing it again).
    let map = v.as_object_mut().expect("an object");
    map.insert("union".into(), Value::Array(list(Side::Union)));
    map.insert("confederate".into(), Value::Array(list(Side::Confederate)));
    v
}
