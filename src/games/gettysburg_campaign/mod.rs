//! Gettysburg Campaign (CMJ postcard game, 2013): the 1863 campaign on a map of towns and roads,
//! Confederate corps hunting for points, Union corps defending; commands by cards, initiative by
//! dice, combat by strength (rulebook `rules/gettysburg-campaign.txt`).
//!
//! Roles: `confederate` and `union`. The command phase is the one simultaneous, secret decision;
//! every other decision (moves, vacate or defend, combat order, optional fire, casualties, retreat
//! routes) is asked of one player when the rules ask it, unless that player's planned moves or
//! standing orders already answer it. See [`orders`] for the order-file fields, [`forms`] for the
//! NMR defaults and [`engine`] for the turn sequence.
//!
//! Option: `optional-fire=true|false` (default false), the rulebook's optional firing rule (§9).

pub mod bot;
pub mod engine;
pub mod forms;
pub mod orders;
pub mod picture;
pub mod rules;
pub mod scenario;
pub mod side;
pub mod state;
pub mod view;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use crate::dice::Ctx;
use crate::game::{Ask, Game, GameError, OptionReader, OrderProblem, Orders, Outcome, Pending, Publication, Tally};
use scenario::Scenario;
use side::{Side, Sides};
use state::{Corps, Location, Question, Round, Stage, State};

/// The game, registered in [`crate::games::ALL`].
pub struct GettysburgCampaign;

/// The shipped scenario (a reconstruction of the printed components; see the file's comments).
pub const DEFAULT_SCENARIO: &str = include_str!("../../../scenarios/gettysburg-campaign.toml");

fn side_of(role: &str) -> Option<Side> {
    Side::from_role(role)
}

/// Reads `--option` values: only `optional-fire` (`true`/`false`) exists.
fn optional_fire(options: &BTreeMap<String, String>) -> Result<bool, GameError> {
    let mut r = OptionReader::new(options);
    let on = r.bool("optional-fire", false);
    r.finish("unknown option; Gettysburg Campaign has only optional-fire=true|false")?;
    Ok(on)
}

/// The initial state (§3): every corps in its side's start town, turn 1, round 1, command phase.
pub fn initial_state(scenario: Scenario, optional_fire: bool) -> State {
    let mut corps = Vec::new();
    for side in Side::ALL {
        let army = scenario.army(side);
        for c in &army.corps {
            corps.push(Corps {
                side,
                id: c.id.clone(),
                commander: c.commander.clone(),
                strength: c.strength,
                at: Location::Town { town: army.start.clone() },
            });
        }
    }
    let mut s = State {
        scenario: std::sync::Arc::new(scenario),
        optional_fire,
        turn: 1,
        round: 1,
        corps,
        army_used: Sides::default(),
        scored: Vec::new(),
        standing: Sides::default(),
        this_round: Round::default(),
        stage: Stage::Command,
        question: None,
        last_initiative: None,
        outcome: None,
    };
    // Setup rolls no die and keeps no event: the first stage only asks for commands.
    engine::run(&mut s, &mut Ctx::scripted(&[]), None);
    s
}

impl Game for GettysburgCampaign {
    type State = State;
    type Checked = orders::Parsed;

    fn rules(&self) -> &'static str {
        "gettysburg-campaign"
    }

    fn title(&self) -> &'static str {
        "Gettysburg Campaign"
    }

    fn ask_kinds(&self) -> &'static [&'static str] {
        state::Question::KINDS
    }


    fn scenarios(&self) -> &'static [(&'static str, &'static str)] {
        &[("gettysburg-campaign", DEFAULT_SCENARIO)]
    }

    fn check_new_scenario(&self, scenario: &str) -> Result<(), GameError> {
        Scenario::parse_new(scenario).map(drop)
    }

    fn setup(&self, scenario: &str, options: &BTreeMap<String, String>) -> Result<State, GameError> {
        let fire = optional_fire(options)?;
        Ok(initial_state(Scenario::parse(scenario)?, fire))
    }

    /// Orders are published at round boundaries (a command step, or the end): mid-round, the planned
    /// moves of corps that have not moved yet are still secret at the table (§8). A command step
    /// whose initiative tied is never published before the game ends: the round ends at once, the
    /// cards (Lee and Meade included) return to the hand unused and their identity is not told to
    /// the opponent (§7).
    fn publication(&self, before: &State, after: &State) -> Publication {
        if initiative_tied(before, after) {
            Publication::AfterGame
        } else if matches!(after.question, None | Some(state::Question::Command { .. })) {
            Publication::Now
        } else {
            Publication::AfterRound
        }
    }

    fn roles(&self, _: &State) -> Vec<String> {
        Side::ALL.iter().map(|s| s.role().to_string()).collect()
    }

    fn pending(&self, s: &State) -> Pending {
        if let Some(o) = &s.outcome {
            return Pending::Over(o.clone());
        }
        match &s.question {
            Some(q) => Pending::Orders(
                q.sides()
                    .into_iter()
                    .map(|side| Ask { role: side.role().into(), kind: q.kind().into(), prompt: forms::prompt(s, side, q) })
                    .collect(),
            ),
            None => Pending::Over(Outcome { winner: None, summary: "the game stopped without a question (corrupt state)".into() }),
        }
    }

    fn pending_roles(&self, s: &State) -> Result<Vec<String>, Outcome> {
        match (&s.outcome, &s.question) {
            (None, Some(q)) => Ok(q.sides().into_iter().map(|side| side.role().to_string()).collect()),
            _ => self.pending(s).roles(),
        }
    }

    fn default_order(&self, s: &State, role: &str) -> Orders {
        side_of(role).map(|side| forms::default_order(s, side)).unwrap_or_default()
    }

    fn form_help(&self, s: &State, role: &str, _: u32) -> Vec<String> {
        match side_of(role) {
            Some(side) => forms::help(s, side),
            None => vec![format!("\"{role}\" is not a role of this game (confederate, union).")],
        }
    }

    fn check_order(&self, s: &State, role: &str, orders: &Orders) -> Result<orders::Parsed, Vec<OrderProblem>> {
        let Some(side) = side_of(role) else {
            return Err(vec![OrderProblem::new("", format!("\"{role}\" is not a role of this game"))]);
        };
        orders::parse(s, side, orders)
    }

    fn resolve(&self, state: &State, orders: BTreeMap<String, orders::Parsed>, ctx: &mut Ctx) -> Result<State, GameError> {
        resolve_with(state, orders, ctx)
    }

    fn resolve_owned(&self, state: State, orders: BTreeMap<String, orders::Parsed>, ctx: &mut Ctx) -> Result<State, GameError> {
        resolve_in(state, orders, ctx)
    }

    fn view(&self, s: &State, role: &str) -> serde_json::Value {
        match side_of(role) {
            Some(side) => view::view(s, side),
            None => serde_json::Value::Null,
        }
    }

    fn report_view(&self, s: &State, role: &str) -> Result<minijinja::Value, crate::template_value::Error> {
        match side_of(role) {
            Some(side) => view::report_view(s, side),
            None => Ok(minijinja::Value::from(())),
        }
    }

    /// The board from the seat's view, its planned moves as [`view::plan_lines_now`] gives them,
    /// a corps moving into an enemy-held town on its road ([`view::show_entering`]).
    fn picture(&self, s: &State, seat: Option<&str>, ended: bool) -> Option<String> {
        let mut v = crate::picture::view_for(self, s, seat, ended)?;
        if let Some(side) = seat.and_then(side_of).filter(|_| !ended) {
            v["planned_moves"] = serde_json::json!(view::plan_lines_now(s, side));
        }
        if !ended {
            view::show_entering(&mut v, s);
        }
        Some(picture::draw(&v))
    }

    fn bot_order(&self, s: &State, role: &str, ctx: &mut Ctx) -> Orders {
        match side_of(role) {
            Some(side) => bot::order(s, side, bot::POLICIES[0], &mut |n| ctx.below(n)),
            None => Orders::new(),
        }
    }

    /// `sensible` (the default, [`Game::bot_order`]) or `naive` (the first, passive players; README
    /// "Balance of the reconstructions").
    fn policies(&self) -> &'static [&'static str] {
        bot::POLICIES
    }

    fn policy_order(&self, s: &State, role: &str, policy: &str, ctx: &mut Ctx) -> Orders {
        match side_of(role) {
            Some(side) => bot::order(s, side, policy, &mut |n| ctx.below(n)),
            None => Orders::new(),
        }
    }

    /// The `sensible` players' order built checked ([`bot::sensible::checked`]), without writing
    /// it as TOML and reading it back; `naive` and a side not asked take the written way.
    fn policy_checked(&self, s: &State, role: &str, policy: &str, ctx: &mut Ctx) -> Result<orders::Parsed, Vec<OrderProblem>> {
        if policy != "naive"
            && let Some(side) = side_of(role)
            && let Some(p) = bot::sensible::checked(s, side, &mut |n| ctx.below(n))
        {
            return Ok(p);
        }
        let o = self.policy_order(s, role, policy, ctx);
        self.check_order(s, role, &o)
    }

    /// Turns, and the Confederate points scored.
    fn tally(&self, s: &State) -> Tally {
        Tally { clock: s.turn, unit: "turns", figures: vec![("Confederate points", s.points() as f64)] }
    }
}

/// True when the step from `before` to `after` answered a command question (§6) and the
/// initiative dice of that round tied (§7): the commands were not carried out and stay secret.
pub fn initiative_tied(before: &State, after: &State) -> bool {
    matches!(before.question, Some(Question::Command { .. }))
        && after
            .last_initiative
            .as_ref()
            .is_some_and(|r| (r.turn, r.round) == (before.turn, before.round) && r.winner.is_none())
}

/// [`Game::resolve`] (tests give a [`Ctx::scripted`] for their dice): stores each asked side's
/// standing orders and planned moves (checked by the core, [`crate::game::check_all`]), applies
/// the answers, and runs on.
///
/// Errors: [`GameError::Over`]; [`GameError::Missing`] if an asked side's orders are missing
/// (the core never lets that happen).
pub fn resolve_with(state: &State, orders: BTreeMap<String, orders::Parsed>, ctx: &mut Ctx) -> Result<State, GameError> {
    resolve_in(state.clone(), orders, ctx)
}

/// [`resolve_with`] on a state given up: resolved in place, not copied (`pbem simulate`).
fn resolve_in(mut s: State, mut orders: BTreeMap<String, orders::Parsed>, ctx: &mut Ctx) -> Result<State, GameError> {
    let Some(q) = s.question.clone() else {
        return Err(GameError::Over);
    };
    let mut parsed = Vec::new();
    for side in q.sides() {
        let p = orders.remove(side.role()).ok_or_else(|| GameError::Missing { role: side.role().into() })?;
        parsed.push((side, p));
    }
    let mut cmds: Sides<Vec<state::Command>> = Sides::default();
    let mut direct = None;
    for (side, p) in parsed {
        // The changes are told only to a context that keeps events.
        if p.standing_given && !ctx.is_quiet() {
            let changes = forms::standing_changes(s.standing.get(side), &p.standing);
            if changes.is_empty() {
                engine::tell(ctx, side, || "Your standing orders are unchanged.".to_string());
            }
            for c in changes {
                engine::tell(ctx, side, || format!("Standing orders changed: {c}"));
            }
        }
        *s.standing.get_mut(side) = p.standing;
        s.this_round.plans.get_mut(side).extend(p.plans);
        if let Some(c) = p.commands {
            *cmds.get_mut(side) = c;
        }
        if p.direct.is_some() {
            direct = p.direct;
        }
    }
    if matches!(q, Question::Command { .. }) {
        engine::apply_commands(&mut s, ctx, cmds);
    }
    engine::run(&mut s, ctx, direct);
    Ok(s)
}
