//! The built-in players (for `pbem demo`, `pbem simulate` and random-play tests), as two policies:
//! `sensible` (the default, [`sensible`]) plays by the rulebook's aims, `naive` ([`naive`]) is the
//! first, passive player, kept to compare balance figures with. Both give only legal orders, with
//! standing orders and planned moves so that a turn needs few steps, and draw only from the given
//! randomness.

pub mod naive;
pub mod sensible;

use std::collections::VecDeque;

use toml::Value;

use super::side::Side;
use super::state::State;
use crate::game::Orders;

/// A source of bot randomness: a value in `0..n`.
pub type Rng<'a> = &'a mut dyn FnMut(u32) -> u32;

/// The policies `pbem simulate --policy` may pick, the default first.
pub const POLICIES: &[&str] = &["sensible", "naive"];

/// A legal order of `policy` (`naive`, else `sensible`) for `side`'s pending question (empty when
/// nothing is asked of it).
pub fn order(s: &State, side: Side, policy: &str, rng: Rng) -> Orders {
    if policy == "naive" { naive::order(s, side, rng) } else { sensible::order(s, side, rng) }
}

/// A corps's planned route as an order value: the town ids, or `"stay"` for none.
pub(crate) fn plan_value(p: &[String]) -> Value {
    if p.is_empty() { Value::String("stay".into()) } else { strs(p) }
}

/// The steps `corps` of `side` may still take this round: what its command allows
/// ([`rules::allowed_steps`]) less the steps it has taken.
pub(crate) fn steps_left(s: &State, side: Side, corps: usize) -> u32 {
    super::rules::allowed_steps(s, side, s.this_round.commands.get(side), corps).saturating_sub(s.this_round.steps.get(&corps).copied().unwrap_or(0))
}

pub(crate) fn strs(v: &[String]) -> Value {
    Value::Array(v.iter().map(|x| Value::String(x.clone())).collect())
}

pub(crate) fn shuffled<T>(mut v: Vec<T>, rng: Rng) -> Vec<T> {
    for i in (1..v.len()).rev() {
        let j = rng(i as u32 + 1) as usize;
        v.swap(i, j);
    }
    v
}

/// Road distance from `from` to every town (by map order index; `u32::MAX` if unreachable),
/// passing only through towns for which `open` is true (`from` and the end towns always count).
pub(crate) fn distances_through(s: &State, from: &str, open: &dyn Fn(&str) -> bool) -> Vec<u32> {
    let mut d = vec![u32::MAX; s.scenario.map.towns.len()];
    let mut queue = VecDeque::new();
    d[s.scenario.town_rank(from)] = 0;
    queue.push_back(from.to_string());
    while let Some(t) = queue.pop_front() {
        let dt = d[s.scenario.town_rank(&t)];
        if dt > 0 && !open(&t) {
            continue;
        }
        for n in s.scenario.neighbors(&t) {
            let i = s.scenario.town_rank(&n);
            if d[i] == u32::MAX {
                d[i] = dt + 1;
                queue.push_back(n);
            }
        }
    }
    d
}

/// Road distance from `from` to every town (see [`distances_through`]), through any town.
pub(crate) fn distances(s: &State, from: &str) -> Vec<u32> {
    distances_through(s, from, &|_| true)
}
