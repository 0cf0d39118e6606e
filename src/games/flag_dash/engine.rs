//! Phase 2 and 3: the move order, carrying out each revealed move, boosts, tunnels, the game end,
//! cleanup. Every function is a pure change of [`State`]; what happens is told through [`Ctx`].

use super::layout::{Dir, Sq, Team, Teams};
pub use super::asked::{layout_asked, order, spy_asked, spy_target_asked, tie_asked};
use super::orders::{Arg, Step, Try, acting, parse_try};
use super::layout::Ability;
use super::state::{Card, Effect, FlagAt, Mode, MovePlan, Plan, Stage, State, Token};
use crate::dice::Ctx;
use crate::game::Outcome;

thread_local! {
    /// How much this thread leaves untold: [`TOLD`], [`UNTOLD`] or [`TRIAL_LEVEL`].
    static TRIAL: std::cell::Cell<u8> = const { std::cell::Cell::new(TOLD) };
}

/// Every text written (a real step told to its players).
const TOLD: u8 = 0;
/// The account's lines and reasons left empty (see [`Untold`]).
const UNTOLD: u8 = 1;
/// As [`UNTOLD`], and no trail or outcome text either (see [`Trial`]).
const TRIAL_LEVEL: u8 = 2;

/// While a `Trial` lives, moves carried out on this thread write no account: every line and every
/// reason why a move cannot be carried out is left empty, unformatted, and no step goes into the
/// round's trail (the picture's paths). The built-in player tries
/// thousands of moves a step only to score the board after them; what a move does to the board,
/// and whether it can be carried out, is the same either way. A real step never runs inside one
/// (its account is built from the same decisions, with every text).
pub struct Trial {
    was: u8,
}

impl Trial {
    /// Starts a trial on this thread (ended when the value is dropped).
    pub fn begin() -> Self {
        Trial { was: TRIAL.replace(TRIAL_LEVEL) }
    }
}

impl Drop for Trial {
    fn drop(&mut self) {
        TRIAL.set(self.was);
    }
}

/// While an `Untold` lives, a step resolved on this thread formats none of its account's lines
/// (nor why a move cannot be carried out), as in a [`Trial`], but makes exactly the state a told
/// step makes (trail and outcome included): for a step whose events nobody reads (a quiet
/// [`Ctx`], `pbem simulate`), whose account is not kept either ([`say`]).
pub struct Untold {
    was: u8,
}

impl Untold {
    /// Starts leaving the account untold on this thread (until the value is dropped); within a
    /// [`Trial`], the trial goes on.
    pub fn begin() -> Self {
        let was = TRIAL.get();
        TRIAL.set(was.max(UNTOLD));
        Untold { was }
    }
}

impl Drop for Untold {
    fn drop(&mut self) {
        TRIAL.set(self.was);
    }
}

/// Whether this thread leaves the account untold ([`Trial`] or [`Untold`]).
fn in_trial() -> bool {
    TRIAL.get() != TOLD
}

/// The account's text, as `format!`; empty (nothing formatted) in a [`Trial`] or [`Untold`].
macro_rules! tell {
    ($($arg:tt)*) => {
        if in_trial() { String::new() } else { format!($($arg)*) }
    };
}

/// A text the state keeps (the outcome's), as `format!`; empty only in a [`Trial`].
macro_rules! kept {
    ($($arg:tt)*) => {
        if TRIAL.get() == TRIAL_LEVEL { String::new() } else { format!($($arg)*) }
    };
}

/// [`say`] with the text as `format!` writes it, formatted only when a context keeps events
/// (not for a quiet one).
macro_rules! say {
    ($s:expr, $ctx:expr, $($arg:tt)*) => {
        if !$ctx.is_quiet() {
            say($s, $ctx, format!($($arg)*));
        }
    };
}

/// Logs a public event and keeps it in the round's account. A long text is wrapped into one
/// event of several lines (so every report line stays under 100 characters), each continuation
/// indented as far as the text's first line, so that it reads under its text, never as an item of
/// its own (the report puts a bullet before the first line only). A quiet context (`pbem
/// simulate`, which reads neither) gets nothing, nor does the account.
pub fn say(s: &mut State, ctx: &mut Ctx, text: String) {
    if ctx.is_quiet() {
        return;
    }
    let indent = " ".repeat(text.len() - text.trim_start().len());
    let lines: Vec<String> = crate::text::wrap_lines(&text, 88 - indent.len()).into_iter().map(|l| format!("{indent}{l}")).collect();
    let event = lines.join("\n");
    ctx.say(event.clone());
    s.log.push(event);
}

/// The absolute direction of a Run card for `team`: forward points away from the team's back row,
/// left is the team's left when facing the opponents (Flag Dash, Action Cards, Run).
pub fn run_dir(team: Team, card: Card) -> Dir {
    // White's direction by card (Forward n, Back s, Left w, any other e), as its place in
    // `Dir::ALL`, turned around for Red (two places on): a look-up, not a branch per card (every
    // run card of every move the built-in player tries). Forward, Back and Left lead the cards.
    const WHITE: [usize; 3] = [0, 2, 3];
    let white = WHITE.get(card as usize).copied().unwrap_or(1);
    Dir::ALL[(white + 2 * usize::from(team == Team::Red)) % 4]
}

/// Applies both teams' secret setups at once (the reveal) and opens round 1.
pub fn apply_layouts(s: &mut State, ctx: &mut Ctx, setups: Vec<(Team, super::orders::TeamSetup)>) {
    for (team, setup) in setups {
        *s.flags.get_mut(team) = FlagAt::Space(setup.flag);
        for (i, q) in &setup.chars {
            s.chars[*i].at = *q;
        }
        let keep: Vec<Sq> = s.tunnels.iter().copied().filter(|q| {
            let (a, b) = super::orders::half_rows(s, team);
            !(q.r + 1 >= a && q.r < b)
        }).collect();
        s.tunnels = keep;
        s.tunnels.extend(setup.tunnels.iter().copied());
        let chars: Vec<String> = setup.chars.iter().map(|(i, q)| format!("{} {q}", s.chars[*i].name)).collect();
        let tunnels: Vec<String> = setup.tunnels.iter().map(|q| q.to_string()).collect();
        say(
            s,
            ctx,
            format!("Team {} reveals its half: flag {}, {}; tunnels {}.", team.name(), setup.flag, chars.join(", "), if tunnels.is_empty() { "none".into() } else { tunnels.join(" ") }),
        );
    }
    s.stage = Stage::Plan;
}

/// Stores the round's plans (Phase 1): planned tokens leave the seats' supplies, face down.
pub fn apply_plans(s: &mut State, ctx: &mut Ctx, plans: Vec<(String, Plan)>) {
    s.log.clear();
    s.trail.clear();
    for (role, plan) in plans {
        let seat = s.seats.iter_mut().find(|x| x.role == role).expect("checked role");
        for m in &plan.moves {
            if let Some(i) = seat.tokens.iter().position(|t| *t == m.token) {
                seat.tokens.remove(i);
            }
        }
        s.plans.insert(role, plan);
    }
    let r = s.round;
    if ctx.wording() >= 2 {
        // A seat that sent none has its NMR plan here (the step's orders say which): "every
        // plan is in" read as if each seat had sent one (report wording 2, tester21 T21b-2).
        say!(s, ctx, "Round {r}: every seat's plan is set (sent, or given by the NMR policy).");
    } else {
        say!(s, ctx, "Round {r}: every plan is in.");
    }
    enter_move(s, ctx, 1);
}

/// Starts move `mv` of Phase 2: all tokens of that move are revealed at once.
fn enter_move(s: &mut State, ctx: &mut Ctx, mv: u8) {
    s.stage = Stage::Move { mv };
    if !ctx.is_quiet() {
        let mut parts = Vec::new();
        for seat in &s.seats {
            match s.plans.get(&seat.role).and_then(|p| p.moves.get(mv as usize - 1)) {
                Some(m) => parts.push(format!("{} {}", seat.role, m.token.title())),
                None => parts.push(format!("{} none (reset token only)", seat.role)),
            }
        }
        say!(s, ctx, "Move {mv}: tokens revealed: {}.", parts.join(", "));
    }
    // Character Abilities, Spy: the spy names the opponent after the tokens are revealed, at its
    // own step; with a single opponent seat (the 2-player basic game) there is nothing to ask.
    s.spied.clear();
    // By place, not over a copy of the seats: a reveal changes plans and what was spied, never a
    // seat.
    for i in 0..s.seats.len() {
        let seat = &s.seats[i];
        let spy = s.plans.get(&seat.role).and_then(|p| p.moves.get(mv as usize - 1)).is_some_and(|m| m.token == Token::Spy);
        let opponents = if spy { s.team_roles(seat.team.other()) } else { Vec::new() };
        if let [target] = opponents[..] {
            let (role, target) = (seat.role.clone(), target.to_string());
            spy_reveal(s, ctx, &role, mv, target);
        }
    }
}

/// The spy of `role` forces `target` to reveal its card of move `mv` (Character Abilities, Spy).
/// Revealed means face up, so every seat sees it (the opponent's own team knew it anyway); our
/// reading.
pub fn spy_reveal(s: &mut State, ctx: &mut Ctx, role: &str, mv: u8, target: String) {
    let card = s.plans.get(&target).and_then(|p| p.moves.get(mv as usize - 1)).map(describe_card).unwrap_or_else(|| "no card (no move)".into());
    let text = format!("Spy ({role}): {target} reveals its card for move {mv}: {card}.");
    if let Some(m) = s.plans.get_mut(role).and_then(|p| p.moves.get_mut(mv as usize - 1)) {
        m.spy_on = Some(target);
    }
    say(s, ctx, text.clone());
    s.spied.insert(role.to_string(), text);
}

/// Replaces `role`'s spy token (and perhaps its card) in move `mv` (Character Abilities, Spy).
pub fn apply_spy(s: &mut State, ctx: &mut Ctx, role: &str, mv: u8, m: MovePlan) {
    let seat = s.seats.iter_mut().find(|x| x.role == role).expect("seat");
    if let Some(i) = seat.tokens.iter().position(|t| *t == m.token) {
        seat.tokens.remove(i);
    }
    let old = &mut s.plans.get_mut(role).expect("plan").moves[mv as usize - 1];
    let changed = old.card != m.card || old.combo != m.combo || old.copy != m.copy;
    let spy_on = old.spy_on.take();
    *old = MovePlan { spy_on, ..m.clone() };
    s.spied.remove(role);
    let extra = if changed { " and changes its card (face down)" } else { "" };
    say!(s, ctx, "{role} discards the spy token for good, replaces it with {}{extra}.", m.token.title());
}

/// Runs Phase 2 and 3 from where the state stands until plans or a tie answer are needed, or the
/// game ends.
pub fn run(s: &mut State, ctx: &mut Ctx) {
    while let Stage::Move { mv } = s.stage {
        if spy_asked(s).is_some() {
            return;
        }
        let Ok(order) = order(s, mv) else { return };
        let tb = s.tiebreak.name();
        say!(s, ctx, "Move {mv} order: {} (tiebreak marker: {tb}).", order.join(", "));
        for role in order {
            resolve_move(s, ctx, &role, mv);
            s.last_mover = s.seat(&role).map(|x| x.team);
            if let Some(o) = &s.outcome {
                let text = format!("Game over: {}", o.summary);
                say(s, ctx, text);
                s.stage = Stage::Over;
                return;
            }
        }
        s.tie_answers.clear();
        if mv == 1 {
            enter_move(s, ctx, 2);
        } else {
            secret_tunnel(s, ctx);
            cleanup(s, ctx);
        }
    }
}

/// The alternate board's secret tunnel, used only at the end of Phase 2 (Alternate Board Setup):
/// each seat that asked for it in its plan (`secret_tunnel = true`, in seat order) sends the
/// characters it may move that stand on the entrance to its team's exit, unless a flag or character
/// occupies the exit; a character holding a team flag may not (as with every tunnel; our reading).
fn secret_tunnel(s: &mut State, ctx: &mut Ctx) {
    let Some(st) = s.layout.secret_tunnel.clone() else { return };
    for seat in s.seats.clone() {
        if !s.plans.get(&seat.role).is_some_and(|p| p.secret_tunnel) {
            continue;
        }
        for i in s.movable(&seat.role) {
            if s.chars[i].at != st.entrance {
                continue;
            }
            let exit = *st.exits.get(seat.team);
            let name = s.chars[i].name.clone();
            let text = if s.chars[i].trapped {
                // Character Abilities, Trap: trapped until a reset token selects it.
                format!("{name} is trapped and cannot take the secret tunnel")
            } else if s.carried_by(i).is_some() {
                format!("{name} holds a team flag and may not take the secret tunnel")
            } else if s.char_at(exit).is_some() || s.flag_lying_at(exit).is_some() {
                format!("{name} cannot take the secret tunnel: its exit {exit} is occupied")
            } else {
                s.chars[i].at = exit;
                s.trail.push((name.clone(), st.entrance, exit));
                let trap = spring_trap(s, i);
                format!("{name} takes the secret tunnel {} -> {exit}{trap}", st.entrance)
            };
            say!(s, ctx, "End of Phase 2 ({}): {text}.", seat.role);
        }
    }
}

/// Phase 3: cards return, the tiebreak marker goes to the team that moved last, and the next round
/// starts (or the game is drawn at the layout's round limit, our addition).
fn cleanup(s: &mut State, ctx: &mut Ctx) {
    s.played.clear();
    s.plans.clear();
    if let Some(t) = s.last_mover {
        s.tiebreak = t;
    }
    let tb = s.tiebreak.name();
    say!(s, ctx, "Cleanup: cards return to hand; Team {tb} moved last and takes the tiebreak marker.");
    s.round += 1;
    if s.round > s.layout.round_limit {
        let limit = s.layout.round_limit;
        s.outcome = Some(Outcome { winner: None, summary: format!("a draw: no team scored within the round limit ({limit} rounds)") });
        let text = format!("Game over: {}", s.outcome.as_ref().map(|o| o.summary.clone()).unwrap_or_default());
        say(s, ctx, text);
        s.stage = Stage::Over;
    } else {
        s.stage = Stage::Plan;
    }
}

fn describe_card(mp: &MovePlan) -> String {
    let d = describe(mp);
    d.rsplit_once(" with ").map(|x| x.0.to_string()).unwrap_or(d)
}

fn describe(mp: &MovePlan) -> String {
    let mut t = mp.card.title();
    if mp.card == Card::Copy {
        t = format!("Copy (as {})", mp.copy.map(|c| c.title()).unwrap_or_default());
    }
    if let Some(c) = mp.combo {
        let ct = if c == Card::Copy { format!("Copy (as {})", mp.copy.map(|c| c.title()).unwrap_or_default()) } else { c.title() };
        t = format!("{t} + {ct}");
    }
    format!("{t} with {}", mp.token.title())
}

/// Reveals and carries out `role`'s move `mv` (Flag Dash, Move Characters), then the token's
/// bonus and its discard. Which alternative is carried out:
/// 1. the first that can be carried out fully (every step, every card);
/// 2. else the first whose boosts and tunnels can be carried out and at least one of whose cards
///    can, each card that cannot being carried out "not at all" (Using Boosts: "You must fully
///    resolve the action on your action card (if possible) or not at all", per action card; a
///    combo resolves its two cards "once each", Priority Tokens, Combo);
/// 3. else nothing. The token's own effects happen all the same: a boost (#2, #4), the reset
///    (#7), a trapped character the reset token selected escapes (Character Abilities, Trap), and
///    the cats chase (Character Abilities, Crazy Cat Lady: the chase is the token's, not the card's).
pub fn resolve_move(s: &mut State, ctx: &mut Ctx, role: &str, mv: u8) {
    let mp = s.plans[role].moves[mv as usize - 1].clone();
    // Report wording 2: a failing repeat of a card says which it is (tester20 T20c-3).
    let choice = choose_alternative(s, role, &mp, ctx.wording() >= 2);
    let selected = choice.selected.as_ref().map(|t| t.who);
    tell_choice(s, ctx, role, &mp, choice);
    // Action Cards, Copy: the move's cards count as played for later moves.
    let played = s.played.entry(role.to_string()).or_default();
    played.push(mp.card);
    played.extend(mp.combo);
    if s.outcome.is_some() {
        return;
    }
    token_after(s, ctx, role, mp.token, selected);
}

/// How an alternative was carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fulfilled {
    /// Every step and every card.
    Fully,
    /// Its boosts and tunnels and at least one card; each other card not at all.
    InPart,
}

/// The alternative of a move that is carried out (on the state [`choose_alternative`] was given).
#[derive(Debug, Clone)]
pub struct Carried {
    /// Its place in the move's `try` list (0-based).
    pub k: usize,
    /// Fully or in part.
    pub how: Fulfilled,
    /// What happened, a line per step.
    pub lines: Vec<String>,
}

/// What carrying out a move may change on the board: where each character stands, its boosts,
/// character flags, trap and supply, the team flags, tunnels, traps, the outcome and the trail.
/// Kept to put a move that cannot be carried out back, without a copy of the whole state.
struct Board {
    chars: Vec<(Sq, u8, u8, Vec<String>, bool, u8)>,
    flags: Teams<FlagAt>,
    tunnels: Vec<Sq>,
    traps: Vec<(Sq, String)>,
    outcome: Option<Outcome>,
    trail: usize,
}

impl Board {
    fn of(s: &State) -> Self {
        let chars = s.chars.iter().map(|c| (c.at, c.boosts, c.flags_left, c.holds.clone(), c.trapped, c.supply)).collect();
        let (flags, tunnels, traps, outcome) = (s.flags.clone(), s.tunnels.clone(), s.traps.clone(), s.outcome.clone());
        Board { chars, flags, tunnels, traps, outcome, trail: s.trail.len() }
    }

    /// Puts `s` back as it was (`self` is kept for the next time).
    fn put_back(&self, s: &mut State) {
        for (c, (at, boosts, flags_left, holds, trapped, supply)) in s.chars.iter_mut().zip(&self.chars) {
            (c.at, c.boosts, c.flags_left, c.trapped, c.supply) = (*at, *boosts, *flags_left, *trapped, *supply);
            if c.holds != *holds {
                c.holds.clone_from(holds);
            }
        }
        s.flags.clone_from(&self.flags);
        s.tunnels.clone_from(&self.tunnels);
        s.traps.clone_from(&self.traps);
        s.outcome.clone_from(&self.outcome);
        s.trail.truncate(self.trail);
    }
}

/// What a revealed move does, decided before anything is told (see [`resolve_move`]).
#[derive(Debug, Clone)]
pub struct MoveChoice {
    /// Alternatives that cannot be read against the state: place in the list and why.
    pub skipped: Vec<(usize, String)>,
    /// Alternatives that cannot be carried out fully, tried before the one carried out (all of
    /// them when none is carried out fully): place and why.
    pub not_fully: Vec<(usize, String)>,
    /// The alternative carried out, if any.
    pub carried: Option<Carried>,
    /// The alternative whose character the token selects: the one carried out, else the first that
    /// may select its character (Character Abilities, Trap: a trapped one only with a reset token).
    pub selected: Option<Try>,
}

/// Decides which alternative of `role`'s move `mp` is carried out (the order of [`resolve_move`]),
/// each tried on `s` and put back when it is not the one: `s` is left as the one carried out
/// leaves it (the round's account not yet told), or as it was when none is.
pub fn choose_alternative(s: &mut State, role: &str, mp: &MovePlan, worded: bool) -> MoveChoice {
    let mut skipped = Vec::new();
    let mut tries = Vec::new();
    for (k, text) in mp.tries.iter().enumerate() {
        match parse_try(s, role, mp, text) {
            Ok(t) => tries.push((k, t)),
            Err(e) => skipped.push((k, e)),
        }
    }
    let mut not_fully = Vec::new();
    let board = Board::of(s);
    #[cfg(debug_assertions)]
    let whole = s.clone();
    for how in [Fulfilled::Fully, Fulfilled::InPart] {
        for (k, t) in &tries {
            let mut lines = Vec::new();
            let done = carry_out(s, role, mp, t, how == Fulfilled::InPart, worded, &mut lines);
            if matches!(done, Ok(n) if how == Fulfilled::Fully || n > 0) {
                let carried = Carried { k: *k, how, lines };
                return MoveChoice { skipped, not_fully, selected: Some(t.clone()), carried: Some(carried) };
            }
            board.put_back(s);
            #[cfg(debug_assertions)]
            debug_assert!(*s == whole, "a move changed the board beyond what Board puts back");
            match done {
                // Flag Dash, Using Boosts: "fully resolve ... (if possible) or not at all".
                Err(e) if how == Fulfilled::Fully => not_fully.push((*k, e)),
                _ => {}
            }
        }
    }
    let selected = tries.into_iter().map(|(_, t)| t).find(|t| selectable(s, mp, t.who));
    MoveChoice { skipped, not_fully, carried: None, selected }
}

/// Tells the move's reveal and its alternatives (the one carried out already is, on `s`), or, when
/// none is, carries out what the token does all the same.
fn tell_choice(s: &mut State, ctx: &mut Ctx, role: &str, mp: &MovePlan, choice: MoveChoice) {
    let MoveChoice { skipped, not_fully, carried, selected } = choice;
    let text = |k: usize| &mp.tries[k];
    let carried = carried.map(|c| (c.k, c.how, c.lines));
    say!(s, ctx, "{role} reveals {}.", describe(mp));
    for (k, e) in skipped {
        say!(s, ctx, "  alternative {} \"{}\" skipped: {e}", k + 1, text(k));
    }
    for (k, e) in not_fully {
        say!(s, ctx, "  alternative {} \"{}\" cannot be carried out fully: {e}", k + 1, text(k));
    }
    match carried {
        Some((k, how, lines)) => {
            let how = if how == Fulfilled::InPart { " in part (each card fully or not at all)" } else { "" };
            say!(s, ctx, "  alternative {} \"{}\" carried out{how}:", k + 1, text(k));
            for l in lines {
                say!(s, ctx, "    {l}");
            }
        }
        None => none_carried_out(s, ctx, mp, selected.as_ref()),
    }
}

/// No alternative is carried out: tells so, and does what the token does all the same (a trapped
/// character the reset token selected escapes; the cats chase).
fn none_carried_out(s: &mut State, ctx: &mut Ctx, mp: &MovePlan, selected: Option<&Try>) {
    let selected_who = selected.map(|t| t.who);
    let stays = selected_who.map(|i| format!(": {} stays on {}", s.chars[i].name, s.chars[i].at)).unwrap_or_default();
    say!(s, ctx, "  no alternative could be carried out, so none of it is (fully or not at all){stays}");
    // Character Abilities, Trap: "trapped there until a player plays their reset priority token
    // and selects the trapped character in Phase 2. Then, the trapped character escapes and
    // proceeds with the Move Characters step." Selecting it with #7 is what frees it; carrying
    // out the card comes after, so a card that cannot be carried out does not keep it trapped.
    // (The selected character is the first alternative's that could select it.)
    if let Some(i) = selected_who.filter(|&i| s.chars[i].trapped) {
        let text = escape_trap(s, i, " all the same (the reset token selected it; Character Abilities, Trap)");
        say!(s, ctx, "  {text}");
    }
    // Character Abilities, Crazy Cat Lady: the cats chase with the cat token whether or not the
    // card can be resolved.
    if let Some(t) = selected.filter(|t| cats_of(s, mp, t.who).is_some()) {
        let mut lines = Vec::new();
        chase(s, t.who, &t.chase, &mut lines);
        check_win(s, &mut lines);
        for l in lines {
            say!(s, ctx, "  {l}");
        }
    }
}

/// After `role`'s move with `token` (which selected character `selected`): the token's bonus (a
/// boost with #2 and #4; #7 takes the discarded tokens back) and its discard (a spy token is gone
/// for good).
fn token_after(s: &mut State, ctx: &mut Ctx, role: &str, token: Token, selected: Option<usize>) {
    let seat_i = s.seats.iter().position(|x| x.role == role).expect("seat");
    match token.effect() {
        Effect::Repeat { boost: true, .. } => {
            if let Some(i) = selected {
                let c = &mut s.chars[i];
                if c.boosts < 2 {
                    c.boosts += 1;
                    let text = format!("  {} gains a boost ({} now)", c.name, c.boosts);
                    say(s, ctx, text);
                } else {
                    let text = format!("  {} already has two boosts and gains none", c.name);
                    say(s, ctx, text);
                }
            }
        }
        Effect::Reset => {
            let seat = &mut s.seats[seat_i];
            let back: Vec<String> = seat.discarded.iter().map(|t| t.title()).collect();
            seat.tokens.append(&mut seat.discarded);
            seat.tokens.push(token);
            seat.tokens.sort_by_cached_key(|t| (t.priority(), t.key()));
            let text = if back.is_empty() {
                format!("  {role} takes the reset token back (no other token was discarded)")
            } else {
                format!("  {role} takes back the reset token and {}", back.join(", "))
            };
            say(s, ctx, text);
            return;
        }
        _ => {}
    }
    if token != Token::Spy {
        s.seats[seat_i].discarded.push(token);
    }
}

/// With a cat token, when character `ch` is the Cat Lady runner: `Some(before)`, whether the cats
/// chase before the card (#3) or after it (#5).
fn cats_of(s: &State, mp: &MovePlan, ch: usize) -> Option<bool> {
    match mp.token.effect() {
        Effect::Cats { before } if s.abilities && s.chars[ch].is_runner() && s.chars[ch].ability == Some(Ability::Cats) => Some(before),
        _ => None,
    }
}

/// Ends the game when a team has won (Game End); true if so.
fn check_win(s: &mut State, lines: &mut Vec<String>) -> bool {
    match winner(s) {
        Some((team, why)) => {
            lines.push(why.clone());
            s.outcome = Some(Outcome { winner: Some(team.key().into()), summary: format!("Team {} wins: {why}", team.name()) });
            true
        }
        None => false,
    }
}

/// The card steps of `t` grouped: for each card (the played card with all its repeats, the combo
/// card), the range of step indices from its first to its last resolution. (An array, not a
/// list: the built-in player carries out thousands of alternatives a step.)
fn card_units(t: &Try) -> [Option<(usize, usize)>; 2] {
    let is_card = |x: &Step| matches!(x, Step::Card(_));
    let cards = t.steps.iter().position(is_card).zip(t.steps.iter().rposition(is_card));
    [cards, t.steps.iter().position(|x| matches!(x, Step::Combo(_))).map(|i| (i, i))]
}

/// Why the `nth` of a card's `of` resolutions (a boosted or combined card's repeats; Flag Dash,
/// Using Boosts: each card "fully or not at all") cannot be carried out, said as such: what stops it is what the earlier ones did, which are undone with
/// it, so a reader who finds the board without them is not left puzzled (tester20 T20c-3:
/// "Orange already holds a character flag of Yellow", where Orange held none in the end).
fn repeat_failed(e: String, nth: usize, of: usize) -> String {
    format!("its action {nth} of {of} cannot be carried out once the ones before it are (they are undone with it): {e}")
}

/// Carries out one alternative on `s` (a scratch copy); stops early when the game is won. With
/// `lenient`, a card that cannot be resolved fully is not carried out at all and the rest goes on
/// (each action card fully or not at all); without, it fails the whole alternative.
///
/// Returns how many cards were carried out. Errors: why the alternative cannot be carried out.
/// `worded`: the game's report wording is 2 or later (a failing repeat of a card says which it
/// is, `repeat_failed`).
#[allow(clippy::too_many_arguments)]
pub fn carry_out(s: &mut State, role: &str, mp: &MovePlan, t: &Try, lenient: bool, worded: bool, lines: &mut Vec<String>) -> Result<usize, String> {
    let mut at = begin_move(s, mp, t, lines)?;
    let how = How { role, mp, t, lenient, worded };
    if !carry_on(s, &how, &mut at, t.steps.len(), lines)? {
        end_move(s, mp, t, lines);
    }
    Ok(at.carried)
}

/// Where carrying out an alternative stands between its steps: the next step, whether a tunnel
/// was used, the cards resolved so far in this move (what a Copy in it may copy besides earlier
/// moves: one a card unit, so at most two) and how many were carried out. The built-in player
/// carries a combo move's first card out once and resumes from here for each second card
/// ([`carry_on`]).
#[derive(Clone, Copy)]
pub struct MoveAt {
    next: usize,
    tunnel_used: bool,
    this_move: [Card; 2],
    n_this: usize,
    /// Cards carried out so far.
    pub carried: usize,
}

/// The settled parts of one carrying out of alternative `t` of `role`'s move `mp` (see
/// [`carry_out`]).
pub struct How<'a> {
    /// The seat whose move it is.
    pub role: &'a str,
    /// Its move plan (card, token, combo and copied cards).
    pub mp: &'a MovePlan,
    /// The alternative, its steps filled in.
    pub t: &'a Try,
    /// A card that cannot be resolved fully is left out and the rest goes on (else it fails
    /// the alternative).
    pub lenient: bool,
    /// The game's report wording is 2 or later.
    pub worded: bool,
}

/// What comes before an alternative's steps: a trapped character escapes (only a reset token
/// selects it), and Cats that chase before the move chase. Returns where the steps start.
///
/// Errors: the character is trapped and the token may not select it.
pub fn begin_move(s: &mut State, mp: &MovePlan, t: &Try, lines: &mut Vec<String>) -> Result<MoveAt, String> {
    let ch = t.who;
    if s.chars[ch].trapped {
        // Character Abilities, Trap: only a reset token selects, and so frees, a trapped character.
        if !selectable(s, mp, ch) {
            return Err(tell!("{} is trapped; only a reset token (#7) can select it", s.chars[ch].name));
        }
        lines.push(escape_trap(s, ch, ""));
    }
    if cats_of(s, mp, ch) == Some(true) {
        chase(s, ch, &t.chase, lines);
    }
    Ok(MoveAt { next: 0, tunnel_used: false, this_move: [Card::Copy; 2], n_this: 0, carried: 0 })
}

/// What comes after an alternative's steps when they did not end the move: Cats that chase after
/// it chase, and the game may be won by that.
pub fn end_move(s: &mut State, mp: &MovePlan, t: &Try, lines: &mut Vec<String>) {
    if cats_of(s, mp, t.who) == Some(false) {
        chase(s, t.who, &t.chase, lines);
        check_win(s, lines);
    }
}

/// Carries out the steps of `how.t` from `at` up to step `until` (not included; a card unit is
/// carried out whole, so `until` should not fall inside one), moving `at` on. `Ok(true)` when
/// the move ended there (a win, or the character is trapped).
///
/// Errors: why the alternative cannot be carried out (see [`carry_out`]).
pub fn carry_on(s: &mut State, how: &How, at: &mut MoveAt, until: usize, lines: &mut Vec<String>) -> Result<bool, String> {
    let How { role, mp, t, lenient, worded } = *how;
    let units = card_units(t);
    while at.next < until {
        let (i, this_move_so_far) = (at.next, &at.this_move[..at.n_this]);
        let Some(&(a, b)) = units.iter().flatten().find(|u| u.0 == i) else {
            if step(s, role, mp, t, i, this_move_so_far, &mut at.tunnel_used, lines)? {
                return Ok(true);
            }
            at.next += 1;
            continue;
        };
        let card = if matches!(t.steps[a], Step::Combo(_)) { mp.combo.expect("combo step has a combo card") } else { mp.card };
        // Only a lenient run goes back to before a card that cannot be carried out.
        // Only what carrying out a move changes ([`Board`]), not the whole state.
        let before = lenient.then(|| (Board::of(s), lines.len(), at.tunnel_used));
        let mut unit = || -> Result<bool, String> {
            for k in a..=b {
                match step(s, role, mp, t, k, this_move_so_far, &mut at.tunnel_used, lines) {
                    Ok(true) => return Ok(true),
                    Ok(false) => {}
                    Err(e) if worded && k > a => return Err(repeat_failed(e, k - a + 1, b - a + 1)),
                    Err(e) => return Err(e),
                }
            }
            Ok(false)
        };
        match unit() {
            Ok(stop) => {
                at.carried += 1;
                if stop {
                    return Ok(true);
                }
            }
            Err(e) => {
                let Some((board, n, used)) = before else { return Err(e) };
                board.put_back(s);
                lines.truncate(n);
                at.tunnel_used = used;
                lines.push(tell!("{} is not carried out (fully or not at all): {e}", card.title()));
            }
        }
        at.this_move[at.n_this] = card;
        at.n_this += 1;
        at.next = b + 1;
    }
    Ok(false)
}

/// Carries out step `k` of `t`; `Ok(true)` when the move ends there (a win, or the character is
/// trapped).
#[allow(clippy::too_many_arguments)]
fn step(s: &mut State, role: &str, mp: &MovePlan, t: &Try, k: usize, this_move: &[Card], tunnel_used: &mut bool, lines: &mut Vec<String>) -> Result<bool, String> {
    let ch = t.who;
    match &t.steps[k] {
        Step::Boost(d) => {
            if s.chars[ch].boosts == 0 {
                return Err(tell!("{} has no boost (only boosts from earlier moves can be used)", s.chars[ch].name));
            }
            let l = move_char(s, ch, *d)?;
            s.chars[ch].boosts -= 1;
            lines.push(tell!("boost: {l}"));
        }
        Step::Tunnel { to, bump } => {
            if *tunnel_used {
                return Err(tell!("{} already used a tunnel in this move", s.chars[ch].name));
            }
            use_tunnel(s, ch, *to, *bump, lines)?;
            *tunnel_used = true;
        }
        Step::Card(a) => play(s, role, ch, mp.card, mp.copy, this_move, a, lines)?,
        Step::Combo(a) => play(s, role, ch, mp.combo.expect("combo step has a combo card"), mp.copy, this_move, a, lines)?,
        Step::NoCard => {}
    }
    if check_win(s, lines) {
        return Ok(true);
    }
    if s.chars[ch].trapped {
        // Trapped: the character stays; the rest of its move is not carried out (our reading).
        lines.push(tell!("{} is trapped, so the rest of the move is not carried out", s.chars[ch].name));
        return Ok(true);
    }
    Ok(false)
}

/// Cats (Character Abilities, Crazy Cat Lady): the two characters closest to the runner (ties in
/// layout order) each move one space away from it, by the movement rules: in the direction the
/// plan gives (`cats DIR DIR`) if that increases the distance, else straight away if it can, else
/// the next direction that increases the distance, in n, e, s, w order (our choice for mail); one
/// that cannot move stays.
fn chase(s: &mut State, ch: usize, wanted: &[Dir], lines: &mut Vec<String>) {
    let at = s.chars[ch].at;
    let mut near: Vec<usize> = (0..s.chars.len()).filter(|&j| j != ch).collect();
    near.sort_by_key(|&j| s.chars[j].at.dist(at));
    for (k, j) in near.into_iter().take(2).enumerate() {
        let from = s.chars[j].at;
        let mut done = false;
        let mut dirs = Dir::ALL;
        let (ox, oy) = (from.c - at.c, from.r - at.r);
        dirs.sort_by_key(|d| (Some(d) != wanted.get(k), -(d.delta().0 * ox + d.delta().1 * oy)));
        for d in dirs {
            if from.step(d).dist(at) <= from.dist(at) || s.chars[j].trapped {
                continue;
            }
            // A move that cannot be made changes nothing (see `move_char`).
            if let Ok(l) = move_char(s, j, d) {
                match wanted.get(k) {
                    Some(w) if *w != d => lines.push(tell!(
                        "Cats chase {l} ({} instead of the plan's {}, which does not move it away)",
                        d.key(),
                        w.key()
                    )),
                    _ => lines.push(tell!("Cats chase {l}")),
                }
                done = true;
                break;
            }
        }
        if !done {
            let plan = wanted.get(k).map(|w| tell!(" (not even {} as the plan asks)", w.key())).unwrap_or_default();
            lines.push(tell!("Cats chase {}, who cannot move away{plan}", s.chars[j].name));
        }
    }
}

/// One resolution of `card` (a Copy: of the card it copies, which must be already played this
/// round: in an earlier move, or earlier in this one, `this_move`; Action Cards, Copy).
#[allow(clippy::too_many_arguments)]
fn play(s: &mut State, role: &str, ch: usize, card: Card, copy: Option<Card>, this_move: &[Card], a: &Arg, lines: &mut Vec<String>) -> Result<(), String> {
    if card == Card::Copy {
        let target = copy.expect("copy checked");
        if !s.played.get(role).is_some_and(|p| p.contains(&target)) && !this_move.contains(&target) {
            return Err(tell!("Copy: {} has not been played this round", target.title()));
        }
    }
    apply_card(s, ch, acting(card, copy), a, lines)
}

/// One resolution of `card` by character `ch`.
///
/// Errors: why it cannot be carried out.
pub fn apply_card(s: &mut State, ch: usize, card: Card, a: &Arg, lines: &mut Vec<String>) -> Result<(), String> {
    match card {
        c if c.is_run() => {
            let d = run_dir(s.chars[ch].team, c);
            let l = move_char(s, ch, d)?;
            lines.push(tell!("{}: {l}", c.title()));
            Ok(())
        }
        Card::Flag => flag_action(s, ch, a, lines),
        Card::Push => push(s, ch, a, lines),
        Card::Jump | Card::Trap | Card::Lasso | Card::Dig => ability_card(s, ch, card, a, lines),
        c => Err(tell!("{} is not available in this game", c.title())),
    }
}

/// The special cards (Flag Dash, Character Abilities): only the runner whose ability it is.
fn ability_card(s: &mut State, ch: usize, card: Card, a: &Arg, lines: &mut Vec<String>) -> Result<(), String> {
    let c = &s.chars[ch];
    if !s.abilities || !c.is_runner() || c.ability.and_then(Card::of_ability) != Some(card) {
        return Err(tell!("{} is not {}'s ability (abilities are the runners' only)", card.title(), c.name));
    }
    match (card, a) {
        (Card::Jump, _) => jump_card(s, ch, a, lines),
        (Card::Trap, _) => place_trap(s, ch, a, lines),
        (Card::Lasso, _) => lasso(s, ch, a, lines),
        (Card::Dig, Arg::Remove(q)) => dig_remove(s, ch, *q, lines),
        (Card::Dig, _) => dig_place(s, ch, a, lines),
        _ => Err(tell!("{} cannot be resolved here", card.title())),
    }
}

/// The Jump card: in the direction given, else the first of n, e, s, w that works.
fn jump_card(s: &mut State, ch: usize, a: &Arg, lines: &mut Vec<String>) -> Result<(), String> {
    let dirs: &[Dir] = match a {
        Arg::Dir(d) => std::slice::from_ref(d),
        _ => &Dir::ALL,
    };
    // The reasons, kept only for the account (a trial's are empty, and not listed).
    let mut why = Vec::new();
    let quiet = in_trial();
    for &d in dirs {
        match jump(s, ch, d) {
            Ok(l) => {
                lines.push(l);
                return Ok(());
            }
            Err(e) if !quiet => why.push(e),
            Err(_) => {}
        }
    }
    Err(why.join("; "))
}

/// The Trap card (Tech Nerd): one of the runner's trap tokens on [`trap_space`].
fn place_trap(s: &mut State, ch: usize, a: &Arg, lines: &mut Vec<String>) -> Result<(), String> {
    let name = s.chars[ch].name.clone();
    if s.chars[ch].supply == 0 {
        return Err(tell!("{name} has no trap token left"));
    }
    let Some(q) = trap_space(s, ch, a) else { return Err("no free space up to two spaces away for the trap".into()) };
    s.chars[ch].supply -= 1;
    s.traps.push((q, name.clone()));
    lines.push(tell!("Trap: {name} places a trap on {q}"));
    Ok(())
}

/// Where character `ch`'s trap goes: a free space in play (no character, lying flag or trap) up to
/// two spaces away, not its own: the space given, else two spaces forward, else one.
fn trap_space(s: &State, ch: usize, a: &Arg) -> Option<Sq> {
    let at = s.chars[ch].at;
    let ok = |q: Sq| s.in_play(q) && q.dist(at) <= 2 && q != at && s.char_at(q).is_none() && s.flag_lying_at(q).is_none() && !s.traps.iter().any(|t| t.0 == q);
    match a {
        Arg::Space(q) => Some(*q).filter(|q| ok(*q)),
        _ => {
            let fwd = run_dir(s.chars[ch].team, Card::Forward);
            [at.step(fwd).step(fwd), at.step(fwd)].into_iter().find(|q| ok(*q))
        }
    }
}

/// The Lasso card (Modern Cowboy): pulls the character named, else the first of
/// [`lasso_targets`] that can be pulled, one space toward the runner.
fn lasso(s: &mut State, ch: usize, a: &Arg, lines: &mut Vec<String>) -> Result<(), String> {
    let at = s.chars[ch].at;
    // The name is read for the account only (a trial formats none: nothing copied).
    let name = |s: &State| s.chars[ch].name.clone();
    let mut why = Vec::new();
    for j in lasso_targets(s, ch, a) {
        let q = s.chars[j].at;
        if j == ch {
            why.push(tell!("{} cannot lasso itself", name(s)));
            continue;
        }
        let Some(d) = pull_dir(at, q) else {
            why.push(tell!("{} is not in {}'s row or column with a space between", s.chars[j].name, name(s)));
            continue;
        };
        match move_char(s, j, d) {
            Ok(l) => {
                lines.push(tell!("Lasso: {} pulls {l}", name(s)));
                return Ok(());
            }
            Err(e) => why.push(e),
        }
    }
    Err(if why.is_empty() { "no character to lasso".into() } else { why.join("; ") })
}

/// Whom character `ch`'s lasso tries, in order: the one named, else every other character,
/// opponents first, nearest first (layout order on ties).
fn lasso_targets(s: &State, ch: usize, a: &Arg) -> Vec<usize> {
    match a {
        Arg::Char(j) => vec![*j],
        _ => {
            let at = s.chars[ch].at;
            let mut v: Vec<usize> = (0..s.chars.len()).filter(|&j| j != ch).collect();
            v.sort_by_key(|&j| (s.chars[j].team == s.chars[ch].team, s.chars[j].at.dist(at)));
            v
        }
    }
}

/// The direction a lasso thrown from `at` pulls the character on `q`: toward `at`, when `q` is in
/// its row or column with at least one space between; else `None`.
fn pull_dir(at: Sq, q: Sq) -> Option<Dir> {
    if (q.c != at.c && q.r != at.r) || q.dist(at) < 2 {
        return None;
    }
    Some(if q.c == at.c { if at.r > q.r { Dir::N } else { Dir::S } } else if at.c > q.c { Dir::E } else { Dir::W })
}

/// The Dig card removing the tunnel on `q` (Construction Worker): one next to the runner.
fn dig_remove(s: &mut State, ch: usize, q: Sq, lines: &mut Vec<String>) -> Result<(), String> {
    let name = s.chars[ch].name.clone();
    if q.dist(s.chars[ch].at) != 1 || !s.tunnels.contains(&q) {
        return Err(tell!("no tunnel next to {name} on {q}"));
    }
    s.tunnels.retain(|t| *t != q);
    lines.push(tell!("Dig: {name} removes the tunnel on {q}"));
    Ok(())
}

/// The Dig card placing one of the runner's tunnel tokens on [`dig_space`] (Construction Worker).
fn dig_place(s: &mut State, ch: usize, a: &Arg, lines: &mut Vec<String>) -> Result<(), String> {
    let name = s.chars[ch].name.clone();
    if s.chars[ch].supply == 0 {
        return Err(tell!("{name} has no tunnel token left"));
    }
    let Some(q) = dig_space(s, ch, a) else { return Err("no free space next to the runner for a tunnel".into()) };
    s.chars[ch].supply -= 1;
    s.tunnels.push(q);
    lines.push(tell!("Dig: {name} places a tunnel on {q}"));
    Ok(())
}

/// Where character `ch` digs a tunnel: a free space in play (no character, lying flag or tunnel)
/// next to it: the space given, else the first of n, e, s, w.
fn dig_space(s: &State, ch: usize, a: &Arg) -> Option<Sq> {
    let at = s.chars[ch].at;
    let ok = |q: Sq| s.in_play(q) && q.dist(at) == 1 && s.char_at(q).is_none() && s.flag_lying_at(q).is_none() && !s.tunnels.contains(&q);
    match a {
        Arg::Space(q) => Some(*q).filter(|q| ok(*q)),
        _ => Dir::ALL.into_iter().map(|d| at.step(d)).find(|q| ok(*q)),
    }
}

/// Jump (Athletic Businessman): over an adjacent wall or character to the space beyond, if no
/// second wall or character is right beyond it; the landing space must be free (of characters and
/// lying flags; our reading).
fn jump(s: &mut State, ch: usize, d: Dir) -> Result<String, String> {
    let p = s.chars[ch].at;
    let q = p.step(d);
    // The name is read for the account only (a trial formats none: nothing copied).
    let name = &s.chars[ch].name;
    let wall = s.layout.wall_between(p, q);
    let body = s.char_at(q);
    let land = match (wall, body) {
        (true, None) => q,
        (false, Some(_)) => q.step(d),
        (true, Some(_)) => return Err(tell!("{name} cannot jump {}: a wall and a character", d.key())),
        (false, None) => return Err(tell!("{name} has no wall or character to jump {}", d.key())),
    };
    if wall && !s.in_play(q) {
        return Err(tell!("{name} cannot jump {} off the board", d.key()));
    }
    if body.is_some() && s.layout.wall_between(q, land) {
        return Err(tell!("{name} cannot jump {}: a wall right beyond", d.key()));
    }
    if !s.in_play(land) {
        return Err(tell!("{name} cannot jump {}: the landing space is off the board or out of play", d.key()));
    }
    if s.char_at(land).is_some() || s.flag_lying_at(land).is_some() {
        return Err(tell!("{name} cannot jump {}: {land} is not free", d.key()));
    }
    s.chars[ch].at = land;
    mark_trail(s, ch, p, land);
    let trap = spring_trap(s, ch);
    Ok(tell!("Jump: {} {p} -> {land}{trap}", s.chars[ch].name))
}

/// Can `mp`'s token select character `i`? Not a trapped one, unless it is the reset token
/// (Character Abilities, Trap: "trapped there until a player plays their reset priority token and
/// selects the trapped character").
fn selectable(s: &State, mp: &MovePlan, i: usize) -> bool {
    !s.chars[i].trapped || mp.token == Token::N(7)
}

/// Frees trapped character `i`; its trap returns to the owner's supply (Character Abilities, Trap:
/// "When a trapped character successfully escapes the trap ... return the trap to the owner's
/// supply"). Returns text for the account, with `why` after the square.
fn escape_trap(s: &mut State, i: usize, why: &str) -> String {
    s.chars[i].trapped = false;
    let at = s.chars[i].at;
    if let Some(k) = s.traps.iter().position(|t| t.0 == at) {
        let owner = s.traps.remove(k).1;
        if let Some(o) = s.char_named(&owner) {
            s.chars[o].supply += 1;
        }
    }
    tell!("{} escapes the trap on {at}{why}; the trap returns to its owner", s.chars[i].name)
}

/// A character entering a trap space is trapped, unless it placed the trap, which then returns to
/// its supply (Character Abilities, Trap). Returns text for the account.
fn spring_trap(s: &mut State, i: usize) -> String {
    let at = s.chars[i].at;
    let Some(k) = s.traps.iter().position(|t| t.0 == at) else { return String::new() };
    let owner = s.traps[k].1.clone();
    if owner == s.chars[i].name {
        s.traps.remove(k);
        if let Some(o) = s.char_named(&owner) {
            s.chars[o].supply += 1;
        }
        " and picks up its trap".to_string()
    } else {
        s.chars[i].trapped = true;
        tell!(", into {owner}'s trap: trapped")
    }
}

/// Can a character or flag enter `p`'s neighbour in direction `d` (on the board and in play, no
/// wall, no character)? The common answer, yes, comes from one look-up in the layout's walls by
/// space ([`Layout::opens`](super::layout::Layout::opens)) and a compare with each character's
/// space, without a branch for each (the built-in player asks this for every step it tries);
/// why not from [`step_closed`].
fn open_step(s: &State, p: Sq, d: Dir) -> Result<(), String> {
    let q = p.step(d);
    let free = s.chars.iter().fold(true, |free, c| free & (c.at != q));
    if s.layout.opens(p, d) & free && (s.out_columns.is_empty() || !s.out_columns.contains(&q.c)) {
        return Ok(());
    }
    step_closed(s, p, d)
}

/// [`open_step`] told in full: which of the board's edge, a column out of play, a wall or a
/// character stops the step, in that order (`Ok` when none does). Kept out of line: the quick
/// test answers most steps.
#[cold]
#[inline(never)]
fn step_closed(s: &State, p: Sq, d: Dir) -> Result<(), String> {
    let q = p.step(d);
    if !s.in_play(q) {
        let l = &s.layout;
        let on_grid = q.c >= 0 && q.r >= 0 && q.c < l.columns && q.r < l.rows;
        return Err(if on_grid { tell!("{q} is out of play") } else { tell!("{p} is on the edge of the board") });
    }
    if s.layout.blocks(p, d) {
        return Err(tell!("a wall lies between {p} and {q}"));
    }
    if let Some(j) = s.char_at(q) {
        return Err(tell!("{} stands on {q}", s.chars[j].name));
    }
    Ok(())
}

/// Moves character `i` one space in direction `d` (Flag Dash, Movement Rules): not through walls,
/// not onto characters; a team flag lying in the way is passed over to the space beyond, which
/// counts as one space.
///
/// Errors: why the space cannot be entered; `s` is then unchanged.
pub fn move_char(s: &mut State, i: usize, d: Dir) -> Result<String, String> {
    let p = s.chars[i].at;
    let q = p.step(d);
    let name = |s: &State| s.chars[i].name.clone();
    if s.chars[i].trapped {
        return Err(tell!("{} is trapped on {p}", name(s)));
    }
    open_step(s, p, d).map_err(|e| tell!("{} cannot move {} from {p}: {e}", name(s), d.key()))?;
    let (land, over) = match s.flag_lying_at(q) {
        Some(t) => {
            let q2 = q.step(d);
            open_step(s, q, d).map_err(|e| tell!("{} cannot pass over the {} flag on {q}: {e}", name(s), t.name()))?;
            if let Some(t2) = s.flag_lying_at(q2) {
                return Err(tell!("{} cannot pass over the {} flag on {q}: the {} flag lies on {q2}", name(s), t.name(), t2.name()));
            }
            (q2, tell!(" over the {} flag", t.name()))
        }
        None => (q, String::new()),
    };
    s.chars[i].at = land;
    mark_trail(s, i, p, land);
    let carry = if in_trial() { String::new() } else { s.carried_by(i).map(|t| format!(" carrying the {} flag", t.name())).unwrap_or_default() };
    let trap = spring_trap(s, i);
    Ok(tell!("{} {p} -> {land}{over}{carry}{trap}", name(s)))
}

/// Keeps character `i`'s step from `from` to `to` in the round's trail (nothing in a [`Trial`],
/// which has no account).
fn mark_trail(s: &mut State, i: usize, from: Sq, to: Sq) {
    if TRIAL.get() != TRIAL_LEVEL {
        let name = s.chars[i].name.clone();
        s.trail.push((name, from, to));
    }
}

/// Uses the tunnel under `ch` to reach the tunnel at `to` (Flag Dash, Using Tunnels): not while
/// holding a team flag; first every flag or character on another tunnel is bumped one space
/// (the preferred direction first, then n, e, s, w; our reading of the rule and Example C); the
/// move does not count as a space. A piece that cannot be bumped (trapped, or with no free space
/// next to it) stays, and its tunnel is simply not a destination; the other tunnels stay usable.
///
/// Errors: why the tunnel cannot be used.
pub fn use_tunnel(s: &mut State, ch: usize, to: Sq, bump: Option<Dir>, lines: &mut Vec<String>) -> Result<(), String> {
    let at = s.chars[ch].at;
    let name = s.chars[ch].name.clone();
    if !s.tunnels.contains(&at) {
        return Err(tell!("{name} is not on a tunnel ({at})"));
    }
    if let Some(t) = s.carried_by(ch) {
        return Err(tell!("{name} holds the {} flag and may not use tunnels", t.name()));
    }
    if !s.tunnels.contains(&to) || to == at {
        return Err(tell!("{to} is not another tunnel"));
    }
    for t in s.tunnels.clone() {
        if t == at || (s.char_at(t).is_none() && s.flag_lying_at(t).is_none()) {
            continue;
        }
        // Character Abilities, Trap: a trapped character stays where it is until a reset token
        // selects it, so it cannot be bumped: its tunnel is not a destination.
        if let Some(j) = s.char_at(t).filter(|&j| s.chars[j].trapped) {
            if t == to {
                return Err(tell!("{} on the tunnel at {t} is trapped and cannot be bumped, so {t} is not a destination", s.chars[j].name));
            }
            continue;
        }
        let mut dirs: Vec<Dir> = bump.into_iter().collect();
        dirs.extend(Dir::ALL);
        let mut done = false;
        for d in dirs {
            let q = t.step(d);
            if open_step(s, t, d).is_ok() && s.flag_lying_at(q).is_none() {
                if let Some(j) = s.char_at(t) {
                    s.chars[j].at = q;
                    let trap = spring_trap(s, j);
                    lines.push(tell!("{} is bumped off the tunnel at {t} to {q}{trap}", s.chars[j].name));
                } else if let Some(f) = s.flag_lying_at(t) {
                    *s.flags.get_mut(f) = FlagAt::Space(q);
                    lines.push(tell!("the {} flag is bumped off the tunnel at {t} to {q}", f.name()));
                }
                done = true;
                break;
            }
        }
        if !done && t == to {
            return Err(tell!("the piece on the tunnel at {t} cannot be bumped (no free space next to it), so {t} is not a destination"));
        }
    }
    if s.char_at(to).is_some() || s.flag_lying_at(to).is_some() {
        return Err(tell!("the tunnel at {to} is still blocked after bumping"));
    }
    s.chars[ch].at = to;
    mark_trail(s, ch, at, to);
    let trap = spring_trap(s, ch);
    lines.push(tell!("{name} takes the tunnel {at} -> {to}{trap}"));
    Ok(())
}

fn take(s: &mut State, ch: usize, lines: &mut Vec<String>) -> Result<(), String> {
    let c = &s.chars[ch];
    let opp = c.team.other();
    let q = s.flag_space(opp);
    if q.dist(c.at) != 1 {
        return Err(tell!("the {} flag ({q}) is not next to {}", opp.name(), c.name));
    }
    let from = match s.flags.get(opp) {
        FlagAt::Carried(n) => tell!(" from {n}"),
        FlagAt::Space(q) => tell!(" on {q}"),
    };
    lines.push(tell!("Flag: {} takes the {} flag{from}", c.name, opp.name()));
    *s.flags.get_mut(opp) = FlagAt::Carried(c.name.clone());
    Ok(())
}

fn collect(s: &mut State, ch: usize, j: usize, lines: &mut Vec<String>) -> Result<(), String> {
    let (c, o) = (&s.chars[ch], &s.chars[j]);
    if o.team == c.team || c.at.dist(o.at) != 1 || s.layout.wall_between(c.at, o.at) {
        return Err(tell!("{} is not an opponent next to {} without a wall between", o.name, c.name));
    }
    if c.holds.contains(&o.name) {
        return Err(tell!("{} already holds a character flag of {}", c.name, o.name));
    }
    if o.flags_left == 0 {
        return Err(tell!("both of {}'s character flags are already taken", o.name));
    }
    let on = o.name.clone();
    s.chars[j].flags_left -= 1;
    s.chars[ch].holds.push(on.clone());
    lines.push(tell!("Flag: {} collects a character flag of {on}", s.chars[ch].name));
    Ok(())
}

/// The Flag card (Flag Dash, Action Cards, Flag; 2-Player Rules for passing).
fn flag_action(s: &mut State, ch: usize, a: &Arg, lines: &mut Vec<String>) -> Result<(), String> {
    if !s.chars[ch].is_runner() {
        return Err(tell!("{} is a defender; the Flag card's actions are a runner's", s.chars[ch].name));
    }
    match a {
        Arg::Take => take(s, ch, lines),
        Arg::Collect(j) => collect(s, ch, *j, lines),
        Arg::Give(j) => give_flag(s, ch, *j, lines),
        Arg::Drop(q) => drop_flag(s, ch, *q, lines),
        Arg::Pass(j, which) => {
            let give = flags_to_pass(s, ch, *j, which)?;
            s.chars[ch].holds.retain(|h| !give.contains(h));
            s.chars[*j].holds.extend(give.iter().cloned());
            lines.push(tell!("Flag: {} passes the character flags of {} to {}", s.chars[ch].name, give.join(", "), s.chars[*j].name));
            Ok(())
        }
        Arg::Auto => auto_flag(s, ch, lines),
        _ => Err("these arguments do not fit a Flag card".into()),
    }
}

/// Flag: runner `ch` gives the team flag it carries to the teammate `j` next to it.
fn give_flag(s: &mut State, ch: usize, j: usize, lines: &mut Vec<String>) -> Result<(), String> {
    let (name, team, at) = (&s.chars[ch].name, s.chars[ch].team, s.chars[ch].at);
    let o = &s.chars[j];
    if s.carried_by(ch) != Some(team.other()) {
        return Err(tell!("{name} does not carry the {} flag", team.other().name()));
    }
    if j == ch {
        return Err(tell!("{name} cannot give the flag to itself"));
    }
    if o.team != team || o.at.dist(at) != 1 {
        return Err(tell!("{} is not a teammate next to {name}", o.name));
    }
    lines.push(tell!("Flag: {name} gives the {} flag to {}", team.other().name(), o.name));
    *s.flags.get_mut(team.other()) = FlagAt::Carried(o.name.clone());
    Ok(())
}

/// Flag: runner `ch` drops the team flag it carries on the free space `q` next to it.
fn drop_flag(s: &mut State, ch: usize, q: Sq, lines: &mut Vec<String>) -> Result<(), String> {
    let (name, team, at) = (&s.chars[ch].name, s.chars[ch].team, s.chars[ch].at);
    if s.carried_by(ch) != Some(team.other()) {
        return Err(tell!("{name} does not carry the {} flag", team.other().name()));
    }
    if q.dist(at) != 1 || !s.in_play(q) || s.char_at(q).is_some() || s.flag_lying_at(q).is_some() {
        return Err(tell!("{q} is not a free space next to {name}"));
    }
    lines.push(tell!("Flag: {name} drops the {} flag on {q}", team.other().name()));
    *s.flags.get_mut(team.other()) = FlagAt::Space(q);
    Ok(())
}

/// The character flags runner `ch` passes to its other runner `j` next to it (2-Player Rules,
/// Basic: "pass any number of character flags"): those of the opponents `which` (each held by the
/// passer and not yet by the receiver, who may hold one of each), else every one `j` lacks.
///
/// Errors: why nothing can be passed.
fn flags_to_pass(s: &State, ch: usize, j: usize, which: &[usize]) -> Result<Vec<String>, String> {
    let (name, team, at) = (&s.chars[ch].name, s.chars[ch].team, s.chars[ch].at);
    let o = &s.chars[j];
    if j == ch {
        return Err(tell!("{name} cannot pass character flags to itself"));
    }
    if s.mode != Mode::TwoBasic || o.team != team || !o.is_runner() || o.at.dist(at) != 1 {
        return Err(tell!("{} is not your other runner next to {name}", o.name));
    }
    let lacks = |h: &String| !o.holds.contains(h);
    let give: Vec<String> = if which.is_empty() {
        s.chars[ch].holds.iter().filter(|h| lacks(h)).cloned().collect()
    } else {
        let mut v = Vec::new();
        for &k in which {
            let n = &s.chars[k].name;
            if !s.chars[ch].holds.contains(n) {
                return Err(tell!("{name} holds no character flag of {n}"));
            }
            if !lacks(n) {
                return Err(tell!("{} already holds a character flag of {n}", o.name));
            }
            v.push(n.clone());
        }
        v
    };
    if give.is_empty() {
        return Err(tell!("{name} has no character flag {} lacks", o.name));
    }
    Ok(give)
}

/// Flag with no argument written: take the opposing flag, else collect from the first adjacent
/// opponent in layout order.
fn auto_flag(s: &mut State, ch: usize, lines: &mut Vec<String>) -> Result<(), String> {
    let (team, at) = (s.chars[ch].team, s.chars[ch].at);
    // The reasons, kept only for the account (a trial's are empty, and not listed).
    let mut why = Vec::new();
    let quiet = in_trial();
    match take(s, ch, lines) {
        Ok(()) => return Ok(()),
        Err(e) if !quiet => why.push(e),
        Err(_) => {}
    }
    for j in 0..s.chars.len() {
        if s.chars[j].team != team && s.chars[j].at.dist(at) == 1 {
            match collect(s, ch, j, lines) {
                Ok(()) => return Ok(()),
                Err(e) if !quiet => why.push(e),
                Err(_) => {}
            }
        }
    }
    Err(tell!("no flag action: {}", why.join("; ")))
}

/// The Push card (Flag Dash, Action Cards, Push): an adjacent character not across a wall moves
/// one or two spaces by the movement rules; a pushed opponent carrying the pusher's team flag drops
/// it on the space it was pushed from.
fn push(s: &mut State, ch: usize, a: &Arg, lines: &mut Vec<String>) -> Result<(), String> {
    let at = s.chars[ch].at;
    let team = s.chars[ch].team;
    // The reasons, kept only for the account (a trial's are empty, and not listed).
    let (mut why, mut tried) = (Vec::new(), false);
    let quiet = in_trial();
    match a {
        Arg::Push(j, path) => match push_undone(s, ch, *j, path, lines) {
            Ok(()) => return Ok(()),
            Err(e) => (why, tried) = (vec![e], true),
        },
        // Each opponent next to the pusher, in layout order, pushed straight away (a push that
        // fails is put back, so the next is found on the board as it was).
        Arg::Auto => {
            for j in 0..s.chars.len() {
                let Some(d) = Some(s.chars[j].at).filter(|q| s.chars[j].team != team && q.dist(at) == 1).and_then(|q| at.dir_to(q)) else { continue };
                tried = true;
                match push_undone(s, ch, j, &[d], lines) {
                    Ok(()) => return Ok(()),
                    Err(e) if !quiet => why.push(e),
                    Err(_) => {}
                }
            }
        }
        _ => return Err("a flag argument on a Push card".into()),
    }
    if !tried {
        return Err(tell!("no opponent next to {}", s.chars[ch].name));
    }
    Err(why.join("; "))
}

/// [`push_one`], the board put back as it was when the push fails: what a push may change (the
/// pushed character's space and trap, its trap owner's supply, the traps, the team flags and the
/// trail; never character flags, tunnels or the outcome).
fn push_undone(s: &mut State, ch: usize, j: usize, path: &[Dir], lines: &mut Vec<String>) -> Result<(), String> {
    let places: Vec<(Sq, bool, u8)> = s.chars.iter().map(|c| (c.at, c.trapped, c.supply)).collect();
    let (flags, traps, trail) = (s.flags.clone(), (!s.traps.is_empty()).then(|| s.traps.clone()), s.trail.len());
    #[cfg(debug_assertions)]
    let whole = s.clone();
    let n = lines.len();
    push_one(s, ch, j, path, lines).inspect_err(|_| {
        for (c, (at, trapped, supply)) in s.chars.iter_mut().zip(places) {
            (c.at, c.trapped, c.supply) = (at, trapped, supply);
        }
        s.flags = flags;
        // With no trap on the board, a push places none.
        if let Some(t) = traps {
            s.traps = t;
        }
        s.trail.truncate(trail);
        #[cfg(debug_assertions)]
        debug_assert!(*s == whole, "a push changed the board beyond what Board puts back");
        lines.truncate(n);
    })
}

fn push_one(s: &mut State, ch: usize, j: usize, path: &[Dir], lines: &mut Vec<String>) -> Result<(), String> {
    let (c, o) = (&s.chars[ch], &s.chars[j]);
    if j == ch {
        return Err(tell!("{} cannot push itself", c.name));
    }
    if c.at.dist(o.at) != 1 || s.layout.wall_between(c.at, o.at) {
        return Err(tell!("{} is not next to {} without a wall between", o.name, c.name));
    }
    let team = c.team;
    let from = o.at;
    let mut dropped = None;
    if o.team != team && s.carried_by(j) == Some(team) {
        *s.flags.get_mut(team) = FlagAt::Space(from);
        dropped = Some(tell!("{} drops the {} flag on {from}", o.name, team.name()));
    }
    let mut moved = Vec::new();
    let pusher = s.chars[ch].at;
    for d in path {
        let before = s.chars[j].at.dist(pusher);
        moved.push(move_char(s, j, *d)?);
        // Action Cards, Push: "move the other character up to two spaces away": every space of the
        // push takes it farther from the pusher (our reading of "away"), so it never ends closer to
        // it or back next to it.
        if s.chars[j].at.dist(pusher) <= before {
            return Err(tell!("{} would not be pushed away from {}: {} does not take it farther (Push: \"away\")", s.chars[j].name, s.chars[ch].name, d.key()));
        }
        if s.chars[j].trapped {
            break;
        }
    }
    lines.push(tell!("Push: {} pushes {}", s.chars[ch].name, moved.join(", then ")));
    lines.extend(dropped);
    Ok(())
}

/// The team that has won, with why (Flag Dash, Game End): a team flag inside the opposing team's
/// territory, or a runner holding a character flag of every opposing character.
pub fn winner(s: &State) -> Option<(Team, String)> {
    for x in Team::ALL {
        let y = x.other();
        let q = s.flag_space(x);
        if s.layout.territory.get(y).contains(q) {
            return Some((y, kept!("the {} flag reached {q}, in Team {}'s territory", x.name(), y.name())));
        }
    }
    // A flag of every opponent is as many flags as opponents (their names differ), so a runner
    // holding fewer has no name to compare: the common case, checked after every step of every
    // move the built-in player tries. One pass over the characters: the most flags a runner of
    // each team holds, and each team's size (a team's opponents are the other team).
    // First the cheaper bound: the most any runner holds against the smaller team's size (each
    // team's opponents are at least that many), with no per-team bookkeeping (and no branch on
    // whether a character is a runner: a defender's flags count as none).
    let (mut top, mut whites) = (0, 0);
    for c in &s.chars {
        top = top.max(c.holds.len() * usize::from(c.is_runner()));
        whites += usize::from(c.team == Team::White);
    }
    if top < whites.min(s.chars.len() - whites) {
        return None;
    }
    let (mut most, mut sizes) = (Teams { white: 0, red: 0 }, Teams { white: 0, red: 0 });
    for c in &s.chars {
        if c.is_runner() {
            let m = most.get_mut(c.team);
            *m = (*m).max(c.holds.len());
        }
        *sizes.get_mut(c.team) += 1;
    }
    if most.white < sizes.red && most.red < sizes.white {
        return None;
    }
    let opponents = |t: Team| s.chars.iter().filter(move |o| o.team != t);
    let counts = Teams { white: sizes.red, red: sizes.white };
    for c in &s.chars {
        if c.is_runner() && c.holds.len() >= *counts.get(c.team) && opponents(c.team).all(|o| c.holds.contains(&o.name)) {
            return Some((c.team, kept!("{} holds a character flag of every opposing character", c.name)));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::{DEFAULT_LAYOUT, FlagDash};
    use super::*;
    use crate::game::Game;

    /// The default board with every character parked on a back-row corner (Green a1, Orange b1,
    /// Black c1, Purple g10, Blue h10, Yellow i10), options `kv`.
    fn cleared(kv: &[(&str, &str)]) -> State {
        let opts: BTreeMap<String, String> = kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let mut s = FlagDash.setup(DEFAULT_LAYOUT, &opts).unwrap();
        for (c, p) in s.chars.iter_mut().zip(["a1", "b1", "c1", "g10", "h10", "i10"]) {
            c.at = sq(p);
        }
        s
    }

    fn sq(x: &str) -> Sq {
        x.parse().unwrap()
    }

    fn put(s: &mut State, name: &str, at: &str) -> usize {
        let i = s.char_named(name).unwrap();
        s.chars[i].at = sq(at);
        i
    }

    fn plan(card: Card, token: Token, combo: Option<Card>, tries: &[&str]) -> MovePlan {
        MovePlan { card, token, combo, copy: None, tries: tries.iter().map(|t| t.to_string()).collect(), spy_on: None }
    }

    /// Flag Dash, Game End: the win check's shortcut (no runner holds as many flags as its team
    /// has opponents) agrees with the rule read plainly (a runner holding a flag of every
    /// opposing character) over many boards: random character flags held by anyone (opponents'
    /// names, own team's, repeats), characters taken off the board (a team may have none).
    #[test]
    fn win_check_agrees_with_the_rule_over_many_boards() {
        let plainly = |s: &State| {
            s.chars.iter().find(|c| c.is_runner() && s.chars.iter().filter(|o| o.team != c.team).all(|o| c.holds.contains(&o.name))).map(|c| c.team)
        };
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut wins = 0;
        for k in 0..3000 {
            let mut s = cleared(&[("players", ["2", "3", "4"][k % 3])]);
            let names: Vec<String> = s.chars.iter().map(|c| c.name.clone()).collect();
            for c in &mut s.chars {
                c.holds = (0..rnd(5)).map(|_| names[rnd(names.len() as u64) as usize].clone()).collect();
            }
            match rnd(6) {
                0 => {
                    let team = s.chars[rnd(names.len() as u64) as usize].team;
                    s.chars.retain(|c| c.team != team);
                }
                1 => {
                    s.chars.remove(rnd(names.len() as u64) as usize);
                }
                _ => {}
            }
            let got = winner(&s).map(|w| w.0);
            assert_eq!(got, plainly(&s), "board {k}: {:?}", s.chars.iter().map(|c| (&c.name, &c.holds)).collect::<Vec<_>>());
            wins += got.is_some() as u32;
        }
        assert!(wins > 20, "the boards include wins ({wins})");
    }

    /// Flag Dash, Action Cards (run cards): each card's direction by look-up is the rule's, for
    /// both teams (White's forward is north, toward Red's back row; Red's is south).
    #[test]
    fn run_directions_by_look_up_are_the_rule() {
        let cards = [Card::Forward, Card::Back, Card::Left, Card::Right, Card::Flag, Card::Push, Card::Copy, Card::Jump, Card::Trap, Card::Lasso, Card::Dig];
        for card in cards {
            let white = match card {
                Card::Forward => Dir::N,
                Card::Back => Dir::S,
                Card::Left => Dir::W,
                _ => Dir::E,
            };
            assert_eq!(run_dir(Team::White, card), white, "{card:?}");
            assert_eq!(run_dir(Team::Red, card), white.back(), "{card:?}");
        }
    }

    /// Flag Dash, Movement Rules: the step test's quick yes ([`open_step`]) agrees with the test
    /// told in full ([`step_closed`]: the board's edge, a column out of play, a wall, a character)
    /// on every shipped board, with and without the 2-player game's columns out of play, the
    /// characters scattered at random (some off the board), from every space and one beyond the
    /// edge, in every direction.
    #[test]
    fn quick_step_test_agrees_with_the_told_one() {
        let boards = [DEFAULT_LAYOUT, include_str!("../../../scenarios/flag-dash-cones.toml"), include_str!("../../../scenarios/flag-dash-alternate.toml")];
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = |n: i32| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as i32
        };
        let (mut open, mut closed) = (0, 0);
        for board in boards {
            for players in ["2", "4"] {
                let opts = BTreeMap::from([("players".to_string(), players.to_string())]);
                let mut s = FlagDash.setup(board, &opts).unwrap();
                for _ in 0..20 {
                    for c in &mut s.chars {
                        c.at = Sq { c: rnd(s.layout.columns + 2) - 1, r: rnd(s.layout.rows + 2) - 1 };
                    }
                    for r in -1..=s.layout.rows {
                        for c in -1..=s.layout.columns {
                            for d in Dir::ALL {
                                let p = Sq { c, r };
                                let quick = open_step(&s, p, d);
                                assert_eq!(quick, step_closed(&s, p, d), "{p:?} {d:?}");
                                if quick.is_ok() { open += 1 } else { closed += 1 }
                            }
                        }
                    }
                }
            }
        }
        assert!(open > 1000 && closed > 1000, "both answers are tested ({open} open, {closed} closed)");
    }

    /// Flag Dash, Move Characters: the first alternative carried out fully wins; the ones that do
    /// not read, and those tried before it that cannot be carried out fully, are kept with why;
    /// the state is changed on the copy only.
    #[test]
    fn choose_takes_the_first_alternative_carried_out_fully() {
        let mut s = cleared(&[]);
        let green = put(&mut s, "Green", "d4");
        let mp = plan(Card::Forward, Token::N(1), None, &["runner: boost n", "nobody", "runner", "defender"]);
        let mut after = s.clone();
        let c = choose_alternative(&mut after, "white-1", &mp, false);
        assert_eq!(c.skipped.len(), 1);
        assert_eq!(c.skipped[0].0, 1);
        assert!(c.skipped[0].1.contains("\"nobody\" is not runner"), "{:?}", c.skipped);
        assert_eq!(c.not_fully.len(), 1);
        assert_eq!(c.not_fully[0].0, 0);
        assert!(c.not_fully[0].1.contains("has no boost"), "{:?}", c.not_fully);
        let carried = c.carried.expect("carried out");
        assert_eq!((carried.k, carried.how), (2, Fulfilled::Fully));
        assert_eq!(after.chars[green].at, sq("d5"));
        assert_eq!(carried.lines, ["Run forward: Green d4 -> d5"]);
        assert_eq!(c.selected.map(|t| t.who), Some(green));
        // Only the move carried out changed the board: the boost tried first was put back.
        s.chars[green].at = sq("d5");
        s.trail.push(("Green".into(), sq("d4"), sq("d5")));
        assert_eq!(after, s, "only the alternative carried out changes the state");
    }

    /// Using Boosts: "fully ... or not at all" per action card: with no alternative carried out
    /// fully, the first with at least one card carried out is, in part.
    #[test]
    fn choose_falls_back_to_an_alternative_in_part() {
        let mut s = cleared(&[]);
        let green = put(&mut s, "Green", "d4");
        let mp = plan(Card::Forward, Token::N(3), Some(Card::Flag), &["runner"]);
        let c = choose_alternative(&mut s, "white-1", &mp, false);
        assert_eq!(c.not_fully.len(), 1, "no flag action next to d5");
        let carried = c.carried.expect("carried out in part");
        assert_eq!((carried.k, carried.how), (0, Fulfilled::InPart));
        assert_eq!(s.chars[green].at, sq("d5"));
        assert!(carried.lines[1].starts_with("Flag is not carried out (fully or not at all)"), "{:?}", carried.lines);
    }

    /// A repeat of a card that fails because of what the ones before it did says which repeat it
    /// is, the earlier ones being undone with it (report wording 2, tester20 T20c-3); earlier
    /// wordings keep the bare reason.
    #[test]
    fn a_failing_repeat_says_which_it_is() {
        let mut s = cleared(&[]);
        put(&mut s, "Green", "d4");
        let purple = put(&mut s, "Purple", "d5");
        let mp = plan(Card::Flag, Token::N(5), None, &["runner: card collect Purple"]);
        for (worded, want) in [
            (true, "Flag is not carried out (fully or not at all): its action 2 of 3 cannot be carried out once the ones before it are (they are undone with it): Green already holds a character flag of Purple"),
            (false, "Flag is not carried out (fully or not at all): Green already holds a character flag of Purple"),
        ] {
            let mut after = s.clone();
            let c = choose_alternative(&mut after, "white-1", &mp, worded);
            let reasons: Vec<&str> = c.not_fully.iter().map(|x| x.1.as_str()).chain(c.carried.iter().flat_map(|x| x.lines.iter().map(String::as_str))).collect();
            assert!(reasons.iter().any(|r| r.contains(want.split(": ").skip(1).collect::<Vec<_>>().join(": ").as_str())), "{worded}: {reasons:?}");
            assert!(worded || reasons.iter().all(|r| !r.contains("its action")), "{reasons:?}");
            assert_eq!(after.chars[purple].flags_left, s.chars[purple].flags_left, "undone");
        }
    }

    /// No card carried out at all: nothing is carried out, and the token still selects the first
    /// alternative's character (for its boost, a reset's escape or the cats).
    #[test]
    fn choose_nothing_keeps_the_selected_character() {
        let mut s = cleared(&[]);
        let green = put(&mut s, "Green", "d4");
        let mp = plan(Card::Flag, Token::N(2), None, &["runner", "defender"]);
        let before = s.clone();
        let c = choose_alternative(&mut s, "white-1", &mp, false);
        assert!(c.carried.is_none());
        assert_eq!(s, before, "nothing carried out, nothing changed");
        assert_eq!(c.not_fully.iter().map(|x| x.0).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(c.selected.map(|t| t.who), Some(green));
        // A trapped character is selected only by a reset token (Character Abilities, Trap).
        s.chars[green].trapped = true;
        let c = choose_alternative(&mut s, "white-1", &mp, false);
        assert_eq!(c.selected.map(|t| t.who), s.char_named("Black"));
    }

    /// Trap: the space given if free and up to two spaces away, else two spaces forward, else one.
    #[test]
    fn trap_space_given_or_forward() {
        let mut s = cleared(&[("abilities", "true")]);
        let green = put(&mut s, "Green", "d4");
        assert_eq!(trap_space(&s, green, &Arg::Auto), Some(sq("d6")));
        assert_eq!(trap_space(&s, green, &Arg::Space(sq("c5"))), Some(sq("c5")));
        assert_eq!(trap_space(&s, green, &Arg::Space(sq("d7"))), None, "three spaces away");
        assert_eq!(trap_space(&s, green, &Arg::Space(sq("d4"))), None, "its own space");
        put(&mut s, "Purple", "d6");
        assert_eq!(trap_space(&s, green, &Arg::Auto), Some(sq("d5")));
        assert_eq!(trap_space(&s, green, &Arg::Space(sq("d6"))), None, "a character stands there");
        let purple = put(&mut s, "Purple", "d7");
        assert_eq!(trap_space(&s, purple, &Arg::Auto), Some(sq("d5")), "Red's forward is south");
    }

    /// Dig: a free space next to the runner, the one given or the first of n, e, s, w.
    #[test]
    fn dig_space_given_or_first_free() {
        let mut s = cleared(&[("abilities", "true")]);
        let yellow = put(&mut s, "Yellow", "d4");
        assert_eq!(dig_space(&s, yellow, &Arg::Auto), Some(sq("d5")));
        put(&mut s, "Green", "d5");
        assert_eq!(dig_space(&s, yellow, &Arg::Auto), Some(sq("e4")));
        assert_eq!(dig_space(&s, yellow, &Arg::Space(sq("c4"))), Some(sq("c4")));
        assert_eq!(dig_space(&s, yellow, &Arg::Space(sq("f4"))), None, "two spaces away");
        let yellow = put(&mut s, "Yellow", "b3");
        assert_eq!(dig_space(&s, yellow, &Arg::Space(sq("c3"))), None, "a tunnel is there");
    }

    /// Lasso: toward the runner along its row or column, with a space between; opponents first,
    /// nearest first, unless one is named.
    #[test]
    fn lasso_pulls_toward_the_runner() {
        let at = sq("d4");
        assert_eq!(pull_dir(at, sq("d7")), Some(Dir::S));
        assert_eq!(pull_dir(at, sq("d2")), Some(Dir::N));
        assert_eq!(pull_dir(at, sq("a4")), Some(Dir::E));
        assert_eq!(pull_dir(at, sq("g4")), Some(Dir::W));
        assert_eq!(pull_dir(at, sq("d5")), None, "no space between");
        assert_eq!(pull_dir(at, sq("e6")), None, "not in its row or column");
        let mut s = cleared(&[("abilities", "true")]);
        let purple = put(&mut s, "Purple", "d4");
        let black = put(&mut s, "Black", "d6");
        let green = put(&mut s, "Green", "d1");
        let targets = lasso_targets(&s, purple, &Arg::Auto);
        assert_eq!(targets[..2], [black, green], "the nearest opponents first");
        assert!(targets[3..].iter().all(|&j| s.chars[j].team == Team::Red), "teammates last: {targets:?}");
        assert_eq!(lasso_targets(&s, purple, &Arg::Char(green)), [green]);
    }

    /// 2-Player Rules, Basic: "pass any number of character flags" to the other runner next to
    /// the passer: the named ones, else every one the receiver lacks.
    #[test]
    fn flags_to_pass_named_or_all_the_receiver_lacks() {
        let mut s = cleared(&[("players", "2")]);
        let green = put(&mut s, "Green", "d4");
        let orange = put(&mut s, "Orange", "d5");
        let (purple, yellow) = (s.char_named("Purple").unwrap(), s.char_named("Yellow").unwrap());
        s.chars[green].holds = vec!["Purple".into(), "Blue".into()];
        s.chars[orange].holds = vec!["Purple".into()];
        assert_eq!(flags_to_pass(&s, green, orange, &[]), Ok(vec!["Blue".to_string()]));
        let e = flags_to_pass(&s, green, orange, &[purple]).unwrap_err();
        assert_eq!(e, "Orange already holds a character flag of Purple");
        let e = flags_to_pass(&s, green, orange, &[yellow]).unwrap_err();
        assert_eq!(e, "Green holds no character flag of Yellow");
        assert_eq!(flags_to_pass(&s, green, green, &[]).unwrap_err(), "Green cannot pass character flags to itself");
        s.chars[orange].holds = vec!["Purple".into(), "Blue".into()];
        assert_eq!(flags_to_pass(&s, green, orange, &[]).unwrap_err(), "Green has no character flag Orange lacks");
        put(&mut s, "Orange", "d6");
        assert_eq!(flags_to_pass(&s, green, orange, &[]).unwrap_err(), "Orange is not your other runner next to Green");
        let mut four = s.clone();
        four.mode = Mode::Four;
        put(&mut four, "Orange", "d5");
        assert!(flags_to_pass(&four, green, orange, &[]).is_err(), "passing is the 2-player basic game's");
    }
}
