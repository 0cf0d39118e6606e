//! The rules as pure functions of the state and of given die values, shared by the engine, the
//! order checks and the bots (so each rule is tested once, with fixed dice).

use serde::{Deserialize, Serialize};

use super::side::Side;
use super::state::{CombatResult, Command, Location, State};

/// How one firing is made: automatic hits plus dice, each 6 one more hit (§9 1-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FirePlan {
    /// Hits scored without rolling.
    pub automatic: u32,
    /// Dice to roll.
    pub dice: u32,
}

/// The ways a force of `strength` may fire with `divisor` strength per automatic hit (§9).
///
/// Without the optional rule there is one way: `strength / divisor` automatic hits and one die per
/// point of the remainder. With it (`optional`), the firing player may give up `k` automatic hits
/// for `k * divisor` more dice, never over `max_dice` dice. We allow `k` from 0 up to the first `k`
/// that reaches the dice limit (or every automatic hit, if fewer): giving up more hits would add no
/// dice. This reproduces the rulebook's lists exactly (7 -> 1 hit + 2 dice or 0 + 5; 13 along three
/// roads -> 4 + 1, 3 + 4 or 2 + 5; 13 along one road -> 2 + 3 or 1 + 5). The first entry is always
/// the plain rule.
pub fn fire_options(strength: u32, divisor: u32, optional: bool, max_dice: u32) -> Vec<FirePlan> {
    let automatic = strength / divisor;
    let remainder = strength % divisor;
    let mut out = vec![FirePlan { automatic, dice: remainder }];
    if !optional {
        return out;
    }
    let mut k = 0;
    while k < automatic && remainder + k * divisor < max_dice {
        k += 1;
        out.push(FirePlan { automatic: automatic - k, dice: (remainder + k * divisor).min(max_dice) });
    }
    out
}

/// Hits of a firing: its automatic hits plus one per die showing 6 (§9 1).
pub fn hits(plan: FirePlan, rolls: &[u32]) -> u32 {
    plan.automatic + rolls.iter().filter(|&&r| r == 6).count() as u32
}

/// Compares the hits (§9 3): tie or defender one ahead -> the attack fails; defender two or more
/// ahead -> the attacker also loses a corps; attacker one ahead -> the defenders retreat; attacker
/// two or more ahead -> the defender also loses a corps.
pub fn compare(attacker_hits: u32, defender_hits: u32) -> CombatResult {
    let diff = attacker_hits as i64 - defender_hits as i64;
    match diff {
        d if d <= -2 => CombatResult::AttackRepulsed,
        -1 | 0 => CombatResult::AttackFails,
        1 => CombatResult::DefenderRetreats,
        _ => CombatResult::DefenderRouted,
    }
}

/// Why corps `c` cannot take a command, or None if it can (§6): it is eliminated, it is advancing
/// on a town (on a road, about to attack), or it is in a town an enemy corps is advancing on.
pub fn command_block(s: &State, c: usize) -> Option<String> {
    match &s.corps[c].at {
        Location::Eliminated => Some("it has been eliminated".into()),
        Location::Advancing { to, .. } => Some(format!("it is advancing on {to} (§6)")),
        Location::Town { town } => {
            let side = s.corps[c].side;
            s.advancing_on(town)
                .iter()
                .any(|&e| s.corps[e].side != side)
                .then(|| format!("enemy corps are advancing on its town, {town} (§6)"))
        }
    }
}

/// True when corps `c` can take a command: [`command_block`] is None (without writing why not).
fn can_take_command(s: &State, c: usize) -> bool {
    debug_assert_eq!(can_take_command_now(s, c), command_block(s, c).is_none());
    can_take_command_now(s, c)
}

fn can_take_command_now(s: &State, c: usize) -> bool {
    match &s.corps[c].at {
        Location::Eliminated | Location::Advancing { .. } => false,
        Location::Town { town } => {
            let side = s.corps[c].side;
            !s.corps.iter().any(|e| e.side != side && matches!(&e.at, Location::Advancing { to, .. } if to == town))
        }
    }
}

/// True when the half (`card`, `upper`) of `side` names its army commander (Lee, Meade).
pub fn is_army_half(s: &State, side: Side, card: usize, upper: bool) -> bool {
    let a = s.scenario.army(side);
    a.cards[card].half(upper).eq_ignore_ascii_case(&a.army_commander)
}

/// The corps a corps-commander half names (None for the army commander's half).
pub fn half_corps(s: &State, side: Side, card: usize, upper: bool) -> Option<usize> {
    let name = s.scenario.army(side).cards[card].half(upper);
    (0..s.corps.len()).find(|&c| s.corps[c].side == side && s.corps[c].commander.eq_ignore_ascii_case(name))
}

/// What [`all_selections`] depends on, worked out from a state: how many cards may be played,
/// each card's halves (upper, lower) as the army commander's (`None`) or the corps it names, the
/// side's corps, those of them able to take a command, and whether the army commander is used.
#[derive(Clone, PartialEq, Eq)]
struct PlayKey {
    limit: usize,
    halves: std::rc::Rc<Halves>,
    corps: Vec<usize>,
    free: Vec<bool>,
    army_used: bool,
}

/// The memo's hasher is given one word, an FNV-1a of every field (equal keys give equal words),
/// instead of each element: it is asked at every order and order check of `pbem simulate`.
impl std::hash::Hash for PlayKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        let mut mix = |x: usize| h = (h ^ x as u64).wrapping_mul(0x100_0000_01b3);
        mix(self.limit);
        mix(usize::from(self.army_used));
        mix(self.halves.len());
        for half in self.halves.iter().flatten() {
            // None: the army commander's; Some(None): no corps; Some(Some(c)): corps c.
            mix(half.map_or(0, |c| c.map_or(1, |c| c + 2)));
        }
        mix(self.corps.len());
        self.corps.iter().for_each(|&c| mix(c));
        self.free.iter().for_each(|&f| mix(usize::from(f)));
        state.write_u64(h);
    }
}

/// Each card's halves (upper, lower) of one side: the army commander's (`None`) or the corps it
/// names.
type Halves = Vec<[Option<Option<usize>>; 2]>;

/// What a side's [`Halves`] were worked out from: the scenario (held, so that its address is not
/// another's while it is kept), the side, and each corps' side and commander.
type HalvesFrom = (std::sync::Arc<super::scenario::Scenario>, Side, Vec<(Side, String)>);

/// `side`'s [`Halves`] in `s`, worked out once per scenario and corps on this thread (each side's
/// last kept): every order and order check of `pbem simulate` asks, and working them out
/// compares every half's name with every corps commander's.
fn halves(s: &State, side: Side) -> std::rc::Rc<Halves> {
    thread_local! {
        static KEPT: std::cell::RefCell<Vec<(HalvesFrom, std::rc::Rc<Halves>)>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let same = |(sc, sd, corps): &HalvesFrom| {
        std::sync::Arc::ptr_eq(sc, &s.scenario)
            && *sd == side
            && corps.len() == s.corps.len()
            && corps.iter().zip(&s.corps).all(|((x, name), c)| *x == c.side && *name == c.commander)
    };
    if let Some(h) = KEPT.with_borrow(|v| v.iter().find(|(from, _)| same(from)).map(|(_, h)| h.clone())) {
        return h;
    }
    let half = |card, upper| if is_army_half(s, side, card, upper) { None } else { Some(half_corps(s, side, card, upper)) };
    let h: std::rc::Rc<Halves> = std::rc::Rc::new((0..s.scenario.army(side).cards.len()).map(|card| [half(card, true), half(card, false)]).collect());
    let from = (s.scenario.clone(), side, s.corps.iter().map(|c| (c.side, c.commander.clone())).collect());
    KEPT.with_borrow_mut(|v| {
        v.retain(|((_, sd, _), _)| *sd != side);
        v.push((from, h.clone()));
    });
    h
}

impl PlayKey {
    fn new(s: &State, side: Side) -> Self {
        let army = s.scenario.army(side);
        let corps = s.corps_of(side);
        PlayKey {
            limit: army.cards_to_play as usize,
            halves: halves(s, side),
            free: corps.iter().map(|&c| can_take_command(s, c)).collect(),
            corps,
            army_used: *s.army_used.get(side),
        }
    }

    /// Whether the half (`card`, `upper`) names the army commander.
    fn army(&self, card: usize, upper: bool) -> bool {
        self.halves[card][usize::from(!upper)].is_none()
    }
}

/// Every way `side` may play cards this command phase, of any size up to its cards to play: each
/// card at most once with one half up, every commanded corps able to take a command and commanded
/// once, the army commander's half only while unused, commanding any one such corps (§6).
fn all_selections(k: &PlayKey) -> Vec<Vec<Command>> {
    let mut out = vec![Vec::new()];
    for (card, halves) in k.halves.iter().enumerate() {
        let mut next = Vec::new();
        for sel in out {
            if sel.len() < k.limit {
                for (upper, half) in [(true, halves[0]), (false, halves[1])] {
                    let corps: Vec<usize> = match half {
                        None if k.army_used => vec![],
                        None => k.corps.clone(),
                        Some(named) => named.into_iter().collect(),
                    };
                    for c in corps {
                        // A corps named on a card is always one of the side's.
                        let free = k.corps.iter().position(|&x| x == c).is_some_and(|i| k.free[i]);
                        if free && !sel.iter().any(|x: &Command| x.corps == c) {
                            let mut more = sel.clone();
                            more.push(Command { card, upper, corps: c });
                            next.push(more);
                        }
                    }
                }
            }
            next.push(sel);
        }
        out = next;
    }
    out
}

/// [`card_counts`] and [`legal_selections`] of one [`PlayKey`].
type Plays = ((usize, usize), Vec<Vec<Command>>);

/// [`card_counts`] and [`legal_selections`] for what they depend on, worked out once per
/// [`PlayKey`] on this thread (the same few come back at every order and order check).
fn plays(s: &State, side: Side) -> std::rc::Rc<Plays> {
    thread_local! {
        static PLAYS: crate::memo::Memo<PlayKey, std::rc::Rc<Plays>> = crate::memo::Memo::new();
    }
    PLAYS.with(|m| m.get_or(PlayKey::new(s, side), |key| std::rc::Rc::new(work_out_plays(key))))
}

/// [`card_counts`] and [`legal_selections`] of `key`, worked out.
fn work_out_plays(key: &PlayKey) -> Plays {
    let all = all_selections(key);
    let army = |sel: &[Command]| sel.iter().any(|x| key.army(x.card, x.upper));
    let free = all.iter().filter(|x| !army(x)).map(Vec::len).max().unwrap_or(0);
    let counts = (free, all.iter().map(Vec::len).max().unwrap_or(0));
    let fits = |sel: &[Command]| sel.len() == counts.1 || (sel.len() == counts.0 && !army(sel));
    let mut legal: Vec<Vec<Command>> = all.into_iter().filter(|x| fits(x)).collect();
    legal.sort_by_key(|sel| (army(sel), sel.iter().map(|x| (x.card, !x.upper, x.corps)).collect::<Vec<_>>()));
    (counts, legal)
}

/// True when `sel` plays the army commander's half (Lee, Meade).
pub fn plays_army(s: &State, side: Side, sel: &[Command]) -> bool {
    sel.iter().any(|x| is_army_half(s, side, x.card, x.upper))
}

/// How many cards `side` may play: `(compulsory, most)`. Commands are compulsory (§6) only for the
/// halves that are not the army commander ("Lee and Meade may be used only once in the game": he
/// is never forced), so `compulsory` is the most cards playable without him and `most` the most
/// with him. A play is legal with `most` cards, or with `compulsory` cards without him.
pub fn card_counts(s: &State, side: Side) -> (usize, usize) {
    plays(s, side).0
}

/// Whether `sel` has a legal number of cards, given [`card_counts`]' `(free, most)`.
fn fits_count(s: &State, side: Side, sel: &[Command], (free, most): (usize, usize)) -> bool {
    sel.len() == most || (sel.len() == free && !plays_army(s, side, sel))
}

/// How many cards `side` must play without the army commander (see [`card_counts`]).
pub fn required_cards(s: &State, side: Side) -> usize {
    card_counts(s, side).0
}

/// Whether a play of `sel` has a legal number of cards (see [`card_counts`]).
pub fn legal_count(s: &State, side: Side, sel: &[Command]) -> bool {
    fits_count(s, side, sel, card_counts(s, side))
}

/// The legal plays of `side` (see [`card_counts`]), in a fixed order: plays without the army
/// commander first, then by card and half (upper before lower) and corps. The first is the NMR
/// default, so the default never plays Lee or Meade.
pub fn legal_selections(s: &State, side: Side) -> Selections {
    Selections(plays(s, side))
}

/// The legal plays of [`legal_selections`], shared with this thread's memo of them (read as a
/// slice of plays).
pub struct Selections(std::rc::Rc<Plays>);

impl std::ops::Deref for Selections {
    type Target = [Vec<Command>];

    fn deref(&self) -> &[Vec<Command>] {
        &self.0.1
    }
}

/// Moves corps `c` may make this round under `commands` (§8): 2 for the army commander's corps,
/// 1 for a corps commander's, 0 without a command.
pub fn allowed_steps(s: &State, side: Side, commands: &[Command], c: usize) -> u32 {
    match commands.iter().find(|x| x.corps == c) {
        Some(x) if is_army_half(s, side, x.card, x.upper) => 2,
        Some(_) => 1,
        None => 0,
    }
}

/// Where corps of `holder` may vacate `town` to when an enemy corps came in from `from` (§8): an
/// adjacent town with no enemy corps in it, other than the town the enemy came from.
pub fn vacate_options(s: &State, town: &str, holder: Side, from: &str) -> Vec<String> {
    s.scenario
        .neighbors(town)
        .into_iter()
        .filter(|n| n != from && s.in_town(holder.other(), n).is_empty())
        .collect()
}

/// Where defeated defenders of `defender` may retreat from `town` (§9 3): an adjacent town with no
/// enemy corps in it, not along a road with an enemy corps on it (the attackers' roads, and by our
/// reading any road an enemy corps is advancing along).
pub fn retreat_options(s: &State, town: &str, defender: Side) -> Vec<String> {
    let enemy = defender.other();
    s.scenario
        .neighbors(town)
        .into_iter()
        .filter(|n| s.in_town(enemy, n).is_empty() && !s.on_road(enemy, town, n))
        .collect()
}

/// Towns with corps advancing on them, in map order (§9).
pub fn combat_towns(s: &State) -> Vec<String> {
    s.scenario.map.towns.iter().filter(|t| !s.advancing_on(&t.name).is_empty()).map(|t| t.name.clone()).collect()
}

/// Number of distinct roads the corps advancing on a town use (§9 2).
pub fn roads_used(s: &State, attackers: &[usize]) -> usize {
    let mut froms: Vec<&str> = attackers
        .iter()
        .filter_map(|&c| match &s.corps[c].at {
            Location::Advancing { from, .. } => Some(from.as_str()),
            _ => None,
        })
        .collect();
    froms.sort();
    froms.dedup();
    froms.len()
}

/// The corps of `candidates` that a casualty list picks: the first listed that is a candidate.
pub fn pick_casualty(s: &State, list: &[String], candidates: &[usize]) -> Option<usize> {
    list.iter().find_map(|id| candidates.iter().copied().find(|&c| s.corps[c].id.eq_ignore_ascii_case(id)))
}

/// The NMR casualty: the weakest candidate (first in scenario order among equals).
pub fn weakest(s: &State, candidates: &[usize]) -> usize {
    *candidates.iter().min_by_key(|&&c| (s.corps[c].strength, c)).expect("a combat has corps on both sides")
}
