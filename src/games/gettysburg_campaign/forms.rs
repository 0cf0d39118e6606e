//! What a player reads and gets prefilled for the pending question: the prompt, the help lines
//! listing the legal choices and fields, and the default order (also the NMR default).
//!
//! NMR defaults (no orders received): command -> the first legal play in a fixed order (plays
//! without the army commander first, then by card, upper half before lower; Lee/Meade commands the
//! first eligible corps), every commanded corps planned to stay; move -> stay (the asked corps and
//! every other commanded corps that has not moved); vacate-or-defend -> defend; combat-order -> map order;
//! fire-option -> keep every automatic hit (the plain rule); casualty -> the weakest corps;
//! retreat -> the first allowed town in map order.

use toml::Value;

use super::orders::movable;
use super::rules;
use super::scenario::army_key;
use super::side::Side;
use super::state::{FirePolicy, Question, Stage, Standing, State};
use crate::game::Orders;
use crate::text::{count, plural, wrap, wrap_lines};

/// "1 automatic hit + 2 dice".
pub fn fire_text(p: rules::FirePlan) -> String {
    format!("{} + {}", plural(p.automatic, "automatic hit"), count(p.dice, "die", "dice"))
}

/// The plain-English question for `side` (the ask's prompt), wrapped at 94 columns so that it
/// stays under 100 when indented in a report or commented out in a form.
pub fn prompt(s: &State, side: Side, q: &Question) -> String {
    WRAPPED.with(|m| m.get_or(prompt_text(s, side, q), |text| wrap(text, 94)))
}

thread_local! {
    /// Prompts already wrapped on this thread, by their text: the same few hundred come back in
    /// game after game of `pbem simulate`, and wrapping cost more than the rest of a step's ask.
    static WRAPPED: crate::memo::Memo<String, String> = crate::memo::Memo::new();
}

fn prompt_text(s: &State, side: Side, q: &Question) -> String {
    match q {
        Question::Command { .. } => {
            let (free, need) = rules::card_counts(s, side);
            let army = s.scenario.army(side);
            let or = if free < need { format!(" (or {} without {}, who is never forced)", plural(free as u32, "card"), army.army_commander) } else { String::new() };
            format!(
                "Turn {}, round {}: command phase (§6). Play {}{or} of your {} face down, {}turned so that its upper half \
                 names the commander who takes the command; commands are compulsory. Your opponent chooses at the same \
                 time and neither sees the other's cards until the initiative is rolled.",
                s.turn,
                s.round,
                plural(need as u32, "card"),
                army.cards.len(),
                if need == 1 { "" } else { "each " }
            )
        }
        Question::Move { corps, .. } => {
            let town = s.town_of(*corps).unwrap_or("?");
            let taken = s.this_round.steps.get(corps).copied().unwrap_or(0);
            let left = rules::allowed_steps(s, side, s.this_round.commands.get(side), *corps).saturating_sub(taken);
            format!(
                "Turn {}, round {}: your {} in {town} has a command and no planned move (§8). Move it along a road \
                 ({}), or let it stay.{}",
                s.turn,
                s.round,
                s.short(*corps),
                s.scenario.neighbors(town).join(", "),
                if left > 1 { " It is commanded by your army commander and may move twice: give a list of up to two towns." } else { "" }
            )
        }
        Question::VacateOrDefend { town, mover, from, options, .. } => {
            let second = matches!(s.stage, Stage::Movement { second: true, .. });
            format!(
                "{} moved from {from} into {town}, where your {} Corps stand{} (§8). Decide now: defend {town} (the enemy stops \
                 on the road, advancing on {town}, and attacks in the combat phase; more enemy corps moving in later join the \
                 attack), or vacate it, your corps moving to one of: {}.{}",
                s.label(*mover),
                s.ids(&s.in_town(side, town)),
                if s.in_town(side, town).len() == 1 { "s" } else { "" },
                options.join(", "),
                if second { "" } else { " Either way your corps there cannot move again this round." }
            )
        }
        Question::CombatOrder { towns } => format!(
            "Turn {} combat phase: there is combat at {}. As the Confederate player, choose the order in which the combats \
             are resolved (§9).",
            s.turn,
            towns.join(", ")
        ),
        Question::FireOption { town, attacking, strength, divisor, defender_hits, .. } => {
            let options = rules::fire_options(*strength, *divisor, true, s.scenario.rules.optional_fire_max_dice);
            format!(
                "Combat at {town}: you fire as the {} with strength {strength} (one automatic hit per {divisor}). The optional \
                 firing rule lets you trade automatic hits for dice (each 6 is a hit): {}.{}",
                if *attacking { "attacker" } else { "defender" },
                options.iter().map(|o| fire_text(*o)).collect::<Vec<_>>().join(", or "),
                match defender_hits {
                    Some(h) => format!(" The defender scored {}.", plural(*h, "hit")),
                    None => String::new(),
                }
            )
        }
        Question::Casualty { town, candidates, .. } => format!(
            "You lost the combat at {town} by two hits or more: remove one of your corps in it ({}) (§9 3).",
            candidates.iter().map(|&c| format!("{} strength {}", s.short(c), s.corps[c].strength)).collect::<Vec<_>>().join(", ")
        ),
        Question::Retreat { town, corps, options, .. } => format!(
            "You won the combat at {town}: the {} {} Corps {}, and you choose where{}: {} (§9 3).",
            side.other().name(),
            s.ids(corps),
            if corps.len() == 1 { "retreats" } else { "retreat" },
            if corps.len() == 1 { "" } else { " (they may split)" },
            options.join(", ")
        ),
    }
}

fn standing_lines(s: &State, side: Side) -> Vec<String> {
    let mut out: Vec<String> = vec![
        "Standing orders, [orders.standing] (optional, in any order file): a list you give replaces the".into(),
        "stored one (an empty list clears it); a table (vacate, retreat) changes only the towns it names:".into(),
        "Town = [...] sets that town's entry, Town = [] deletes it, {} deletes them all. A standing order".into(),
        "is used whenever it is still legal; otherwise you are asked. Your report says what changed.".into(),
    ];
    // Examples in the side's own corps and country.
    let (defend, vacate, casualties) = match side {
        Side::Union => ("defend = [\"Washington\"]", "vacate = { Frederick = \"Westminster\" }", "casualties = [\"XI\", \"XII\"]"),
        Side::Confederate => ("defend = [\"Fredericksburg\"]", "vacate = { Culpeper = \"Winchester\" }", "casualties = [\"III\", \"II\"]"),
    };
    let mut rows = vec![
        (defend, "towns you defend when an enemy corps moves in (§8)"),
        (vacate, "towns you vacate, and where to (first allowed) (§8)"),
        (casualties, "your corps in the order to remove them in combat (§9)"),
        ("retreat = { Gettysburg = [\"York\"] }", "as attacker: where beaten defenders of a town go (§9)"),
    ];
    if side == Side::Confederate {
        rows.push(("combat_order = [\"Gettysburg\"]", "combat order; used if it omits at most one town (§9)"));
    }
    if s.optional_fire {
        rows.push(("optional_fire = \"never\"", "\"never\", \"always\" (most dice) or \"ask\" (§9 optional rule)"));
    }
    out.extend(rows.into_iter().map(|(example, what)| format!("  {example:<38} {what}")));
    out.extend(STANDING_POINTER.iter().map(|l| l.to_string()));
    out
}

/// Where the form sends the player for their current standing orders. The form does not list them:
/// its text is signed and published verbatim once its step's orders are, and standing orders set in
/// a step withheld longer (a command step whose initiative tied stays secret until the game ends,
/// §7) would otherwise be published early with the next step's form.
const STANDING_POINTER: [&str; 2] = [
    "Your standing orders are listed in your report (YOUR STANDING ORDERS), not in this form:",
    "the form's text is published with your order.",
];

/// Standing orders as lines, one per order ("none" when there are none).
pub fn standing_list(st: &Standing) -> Vec<String> {
    let mut parts = Vec::new();
    if !st.defend.is_empty() {
        parts.push(format!("defend {}", st.defend.join(", ")));
    }
    for (t, d) in &st.vacate {
        parts.push(format!("vacate {t} to {}", d.join(" or ")));
    }
    if !st.casualties.is_empty() {
        parts.push(format!("casualties {}", st.casualties.join(", ")));
    }
    for (t, d) in &st.retreat {
        parts.push(format!("retreat from {t} to {}", d.join(" or ")));
    }
    if !st.combat_order.is_empty() {
        parts.push(format!("combat order {}", st.combat_order.join(", ")));
    }
    if let Some(f) = st.optional_fire {
        let word = match f {
            FirePolicy::Never => "never",
            FirePolicy::Always => "always",
            FirePolicy::Ask => "ask",
        };
        parts.push(format!("optional fire {word}"));
    }
    if parts.is_empty() {
        parts.push("none".into());
    }
    // Long lists (e.g. every town defended) go on continuation lines.
    // (Each part starts with a word: its wrapped lines are those of its `wrap`, none blank.)
    parts.iter().flat_map(|p| wrap_lines(p, 90).into_iter().enumerate().map(|(i, l)| if i == 0 { l } else { format!("    {l}") })).collect()
}

/// What changed from standing orders `old` to `new`, one sentence each (empty when nothing did):
/// whole lists and the firing policy as now/was, the `vacate` and `retreat` tables per town (new,
/// changed, deleted).
pub fn standing_changes(old: &Standing, new: &Standing) -> Vec<String> {
    let mut out = Vec::new();
    let list = |v: &[String]| if v.is_empty() { "none".to_string() } else { v.join(", ") };
    for (name, a, b) in [
        ("defend", &old.defend, &new.defend),
        ("casualties", &old.casualties, &new.casualties),
        ("combat order", &old.combat_order, &new.combat_order),
    ] {
        if a != b {
            out.push(format!("{name}: now {} (was {}).", list(b), list(a)));
        }
    }
    for (name, a, b) in [("vacate", &old.vacate, &new.vacate), ("retreat from", &old.retreat, &new.retreat)] {
        let towns: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
        for town in towns {
            match (a.get(town), b.get(town)) {
                (None, Some(d)) => out.push(format!("{name} {town} to {}: new.", d.join(" or "))),
                (Some(was), None) => out.push(format!("{name} {town}: deleted (was to {}).", was.join(" or "))),
                (Some(was), Some(d)) if was != d => out.push(format!("{name} {town} to {} (was to {}).", d.join(" or "), was.join(" or "))),
                _ => {}
            }
        }
    }
    if old.optional_fire != new.optional_fire {
        let word = |f: Option<FirePolicy>| match f {
            None => "not set",
            Some(FirePolicy::Never) => "never",
            Some(FirePolicy::Always) => "always",
            Some(FirePolicy::Ask) => "ask",
        };
        out.push(format!("optional fire: now {} (was {}).", word(new.optional_fire), word(old.optional_fire)));
    }
    out
}

/// `text` as help lines indented by two, wrapped with continuation lines indented by six.
fn indented(text: &str) -> Vec<String> {
    wrap(text, 92).lines().enumerate().map(|(i, l)| format!("{}{l}", if i == 0 { "  " } else { "      " })).collect()
}

fn moves_lines(s: &State, side: Side, commands: &[super::state::Command], during_command: bool) -> Vec<String> {
    let mut out = Vec::new();
    if during_command {
        out.push("moves = { I = \"Frederick\", II = \"stay\" }: optional planned moves this round for the corps".into());
        out.push("  your cards command. You are asked for a commanded corps without a plan when its turn to move".into());
        out.push("  comes; corps move in the order of your cards; the army commander's corps may have a list of".into());
        out.push("  two towns, e.g. [\"Leesburg\", \"Frederick\"]. \"stay\" for a corps without a command is ignored.".into());
        out.push("Your corps and the roads from their towns:".into());
        for t in &s.scenario.map.towns {
            let here: Vec<usize> = s.corps_of(side).into_iter().filter(|&c| s.town_of(c) == Some(t.name.as_str())).collect();
            if !here.is_empty() {
                out.extend(indented(&format!("{} Corps in {} -> {}", s.ids(&here), t.name, s.scenario.neighbors(&t.name).join(", "))));
            }
        }
        for c in s.corps_of(side).into_iter().filter(|&c| s.town_of(c).is_none()) {
            out.push(format!("  {}: {}", s.short(c), rules::command_block(s, c).unwrap_or_default()));
        }
    } else {
        let can = movable(s, side, commands);
        if !can.is_empty() {
            out.push("moves = { ... }: planned moves (or \"stay\") for your commanded corps that have not moved yet".into());
            out.push("  (\"stay\" for any other corps is ignored):".into());
            for (c, left, t) in can {
                let twice = if left > 1 { " (may move twice)" } else { "" };
                out.extend(indented(&format!("{} in {t}{twice} -> {}", s.short(c), s.scenario.neighbors(&t).join(", "))));
            }
        }
    }
    out
}

/// Help lines (without `#`) for `side`'s pending question: legal choices, fields, defaults.
pub fn help(s: &State, side: Side) -> Vec<String> {
    let Some(q) = s.question.as_ref().filter(|q| q.sides().contains(&side)) else {
        return vec![format!("Nothing is asked of the {} player now.", side.name())];
    };
    let mut out: Vec<String> = match q {
        Question::Command { .. } => command_help(s, side),
        Question::Move { corps, .. } => {
            let id = &s.corps[*corps].id;
            let mut out = vec![format!("moves = {{ {id} = \"Town\" }} or {{ {id} = \"stay\" }} (required); other commanded corps may be planned too.")];
            out.extend(moves_lines(s, side, s.this_round.commands.get(side), false));
            out.push("Default (and NMR): every corps listed stays.".into());
            out
        }
        Question::VacateOrDefend { town, options, .. } => vacate_help(s, side, town, options),
        Question::CombatOrder { towns } => vec![
            format!("combat_order = [{}]: every town in combat once, in the order to resolve them.", towns.iter().map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(", ")),
            "Default (and NMR): map order, as listed.".into(),
        ],
        Question::FireOption { strength, divisor, .. } => fire_help(s, *strength, *divisor),
        Question::Casualty { candidates, .. } => {
            vec![format!("remove = \"ID\": one of {}.", s.ids(candidates)), "Default (and NMR): the weakest corps.".into()]
        }
        Question::Retreat { corps, options, .. } => vec![
            format!("retreat_to = \"Town\" (all), or retreat_to = {{ {} }} (each corps).", corps.iter().map(|&c| format!("{} = \"{}\"", s.corps[c].id, options[0])).collect::<Vec<_>>().join(", ")),
            format!("Allowed: {}", options.join(", ")),
            "  (adjacent, no enemy corps, not along a road with an enemy corps on it).".into(),
            "Default (and NMR): the first allowed town in map order.".into(),
        ],
    };
    out.push(String::new());
    out.extend(standing_lines(s, side));
    out
}

/// Help for the command phase (§6): how many cards, each card's halves and what they command,
/// the default, then the moves that may be planned with the cards.
fn command_help(s: &State, side: Side) -> Vec<String> {
    let army = s.scenario.army(side);
    let (free, need) = rules::card_counts(s, side);
    let mut out = vec![format!(
        "cards = [..]: play exactly {}, naming {} by the commander on the half you turn up:",
        plural(need as u32, "card"),
        if need == 1 { "it" } else { "each" }
    )];
    if free < need {
        out.push(format!("  (or {} without {}: commands are compulsory only for the other halves)", plural(free as u32, "card"), army.army_commander));
    }
    for i in 0..army.cards.len() {
        let halves = [true, false].map(|upper| half_help(s, side, i, upper));
        // One line per half: "  card 1: Reynolds: ..." then "      or  Howard: ...".
        for (h, text) in halves.iter().enumerate() {
            let lead = if h == 0 { format!("card {}:", i + 1) } else { "or".into() };
            for (j, line) in text.lines().enumerate() {
                out.push(if j == 0 { format!("  {lead:<8}{line}") } else { format!("          {line}") });
            }
        }
    }
    if need > 1 {
        out.push("Two cards may not command the same corps.".into());
    }
    out.push("Default (and NMR): the first legal play, without the army commander, every commanded corps".into());
    out.push("staying.".into());
    out.extend(moves_lines(s, side, &[], true));
    out
}

/// What one half of a card does if turned up (§6): the corps it commands and where, why it cannot
/// be played, or for the army commander the corps he may command (a second line names the field).
fn half_help(s: &State, side: Side, card: usize, upper: bool) -> String {
    let army = s.scenario.army(side);
    let name = army.cards[card].half(upper);
    if rules::is_army_half(s, side, card, upper) {
        if *s.army_used.get(side) {
            return format!("{name}: already used");
        }
        let key = army_key(&army.army_commander);
        let ok: Vec<String> = s.corps_of(side).into_iter().filter(|&c| rules::command_block(s, c).is_none()).map(|c| s.corps[c].id.clone()).collect();
        return format!("{name}: any one corps ({}), moving twice, once per game;\n  name the corps too: {key} = \"{}\"", ok.join(", "), ok.first().map_or("", |x| x.as_str()));
    }
    let c = rules::half_corps(s, side, card, upper).expect("checked scenario");
    match rules::command_block(s, c) {
        None => format!("{name}: {} in {}", s.short(c), s.town_of(c).unwrap_or("?")),
        Some(why) => format!("{name}: not playable, {why}"),
    }
}

/// Help for the vacate-or-defend decision (§8) when the enemy enters `town`.
fn vacate_help(s: &State, side: Side, town: &str, options: &[String]) -> Vec<String> {
    let mut out = vec![
        "decision = \"defend\"  or  decision = \"vacate\" with vacate_to = \"Town\" (all corps), or".to_string(),
        format!("  vacate_to = {{ {} }} (each corps).", s.in_town(side, town).iter().map(|&c| format!("{} = \"{}\"", s.corps[c].id, options[0])).collect::<Vec<_>>().join(", ")),
        format!("Vacate destinations allowed: {}", options.join(", ")),
        "  (adjacent, no enemy corps, not where the enemy came from).".into(),
        format!("A standing defend/vacate order for {town} given in this file answers too."),
        "Default (and NMR): defend.".into(),
    ];
    out.extend(moves_lines(s, side, &current(s, side), false));
    out
}

/// Help for the optional firing rule (§9): each choice of automatic hits and its dice.
fn fire_help(s: &State, strength: u32, divisor: u32) -> Vec<String> {
    let options = rules::fire_options(strength, divisor, true, s.scenario.rules.optional_fire_max_dice);
    let mut out = vec!["automatic_hits = N: the automatic hits you keep; the rest become dice:".to_string()];
    for o in &options {
        out.push(format!("  automatic_hits = {} -> {}", o.automatic, fire_text(*o)));
    }
    out.push(format!("Default (and NMR): automatic_hits = {} (the plain rule).", options[0].automatic));
    out
}

fn current(s: &State, side: Side) -> Vec<super::state::Command> {
    match s.stage {
        Stage::Movement { .. } => s.this_round.commands.get(side).clone(),
        _ => Vec::new(),
    }
}

fn strs(v: &[String]) -> Value {
    Value::Array(v.iter().map(|x| Value::String(x.clone())).collect())
}

/// `{ ID = "stay", .. }` for some corps.
fn stay_table(s: &State, corps: &[usize]) -> Value {
    Value::Table(corps.iter().map(|&c| (s.corps[c].id.clone(), Value::String("stay".into()))).collect())
}

/// The default order for `side`'s pending question: always legal (see the module doc for the NMR
/// rules). Empty when nothing is asked of `side`.
pub fn default_order(s: &State, side: Side) -> Orders {
    let mut o = Orders::new();
    let Some(q) = s.question.as_ref().filter(|q| q.sides().contains(&side)) else { return o };
    match q {
        Question::Command { .. } => {
            let sel = rules::legal_selections(s, side).first().cloned().unwrap_or_default();
            let army = s.scenario.army(side);
            let names: Vec<String> = sel.iter().map(|x| army.cards[x.card].half(x.upper).to_string()).collect();
            o.insert("cards".into(), strs(&names));
            if let Some(x) = sel.iter().find(|x| rules::is_army_half(s, side, x.card, x.upper)) {
                o.insert(army_key(&army.army_commander), Value::String(s.corps[x.corps].id.clone()));
            }
            let stay: Vec<usize> = sel.iter().map(|x| x.corps).collect();
            o.insert("moves".into(), stay_table(s, &stay));
        }
        Question::Move { corps, .. } => {
            let mut stay = vec![*corps];
            stay.extend(movable(s, side, s.this_round.commands.get(side)).into_iter().map(|(c, _, _)| c).filter(|c| c != corps));
            o.insert("moves".into(), stay_table(s, &stay));
        }
        Question::VacateOrDefend { .. } => {
            o.insert("decision".into(), Value::String("defend".into()));
        }
        Question::CombatOrder { towns } => {
            o.insert("combat_order".into(), strs(towns));
        }
        Question::FireOption { strength, divisor, .. } => {
            let plain = rules::fire_options(*strength, *divisor, false, s.scenario.rules.optional_fire_max_dice)[0];
            o.insert("automatic_hits".into(), Value::Integer(plain.automatic as i64));
        }
        Question::Casualty { candidates, .. } => {
            o.insert("remove".into(), Value::String(s.corps[rules::weakest(s, candidates)].id.clone()));
        }
        Question::Retreat { options, .. } => {
            o.insert("retreat_to".into(), Value::String(options[0].clone()));
        }
    }
    o
}
