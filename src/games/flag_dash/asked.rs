//! Who is asked what right now, read from the state alone: the seats asked for a layout, a
//! spy's replacement or target, a same-team tie; the move order those questions wait on; and
//! what a seat's supply lets it answer. Below the orders, the engine and the forms (all three ask
//! these questions; none of them is asked here).

use super::layout::Team;
use super::state::{Stage, State, Token};

/// The move order of move `mv` (Flag Dash, Determine Move Order): lowest token first; a tie
/// between teams goes to the team holding the tiebreak marker; a tie between teammates goes to the
/// teammate both stated (`tie_first`; if only one stated, that one; an answer to the tie question
/// overrides). `Err(team)` when that team's same-team tie is undecided.
pub fn order(s: &State, mv: u8) -> Result<Vec<String>, Team> {
    let mut entries: Vec<(u8, bool, String, Team)> = Vec::new();
    for seat in &s.seats {
        if let Some(m) = s.plans.get(&seat.role).and_then(|p| p.moves.get(mv as usize - 1)) {
            entries.push((m.token.priority(), seat.team != s.tiebreak, seat.role.clone(), seat.team));
        }
    }
    entries.sort();
    for i in 1..entries.len() {
        let (a, b) = (&entries[i - 1], &entries[i]);
        if a.0 == b.0 && a.3 == b.3 {
            let team = a.3;
            let first = match s.tie_answers.get(team.key()) {
                Some(r) => Some(r.clone()),
                None => {
                    let mut stated: Vec<String> = [&a.2, &b.2].iter().filter_map(|r| s.plans.get(*r).and_then(|p| p.tie_first.clone())).collect();
                    stated.sort();
                    stated.dedup();
                    if stated.len() == 1 { Some(stated.remove(0)) } else { None }
                }
            };
            match first {
                Some(r) if r == b.2 => entries.swap(i - 1, i),
                Some(_) => {}
                None => return Err(team),
            }
        }
    }
    Ok(entries.into_iter().map(|e| e.2).collect())
}

/// The seats asked for a secret custom layout: each team's first seat.
pub fn layout_asked(s: &State) -> Vec<String> {
    if s.stage != Stage::Layout {
        return Vec::new();
    }
    Team::ALL.iter().map(|t| s.team_roles(*t)[0].to_string()).collect()
}

/// The seat asked to replace its spy token in the current move (Character Abilities, Spy), the
/// first in seat order when several played one.
pub fn spy_asked(s: &State) -> Option<String> {
    let Stage::Move { mv } = s.stage else { return None };
    s.seats
        .iter()
        .find(|x| s.plans.get(&x.role).and_then(|p| p.moves.get(mv as usize - 1)).is_some_and(|m| m.token == Token::Spy))
        .map(|x| x.role.clone())
}

/// The seat asked to break an undecided same-team tie: the team's first seat (our choice; the
/// rulebook lets teammates agree, which a mail game cannot wait for twice).
pub fn tie_asked(s: &State) -> Option<String> {
    match s.stage {
        Stage::Move { mv } if spy_asked(s).is_none() => order(s, mv).err().map(|t| s.team_roles(t)[0].to_string()),
        _ => None,
    }
}

/// True when `role`, asked as the spy, has yet to name the opponent (Character Abilities, Spy).
pub fn spy_target_asked(s: &State, role: &str) -> bool {
    let Stage::Move { mv } = s.stage else { return false };
    s.plans.get(role).and_then(|p| p.moves.get(mv as usize - 1)).is_some_and(|m| m.token == Token::Spy && m.spy_on.is_none())
}

/// True when `role` may plan only its first move (only the reset token left; Priority Tokens,
/// Reset note). Spy tokens count for no token here: each must be replaced by another when
/// revealed (Character Abilities, Spy); README "Flag Dash orders" gives this reading and the other.
pub fn reset_only(s: &State, role: &str) -> bool {
    s.seat(role).is_some_and(|x| x.tokens.iter().filter(|t| **t != Token::Spy).count() == 1 && x.tokens.contains(&Token::N(7)))
}

/// The tokens that may replace `role`'s spy token: those behind its screen, spy tokens excepted
/// (Character Abilities, Spy: each spy token is used only once).
pub fn spy_choices(s: &State, role: &str) -> Vec<String> {
    s.seat(role).map(|x| x.tokens.iter().filter(|t| **t != Token::Spy).map(|t| t.key()).collect()).unwrap_or_default()
}
