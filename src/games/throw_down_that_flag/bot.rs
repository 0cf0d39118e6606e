//! The built-in players (policies) for `pbem demo`, random-play tests and `pbem simulate`.
//!
//! - `naive`: one standing order for every company, given at the first ask: advance on the nearest
//!   Confederate, shoot whatever is in range with all ten tokens, melee with all ten. The engine
//!   then never asks again.
//! - `sensible`: answers every activation itself. In melee it attacks the weakest neighbour when
//!   the odds favour it (tokens chosen for the best hit-minus-counter-hit chance), else holds its
//!   ground; out of melee it shoots at distance 2 or 3 when the odds favour it, else moves to stand
//!   in the way of the Confederate company closest to breaking through.

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

/// The tokens (1..=max) that maximize P(hit) - weight x P(hurt), with that value.
fn best_tokens(s: &State, need_hit: u32, need_hurt: Option<u32>, weight: f64) -> (u32, f64) {
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

/// The Confederate company closest to breaking through (fewest steps to the objective).
fn most_dangerous(s: &State) -> Option<usize> {
    let field = engine::objective_field(s);
    let c = s.scenario.map.columns;
    s.active(Side::Confederate)
        .into_iter()
        .min_by_key(|&j| {
            let p = s.companies[j].at.expect("active");
            (field[(p.row * c + p.col) as usize], p.distance(Space { col: p.col, row: 0 }), s.companies[j].letter.clone())
        })
}

/// The sensible policy's plan for company `i`.
pub fn sensible_plan(s: &State, i: usize) -> Plan {
    let Some(p) = s.companies[i].at else { return Plan::default() };
    let own = s.companies[i].str;
    let adj = s.adjacent_enemies(i);
    if !adj.is_empty() {
        let target = orders::pick(s, p, &adj).expect("non-empty");
        let (n, v) = best_tokens(s, s.companies[target].str, Some(own), 1.0);
        if v > 0.05 {
            return Plan { attack: Some(Attack { kind: AttackKind::Melee, target, tokens: n }), ..Plan::default() };
        }
        return Plan::default();
    }
    if s.companies[i].gun {
        let mut best: Option<(f64, Attack)> = None;
        for j in s.active(Side::Confederate) {
            let d = s.companies[j].at.expect("active").distance(p);
            if !(2..=3).contains(&d) {
                continue;
            }
            let back = s.companies[j].gun.then_some(d);
            let (n, v) = best_tokens(s, d, back, 1.0);
            if best.as_ref().is_none_or(|b| v > b.0) {
                best = Some((v, Attack { kind: AttackKind::Shoot, target: j, tokens: n }));
            }
        }
        if let Some((v, a)) = best.filter(|b| b.0 > 0.1) {
            let _ = v;
            return Plan { attack: Some(a), ..Plan::default() };
        }
    }
    let Some(d) = most_dangerous(s) else { return Plan::default() };
    let dp = s.companies[d].at.expect("active");
    let goal = engine::confederate_destination(s, d).filter(|&g| g != dp && s.at(g).is_none()).unwrap_or(dp);
    if p == goal || p.adjacent(dp) {
        return Plan::default();
    }
    match step_toward(s, i, goal, 2) {
        Some(path) => Plan { before: path, ..Plan::default() },
        None => Plan::default(),
    }
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
