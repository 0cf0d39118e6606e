//! What the player sees: the only path from state to the report. The game is solitaire, so the
//! player sees everything except the order of tokens inside the bags.

use serde_json::{Value, json};

use super::forms::{describe, prompt};
use super::hex::Space;
use super::orders::standing_text;
use super::state::{Side, State};

/// The map as text rows: First Minnesota companies in capitals, Confederates in small letters,
/// each with its Str, `+` for a gun marker and `^` for the colors; `=` marks an empty objective.
pub fn map_rows(s: &State) -> Vec<String> {
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
                    format!("{l}{}{}{}", k.str.min(9), if k.gun { '+' } else { ' ' }, if k.colors { '^' } else { ' ' })
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
    let standing: Vec<String> = s.standing.iter().map(|(k, st)| format!("{k}: {}", standing_text(st))).collect();
    let mut bag: Vec<String> = s.bag.iter().map(|t| t.name()).collect();
    bag.dedup();
    json!({
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
        "columns": s.scenario.map.columns,
        "rows": s.scenario.map.rows,
        "objective": s.scenario.objective().iter().map(|p| p.name()).collect::<Vec<_>>(),
        "landmarks": s.scenario.map.landmarks,
        "hex": s.scenario.map.picture,
        "union": list(Side::Union),
        "confederate": list(Side::Confederate),
        "letters_row": s.letters_row,
        "colors_row": s.colors_row,
        "bag_size": s.bag.len(),
        "bag": bag,
        "removed": s.removed.iter().map(|t| t.name()).collect::<Vec<_>>(),
        "str_lost": s.str_lost(),
        "men_lost": s.str_lost() * s.scenario.rules.men_per_str,
        "standing": standing,
        "days": s.days,
        "next_day": s.next.as_ref().map(|n| n.title.clone()),
        "question": s.asking.filter(|_| s.outcome.is_none()).map(|_| json!({ "kind": "activation", "prompt": prompt(s) })),
        "game_over": s.outcome,
    })
}
