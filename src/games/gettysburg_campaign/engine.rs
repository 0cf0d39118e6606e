//! The turn sequence (§5-§10) as a resumable procedure: it runs from where the state stands until a
//! decision comes up that neither this step's answer nor a standing order answers, or the game ends.

use super::rules::{self, FirePlan};
use super::side::{Side, Sides};
use super::state::{Combat, CombatResult, CombatStep, Command, Entry, InitiativeRoll, Location, Question, Round, Stage, Standing, State, FirePolicy};
use crate::dice::Ctx;
use crate::text::{count, plural, wrap};
use crate::game::Outcome;

/// Columns of an event's text: the report puts it after "  - " and indents its continuation lines
/// under the text, so every line stays within 92 columns like the rest of the report.
pub const EVENT_WIDTH: usize = 88;

/// A public event, wrapped to [`EVENT_WIDTH`].
pub fn say(ctx: &mut Ctx, text: String) {
    ctx.say(wrap(&text, EVENT_WIDTH))
}

/// An event only `side` sees, wrapped to [`EVENT_WIDTH`].
pub fn tell(ctx: &mut Ctx, side: Side, text: String) {
    ctx.tell(&[side.role()], wrap(&text, EVENT_WIDTH))
}

/// A direct answer to the pending question, from this step's order file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Direct {
    /// vacate-or-defend.
    Vacate(VacateChoice),
    /// combat-order: every combat town, in order.
    CombatOrder(Vec<String>),
    /// fire-option: the automatic hits kept.
    Fire(u32),
    /// casualty: the corps removed.
    Casualty(usize),
    /// retreat: destinations for some or all retreating corps.
    Retreat(Vec<(usize, String)>),
}

/// The answer to an enemy's entry into a town (§8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VacateChoice {
    /// Hold the town: the enemy stops on the road, advancing on it.
    Defend,
    /// Leave: each corps goes to the given town.
    Vacate(Vec<(usize, String)>),
}

/// What the standing orders `st` of `holder` answer when the enemy enters `town` (§8): defend if
/// the town is in `defend`; vacate if it is in `vacate` and one of the listed destinations is in
/// `options` (every corps goes to the first such); else nothing (the player is asked).
pub fn standing_vacate(st: &Standing, s: &State, holder: Side, town: &str, options: &[String]) -> Option<VacateChoice> {
    if st.defend.iter().any(|t| t == town) {
        return Some(VacateChoice::Defend);
    }
    let dest = st.vacate.get(town)?.iter().find(|d| options.contains(d))?;
    Some(VacateChoice::Vacate(s.in_town(holder, town).into_iter().map(|c| (c, dest.clone())).collect()))
}

/// The combat order the Confederate standing list gives for `towns` (§9): listed towns first in
/// the list's order, then the rest in map order. Used only when at most one town is unlisted, so
/// the list really decides the order; otherwise None (the player is asked).
pub fn standing_combat_order(st: &Standing, towns: &[String]) -> Option<Vec<String>> {
    let mut order: Vec<String> = st.combat_order.iter().filter(|t| towns.contains(t)).cloned().collect();
    if order.len() + 1 < towns.len() {
        return None;
    }
    order.extend(towns.iter().filter(|t| !order.contains(t)).cloned().collect::<Vec<_>>());
    Some(order)
}

/// The firing a standing policy picks from `options` (first = plain rule): `never` the first,
/// `always` the last (most dice); `ask` or no policy: None.
pub fn standing_fire(st: &Standing, options: &[FirePlan]) -> Option<FirePlan> {
    match st.optional_fire? {
        FirePolicy::Never => options.first().copied(),
        FirePolicy::Always => options.last().copied(),
        FirePolicy::Ask => None,
    }
}

/// Per retreating corps, the first destination of the attacker's standing list for `town` that
/// is legal, if any.
pub fn standing_retreat(st: &Standing, town: &str, options: &[String]) -> Option<String> {
    st.retreat.get(town)?.iter().find(|d| options.contains(d)).cloned()
}

enum Flow {
    Next,
    Ask(Question),
}

/// Runs the turn sequence from the current stage, using `direct` for the pending question only,
/// until a question is left in `s.question` or the game is over.
pub fn run(s: &mut State, ctx: &mut Ctx, mut direct: Option<Direct>) {
    s.question = None;
    loop {
        let flow = match s.stage.clone() {
            Stage::Over => return,
            Stage::Command => command_phase(s, ctx),
            Stage::Movement { side, second } => movement(s, ctx, side, second, &mut direct),
            Stage::Combat(c) => combat(s, ctx, c, &mut direct),
        };
        if let Flow::Ask(q) = flow {
            s.question = Some(q);
            return;
        }
    }
}

/// §6: the sides with a corps that can take a command are asked for cards; if neither has one, the
/// round's movement is skipped (no initiative roll) and the combat phase begins.
fn command_phase(s: &mut State, ctx: &mut Ctx) -> Flow {
    // A side whose only possible command is its army commander's is asked too: he is never forced,
    // but may be played.
    let sides: Vec<Side> = Side::ALL.into_iter().filter(|&x| rules::card_counts(s, x).1 > 0).collect();
    if sides.is_empty() {
        say(ctx, format!(
            "Turn {}, round {}: neither side has a corps that can take a command; the combat phase begins (§6).",
            s.turn, s.round
        ));
        s.stage = Stage::Combat(Combat::default());
        return Flow::Next;
    }
    Flow::Ask(Question::Command { sides })
}

/// How a play reads in messages: "Reynolds commands I Corps".
pub fn describe_commands(s: &State, side: Side, cmds: &[Command]) -> String {
    if cmds.is_empty() {
        return "no card".into();
    }
    cmds.iter()
        .map(|x| {
            let name = s.scenario.army(side).cards[x.card].half(x.upper);
            let twice = if rules::is_army_half(s, side, x.card, x.upper) { ", which may move twice" } else { "" };
            format!("{name} commands {} Corps{twice}", s.corps[x.corps].id)
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// §7 with the cards both sides chose (§6): each side rolls a die, the higher has the initiative
/// and the cards are revealed; on a tie the round ends at once, no command is carried out, and a
/// played Lee or Meade returns to the hand unused without the opponent being told (§7).
pub fn apply_commands(s: &mut State, ctx: &mut Ctx, cmds: Sides<Vec<Command>>) {
    for side in Side::ALL {
        let mine = cmds.get(side);
        if !mine.is_empty() {
            tell(ctx, side, format!("You play: {}.", describe_commands(s, side, mine)));
        }
    }
    let c = ctx.d6(&format!("Confederate initiative, turn {} round {}", s.turn, s.round));
    let u = ctx.d6(&format!("Union initiative, turn {} round {}", s.turn, s.round));
    let winner = match c.cmp(&u) {
        std::cmp::Ordering::Greater => Some(Side::Confederate),
        std::cmp::Ordering::Less => Some(Side::Union),
        std::cmp::Ordering::Equal => None,
    };
    s.last_initiative = Some(InitiativeRoll { turn: s.turn, round: s.round, confederate: c, union: u, winner });
    let Some(w) = winner else {
        say(ctx, format!(
            "Initiative tie ({c} to {u}): the round ends, no command is carried out, the combat phase begins (§7)."
        ));
        for side in Side::ALL {
            if cmds.get(side).iter().any(|x| rules::is_army_half(s, side, x.card, x.upper)) {
                let name = &s.scenario.army(side).army_commander;
                tell(ctx, side, format!("{name} returns to your hand unused; your opponent is not told (§7)."));
            }
        }
        s.this_round.plans = Sides::default();
        s.stage = Stage::Combat(Combat::default());
        return;
    };
    say(ctx, format!("The {} player has the initiative (Confederate {c}, Union {u}) (§7).", w.name()));
    for side in Side::ALL {
        let mine = cmds.get(side);
        if !mine.is_empty() {
            say(ctx, format!("{} {} revealed: {}.", side.name(), if mine.len() == 1 { "card" } else { "cards" }, describe_commands(s, side, mine)));
        }
        if mine.iter().any(|x| rules::is_army_half(s, side, x.card, x.upper)) {
            *s.army_used.get_mut(side) = true;
        }
    }
    s.this_round.commands = cmds;
    s.this_round.initiative = Some(w);
    s.stage = Stage::Movement { side: w, second: false };
}

/// §8: a side's movement phase. Commanded corps move in the order of the cards played, each along
/// its planned road(s); a corps with a command and no plan makes the player be asked. Lee's or
/// Meade's corps may move twice. A non-initiative corps that vacated or defended cannot move.
fn movement(s: &mut State, ctx: &mut Ctx, side: Side, second: bool, direct: &mut Option<Direct>) -> Flow {
    if let Some(e) = s.this_round.entry.clone() {
        let holder = side.other();
        let options = rules::vacate_options(s, &e.to, holder, &e.from);
        let choice = match direct.take() {
            Some(Direct::Vacate(v)) => v,
            _ => match standing_vacate(s.standing.get(holder), s, holder, &e.to, &options) {
                Some(v) => {
                    tell(ctx, holder, format!("Your standing orders answer for {}.", e.to));
                    v
                }
                None => {
                    return Flow::Ask(Question::VacateOrDefend { side: holder, town: e.to, mover: e.mover, from: e.from, options });
                }
            },
        };
        s.this_round.entry = None;
        resolve_entry(s, ctx, &e, choice, !second);
    }
    loop {
        let cmds = s.this_round.commands.get(side).clone();
        let Some(c) = cmds.iter().map(|x| x.corps).find(|c| !s.this_round.finished.contains(c)) else {
            if second {
                end_round(s, ctx);
            } else {
                s.stage = Stage::Movement { side: side.other(), second: true };
            }
            return Flow::Next;
        };
        let taken = s.this_round.steps.get(&c).copied().unwrap_or(0);
        let allowed = rules::allowed_steps(s, side, &cmds, c);
        let had_plan = s.this_round.plans.get(side).get(&c).is_some_and(|p| !p.is_empty());
        if s.this_round.locked.contains(&c) {
            if had_plan {
                tell(ctx, side, format!("Your {} vacated or defended this round and cannot move (§8).", s.short(c)));
            }
            s.this_round.finished.push(c);
            continue;
        }
        let Some(from) = s.town_of(c).map(str::to_string) else {
            s.this_round.finished.push(c);
            continue;
        };
        if taken >= allowed {
            s.this_round.finished.push(c);
            continue;
        }
        let plan = s.this_round.plans.get(side).get(&c).cloned();
        match plan {
            None => return Flow::Ask(Question::Move { side, corps: c }),
            Some(p) if p.is_empty() => {
                if taken == 0 {
                    say(ctx, format!("{} stays in {from}.", s.label(c)));
                }
                s.this_round.finished.push(c);
            }
            Some(p) => {
                let to = p[0].clone();
                if !s.scenario.adjacent(&from, &to) {
                    tell(ctx, side, format!("Your planned move of {} to {to} is not possible from {from}; you are asked again.", s.short(c)));
                    s.this_round.plans.get_mut(side).remove(&c);
                    continue;
                }
                s.this_round.plans.get_mut(side).get_mut(&c).expect("plan").remove(0);
                *s.this_round.steps.entry(c).or_insert(0) += 1;
                s.this_round.moved_any = true;
                if step_into(s, ctx, c, &from, &to, !second) {
                    return Flow::Next;
                }
            }
        }
    }
}

/// One move of corps `c` from `from` to the adjacent `to` (§8). Into an empty or friendly town it
/// just enters. Into an enemy-held town that the enemy already defends against this side, it
/// stops on the road, advancing (the decision is final). Otherwise the enemy must vacate or defend:
/// with nowhere to vacate to it defends; else the entry waits for the decision (returns true).
fn step_into(s: &mut State, ctx: &mut Ctx, c: usize, from: &str, to: &str, initiative_phase: bool) -> bool {
    let side = s.corps[c].side;
    let holders = s.in_town(side.other(), to);
    if holders.is_empty() {
        say(ctx, format!("{} moves from {from} to {to}.", s.label(c)));
        place(s, ctx, c, to);
        return false;
    }
    if s.advancing_on(to).iter().any(|&x| s.corps[x].side == side) {
        say(ctx, format!(
            "{} moves from {from} toward {to}, which the {} already defends: it stops on the road, advancing on {to} (§8).",
            s.label(c),
            side.other().army()
        ));
        advance(s, c, from, to);
        return false;
    }
    say(ctx, format!("{} moves from {from} into {to}, held by {} {} Corps.", s.label(c), side.other().name(), s.ids(&holders)));
    let e = Entry { mover: c, from: from.to_string(), to: to.to_string() };
    if rules::vacate_options(s, to, side.other(), from).is_empty() {
        say(ctx, format!(
            "The {} {} Corps in {to} {} no town to vacate to and must defend it (§8).",
            side.other().name(),
            s.ids(&holders),
            if holders.len() == 1 { "has" } else { "have" }
        ));
        resolve_entry(s, ctx, &e, VacateChoice::Defend, initiative_phase);
        return false;
    }
    s.this_round.entry = Some(e);
    true
}

fn advance(s: &mut State, c: usize, from: &str, to: &str) {
    s.corps[c].at = Location::Advancing { from: from.to_string(), to: to.to_string() };
    s.this_round.finished.push(c);
    let side = s.corps[c].side;
    s.this_round.plans.get_mut(side).remove(&c);
}

/// Carries out the vacate-or-defend decision (§8). Defend: the mover stops on the road, advancing
/// on the town, and moves no further this round. Vacate: the holders leave for their towns and the
/// mover enters. During the initiative player's movement the holders (non-initiative corps) cannot
/// move for the rest of the round either way.
fn resolve_entry(s: &mut State, ctx: &mut Ctx, e: &Entry, choice: VacateChoice, lock: bool) {
    let holder = s.corps[e.mover].side.other();
    let holders = s.in_town(holder, &e.to);
    match choice {
        VacateChoice::Defend => {
            say(ctx, format!(
                "The {} defends {} ({} Corps): {} stops on the road from {}, advancing (§8).",
                holder.army(),
                e.to,
                s.ids(&holders),
                s.label(e.mover),
                e.from
            ));
            advance(s, e.mover, &e.from, &e.to);
        }
        VacateChoice::Vacate(dests) => {
            for (c, d) in &dests {
                say(ctx, format!("{} vacates {} for {d} (§8).", s.label(*c), e.to));
                place(s, ctx, *c, d);
            }
            place(s, ctx, e.mover, &e.to);
        }
    }
    if lock {
        s.this_round.locked.extend(holders);
    }
}

/// §8: after the non-initiative player's movement, a new round begins if any corps moved;
/// otherwise the combat phase begins.
fn end_round(s: &mut State, ctx: &mut Ctx) {
    if s.this_round.moved_any {
        s.round += 1;
        s.this_round = Round::default();
        s.stage = Stage::Command;
    } else {
        say(ctx, "No corps moved this round: the combat phase begins (§8).".to_string());
        s.stage = Stage::Combat(Combat::default());
    }
}

/// Puts corps `c` in `town`; a Confederate corps entering a town scores its points the first time
/// (§4: each town once, never lost).
fn place(s: &mut State, ctx: &mut Ctx, c: usize, town: &str) {
    s.corps[c].at = Location::Town { town: town.to_string() };
    let pts = s.scenario.points(town);
    if s.corps[c].side == Side::Confederate && pts > 0 && !s.scored.iter().any(|x| x == town) {
        s.scored.push(town.to_string());
        say(ctx, format!(
            "The Confederates enter {town} for the first time and score {} (total {}) (§4).",
            plural(pts, "point"),
            s.points()
        ));
    }
}

fn eliminate(s: &mut State, ctx: &mut Ctx, c: usize, why: &str) {
    s.corps[c].at = Location::Eliminated;
    say(ctx, format!("{} is eliminated: {why}.", s.label(c)));
}

/// The plan of fire for a force: the plain rule, or under the optional rule this step's answer, a
/// standing policy, or else a question (§9).
#[allow(clippy::too_many_arguments)]
fn choose_fire(
    s: &State,
    side: Side,
    town: &str,
    attacking: bool,
    strength: u32,
    divisor: u32,
    defender_hits: Option<u32>,
    direct: &mut Option<Direct>,
) -> Result<FirePlan, Question> {
    let options = rules::fire_options(strength, divisor, s.optional_fire, s.scenario.rules.optional_fire_max_dice);
    if options.len() == 1 {
        return Ok(options[0]);
    }
    if let Some(Direct::Fire(auto)) = direct.take()
        && let Some(p) = options.iter().find(|p| p.automatic == auto)
    {
        return Ok(*p);
    }
    standing_fire(s.standing.get(side), &options).ok_or_else(|| Question::FireOption {
        side,
        town: town.to_string(),
        attacking,
        strength,
        divisor,
        defender_hits,
    })
}

/// Rolls a firing (§9 1-2) and returns its hits.
fn fire(ctx: &mut Ctx, side: Side, who: &str, town: &str, plan: FirePlan) -> u32 {
    let rolls: Vec<u32> = (1..=plan.dice)
        .map(|i| ctx.d6(&format!("{} {who}'s fire at {town}, die {i} of {}", side.name(), plan.dice)))
        .collect();
    let h = rules::hits(plan, &rolls);
    say(ctx, format!(
        "{} {who}'s fire at {town}: {} and {} -> {}.",
        side.name(),
        plural(plan.automatic, "automatic hit"),
        count(plan.dice, "die", "dice"),
        plural(h, "hit")
    ));
    h
}

/// §9: the combat phase. The Confederate player orders the towns (asked when there are several
/// and no standing list decides); at each town the defender fires, then the attacker, and the
/// comparison is carried out (casualty, return or retreat, and the winners entering the town).
fn combat(s: &mut State, ctx: &mut Ctx, mut c: Combat, direct: &mut Option<Direct>) -> Flow {
    macro_rules! ask {
        ($q:expr) => {{
            let q = $q;
            s.stage = Stage::Combat(c);
            return Flow::Ask(q);
        }};
    }
    if !c.started {
        c.started = true;
        c.towns = rules::combat_towns(s);
        if c.towns.is_empty() {
            say(ctx, format!("Turn {} combat phase: no corps is advancing on a town, so there is no combat.", s.turn));
        } else {
            say(ctx, format!("Turn {} combat phase: combat at {}.", s.turn, c.towns.join(", ")));
        }
    }
    if !c.ordered {
        if c.towns.len() > 1 {
            let order = match direct.take() {
                Some(Direct::CombatOrder(o)) => o,
                _ => match standing_combat_order(s.standing.get(Side::Confederate), &c.towns) {
                    Some(o) => o,
                    None => ask!(Question::CombatOrder { towns: c.towns.clone() }),
                },
            };
            say(ctx, format!("The Confederate player resolves the combats in this order: {} (§9).", order.join(", ")));
            c.towns = order;
        }
        c.ordered = true;
    }
    while c.index < c.towns.len() {
        let town = c.towns[c.index].clone();
        let attackers = s.advancing_on(&town);
        let Some(&first) = attackers.first() else {
            c.index += 1;
            c.step = CombatStep::DefenderFire;
            continue;
        };
        let att = s.corps[first].side;
        let def = att.other();
        let defenders = s.in_town(def, &town);
        if defenders.is_empty() {
            for a in attackers {
                say(ctx, format!("{} enters {town}, which no defender holds any more.", s.label(a)));
                place(s, ctx, a, &town);
            }
            c.index += 1;
            c.step = CombatStep::DefenderFire;
            continue;
        }
        match c.step.clone() {
            CombatStep::DefenderFire => {
                let strength = s.strength(&defenders);
                let divisor = s.scenario.rules.defender_divisor;
                let roads = rules::roads_used(s, &attackers);
                say(ctx, format!(
                    "Combat at {town}: {} {} Corps (strength {}, along {}) {} {} {} Corps (strength {strength}).",
                    att.name(),
                    s.ids(&attackers),
                    s.strength(&attackers),
                    plural(roads as u32, "road"),
                    if attackers.len() == 1 { "attacks" } else { "attack" },
                    def.name(),
                    s.ids(&defenders)
                ));
                let plan = match choose_fire(s, def, &town, false, strength, divisor, None, direct) {
                    Ok(p) => p,
                    Err(q) => ask!(q),
                };
                let h = fire(ctx, def, "defender", &town, plan);
                c.step = CombatStep::AttackerFire { defender_hits: h };
            }
            CombatStep::AttackerFire { defender_hits } => {
                let strength = s.strength(&attackers);
                let divisor = s.scenario.attack_divisor(rules::roads_used(s, &attackers));
                let plan = match choose_fire(s, att, &town, true, strength, divisor, Some(defender_hits), direct) {
                    Ok(p) => p,
                    Err(q) => ask!(q),
                };
                let h = fire(ctx, att, "attacker", &town, plan);
                let result = rules::compare(h, defender_hits);
                say(ctx, format!(
                    "At {town}: attacker {}, defender {}: {} (§9 3).",
                    plural(h, "hit"),
                    plural(defender_hits, "hit"),
                    result_text(result)
                ));
                let casualty_pending = matches!(result, CombatResult::AttackRepulsed | CombatResult::DefenderRouted);
                c.step = CombatStep::Result { result, casualty_pending };
            }
            CombatStep::Result { result, casualty_pending } => {
                let attack_lost = matches!(result, CombatResult::AttackFails | CombatResult::AttackRepulsed);
                if casualty_pending {
                    let (loser, candidates) = if attack_lost { (att, attackers.clone()) } else { (def, defenders.clone()) };
                    let pick = if candidates.len() == 1 {
                        candidates[0]
                    } else {
                        match direct.take() {
                            Some(Direct::Casualty(x)) if candidates.contains(&x) => x,
                            _ => match rules::pick_casualty(s, &s.standing.get(loser).casualties, &candidates) {
                                Some(x) => x,
                                None => ask!(Question::Casualty { side: loser, town: town.clone(), candidates }),
                            },
                        }
                    };
                    eliminate(s, ctx, pick, &format!("the {} player removes it after the combat at {town} (§9 3)", loser.name()));
                    c.step = CombatStep::Result { result, casualty_pending: false };
                    continue;
                }
                if attack_lost {
                    for a in attackers {
                        return_attacker(s, ctx, a);
                    }
                } else {
                    let options = rules::retreat_options(s, &town, def);
                    let mut moves: Vec<(usize, String)> = Vec::new();
                    if options.len() == 1 {
                        moves = defenders.iter().map(|&d| (d, options[0].clone())).collect();
                    } else if options.len() > 1 {
                        let given = match direct.take() {
                            Some(Direct::Retreat(v)) => v,
                            _ => Vec::new(),
                        };
                        for &d in &defenders {
                            let dest = given
                                .iter()
                                .find(|(x, to)| *x == d && options.contains(to))
                                .map(|(_, to)| to.clone())
                                .or_else(|| standing_retreat(s.standing.get(att), &town, &options));
                            match dest {
                                Some(to) => moves.push((d, to)),
                                None => ask!(Question::Retreat { side: att, town: town.clone(), corps: defenders.clone(), options }),
                            }
                        }
                    }
                    for &d in &defenders {
                        match moves.iter().find(|(x, _)| *x == d) {
                            Some((_, to)) => {
                                say(ctx, format!("{} retreats from {town} to {to} (§9 3).", s.label(d)));
                                place(s, ctx, d, to);
                            }
                            None => eliminate(s, ctx, d, &format!("it cannot retreat from {town} (§9 3)")),
                        }
                    }
                    for a in attackers {
                        say(ctx, format!("{} enters {town}.", s.label(a)));
                        place(s, ctx, a, &town);
                    }
                }
                c.index += 1;
                c.step = CombatStep::DefenderFire;
            }
        }
    }
    end_turn(s, ctx);
    Flow::Next
}

fn result_text(r: CombatResult) -> &'static str {
    match r {
        CombatResult::AttackFails => "the attack fails; the attackers return",
        CombatResult::AttackRepulsed => "the attack is repulsed (the attacker loses a corps, the rest return)",
        CombatResult::DefenderRetreats => "the defenders retreat",
        CombatResult::DefenderRouted => "the defenders are routed (the defender loses a corps, the rest retreat)",
    }
}

/// §9 3: a failed attacker returns to the town it came from, and is removed if an enemy corps is
/// there.
fn return_attacker(s: &mut State, ctx: &mut Ctx, a: usize) {
    let Location::Advancing { from, .. } = s.corps[a].at.clone() else { return };
    if s.in_town(s.corps[a].side.other(), &from).is_empty() {
        say(ctx, format!("{} returns to {from} (§9 3).", s.label(a)));
        place(s, ctx, a, &from);
    } else {
        eliminate(s, ctx, a, &format!("it cannot return to {from}, which the enemy holds (§9 3)"));
    }
}

/// §10: the turn ends. The game ends after the last turn's combat phase; by our reading it also
/// ends at the end of any turn in which the Confederates have the points they need, since points
/// are never lost (§4) and the result can no longer change.
fn end_turn(s: &mut State, ctx: &mut Ctx) {
    let p = s.points();
    let need = s.scenario.rules.victory_points;
    let last = s.scenario.rules.last_turn;
    say(ctx, format!("Turn {} ends. Confederate points: {p} of the {need} needed.", s.turn));
    let outcome = if p >= need {
        Some(Outcome {
            winner: Some(Side::Confederate.role().into()),
            summary: format!("Confederates win: they scored {} (of {need} needed) by the end of turn {}", plural(p, "point"), s.turn),
        })
    } else if s.turn >= last {
        Some(Outcome {
            winner: Some(Side::Union.role().into()),
            summary: format!("Union wins: the Confederates scored {p} of the {} needed by the end of turn {last}", plural(need, "point")),
        })
    } else {
        None
    };
    match outcome {
        Some(o) => {
            say(ctx, format!("Game over. {}.", o.summary));
            s.outcome = Some(o);
            s.stage = Stage::Over;
            s.question = None;
        }
        None => {
            s.turn += 1;
            s.round = 1;
            s.this_round = Round::default();
            s.stage = Stage::Command;
        }
    }
}
