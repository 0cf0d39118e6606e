//! Reading and checking `[orders]`: the round's plan (Phase 1) and the answer to a same-team tie.
//!
//! A plan holds `move1` and `move2` (only `move1` when the reset token is the seat's only token),
//! each `{ card, token, combo?, copy?, try }`, and optionally `tie_first = "white-2"`. `try` lists
//! alternatives, tried in order at resolution; the first that can be carried out fully is carried
//! out, else the move does nothing (Flag Dash, Using Boosts: "fully or not at all"). One
//! alternative is a string:
//!
//! ```text
//! WHO [":" STEP ("," STEP)*]
//! WHO   runner | defender | a character's colour (any of the team's three in the 2-player basic game)
//! STEP  boost DIR                 one boost move (boosts from earlier moves only)
//!       tunnel SPACE [bump DIR]   use the tunnel under the character to go to the tunnel at SPACE
//!       card [ARGS]               one resolution of the card (a multiplier repeats it)
//!       combo [ARGS]              the combo card (with #3/#6)
//!       no card                   the cards are not carried out (boosts and tunnels only)
//!       cats DIR [DIR]            with a cat token: where the closest and second closest go
//! ARGS  Flag: take | give NAME | drop SPACE | collect NAME
//!             | pass NAME [OPPONENT ...] (2-player basic: the named opponents' flags, else all)
//!       Push: NAME DIR [DIR]      the character pushed and its path of one or two spaces
//!       Run: none. Copy: the arguments of the copied card. No ARGS: a default (see engine).
//!       Jump: DIR. Trap: SPACE. Lasso: NAME. Dig: remove SPACE | place SPACE (abilities)
//! DIR   n | e | s | w             north = toward Red's back row (the top of the printed grid)
//! ```
//! Without `card` steps the card's resolutions come after the other steps; fewer `card` steps
//! than the token's count repeat the last one; a missing `combo` step comes after the cards (before
//! them when the played card is a Copy of the combo card: Copy copies only a card already played).

use std::collections::BTreeMap;

use toml::Value;

use super::asked::{layout_asked, reset_only, spy_asked, spy_choices, spy_target_asked, tie_asked};
use super::layout::{Dir, Sq, Team};
use super::state::{Card, Effect, Mode, MovePlan, Plan, Seat, Stage, State, Token};
use crate::game::{OrderProblem, Orders, Problems};

/// Arguments of one card resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    /// None given: the engine's default for the card.
    Auto,
    /// Flag: take the opposing team flag.
    Take,
    /// Flag: give the carried flag to the named teammate.
    Give(usize),
    /// Flag: drop the carried flag on the space.
    Drop(Sq),
    /// Flag: collect a character flag from the named opponent.
    Collect(usize),
    /// Flag (2-player basic): pass character flags to the named runner: those of the listed
    /// opponents, or every one the receiver lacks when none is listed ("any number").
    Pass(usize, Vec<usize>),
    /// Push the named character along the path.
    Push(usize, Vec<Dir>),
    /// Jump in a direction.
    Dir(Dir),
    /// Trap or Dig: a space to place the token on.
    Space(Sq),
    /// Dig: the tunnel to remove.
    Remove(Sq),
    /// Lasso: the character pulled.
    Char(usize),
}

/// One step of an alternative.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// One boost move.
    Boost(Dir),
    /// Use the tunnel underfoot to reach the tunnel at `to`; `bump` is the preferred bump direction.
    Tunnel { to: Sq, bump: Option<Dir> },
    /// One resolution of the played card.
    Card(Arg),
    /// The combo card.
    Combo(Arg),
    /// No card is carried out in this alternative (Using Boosts: boosts "before or after"
    /// a card that is carried out "not at all").
    NoCard,
}

/// One alternative, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Try {
    /// The character selected.
    pub who: usize,
    /// Its steps, normalized (exact count of card and combo steps).
    pub steps: Vec<Step>,
    /// With a cat token: the directions the two chased characters are sent, closest first.
    pub chase: Vec<Dir>,
    /// `no card`: the alternative carries out no card (its steps are boosts and tunnels only).
    pub no_card: bool,
}

/// How many times the played card is resolved with `token`.
pub fn card_times(token: Token) -> usize {
    match token.effect() {
        Effect::Repeat { times, .. } => times as usize,
        _ => 1,
    }
}

/// The card a played card acts as (a Copy acts as its copied card).
pub fn acting(card: Card, copy: Option<Card>) -> Card {
    if card == Card::Copy { copy.unwrap_or(Card::Copy) } else { card }
}

fn parse_args(s: &State, role: &str, card: Card, words: &[&str]) -> Result<Arg, String> {
    let team = s.seat(role).map(|x| x.team);
    let name = |w: &str| s.char_named(w).ok_or_else(|| format!("no character named \"{w}\""));
    if words.is_empty() {
        return Ok(Arg::Auto);
    }
    match card {
        c if c.is_run() => Err(format!("a Run card takes no arguments (got \"{}\")", words.join(" "))),
        Card::Flag => match (words[0].to_ascii_lowercase().as_str(), words.len()) {
            ("take", 1) => Ok(Arg::Take),
            ("give", 2) => {
                let i = name(words[1])?;
                if Some(s.chars[i].team) != team {
                    return Err(format!("give: {} is not your teammate", s.chars[i].name));
                }
                Ok(Arg::Give(i))
            }
            ("drop", 2) => words[1].parse::<Sq>().map(Arg::Drop),
            ("collect", 2) => {
                let i = name(words[1])?;
                if Some(s.chars[i].team) == team {
                    return Err(format!("collect: {} is on your team", s.chars[i].name));
                }
                Ok(Arg::Collect(i))
            }
            ("pass", n) if n >= 2 && s.mode == Mode::TwoBasic => {
                let i = name(words[1])?;
                if Some(s.chars[i].team) != team || !s.chars[i].is_runner() {
                    return Err(format!("pass: {} is not one of your runners", s.chars[i].name));
                }
                // 2-Player Rules, Basic: "pass any number of character flags".
                let mut which = Vec::new();
                for w in &words[2..] {
                    let j = name(w)?;
                    if Some(s.chars[j].team) == team {
                        return Err(format!("pass: {} is on your team; name opponents whose flags you pass", s.chars[j].name));
                    }
                    if which.contains(&j) {
                        return Err(format!("pass: {} is named twice", s.chars[j].name));
                    }
                    which.push(j);
                }
                Ok(Arg::Pass(i, which))
            }
            _ => Err(format!(
                "Flag takes: take | give NAME | drop SPACE | collect NAME{} (got \"{}\")",
                if s.mode == Mode::TwoBasic { " | pass NAME [OPPONENT ...]" } else { "" },
                words.join(" ")
            )),
        },
        Card::Push => {
            let i = name(words[0])?;
            let path: Option<Vec<Dir>> = words[1..].iter().map(|w| Dir::parse(w)).collect();
            match path {
                Some(p) if (1..=2).contains(&p.len()) => Ok(Arg::Push(i, p)),
                _ => Err("Push takes: NAME DIR [DIR] (one or two of n, e, s, w)".into()),
            }
        }
        Card::Copy => Err("a Copy card needs `copy = \"CARD\"` in the move".into()),
        Card::Jump if words.len() == 1 => Dir::parse(words[0]).map(Arg::Dir).ok_or_else(|| "Jump takes a direction: n, e, s or w".into()),
        Card::Trap if words.len() == 1 => words[0].parse::<Sq>().map(Arg::Space),
        Card::Lasso if words.len() == 1 => name(words[0]).map(Arg::Char),
        Card::Dig => match (words.first().map(|w| w.to_ascii_lowercase()).as_deref(), words.len()) {
            (Some("remove"), 2) => words[1].parse::<Sq>().map(Arg::Remove),
            (Some("place"), 2) => words[1].parse::<Sq>().map(Arg::Space),
            _ => Err("Dig takes: remove SPACE | place SPACE".into()),
        },
        c => Err(format!("{} takes no arguments here", c.title())),
    }
}

/// Parses one alternative of `role`'s move `mp` against the state (names, character choice).
///
/// Errors: a message for the player.
pub fn parse_try(s: &State, role: &str, mp: &MovePlan, text: &str) -> Result<Try, String> {
    let (who_text, rest) = match text.split_once(':') {
        Some((a, b)) => (a.trim(), b.trim()),
        None => (text.trim(), ""),
    };
    let who = select_who(s, role, who_text)?;
    let (mut steps, chase) = parse_steps(s, role, mp, rest)?;
    if steps.contains(&Step::NoCard) {
        if steps.iter().any(|x| matches!(x, Step::Card(_) | Step::Combo(_))) {
            return Err("`no card` cannot go with `card` or `combo` steps".into());
        }
        steps.retain(|x| *x != Step::NoCard);
        return Ok(Try { who, steps, chase, no_card: true });
    }
    normalized(mp, who, steps, chase)
}

/// The alternative that selects character `who` with the written steps `written` (boosts and
/// tunnels: no card, combo, cats or `no card` step), normalized for `mp`: what [`parse_try`]
/// gives for the text naming that character and those steps, without reading any text (the
/// built-in player tries the same few alternatives with every card).
pub fn try_with(mp: &MovePlan, who: usize, written: &[Step]) -> Result<Try, String> {
    // Room for the card and combo steps normalizing adds, so that it adds them without growing.
    let mut t = Try { who, steps: Vec::with_capacity(written.len() + card_times(mp.token) + 1), chase: Vec::new(), no_card: false };
    try_with_in(mp, who, written, &mut t)?;
    Ok(t)
}

/// [`try_with`] written into `t`, whose room is kept (the built-in player tries thousands of
/// alternatives a step); `t` is that alternative when this returns `Ok`.
pub fn try_with_in(mp: &MovePlan, who: usize, written: &[Step], t: &mut Try) -> Result<(), String> {
    fill_in(mp, who, written, t)?;
    check_card_order(mp, &t.steps)
}

/// What [`fill_in`] reads of a move: how many times the card resolves, whether a combo card
/// comes, and whether it comes first (a Copy of the combo card). Moves with the same key fill the
/// same written steps alike.
pub type FillKey = (usize, bool, bool);

/// The [`FillKey`] of `mp`.
pub fn fill_key(mp: &MovePlan) -> FillKey {
    (card_times(mp.token), mp.combo.is_some(), mp.card == Card::Copy && mp.copy.is_some() && mp.copy == mp.combo)
}

/// [`try_with_in`] without [`check_card_order`]: the written steps with the card steps filled in
/// ([`fill_cards`]), which depends only on `mp`'s [`fill_key`].
pub fn fill_in(mp: &MovePlan, who: usize, written: &[Step], t: &mut Try) -> Result<(), String> {
    (t.who, t.no_card) = (who, false);
    t.chase.clear();
    t.steps.clear();
    t.steps.extend_from_slice(written);
    if written.iter().all(|x| matches!(x, Step::Boost(_) | Step::Tunnel { .. })) {
        // What `fill_cards` makes of steps without card or combo steps, without its searches:
        // the card's resolutions where the steps end, the combo card after them (before them
        // when the played card is a Copy of the combo card).
        let combo = mp.combo.map(|_| Step::Combo(Arg::Auto));
        let copy_of_combo = mp.card == Card::Copy && mp.copy.is_some() && mp.copy == mp.combo;
        t.steps.extend(combo.clone().filter(|_| copy_of_combo));
        t.steps.extend(std::iter::repeat_n(Step::Card(Arg::Auto), card_times(mp.token)));
        t.steps.extend(combo.filter(|_| !copy_of_combo));
        debug_assert_eq!(Ok(&t.steps), { let mut w = written.to_vec(); fill_cards(mp, &mut w).map(|_| w) }.as_ref(), "the cards filled in as fill_cards does");
        Ok(())
    } else {
        fill_cards(mp, &mut t.steps)
    }
}

/// The alternative after its card steps are filled in and checked ([`fill_cards`],
/// [`check_card_order`]).
fn normalized(mp: &MovePlan, who: usize, mut steps: Vec<Step>, chase: Vec<Dir>) -> Result<Try, String> {
    fill_cards(mp, &mut steps)?;
    check_card_order(mp, &steps)?;
    Ok(Try { who, steps, chase, no_card: false })
}

/// The character an alternative selects: `runner`, `defender` or a name, one `role` may move.
fn select_who(s: &State, role: &str, who_text: &str) -> Result<usize, String> {
    // The characters it may select, without making a list (every alternative of every plan).
    let movable = || s.movable_iter(role);
    // Compared without case, without making a lowercase copy (every alternative of every plan).
    let who = if who_text.eq_ignore_ascii_case("runner") {
        s.runner_of(role).ok_or("in the 2-player basic game name the character by colour")?
    } else if who_text.eq_ignore_ascii_case("defender") {
        movable().find(|&i| !s.chars[i].is_runner()).ok_or("no defender")?
    } else {
        s.char_named(who_text).ok_or_else(|| format!("\"{who_text}\" is not runner, defender or a character"))?
    };
    if !movable().any(|i| i == who) {
        let names: Vec<&str> = movable().map(|i| s.chars[i].name.as_str()).collect();
        return Err(format!("{} may select only {}", role, names.join(" or ")));
    }
    Ok(who)
}

/// The steps of an alternative as written (after the `:`), and the directions of its `cats` step.
fn parse_steps(s: &State, role: &str, mp: &MovePlan, rest: &str) -> Result<(Vec<Step>, Vec<Dir>), String> {
    let card_as = acting(mp.card, mp.copy);
    let combo_as = mp.combo.map(|c| acting(c, mp.copy));
    let mut steps = Vec::new();
    let mut chase = Vec::new();
    for part in rest.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let words: Vec<&str> = part.split_whitespace().collect();
        let step = match words[0].to_ascii_lowercase().as_str() {
            "cats" if (2..=3).contains(&words.len()) && matches!(mp.token, Token::Cat3 | Token::Cat5) => {
                let dirs: Option<Vec<Dir>> = words[1..].iter().map(|w| Dir::parse(w)).collect();
                chase = dirs.ok_or("cats takes one or two directions: n, e, s or w")?;
                continue;
            }
            "boost" if words.len() == 2 => Step::Boost(Dir::parse(words[1]).ok_or("boost takes a direction: n, e, s or w")?),
            "tunnel" if words.len() == 2 || (words.len() == 4 && words[2].eq_ignore_ascii_case("bump")) => {
                let to: Sq = words[1].parse()?;
                let bump = match words.get(3) {
                    Some(w) => Some(Dir::parse(w).ok_or("bump takes a direction: n, e, s or w")?),
                    None => None,
                };
                Step::Tunnel { to, bump }
            }
            "no" if words.len() == 2 && words[1].eq_ignore_ascii_case("card") => Step::NoCard,
            "card" => Step::Card(parse_args(s, role, card_as, &words[1..])?),
            "combo" => match combo_as {
                Some(c) => Step::Combo(parse_args(s, role, c, &words[1..])?),
                None => return Err("`combo` needs a combo token (#3 or #6) and `combo = \"CARD\"`".into()),
            },
            _ => return Err(format!("\"{part}\" is not a step (boost DIR, tunnel SPACE [bump DIR], card ..., combo ..., no card)")),
        };
        steps.push(step);
    }
    Ok((steps, chase))
}

/// Normalizes the card steps of an alternative: exactly as many `card` steps as the token
/// resolves the card (missing ones repeat the last, or come before the combo step, or where the
/// steps end), and one `combo` step with a combo token.
fn fill_cards(mp: &MovePlan, steps: &mut Vec<Step>) -> Result<(), String> {
    let times = card_times(mp.token);
    let n_cards = steps.iter().filter(|x| matches!(x, Step::Card(_))).count();
    if n_cards > times {
        let says = match times {
            1 => "once".to_string(),
            2 => "twice".to_string(),
            n => format!("{n} times"),
        };
        return Err(format!("{n_cards} `card` steps but the token resolves the card {says}"));
    }
    // Action Cards, Copy: a Copy played with a combo token copying the combo card resolves after it.
    let copy_of_combo = mp.card == Card::Copy && mp.copy.is_some() && mp.copy == mp.combo;
    if n_cards == 0 {
        let at = steps.iter().position(|x| matches!(x, Step::Combo(_))).map_or(steps.len(), |c| if copy_of_combo { c + 1 } else { c });
        for _ in 0..times {
            steps.insert(at, Step::Card(Arg::Auto));
        }
    } else {
        let last = steps.iter().rposition(|x| matches!(x, Step::Card(_))).expect("a card step");
        for _ in n_cards..times {
            steps.insert(last + 1, steps[last].clone());
        }
    }
    let n_combo = steps.iter().filter(|x| matches!(x, Step::Combo(_))).count();
    if n_combo > 1 {
        return Err("the combo card is resolved once".into());
    }
    if mp.combo.is_some() && n_combo == 0 {
        let at = if copy_of_combo {
            steps.iter().position(|x| matches!(x, Step::Card(_))).expect("a card step")
        } else {
            steps.iter().rposition(|x| matches!(x, Step::Card(_))).expect("a card step") + 1
        };
        steps.insert(at, Step::Combo(Arg::Auto));
    }
    Ok(())
}

/// Checks where the card steps of a normalized alternative stand: nothing between the repeats of
/// the played card, and a Copy after the card it copies.
pub fn check_card_order(mp: &MovePlan, steps: &[Step]) -> Result<(), String> {
    // Boosts come before or after a card's resolution, not between the repeats of one card
    // (Flag Dash, Using Boosts: "before or after resolving any action card").
    let first = steps.iter().position(|x| matches!(x, Step::Card(_))).expect("a card step");
    let last = steps.iter().rposition(|x| matches!(x, Step::Card(_))).expect("a card step");
    if steps[first..last].iter().any(|x| matches!(x, Step::Boost(_) | Step::Combo(_))) {
        return Err("a boost or the combo card cannot come between the repeats of the played card".into());
    }
    // Action Cards, Copy: "Copy any other action card you have already played this round": in a
    // combo, a Copy of the other card comes after it.
    if let (Some(c), Some(combo_at)) = (mp.combo, steps.iter().position(|x| matches!(x, Step::Combo(_)))) {
        let copy_first = (mp.card == Card::Copy && mp.copy == Some(c) && first < combo_at)
            || (c == Card::Copy && mp.copy == Some(mp.card) && combo_at < first);
        if copy_first {
            return Err(format!("the Copy card comes before the card it copies ({}); Copy copies only a card already played", mp.copy.map(|x| x.title()).unwrap_or_default()));
        }
    }
    Ok(())
}

fn str_of(v: &Value) -> Option<&str> {
    v.as_str()
}

/// Checks one move table `t` (field prefix `key`) of `role`; cards and tokens already used by the
/// other move are in `used_cards` / `used_tokens` (this move's are added); `earlier` are the cards
/// of `role`'s moves before this one this round (what a Copy card may copy, besides the other card
/// of a combo in this move).
#[allow(clippy::too_many_arguments)]
fn parse_move(
    s: &State,
    role: &str,
    key: &str,
    t: &toml::Table,
    earlier: &[Card],
    used_cards: &mut Vec<Card>,
    used_tokens: &mut Vec<Token>,
    probs: &mut Problems,
) -> Option<MovePlan> {
    let seat = s.seat(role).expect("checked role");
    let n0 = probs.len();
    for k in t.keys() {
        if !["card", "token", "combo", "copy", "try", "spy_on"].contains(&k.as_str()) {
            probs.add(format!("{key}.{k}"), "unknown key; a move has card, token, combo, copy and try");
        }
    }
    let head = move_head(seat, key, t, earlier, used_tokens).map_err(|p| probs.push(p)).ok()?;
    let MovePlan { card, token, combo, .. } = head;
    for (field, c) in [("card", Some(card)), ("combo", combo)] {
        let Some(c) = c else { continue };
        if used_cards.contains(&c) {
            probs.add(format!("{key}.{field}"), format!("{} is already used by your other move this round", c.title()));
        }
        used_cards.push(c);
    }
    used_tokens.push(token);
    let tries = move_tries(key, t).map_err(|p| probs.push(p)).ok()?;
    let mp = MovePlan { tries, ..head };
    for (i, x) in mp.tries.iter().enumerate() {
        if let Err(e) = parse_try(s, role, &mp, x) {
            probs.add(format!("{key}.try"), format!("alternative {} (\"{x}\"): {e}", i + 1));
        }
    }
    (probs.len() == n0).then_some(mp)
}

/// The card, token, combo card and copied card of move table `t` (no tries yet), checked against
/// `seat`'s hand and the tokens `used_tokens` by its other move. Errors: the first problem.
fn move_head(seat: &Seat, key: &str, t: &toml::Table, earlier: &[Card], used_tokens: &[Token]) -> Result<MovePlan, OrderProblem> {
    // A field left out is called missing; a wrong one is repeated beside the choices by the
    // caller that has the text (`orderfile::with_written`, tester16 T16c-7).
    let missing = |k: &str| if t.contains_key(k) { "" } else { "missing: " };
    let card = t.get("card").and_then(str_of).and_then(Card::parse);
    let Some(card) = card.filter(|c| seat.cards.contains(c)) else {
        let names: Vec<&str> = seat.cards.iter().map(|c| c.key()).collect();
        return Err(OrderProblem::new(format!("{key}.card"), format!("{}one of your cards: {}", missing("card"), names.join(", "))));
    };
    let token = t.get("token").and_then(Token::parse);
    let Some(token) = token.filter(|x| seat.tokens.contains(x)) else {
        let names: Vec<String> = seat.tokens.iter().map(|x| x.key()).collect();
        return Err(OrderProblem::new(format!("{key}.token"), format!("{}one of your tokens: {}", missing("token"), names.join(", "))));
    };
    let have = seat.tokens.iter().filter(|x| **x == token).count();
    if used_tokens.iter().filter(|x| **x == token).count() >= have {
        return Err(OrderProblem::new(format!("{key}.token"), "the two moves need two different tokens"));
    }
    let combo = move_combo(seat, key, t, card, token)?;
    let copy = move_copy(seat, key, t, earlier, card, combo)?;
    // Character Abilities, Spy: the opponent is chosen "after each player reveals their priority
    // token", so it is asked at the spy's own step, not planned.
    if t.contains_key("spy_on") {
        return Err(OrderProblem::new(
            format!("{key}.spy_on"),
            "the spy's opponent is named after the tokens are revealed, when you are asked (Character Abilities, Spy); leave spy_on out",
        ));
    }
    Ok(MovePlan { card, token, combo, copy, tries: Vec::new(), spy_on: None })
}

/// The combo card of a move: required with a combo token (#3, #6), refused without.
fn move_combo(seat: &Seat, key: &str, t: &toml::Table, card: Card, token: Token) -> Result<Option<Card>, OrderProblem> {
    let problem = |m: &str| Err(OrderProblem::new(format!("{key}.combo"), m));
    match (token.effect(), t.get("combo")) {
        (Effect::Combo, Some(v)) => match str_of(v).and_then(Card::parse).filter(|c| seat.cards.contains(c)) {
            Some(c) if c != card => Ok(Some(c)),
            _ => problem("a second card from your hand, different from the played card"),
        },
        (Effect::Combo, None) => problem("a combo token resolves two cards: give combo = \"CARD\""),
        (_, Some(_)) => problem("only a combo token (#3, #6) takes a second card"),
        (_, None) => Ok(None),
    }
}

/// The card a Copy card copies: required when the move plays a Copy card, refused otherwise.
fn move_copy(seat: &Seat, key: &str, t: &toml::Table, earlier: &[Card], card: Card, combo: Option<Card>) -> Result<Option<Card>, OrderProblem> {
    let problem = |m: String| Err(OrderProblem::new(format!("{key}.copy"), m));
    let needs_copy = card == Card::Copy || combo == Some(Card::Copy);
    match (needs_copy, t.get("copy")) {
        (true, Some(v)) => match str_of(v).and_then(Card::parse).filter(|c| seat.cards.contains(c) && *c != Card::Copy) {
            // Action Cards, Copy: only a card already played this round (an earlier move, or the
            // other card of this move's combo, resolved first).
            Some(c) if earlier.contains(&c) || (combo.is_some() && (c == card || Some(c) == combo)) => Ok(Some(c)),
            Some(c) if earlier.is_empty() => problem(format!(
                "Copy can only copy a card you already played this round; {} is not played before this move (in move 1 nothing is, unless it is the other card of a combo)",
                c.title()
            )),
            Some(c) => problem(format!("Copy can only copy a card you already played this round; {} is not played before this move", c.title())),
            None => problem("the card to copy: one of your other cards, played earlier this round".into()),
        },
        (true, None) => problem("a Copy card needs copy = \"CARD\" (a card played earlier this round)".into()),
        (false, Some(_)) => problem("only a Copy card takes copy".into()),
        (false, None) => Ok(None),
    }
}

/// The alternatives of a move: one string or a non-empty list of strings.
fn move_tries(key: &str, t: &toml::Table) -> Result<Vec<String>, OrderProblem> {
    match t.get("try") {
        Some(Value::String(x)) => Ok(vec![x.clone()]),
        Some(Value::Array(a)) if !a.is_empty() && a.iter().all(|x| x.is_str()) => Ok(a.iter().map(|x| x.as_str().unwrap_or("").to_string()).collect()),
        _ => Err(OrderProblem::new(format!("{key}.try"), "a list of alternatives, e.g. [\"runner\", \"defender\"]")),
    }
}

/// Whether `p` passes [`parse_plan`] as [`plan_orders`] writes it, and reads back as itself: the
/// same checks on the typed plan, without writing and reading TOML (the built-in player checks its
/// plan of every round so). `false` where [`parse_plan`] would find any problem.
pub fn plan_passes(s: &State, role: &str, p: &Plan) -> bool {
    let Some(seat) = s.seat(role) else { return false };
    if p.moves.len() != if reset_only(s, role) { 1 } else { 2 } {
        return false;
    }
    let (mut used_cards, mut used_tokens) = (Vec::with_capacity(4), Vec::with_capacity(2));
    for (k, mp) in p.moves.iter().enumerate() {
        let earlier: Vec<Card> = p.moves[..k].iter().flat_map(|m| [Some(m.card), m.combo]).flatten().collect();
        if !move_passes(s, role, seat, mp, &earlier, &mut used_cards, &mut used_tokens) {
            return false;
        }
    }
    if used_tokens.contains(&Token::Spy) {
        let mut left = seat.tokens.clone();
        for t in &used_tokens {
            if let Some(i) = left.iter().position(|x| x == t) {
                left.remove(i);
            }
        }
        if !left.iter().any(|t| *t != Token::Spy) {
            return false;
        }
    }
    let tie_ok = match &p.tie_first {
        None => true,
        Some(r) => s.mode != Mode::TwoBasic && s.team_roles(seat.team).contains(&r.as_str()),
    };
    tie_ok && (!p.secret_tunnel || s.layout.secret_tunnel.is_some())
}

/// [`parse_move`]'s checks of the typed move `mp` (see [`plan_passes`]): [`move_head`]'s card,
/// token, combo and copy, no `spy_on`, cards not used twice, and every alternative read.
fn move_passes(s: &State, role: &str, seat: &Seat, mp: &MovePlan, earlier: &[Card], used_cards: &mut Vec<Card>, used_tokens: &mut Vec<Token>) -> bool {
    let MovePlan { card, token, combo, copy, .. } = *mp;
    let have = seat.tokens.iter().filter(|x| **x == token).count();
    if !seat.cards.contains(&card) || have == 0 || used_tokens.iter().filter(|x| **x == token).count() >= have || mp.spy_on.is_some() {
        return false;
    }
    let combo_ok = match (token.effect() == Effect::Combo, combo) {
        (true, Some(c)) => seat.cards.contains(&c) && c != card,
        (is_combo, c) => !is_combo && c.is_none(),
    };
    let copy_ok = match (card == Card::Copy || combo == Some(Card::Copy), copy) {
        (true, Some(c)) => seat.cards.contains(&c) && c != Card::Copy && (earlier.contains(&c) || (combo.is_some() && (c == card || Some(c) == combo))),
        (needs, c) => !needs && c.is_none(),
    };
    if !combo_ok || !copy_ok || mp.tries.is_empty() {
        return false;
    }
    for c in std::iter::once(card).chain(combo) {
        if used_cards.contains(&c) {
            return false;
        }
        used_cards.push(c);
    }
    used_tokens.push(token);
    mp.tries.iter().all(|x| parse_try(s, role, mp, x).is_ok())
}

/// Parses and checks `role`'s plan (Flag Dash, Phase 1).
///
/// Errors: one problem per bad field.
pub fn parse_plan(s: &State, role: &str, o: &Orders) -> Result<Plan, Vec<OrderProblem>> {
    let mut probs = Problems::new();
    let seat = s.seat(role).expect("checked role");
    for k in o.keys() {
        if !["move1", "move2", "tie_first", "secret_tunnel"].contains(&k.as_str()) {
            probs.add(k, "unknown key; a plan has move1, move2, tie_first and secret_tunnel");
        }
    }
    // Flag Dash, Priority Tokens (Reset note): with only the reset token left, only move 1 is planned.
    let reset_only = reset_only(s, role);
    let wanted: &[&str] = if reset_only { &["move1"] } else { &["move1", "move2"] };
    if reset_only && o.contains_key("move2") {
        probs.add("move2", "the reset token is your only token (a spy token counts for none: it must be replaced by another when revealed): plan only move1 (Priority Tokens, Reset; README \"Flag Dash orders\")");
    }
    let mut moves: Vec<MovePlan> = Vec::new();
    let mut used_cards: Vec<Card> = Vec::new();
    let mut used_tokens: Vec<Token> = Vec::new();
    for key in wanted {
        match o.get(*key).map(|v| v.as_table()) {
            None => probs.add(*key, "missing: give { card = ..., token = ..., try = [...] }"),
            Some(None) => probs.add(*key, "must be a table { card = ..., token = ..., try = [...] }"),
            Some(Some(t)) => {
                let earlier: Vec<Card> = moves.iter().flat_map(|m| [Some(m.card), m.combo]).flatten().collect();
                moves.extend(parse_move(s, role, key, t, &earlier, &mut used_cards, &mut used_tokens, &mut probs))
            }
        }
    }
    // Character Abilities, Spy: the spy token is replaced by another token, so one must be left.
    if used_tokens.contains(&Token::Spy) {
        let mut left = seat.tokens.clone();
        for t in &used_tokens {
            if let Some(i) = left.iter().position(|x| x == t) {
                left.remove(i);
            }
        }
        if !left.iter().any(|t| *t != Token::Spy) {
            probs.add("move1.token", "a spy token needs another token left behind your screen to replace it");
        }
    }
    let tie_first = match o.get("tie_first") {
        None => None,
        // 2-Player Rules (basic): one seat per team, no teammate to tie with.
        Some(_) if s.mode == Mode::TwoBasic => {
            probs.add("tie_first", "the 2-player basic game has no teammate: leave tie_first out");
            None
        }
        Some(v) => match str_of(v).filter(|r| s.team_roles(seat.team).contains(r)) {
            Some(r) => Some(r.to_string()),
            None => {
                probs.add("tie_first", format!("one of your team's seats: {}", s.team_roles(seat.team).join(", ")));
                None
            }
        },
    };
    let secret_tunnel = match o.get("secret_tunnel") {
        None => false,
        Some(Value::Boolean(b)) if s.layout.secret_tunnel.is_some() => *b,
        Some(_) => {
            probs.add("secret_tunnel", "true or false, and only on a board with a secret tunnel");
            false
        }
    };
    probs.finish(Plan { moves, tie_first, secret_tunnel })
}

/// Checks the spy's answer (Character Abilities, Spy): `token` replaces the spy token (by another
/// token behind the screen, not a spy token: each is used only once); `card` optionally replaces
/// the card. Each of `card`, `combo`, `copy` and `try` left out stays as planned (a new `card`
/// drops the planned `combo` and `copy`, which belonged to the old card).
///
/// Errors: one problem per bad field.
pub fn parse_spy(s: &State, role: &str, mv: u8, o: &Orders) -> Result<MovePlan, Vec<OrderProblem>> {
    let mut probs = Problems::new();
    for k in o.keys() {
        if !["card", "token", "combo", "copy", "try"].contains(&k.as_str()) {
            probs.add(k, "unknown key; answer with token (and card, combo, copy, try to change the card)");
        }
    }
    let seat = s.seat(role).expect("checked role");
    let plan = &s.plans[role];
    let old = &plan.moves[mv as usize - 1];
    let mut t = plan_orders(&Plan { moves: vec![old.clone()], tie_first: None, secret_tunnel: false })
        .get("move1")
        .and_then(|v| v.as_table())
        .cloned()
        .unwrap_or_default();
    t.remove("spy_on");
    t.remove("token");
    if o.contains_key("card") {
        t.remove("combo");
        t.remove("copy");
    }
    for k in ["card", "combo", "copy", "try"] {
        if let Some(v) = o.get(k) {
            t.insert(k.into(), v.clone());
        }
    }
    let choices: Vec<Token> = seat.tokens.iter().copied().filter(|x| *x != Token::Spy).collect();
    match o.get("token").and_then(Token::parse).filter(|x| choices.contains(x)) {
        Some(x) => {
            t.insert("token".into(), x.value());
        }
        None => {
            let names = spy_choices(s, role).join(", ");
            probs.add("token", format!("the token that replaces the spy token, one of: {names} (not a spy token: each is used only once)"));
            return Err(probs.into_vec());
        }
    }
    // Cards of the other move (already played or face down) stay unavailable.
    let mut used_cards: Vec<Card> = Vec::new();
    for (i, m) in plan.moves.iter().enumerate() {
        if i + 1 != mv as usize {
            used_cards.push(m.card);
            used_cards.extend(m.combo);
        }
    }
    let earlier: Vec<Card> = plan.moves.iter().take(mv as usize - 1).flat_map(|m| [Some(m.card), m.combo]).flatten().collect();
    let mut used_tokens = Vec::new();
    let mp = parse_move(s, role, "", &t, &earlier, &mut used_cards, &mut used_tokens, &mut probs);
    for p in probs.iter_mut() {
        p.field = p.field.trim_start_matches('.').to_string();
    }
    match mp {
        Some(m) if probs.is_empty() => Ok(m),
        _ => Err(probs.into_vec()),
    }
}

/// Checks the spy's choice of opponent (Character Abilities, Spy: "after each player reveals
/// their priority token ..., force one opponent to reveal their selected action card"):
/// `spy_on = "SEAT"`.
///
/// Errors: one problem per bad field.
pub fn parse_spy_target(s: &State, role: &str, o: &Orders) -> Result<String, Vec<OrderProblem>> {
    let mut probs = Problems::new();
    for k in o.keys().filter(|k| *k != "spy_on") {
        probs.add(k, "unknown key; answer with spy_on = \"SEAT\" (your token and card come next, once you have seen the card)");
    }
    let team = s.seat(role).expect("checked role").team;
    let opponents = s.team_roles(team.other());
    match o.get("spy_on").and_then(str_of).filter(|r| opponents.contains(r)) {
        Some(r) if probs.is_empty() => Ok(r.to_string()),
        Some(_) => Err(probs.into_vec()),
        None => {
            probs.add("spy_on", format!("the opponent who reveals its card: {}", opponents.join(" or ")));
            Err(probs.into_vec())
        }
    }
}

/// What a checked order does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// A plan for the round.
    Plan(Plan),
    /// The seat of the team that moves first on the tie.
    TieFirst(String),
    /// The opponent seat the spy forces to reveal its card.
    SpyTarget(String),
    /// The spy's replacement move.
    Spy(MovePlan),
    /// A team's half of a secret custom layout.
    Layout(Team, TeamSetup),
}

/// One team's half of a secret custom layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamSetup {
    /// The team flag's space.
    pub flag: Sq,
    /// Each character of the team and its space.
    pub chars: Vec<(usize, Sq)>,
    /// The tunnels of the half.
    pub tunnels: Vec<Sq>,
}

/// The first and last row (1-based) of `team`'s half (the centre row of an odd board is nobody's).
pub fn half_rows(s: &State, team: Team) -> (i32, i32) {
    let n = s.layout.rows;
    match team {
        Team::White => (1, n / 2),
        Team::Red => ((n + 1) / 2 + 1, n),
    }
}

fn in_half(s: &State, team: Team, q: Sq) -> bool {
    let (a, b) = half_rows(s, team);
    s.in_play(q) && q.r + 1 >= a && q.r < b
}

/// How many tunnels a team may place in a secret layout: as many as the layout has in its half.
pub fn tunnels_in_half(s: &State, team: Team) -> usize {
    s.layout.tunnels.iter().filter(|q| in_half(s, team, **q)).count()
}

/// The current setup of `team`'s half as orders (the default of the layout question).
pub fn layout_orders(s: &State, team: Team) -> Orders {
    let mut o = Orders::new();
    o.insert("flag".into(), Value::String(s.flag_space(team).to_string()));
    let mut t = toml::Table::new();
    for c in s.chars.iter().filter(|c| c.team == team) {
        t.insert(c.name.clone(), Value::String(c.at.to_string()));
    }
    o.insert("characters".into(), Value::Table(t));
    let tunnels = s.tunnels.iter().filter(|q| in_half(s, team, **q)).map(|q| Value::String(q.to_string())).collect();
    o.insert("tunnels".into(), Value::Array(tunnels));
    o
}

/// Checks a team's half of a secret custom layout (Custom Layout: each team sets up its territory;
/// we ask for the flag, the three characters and the tunnels, all inside the team's half).
///
/// Errors: one problem per bad field.
pub fn parse_layout(s: &State, team: Team, o: &Orders) -> Result<TeamSetup, Vec<OrderProblem>> {
    let mut probs = Problems::new();
    let (a, b) = half_rows(s, team);
    for k in o.keys() {
        if !["flag", "characters", "tunnels"].contains(&k.as_str()) {
            probs.add(k, "unknown key; a setup has flag, characters and tunnels");
        }
    }
    let space = |field: &str, v: Option<&Value>, probs: &mut Problems| -> Option<Sq> {
        match v.and_then(|v| v.as_str()).map(|x| x.parse::<Sq>()) {
            Some(Ok(q)) if in_half(s, team, q) => Some(q),
            _ => {
                probs.add(field, format!("a space in play in your half (rows {a} to {b})"));
                None
            }
        }
    };
    let flag = space("flag", o.get("flag"), &mut probs);
    let mut chars = Vec::new();
    let ours: Vec<usize> = (0..s.chars.len()).filter(|&i| s.chars[i].team == team).collect();
    match o.get("characters").and_then(|v| v.as_table()) {
        Some(t) => {
            for (k, v) in t {
                match s.char_named(k).filter(|i| ours.contains(i)) {
                    Some(i) => {
                        if let Some(q) = space(&format!("characters.{k}"), Some(v), &mut probs) {
                            chars.push((i, q));
                        }
                    }
                    None => probs.add(format!("characters.{k}"), "not one of your team's characters"),
                }
            }
            if t.len() != ours.len() {
                let names: Vec<&str> = ours.iter().map(|&i| s.chars[i].name.as_str()).collect();
                probs.add("characters", format!("give all of {}", names.join(", ")));
            }
        }
        None => probs.add("characters", "a table { NAME = SPACE, ... }"),
    }
    chars.sort();
    let mut spaces: Vec<Sq> = chars.iter().map(|c| c.1).chain(flag).collect();
    let n = spaces.len();
    spaces.sort();
    spaces.dedup();
    if spaces.len() != n {
        probs.add("characters", "two pieces on one space");
    }
    let max = tunnels_in_half(s, team);
    let mut tunnels = Vec::new();
    match o.get("tunnels").and_then(|v| v.as_array()) {
        Some(a) if a.len() <= max => {
            for (i, v) in a.iter().enumerate() {
                if let Some(q) = space(&format!("tunnels[{i}]"), Some(v), &mut probs) {
                    if tunnels.contains(&q) {
                        probs.add(format!("tunnels[{i}]"), "given twice");
                    }
                    tunnels.push(q);
                }
            }
        }
        _ => probs.add("tunnels", format!("a list of at most {max} spaces")),
    }
    match flag {
        Some(flag) if probs.is_empty() => Ok(TeamSetup { flag, chars, tunnels }),
        _ => Err(probs.into_vec()),
    }
}

/// Checks `role`'s orders against what is asked of it now.
///
/// Errors: one problem per bad field.
pub fn parse(s: &State, role: &str, o: &Orders) -> Result<Parsed, Vec<OrderProblem>> {
    let Some(seat) = s.seat(role) else {
        return Err(vec![OrderProblem::new("", format!("\"{role}\" is not a seat of this game"))]);
    };
    match &s.stage {
        Stage::Layout => {
            if layout_asked(s).iter().all(|r| r != role) {
                return Err(vec![OrderProblem::new("", "nothing is asked of this seat now")]);
            }
            parse_layout(s, seat.team, o).map(|l| Parsed::Layout(seat.team, l))
        }
        Stage::Plan => parse_plan(s, role, o).map(Parsed::Plan),
        Stage::Move { mv } => {
            if spy_asked(s).as_deref() == Some(role) {
                if spy_target_asked(s, role) {
                    return parse_spy_target(s, role, o).map(Parsed::SpyTarget);
                }
                return parse_spy(s, role, *mv, o).map(Parsed::Spy);
            }
            if tie_asked(s) != Some(role.to_string()) {
                return Err(vec![OrderProblem::new("", "nothing is asked of this seat now")]);
            }
            let roles = s.team_roles(seat.team);
            let mut probs = Problems::new();
            for k in o.keys() {
                if k != "first" {
                    probs.add(k, "unknown key; answer with first = \"SEAT\"");
                }
            }
            match o.get("first").and_then(str_of).filter(|r| roles.contains(r)) {
                Some(r) if probs.is_empty() => Ok(Parsed::TieFirst(r.to_string())),
                Some(_) => Err(probs.into_vec()),
                None => {
                    probs.add("first", format!("the seat that moves first: {}", roles.join(" or ")));
                    Err(probs.into_vec())
                }
            }
        }
        Stage::Over => Err(vec![OrderProblem::new("", "the game is over")]),
    }
}

/// Orders as a TOML table (for forms and bots).
pub fn plan_orders(plan: &Plan) -> Orders {
    let mut o = Orders::new();
    for (i, m) in plan.moves.iter().enumerate() {
        let mut t = toml::Table::new();
        t.insert("card".into(), Value::String(m.card.key().into()));
        t.insert("token".into(), m.token.value());
        if let Some(c) = m.combo {
            t.insert("combo".into(), Value::String(c.key().into()));
        }
        if let Some(c) = m.copy {
            t.insert("copy".into(), Value::String(c.key().into()));
        }
        if let Some(r) = &m.spy_on {
            t.insert("spy_on".into(), Value::String(r.clone()));
        }
        t.insert("try".into(), Value::Array(m.tries.iter().map(|x| Value::String(x.clone())).collect()));
        o.insert(format!("move{}", i + 1), Value::Table(t));
    }
    if let Some(r) = &plan.tie_first {
        o.insert("tie_first".into(), Value::String(r.clone()));
    }
    if plan.secret_tunnel {
        o.insert("secret_tunnel".into(), Value::Boolean(true));
    }
    o
}

/// The seats' plans keyed by role (a helper for tests).
pub type Plans = BTreeMap<String, Plan>;
