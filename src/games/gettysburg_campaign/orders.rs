//! Reading and checking a side's `[orders]` table for the pending question: the direct answer,
//! planned moves and standing orders, with every problem reported against its field.
//!
//! Fields (all optional unless the pending question needs them):
//! - `cards = ["Reynolds", "Hancock"]` (command): the card halves played upward, each naming its
//!   commander (§6); with the army commander's half also `lee = "II"` / `meade = "VI"`.
//! - `moves = { I = "Gettysburg", II = "stay" }`: planned moves this round for commanded corps
//!   ("stay" for a corps with no move to make is accepted and ignored; a move for it is an error);
//!   the army commander's corps may take a list of two towns (§8); if its plan names one town it
//!   moves once and is not asked for the second move. Corps move in the order of the cards played;
//!   a plan that is no longer possible when its turn comes is dropped and the player asked.
//! - `decision = "defend"` or `"vacate"` with `vacate_to = "Town"` or `{ XI = "Town", .. }`
//!   (vacate-or-defend, §8).
//! - `combat_order = ["Gettysburg", "Frederick"]` (combat-order, §9).
//! - `automatic_hits = N` (fire-option, §9 optional rule).
//! - `remove = "XI"` (casualty, §9 3).
//! - `retreat_to = "Town"` or `{ XI = "Town", .. }` (retreat, §9 3).
//! - `[orders.standing]`: `defend`, `vacate`, `casualties`, `retreat`, `combat_order`,
//!   `optional_fire` (see [`Standing`]); a given list replaces the stored one, a given table
//!   (`vacate`, `retreat`) changes only the towns it names (`Town = []` deletes one; `{}` clears all).

use std::collections::BTreeMap;

use toml::Value;

use super::engine::{self, Direct, VacateChoice};
use super::rules;
use super::scenario::army_key;
use super::side::Side;
use super::state::{Command, FirePolicy, Question, Stage, Standing, State};
use crate::game::{OrderProblem, Orders, Problems};

/// A checked order: what to store and what answers the pending question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// The cards played (command question only).
    pub commands: Option<Vec<Command>>,
    /// Planned moves by corps index (empty = stay).
    pub plans: BTreeMap<usize, Vec<String>>,
    /// The side's standing orders after this file's changes (the stored ones, shared, when the
    /// file changes none).
    pub standing: std::sync::Arc<Standing>,
    /// Whether the file gave `[orders.standing]`.
    pub standing_given: bool,
    /// The direct answer to the pending question, if the file gives one.
    pub direct: Option<Direct>,
}

/// Strings from a string or an array of strings.
fn strings(v: &Value) -> Option<Vec<String>> {
    match v {
        Value::String(s) => Some(vec![s.clone()]),
        Value::Array(a) => a.iter().map(|x| x.as_str().map(str::to_string)).collect(),
        _ => None,
    }
}

fn list(items: &[String]) -> String {
    if items.is_empty() { "(none)".into() } else { items.join(", ") }
}

/// The keys a side's order may have for question `q` (besides `standing` and `moves`).
fn answer_keys(s: &State, side: Side, q: &Question) -> Vec<String> {
    match q {
        Question::Command { .. } => vec!["cards".into(), army_key(&s.scenario.army(side).army_commander)],
        Question::Move { .. } => vec![],
        Question::VacateOrDefend { .. } => vec!["decision".into(), "vacate_to".into()],
        Question::CombatOrder { .. } => vec!["combat_order".into()],
        Question::FireOption { .. } => vec!["automatic_hits".into()],
        Question::Casualty { .. } => vec!["remove".into()],
        Question::Retreat { .. } => vec!["retreat_to".into()],
    }
}

/// Commanded corps of `side` that may still be given planned moves: (corps, moves left, town).
pub fn movable(s: &State, side: Side, commands: &[Command]) -> Vec<(usize, u32, String)> {
    commands
        .iter()
        .filter_map(|x| {
            let c = x.corps;
            if s.this_round.finished.contains(&c) || s.this_round.locked.contains(&c) || s.this_round.entry.as_ref().is_some_and(|e| e.mover == c) {
                return None;
            }
            let town = s.town_of(c)?.to_string();
            // Corps in a town awaiting their own vacate-or-defend decision during the enemy's
            // (initiative) movement will not move this round either way (§8).
            let deciding = s.this_round.entry.as_ref().is_some_and(|e| {
                e.to == town && s.corps[e.mover].side != side && matches!(s.stage, Stage::Movement { second: false, .. })
            });
            if deciding {
                return None;
            }
            let left = rules::allowed_steps(s, side, commands, c).saturating_sub(s.this_round.steps.get(&c).copied().unwrap_or(0));
            (left > 0).then_some((c, left, town))
        })
        .collect()
}

/// The commands in force for `side` outside the command question (revealed this round).
fn current_commands(s: &State, side: Side) -> Vec<Command> {
    match s.stage {
        Stage::Movement { .. } => s.this_round.commands.get(side).clone(),
        _ => Vec::new(),
    }
}

/// Checks `orders` of `side` against the pending question and reads them.
///
/// Errors: every problem found, each naming its field (`cards`, `moves.I`, `standing.defend`, ...)
/// and saying what is accepted.
pub fn parse(s: &State, side: Side, orders: &Orders) -> Result<Parsed, Vec<OrderProblem>> {
    let mut p = Problems::new();
    let Some(q) = s.question.as_ref().filter(|q| q.sides().contains(&side)) else {
        return Err(vec![OrderProblem::new("", format!("nothing is asked of the {} player now", side.name()))]);
    };
    unknown_fields(s, side, q, orders, &mut p);
    let (standing, standing_given) = match orders.get("standing") {
        Some(v) => (std::sync::Arc::new(parse_standing(s, side, v, &mut p)), true),
        None => (s.standing.get(side).clone(), false),
    };
    let commands = match q {
        Question::Command { .. } => parse_cards(s, side, orders, &mut p),
        _ => None,
    };
    let in_force = match &commands {
        Some(c) => c.clone(),
        None if matches!(q, Question::Command { .. }) => Vec::new(),
        None => current_commands(s, side),
    };
    let cards_ok = commands.is_some() || !matches!(q, Question::Command { .. });
    let plans = match orders.get("moves") {
        Some(v) if cards_ok => parse_moves(s, side, &in_force, v, &mut p),
        _ => BTreeMap::new(),
    };
    let direct = parse_direct(s, side, q, orders, &mut p);
    let given = Given { orders, standing: &standing, plans: &plans, direct: &direct };
    check_answered(s, side, q, &given, &mut p);
    p.finish(Parsed { commands, plans, standing, standing_given, direct })
}

/// A problem for each field of `orders` that question `q` does not take.
fn unknown_fields(s: &State, side: Side, q: &Question, orders: &Orders, p: &mut Problems) {
    let answers = answer_keys(s, side, q);
    for key in orders.keys() {
        if key != "standing" && key != "moves" && !answers.contains(key) {
            let mut ok: Vec<String> = answers.clone();
            ok.push("moves".into());
            ok.push("standing".into());
            p.add(key, format!("unknown field `{key}` for this question ({}); accepted here: {}", q.kind(), ok.join(", ")));
        }
    }
}

/// What an order file gave, read: its fields, the standing orders after it, its planned moves and
/// its direct answer.
struct Given<'a> {
    orders: &'a Orders,
    standing: &'a Standing,
    plans: &'a BTreeMap<usize, Vec<String>>,
    direct: &'a Option<Direct>,
}

/// A problem when the question is left unanswered: neither the file's direct answer nor the
/// (updated) standing orders answer it.
fn check_answered(s: &State, side: Side, q: &Question, g: &Given, p: &mut Problems) {
    let (orders, standing, unanswered) = (g.orders, g.standing, g.direct.is_none());
    match q {
        Question::Command { .. } => {
            if !orders.contains_key("cards") {
                p.add("cards", "missing: give the card halves you play, e.g. cards = [\"...\"]");
            }
        }
        Question::Move { corps, .. } => {
            if !g.plans.contains_key(corps) && !p.iter().any(|x| x.field.starts_with("moves")) {
                let id = &s.corps[*corps].id;
                p.add(format!("moves.{id}"), format!("missing: give a move for {id} Corps, or \"stay\""));
            }
        }
        Question::VacateOrDefend { town, options, .. } => {
            if unanswered && !orders.contains_key("decision") && engine::standing_vacate(standing, s, side, town, options).is_none() {
                p.add("decision", format!("missing: give decision = \"defend\" or \"vacate\" for {town}"));
            }
        }
        Question::CombatOrder { towns } => {
            if unanswered && !orders.contains_key("combat_order") && engine::standing_combat_order(standing, towns).is_none() {
                p.add("combat_order", format!("missing: list the towns in combat in the order to resolve them: {}", list(towns)));
            }
        }
        Question::FireOption { strength, divisor, .. } => {
            let options = rules::fire_options(*strength, *divisor, true, s.scenario.rules.optional_fire_max_dice);
            if unanswered && !orders.contains_key("automatic_hits") && engine::standing_fire(standing, &options).is_none() {
                p.add("automatic_hits", "missing: give the number of automatic hits to keep");
            }
        }
        Question::Casualty { candidates, .. } => {
            if unanswered && !orders.contains_key("remove") && rules::pick_casualty(s, &standing.casualties, candidates).is_none() {
                p.add("remove", format!("missing: name the corps to remove: {}", s.ids(candidates)));
            }
        }
        Question::Retreat { town, corps, options, .. } => {
            if !orders.contains_key("retreat_to") {
                check_retreats(s, standing, g.direct, town, corps, options, p);
            }
        }
    }
}

/// A problem naming the retreating corps that neither `direct` nor the standing retreat list for
/// `town` sends to a town.
fn check_retreats(s: &State, standing: &Standing, direct: &Option<Direct>, town: &str, corps: &[usize], options: &[String], p: &mut Problems) {
    let given: Vec<usize> = match direct {
        Some(Direct::Retreat(v)) => v.iter().map(|(c, _)| *c).collect(),
        _ => Vec::new(),
    };
    let missing: Vec<usize> = corps
        .iter()
        .copied()
        .filter(|c| !given.contains(c) && engine::standing_retreat(standing, town, options).is_none())
        .collect();
    if !missing.is_empty() {
        p.add("retreat_to", format!("missing: give where {} Corps retreat{} to: {}", s.ids(&missing), if missing.len() == 1 { "s" } else { "" }, list(options)));
    }
}

/// §6: the card halves played, checked against compulsory commands.
fn parse_cards(s: &State, side: Side, orders: &Orders, p: &mut Problems) -> Option<Vec<Command>> {
    let army = s.scenario.army(side);
    let key = army_key(&army.army_commander);
    let before = p.len();
    let names = match orders.get("cards") {
        None => return None,
        Some(v) => match v.as_array().and_then(|_| strings(v)) {
            Some(n) => n,
            None => {
                p.add("cards", "must be a list of card halves, e.g. cards = [\"Reynolds\", \"Hancock\"]");
                return None;
            }
        },
    };
    let mut cmds: Vec<Command> = Vec::new();
    let mut army_played = false;
    for name in &names {
        match card_command(s, side, orders, name, &cmds, &mut army_played) {
            Ok(x) => cmds.push(x),
            Err((field, message)) => p.add(field, message),
        }
    }
    if !army_played && orders.contains_key(&key) {
        p.add(&key, format!("you name a corps for {} but do not play his card half", army.army_commander));
    }
    if p.len() == before && !rules::legal_count(s, side, &cmds) {
        p.add("cards", count_problem(s, side));
    }
    (p.len() == before).then_some(cmds)
}

/// The command one card half named in `cards` gives (§6), or its problem (field, message);
/// `army_played` is set when it is the army commander's half.
fn card_command(s: &State, side: Side, orders: &Orders, name: &str, cmds: &[Command], army_played: &mut bool) -> Result<Command, (String, String)> {
    let army = s.scenario.army(side);
    let found = army.cards.iter().enumerate().find_map(|(i, c)| {
        if c.upper.eq_ignore_ascii_case(name.trim()) {
            Some((i, true))
        } else if c.lower.eq_ignore_ascii_case(name.trim()) {
            Some((i, false))
        } else {
            None
        }
    });
    let Some((card, upper)) = found else {
        let halves: Vec<String> = army.cards.iter().map(|c| format!("{} | {}", c.upper, c.lower)).collect();
        return Err(("cards".into(), format!("\"{name}\" is not on any of your cards; your cards (upper | lower): {}", halves.join("; "))));
    };
    if cmds.iter().any(|x| x.card == card) {
        return Err(("cards".into(), format!("\"{name}\" is on a card you already play; play each card once, with one half up (§6)")));
    }
    let army_half = rules::is_army_half(s, side, card, upper);
    let corps = if army_half {
        *army_played = true;
        army_corps(s, side, orders)?
    } else {
        rules::half_corps(s, side, card, upper).expect("scenario checked: every half names a commander")
    };
    if let Some(why) = rules::command_block(s, corps) {
        let field = if army_half { army_key(&army.army_commander) } else { "cards".into() };
        return Err((field, format!("{} cannot take a command: {why}", s.short(corps))));
    }
    if cmds.iter().any(|x| x.corps == corps) {
        return Err(("cards".into(), format!("two cards command {}; each corps takes at most one command", s.short(corps))));
    }
    Ok(Command { card, upper, corps })
}

/// The corps the army commander's half commands (§6): the one the file names under his key
/// (`lee`, `meade`), or the problem (field, message), also when he has been used.
fn army_corps(s: &State, side: Side, orders: &Orders) -> Result<usize, (String, String)> {
    let army = s.scenario.army(side);
    let key = army_key(&army.army_commander);
    if *s.army_used.get(side) {
        return Err(("cards".into(), format!("{} has already been used; he may be used once per game (§6)", army.army_commander)));
    }
    let Some(id) = orders.get(&key).and_then(Value::as_str) else {
        let message = format!("you play {}: name the corps he commands, e.g. {key} = \"{}\"", army.army_commander, s.corps[s.corps_of(side)[0]].id);
        return Err((key, message));
    };
    s.corps_named(side, id).ok_or_else(|| (key, format!("no {} corps \"{id}\"; your corps: {}", side.name(), s.ids(&s.corps_of(side)))))
}

/// The problem of a play with the wrong number of cards (§6): how many must be played, and why
/// fewer when fewer are playable.
fn count_problem(s: &State, side: Side) -> String {
    let army = s.scenario.army(side);
    let (free, most) = rules::card_counts(s, side);
    let why = if most < army.cards_to_play as usize {
        format!(" (only {most} can be played: the other halves name corps that cannot take a command)")
    } else {
        String::new()
    };
    let cards = |n: usize| format!("{n} card{}", if n == 1 { "" } else { "s" });
    let or = if free < most { format!(", or {} without {}, who is never forced", cards(free), army.army_commander) } else { String::new() };
    format!("you must play {}{why}{or}; commands are compulsory (§6)", cards(most))
}

/// Why corps `c` cannot pass `listed` towns with `left` moves left this round (§8: the army
/// commander's corps moves twice, any other commanded corps once); said for the corps it is, so
/// the army commander's own corps is never told only his corps moves twice (tester20 T20c-4).
fn too_many_towns(s: &State, side: Side, commands: &[Command], c: usize, left: u32, listed: usize) -> String {
    let times = |n: u32| if n == 1 { "once".to_string() } else { format!("{n} times") };
    let why = match rules::allowed_steps(s, side, commands, c) {
        2 if left < 2 => "the army commander's corps moves twice a round and it has moved once already (§8)",
        2 => "the army commander's corps moves at most twice a round (§8)",
        _ => "a corps commander's corps moves once a round; only the army commander's corps moves twice (§8)",
    };
    format!("{} may move {} now and you listed {listed} towns: {why}", s.short(c), times(left))
}

/// Whether a planned move is "stay" (any case).
fn is_stay(v: &Value) -> bool {
    v.as_str().is_some_and(|x| x.trim().eq_ignore_ascii_case("stay"))
}

/// §8: planned moves of commanded corps, each a town (or list) along roads, or "stay".
fn parse_moves(s: &State, side: Side, commands: &[Command], v: &Value, p: &mut Problems) -> BTreeMap<usize, Vec<String>> {
    let mut out = BTreeMap::new();
    let Some(table) = v.as_table() else {
        p.add("moves", "must be a table, e.g. moves = { I = \"Gettysburg\", II = \"stay\" }");
        return out;
    };
    let can = movable(s, side, commands);
    let mut seen = Vec::new();
    for (key, val) in table {
        let f = format!("moves.{key}");
        let Some(c) = s.corps_named(side, key) else {
            p.add(&f, format!("no {} corps \"{key}\"; your corps: {}", side.name(), s.ids(&s.corps_of(side))));
            continue;
        };
        if seen.contains(&c) {
            p.add("moves", format!("{} is listed twice; give each once", s.corps[c].id));
            continue;
        }
        seen.push(c);
        let Some((_, left, town)) = can.iter().find(|(x, _, _)| *x == c) else {
            // "stay" for a corps that has no move to make (e.g. a line of the prefilled form kept
            // after changing the cards) is what will happen anyway: accepted and ignored.
            if is_stay(val) {
                continue;
            }
            let ids: Vec<usize> = can.iter().map(|(x, _, _)| *x).collect();
            p.add(&f, format!("{} has no move to make now (it needs a command this round and must not have moved, vacated or defended); corps you may move: {}", s.short(c), list(&ids.iter().map(|&x| s.corps[x].id.clone()).collect::<Vec<_>>())));
            continue;
        };
        let towns = match val {
            _ if is_stay(val) => Vec::new(),
            _ => match strings(val) {
                Some(t) => t,
                None => {
                    p.add(&f, "must be a town, a list of towns, or \"stay\"");
                    continue;
                }
            },
        };
        if towns.len() as u32 > *left {
            p.add(&f, too_many_towns(s, side, commands, c, *left, towns.len()));
            continue;
        }
        let mut at = town.clone();
        let mut path = Vec::new();
        for typed in &towns {
            let Some(name) = s.scenario.town_named(typed) else {
                p.add(&f, format!("unknown town \"{typed}\"; from {at} the roads lead to: {}", list(&s.scenario.neighbors(&at))));
                break;
            };
            if !s.scenario.adjacent(&at, name) {
                p.add(&f, format!("no road from {at} to {name}; from {at} the roads lead to: {}", list(&s.scenario.neighbors(&at))));
                break;
            }
            at = name.to_string();
            path.push(at.clone());
        }
        if path.len() == towns.len() {
            out.insert(c, path);
        }
    }
    out
}

/// The answer fields of the pending question.
fn parse_direct(s: &State, side: Side, q: &Question, orders: &Orders, p: &mut Problems) -> Option<Direct> {
    match q {
        Question::VacateOrDefend { town, options, .. } => {
            let holders = s.in_town(side, town);
            let decision = orders.get("decision")?;
            match decision.as_str().map(|d| d.trim().to_lowercase()).as_deref() {
                Some("defend") => {
                    if orders.contains_key("vacate_to") {
                        p.add("vacate_to", "you decided to defend; remove vacate_to (or decide \"vacate\")");
                        return None;
                    }
                    Some(Direct::Vacate(VacateChoice::Defend))
                }
                Some("vacate") => {
                    let Some(v) = orders.get("vacate_to") else {
                        p.add("vacate_to", format!("missing: where your corps go, one of: {}", list(options)));
                        return None;
                    };
                    let dests = per_corps(s, side, &holders, v, options, "vacate_to", p)?;
                    Some(Direct::Vacate(VacateChoice::Vacate(dests)))
                }
                _ => {
                    p.add("decision", "must be \"defend\" or \"vacate\"");
                    None
                }
            }
        }
        Question::CombatOrder { towns } => {
            let v = orders.get("combat_order")?;
            let Some(names) = v.as_array().and_then(|_| strings(v)) else {
                p.add("combat_order", "must be a list of towns");
                return None;
            };
            let mut order = Vec::new();
            for n in &names {
                match s.scenario.town_named(n).filter(|t| towns.iter().any(|x| x == t)) {
                    Some(t) if !order.iter().any(|x: &String| x == t) => order.push(t.to_string()),
                    Some(t) => p.add("combat_order", format!("{t} is listed twice")),
                    None => p.add("combat_order", format!("\"{n}\" is not a town in combat; the towns are: {}", list(towns))),
                }
            }
            if order.len() != towns.len() {
                p.add("combat_order", format!("list every town in combat once: {}", list(towns)));
                return None;
            }
            Some(Direct::CombatOrder(order))
        }
        Question::FireOption { strength, divisor, .. } => {
            let v = orders.get("automatic_hits")?;
            let options = rules::fire_options(*strength, *divisor, true, s.scenario.rules.optional_fire_max_dice);
            let ok: Vec<String> = options.iter().map(|o| o.automatic.to_string()).collect();
            match v.as_integer().filter(|&n| options.iter().any(|o| o.automatic as i64 == n)) {
                Some(n) => Some(Direct::Fire(n as u32)),
                None => {
                    p.add("automatic_hits", format!("must be one of {}", ok.join(", ")));
                    None
                }
            }
        }
        Question::Casualty { candidates, .. } => {
            let v = orders.get("remove")?;
            match v.as_str().and_then(|id| s.corps_named(side, id)).filter(|c| candidates.contains(c)) {
                Some(c) => Some(Direct::Casualty(c)),
                None => {
                    p.add("remove", format!("must name one of your corps in this combat: {}", s.ids(candidates)));
                    None
                }
            }
        }
        Question::Retreat { corps, options, .. } => {
            let v = orders.get("retreat_to")?;
            let enemy = side.other();
            let dests = per_corps(s, enemy, corps, v, options, "retreat_to", p)?;
            Some(Direct::Retreat(dests))
        }
        Question::Command { .. } | Question::Move { .. } => None,
    }
}

/// A destination for every corps of `owner` in `corps`: one town for all, or a table by corps id
/// that must cover them all.
fn per_corps(s: &State, owner: Side, corps: &[usize], v: &Value, options: &[String], field: &str, p: &mut Problems) -> Option<Vec<(usize, String)>> {
    let dest = |typed: &str, f: &str, p: &mut Problems| -> Option<String> {
        match s.scenario.town_named(typed).filter(|t| options.iter().any(|o| o == t)) {
            Some(t) => Some(t.to_string()),
            None => {
                p.add(f, format!("\"{typed}\" is not allowed; choose one of: {}", list(options)));
                None
            }
        }
    };
    match v {
        Value::String(town) => {
            let d = dest(town, field, p)?;
            Some(corps.iter().map(|&c| (c, d.clone())).collect())
        }
        Value::Table(t) => {
            let mut out = Vec::new();
            let before = p.len();
            for (id, to) in t {
                let f = format!("{field}.{id}");
                let Some(c) = s.corps_named(owner, id).filter(|c| corps.contains(c)) else {
                    p.add(&f, format!("\"{id}\" is not one of the corps concerned: {}", s.ids(corps)));
                    continue;
                };
                if out.iter().any(|(x, _)| *x == c) {
                    p.add(field, format!("{} is listed twice; give each once", s.corps[c].id));
                    continue;
                }
                match to.as_str() {
                    Some(town) => {
                        if let Some(d) = dest(town, &f, p) {
                            out.push((c, d));
                        }
                    }
                    None => p.add(&f, "must be a town"),
                }
            }
            if p.len() == before && out.len() != corps.len() {
                p.add(field, format!("give a town for each of {} Corps", s.ids(corps)));
            }
            (p.len() == before).then_some(out)
        }
        _ => {
            p.add(field, format!("must be a town, or a table of towns by corps, e.g. {{ {} = \"{}\" }}", s.corps[corps[0]].id, options[0]));
            None
        }
    }
}

/// Reports every item of `items` (canonical spellings) given more than once, once each.
fn no_duplicates(items: &[String], f: &str, p: &mut Problems) {
    for (i, x) in items.iter().enumerate() {
        if items[..i].iter().filter(|y| *y == x).count() == 1 {
            p.add(f, format!("{x} is listed twice; give each once"));
        }
    }
}

/// Towns from a standing-order value, checked to exist and to be listed once (canonical spelling).
fn towns_of(s: &State, v: &Value, f: &str, p: &mut Problems) -> Vec<String> {
    let Some(names) = strings(v) else {
        p.add(f, "must be a list of towns");
        return Vec::new();
    };
    let mut out = Vec::new();
    for n in names {
        match s.scenario.town_named(&n) {
            Some(t) => out.push(t.to_string()),
            None => p.add(f, format!("unknown town \"{n}\"; towns: {}", list(&s.scenario.map.towns.iter().map(|t| t.name.clone()).collect::<Vec<_>>()))),
        }
    }
    no_duplicates(&out, f, p);
    out
}

/// A table `town -> town or [towns]`, each listed town adjacent to its key town.
fn town_table(s: &State, v: &Value, f: &str, p: &mut Problems) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let Some(t) = v.as_table() else {
        p.add(f, "must be a table, e.g. { Frederick = [\"Westminster\", \"Baltimore\"] }");
        return out;
    };
    for (key, val) in t {
        let fk = format!("{f}.{key}");
        let Some(town) = s.scenario.town_named(key) else {
            p.add(&fk, format!("unknown town \"{key}\""));
            continue;
        };
        if out.contains_key(town) {
            p.add(f, format!("{town} is listed twice; give each once"));
            continue;
        }
        let dests = towns_of(s, val, &fk, p);
        for d in &dests {
            if !s.scenario.adjacent(town, d) {
                p.add(&fk, format!("no road from {town} to {d}; the roads lead to: {}", list(&s.scenario.neighbors(town))));
            }
        }
        out.insert(town.to_string(), dests);
    }
    out
}

/// Merges a sent town table into the stored one entry by entry: each town given replaces its own
/// entry, `Town = []` deletes it, the towns not given keep theirs; an empty table (`{}`) clears
/// every entry.
fn merge_table(stored: &mut BTreeMap<String, Vec<String>>, given: BTreeMap<String, Vec<String>>) {
    if given.is_empty() {
        stored.clear();
    }
    for (town, dests) in given {
        if dests.is_empty() {
            stored.remove(&town);
        } else {
            stored.insert(town, dests);
        }
    }
}

/// The changes an `[orders.standing]` table makes, read (towns and corps ids in their canonical
/// spelling): each field given, or None. The built-in players give theirs in this form.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StandingUpdate {
    /// `defend`: replaces the list, and drops its towns from `vacate`.
    pub defend: Option<Vec<String>>,
    /// `vacate`: merged by town ([`merge_table`]), its towns then leave `defend`.
    pub vacate: Option<BTreeMap<String, Vec<String>>>,
    /// `casualties`: replaces the list.
    pub casualties: Option<Vec<String>>,
    /// `retreat`: merged by town.
    pub retreat: Option<BTreeMap<String, Vec<String>>>,
    /// `combat_order` (Confederates only): replaces the list.
    pub combat_order: Option<Vec<String>>,
    /// `optional_fire`: replaces the choice.
    pub optional_fire: Option<FirePolicy>,
}

impl StandingUpdate {
    /// True when it changes nothing (no field given).
    pub fn is_empty(&self) -> bool {
        *self == StandingUpdate::default()
    }

    /// `stored` with these changes: a list replaces the stored one, a table is merged entry by
    /// entry ([`merge_table`]); a town newly listed under `defend` leaves `vacate`, and the other
    /// way round.
    pub fn apply(self, stored: &Standing) -> Standing {
        let mut st = stored.clone();
        if let Some(d) = self.defend {
            st.vacate.retain(|k, _| !d.contains(k));
            st.defend = d;
        }
        if let Some(va) = self.vacate {
            merge_table(&mut st.vacate, va);
            st.defend.retain(|k| !st.vacate.contains_key(k));
        }
        if let Some(c) = self.casualties {
            st.casualties = c;
        }
        if let Some(r) = self.retreat {
            merge_table(&mut st.retreat, r);
        }
        if let Some(c) = self.combat_order {
            st.combat_order = c;
        }
        if self.optional_fire.is_some() {
            st.optional_fire = self.optional_fire;
        }
        st
    }

    /// The `[orders.standing]` table that gives these changes ([`parse`] reads it back as this).
    pub fn to_table(&self) -> toml::Table {
        let strs = |v: &[String]| Value::Array(v.iter().map(|x| Value::String(x.clone())).collect());
        let table = |m: &BTreeMap<String, Vec<String>>| Value::Table(m.iter().map(|(k, v)| (k.clone(), strs(v))).collect());
        let mut t = toml::Table::new();
        let lists = [("defend", &self.defend), ("casualties", &self.casualties), ("combat_order", &self.combat_order)];
        for (key, v) in lists {
            if let Some(v) = v {
                t.insert(key.into(), strs(v));
            }
        }
        for (key, m) in [("vacate", &self.vacate), ("retreat", &self.retreat)] {
            if let Some(m) = m {
                t.insert(key.into(), table(m));
            }
        }
        if let Some(f) = self.optional_fire {
            let word = match f {
                FirePolicy::Never => "never",
                FirePolicy::Always => "always",
                FirePolicy::Ask => "ask",
            };
            t.insert("optional_fire".into(), Value::String(word.into()));
        }
        t
    }
}

/// `[orders.standing]`: the side's stored standing orders with this file's changes. A list
/// (`defend`, `casualties`, `combat_order`) or `optional_fire` replaces the stored one; a table
/// (`vacate`, `retreat`) is merged entry by entry ([`merge_table`]). A town newly listed under
/// `defend` leaves the stored `vacate` table, and the other way round.
fn parse_standing(s: &State, side: Side, v: &Value, p: &mut Problems) -> Standing {
    let stored = s.standing.get(side);
    let Some(t) = v.as_table() else {
        p.add("standing", "must be a table");
        return Standing::clone(stored);
    };
    const KEYS: &[&str] = &["defend", "vacate", "casualties", "retreat", "combat_order", "optional_fire"];
    for key in t.keys() {
        if !KEYS.contains(&key.as_str()) {
            p.add(format!("standing.{key}"), format!("unknown standing order `{key}`; accepted: {}", KEYS.join(", ")));
        }
    }
    let mut u = StandingUpdate {
        defend: t.get("defend").map(|v| towns_of(s, v, "standing.defend", p)),
        vacate: t.get("vacate").map(|v| town_table(s, v, "standing.vacate", p)),
        ..StandingUpdate::default()
    };
    if let (Some(d), Some(va)) = (&u.defend, &u.vacate) {
        for town in d.iter().filter(|x| va.get(*x).is_some_and(|dests| !dests.is_empty())) {
            p.add("standing.defend", format!("{town} is both in defend and in vacate; choose one"));
        }
    }
    if let Some(v) = t.get("casualties") {
        u.casualties = Some(standing_casualties(s, side, v, p));
    }
    u.retreat = t.get("retreat").map(|v| town_table(s, v, "standing.retreat", p));
    if let Some(v) = t.get("combat_order") {
        if side != Side::Confederate {
            p.add("standing.combat_order", "only the Confederate player orders the combats (§9)");
        } else {
            u.combat_order = Some(towns_of(s, v, "standing.combat_order", p));
        }
    }
    if let Some(v) = t.get("optional_fire") {
        if !s.optional_fire {
            p.add("standing.optional_fire", "this game does not use the optional firing rule (option optional-fire)");
        } else {
            u.optional_fire = match v.as_str().map(str::trim) {
                Some("never") => Some(FirePolicy::Never),
                Some("always") => Some(FirePolicy::Always),
                Some("ask") => Some(FirePolicy::Ask),
                _ => {
                    p.add("standing.optional_fire", "must be \"never\" (keep automatic hits), \"always\" (roll the most dice) or \"ask\"");
                    None
                }
            };
        }
    }
    u.apply(stored)
}

/// `standing.casualties`: the side's corps ids in their canonical spelling, each once.
fn standing_casualties(s: &State, side: Side, v: &Value, p: &mut Problems) -> Vec<String> {
    let Some(ids) = strings(v) else {
        p.add("standing.casualties", "must be a list of your corps, e.g. [\"XI\", \"XII\"]");
        return s.standing.get(side).casualties.clone();
    };
    let mut out = Vec::new();
    for id in ids {
        match s.corps_named(side, &id) {
            Some(c) => out.push(s.corps[c].id.clone()),
            None => p.add("standing.casualties", format!("no {} corps \"{id}\"; your corps: {}", side.name(), s.ids(&s.corps_of(side)))),
        }
    }
    no_duplicates(&out, "standing.casualties", p);
    out
}
