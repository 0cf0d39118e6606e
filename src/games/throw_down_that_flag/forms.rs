//! What the player reads and gets prefilled when a company is asked: the prompt, the help lines
//! listing the legal choices, and the default order (also the NMR default: the company passes).

use toml::Value;

use super::engine;
use super::orders::DEFAULT_RANGE;
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

/// Help lines (without `#`) listing the legal choices for the asked company.
pub fn help(s: &State) -> Vec<String> {
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
    let (c, r) = (s.scenario.map.columns, s.scenario.map.rows);
    let ends: Vec<String> =
        p.neighbors(c, r).into_iter().filter(|&q| engine::check_path(s, i, p, &[q]).is_ok()).map(|q| q.name()).collect();
    out.push(format!("Spaces it can move to first: {}", if ends.is_empty() { "none".into() } else { ends.join(", ") }));
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
    out.push("Standing orders ([orders.standing.A], or [orders.standing.all] for every company):".into());
    out.push(format!("  melee = 8, shoot = 6, range = {DEFAULT_RANGE}, move = \"nearest\" | \"hold\" | \"ask\" | \"E4\""));
    out.push("  a company with one acts without asking; an empty table clears it.".into());
    // Not the current standing orders: this text is signed and published with the order, so a form
    // copies no state of the player's into it (the report lists them).
    out.push("Your standing orders are listed in your report (YOUR STANDING ORDERS), not in this form:".into());
    out.push("the form's text is published with your order.".into());
    out
}
