//! Reading and checking the `[orders]` table: the answer for the company being asked and the
//! standing orders per company, and what a standing order makes a company do.
//!
//! Fields:
//! - `action`: one of `pass`, `move`, `shoot`, `move-shoot`, `shoot-move`, `melee`, `move-melee`,
//!   `melee-move` (Player Activations); `path = ["E4"]` the spaces moved, in order (one or two for
//!   `move`, one for the combined actions, before or after the attack as the name says);
//!   `target = "C"` the Confederate company's letter; `tokens = 6` the tokens pulled (1-10 for a shot;
//!   for a melee up to the success bag's size).
//! - `[orders.standing.LETTER]` or `[orders.standing.all]`: `melee = N`, `shoot = N` (or "off"),
//!   `range = R` (2 or more: a company next to an enemy cannot shoot), `move = "nearest" | "hold" |
//!   "ask" | "E4"`. A company's entry overrides `all` field by field (a field it does not give
//!   comes from `all`). A sent table merges into the stored entry field by field; `FIELD =
//!   "delete"` removes one field, `LETTER = "delete"` (or `all = "delete"`) the whole entry; an
//!   empty table is refused (it would change nothing). `move = "ask"` (or no `move`) makes the
//!   engine ask when no attack applies.

use std::collections::BTreeMap;

use toml::Value;

use super::rules::{self, Attack, AttackKind, Plan};
use super::hex::Space;
use super::state::{MoveRule, Side, Standing, State};
use crate::game::{OrderProblem, Orders, Problems};

/// A checked order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parsed {
    /// The standing orders after this file's changes.
    pub standing: BTreeMap<String, Standing>,
    /// Whether the file gave `[orders.standing]`.
    pub standing_given: bool,
    /// What the file's `[orders.standing]` changed, one line per entry (for the report).
    pub changes: Vec<String>,
    /// The direct answer for the company asked, if given.
    pub direct: Option<Plan>,
}

/// Default range of a standing shot when `range` is not given.
pub const DEFAULT_RANGE: u32 = 2;

fn space(s: &State, v: &Value) -> Option<Space> {
    v.as_str().and_then(|n| s.scenario.space(n))
}

fn count(v: &Value, max: u32) -> Option<u32> {
    v.as_integer().filter(|&n| n >= 1 && n <= max as i64).map(|n| n as u32)
}

/// Checks `orders` for the pending ask.
pub fn parse(s: &State, orders: &Orders) -> Result<Parsed, Vec<OrderProblem>> {
    let mut probs = Problems::new();
    let Some(i) = s.asking.filter(|_| s.outcome.is_none()) else {
        return Err(vec![OrderProblem::new("", "nothing is asked now")]);
    };
    for k in orders.keys() {
        if !["action", "path", "target", "tokens", "standing"].contains(&k.as_str()) {
            probs.add(k, format!("unknown field `{k}`; accepted: action, path, target, tokens, standing"));
        }
    }
    let mut standing = s.standing.clone();
    let standing_given = orders.contains_key("standing");
    if let Some(v) = orders.get("standing") {
        merge_standing(s, v, &mut standing, &mut probs);
    }
    let direct = if orders.contains_key("action") { parse_plan(s, i, orders, &mut probs) } else { None };
    if !orders.contains_key("action") {
        for k in ["path", "target", "tokens"] {
            if orders.contains_key(k) {
                probs.add(k, "give `action` too");
            }
        }
        if probs.is_empty() {
            let mut after = s.clone();
            after.standing = standing.clone();
            if standing_plan(&after, i).is_none_or(|p| rules::check_plan(&after, i, &p).is_err()) {
                probs.add(
                    "action",
                    format!("missing: company {} must be told what to do (action = \"pass\" at least)", s.companies[i].letter),
                );
            }
        }
    }
    if !probs.is_empty() {
        return Err(probs.into_vec());
    }
    let changes = if standing_given { standing_changes(&s.standing, &standing) } else { Vec::new() };
    Ok(Parsed { standing, standing_given, changes, direct })
}

/// The word that deletes an entry (`H = "delete"`) or one field of it (`melee = "delete"`).
pub const DELETE: &str = "delete";

/// The word that switches a standing attack off for one company (`melee = "off"`).
pub const OFF: &str = "off";

/// The letters of `side`'s companies on the map, for a message listing the choices: `A, B, C`.
fn letters(s: &State, side: Side) -> String {
    let mut v: Vec<&str> = s.active(side).iter().map(|&i| s.companies[i].letter.as_str()).collect();
    v.sort_unstable();
    v.join(", ")
}

fn is_word(v: &Value, word: &str) -> bool {
    v.as_str().is_some_and(|x| x.trim().eq_ignore_ascii_case(word))
}

/// Merges a sent `[orders.standing]` into `standing`, entry by entry: each company's table (or
/// `all`) changes only the fields it gives; `FIELD = "delete"` removes one field, `KEY = "delete"`
/// the whole entry. An entry left with no field is removed.
fn merge_standing(s: &State, v: &Value, standing: &mut BTreeMap<String, Standing>, probs: &mut Problems) {
    let Some(t) = v.as_table() else {
        probs.add("standing", "must be a table of company letters (or `all`) to tables");
        return;
    };
    let mut seen = std::collections::BTreeSet::new();
    for (k, body) in t {
        let field = format!("standing.{k}");
        let key = if k.trim().eq_ignore_ascii_case("all") { "all".to_string() } else { k.trim().to_ascii_uppercase() };
        if !seen.insert(key.clone()) {
            probs.add(field, format!("company {key} is given twice (letters are case-insensitive)"));
            continue;
        }
        if key != "all" && !s.companies.iter().any(|c| c.side == Side::Union && c.letter == key) {
            let mut union: Vec<&str> = s.companies.iter().filter(|c| c.side == Side::Union).map(|c| c.letter.as_str()).collect();
            union.sort_unstable();
            probs.add(field, format!("not a First Minnesota company letter (or `all`): {}", union.join(", ")));
            continue;
        }
        if is_word(body, DELETE) {
            standing.remove(&key);
            continue;
        }
        if body.as_table().is_some_and(|b| b.is_empty()) {
            probs.add(
                field,
                format!("an empty table changes nothing (a sent table changes only the fields it gives); to delete the entry write {k} = \"delete\" in [orders.standing]"),
            );
            continue;
        }
        let mut entry = standing.get(&key).cloned().unwrap_or_default();
        if parse_standing(s, &field, body, &mut entry, probs) {
            if entry == Standing::default() {
                standing.remove(&key);
            } else {
                standing.insert(key, entry);
            }
        }
    }
}

/// Applies one entry's fields to `st`; false (with problems) when a field is wrong.
fn parse_standing(s: &State, field: &str, v: &Value, st: &mut Standing, probs: &mut Problems) -> bool {
    let Some(t) = v.as_table() else {
        probs.add(field, "must be a table, e.g. { move = \"nearest\", shoot = 6, melee = 8 }, or \"delete\"");
        return false;
    };
    let max = s.scenario.rules.max_tokens;
    let before = probs.len();
    for (k, x) in t {
        let f = format!("{field}.{k}");
        let delete = is_word(x, DELETE);
        match k.as_str() {
            "melee" | "shoot" => {
                let limit = s.scenario.token_limit(k == "melee");
                let value = if delete {
                    Some(None)
                } else if is_word(x, OFF) {
                    Some(Some(0))
                } else {
                    count(x, limit).map(Some)
                };
                match value {
                    Some(n) if k == "melee" => st.melee = n,
                    Some(n) => st.shoot = n,
                    None => probs.add(f, format!("tokens to pull: a whole number 1 to {limit}, \"off\" or \"delete\"")),
                }
            }
            "range" if delete => st.range = None,
            "range" => match count(x, max) {
                Some(1) => probs.add(
                    f,
                    format!(
                        "1 can never shoot: a company next to a Confederate company may not shoot (Player Activations, \
                         Shoot), so a target is at least 2 away; give 2 to {max}"
                    ),
                ),
                Some(n) => st.range = Some(n),
                None => probs.add(f, format!("a distance 2 to {max}, or \"delete\"")),
            },
            "move" if delete => st.movement = None,
            "move" => match x.as_str().map(|m| m.trim().to_ascii_lowercase()) {
                Some(m) if m == "nearest" => st.movement = Some(MoveRule::Nearest),
                Some(m) if m == "hold" => st.movement = Some(MoveRule::Hold),
                Some(m) if m == "ask" => st.movement = Some(MoveRule::Ask),
                Some(m) => match s.scenario.space(&m) {
                    Some(p) => st.movement = Some(MoveRule::To(p)),
                    None => probs.add(f, "\"nearest\", \"hold\", \"ask\", a space of the map such as \"E4\", or \"delete\""),
                },
                None => probs.add(f, "\"nearest\", \"hold\", \"ask\", a space of the map such as \"E4\", or \"delete\""),
            },
            _ => probs.add(f, "unknown key; accepted: melee, shoot, range, move"),
        }
    }
    probs.len() == before
}

fn parse_plan(s: &State, i: usize, orders: &Orders, probs: &mut Problems) -> Option<Plan> {
    let before = probs.len();
    let action = orders.get("action").and_then(|v| v.as_str()).map(|a| a.trim().to_ascii_lowercase()).unwrap_or_default();
    if !rules::ACTIONS.contains(&action.as_str()) {
        probs.add("action", format!("one of {}", rules::ACTIONS.join(", ")));
        return None;
    }
    let path: Vec<Space> = match orders.get("path") {
        None => Vec::new(),
        Some(v) => {
            let items: Option<Vec<Space>> = match v {
                Value::String(_) => space(s, v).map(|p| vec![p]),
                Value::Array(a) => a.iter().map(|x| space(s, x)).collect(),
                _ => None,
            };
            match items {
                Some(p) => p,
                None => {
                    probs.add("path", "a list of spaces of the map, e.g. [\"E4\", \"E5\"]");
                    Vec::new()
                }
            }
        }
    };
    let moves = action.contains("move");
    let attack_kind = if action.contains("shoot") {
        Some(AttackKind::Shoot)
    } else if action.contains("melee") {
        Some(AttackKind::Melee)
    } else {
        None
    };
    let want = match action.as_str() {
        "move" => 1..=2,
        _ if moves => 1..=1,
        _ => 0..=0,
    };
    if probs.len() == before && !want.contains(&path.len()) {
        let spaces = match (moves, action.as_str()) {
            (true, "move") => "one or two spaces",
            (true, _) => "one space",
            (false, _) => "no space",
        };
        probs.add("path", format!("`{action}` moves {spaces}"));
    }
    let mut attack = None;
    if let Some(kind) = attack_kind {
        let target = orders.get("target").and_then(|v| v.as_str()).and_then(|l| s.by_letter(Side::Confederate, l));
        let limit = s.scenario.token_limit(kind == AttackKind::Melee);
        let tokens = orders.get("tokens").and_then(|v| count(v, limit));
        // Each says what it wants, and a field left out is called missing (tester16 T16c-7).
        let missing = |k: &str| if orders.contains_key(k) { "" } else { "missing: " };
        match (target, tokens) {
            (Some(target), Some(tokens)) => attack = Some(Attack { kind, target, tokens }),
            (None, _) => probs.add("target", format!("{}the letter of a Confederate company on the map: {}", missing("target"), letters(s, Side::Confederate))),
            (_, None) => probs.add("tokens", format!("{}tokens to pull, a whole number 1 to {limit}", missing("tokens"))),
        }
    } else {
        for k in ["target", "tokens"] {
            if orders.contains_key(k) {
                probs.add(k, format!("`{action}` has no attack"));
            }
        }
    }
    if probs.len() > before {
        return None;
    }
    let plan = if action.starts_with("move") || action == "move" {
        Plan { before: path, attack, after: Vec::new() }
    } else {
        Plan { before: Vec::new(), attack, after: path }
    };
    if let Err((f, m)) = rules::check_plan(s, i, &plan) {
        probs.add(f, m);
        return None;
    }
    Some(plan)
}

// ---------------------------------------------------------------------------------------------
// Standing orders

/// The Confederate company nearest to `p` among `list` (ties: lower Str, then the colors holder,
/// then letter).
pub fn pick(s: &State, p: Space, list: &[usize]) -> Option<usize> {
    list.iter().copied().min_by_key(|&j| {
        let c = &s.companies[j];
        (c.at.map_or(u32::MAX, |q| q.distance(p)), c.str, !c.colors, c.letter.as_str())
    })
}

/// Shot targets of company `i` from `p` within `range`: every Confederate company on the map.
fn in_range(s: &State, p: Space, range: u32) -> Vec<usize> {
    s.active(Side::Confederate).into_iter().filter(|&j| s.companies[j].at.is_some_and(|q| q.distance(p) <= range)).collect()
}

/// The legal move of company `i` of up to `max` spaces that gets closest to `goal`, if it gets
/// any closer (ties: fewer spaces, then the space nearer the Union line, then further left).
pub fn step_toward(s: &State, i: usize, goal: Space, max: usize) -> Option<Vec<Space>> {
    let from = s.companies[i].at?;
    let (c, r) = (s.scenario.map.columns, s.scenario.map.rows);
    type Key = (u32, usize, u32, u32);
    // The best path so far: its key, its spaces (the first `len` of two).
    let mut best: Option<(Key, [Space; 2], usize)> = None;
    let mut consider = |p: &[Space]| {
        if !rules::path_ok(s, i, from, p) {
            return;
        }
        let end = *p.last().expect("non-empty");
        let k = (end.distance(goal), p.len(), end.row, end.col);
        if k.0 < from.distance(goal) && best.as_ref().is_none_or(|b| k < b.0) {
            let mut spaces = [p[0]; 2];
            spaces[..p.len()].copy_from_slice(p);
            best = Some((k, spaces, p.len()));
        }
    };
    // Every one-space path, then every two-space one (the first best in that order wins).
    for n in from.neighbors_iter(c, r) {
        consider(&[n]);
    }
    if max >= 2 {
        for n in from.neighbors_iter(c, r) {
            for m in n.neighbors_iter(c, r).filter(|&m| m != from) {
                consider(&[n, m]);
            }
        }
    }
    best.map(|(_, spaces, len)| spaces[..len].to_vec())
}

/// What company `i`'s standing order makes it do now, or `None` when it does not say (the player
/// is asked). In this order: next to a Confederate company, `melee` attacks the weakest neighbour,
/// else `move = nearest` or `hold` stays in contact (pass); not next to one, `shoot` fires at the
/// nearest company within `range`; else `move` moves one space toward its goal (the nearest
/// Confederate company or the given space), then melees (`melee`) or shoots (`shoot`) if it now
/// can, or else moves a second space; `hold` passes.
pub fn standing_plan(s: &State, i: usize) -> Option<Plan> {
    let st = s.standing_for(i)?;
    let p = s.companies[i].at?;
    let adj = s.adjacent_enemies(i);
    if !adj.is_empty() {
        if let Some(n) = st.melee {
            let target = pick(s, p, &adj)?;
            return Some(Plan { attack: Some(Attack { kind: AttackKind::Melee, target, tokens: n }), ..Plan::default() });
        }
        return match st.movement {
            Some(MoveRule::Nearest) | Some(MoveRule::Hold) => Some(Plan::default()),
            Some(MoveRule::To(goal)) => Some(step_toward(s, i, goal, 2).map(|b| Plan { before: b, ..Plan::default() }).unwrap_or_default()),
            Some(MoveRule::Ask) | None => None,
        };
    }
    let range = st.range.unwrap_or(DEFAULT_RANGE);
    let shot_from = |q: Space| -> Option<Attack> {
        let n = st.shoot?;
        let target = pick(s, q, &in_range(s, q, range))?;
        rules::check_shoot(s, i, q, target).ok()?;
        Some(Attack { kind: AttackKind::Shoot, target, tokens: n })
    };
    if let Some(a) = shot_from(p) {
        return Some(Plan { attack: Some(a), ..Plan::default() });
    }
    let goal = match st.movement? {
        MoveRule::Ask => return None,
        MoveRule::Hold => return Some(Plan::default()),
        MoveRule::To(g) if g == p => return Some(Plan::default()),
        MoveRule::To(g) => g,
        MoveRule::Nearest => match pick(s, p, &s.active(Side::Confederate)).and_then(|j| s.companies[j].at) {
            Some(g) => g,
            None => return Some(Plan::default()),
        },
    };
    let Some(one) = step_toward(s, i, goal, 1) else {
        return Some(step_toward(s, i, goal, 2).map(|b| Plan { before: b, ..Plan::default() }).unwrap_or_default());
    };
    let q = one[0];
    let mut moved = s.clone();
    moved.companies[i].at = Some(q);
    let adj_q = moved.adjacent_enemies(i);
    if !adj_q.is_empty() {
        if let Some(n) = st.melee {
            let target = pick(&moved, q, &adj_q)?;
            return Some(Plan { before: one, attack: Some(Attack { kind: AttackKind::Melee, target, tokens: n }), after: Vec::new() });
        }
        return Some(Plan { before: one, ..Plan::default() });
    }
    if st.shoot.is_some() {
        let n = st.shoot?;
        if let Some(target) = pick(&moved, q, &in_range(&moved, q, range))
            && rules::check_shoot(&moved, i, q, target).is_ok()
        {
            return Some(Plan { before: one, attack: Some(Attack { kind: AttackKind::Shoot, target, tokens: n }), after: Vec::new() });
        }
    }
    let two = step_toward(s, i, goal, 2).filter(|b| b.len() == 2 && b[0] == q).unwrap_or(one);
    Some(Plan { before: two, ..Plan::default() })
}

/// The order text of a plan, as `[orders]` keys.
pub fn plan_order(s: &State, plan: &Plan) -> Orders {
    let mut o = Orders::new();
    o.insert("action".into(), Value::String(plan.action().into()));
    let path: Vec<Value> = plan.before.iter().chain(plan.after.iter()).map(|p| Value::String(p.name())).collect();
    if !path.is_empty() {
        o.insert("path".into(), Value::Array(path));
    }
    if let Some(a) = plan.attack {
        o.insert("target".into(), Value::String(s.companies[a.target].letter.clone()));
        o.insert("tokens".into(), Value::Integer(a.tokens as i64));
    }
    o
}

/// A standing order as an inline TOML table.
pub fn standing_value(st: &Standing) -> Value {
    let mut t = toml::Table::new();
    for (k, v) in field_texts(st) {
        let value = v.strip_suffix(" tokens").and_then(|n| n.parse::<i64>().ok()).or_else(|| v.parse::<i64>().ok());
        t.insert(k.into(), value.map_or(Value::String(v), Value::Integer));
    }
    Value::Table(t)
}

/// The fields an entry gives, as (key, value) in the order-file words: `melee`/`shoot` as
/// "8 tokens" or "off", `range` as "3", `move` as "nearest", "hold", "ask" or a space.
pub fn field_texts(st: &Standing) -> Vec<(&'static str, String)> {
    let tokens = |n: u32| if n == 0 { OFF.to_string() } else { format!("{n} tokens") };
    let mut out = Vec::new();
    if let Some(n) = st.melee {
        out.push(("melee", tokens(n)));
    }
    if let Some(n) = st.shoot {
        out.push(("shoot", tokens(n)));
    }
    if let Some(n) = st.range {
        out.push(("range", n.to_string()));
    }
    if let Some(m) = &st.movement {
        let text = match m {
            MoveRule::Nearest => "nearest".to_string(),
            MoveRule::Hold => "hold".to_string(),
            MoveRule::To(p) => p.name(),
            MoveRule::Ask => "ask".to_string(),
        };
        out.push(("move", text));
    }
    out
}

/// One line describing a standing order in force (as [`State::standing_for`] gives it).
pub fn standing_text(st: &Standing) -> String {
    let mut parts = Vec::new();
    if let Some(n) = st.melee.filter(|&n| n > 0) {
        parts.push(format!("melee when adjacent with {n} tokens"));
    }
    if let Some(n) = st.shoot.filter(|&n| n > 0) {
        parts.push(format!("shoot the nearest within {} with {n} tokens", st.range.unwrap_or(DEFAULT_RANGE)));
    }
    match &st.movement {
        Some(MoveRule::Nearest) => parts.push("otherwise advance on the nearest Confederate".into()),
        Some(MoveRule::Hold) => parts.push("otherwise hold".into()),
        Some(MoveRule::To(p)) => parts.push(format!("otherwise move to {}", p.name())),
        Some(MoveRule::Ask) | None => parts.push("otherwise ask me".into()),
    }
    parts.join("; ")
}

/// What a sent `[orders.standing]` changed, one line per entry changed ("all" first), each field
/// as "old -> new", "set to", or "deleted"; one line saying so when nothing changed.
pub fn standing_changes(old: &BTreeMap<String, Standing>, new: &BTreeMap<String, Standing>) -> Vec<String> {
    let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
    keys.sort_by_key(|k| (k.as_str() != "all", k.as_str()));
    keys.dedup();
    let list = |st: &Standing| field_texts(st).iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ");
    let mut out = Vec::new();
    for key in keys {
        let who = if key == "all" { "all companies".to_string() } else { format!("company {key}") };
        let text = match (old.get(key), new.get(key)) {
            (Some(o), None) => format!("deleted (it was {})", list(o)),
            (None, Some(n)) => format!("new: {}", list(n)),
            (Some(o), Some(n)) if o != n => {
                let (before, after) = (field_texts(o), field_texts(n));
                let mut parts = Vec::new();
                for f in ["melee", "shoot", "range", "move"] {
                    let b = before.iter().find(|x| x.0 == f).map(|x| &x.1);
                    let a = after.iter().find(|x| x.0 == f).map(|x| &x.1);
                    match (b, a) {
                        (Some(b), Some(a)) if a != b => parts.push(format!("{f} {b} -> {a}")),
                        (None, Some(a)) => parts.push(format!("{f} set to {a}")),
                        (Some(b), None) => parts.push(format!("{f} deleted (it was {b})")),
                        _ => {}
                    }
                }
                parts.join(", ")
            }
            _ => continue,
        };
        out.push(format!("Standing orders, {who}: {text}."));
    }
    if out.is_empty() {
        out.push("Standing orders: no change.".into());
    }
    out
}
