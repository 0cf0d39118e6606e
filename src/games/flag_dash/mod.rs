//! Flag Dash (capture the flag with simultaneous hidden plans; rulebook `rules/flag-dash.txt`).
//!
//! Seats: `white-1`, `white-2`, `red-1`, `red-2` for 4 players, for 3 (one player holds both seats
//! of one team: give the same email and key to both) and for the advanced 2-player game (each
//! player holds both seats of a team); `white` and `red` for the basic 2-player game. Each round
//! every seat submits one plan (Phase 1), sealed until all are in; Phase 2 and cleanup resolve
//! without further orders, except when teammates tie on priority without an agreed `tie_first`
//! (then the team's first seat is asked). See [`orders`] for the order fields and the grammar of
//! alternatives, [`forms`] for the NMR defaults, [`engine`] for the resolution.
//!
//! Options: `players=2|3|4` (default 4); `mode=basic|advanced` (2 players only, default basic);
//! `tiebreak=white|red`: the team holding the tiebreak marker first (Setup: the team with the
//! youngest player; default white); `abilities=true|false` (default false): the character
//! abilities (in every mode: the 2-Player Rules do not exclude them); the spy then is a step asked
//! of the spy's seat (the opponent, then the replacement token, once the card is seen);
//! `layout=secret|open` (default open): with `secret`, each team's first seat sets up the team's
//! half (flag, characters, tunnels) as its first order, sealed like every order until both are in
//! (Custom Layout, secret). A custom layout itself is a layout file (`pbem new --scenario FILE`).
//! `white-defender=NAME`, `red-defender=NAME`: the team's defender, when the players choose other
//! runners than the layout's (Setup).

pub mod asked;
pub mod bot;
pub mod engine;
pub mod forms;
pub mod layout;
pub mod orders;
pub mod picture;
pub mod state;
pub mod view;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use crate::dice::Ctx;
use crate::game::{Ask, Game, GameError, OptionReader, OrderProblem, Orders, Outcome, Pending, Publication, Tally};
use layout::{Ability, Layout, Team, Teams};
use orders::Parsed;
use state::{Card, Character, FlagAt, Mode, Seat, Stage, State, Token};

/// The game, registered in [`crate::games::ALL`].
pub struct FlagDash;

/// The shipped layout (a reconstruction of the basic board; see the file's comments).
pub const DEFAULT_LAYOUT: &str = include_str!("../../../scenarios/flag-dash.toml");

/// The kinds of ask: the round's plan, the spy's replacement, and the same-team tie question.
pub const KINDS: &[&str] = &["layout", "plan", "spy", "tie-order"];

/// The settings read from `--option` values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Players and seats.
    pub mode: Mode,
    /// Team holding the tiebreak marker at the start.
    pub tiebreak: Team,
    /// Character abilities in use.
    pub abilities: bool,
    /// Each team sets up its half in secret before round 1.
    pub secret_layout: bool,
    /// The character each team chose as its defender (Setup: players select their runners),
    /// by name; `None` keeps the layout's defender.
    pub defenders: Teams<Option<String>>,
}

fn opt_err(key: &str, message: &str) -> GameError {
    GameError::Option { key: key.into(), message: message.into() }
}

/// Reads `--option` values (see the module doc); values are trimmed and lowercased.
///
/// Errors: [`GameError::Option`] for an unknown key or a bad value.
pub fn read_options(options: &BTreeMap<String, String>) -> Result<Options, GameError> {
    let mut r = OptionReader::new(options);
    let lower = |r: &mut OptionReader<'_>, key: &str| r.value(key).map(str::to_ascii_lowercase);
    let mut players = 4;
    if let Some(v) = lower(&mut r, "players") {
        match v.parse().ok().filter(|n| (2..=4).contains(n)) {
            Some(n) => players = n,
            None => r.refuse("players", "2, 3 or 4"),
        }
    }
    let mode = lower(&mut r, "mode");
    let mut tiebreak = Team::White;
    if let Some(v) = lower(&mut r, "tiebreak") {
        match Team::parse(&v) {
            Some(t) => tiebreak = t,
            None => r.refuse("tiebreak", "white or red"),
        }
    }
    let secret_layout = match lower(&mut r, "layout").as_deref() {
        None | Some("open") => false,
        Some("secret") => true,
        Some(_) => {
            r.refuse("layout", "secret or open");
            false
        }
    };
    let abilities = match lower(&mut r, "abilities") {
        None => false,
        Some(v) => crate::game::bool_option("abilities", &v).unwrap_or_else(|_| {
            r.refuse("abilities", "must be true or false");
            false
        }),
    };
    let defenders = Teams { white: lower(&mut r, "white-defender"), red: lower(&mut r, "red-defender") };
    r.finish("unknown option; Flag Dash has players, mode, tiebreak, abilities, layout, white-defender, red-defender")?;
    let mode = match (players, mode.as_deref()) {
        (4, None) => Mode::Four,
        (3, None) => Mode::Three,
        (2, None | Some("basic")) => Mode::TwoBasic,
        (2, Some("advanced")) => Mode::TwoAdvanced,
        (2, Some(_)) => return Err(opt_err("mode", "basic or advanced")),
        _ => return Err(opt_err("mode", "only with players=2")),
    };
    Ok(Options { mode, tiebreak, abilities, secret_layout, defenders })
}

/// The initial state (Flag Dash, Setup; 2-Player Rules for the basic game's changes).
///
/// Errors: [`GameError::Scenario`] when the basic 2-player shift is impossible on this layout.
pub fn initial_state(layout: Layout, o: &Options) -> Result<State, GameError> {
    let tokens: Vec<Token> = (1..=7).map(Token::N).collect();
    let seat = |role: String, team: Team, number: u8| Seat { role, team, number, cards: Card::BASIC.to_vec(), tokens: tokens.clone(), discarded: Vec::new() };
    let mut seats = Vec::new();
    for team in Team::ALL {
        if o.mode == Mode::TwoBasic {
            seats.push(seat(team.key().to_string(), team, 0));
        } else {
            for n in 1..=2 {
                seats.push(seat(format!("{}-{n}", team.key()), team, n));
            }
        }
    }
    let mut chars: Vec<Character> = layout
        .characters
        .iter()
        .map(|c| Character {
            name: c.name.clone(),
            team: c.team,
            seat: c.seat,
            at: c.start,
            boosts: 0,
            flags_left: 2,
            holds: Vec::new(),
            ability: c.ability,
            trapped: false,
            supply: if o.abilities && matches!(c.ability, Some(Ability::Trap | Ability::Dig)) { 2 } else { 0 },
        })
        .collect();
    place_defenders(&mut chars, o)?;
    if o.abilities {
        give_ability_kits(&mut seats, &chars);
    }
    let out_columns = if o.mode == Mode::TwoBasic { step_runners_inward(&layout, &mut chars)? } else { Vec::new() };
    Ok(State {
        tunnels: layout.tunnels.clone(),
        flags: Teams { white: FlagAt::Space(layout.flags.white), red: FlagAt::Space(layout.flags.red) },
        layout: std::sync::Arc::new(layout),
        mode: o.mode,
        abilities: o.abilities,
        traps: Vec::new(),
        spied: BTreeMap::new(),
        out_columns,
        seats,
        chars,
        tiebreak: o.tiebreak,
        round: 1,
        stage: if o.secret_layout { Stage::Layout } else { Stage::Plan },
        plans: BTreeMap::new(),
        played: BTreeMap::new(),
        tie_answers: BTreeMap::new(),
        log: Vec::new(),
        trail: Vec::new(),
        last_mover: None,
        outcome: None,
    })
}

/// Setup: the players choose their runners, so any character of a team may be its defender
/// (`o.defenders`). The chosen one takes the layout's defender place; the layout's defender takes
/// the chosen one's runner seat and starting space.
///
/// Errors: [`GameError::Option`] (`white-defender` or `red-defender`) when a name is not a
/// character of its team.
fn place_defenders(chars: &mut [Character], o: &Options) -> Result<(), GameError> {
    for team in Team::ALL {
        let Some(name) = o.defenders.get(team) else { continue };
        let chosen = chars.iter().position(|c| c.team == team && c.name.eq_ignore_ascii_case(name)).ok_or_else(|| {
            let names: Vec<&str> = chars.iter().filter(|c| c.team == team).map(|c| c.name.as_str()).collect();
            opt_err(&format!("{}-defender", team.key()), &format!("{name:?} is not a character of team {}: one of {}", team.key(), names.join(", ")))
        })?;
        let defender = chars.iter().position(|c| c.team == team && !c.is_runner()).expect("each team has a defender");
        if chosen != defender {
            let (seat, at) = (chars[chosen].seat, chars[chosen].at);
            chars[chosen].seat = None;
            chars[chosen].at = chars[defender].at;
            chars[defender].seat = seat;
            chars[defender].at = at;
        }
    }
    Ok(())
}

/// Character Abilities: each runner's card or tokens go to the seat that controls it (a seat of
/// number 0, the basic 2-player game, controls all its team's runners).
fn give_ability_kits(seats: &mut [Seat], chars: &[Character]) {
    for seat in seats.iter_mut() {
        for c in chars.iter().filter(|c| c.team == seat.team && c.is_runner() && (seat.number == 0 || c.seat == Some(seat.number))) {
            match c.ability {
                Some(Ability::Spy) => seat.tokens.extend([Token::Spy, Token::Spy]),
                Some(Ability::Cats) => seat.tokens.extend([Token::Cat3, Token::Cat5]),
                Some(a) => seat.cards.extend(Card::of_ability(a)),
                None => {}
            }
        }
        seat.tokens.sort_by_key(|t| (t.priority(), t.key()));
    }
}

/// 2-Player Rules, Basic: runners on the outer columns step one space inward; those columns leave
/// play. Returns the columns out of play (the first and the last).
///
/// Errors: [`GameError::Scenario`] when a piece, flag or tunnel would still be on an outer column,
/// or two pieces would share a space.
fn step_runners_inward(layout: &Layout, chars: &mut [Character]) -> Result<Vec<i32>, GameError> {
    let last = layout.columns - 1;
    let out_columns = vec![0, last];
    for c in chars.iter_mut().filter(|c| c.is_runner()) {
        if c.at.c == 0 {
            c.at.c = 1;
        } else if c.at.c == last {
            c.at.c = last - 1;
        }
    }
    let mut spaces: Vec<_> = chars.iter().map(|c| c.at).chain([layout.flags.white, layout.flags.red]).collect();
    let n = spaces.len();
    spaces.sort();
    spaces.dedup();
    if spaces.len() != n || spaces.iter().chain(&layout.tunnels).any(|q| out_columns.contains(&q.c)) {
        return Err(GameError::Scenario("the basic 2-player game needs the outer columns empty after runners step inward".into()));
    }
    Ok(out_columns)
}

impl Game for FlagDash {
    type State = State;
    type Checked = Parsed;

    fn rules(&self) -> &'static str {
        "flag-dash"
    }

    fn title(&self) -> &'static str {
        "Flag Dash"
    }


    fn scenarios(&self) -> &'static [(&'static str, &'static str)] {
        &[
            ("basic", DEFAULT_LAYOUT),
            ("cones", include_str!("../../../scenarios/flag-dash-cones.toml")),
            ("alternate", include_str!("../../../scenarios/flag-dash-alternate.toml")),
        ]
    }

    fn ask_kinds(&self) -> &'static [&'static str] {
        KINDS
    }

    fn check_new_scenario(&self, scenario: &str) -> Result<(), GameError> {
        Layout::parse_new(scenario).map(drop)
    }

    fn setup(&self, scenario: &str, options: &BTreeMap<String, String>) -> Result<State, GameError> {
        let o = read_options(options)?;
        initial_state(Layout::parse(scenario)?, &o)
    }

    fn roles(&self, s: &State) -> Vec<String> {
        s.seats.iter().map(|x| x.role.clone()).collect()
    }

    /// Plans stay secret while a round is paused in Phase 2 (a tie question or the spy's step):
    /// at the table the cards not yet played are still face down (Phase 2), so the orders wait for
    /// the end of the round; at a round boundary they are published.
    fn publication(&self, _: &State, after: &State) -> Publication {
        if matches!(after.stage, Stage::Move { .. }) { Publication::AfterRound } else { Publication::Now }
    }

    fn pending(&self, s: &State) -> Pending {
        match self.pending_roles(s) {
            Err(o) => Pending::Over(o),
            Ok(roles) => Pending::Orders(roles.into_iter().map(|r| Ask { prompt: forms::prompt(s, &r), role: r, kind: asked_kind(s).into() }).collect()),
        }
    }

    fn pending_roles(&self, s: &State) -> Result<Vec<String>, Outcome> {
        if let Some(o) = &s.outcome {
            return Err(o.clone());
        }
        let roles = match s.stage {
            Stage::Plan => self.roles(s),
            Stage::Layout => engine::layout_asked(s),
            Stage::Move { .. } => match engine::spy_asked(s) {
                Some(r) => vec![r],
                None => engine::tie_asked(s).into_iter().collect(),
            },
            Stage::Over => Vec::new(),
        };
        if roles.is_empty() {
            return Err(Outcome { winner: None, summary: "the game stopped without a question (corrupt state)".into() });
        }
        let mut roles = roles;
        roles.sort();
        Ok(roles)
    }

    fn default_order(&self, s: &State, role: &str) -> Orders {
        if s.seat(role).is_none() { Orders::new() } else { forms::default_order(s, role) }
    }

    fn form_help(&self, s: &State, role: &str, _: u32) -> Vec<String> {
        forms::help(s, role)
    }

    fn check_order(&self, s: &State, role: &str, orders: &Orders) -> Result<Parsed, Vec<OrderProblem>> {
        orders::parse(s, role, orders)
    }

    fn resolve(&self, state: &State, orders: BTreeMap<String, Parsed>, ctx: &mut Ctx) -> Result<State, GameError> {
        resolve_with(state, orders, ctx)
    }

    fn resolve_owned(&self, state: State, orders: BTreeMap<String, Parsed>, ctx: &mut Ctx) -> Result<State, GameError> {
        resolve_in(state, orders, ctx)
    }

    fn view(&self, s: &State, role: &str) -> serde_json::Value {
        view::view(s, role)
    }

    fn picture(&self, s: &State, seat: Option<&str>, ended: bool) -> Option<String> {
        crate::picture::view_for(self, s, seat, ended).map(|v| picture::draw(&v))
    }

    fn bot_order(&self, s: &State, role: &str, ctx: &mut Ctx) -> Orders {
        bot::order(s, role, &mut |n| ctx.below(n))
    }

    /// The built-in order checked as typed (a plan is not written as TOML and read back).
    fn policy_checked(&self, s: &State, role: &str, _policy: &str, ctx: &mut Ctx) -> Result<Parsed, Vec<OrderProblem>> {
        bot::checked(s, role, &mut |n| ctx.below(n))
    }

    /// Rounds (a draw at the round limit counts the limit).
    fn tally(&self, s: &State) -> Tally {
        Tally { clock: s.round.min(s.layout.round_limit), unit: "rounds", figures: Vec::new() }
    }

    /// The teams: an outcome names the winning team, not a seat.
    fn sides(&self, _: &State) -> Vec<String> {
        Team::ALL.iter().map(|t| t.key().to_string()).collect()
    }

    fn team(&self, s: &State, role: &str) -> String {
        s.seat(role).map_or_else(|| role.to_string(), |seat| seat.team.key().to_string())
    }

    /// "Teammates may communicate as much as they desire throughout the round and may look at one
    /// another's face-down action cards and priority tokens at any time" (Flag Dash, Playing).
    fn teammates_see_plans(&self) -> bool {
        true
    }
}

/// The kind of the question of `s`'s stage (while orders are asked).
fn asked_kind(s: &State) -> &'static str {
    match s.stage {
        Stage::Plan => "plan",
        Stage::Layout => "layout",
        Stage::Move { .. } if engine::spy_asked(s).is_some() => "spy",
        Stage::Move { .. } => "tie-order",
        Stage::Over => "",
    }
}

/// The account's line for `role`'s answer to a same-team tie (Determine Move Order: the
/// teammates decide who moves first). From report wording 4 an answer the seat did not send (its
/// NMR, [`Ctx::unsent`]) is said to be the default or the built-in player's, not the seat's.
fn tie_answer_text(ctx: &Ctx, role: &str, first: &str) -> String {
    match ctx.unsent_by(role).filter(|_| ctx.wording() >= 4) {
        Some("bot") => format!("{role} did not answer the tie: the built-in player answered, {first} moves first."),
        Some(_) => format!("{role} did not answer the tie: by default, {first} (the team's first seat) moves first."),
        None => format!("{role} answers the tie: {first} moves first."),
    }
}

/// [`Game::resolve`]: stores the plans (or the tie answer) and runs Phase 2 and 3 until the next
/// question or the end. `orders` are the asked seats' orders, checked by the core
/// ([`crate::game::check_all`]), taken in the seats' names' order (the order of the asks).
pub fn resolve_with(state: &State, orders: BTreeMap<String, Parsed>, ctx: &mut Ctx) -> Result<State, GameError> {
    resolve_in(state.clone(), orders, ctx)
}

/// [`resolve_with`] in place, on a state the caller gives up ([`Game::resolve_owned`]).
pub fn resolve_in(mut s: State, orders: BTreeMap<String, Parsed>, ctx: &mut Ctx) -> Result<State, GameError> {
    // A quiet context keeps no account: its lines are not even formatted (the state is the same).
    let _untold = ctx.is_quiet().then(engine::Untold::begin);
    let mut plans = Vec::new();
    let mut setups = Vec::new();
    for (role, p) in orders {
        let role = &role;
        match p {
            Parsed::Plan(p) => plans.push((role.clone(), p)),
            Parsed::Layout(team, setup) => setups.push((team, setup)),
            Parsed::SpyTarget(target) => {
                let Stage::Move { mv } = s.stage else { unreachable!("a spy answer outside a move") };
                engine::spy_reveal(&mut s, ctx, role, mv, target);
            }
            Parsed::Spy(m) => {
                let Stage::Move { mv } = s.stage else { unreachable!("a spy answer outside a move") };
                engine::apply_spy(&mut s, ctx, role, mv, m);
            }
            Parsed::TieFirst(first) => {
                let team = s.seat(role).expect("seat").team;
                let text = tie_answer_text(ctx, role, &first);
                engine::say(&mut s, ctx, text);
                s.tie_answers.insert(team.key().to_string(), first);
            }
        }
    }
    if !setups.is_empty() {
        engine::apply_layouts(&mut s, ctx, setups);
    }
    if !plans.is_empty() {
        // Seats in fixed order (the roles' order), so the state does not depend on map order.
        let order = FlagDash.roles(&s);
        plans.sort_by_key(|(r, _)| order.iter().position(|x| x == r));
        engine::apply_plans(&mut s, ctx, plans);
    }
    engine::run(&mut s, ctx);
    Ok(s)
}
