//! What the player reads and gets prefilled when a company is asked: the prompt, the help lines
//! listing the legal choices, and the default order (also the NMR default: the company passes).

use toml::Value;

use super::engine;
use super::orders::{DEFAULT_RANGE, DELETE, OFF};
use super::hex::Space;
use super::state::{Side, State};
use crate::game::Orders;

pub use crate::text::wrap;

/// "company C (Str 2, gun marker, colors) at E4".
pub fn describe(s: &State, i: usize) -> String {
    let c = &s.companies[i];
    if c.at.is_none() {
        return format!("company {}: {}", c.letter, if c.broke_through { "broke through" } else { "out of the fight (Str 0)" });
    }
    let mut tags = vec![format!("Str {}", c.str)];
    tags.push(if c.gun { "gun marker".into() } else { "no gun marker".into() });
    if c.colors {
        tags.push("colors".into());
    }
    format!("company {} ({}) at {}", c.letter, tags.join(", "), c.at.map(|p| p.name()).unwrap_or_else(|| "off the map".into()))
}

/// The question for the asked company, wrapped at 94 columns.
pub fn prompt(s: &State) -> String {
    let Some(i) = s.asking else { return String::new() };
    let token = s.current.as_ref().map(|a| format!("the {} token ({} face up)", a.token.name(), a.first.name())).unwrap_or_default();
    let text = format!(
        "{}, round {} of {}: {token} activates your {}. Choose its action (Player Activations): move one or two \
         spaces, shoot, move then shoot, shoot then move, melee, move then melee, melee then move, or pass. \
         Standing orders can answer for it next time.",
        s.scenario.title,
        s.round,
        s.scenario.rules.rounds,
        describe(s, i)
    );
    wrap(&text, 94)
}

/// The NMR default and prefilled form: the asked company passes.
pub fn default_order(_: &State) -> Orders {
    let mut o = Orders::new();
    o.insert("action".into(), Value::String("pass".into()));
    o
}

/// Help lines (without `#`) listing the legal choices for the asked company, in report `wording`
/// (the form is part of the report: [`first_steps`]).
pub fn help(s: &State, wording: u32) -> Vec<String> {
    let Some(i) = s.asking else { return vec!["Nothing is asked now.".into()] };
    let Some(p) = s.companies[i].at else { return Vec::new() };
    let mut out = vec![
        format!("Company {} at {} acts now. Fields:", s.companies[i].letter, p.name()),
        format!("  action = one of {}", engine::ACTIONS.join(", ")),
        "  path = [\"E4\"] the spaces moved, in order (two for a plain move of two spaces)".into(),
        format!(
            "  target = \"C\" a Confederate company; tokens = 1 to {} (shoot) or 1 to {} (melee), from the bag",
            s.scenario.token_limit(false),
            s.scenario.token_limit(true)
        ),
    ];
    out.extend(first_steps(s, i, p, wording));
    let adj = s.adjacent_enemies(i);
    if !adj.is_empty() {
        out.push(format!(
            "In melee with: {} (no shooting; a melee hit needs successes >= target Str)",
            adj.iter().map(|&j| format!("{} Str {}", s.companies[j].letter, s.companies[j].str)).collect::<Vec<_>>().join(", ")
        ));
    } else if s.companies[i].gun {
        let mut targets: Vec<(u32, String)> = s
            .active(Side::Confederate)
            .into_iter()
            .filter_map(|j| s.companies[j].at.map(|q| (q.distance(p), format!("{} at {}", s.companies[j].letter, q.distance(p)))))
            .collect();
        targets.sort();
        let list: Vec<String> = targets.into_iter().take(4).map(|x| x.1).collect();
        out.push(format!("Nearest targets (distance; a hit needs successes >= distance): {}", list.join(", ")));
    } else {
        out.push("It has no gun marker: it cannot shoot.".into());
    }
    out.extend(standing_help(s));
    // Not the current standing orders: this text is signed and published with the order, so a form
    // copies no state of the player's into it (the report lists them).
    out.push("Your standing orders are listed in your report (YOUR STANDING ORDERS), not in this form:".into());
    out.push("the form's text is published with your order.".into());
    out
}

/// The form's line on the spaces company `i` at `p` can move to first. From report wording 4 also
/// the spaces holding a company of its own that it can move through to a free space beyond (Player
/// Activations, Move: a company "may move through a friendly company" but not end its move on
/// one; `engine::check_path` takes such a path): earlier wordings left them out, as if blocked.
fn first_steps(s: &State, i: usize, p: Space, wording: u32) -> Vec<String> {
    let (c, r) = (s.scenario.map.columns, s.scenario.map.rows);
    let list = |v: Vec<String>| if v.is_empty() { "none".to_string() } else { v.join(", ") };
    let ends: Vec<String> =
        p.neighbors(c, r).into_iter().filter(|&q| engine::check_path(s, i, p, &[q]).is_ok()).map(|q| q.name()).collect();
    let mut out = vec![format!("Spaces it can move to first: {}", list(ends))];
    if wording >= 4 {
        let through: Vec<String> = p
            .neighbors(c, r)
            .into_iter()
            .filter(|&q| s.companies.iter().any(|k| k.side == Side::Union && k.at == Some(q)))
            .filter(|&q| q.neighbors(c, r).into_iter().any(|e| engine::check_path(s, i, p, &[q, e]).is_ok()))
            .map(|q| q.name())
            .collect();
        if !through.is_empty() {
            out.push(format!("Through a company of yours (a move of two spaces, not ending there): {}", list(through)));
        }
    }
    out
}

/// The form's lines on standing orders: every field, what it makes a company do, and how a sent
/// table merges with the stored one (README "Throw Down That Flag orders").
pub fn standing_help(s: &State) -> Vec<String> {
    let shot = s.scenario.token_limit(false);
    let bag = s.scenario.token_limit(true);
    let max = s.scenario.rules.max_tokens;
    vec![
        "Standing orders answer an activation for you: [orders.standing.all] for every company,".into(),
        "[orders.standing.A] for company A (its fields override all's, one by one). Fields:".into(),
        format!("  melee = 8    next to a Confederate company: melee the weakest, pulling 8 (1 to {bag})"),
        format!("  shoot = 6    not next to one: shoot the nearest within range, pulling 6 (1 to {shot})"),
        format!("  range = {DEFAULT_RANGE}    the farthest target of that shot, 2 to {max} (default {DEFAULT_RANGE}; a hit needs"),
        "               successes >= distance; 1 would be next to it, where no company shoots)".into(),
        "  move = \"nearest\"  otherwise up to two spaces toward the nearest Confederate company,".into(),
        "               melee or shoot after one space if it then can; \"E4\": toward that space;".into(),
        "               \"hold\": stay and pass; \"ask\" (or no move): ask me".into(),
        format!("A table you send changes only the fields in it. melee/shoot = \"{OFF}\": never (even if all"),
        format!("says so); FIELD = \"{DELETE}\": remove one field (a company then follows all's); in"),
        format!("[orders.standing], A = \"{DELETE}\": remove company A's whole entry. The report says what changed."),
    ]
}
