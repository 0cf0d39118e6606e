//! The rules as pure checks: the shape of a First Minnesota activation (`Plan`, `Attack`), what
//! a pull from the success bag showed (`Tally`), and whether a move, shot, melee or whole plan is
//! legal from where the state stands. Below the engine, the orders and the summary (they all read
//! these; none of them is read here).

use super::hex::Space;
use super::state::{Side, State};

/// Shoot or melee (Player Activations: Shoot, Melee).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttackKind {
    /// An aimed shot.
    Shoot,
    /// A melee against an adjacent company.
    Melee,
}

/// One attack: its kind, the Confederate company attacked (index) and the tokens pulled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attack {
    /// Shoot or melee.
    pub kind: AttackKind,
    /// The target (index into companies).
    pub target: usize,
    /// Tokens pulled from the success bag (1 to the scenario's maximum).
    pub tokens: u32,
}

/// One First Minnesota activation (Player Activations): spaces moved before the attack, the attack
/// and spaces moved after it. The eight actions of the rulebook are the legal shapes: move one or
/// two; shoot; move one then shoot; shoot then move one; melee; move one then melee; melee then
/// move one; pass (nothing at all).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Spaces entered before the attack, in order.
    pub before: Vec<Space>,
    /// The attack, if any.
    pub attack: Option<Attack>,
    /// Spaces entered after the attack.
    pub after: Vec<Space>,
}

impl Plan {
    /// The action's name as order files write it.
    pub fn action(&self) -> &'static str {
        match (self.before.is_empty(), self.attack.map(|a| a.kind), self.after.is_empty()) {
            (true, None, true) => "pass",
            (false, None, _) => "move",
            (true, Some(AttackKind::Shoot), true) => "shoot",
            (false, Some(AttackKind::Shoot), _) => "move-shoot",
            (true, Some(AttackKind::Shoot), false) => "shoot-move",
            (true, Some(AttackKind::Melee), true) => "melee",
            (false, Some(AttackKind::Melee), _) => "move-melee",
            (true, Some(AttackKind::Melee), false) => "melee-move",
            (true, None, false) => "move",
        }
    }
}

/// The eight action names (Player Activations).
pub const ACTIONS: &[&str] = &["pass", "move", "shoot", "move-shoot", "shoot-move", "melee", "move-melee", "melee-move"];

/// What one pull from the success bag showed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    /// First Minnesota successes.
    pub union_success: u32,
    /// First Minnesota flames.
    pub union_flame: u32,
    /// Confederate successes.
    pub confederate_success: u32,
    /// Confederate flames.
    pub confederate_flame: u32,
}

// ---------------------------------------------------------------------------------------------
// Movement

/// The map's columns and rows.
pub fn cols_rows(s: &State) -> (u32, u32) {
    (s.scenario.map.columns, s.scenario.map.rows)
}

/// Checks a First Minnesota move of company `i` from `from` along `path` (Player Activations:
/// Move): each space next to the one before, none holding a Confederate company (a company moves
/// through friendly companies only), and the last one empty. Returns the problem, if any.
pub fn check_path(s: &State, i: usize, from: Space, path: &[Space]) -> Result<(), String> {
    match path_fault(s, i, from, path) {
        None => Ok(()),
        Some(PathFault::OffMap(p)) => Err(format!("{} is off the map", p.name())),
        Some(PathFault::Stays(p)) => Err(format!("the path stays on {} (each space of a path is a step to a neighbouring space)", p.name())),
        Some(PathFault::NotNext(p, prev)) => Err(format!("{} is not next to {}", p.name(), prev.name())),
        Some(PathFault::Enemy(p, j)) => Err(format!("{} holds {}; you may move only through friendly companies", p.name(), s.label(j))),
        Some(PathFault::Ends(p, j)) => Err(format!("{} holds {}; a move may not end on another company", p.name(), s.label(j))),
        Some(PathFault::Back) => Err(format!("the path ends back on {}, where it started: that is a pass, not a move", from.name())),
    }
}

/// True when [`check_path`] passes (no text written: the built-in player's path search).
pub fn path_ok(s: &State, i: usize, from: Space, path: &[Space]) -> bool {
    path_fault(s, i, from, path).is_none()
}

/// Why a path fails [`check_path`], its text not yet written.
enum PathFault {
    OffMap(Space),
    Stays(Space),
    /// A space and the one before it.
    NotNext(Space, Space),
    /// A space and the enemy company on it.
    Enemy(Space, usize),
    /// The last space and the company on it.
    Ends(Space, usize),
    Back,
}

/// The first fault of a path, as [`check_path`] reads it.
fn path_fault(s: &State, i: usize, from: Space, path: &[Space]) -> Option<PathFault> {
    let (c, r) = cols_rows(s);
    let mut prev = from;
    for (k, &p) in path.iter().enumerate() {
        if p.col >= c || p.row >= r {
            return Some(PathFault::OffMap(p));
        }
        if p == prev {
            return Some(PathFault::Stays(p));
        }
        if !p.adjacent(prev) {
            return Some(PathFault::NotNext(p, prev));
        }
        if let Some(j) = s.at(p).filter(|&j| j != i) {
            if s.companies[j].side != s.companies[i].side {
                return Some(PathFault::Enemy(p, j));
            }
            if k + 1 == path.len() {
                return Some(PathFault::Ends(p, j));
            }
        }
        prev = p;
    }
    (path.len() > 1 && path.last() == Some(&from)).then_some(PathFault::Back)
}

/// True when an enemy of company `i` stands next to `p` (ignoring `i` itself).
pub fn enemy_next_to(s: &State, i: usize, p: Space) -> bool {
    let side = s.companies[i].side.other();
    s.active(side).into_iter().any(|j| s.companies[j].at.is_some_and(|q| q.adjacent(p)))
}

/// Checks company `i` may shoot at `target` from `from` (Player Activations: Shoot): it has its gun
/// marker and no enemy company is next to it.
pub fn check_shoot(s: &State, i: usize, from: Space, target: usize) -> Result<(), String> {
    if !s.companies[i].gun {
        return Err(format!("company {} has no gun marker and cannot shoot", s.companies[i].letter));
    }
    if enemy_next_to(s, i, from) {
        return Err("a company next to an enemy company (in melee) cannot shoot".into());
    }
    if s.companies[target].at.is_none() {
        return Err("the target is not on the map".into());
    }
    Ok(())
}

/// Checks company `i` may melee `target` from `from` (Player Activations: Melee): next to it.
pub fn check_melee(s: &State, from: Space, target: usize) -> Result<(), String> {
    match s.companies[target].at {
        Some(q) if q.adjacent(from) => Ok(()),
        _ => Err(format!("{} is not next to {}", s.label(target), from.name())),
    }
}

/// Checks a whole plan for company `i` against the current position. Returns (field, problem).
pub fn check_plan(s: &State, i: usize, plan: &Plan) -> Result<(), (&'static str, String)> {
    let Some(from) = s.companies[i].at else { return Err(("", "the company is not on the map".into())) };
    let max_before = if plan.attack.is_some() { 1 } else { 2 };
    if plan.before.len() > max_before || plan.after.len() > 1 || (!plan.before.is_empty() && !plan.after.is_empty()) {
        return Err(("path", "move one or two spaces, or one space before or after an attack".into()));
    }
    if plan.attack.is_none() && !plan.after.is_empty() {
        return Err(("path", "a move without an attack is given as the spaces moved".into()));
    }
    check_path(s, i, from, &plan.before).map_err(|e| ("path", e))?;
    let pos = plan.before.last().copied().unwrap_or(from);
    if let Some(a) = plan.attack {
        if s.companies[a.target].side != Side::Confederate || s.companies[a.target].at.is_none() {
            return Err(("target", "the target must be a Confederate company on the map".into()));
        }
        let limit = s.scenario.token_limit(a.kind == AttackKind::Melee);
        if a.tokens == 0 || a.tokens > limit {
            return Err(("tokens", format!("pull 1 to {limit} tokens")));
        }
        match a.kind {
            AttackKind::Shoot => check_shoot(s, i, pos, a.target).map_err(|e| ("target", e))?,
            AttackKind::Melee => check_melee(s, pos, a.target).map_err(|e| ("target", e))?,
        }
        check_path(s, i, pos, &plan.after).map_err(|e| ("path", e))?;
    }
    Ok(())
}
