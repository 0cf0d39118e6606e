//! The built-in players (policies) for `pbem demo`, random-play tests and `pbem simulate`.
//!
//! - `naive`: one standing order for every company, given at the first ask: advance on the nearest
//!   Confederate, shoot whatever is in range with all ten tokens, melee with all ten. The engine
//!   then never asks again.
//! - `sensible`: answers every activation itself (the demo's player). Its tokens are chosen from
//!   the exact odds of the success bag for the best P(hit) - 0.5 x P(being hit) (the Confederates
//!   never attack, so stopping them is worth more than sparing men). In melee it attacks the
//!   neighbour with the best odds, preferring those closest to the ridge, and otherwise holds its
//!   ground; out of melee it shoots when the odds are good; otherwise it advances on the Confederate
//!   company nearest to it counting that company's way to the objective, and melees or shoots on
//!   arrival when it can.

use toml::Value;

use super::engine::{self, Attack, AttackKind, Plan};
use super::hex::Space;
use super::orders::{self, plan_order, standing_value, step_toward};
use super::state::{MoveRule, Side, Standing, State};
use crate::game::Orders;

/// The built-in policies by name.
pub const POLICIES: &[&str] = &["naive", "sensible"];

/// P(at least `k` of the `good` tokens among `n` pulled without replacement from `total`).
pub fn at_least(k: u32, n: u32, good: u32, total: u32) -> f64 {
    if k == 0 {
        return 1.0;
    }
    let choose = |a: u32, b: u32| -> f64 {
        if b > a {
            return 0.0;
        }
        (0..b).fold(1.0, |acc, j| acc * (a - j) as f64 / (j + 1) as f64)
    };
    let all = choose(total, n);
    (k..=n.min(good)).map(|x| choose(good, x) * choose(total - good, n - x)).sum::<f64>() / all
}

/// What [`best_tokens`] depends on: the bag's successes of each side and its size, the most
/// tokens, the successes needed to hit and to be hurt, and the weight's bits.
type TokensKey = (u32, u32, u32, u32, u32, Option<u32>, u64);

thread_local! {
    /// [`best_tokens`] as worked out so far on this thread (a pure function of its key; a
    /// simulation asks the same few questions thousands of times).
    static BEST_TOKENS: std::cell::RefCell<std::collections::BTreeMap<TokensKey, (u32, f64)>> = Default::default();
}

/// The tokens (1..=max) that maximize P(hit) - weight x P(hurt), with that value.
fn best_tokens(s: &State, need_hit: u32, need_hurt: Option<u32>, weight: f64) -> (u32, f64) {
    let b = &s.scenario.success_bag;
    let key = (b.union_success, b.confederate_success, b.total(), s.scenario.rules.max_tokens, need_hit, need_hurt, weight.to_bits());
    if let Some(v) = BEST_TOKENS.with(|m| m.borrow().get(&key).copied()) {
        return v;
    }
    let v = work_out_best_tokens(s, need_hit, need_hurt, weight);
    BEST_TOKENS.with(|m| m.borrow_mut().insert(key, v));
    v
}

fn work_out_best_tokens(s: &State, need_hit: u32, need_hurt: Option<u32>, weight: f64) -> (u32, f64) {
    if need_hit > s.scenario.rules.max_tokens {
        return (1, f64::MIN);
    }
    let b = &s.scenario.success_bag;
    let total = b.total();
    let mut best = (1, f64::MIN);
    for n in 1..=s.scenario.rules.max_tokens {
        let hit = at_least(need_hit, n, b.union_success, total);
        let hurt = need_hurt.map_or(0.0, |k| at_least(k, n, b.confederate_success, total));
        let v = hit - weight * hurt;
        if v > best.1 + 1e-12 {
            best = (n, v);
        }
    }
    best
}

/// Steps to the objective of Confederate company `j` (around First Minnesota companies).
fn danger(s: &State, field: &[u32], j: usize) -> u32 {
    let p = s.companies[j].at.expect("active");
    field[(p.row * s.scenario.map.columns + p.col) as usize].min(2 * s.scenario.map.rows)
}

/// Weight of a First Minnesota hit against a Confederate hit when choosing tokens: the Confederates
/// never attack, so losses matter less than stopping them.
const HURT_WEIGHT: f64 = 0.5;

/// The enemies company `i` would have next to it on `from` ([`State::adjacent_enemies`] as if it
/// stood there; the board is not copied).
fn enemies_next_to(s: &State, i: usize, from: Space) -> Vec<usize> {
    let side = s.companies[i].side.other();
    s.active(side).into_iter().filter(|&j| s.companies[j].at.is_some_and(|q| q.adjacent(from))).collect()
}

fn melee_choice(s: &State, field: &[u32], i: usize, from: Space) -> Option<Attack> {
    let adj = enemies_next_to(s, i, from);
    let own = s.companies[i].str;
    adj.into_iter()
        .map(|j| {
            let (n, v) = best_tokens(s, s.companies[j].str, Some(own), HURT_WEIGHT);
            (v - 0.02 * danger(s, field, j) as f64, n, j)
        })
        .filter(|x| x.0 > 0.0)
        .max_by(|a, b| a.0.total_cmp(&b.0).then(b.2.cmp(&a.2)))
        .map(|(_, n, j)| Attack { kind: AttackKind::Melee, target: j, tokens: n })
}

fn shot_choice(s: &State, i: usize, from: Space) -> Option<Attack> {
    if !s.companies[i].gun || engine::enemy_next_to(s, i, from) {
        return None;
    }
    let mut best: Option<(f64, Attack)> = None;
    for j in s.active(Side::Confederate) {
        let d = s.companies[j].at.expect("active").distance(from);
        let back = s.companies[j].gun.then_some(d);
        let (n, v) = best_tokens(s, d, back, HURT_WEIGHT);
        if v > 0.25 && best.as_ref().is_none_or(|b| v > b.0) {
            best = Some((v, Attack { kind: AttackKind::Shoot, target: j, tokens: n }));
        }
    }
    best.map(|b| b.1)
}

/// The sensible policy's plan for company `i`.
pub fn sensible_plan(s: &State, i: usize) -> Plan {
    let Some(p) = s.companies[i].at else { return Plan::default() };
    let field = engine::objective_field(s);
    if !s.adjacent_enemies(i).is_empty() {
        return match melee_choice(s, &field, i, p) {
            Some(a) => Plan { attack: Some(a), ..Plan::default() },
            None => Plan::default(),
        };
    }
    if let Some(a) = shot_choice(s, i, p) {
        return Plan { attack: Some(a), ..Plan::default() };
    }
    // Go for the Confederate company that is nearest counting both its way to the ridge and ours.
    let Some(target) = s
        .active(Side::Confederate)
        .into_iter()
        .min_by_key(|&j| (danger(s, &field, j) + s.companies[j].at.expect("active").distance(p), s.companies[j].letter.as_str()))
    else {
        return Plan::default();
    };
    let goal = s.companies[target].at.expect("active");
    let Some(one) = step_toward(s, i, goal, 1) else {
        return step_toward(s, i, goal, 2).map(|b| Plan { before: b, ..Plan::default() }).unwrap_or_default();
    };
    if let Some(a) = melee_choice(s, &field, i, one[0]) {
        return Plan { before: one, attack: Some(a), after: Vec::new() };
    }
    // Company i's own place matters to neither look-up: only the enemies' places do.
    if enemies_next_to(s, i, one[0]).is_empty() {
        if let Some(a) = shot_choice(s, i, one[0]) {
            return Plan { before: one, attack: Some(a), after: Vec::new() };
        }
        if let Some(two) = step_toward(s, i, goal, 2).filter(|b| b.len() == 2 && b[0] == one[0]) {
            return Plan { before: two, ..Plan::default() };
        }
    }
    Plan { before: one, ..Plan::default() }
}

/// The naive policy's standing order for every company.
pub fn naive_standing(s: &State) -> Standing {
    let m = s.scenario.rules.max_tokens;
    Standing { melee: Some(m), shoot: Some(m), range: Some(m), movement: Some(MoveRule::Nearest) }
}

/// The order `policy` gives for the pending ask.
pub fn order(s: &State, policy: &str) -> Orders {
    let Some(i) = s.asking else { return Orders::new() };
    let plan = if policy == "naive" {
        let mut after = s.clone();
        after.standing.insert("all".into(), naive_standing(s));
        orders::standing_plan(&after, i).unwrap_or_default()
    } else {
        sensible_plan(s, i)
    };
    let plan = if engine::check_plan(s, i, &plan).is_ok() { plan } else { Plan::default() };
    let mut o = plan_order(s, &plan);
    if policy == "naive" && !s.standing.contains_key("all") {
        let mut t = toml::Table::new();
        t.insert("all".into(), standing_value(&naive_standing(s)));
        o.insert("standing".into(), Value::Table(t));
    }
    o
}
