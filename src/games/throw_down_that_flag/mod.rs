//! Throw Down That Flag (solitaire): the First Minnesota on July 2 and July 3, 1863 (rulebook
//! `rules/throw-down-that-flag.txt`). The one role, `union`, commands the First Minnesota; the
//! Confederates are moved by the engine (Confederate Activations).
//!
//! Every First Minnesota activation is a decision: the engine pulls token after token and resolves
//! activations until one finds a company whose standing order does not answer it, then asks (see
//! [`orders`] for the fields, [`engine`] for the round structure and the Confederate movement).
//!
//! Scenarios: `july-2` (default) and `july-3`, chosen with `pbem new --scenario july-3` (or a file
//! of one's own). Options: `scenario=NAME` only confirms the day; `campaign=true` plays July 2 and
//! then July 3 with the July 2 survivors (the game's scenario is July 2; July 3 is the shipped file).

pub mod bot;
pub mod engine;
pub mod forms;
pub mod hex;
pub mod orders;
pub mod picture;
pub mod rules;
pub mod scenario;
pub mod state;
pub mod summary;
pub mod view;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use crate::dice::Ctx;
use crate::game::{Ask, Game, GameError, OptionReader, OrderProblem, Orders, Outcome, Pending, Publication, Tally};
use scenario::Scenario;
use state::{ROLE, State};

/// The game, registered in [`crate::games::ALL`].
pub struct ThrowDownThatFlag;

/// July 2 (the default scenario).
pub const JULY_2: &str = include_str!("../../../scenarios/throw-down-that-flag-july-2.toml");
/// July 3.
pub const JULY_3: &str = include_str!("../../../scenarios/throw-down-that-flag-july-3.toml");

/// The shipped scenario text of a name.
pub fn shipped(name: &str) -> Option<&'static str> {
    match name {
        "july-2" => Some(JULY_2),
        "july-3" => Some(JULY_3),
        _ => None,
    }
}

/// The options: (scenario name, campaign).
fn read_options(options: &BTreeMap<String, String>) -> Result<(Option<String>, bool), GameError> {
    let mut r = OptionReader::new(options);
    let name = r.value("scenario").map(str::to_string);
    if name.as_deref().is_some_and(|n| shipped(n).is_none()) {
        r.refuse("scenario", "july-2 or july-3");
    }
    let campaign = r.bool("campaign", false);
    r.finish("unknown option; Throw Down That Flag has scenario=july-2|july-3 and campaign=true|false")?;
    Ok((name, campaign))
}

/// The state at the start of `scenario` (and of the campaign's next day, if any), run up to the
/// first question. Setup pulls no token: the first pull happens in the first resolution.
pub fn initial_state(scenario: Scenario, next: Option<Scenario>) -> State {
    let (companies, bag) = engine::start_day(&scenario, None);
    State {
        scenario: std::sync::Arc::new(scenario),
        next: next.map(std::sync::Arc::new),
        days: Vec::new(),
        companies,
        bag,
        removed: Vec::new(),
        letters_row: Vec::new(),
        colors_row: 0,
        round: 1,
        current: None,
        standing: BTreeMap::new(),
        asking: None,
        colors_taken: false,
        outcome: None,
        summary: Vec::new(),
    }
}

/// Interpretation: a game starts with an "orders" step before any token is pulled, in which the
/// player gives standing orders (or none): the core asks at least once before resolving, and the
/// player should be able to answer ahead before the first pull. The asked company is `None`.
fn opening_ask() -> &'static str {
    "standing"
}

impl Game for ThrowDownThatFlag {
    type State = State;
    type Checked = orders::Parsed;

    fn rules(&self) -> &'static str {
        "throw-down-that-flag"
    }

    fn title(&self) -> &'static str {
        "Throw Down That Flag"
    }


    fn scenarios(&self) -> &'static [(&'static str, &'static str)] {
        &[("july-2", JULY_2), ("july-3", JULY_3)]
    }

    fn ask_kinds(&self) -> &'static [&'static str] {
        &["activation", "standing"]
    }

    fn check_new_scenario(&self, scenario: &str) -> Result<(), GameError> {
        Scenario::parse_new(scenario).map(drop)
    }

    fn setup(&self, text: &str, options: &BTreeMap<String, String>) -> Result<State, GameError> {
        let (name, campaign) = read_options(options)?;
        let sc = Scenario::parse(text)?;
        // The day is the scenario's (`pbem new --scenario july-3`); the option only confirms it,
        // so that the game folder's scenario.toml is always the day played.
        if let Some(n) = &name
            && &sc.name != n
        {
            return Err(GameError::Option {
                key: "scenario".into(),
                message: format!("the scenario is \"{}\"; choose the day by the scenario {n}", sc.name),
            });
        }
        let next = if campaign {
            if sc.name == "july-3" {
                return Err(GameError::Option { key: "campaign".into(), message: "the campaign starts on July 2".into() });
            }
            Some(Scenario::parse(JULY_3)?)
        } else {
            None
        };
        Ok(initial_state(sc, next))
    }

    /// Solitaire: nobody else is at the table, so orders are published as each step resolves.
    fn publication(&self, _: &State, _: &State) -> Publication {
        Publication::Now
    }

    fn ever_withholds(&self) -> bool {
        false
    }

    fn roles(&self, _: &State) -> Vec<String> {
        vec![ROLE.to_string()]
    }

    fn pending(&self, s: &State) -> Pending {
        if let Some(o) = &s.outcome {
            return Pending::Over(o.clone());
        }
        let (kind, prompt) = match s.asking {
            Some(_) => ("activation", forms::prompt(s)),
            None => (
                opening_ask(),
                forms::wrap(
                    &format!(
                        "{}: before the first token is pulled, give standing orders for your companies if you like \
                         ([orders.standing]); every activation they do not answer is asked of you.",
                        s.scenario.title
                    ),
                    94,
                ),
            ),
        };
        Pending::Orders(vec![Ask { role: ROLE.into(), kind: kind.into(), prompt }])
    }

    /// [`Game::pending`]'s one role, or its outcome, without writing the prompt.
    fn pending_roles(&self, s: &State) -> Result<Vec<String>, Outcome> {
        match &s.outcome {
            Some(o) => Err(o.clone()),
            None => Ok(vec![ROLE.into()]),
        }
    }

    fn default_order(&self, s: &State, _: &str) -> Orders {
        if s.asking.is_some() { forms::default_order(s) } else { Orders::new() }
    }

    fn form_help(&self, s: &State, _: &str, wording: u32) -> Vec<String> {
        if s.asking.is_some() {
            return forms::help(s, wording);
        }
        forms::standing_help(s)
    }

    fn check_order(&self, s: &State, role: &str, o: &Orders) -> Result<orders::Parsed, Vec<OrderProblem>> {
        if role != ROLE {
            return Err(vec![OrderProblem::new("", format!("\"{role}\" is not a role of this game (union)"))]);
        }
        check(s, o)
    }

    fn resolve(&self, s: &State, orders: BTreeMap<String, orders::Parsed>, ctx: &mut Ctx) -> Result<State, GameError> {
        resolve_with(s, orders, ctx)
    }

    fn resolve_owned(&self, s: State, orders: BTreeMap<String, orders::Parsed>, ctx: &mut Ctx) -> Result<State, GameError> {
        resolve_in(s, orders, ctx)
    }

    fn view(&self, s: &State, role: &str) -> serde_json::Value {
        if role == ROLE { view::view(s) } else { serde_json::Value::Null }
    }

    fn picture(&self, s: &State, seat: Option<&str>, ended: bool) -> Option<String> {
        crate::picture::view_for(self, s, seat, ended).map(|v| picture::draw(&v))
    }

    fn bot_order(&self, s: &State, _: &str, _: &mut Ctx) -> Orders {
        bot::order(s, "sensible")
    }

    /// Rounds (a day won by holding counts its rounds, not the one after), and the First
    /// Minnesota's casualties over the days finished.
    fn tally(&self, s: &State) -> Tally {
        let str_lost: u32 = s.days.iter().map(|d| d.str_lost).sum();
        let men: u32 = s.days.iter().map(|d| d.men_lost).sum();
        Tally {
            clock: s.round.min(s.scenario.rules.rounds),
            unit: "rounds",
            figures: vec![("Str lost", str_lost as f64), ("men lost", men as f64)],
        }
    }

    fn policies(&self) -> &'static [&'static str] {
        &["sensible", "naive"]
    }

    /// `sensible` is [`Game::bot_order`]; `naive` also gives the naive standing orders at the
    /// opening step (README "Throw Down That Flag", balance).
    fn policy_order(&self, s: &State, _: &str, policy: &str, _: &mut Ctx) -> Orders {
        if s.asking.is_some() || policy != "naive" {
            return bot::order(s, policy);
        }
        let mut t = toml::Table::new();
        t.insert("all".into(), orders::standing_value(&bot::naive_standing(s)));
        Orders::from_iter([("standing".to_string(), toml::Value::Table(t))])
    }
}

/// Checks an order for the pending ask (the opening standing-orders step or an activation).
pub fn check(s: &State, o: &Orders) -> Result<orders::Parsed, Vec<OrderProblem>> {
    if s.outcome.is_some() {
        return Err(vec![OrderProblem::new("", "the game is over")]);
    }
    if s.asking.is_none() {
        for k in o.keys() {
            if k != "standing" {
                return Err(vec![OrderProblem::new(k, "only [orders.standing] is asked before the first token")]);
            }
        }
        // Check the standing part through the activation parser with a stand-in ask.
        let mut probe = s.clone();
        probe.asking = probe.active(state::Side::Union).first().copied();
        let mut with_pass = o.clone();
        with_pass.insert("action".into(), toml::Value::String("pass".into()));
        return orders::parse(&probe, &with_pass).map(|mut p| {
            p.direct = None;
            p
        });
    }
    orders::parse(s, o)
}

/// [`Game::resolve`] (tests give a [`Ctx::scripted`] for their draws), with the order
/// checked by the core ([`crate::game::check_all`]).
///
/// Errors: [`GameError::Missing`] if the order is missing (the core never lets that happen).
pub fn resolve_with(state: &State, orders: BTreeMap<String, orders::Parsed>, ctx: &mut Ctx) -> Result<State, GameError> {
    resolve_in(state.clone(), orders, ctx)
}

/// [`resolve_with`] in place, on a state the caller gives up ([`Game::resolve_owned`]).
pub fn resolve_in(mut s: State, mut orders: BTreeMap<String, orders::Parsed>, ctx: &mut Ctx) -> Result<State, GameError> {
    let p = orders.remove(ROLE).ok_or_else(|| GameError::Missing { role: ROLE.into() })?;
    if !ctx.is_quiet() {
        for line in &p.changes {
            ctx.say(line.clone());
        }
    }
    s.standing = p.standing;
    s.summary.clear();
    engine::run(&mut s, ctx, p.direct);
    Ok(s)
}
