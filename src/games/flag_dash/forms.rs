//! What a seat reads and gets prefilled: the prompt, the help lines listing the legal choices and
//! the grammar of alternatives, and the default order (also the NMR default).
//!
//! NMR defaults (no orders received): plan -> move 1 Run forward and move 2 Flag (take the opposing
//! flag, else collect from an adjacent opponent), with the seat's two lowest tokens (a combo token
//! adds Run left to move 1 and Push to move 2), each tried by the runner, then the defender (the
//! basic 2-player game: every character in layout order), `tie_first` = the team's first seat;
//! only the reset token left -> move 1 only. Tie question -> the team's first seat moves first.
//! Secret layout -> the layout file's setup of the half. Spy -> the opponent: the first seat of the
//! other team; then the card as planned with the lowest token left that needs no second card (see
//! [`spy_default`]).

use toml::Value;

use super::asked::{reset_only, spy_choices, tie_asked};
use super::layout::Team;
use super::orders::plan_orders;
use super::state::{Card, Effect, Mode, MovePlan, Plan, Stage, State, Token};
use crate::game::Orders;

pub use crate::text::wrap_lines as wrap;


/// The alternatives the default order tries: runner then defender (all three in 2-player basic).
pub fn default_tries(s: &State, role: &str) -> Vec<String> {
    if s.mode == Mode::TwoBasic {
        let mut v: Vec<usize> = s.movable(role);
        v.sort_by_key(|&i| !s.chars[i].is_runner());
        v.into_iter().map(|i| s.chars[i].name.clone()).collect()
    } else {
        vec!["runner".into(), "defender".into()]
    }
}

/// The default (NMR) plan of `role` (see the module doc).
pub fn default_plan(s: &State, role: &str) -> Plan {
    let seat = s.seat(role).expect("role");
    let mut toks: Vec<Token> = seat.tokens.iter().copied().filter(|t| *t != Token::Spy).collect();
    toks.sort_by_key(|t| (t.priority(), t.key()));
    let tries = default_tries(s, role);
    let mk = |card: Card, token: Token, combo: Card| MovePlan {
        card,
        token,
        combo: (token.effect() == Effect::Combo).then_some(combo),
        copy: None,
        tries: tries.clone(),
        spy_on: None,
    };
    // On a tie between teammates the team's first seat goes first, unless a teammate says otherwise.
    let tie_first = (s.mode != Mode::TwoBasic).then(|| s.team_roles(seat.team)[0].to_string());
    if reset_only(s, role) {
        return Plan { moves: vec![mk(Card::Forward, Token::N(7), Card::Left)], tie_first, secret_tunnel: false };
    }
    Plan { moves: vec![mk(Card::Forward, toks[0], Card::Left), mk(Card::Flag, toks[1], Card::Push)], tie_first, secret_tunnel: false }
}

/// The default order for `role`'s pending ask.
pub fn default_order(s: &State, role: &str) -> Orders {
    match s.stage {
        Stage::Plan => plan_orders(&default_plan(s, role)),
        Stage::Layout => super::orders::layout_orders(s, s.seat(role).map(|x| x.team).unwrap_or(Team::White)),
        Stage::Move { .. } if super::engine::spy_target_asked(s, role) && super::engine::spy_asked(s).as_deref() == Some(role) => {
            let mut o = Orders::new();
            if let Some(team) = s.seat(role).map(|x| x.team) {
                o.insert("spy_on".into(), Value::String(s.team_roles(team.other())[0].to_string()));
            }
            o
        }
        Stage::Move { mv } if super::engine::spy_asked(s).as_deref() == Some(role) => spy_default(s, role, mv),
        _ => {
            let mut o = Orders::new();
            if let Some(team) = s.seat(role).map(|x| x.team) {
                o.insert("first".into(), Value::String(s.team_roles(team)[0].to_string()));
            }
            o
        }
    }
}

/// The default answer to the spy question of `role` in move `mv` (Character Abilities, Spy): the
/// card as planned, with the lowest token behind the screen that needs no second card (not a spy
/// token: each is used once); only when every token left is a combo token (#3, #6), the lowest of
/// them with the first card of the hand that is free (not the played card, not a card of the other
/// move, not Copy) as its combo card. Always a legal answer.
pub fn spy_default(s: &State, role: &str, mv: u8) -> Orders {
    let mut o = Orders::new();
    let (Some(seat), Some(plan)) = (s.seat(role), s.plans.get(role)) else { return o };
    let Some(old) = plan.moves.get(mv as usize - 1) else { return o };
    let mut toks: Vec<Token> = seat.tokens.iter().copied().filter(|t| *t != Token::Spy).collect();
    toks.sort_by_key(|t| (t.priority(), t.key()));
    // The plan check keeps a token other than a spy token behind the screen for this.
    let Some(token) = toks.iter().copied().find(|t| t.effect() != Effect::Combo).or(toks.first().copied()) else { return o };
    o.insert("token".into(), token.value());
    if token.effect() == Effect::Combo {
        let taken: Vec<Card> = plan.moves.iter().enumerate().filter(|(i, _)| *i + 1 != mv as usize).flat_map(|(_, m)| [Some(m.card), m.combo]).flatten().collect();
        if let Some(c) = seat.cards.iter().find(|c| **c != old.card && **c != Card::Copy && !taken.contains(c)) {
            o.insert("combo".into(), Value::String(c.key().into()));
        }
    }
    o
}

/// The team a tie question is about.
fn tie_team(s: &State) -> Option<Team> {
    tie_asked(s).and_then(|r| s.seat(&r).map(|x| x.team))
}

/// The ask's prompt for `role`, wrapped to stay under 100 columns in reports and forms.
pub fn prompt(s: &State, role: &str) -> String {
    let text = match s.stage {
        Stage::Layout => {
            let team = s.seat(role).map(|x| x.team).unwrap_or(Team::White);
            let (a, b) = super::orders::half_rows(s, team);
            format!(
                "Secret custom layout (Custom Layout): set up Team {}'s half (rows {a} to {b}) hidden from the \
                 other team: your team flag, your three characters and up to {} tunnels. Both halves are \
                 revealed together once both teams' setups are in.",
                team.name(),
                super::orders::tunnels_in_half(s, team)
            )
        }
        Stage::Plan => {
            let only = if reset_only(s, role) {
                " The reset token is your only token: plan only move1 (Priority Tokens, Reset)."
            } else {
                ""
            };
            // A teammate's plan shows in the reports written after it is in (not in one sent before).
            let team = if s.mode == Mode::TwoBasic {
                "No one sees another's plan until every plan is in."
            } else {
                "The other team sees no plan until it is revealed; your teammate sees yours in the reports \
                 written after yours is in."
            };
            format!(
                "Round {}, Phase 1: plan two moves, each an action card with a priority token on it, and the \
                 choices to make when it resolves (alternatives tried in order). {team}{only}",
                s.round
            )
        }
        Stage::Move { mv } if super::engine::spy_asked(s).as_deref() == Some(role) && super::engine::spy_target_asked(s, role) => format!(
            "Round {}, move {mv}: you played a spy token and the tokens are revealed. Name the opponent \
             who reveals its card (spy_on = ...); then you replace the spy token, having seen the card. \
             Character Abilities, Spy.",
            s.round
        ),
        Stage::Move { mv } if super::engine::spy_asked(s).as_deref() == Some(role) => format!(
            "Round {}, move {mv}: you played a spy token. Your report shows the spied card. Replace the spy \
             token with another of your tokens (token = ...), and if you like your card too (card = ..., \
             with combo, copy, try as needed). Character Abilities, Spy.",
            s.round
        ),
        Stage::Move { mv } => {
            let team = tie_team(s).map(|t| t.name()).unwrap_or("?");
            format!(
                "Round {}, move {mv}: both Team {team} seats revealed the same priority and did not agree in \
                 tie_first which moves first. Name the seat that moves first (Determine Move Order).",
                s.round
            )
        }
        Stage::Over => "The game is over.".into(),
    };
    wrap(&text, 94).join("\n")
}

/// The form's lines on the Run cards of `team` (Action Cards, Run: "When grass is facing you, the
/// card is oriented correctly"): each arrow is read from the team's own side of the board, so for
/// each card the printed-board direction it moves this team's characters.
pub fn run_card_lines(team: Team) -> Vec<String> {
    let dirs: Vec<String> = [Card::Forward, Card::Back, Card::Left, Card::Right]
        .iter()
        .map(|&c| format!("{} = {}", c.key(), super::engine::run_dir(team, c).key()))
        .collect();
    let side = if team == Team::White { "bottom" } else { "top" };
    vec![
        format!("Run cards are read from your team's own side (Team {}: the {side} of the printed", team.name()),
        format!("  board), so they move your characters {} on the board.", dirs.join(", ")),
    ]
}

/// The form's lines on `try`: who may act, what a bare name means, and the grammar the engine
/// applies to every alternative ([`super::orders::parse_try`]).
fn try_lines(s: &State, role: &str, names: &[String]) -> Vec<String> {
    let basic = s.mode == Mode::TwoBasic;
    let char_name = |i: Option<usize>| i.map_or("?".to_string(), |i| s.chars[i].name.clone());
    let mut h = vec![format!(
        "try: alternatives, first that works fully is carried out. WHO: {}{}",
        if basic { "" } else { "runner, defender, " },
        names.join(", ")
    )];
    if !basic {
        let defender = s.movable(role).into_iter().find(|&i| !s.chars[i].is_runner());
        h.push(format!(
            "  \"runner\" is your own runner ({}), \"defender\" your team's defender ({}).",
            char_name(s.runner_of(role)),
            char_name(defender)
        ));
    }
    let who = if basic { names.first().map_or("Green", |n| n.as_str()).to_string() } else { "runner".into() };
    h.extend([
        "  \"WHO: step, step\"; steps: boost DIR | tunnel SPACE [bump DIR] | card [ARGS] | combo [ARGS]".into(),
        "  | no card. Every alternative plays your card as often as the token says: card steps you".into(),
        "  leave out are added (all at the end, or before a combo step you wrote, or as repeats of".into(),
        "  your last card step); a combo card left out comes right after the card (before it when".into(),
        "  Copy copies the combo card). Only \"no card\" plays no card at all.".into(),
        format!("  A bare \"{who}\" is \"{who}: card\": no boost, no tunnel, the card (and combo card)."),
        "  If none works fully: the first whose boosts/tunnels work, cards that fail left out.".into(),
        "  Flag ARGS: take | give NAME | drop SPACE | collect NAME (none: take, else collect)".into(),
        "  Push ARGS: NAME DIR [DIR] (none: an adjacent opponent one space straight away)".into(),
        format!("  DIR: n e s w on the printed board, for both teams. Example: \"{who}: boost e, card\""),
    ]);
    h
}

/// Help lines for `role`'s form (each under 98 characters).
pub fn help(s: &State, role: &str) -> Vec<String> {
    let Some(seat) = s.seat(role) else {
        return vec![format!("\"{role}\" is not a seat of this game.")];
    };
    if s.stage == Stage::Layout {
        return vec![
            "flag = SPACE; characters = { NAME = SPACE, ... } (all three); tunnels = [SPACE, ...]".into(),
            "Every space in your half and in play; no two pieces on one space (a tunnel may be".into(),
            "under a character or the flag).".into(),
        ];
    }
    if let Stage::Move { .. } = s.stage {
        if super::engine::spy_asked(s).as_deref() == Some(role) && super::engine::spy_target_asked(s, role) {
            return vec![format!("spy_on = one of: {} (the opponent who reveals its card)", s.team_roles(seat.team.other()).join(", "))];
        }
        if super::engine::spy_asked(s).as_deref() == Some(role) {
            return vec![
                format!("token = one of: {} (not a spy token: each is used only once)", spy_choices(s, role).join(", ")),
                "card = \"CARD\" (optional): a new card from your hand, face down; without it your".into(),
                "  planned card stays. combo = \"CARD\": with a combo token (#3, #6), the second card.".into(),
                "copy = \"CARD\": with a Copy card. try = [...] (optional): else the planned try stays.".into(),
            ];
        }
        return vec![format!("first = one of: {}", s.team_roles(seat.team).join(", "))];
    }
    let names: Vec<String> = s.movable(role).iter().map(|&i| s.chars[i].name.clone()).collect();
    let mut h = vec![
        format!("cards: {}", seat.cards.iter().map(|c| c.key()).collect::<Vec<_>>().join(", ")),
        format!(
            "tokens: {}   (discarded: {})",
            seat.tokens.iter().map(|t| t.key()).collect::<Vec<_>>().join(", "),
            if seat.discarded.is_empty() { "none".into() } else { seat.discarded.iter().map(|t| t.key()).collect::<Vec<_>>().join(", ") }
        ),
    ];
    h.extend(run_card_lines(seat.team));
    h.extend([
        "#1 once; #2 once + boost; #3/#6 combo: combo = \"CARD\" (a second card, once each);".into(),
        "#4 twice + boost; #5 three times; #7 once, then your discarded tokens return.".into(),
        "A Copy card (or combo card) needs copy = \"CARD\": a card you played earlier this round.".into(),
    ]);
    h.extend(try_lines(s, role, &names));
    if s.layout.secret_tunnel.is_some() {
        h.push("secret_tunnel = true (optional): at the end of Phase 2 your characters on the".into());
        h.push("  secret tunnel entrance move to your team's exit (Alternate Board Setup)".into());
    }
    if s.abilities {
        h.push("  Jump: DIR. Trap: SPACE. Lasso: NAME. Dig: remove SPACE | place SPACE (runner only)".into());
        h.push("  With a cat token, step \"cats DIR DIR\": where the two closest are chased".into());
        h.push("  A spy token: you name the opponent when asked, after the tokens are revealed.".into());
    }
    if s.mode == Mode::TwoBasic {
        h.push("  Flag also: pass NAME [OPPONENT ...] (those character flags, else all, to your other runner)".into());
    } else {
        h.push("tie_first = \"SEAT\" (optional): which of your team moves first on a priority tie".into());
    }
    h
}
