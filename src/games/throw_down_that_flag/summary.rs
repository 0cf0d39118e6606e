//! The short account of a step played by standing orders: one line per activation token (both
//! sides' activations and what came of them), shown above the full account of every draw.

use super::rules::{AttackKind, Plan, Tally};
use super::state::{Company, Side, State};

/// What an activation's line compares with: the companies and the colors before it (cheaper
/// than the whole state, taken once per activation).
pub struct Before {
    companies: Vec<Company>,
    colors_taken: bool,
}

impl Before {
    /// Takes the snapshot.
    pub fn of(s: &State) -> Before {
        Before { companies: s.companies.clone(), colors_taken: s.colors_taken }
    }
}

/// Starts the line of the token just pulled (`s.current`).
pub fn open_token(s: &mut State) {
    if let Some(a) = &s.current {
        let line = format!("Round {}, the {} token, {} side up:", s.round, a.token.name(), a.first.name());
        s.summary.push(line);
    }
}

/// A line of its own (a token removed, a bag reset, a day's end).
pub fn line(s: &mut State, text: String) {
    s.summary.push(text);
}

/// Adds one activation to the current token's line; a token pulled in an earlier step (the step
/// began with its answer) first gets a line saying so.
pub fn part(s: &mut State, text: String) {
    if s.summary.is_empty() {
        let token = s.current.as_ref().map(|a| a.token.name()).unwrap_or_default();
        s.summary.push(format!("Round {}, the {token} token (pulled in the step before):", s.round));
    }
    if let Some(last) = s.summary.last_mut() {
        last.push_str(if last.ends_with(':') { " " } else { "; " });
        last.push_str(&text);
    }
}

fn short(companies: &[Company], i: usize) -> String {
    let c = &companies[i];
    match c.side {
        Side::Union => format!("your {}", c.letter),
        Side::Confederate => format!("Confederate {}", c.letter),
    }
}

/// A Confederate company's activation: where it went.
pub fn confederate(before: &Before, after: &State, i: usize) -> String {
    let (from, c) = (before.companies[i].at.map(|p| p.name()).unwrap_or_default(), &after.companies[i]);
    match c.at {
        _ if c.broke_through => format!("{} breaks through ({} of {})", short(&after.companies, i), after.breakthroughs(), after.scenario.rules.breakthrough),
        Some(p) if p.name() != from => format!("{} advances {from}-{}", short(&after.companies, i), p.name()),
        _ => format!("{} holds at {from}", short(&after.companies, i)),
    }
}

/// A First Minnesota activation (Player Activations): the action (`source`: whose order), the pull
/// and what came of it. From report wording 4 what the attack did comes right after it, cause
/// before effect: the target's loss, then the company's own, each followed by its colors passing,
/// then the guns (a tester read "the colors pass to your D, your A out of the fight" backwards,
/// and "a hit, then moves to E4 (...)" as if the move did it); a move after the attack comes
/// last; a miss is "a miss" ("no hit" read as the whole exchange's result). E.g. "your A (your
/// order) shoots at Confederate E (distance 2), 10 tokens: successes 2:3, flames 2:2, a hit
/// (Confederate E down to Str 1, your A out of the fight, the First Minnesota colors pass to your
/// D, your A's gun overheats), then moves to E4".
pub fn union(before: &Before, after: &State, i: usize, plan: &Plan, tally: Option<Tally>, source: &str, wording: u32) -> String {
    let mut text = format!("{} ({source})", short(&before.companies, i));
    if plan.action() == "pass" {
        return text + " passes";
    }
    let from = before.companies[i].at;
    if let (Some(f), false) = (from, plan.before.is_empty()) {
        text.push_str(&format!(" moves {}-{}", f.name(), names(&plan.before)));
    }
    let plain = wording >= 4;
    if let Some(a) = plan.attack {
        text.push_str(&attack(before, after, plan, from, a, tally, if plain { "a miss" } else { "no hit" }));
    }
    let then = match (plan.after.is_empty(), after.companies[i].at) {
        (false, Some(p)) => format!(", then moves to {}", p.name()),
        _ => String::new(),
    };
    let results = if plain {
        consequences_in(before, after, plan.attack.map(|a| a.target).into_iter().chain([i]))
    } else {
        text.push_str(&then);
        consequences(before, after)
    };
    if !results.is_empty() {
        text.push_str(&format!(" ({})", results.join(", ")));
    }
    if plain {
        text.push_str(&then);
    }
    text
}

/// Spaces as `E2-E3-E4`.
fn names(v: &[super::hex::Space]) -> String {
    v.iter().map(|p| p.name()).collect::<Vec<_>>().join("-")
}

/// An attack's clause of [`union`]: target, tokens, the pull and whether it hit (`miss`: the
/// wording of a miss, "a miss" from report wording 4, "no hit" before).
fn attack(before: &Before, after: &State, plan: &Plan, from: Option<super::hex::Space>, a: super::rules::Attack, tally: Option<Tally>, miss: &str) -> String {
    let pos = plan.before.last().copied().or(from);
    let d = pos.zip(before.companies[a.target].at).map_or(0, |(p, q)| p.distance(q));
    let verb = if plan.before.is_empty() { "" } else { ", then" };
    let mut text = match a.kind {
        AttackKind::Shoot => format!("{verb} shoots at {} (distance {d}), {} tokens", short(&before.companies, a.target), a.tokens),
        AttackKind::Melee => format!("{verb} melees {} (Str {}), {} tokens", short(&before.companies, a.target), before.companies[a.target].str, a.tokens),
    };
    if let Some(t) = tally {
        text.push_str(&format!(": successes {}:{}, flames {}:{}", t.union_success, t.confederate_success, t.union_flame, t.confederate_flame));
    }
    let hit = after.companies[a.target].str < before.companies[a.target].str;
    text.push_str(", ");
    text.push_str(if hit { "a hit" } else { miss });
    text
}

/// [`consequences`] in the order of report wording 4: the companies of `first` (the target, then
/// the acting company), then the others; each company's loss followed by its colors passing (or
/// being taken); the guns that overheat last, in the same order.
fn consequences_in(before: &Before, after: &State, first: impl Iterator<Item = usize>) -> Vec<String> {
    let mut order: Vec<usize> = Vec::new();
    for j in first.chain(0..after.companies.len()) {
        if !order.contains(&j) {
            order.push(j);
        }
    }
    let (b, a) = (&before.companies, &after.companies);
    let mut out = Vec::new();
    for &j in &order {
        if a[j].str < b[j].str {
            out.push(if a[j].str == 0 { format!("{} out of the fight", short(a, j)) } else { format!("{} down to Str {}", short(a, j), a[j].str) });
        }
        if b[j].colors && !a[j].colors {
            out.extend(colors_after(before, after, j));
        }
    }
    out.extend(order.iter().filter(|&&j| b[j].gun && !a[j].gun).map(|&j| format!("{}'s gun overheats", short(a, j))));
    out
}

/// What became of the colors company `j` held before and holds no more: taken, or passed.
fn colors_after(before: &Before, after: &State, j: usize) -> Option<String> {
    let side = after.companies[j].side;
    if side == Side::Confederate && after.colors_taken && !before.colors_taken {
        return Some("THE CONFEDERATE COLORS ARE TAKEN".into());
    }
    let heir = (0..after.companies.len()).find(|&k| after.companies[k].side == side && after.companies[k].colors && !before.companies[k].colors)?;
    Some(format!("the {} colors pass to {}", side.name(), short(&after.companies, heir)))
}

/// What changed on the field between two states: Str lost, companies out, gun markers lost,
/// colors passed or taken.
fn consequences(before: &Before, after: &State) -> Vec<String> {
    let mut out = Vec::new();
    for (j, (b, a)) in before.companies.iter().zip(&after.companies).enumerate() {
        if a.str < b.str {
            out.push(if a.str == 0 { format!("{} out of the fight", short(&after.companies, j)) } else { format!("{} down to Str {}", short(&after.companies, j), a.str) });
        }
        if b.gun && !a.gun {
            out.push(format!("{}'s gun overheats", short(&after.companies, j)));
        }
        if a.colors && !b.colors {
            out.push(format!("the {} colors pass to {}", a.side.name(), short(&after.companies, j)));
        }
    }
    if after.colors_taken && !before.colors_taken {
        out.push("THE CONFEDERATE COLORS ARE TAKEN".into());
    }
    out
}
