//! The `naive` built-in players, the first ones (kept to compare balance figures with): always
//! legal orders, with standing orders and planned moves so that a turn needs few steps.
//!
//! The Confederate bot marches toward the nearest town whose points are not yet scored and attacks a
//! town when its corps is stronger than the defenders; it moves in the first three rounds of a turn.
//! The Union bot keeps a garrison in Washington and, in the first round of a turn, may send a corps
//! to cover a point town near the Confederates; it defends towns worth points. Both stop moving
//! after a few rounds, so every turn reaches its combat phase.

use toml::Value;

use super::{distances, plan_value, shuffled, steps_left, strs, Rng};
use crate::games::gettysburg_campaign::forms::default_order;
use crate::games::gettysburg_campaign::rules;
use crate::games::gettysburg_campaign::scenario::army_key;
use crate::games::gettysburg_campaign::side::Side;
use crate::games::gettysburg_campaign::state::{Command, Question, State};
use crate::game::Orders;

/// Rounds of a turn in which each bot still moves (§8: a round without moves ends the rounds).
const CONFEDERATE_MOVING_ROUNDS: u32 = 3;
const UNION_MOVING_ROUNDS: u32 = 1;

/// How attractive `town` is for a Confederate corps of `strength` (higher is better).
fn confederate_value(s: &State, town: &str, strength: u32) -> i64 {
    let union = s.strength(&s.in_town(Side::Union, town));
    if union > 0 && strength <= union {
        return -1000;
    }
    let d = distances(s, town);
    let best = s
        .scenario
        .map
        .towns
        .iter()
        .enumerate()
        .filter(|(i, t)| {
            t.points > 0 && !s.scored.contains(&t.name) && d[*i] != u32::MAX && s.strength(&s.in_town(Side::Union, &t.name)) < strength
        })
        .map(|(i, t)| t.points as i64 * 10 - d[i] as i64 * 12)
        .max()
        .unwrap_or(0);
    best + if union > 0 { 3 } else { 0 }
}

/// A plan of up to `steps` moves for Confederate corps `c` (empty = stay).
fn confederate_plan(s: &State, c: usize, steps: u32, rng: Rng) -> Vec<String> {
    let Some(mut at) = s.town_of(c).map(str::to_string) else { return Vec::new() };
    if s.round > CONFEDERATE_MOVING_ROUNDS || rng(6) == 0 {
        return Vec::new();
    }
    let strength = s.corps[c].strength;
    let mut plan = Vec::new();
    for _ in 0..steps {
        let here = confederate_value(s, &at, strength);
        let mut best: Option<(i64, String)> = None;
        for n in shuffled(s.scenario.neighbors(&at), rng) {
            let v = confederate_value(s, &n, strength);
            if best.as_ref().is_none_or(|(bv, _)| v > *bv) {
                best = Some((v, n));
            }
        }
        match best {
            Some((v, n)) if v > here || (v == here && rng(2) == 0) => {
                let enemy = !s.in_town(Side::Union, &n).is_empty();
                plan.push(n.clone());
                at = n;
                if enemy {
                    break;
                }
            }
            _ => break,
        }
    }
    plan
}

/// A plan for Union corps `c`: stay, or (first round only, half the time) cover an unscored point
/// town next to it that no Confederate holds, if its town keeps a garrison.
fn union_plan(s: &State, c: usize, rng: Rng) -> Vec<String> {
    let Some(at) = s.town_of(c) else { return Vec::new() };
    if s.round > UNION_MOVING_ROUNDS || rng(2) == 0 {
        return Vec::new();
    }
    let garrison = s.in_town(Side::Union, at).len();
    let capital = &s.scenario.union.start;
    if at == capital && garrison <= 3 {
        return Vec::new();
    }
    let targets: Vec<String> = s
        .scenario
        .neighbors(at)
        .into_iter()
        .filter(|n| s.scenario.points(n) > 0 && !s.scored.contains(n) && s.in_town(Side::Confederate, n).is_empty() && s.in_town(Side::Union, n).len() < 2)
        .collect();
    if targets.is_empty() {
        return Vec::new();
    }
    vec![targets[rng(targets.len() as u32) as usize].clone()]
}

fn plan_for(s: &State, side: Side, c: usize, steps: u32, rng: Rng) -> Vec<String> {
    match side {
        Side::Confederate => confederate_plan(s, c, steps, rng),
        Side::Union => union_plan(s, c, rng),
    }
}

/// The bot's standing orders: defend or vacate by town, casualties weakest first, retreats and
/// combat order fixed, and (under the optional rule) a random firing policy.
fn standing(s: &State, side: Side, rng: Rng) -> toml::Table {
    let mut st = toml::Table::new();
    let mut defend = Vec::new();
    let mut vacate = toml::Table::new();
    for t in &s.scenario.map.towns {
        let hold = match side {
            Side::Union => t.points > 0 || rng(4) > 0,
            Side::Confederate => rng(4) > 0,
        };
        if hold {
            defend.push(t.name.clone());
        } else {
            vacate.insert(t.name.clone(), strs(&shuffled(s.scenario.neighbors(&t.name), rng)));
        }
    }
    st.insert("defend".into(), strs(&defend));
    st.insert("vacate".into(), Value::Table(vacate));
    let mut mine = s.corps_of(side);
    mine.sort_by_key(|&c| (s.corps[c].strength, c));
    st.insert("casualties".into(), strs(&mine.iter().map(|&c| s.corps[c].id.clone()).collect::<Vec<_>>()));
    let mut retreat = toml::Table::new();
    for t in &s.scenario.map.towns {
        retreat.insert(t.name.clone(), strs(&shuffled(s.scenario.neighbors(&t.name), rng)));
    }
    st.insert("retreat".into(), Value::Table(retreat));
    if side == Side::Confederate {
        st.insert("combat_order".into(), strs(&s.scenario.map.towns.iter().map(|t| t.name.clone()).collect::<Vec<_>>()));
    }
    if s.optional_fire {
        st.insert("optional_fire".into(), Value::String(if rng(2) == 0 { "never" } else { "always" }.into()));
    }
    st
}

/// Picks the cards: a random legal play, preferring plays whose corps have somewhere to go; the
/// army commander only now and then.
fn choose_cards(s: &State, side: Side, rng: Rng) -> Vec<Command> {
    let all = rules::legal_selections(s, side);
    let plain: Vec<&Vec<Command>> = all.iter().filter(|sel| !sel.iter().any(|x| rules::is_army_half(s, side, x.card, x.upper))).collect();
    let pool: Vec<&Vec<Command>> = if plain.is_empty() || rng(5) == 0 { all.iter().collect() } else { plain };
    pool[rng(pool.len() as u32) as usize].clone()
}

/// A legal order for `side`'s pending question (empty when nothing is asked of it).
pub fn order(s: &State, side: Side, rng: Rng) -> Orders {
    let Some(q) = s.question.clone().filter(|q| q.sides().contains(&side)) else { return Orders::new() };
    let mut o = default_order(s, side);
    o.insert("standing".into(), Value::Table(standing(s, side, rng)));
    match &q {
        Question::Command { .. } => {
            let sel = choose_cards(s, side, rng);
            let army = s.scenario.army(side);
            o.insert("cards".into(), strs(&sel.iter().map(|x| army.cards[x.card].half(x.upper).to_string()).collect::<Vec<_>>()));
            o.remove(&army_key(&army.army_commander));
            let mut moves = toml::Table::new();
            for x in &sel {
                if rules::is_army_half(s, side, x.card, x.upper) {
                    o.insert(army_key(&army.army_commander), Value::String(s.corps[x.corps].id.clone()));
                }
                let steps = rules::allowed_steps(s, side, &sel, x.corps);
                moves.insert(s.corps[x.corps].id.clone(), plan_value(&plan_for(s, side, x.corps, steps, rng)));
            }
            o.insert("moves".into(), Value::Table(moves));
        }
        Question::Move { corps, .. } => {
            let left = steps_left(s, side, *corps);
            let mut moves = toml::Table::new();
            moves.insert(s.corps[*corps].id.clone(), plan_value(&plan_for(s, side, *corps, left, rng)));
            o.insert("moves".into(), Value::Table(moves));
        }
        Question::VacateOrDefend { town, mover, options, .. } => {
            let mine = s.strength(&s.in_town(side, town));
            if mine + 1 < s.corps[*mover].strength && rng(2) == 0 {
                o.insert("decision".into(), Value::String("vacate".into()));
                o.insert("vacate_to".into(), Value::String(options[rng(options.len() as u32) as usize].clone()));
            }
        }
        Question::Retreat { options, .. } => {
            o.insert("retreat_to".into(), Value::String(options[rng(options.len() as u32) as usize].clone()));
        }
        Question::FireOption { strength, divisor, .. } => {
            let options = rules::fire_options(*strength, *divisor, true, s.scenario.rules.optional_fire_max_dice);
            o.insert("automatic_hits".into(), Value::Integer(options[rng(options.len() as u32) as usize].automatic as i64));
        }
        Question::CombatOrder { .. } | Question::Casualty { .. } => {}
    }
    o
}
