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

/// A public event, written by `text` and wrapped to [`EVENT_WIDTH`] (neither for a quiet
/// context, which keeps none).
pub fn say(ctx: &mut Ctx, text: impl FnOnce() -> String) {
    if !ctx.is_quiet() {
        ctx.say(wrap(&text(), EVENT_WIDTH))
    }
}

/// An event only `side` sees, written by `text` and wrapped to [`EVENT_WIDTH`] (neither for a
/// quiet context).
pub fn tell(ctx: &mut Ctx, side: Side, text: impl FnOnce() -> String) {
    if !ctx.is_quiet() {
        ctx.tell(&[side.role()], wrap(&text(), EVENT_WIDTH))
    }
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
        say(ctx, || format!(
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
            tell(ctx, side, || format!("You play: {}.", describe_commands(s, side, mine)));
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
        say(ctx, || format!(
            "Initiative tie ({c} to {u}): the round ends, no command is carried out, the combat phase begins (§7)."
        ));
        for side in Side::ALL {
            if cmds.get(side).iter().any(|x| rules::is_army_half(s, side, x.card, x.upper)) {
                let name = &s.scenario.army(side).army_commander;
                tell(ctx, side, || format!("{name} returns to your hand unused; your opponent is not told (§7)."));
            }
        }
        s.this_round.plans = Sides::default();
        s.stage = Stage::Combat(Combat::default());
        return;
    };
    say(ctx, || format!("The {} player has the initiative (Confederate {c}, Union {u}) (§7).", w.name()));
    for side in Side::ALL {
        let mine = cmds.get(side);
        if !mine.is_empty() {
            say(ctx, || format!("{} {} revealed: {}.", side.name(), if mine.len() == 1 { "card" } else { "cards" }, describe_commands(s, side, mine)));
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
                    tell(ctx, holder, || format!("Your standing orders answer for {}.", e.to));
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
                tell(ctx, side, || format!("Your {} vacated or defended this round and cannot move (§8).", s.short(c)));
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
                    say(ctx, || format!("{} stays in {from}.", s.label(c)));
                }
                s.this_round.finished.push(c);
            }
            Some(p) => {
                let to = p[0].clone();
                if !s.scenario.adjacent(&from, &to) {
                    tell(ctx, side, || format!("Your planned move of {} to {to} is not possible from {from}; you are asked again.", s.short(c)));
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
        say(ctx, || format!("{} moves from {from} to {to}.", s.label(c)));
        place(s, ctx, c, to);
        return false;
    }
    if s.advancing_on(to).iter().any(|&x| s.corps[x].side == side) {
        say(ctx, || format!(
            "{} moves from {from} toward {to}, which the {} already defends: it stops on the road, advancing on {to} (§8).",
            s.label(c),
            side.other().army()
        ));
        advance(s, c, from, to);
        return false;
    }
    say(ctx, || format!("{} moves from {from} into {to}, held by {} {} Corps.", s.label(c), side.other().name(), s.ids(&holders)));
    let e = Entry { mover: c, from: from.to_string(), to: to.to_string() };
    if rules::vacate_options(s, to, side.other(), from).is_empty() {
        say(ctx, || format!(
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
            say(ctx, || format!(
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
                say(ctx, || format!("{} vacates {} for {d} (§8).", s.label(*c), e.to));
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
        say(ctx, || "No corps moved this round: the combat phase begins (§8).".to_string());
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
        say(ctx, || format!(
            "The Confederates enter {town} for the first time and score {} (total {}) (§4).",
            plural(pts, "point"),
            s.points()
        ));
    }
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

/// The two forces of one town's combat (§9): the corps advancing on the town attack, the enemy
/// corps in it defend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Battle {
    /// The town fought for.
    pub town: String,
    /// The attacking side.
    pub attacker: Side,
    /// The corps advancing on the town.
    pub attackers: Vec<usize>,
    /// The enemy corps in the town (none once every defender is gone).
    pub defenders: Vec<usize>,
    /// How many roads the attackers come along (§9 2).
    pub roads: usize,
}

impl Battle {
    /// The defending side.
    pub fn defender(&self) -> Side {
        self.attacker.other()
    }
}

/// Who fights at `town` now (§9), or None when no corps advances on it any more.
pub fn battle(s: &State, town: &str) -> Option<Battle> {
    let attackers = s.advancing_on(town);
    let attacker = s.corps[*attackers.first()?].side;
    Some(Battle {
        town: town.to_string(),
        attacker,
        defenders: s.in_town(attacker.other(), town),
        roads: rules::roads_used(s, &attackers),
        attackers,
    })
}

/// One firing (§9 1-2) with its dice rolled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FireResult {
    /// The firing side.
    pub side: Side,
    /// True for the attacker's firing (§9 2), false for the defender's (§9 1).
    pub attacking: bool,
    /// The town fought for.
    pub town: String,
    /// Automatic hits and dice.
    pub plan: FirePlan,
    /// The dice rolled, one per die of the plan.
    pub rolls: Vec<u32>,
    /// The hits scored: the automatic ones and one per 6.
    pub hits: u32,
}

impl FireResult {
    /// The result of firing `plan` with the dice `rolls` (§9 1).
    pub fn new(side: Side, attacking: bool, town: &str, plan: FirePlan, rolls: Vec<u32>) -> FireResult {
        let hits = rules::hits(plan, &rolls);
        FireResult { side, attacking, town: town.to_string(), plan, rolls, hits }
    }

}

/// "attacker" or "defender", as the messages name a firing force.
fn who(attacking: bool) -> &'static str {
    if attacking { "attacker" } else { "defender" }
}

/// Rolls the dice of a firing (§9 1-2).
fn roll_fire(ctx: &mut Ctx, side: Side, attacking: bool, town: &str, plan: FirePlan) -> FireResult {
    let rolls: Vec<u32> = (1..=plan.dice)
        .map(|i| ctx.d6(&format!("{} {}'s fire at {town}, die {i} of {}", side.name(), who(attacking), plan.dice)))
        .collect();
    FireResult::new(side, attacking, town, plan, rolls)
}

/// True when the attack failed (§9 3): the attackers return, the defenders stay.
pub fn attack_lost(r: CombatResult) -> bool {
    matches!(r, CombatResult::AttackFails | CombatResult::AttackRepulsed)
}

/// True when the loser also removes a corps: two or more hits behind (§9 3).
pub fn costs_a_corps(r: CombatResult) -> bool {
    matches!(r, CombatResult::AttackRepulsed | CombatResult::DefenderRouted)
}

/// One thing a town's combat decided (§9), computed before anything is said or moved:
/// [`narrate`] gives its event text, [`carry_out`] says it and moves the corps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CombatOutcome {
    /// No defender holds the town any more: an attacker enters it unopposed.
    EntersEmpty { corps: usize, town: String },
    /// The attackers engage the defenders (said before the defender fires).
    Engaged(Battle),
    /// A firing and its hits (§9 1-2).
    Fired(FireResult),
    /// Both sides' hits compared (§9 3).
    Compared { town: String, attacker_hits: u32, defender_hits: u32, result: CombatResult },
    /// The losing side removes a corps (§9 3).
    Casualty { corps: usize, loser: Side, town: String },
    /// A failed attacker returns to the town it came from (§9 3).
    Returns { corps: usize, to: String },
    /// A failed attacker whose town the enemy holds is removed (§9 3).
    CannotReturn { corps: usize, from: String },
    /// A defeated defender retreats (§9 3).
    Retreats { corps: usize, town: String, to: String },
    /// A defeated defender with nowhere to retreat is removed (§9 3).
    CannotRetreat { corps: usize, town: String },
    /// A winning attacker enters the town (§9 3).
    Enters { corps: usize, town: String },
}

/// §9 3: the corps the loser of `result` removes: its only candidate, this step's answer, or the
/// first its standing casualty list names; else the question.
pub fn casualty(s: &State, b: &Battle, result: CombatResult, direct: &mut Option<Direct>) -> Result<CombatOutcome, Question> {
    let (loser, candidates) = if attack_lost(result) { (b.attacker, &b.attackers) } else { (b.defender(), &b.defenders) };
    let pick = if candidates.len() == 1 {
        candidates[0]
    } else {
        match direct.take() {
            Some(Direct::Casualty(x)) if candidates.contains(&x) => x,
            _ => rules::pick_casualty(s, &s.standing.get(loser).casualties, candidates).ok_or_else(|| Question::Casualty {
                side: loser,
                town: b.town.clone(),
                candidates: candidates.clone(),
            })?,
        }
    };
    Ok(CombatOutcome::Casualty { corps: pick, loser, town: b.town.clone() })
}

/// §9 3 after any casualty: the failed attackers return (or are removed), or the defenders retreat
/// (or are removed) and the attackers enter the town; else the retreat question.
pub fn aftermath(s: &State, b: &Battle, result: CombatResult, direct: &mut Option<Direct>) -> Result<Vec<CombatOutcome>, Question> {
    if attack_lost(result) {
        return Ok(b.attackers.iter().filter_map(|&a| return_attacker(s, a)).collect());
    }
    let mut out: Vec<CombatOutcome> = retreats(s, b, direct)?
        .into_iter()
        .map(|(corps, to)| match to {
            Some(to) => CombatOutcome::Retreats { corps, town: b.town.clone(), to },
            None => CombatOutcome::CannotRetreat { corps, town: b.town.clone() },
        })
        .collect();
    out.extend(b.attackers.iter().map(|&corps| CombatOutcome::Enters { corps, town: b.town.clone() }));
    Ok(out)
}

/// §9 3: a failed attacker returns to the town it came from, and is removed if an enemy corps is
/// there.
fn return_attacker(s: &State, a: usize) -> Option<CombatOutcome> {
    let Location::Advancing { from, .. } = s.corps[a].at.clone() else { return None };
    Some(if s.in_town(s.corps[a].side.other(), &from).is_empty() {
        CombatOutcome::Returns { corps: a, to: from }
    } else {
        CombatOutcome::CannotReturn { corps: a, from }
    })
}

/// §9 3: where each defeated defender retreats, in order (None: it cannot): the one way when
/// there is one; else the attacker's choice, from this step's answer or its standing list for the
/// town, asked when neither gives a legal town for every corps.
pub fn retreats(s: &State, b: &Battle, direct: &mut Option<Direct>) -> Result<Vec<(usize, Option<String>)>, Question> {
    let options = rules::retreat_options(s, &b.town, b.defender());
    if options.len() <= 1 {
        return Ok(b.defenders.iter().map(|&d| (d, options.first().cloned())).collect());
    }
    let given = match direct.take() {
        Some(Direct::Retreat(v)) => v,
        _ => Vec::new(),
    };
    let mut moves = Vec::new();
    for &d in &b.defenders {
        let dest = given
            .iter()
            .find(|(x, to)| *x == d && options.contains(to))
            .map(|(_, to)| to.clone())
            .or_else(|| standing_retreat(s.standing.get(b.attacker), &b.town, &options));
        match dest {
            Some(to) => moves.push((d, Some(to))),
            None => return Err(Question::Retreat { side: b.attacker, town: b.town.clone(), corps: b.defenders.clone(), options }),
        }
    }
    Ok(moves)
}

/// The event text of a combat outcome.
pub fn narrate(s: &State, o: &CombatOutcome) -> String {
    match o {
        CombatOutcome::EntersEmpty { corps, town } => format!("{} enters {town}, which no defender holds any more.", s.label(*corps)),
        CombatOutcome::Engaged(b) => format!(
            "Combat at {}: {} {} Corps (strength {}, along {}) {} {} {} Corps (strength {}).",
            b.town,
            b.attacker.name(),
            s.ids(&b.attackers),
            s.strength(&b.attackers),
            plural(b.roads as u32, "road"),
            if b.attackers.len() == 1 { "attacks" } else { "attack" },
            b.defender().name(),
            s.ids(&b.defenders),
            s.strength(&b.defenders)
        ),
        CombatOutcome::Fired(f) => format!(
            "{} {}'s fire at {}: {} and {} -> {}.",
            f.side.name(),
            who(f.attacking),
            f.town,
            plural(f.plan.automatic, "automatic hit"),
            count(f.plan.dice, "die", "dice"),
            plural(f.hits, "hit")
        ),
        CombatOutcome::Compared { town, attacker_hits, defender_hits, result } => format!(
            "At {town}: attacker {}, defender {}: {} (§9 3).",
            plural(*attacker_hits, "hit"),
            plural(*defender_hits, "hit"),
            result_text(*result)
        ),
        CombatOutcome::Casualty { corps, loser, town } => {
            format!("{} is eliminated: the {} player removes it after the combat at {town} (§9 3).", s.label(*corps), loser.name())
        }
        CombatOutcome::Returns { corps, to } => format!("{} returns to {to} (§9 3).", s.label(*corps)),
        CombatOutcome::CannotReturn { corps, from } => {
            format!("{} is eliminated: it cannot return to {from}, which the enemy holds (§9 3).", s.label(*corps))
        }
        CombatOutcome::Retreats { corps, town, to } => format!("{} retreats from {town} to {to} (§9 3).", s.label(*corps)),
        CombatOutcome::CannotRetreat { corps, town } => {
            format!("{} is eliminated: it cannot retreat from {town} (§9 3).", s.label(*corps))
        }
        CombatOutcome::Enters { corps, town } => format!("{} enters {town}.", s.label(*corps)),
    }
}

/// Says a combat outcome and moves its corps: a corps entering a town may score it (§4).
fn carry_out(s: &mut State, ctx: &mut Ctx, o: &CombatOutcome) {
    say(ctx, || narrate(s, o));
    match o {
        CombatOutcome::EntersEmpty { corps, town } | CombatOutcome::Enters { corps, town } => place(s, ctx, *corps, town),
        CombatOutcome::Returns { corps, to } | CombatOutcome::Retreats { corps, to, .. } => place(s, ctx, *corps, to),
        CombatOutcome::Casualty { corps, .. } | CombatOutcome::CannotReturn { corps, .. } | CombatOutcome::CannotRetreat { corps, .. } => {
            s.corps[*corps].at = Location::Eliminated
        }
        CombatOutcome::Engaged(_) | CombatOutcome::Fired(_) | CombatOutcome::Compared { .. } => {}
    }
}

/// §9: the combat phase. The Confederate player orders the towns (asked when there are several
/// and no standing list decides); at each town the defender fires, then the attacker, and the
/// comparison is carried out (casualty, return or retreat, and the winners entering the town).
fn combat(s: &mut State, ctx: &mut Ctx, mut c: Combat, direct: &mut Option<Direct>) -> Flow {
    if !c.started {
        c.started = true;
        c.towns = rules::combat_towns(s);
        if c.towns.is_empty() {
            say(ctx, || format!("Turn {} combat phase: no corps is advancing on a town, so there is no combat.", s.turn));
        } else {
            say(ctx, || format!("Turn {} combat phase: combat at {}.", s.turn, c.towns.join(", ")));
        }
    }
    let mut asked = None;
    if !c.ordered {
        asked = order_combats(s, ctx, &mut c, direct).err();
    }
    while asked.is_none() && c.index < c.towns.len() {
        asked = town_step(s, ctx, &mut c, direct).err();
    }
    if let Some(q) = asked {
        s.stage = Stage::Combat(c);
        return Flow::Ask(q);
    }
    end_turn(s, ctx);
    Flow::Next
}

/// §9: the Confederate player's order of several combats, from this step's answer or the
/// standing list; else the question.
fn order_combats(s: &State, ctx: &mut Ctx, c: &mut Combat, direct: &mut Option<Direct>) -> Result<(), Question> {
    if c.towns.len() > 1 {
        let order = match direct.take() {
            Some(Direct::CombatOrder(o)) => o,
            _ => standing_combat_order(s.standing.get(Side::Confederate), &c.towns)
                .ok_or_else(|| Question::CombatOrder { towns: c.towns.clone() })?,
        };
        say(ctx, || format!("The Confederate player resolves the combats in this order: {} (§9).", order.join(", ")));
        c.towns = order;
    }
    c.ordered = true;
    Ok(())
}

/// Carries out the next step of the combat at the current town (§9 1-3), or the question it
/// waits for.
fn town_step(s: &mut State, ctx: &mut Ctx, c: &mut Combat, direct: &mut Option<Direct>) -> Result<(), Question> {
    let town = c.towns[c.index].clone();
    let next_town = |c: &mut Combat| {
        c.index += 1;
        c.step = CombatStep::DefenderFire;
    };
    let Some(b) = battle(s, &town) else {
        next_town(c);
        return Ok(());
    };
    if b.defenders.is_empty() {
        for &corps in &b.attackers {
            carry_out(s, ctx, &CombatOutcome::EntersEmpty { corps, town: town.clone() });
        }
        next_town(c);
        return Ok(());
    }
    match c.step.clone() {
        CombatStep::DefenderFire => {
            carry_out(s, ctx, &CombatOutcome::Engaged(b.clone()));
            let (side, strength) = (b.defender(), s.strength(&b.defenders));
            let plan = choose_fire(s, side, &town, false, strength, s.scenario.rules.defender_divisor, None, direct)?;
            let fire = roll_fire(ctx, side, false, &town, plan);
            c.step = CombatStep::AttackerFire { defender_hits: fire.hits };
            carry_out(s, ctx, &CombatOutcome::Fired(fire));
        }
        CombatStep::AttackerFire { defender_hits } => {
            let (side, strength, divisor) = (b.attacker, s.strength(&b.attackers), s.scenario.attack_divisor(b.roads));
            let plan = choose_fire(s, side, &town, true, strength, divisor, Some(defender_hits), direct)?;
            let fire = roll_fire(ctx, side, true, &town, plan);
            let (attacker_hits, result) = (fire.hits, rules::compare(fire.hits, defender_hits));
            carry_out(s, ctx, &CombatOutcome::Fired(fire));
            carry_out(s, ctx, &CombatOutcome::Compared { town, attacker_hits, defender_hits, result });
            c.step = CombatStep::Result { result, casualty_pending: costs_a_corps(result) };
        }
        CombatStep::Result { result, casualty_pending: true } => {
            let removed = casualty(s, &b, result, direct)?;
            carry_out(s, ctx, &removed);
            c.step = CombatStep::Result { result, casualty_pending: false };
        }
        CombatStep::Result { result, casualty_pending: false } => {
            for o in aftermath(s, &b, result, direct)? {
                carry_out(s, ctx, &o);
            }
            next_town(c);
        }
    }
    Ok(())
}

fn result_text(r: CombatResult) -> &'static str {
    match r {
        CombatResult::AttackFails => "the attack fails; the attackers return",
        CombatResult::AttackRepulsed => "the attack is repulsed (the attacker loses a corps, the rest return)",
        CombatResult::DefenderRetreats => "the defenders retreat",
        CombatResult::DefenderRouted => "the defenders are routed (the defender loses a corps, the rest retreat)",
    }
}

/// §10: the turn ends. The game ends after the last turn's combat phase; by our reading it also
/// ends at the end of any turn in which the Confederates have the points they need, since points
/// are never lost (§4) and the result can no longer change.
fn end_turn(s: &mut State, ctx: &mut Ctx) {
    let p = s.points();
    let need = s.scenario.rules.victory_points;
    let last = s.scenario.rules.last_turn;
    say(ctx, || format!("Turn {} ends. Confederate points: {p} of the {need} needed.", s.turn));
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
            say(ctx, || format!("Game over. {}.", o.summary));
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
