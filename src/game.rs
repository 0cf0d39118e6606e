//! The one interface every game implements, and its type-erased form used by the core.
//!
//! A game is plain data plus pure functions: `resolve(state, orders, ctx) -> state` with every roll
//! and happening logged in the [`Ctx`]. No clock, no files, no global randomness inside a game.

use std::collections::BTreeMap;

use serde::{Serialize, de::DeserializeOwned};

use crate::commit;
use crate::dice::Ctx;

/// The orders of one role for one step: the `[orders]` table of an order file.
pub type Orders = toml::Table;

/// One question the game puts to one role for the pending step.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Ask {
    /// The role asked, e.g. `"union"`.
    pub role: String,
    /// Short machine name of the kind of decision, e.g. `"command"`, `"vacate-or-defend"`; the game
    /// file's deadline policy is keyed by it.
    pub kind: String,
    /// One or more sentences telling the player what is asked and why.
    pub prompt: String,
}

/// How a finished game ended.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Outcome {
    /// The winning role, if any (`None` for a draw).
    pub winner: Option<String>,
    /// One line for reports, e.g. "Union wins: the Confederates scored 4 of the 6 points needed".
    pub summary: String,
}

/// What a game waits for next.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Pending {
    /// Orders are awaited from these roles (at least one), in sorted role order.
    Orders(Vec<Ask>),
    /// The game is over.
    Over(Outcome),
}

impl Pending {
    /// The asked roles in order, or the outcome ([`Game::pending_roles`]).
    pub fn roles(self) -> Result<Vec<String>, Outcome> {
        match self {
            Pending::Orders(asks) => Ok(asks.into_iter().map(|a| a.role).collect()),
            Pending::Over(o) => Err(o),
        }
    }
}

/// When the orders of a resolved step may stand in the public record (SPEC.md "Withheld
/// orders"). The core publishes everything still withheld once the game is over, whatever the
/// game says about the last step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Publication {
    /// Publish this step's orders now, and with them every order withheld [`Publication::AfterRound`]
    /// so far (the round they belonged to is over at the table).
    Now,
    /// Withhold them until the next step the game says [`Publication::Now`]: what they planned is
    /// still partly secret at the table (e.g. a round paused mid-way).
    AfterRound,
    /// Withhold them until the game is over: the rules never show them to the opponent (e.g.
    /// Gettysburg Campaign §7, cards played on an initiative tie return to the hand unseen).
    AfterGame,
}

/// What `pbem simulate` reads from a state (see [`Game::tally`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Tally {
    /// The turn or round being played, or the last one played once the game is over. It may start
    /// again from 1 (a campaign's next day): the simulation adds up the stretches.
    pub clock: u32,
    /// What the clock counts, plural, for a table's heading: `"turns"`, `"rounds"`.
    pub unit: &'static str,
    /// The game's own figures so far, averaged over the games simulated, e.g. `("Str lost", 12.0)`.
    pub figures: Vec<(&'static str, f64)>,
}

/// A problem with one field of an order, found by [`Game::check_order`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderProblem {
    /// Dotted path of the offending key inside `[orders]`, e.g. `"cards"` or `"moves.I"`; empty for
    /// the table as a whole.
    pub field: String,
    /// What is wrong and what would be accepted, written for the player.
    pub message: String,
}

impl OrderProblem {
    /// Shorthand constructor.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        OrderProblem { field: field.into(), message: message.into() }
    }
}

/// The problems found in one order, collected field by field by a game's order check (each
/// game's `orders.rs`), then returned all at once ([`Problems::finish`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Problems(Vec<OrderProblem>);

impl Problems {
    /// No problem yet.
    pub fn new() -> Self {
        Problems(Vec::new())
    }

    /// Notes a problem with `field` (see [`OrderProblem`]).
    pub fn add(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.0.push(OrderProblem::new(field, message));
    }

    /// Notes a problem already made.
    pub fn push(&mut self, problem: OrderProblem) {
        self.0.push(problem);
    }

    /// How many problems so far: compare with an earlier count to see whether a part of the order
    /// added any.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when no problem was found.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The problems so far, in the order found.
    pub fn iter(&self) -> std::slice::Iter<'_, OrderProblem> {
        self.0.iter()
    }

    /// The problems so far, to amend (e.g. to put a prefix before their fields).
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, OrderProblem> {
        self.0.iter_mut()
    }

    /// `value` when no problem was found, else every problem, in the order found.
    pub fn finish<T>(self, value: T) -> Result<T, Vec<OrderProblem>> {
        if self.0.is_empty() { Ok(value) } else { Err(self.0) }
    }

    /// The problems, in the order found.
    pub fn into_vec(self) -> Vec<OrderProblem> {
        self.0
    }
}

/// Reads a game's `--option` values (`pbem new --option KEY=VALUE`) the same way for every game:
/// the game takes the keys it knows ([`OptionReader::value`], [`OptionReader::bool`]) and refuses
/// bad values ([`OptionReader::refuse`]); [`OptionReader::finish`] then reports the first problem
/// in the keys' order, a bad value or a key no one took (an unknown option), whatever order the
/// game read them in.
pub struct OptionReader<'a> {
    options: &'a BTreeMap<String, String>,
    taken: std::collections::BTreeSet<&'a str>,
    refused: BTreeMap<&'a str, String>,
}

impl<'a> OptionReader<'a> {
    /// A reader of `options` (key to value, as given).
    pub fn new(options: &'a BTreeMap<String, String>) -> Self {
        OptionReader { options, taken: Default::default(), refused: BTreeMap::new() }
    }

    /// The value of `key` with surrounding spaces trimmed, if given; the key is known from now on.
    pub fn value(&mut self, key: &str) -> Option<&'a str> {
        let (k, v) = self.options.get_key_value(key)?;
        self.taken.insert(k.as_str());
        Some(v.trim())
    }

    /// `key` as `true` or `false` ([`bool_option`]), `default` when not given or refused.
    pub fn bool(&mut self, key: &str, default: bool) -> bool {
        let Some(v) = self.value(key) else { return default };
        match bool_option(key, v) {
            Ok(b) => b,
            Err(_) => {
                self.refuse(key, "must be true or false");
                default
            }
        }
    }

    /// Refuses the value given for `key`; `message` says what is accepted.
    pub fn refuse(&mut self, key: &str, message: impl Into<String>) {
        if let Some((k, _)) = self.options.get_key_value(key) {
            self.taken.insert(k.as_str());
            self.refused.entry(k.as_str()).or_insert_with(|| message.into());
        }
    }

    /// The first problem in the keys' order: a refused value, or a key the game never took
    /// (`unknown` is the message, naming the options there are).
    ///
    /// Errors: [`GameError::Option`] naming the key.
    pub fn finish(self, unknown: &str) -> Result<(), GameError> {
        for k in self.options.keys() {
            if let Some(message) = self.refused.get(k.as_str()) {
                return Err(GameError::Option { key: k.clone(), message: message.clone() });
            }
            if !self.taken.contains(k.as_str()) {
                return Err(GameError::Option { key: k.clone(), message: unknown.to_string() });
            }
        }
        Ok(())
    }
}

/// Reads a boolean `--option key=true|false` (surrounding spaces ignored).
///
/// Errors: [`GameError::Option`] naming the key, "must be true or false".
pub fn bool_option(key: &str, value: &str) -> Result<bool, GameError> {
    match value.trim() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(GameError::Option { key: key.to_string(), message: "must be true or false".into() }),
    }
}

/// Errors a game reports outside order checking (bad scenario, bad option, corrupted state), and
/// those of the core's check before resolving ([`check_all`]) and of a simulated game.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum GameError {
    /// The scenario file is invalid; the message names the field.
    #[error("scenario: {0}")]
    Scenario(String),
    /// An unknown or invalid option (`KEY=VALUE`).
    #[error("option {key}: {message}")]
    Option { key: String, message: String },
    /// An order given to resolve fails its check: its first problem. Orders are checked as they
    /// come in, so a stored order that fails here no longer fits the state.
    #[error("orders of {role}: {field}: {message}")]
    Orders { role: String, field: String, message: String },
    /// Orders given to resolve from a role that is not asked now.
    #[error("orders of {role}: no orders are asked of this role now")]
    NotAsked { role: String },
    /// No orders given to resolve for a role that is asked.
    #[error("orders of {role}: orders missing")]
    Missing { role: String },
    /// The game is over: there is no step to resolve.
    #[error("the game is over; nothing to resolve")]
    Over,
    /// A state text that is not the game's state (a stored state damaged or of other rules).
    #[error("state file: {0}")]
    CorruptState(String),
    /// A built-in player's order fails its check in a simulated game (a bug in the game's
    /// players): the step (from 1), the role, and the problems, `FIELD: message` joined by `; `.
    #[error("step {step}: the built-in {role} order fails its check: {problems}")]
    BuiltinOrderRejected { step: u32, role: String, problems: String },
    /// A simulated game that did not end within `steps` steps (a bug in a game or its players).
    #[error("no end after {steps} steps")]
    NoEnd { steps: u32 },
    /// A role's view that is no template value (a bug in the game's view: e.g. a map keyed by
    /// something other than strings, numbers or booleans).
    #[error("the view of {role}: {message}")]
    View { role: String, message: String },
}

/// One board game's rules. Implemented once per game in `src/games/<name>/`.
///
/// Every method is pure. The state must serialize deterministically (no `HashMap`).
pub trait Game: Send + Sync {
    /// The whole game state, including secrets (hands, standing orders) of every role.
    type State: Serialize + DeserializeOwned + Clone + PartialEq + std::fmt::Debug;

    /// One role's orders for one step as the rules read them, made only by [`Game::check_order`].
    type Checked;

    /// The rules id used on the command line and in game files, e.g. `"gettysburg-campaign"`.
    fn rules(&self) -> &'static str;

    /// The game's title for reports, e.g. `"Gettysburg Campaign"`.
    fn title(&self) -> &'static str;

    /// Every [`Ask::kind`] this game can ask (deadline policies are keyed by them).
    fn ask_kinds(&self) -> &'static [&'static str];

    /// The scenarios shipped with the binary, as (name, TOML text), the default first; `pbem new
    /// --scenario NAME` picks one by name.
    fn scenarios(&self) -> &'static [(&'static str, &'static str)];

    /// The default scenario's TOML text (the first of [`Game::scenarios`]), used when `pbem new`
    /// gets no `--scenario`.
    fn default_scenario(&self) -> &'static str {
        self.scenarios()[0].1
    }

    /// The initial state from scenario text and `--option` values. The audit, adjudication and
    /// publication set an existing game up again from its stored scenario, so this checks only
    /// what every game needs (no panic, no overflow, no wrong result): a scenario accepted once
    /// stays playable and auditable; a new game's limits are [`Game::check_new_scenario`]'s.
    ///
    /// Errors: [`GameError::Scenario`] naming the field, [`GameError::Option`] for a bad option.
    fn setup(&self, scenario: &str, options: &BTreeMap<String, String>) -> Result<Self::State, GameError>;

    /// The checks of a scenario for a new game (`pbem new`, `demo`, `simulate`), beyond
    /// [`Game::setup`]'s: the limits that keep a new game sensible (name lengths and characters,
    /// reserved words, picture bounds, counts, a game that can end and be won), which a game made
    /// before a limit was added may exceed and still play.
    ///
    /// Errors: [`GameError::Scenario`] naming the field, as [`Game::setup`] gives them.
    fn check_new_scenario(&self, scenario: &str) -> Result<(), GameError>;

    /// When the orders of the step just resolved (from `before` to `after`) may be published: now,
    /// after the round, or after the game. The core withholds them from the public record
    /// (keeping their commitments) until then; see [`Publication`].
    fn publication(&self, before: &Self::State, after: &Self::State) -> Publication;

    /// False for a game whose [`Game::publication`] is always [`Publication::Now`]: an audit that
    /// cannot replay (a public copy) then refuses any order marked withheld in it, which a host
    /// could otherwise use to switch the replay off.
    fn ever_withholds(&self) -> bool {
        true
    }

    /// The seats of the game, in their fixed order (e.g. `["confederate", "union"]`).
    fn roles(&self, state: &Self::State) -> Vec<String>;

    /// Whose orders are awaited next, or the outcome.
    fn pending(&self, state: &Self::State) -> Pending;

    /// The roles [`Game::pending`] asks, in its order, or its outcome: the same answer without
    /// the prompts, for [`play_out`], which never reads them. A game whose prompts cost much to
    /// write overrides it (and must keep it equal to `pending`; `play_out` checks in debug builds).
    fn pending_roles(&self, state: &Self::State) -> Result<Vec<String>, Outcome> {
        self.pending(state).roles()
    }

    /// A legal order for `role`'s pending ask: the prefilled form and the NMR default.
    fn default_order(&self, state: &Self::State, role: &str) -> Orders;

    /// Lines (without `#`) explaining the legal choices for `role`'s pending ask, put as comments in
    /// the order form, in the game's report `wording` (`game.toml`'s `wording`): the form is part of
    /// every report that asks for orders, and reports are replayed byte for byte by the audit.
    fn form_help(&self, state: &Self::State, role: &str, wording: u32) -> Vec<String>;

    /// Checks `role`'s orders for the pending step against the rules (the intake check) and
    /// returns them as the game reads them ([`Game::Checked`]): parse, don't validate.
    fn check_order(&self, state: &Self::State, role: &str, orders: &Orders) -> Result<Self::Checked, Vec<OrderProblem>>;

    /// Resolves the pending step with the checked order of every asked role, then keeps going
    /// until a decision is needed that no standing order answers, or the game ends.
    ///
    /// The core calls it only through [`check_all`] (as OpenSpiel's `ApplyAction` wraps
    /// `DoApplyAction`): `orders` holds exactly the roles asked, each passed by
    /// [`Game::check_order`] on this `state`, so a game checks nothing of that again.
    fn resolve(
        &self,
        state: &Self::State,
        orders: BTreeMap<String, Self::Checked>,
        ctx: &mut Ctx,
    ) -> Result<Self::State, GameError>;

    /// [`Game::resolve`] of a state the caller gives up (the games of [`play_out`]): the same new
    /// state, made in place where a game can rather than from a copy. The default copies.
    fn resolve_owned(&self, state: Self::State, orders: BTreeMap<String, Self::Checked>, ctx: &mut Ctx) -> Result<Self::State, GameError> {
        self.resolve(&state, orders, ctx)
    }

    /// Everything `role` may know of `state`, for the report template. The only redaction path.
    fn view(&self, state: &Self::State, role: &str) -> serde_json::Value;

    /// [`Game::view`] as the report template's value: by default the view made, then made a
    /// template value. A game may make the same value from a typed view without the JSON in
    /// between (`crate::template_value`); it must be exactly the default's.
    ///
    /// Errors: a view that is no template value (see [`crate::template_value::to_value`]).
    fn report_view(&self, state: &Self::State, role: &str) -> Result<minijinja::Value, crate::template_value::Error> {
        crate::template_value::to_value(&self.view(state, role))
    }

    /// A picture of the board as `seat` may see it (`None`: an observer, who sees only what every seat
    /// sees), as a whole SVG document; drawn from the same redacted view the report reads.
    /// `ended`: the game is over by its record though perhaps not by its state (its players or
    /// the host ended it): the picture says it is over and shows no plans or question
    /// (`picture::view_for`).
    fn picture(&self, state: &Self::State, seat: Option<&str>, ended: bool) -> Option<String> {
        let _ = (state, seat, ended);
        None
    }

    /// A built-in player's legal order for `role`'s pending ask (used by `pbem demo` and random-play
    /// tests); `ctx` supplies the player's own randomness.
    fn bot_order(&self, state: &Self::State, role: &str, ctx: &mut Ctx) -> Orders;

    /// The clock and the game's own figures, for `pbem simulate`.
    fn tally(&self, state: &Self::State) -> Tally;

    /// The sides an [`Outcome::winner`] may name, in a fixed order (default: the roles).
    fn sides(&self, state: &Self::State) -> Vec<String> {
        self.roles(state)
    }

    /// The team `role` plays on: seats of one team may talk as a team (press `to team`) and, where
    /// the rules let teammates see each other's plans ([`Game::teammates_see_plans`]), do (default:
    /// each role is a team of its own).
    fn team(&self, state: &Self::State, role: &str) -> String {
        let _ = state;
        role.to_string()
    }

    /// True when the rules let teammates look at each other's plans at any time (Flag Dash): an
    /// accepted order is then shown to the seat's teammates at once (default: false).
    fn teammates_see_plans(&self) -> bool {
        false
    }

    /// The built-in players' policies `pbem simulate --policy` may pick, the default (the one
    /// behind [`Game::bot_order`]) first.
    fn policies(&self) -> &'static [&'static str] {
        &["built-in"]
    }

    /// The order of built-in policy `policy` (one of [`Game::policies`]) for `role`'s pending ask.
    fn policy_order(&self, state: &Self::State, role: &str, policy: &str, ctx: &mut Ctx) -> Orders {
        let _ = policy;
        self.bot_order(state, role, ctx)
    }

    /// The order of built-in policy `policy` for `role`, already checked: what
    /// [`Game::check_order`] makes of [`Game::policy_order`], drawing the same choices from `ctx`.
    /// [`play_out`] calls it for every order, so a game whose orders cost much to write as text and
    /// read back overrides it with a typed path (default: that round trip).
    ///
    /// Errors: the problems [`Game::check_order`] finds (an override must find the same ones).
    fn policy_checked(&self, state: &Self::State, role: &str, policy: &str, ctx: &mut Ctx) -> Result<Self::Checked, Vec<OrderProblem>> {
        let o = self.policy_order(state, role, policy, ctx);
        self.check_order(state, role, &o)
    }
}

/// The core's check of a step's orders before [`Game::resolve`]: the game is not over, exactly
/// the roles asked sent orders (`orders` names no other), and each passes [`Game::check_order`].
/// Returns them checked, by role.
///
/// Errors: [`GameError::Over`]; [`GameError::NotAsked`] for orders of a role not asked;
/// [`GameError::Missing`] for an asked role without orders; [`GameError::Orders`] for the first
/// problem of an order that fails its check.
pub fn check_all<G: Game + ?Sized>(g: &G, state: &G::State, orders: &BTreeMap<String, Orders>) -> Result<BTreeMap<String, G::Checked>, GameError> {
    let asks = match g.pending(state) {
        Pending::Orders(asks) => asks,
        Pending::Over(_) => return Err(GameError::Over),
    };
    if let Some(role) = orders.keys().find(|r| !asks.iter().any(|a| &a.role == *r)) {
        return Err(GameError::NotAsked { role: role.clone() });
    }
    let mut checked = BTreeMap::new();
    for a in asks {
        let role = a.role;
        let Some(o) = orders.get(&role) else {
            return Err(GameError::Missing { role });
        };
        match g.check_order(state, &role, o) {
            Ok(c) => {
                checked.insert(role, c);
            }
            Err(problems) => {
                let first = problems.into_iter().next().unwrap_or_else(|| OrderProblem::new("", "illegal"));
                return Err(GameError::Orders { role, field: first.field, message: first.message });
            }
        }
    }
    Ok(checked)
}

/// [`Game::resolve`] of raw orders: [`check_all`] first (what [`DynGame::resolve`] runs).
///
/// Errors: those of [`check_all`] and of [`Game::resolve`].
pub fn resolve_orders<G: Game + ?Sized>(g: &G, state: &G::State, orders: &BTreeMap<String, Orders>, ctx: &mut Ctx) -> Result<G::State, GameError> {
    let checked = check_all(g, state, orders)?;
    g.resolve(state, checked, ctx)
}

/// [`Game`] with the state as canonical JSON text, so the core can hold any game behind one type.
pub trait DynGame: Send + Sync {
    /// See [`Game::rules`].
    fn rules(&self) -> &'static str;
    /// See [`Game::title`].
    fn title(&self) -> &'static str;
    /// See [`Game::default_scenario`].
    fn default_scenario(&self) -> &'static str;
    /// See [`Game::ask_kinds`].
    fn ask_kinds(&self) -> &'static [&'static str];
    /// See [`Game::scenarios`].
    fn scenarios(&self) -> &'static [(&'static str, &'static str)];
    /// See [`Game::setup`]; returns the canonical state text.
    fn setup(&self, scenario: &str, options: &BTreeMap<String, String>) -> Result<String, GameError>;
    /// See [`Game::check_new_scenario`].
    fn check_new_scenario(&self, scenario: &str) -> Result<(), GameError>;
    /// See [`Game::publication`].
    fn publication(&self, before: &str, after: &str) -> Result<Publication, GameError>;
    /// See [`Game::ever_withholds`].
    fn ever_withholds(&self) -> bool;
    /// See [`Game::roles`].
    fn roles(&self, state: &str) -> Result<Vec<String>, GameError>;
    /// See [`Game::pending`].
    fn pending(&self, state: &str) -> Result<Pending, GameError>;
    /// See [`Game::default_order`].
    fn default_order(&self, state: &str, role: &str) -> Result<Orders, GameError>;
    /// See [`Game::form_help`].
    fn form_help(&self, state: &str, role: &str, wording: u32) -> Result<Vec<String>, GameError>;
    /// See [`Game::check_order`]; the outer error is a corrupt state.
    fn check_order(&self, state: &str, role: &str, orders: &Orders) -> Result<Result<(), Vec<OrderProblem>>, GameError>;
    /// See [`Game::resolve`]; returns the canonical new state text.
    fn resolve(&self, state: &str, orders: &BTreeMap<String, Orders>, ctx: &mut Ctx) -> Result<String, GameError>;
    /// See [`Game::view`].
    fn view(&self, state: &str, role: &str) -> Result<serde_json::Value, GameError>;
    /// See [`Game::report_view`].
    fn report_view(&self, state: &str, role: &str) -> Result<minijinja::Value, GameError>;
    /// See [`Game::picture`].
    fn picture(&self, state: &str, seat: Option<&str>, ended: bool) -> Result<Option<String>, GameError>;
    /// See [`Game::bot_order`].
    fn bot_order(&self, state: &str, role: &str, ctx: &mut Ctx) -> Result<Orders, GameError>;
    /// See [`Game::sides`].
    fn sides(&self, state: &str) -> Result<Vec<String>, GameError>;
    /// See [`Game::team`].
    fn team(&self, state: &str, role: &str) -> Result<String, GameError>;
    /// See [`Game::teammates_see_plans`].
    fn teammates_see_plans(&self) -> bool;
    /// See [`Game::policies`].
    fn policies(&self) -> &'static [&'static str];
    /// One whole game from `start` by built-in players of `policy` ([`play_out`]).
    fn play_out(&self, start: &str, policy: &str, seed: [u8; 32]) -> Result<Played, GameError>;
}

/// 1-based line where the TOML `field` is written in `text`, by the parser's spans: dotted keys,
/// each optionally followed by `[i]` indexes into an array (`map.roads[1]`,
/// `union.corps[2].commander`, `character[0].start`). The line of the deepest part of the path
/// that is there (a missing key gives the line of its table, an array of tables its element's
/// `[[...]]` header); `None` when `text` is not TOML or not even the path's first key is there.
/// (`orderfile::locate` scans lines instead: it also finds a field in an order pasted into a mail
/// body that does not parse as a whole, but follows no `[i]` index.)
fn locate_path(text: &str, field: &str) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    let doc = DeTable::parse(text).ok()?;
    let (mut table, mut at) = (doc.get_ref(), None);
    for part in field.split('.') {
        let (key, indexes) = part.split_once('[').unwrap_or((part, ""));
        let Some((_, mut value)) = table.iter().find(|(k, _)| k.get_ref().as_ref() == key.trim()) else { break };
        at = Some(value);
        for i in indexes.split('[').filter(|i| !i.is_empty()).map(|i| i.trim_end_matches(']').trim().parse::<usize>()) {
            match (value.get_ref(), i) {
                (DeValue::Array(a), Ok(i)) if i < a.len() => value = &a[i],
                _ => break,
            }
            at = Some(value);
        }
        match value.get_ref() {
            DeValue::Table(t) => table = t,
            _ => break,
        }
    }
    at.map(|v| text.as_bytes()[..v.span().start.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1)
}

/// A scenario error `e` of the scenario `text` with the line its field is written on put first
/// (`line 35: map.roads[1]: unknown town "Nowhere"`): a game names the field before the message's
/// first `: `; a message with no field found in the text (a parse error names its own line) is
/// left as it is.
fn at_line(e: GameError, text: &str) -> GameError {
    match e {
        GameError::Scenario(m) => match m.split_once(": ").and_then(|(field, _)| locate_path(text, field)) {
            Some(line) => GameError::Scenario(format!("line {line}: {m}")),
            None => GameError::Scenario(m),
        },
        e => e,
    }
}

/// The canonical text of a state: pretty JSON with a final newline. Its bytes are what is hashed.
pub fn canonical<S: Serialize>(state: &S) -> String {
    let mut s = serde_json::to_string_pretty(state).expect("state serializes");
    s.push('\n');
    s
}

/// States parsed lately, by their text, shared by every thread: a step asks the game several
/// questions of the same state (pending, view per role, NMR orders, publication of before and
/// after), and parsing its JSON each time cost more than the questions; the audit's threads
/// each take the state a step on another thread made (the state after one record is the state
/// before the next). A few entries; the oldest goes. Only looked up by the whole text, so no
/// answer depends on which thread parsed it.
type Parsed = Vec<(std::any::TypeId, std::sync::Arc<str>, std::sync::Arc<dyn std::any::Any + Send + Sync>)>;

/// The entries [`Parsed`] keeps: two for each of a few threads at work (a state before and after
/// a step).
const PARSED_KEPT: usize = 8;

static PARSED: std::sync::Mutex<Parsed> = std::sync::Mutex::new(Vec::new());

/// The state of `state`'s text, parsed once per text (see [`Parsed`]); a text that does not
/// parse is an error each time.
fn parse<S: DeserializeOwned + Send + Sync + 'static>(state: &str) -> Result<std::sync::Arc<S>, GameError> {
    let ty = std::any::TypeId::of::<S>();
    let hit = PARSED.lock().unwrap_or_else(|p| p.into_inner()).iter().find(|(t, text, _)| *t == ty && **text == *state).map(|(_, _, any)| any.clone());
    if let Some(s) = hit.and_then(|any| any.downcast::<S>().ok()) {
        return Ok(s);
    }
    let parsed: std::sync::Arc<S> = std::sync::Arc::new(serde_json::from_str(state).map_err(|e| GameError::CorruptState(e.to_string()))?);
    remember(state, parsed.clone());
    Ok(parsed)
}

/// Keeps `parsed` as the state of the text `state` (see [`Parsed`]): what [`parse`] gives for
/// it, or the state a resolution just made, whose canonical text is `state` (every field of a
/// state is written and read back as it is, so it is what parsing that text would give; not
/// parsing it again saves the step's every later question about the new state that parse).
fn remember<S: Send + Sync + 'static>(state: &str, parsed: std::sync::Arc<S>) {
    let ty = std::any::TypeId::of::<S>();
    let text: std::sync::Arc<str> = std::sync::Arc::from(state);
    let mut v = PARSED.lock().unwrap_or_else(|p| p.into_inner());
    // What goes is dropped once the lock is let go (a state's memory freed outside it).
    let gone = match v.iter().position(|(t, kept, _)| *t == ty && **kept == *state) {
        Some(i) => Some(v.remove(i)),
        None if v.len() >= PARSED_KEPT => Some(v.remove(0)),
        None => None,
    };
    v.push((ty, text, parsed));
    drop(v);
    drop(gone);
}

impl<G: Game> DynGame for G
where
    G::State: Send + Sync + 'static,
{
    fn rules(&self) -> &'static str {
        Game::rules(self)
    }
    fn title(&self) -> &'static str {
        Game::title(self)
    }
    fn default_scenario(&self) -> &'static str {
        Game::default_scenario(self)
    }
    fn ask_kinds(&self) -> &'static [&'static str] {
        Game::ask_kinds(self)
    }
    fn scenarios(&self) -> &'static [(&'static str, &'static str)] {
        Game::scenarios(self)
    }
    fn setup(&self, scenario: &str, options: &BTreeMap<String, String>) -> Result<String, GameError> {
        let state = Game::setup(self, scenario, options).map_err(|e| at_line(e, scenario))?;
        let text = canonical(&state);
        remember(&text, std::sync::Arc::new(state));
        Ok(text)
    }
    fn check_new_scenario(&self, scenario: &str) -> Result<(), GameError> {
        Game::check_new_scenario(self, scenario).map_err(|e| at_line(e, scenario))
    }
    fn publication(&self, before: &str, after: &str) -> Result<Publication, GameError> {
        Ok(Game::publication(self, &*parse::<G::State>(before)?, &*parse::<G::State>(after)?))
    }
    fn ever_withholds(&self) -> bool {
        Game::ever_withholds(self)
    }
    fn roles(&self, state: &str) -> Result<Vec<String>, GameError> {
        Ok(Game::roles(self, &*parse::<G::State>(state)?))
    }
    fn pending(&self, state: &str) -> Result<Pending, GameError> {
        Ok(Game::pending(self, &*parse::<G::State>(state)?))
    }
    fn default_order(&self, state: &str, role: &str) -> Result<Orders, GameError> {
        Ok(Game::default_order(self, &*parse::<G::State>(state)?, role))
    }
    fn form_help(&self, state: &str, role: &str, wording: u32) -> Result<Vec<String>, GameError> {
        Ok(Game::form_help(self, &*parse::<G::State>(state)?, role, wording))
    }
    fn check_order(&self, state: &str, role: &str, orders: &Orders) -> Result<Result<(), Vec<OrderProblem>>, GameError> {
        Ok(Game::check_order(self, &*parse::<G::State>(state)?, role, orders).map(|_| ()))
    }
    fn resolve(&self, state: &str, orders: &BTreeMap<String, Orders>, ctx: &mut Ctx) -> Result<String, GameError> {
        let after = resolve_orders(self, &*parse::<G::State>(state)?, orders, ctx)?;
        let text = canonical(&after);
        remember(&text, std::sync::Arc::new(after));
        Ok(text)
    }
    fn view(&self, state: &str, role: &str) -> Result<serde_json::Value, GameError> {
        Ok(Game::view(self, &*parse::<G::State>(state)?, role))
    }
    fn report_view(&self, state: &str, role: &str) -> Result<minijinja::Value, GameError> {
        Game::report_view(self, &*parse::<G::State>(state)?, role).map_err(|e| GameError::View { role: role.to_string(), message: e.to_string() })
    }
    fn bot_order(&self, state: &str, role: &str, ctx: &mut Ctx) -> Result<Orders, GameError> {
        Ok(Game::bot_order(self, &*parse::<G::State>(state)?, role, ctx))
    }
    fn picture(&self, state: &str, seat: Option<&str>, ended: bool) -> Result<Option<String>, GameError> {
        Ok(Game::picture(self, &*parse(state)?, seat, ended))
    }
    fn sides(&self, state: &str) -> Result<Vec<String>, GameError> {
        Ok(Game::sides(self, &*parse::<G::State>(state)?))
    }
    fn team(&self, state: &str, role: &str) -> Result<String, GameError> {
        Ok(Game::team(self, &*parse(state)?, role))
    }
    fn teammates_see_plans(&self) -> bool {
        Game::teammates_see_plans(self)
    }
    fn policies(&self) -> &'static [&'static str] {
        Game::policies(self)
    }
    fn play_out(&self, start: &str, policy: &str, seed: [u8; 32]) -> Result<Played, GameError> {
        play_out(self, G::State::clone(&*parse::<G::State>(start)?), policy, seed)
    }
}

/// Steps after which a simulated game is given up as endless (a bug in a game or its players).
const MAX_STEPS: u32 = 100_000;

/// One whole game played by built-in players (what `pbem simulate` counts).
#[derive(Debug, Clone, PartialEq)]
pub struct Played {
    /// The winning side (`None`: a draw, or a solitaire game lost).
    pub winner: Option<String>,
    /// Turns or rounds played (the stretches of [`crate::game::Tally::clock`] added up).
    pub length: u32,
    /// What `length` counts.
    pub unit: &'static str,
    /// Steps resolved: mail round trips in a real game.
    pub steps: u32,
    /// The game's own figures at the end ([`crate::game::Tally::figures`]).
    pub figures: Vec<(&'static str, f64)>,
}

/// Plays one game from `start` to its end: every asked role's order comes from
/// [`Game::policy_checked`] with `policy` (the built-in order, which must pass its check). The game's rolls
/// come from one stream seeded by `seed`, the players' choices from another derived from it.
///
/// Errors: a built-in order that fails its check, a resolution error, or a game that does not end
/// within 100,000 steps.
pub fn play_out<G: Game + ?Sized>(g: &G, start: G::State, policy: &str, seed: [u8; 32]) -> Result<Played, GameError> {
    let mut s = start;
    // Quiet: the events of a simulated game are never read, so none are written.
    let mut dice = Ctx::quiet(seed);
    let mut bots = Ctx::quiet(commit::step_seed("pbem-simulate-players", 0, &seed, std::iter::empty()));
    let (mut steps, mut finished, mut clock) = (0u32, 0u32, g.tally(&s).clock);
    loop {
        let asked = g.pending_roles(&s);
        debug_assert_eq!(asked, g.pending(&s).roles(), "pending_roles differs from pending");
        let roles = match asked {
            Err(o) => {
                let t = g.tally(&s);
                return Ok(Played { winner: o.winner, length: finished + t.clock, unit: t.unit, steps, figures: t.figures });
            }
            Ok(roles) => roles,
        };
        let mut orders: BTreeMap<String, G::Checked> = BTreeMap::new();
        for role in roles {
            match g.policy_checked(&s, &role, policy, &mut bots) {
                Ok(c) => {
                    orders.insert(role, c);
                }
                Err(problems) => {
                    let why: Vec<String> = problems.iter().map(|p| format!("{}: {}", p.field, p.message)).collect();
                    return Err(GameError::BuiltinOrderRejected { step: steps + 1, role, problems: why.join("; ") });
                }
            }
        }
        s = g.resolve_owned(s, orders, &mut dice)?;
        steps += 1;
        let now = g.tally(&s).clock;
        if now < clock {
            finished += clock;
        }
        clock = now;
        if steps >= MAX_STEPS {
            return Err(GameError::NoEnd { steps: MAX_STEPS });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locates_scenario_paths_with_indexes() {
        let text = "title = \"t\"\n[map]\nroads = [\n  [\"A\", \"B\"],\n  [\"C\", \"D\"],\n]\n[[map.towns]]\nname = \"A\"\n[[map.towns]]\nname = \"B\"\npoints = 3\n[union]\nstart = \"A\"\n";
        let at = |f| locate_path(text, f);
        assert_eq!(at("title"), Some(1));
        assert_eq!(at("map.roads[1]"), Some(5));
        assert_eq!(at("map.roads[0][1]"), Some(4));
        assert_eq!(at("map.towns[1]"), Some(9), "an element of an array of tables: its header");
        assert_eq!(at("map.towns[1].points"), Some(11));
        assert_eq!(at("map.towns[1].x"), Some(9), "a missing key: its table");
        assert_eq!(at("map.towns[7].name"), Some(7), "past the end: the array");
        assert_eq!(at("union.start.more"), Some(13));
        assert_eq!(at("confederate.start"), None);
        assert_eq!(locate_path("not = = toml", "not"), None);
    }

    #[test]
    fn the_option_reader_reports_the_first_problem_in_key_order() {
        let opts = |kv: &[(&str, &str)]| kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<BTreeMap<_, _>>();
        let o = opts(&[("b", " true "), ("c", "x")]);
        let mut r = OptionReader::new(&o);
        assert_eq!(r.value("c"), Some("x"));
        assert!(r.bool("b", false));
        assert!(!r.bool("missing", false));
        assert!(r.finish("unknown").is_ok());
        // A bad value of `a` comes before the unknown `b`, though `a` was read last.
        let o = opts(&[("a", "yes"), ("b", "1")]);
        let mut r = OptionReader::new(&o);
        assert!(r.bool("a", true));
        let e = r.finish("unknown option").unwrap_err();
        assert!(matches!(&e, GameError::Option { key, message } if key == "a" && message == "must be true or false"), "{e}");
        let o = opts(&[("a", "1"), ("b", "x")]);
        let mut r = OptionReader::new(&o);
        r.refuse("b", "bad b");
        let e = r.finish("unknown option").unwrap_err();
        assert!(matches!(&e, GameError::Option { key, message } if key == "a" && message == "unknown option"), "{e}");
    }

    #[test]
    fn problems_are_returned_all_at_once_in_the_order_found() {
        let mut p = Problems::new();
        assert_eq!(p.clone().finish(1), Ok(1));
        p.add("b", "second field");
        p.push(OrderProblem::new("a", "first"));
        assert_eq!(p.len(), 2);
        let e = p.finish(()).unwrap_err();
        assert_eq!(e, [OrderProblem::new("b", "second field"), OrderProblem::new("a", "first")]);
    }

    #[test]
    fn bool_options_take_true_or_false_only() {
        assert!(bool_option("k", " true").unwrap());
        assert!(!bool_option("k", "false").unwrap());
        let e = bool_option("optional-fire", "yes").unwrap_err().to_string();
        assert_eq!(e, "option optional-fire: must be true or false");
    }
}
