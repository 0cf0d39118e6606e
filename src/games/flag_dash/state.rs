//! The whole state of a Flag Dash game: seats, characters, flags, the round's plans and where the
//! round stands. Everything serializes in a fixed order (Vec, BTreeMap), never a HashMap.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::layout::{Ability, Layout, Sq, Team, Teams};
use crate::game::Outcome;

/// Action cards (Flag Dash, Action Cards; the four special cards of Character Abilities).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Card {
    /// Run, arrow pointing away from the team's side.
    Forward,
    /// Run, arrow pointing toward the team's side.
    Back,
    /// Run, arrow to the team's left.
    Left,
    /// Run, arrow to the team's right.
    Right,
    /// Flag: take, give or drop the opposing team flag, or collect a character flag.
    Flag,
    /// Push: move an adjacent character up to two spaces.
    Push,
    /// Copy: resolve a card already played this round again.
    Copy,
    /// Jump (Athletic Businessman).
    Jump,
    /// Trap (Tech Nerd).
    Trap,
    /// Lasso (Modern Cowboy).
    Lasso,
    /// Dig (Construction Worker).
    Dig,
}

impl Card {
    /// The seven basic action cards of one set, in hand order (Flag Dash, Components: 4 sets of 7).
    pub const BASIC: [Card; 7] = [Card::Forward, Card::Back, Card::Left, Card::Right, Card::Flag, Card::Push, Card::Copy];

    /// The order-file name, e.g. `"forward"`.
    pub fn key(self) -> &'static str {
        match self {
            Card::Forward => "forward",
            Card::Back => "back",
            Card::Left => "left",
            Card::Right => "right",
            Card::Flag => "flag",
            Card::Push => "push",
            Card::Copy => "copy",
            Card::Jump => "jump",
            Card::Trap => "trap",
            Card::Lasso => "lasso",
            Card::Dig => "dig",
        }
    }

    /// Name for reports, e.g. "Run forward".
    pub fn title(self) -> String {
        match self {
            Card::Forward | Card::Back | Card::Left | Card::Right => format!("Run {}", self.key()),
            _ => {
                let k = self.key();
                format!("{}{}", k[..1].to_ascii_uppercase(), &k[1..])
            }
        }
    }

    /// Parses an order-file card name (any case; `run-forward` is accepted for `forward`).
    pub fn parse(s: &str) -> Option<Card> {
        let t = s.trim().to_ascii_lowercase();
        let t = t.strip_prefix("run-").or_else(|| t.strip_prefix("run ")).unwrap_or(&t).to_string();
        [Card::BASIC.as_slice(), &[Card::Jump, Card::Trap, Card::Lasso, Card::Dig]].concat().into_iter().find(|c| c.key() == t)
    }

    /// True for the four Run cards.
    pub fn is_run(self) -> bool {
        matches!(self, Card::Forward | Card::Back | Card::Left | Card::Right)
    }

    /// The special card an ability gives, if any.
    pub fn of_ability(a: Ability) -> Option<Card> {
        match a {
            Ability::Jump => Some(Card::Jump),
            Ability::Trap => Some(Card::Trap),
            Ability::Lasso => Some(Card::Lasso),
            Ability::Dig => Some(Card::Dig),
            Ability::Spy | Ability::Cats => None,
        }
    }
}

/// A priority token (Flag Dash, Priority Tokens; the cat and spy tokens of Character Abilities).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Token {
    /// The #3 cat token: cats chase, then the card once.
    Cat3,
    /// The #5 cat token: the card once, then cats chase.
    Cat5,
    /// A spy token (two, each used once); replaced before the move order is determined.
    Spy,
    /// #1 to #7 of a basic set.
    #[serde(untagged)]
    N(u8),
}

/// What a token makes the card do (Flag Dash, Priority Tokens).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Resolve the card `times` times; `boost` gives the character a boost.
    Repeat { times: u8, boost: bool },
    /// Resolve two different cards once each (#3, #6).
    Combo,
    /// Resolve once and return the discarded tokens (#7).
    Reset,
    /// Cats chase before (#3 cat) or after (#5 cat) resolving the card once.
    Cats { before: bool },
}

impl Token {
    /// The order-file name: `"1"` ... `"7"`, `"cat3"`, `"cat5"`, `"spy"`.
    pub fn key(self) -> String {
        match self {
            Token::N(n) => n.to_string(),
            Token::Cat3 => "cat3".into(),
            Token::Cat5 => "cat5".into(),
            Token::Spy => "spy".into(),
        }
    }

    /// For reports: `#3`, `cat #3`, `spy`.
    pub fn title(self) -> String {
        match self {
            Token::N(n) => format!("#{n}"),
            Token::Cat3 => "cat #3".into(),
            Token::Cat5 => "cat #5".into(),
            Token::Spy => "spy".into(),
        }
    }

    /// Its number for the move order (a spy token is replaced before the order is determined).
    pub fn priority(self) -> u8 {
        match self {
            Token::N(n) => n,
            Token::Cat3 => 3,
            Token::Cat5 => 5,
            Token::Spy => 0,
        }
    }

    /// What it does with the card.
    pub fn effect(self) -> Effect {
        match self {
            Token::N(1) => Effect::Repeat { times: 1, boost: false },
            Token::N(2) => Effect::Repeat { times: 1, boost: true },
            Token::N(4) => Effect::Repeat { times: 2, boost: true },
            Token::N(5) => Effect::Repeat { times: 3, boost: false },
            Token::N(3) | Token::N(6) => Effect::Combo,
            Token::N(_) => Effect::Reset,
            Token::Cat3 => Effect::Cats { before: true },
            Token::Cat5 => Effect::Cats { before: false },
            Token::Spy => Effect::Repeat { times: 1, boost: false },
        }
    }

    /// Parses `3`, `"3"`, `"#3"`, `"cat3"`, `"spy"`.
    pub fn parse(v: &toml::Value) -> Option<Token> {
        let s = match v {
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::String(s) => s.trim().trim_start_matches('#').to_ascii_lowercase().replace([' ', '#'], ""),
            _ => return None,
        };
        match s.as_str() {
            "cat3" => Some(Token::Cat3),
            "cat5" => Some(Token::Cat5),
            "spy" => Some(Token::Spy),
            _ => s.parse::<u8>().ok().filter(|n| (1..=7).contains(n)).map(Token::N),
        }
    }

    /// As an order-file value: an integer for #1-#7, else a string.
    pub fn value(self) -> toml::Value {
        match self {
            Token::N(n) => toml::Value::Integer(n as i64),
            t => toml::Value::String(t.key()),
        }
    }
}

/// How many play, and how (option `players`, `mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Four players, seats white-1, white-2, red-1, red-2 (the rulebook's basic game).
    Four,
    /// Three players: the same four seats, one player holding both seats of one team (3-Player Rules).
    Three,
    /// Two players, advanced: the same four seats, each player holding both seats of a team.
    TwoAdvanced,
    /// Two players, basic: seats `white` and `red`, one hand each, any character per move, outer
    /// columns out of play (2-Player Rules, Basic).
    TwoBasic,
}

/// One seat: a hand of cards and a set of tokens (a player holds one or two seats).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seat {
    /// The role, e.g. `"white-1"` (or `"white"` in the basic 2-player game).
    pub role: String,
    /// Its team.
    pub team: Team,
    /// 1 or 2 (0 in the basic 2-player game: the seat moves any of its team's characters).
    pub number: u8,
    /// Its action cards (all return to hand at cleanup, so the hand is always the whole set).
    pub cards: Vec<Card>,
    /// Priority tokens behind the screen (available to plan), sorted.
    pub tokens: Vec<Token>,
    /// Discarded tokens, face up, in discard order.
    pub discarded: Vec<Token>,
}

/// Where a team flag is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlagAt {
    /// Lying on a space.
    Space(Sq),
    /// Carried by the named character.
    Carried(String),
}

/// One character pawn and its card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Character {
    /// Pawn colour, e.g. "Green".
    pub name: String,
    /// Its team.
    pub team: Team,
    /// The seat number whose runner it is; `None` for the defender.
    pub seat: Option<u8>,
    /// Where it stands.
    pub at: Sq,
    /// Boost tokens on its card (at most 2).
    pub boosts: u8,
    /// Its own character flags still on its card (2 at the start).
    pub flags_left: u8,
    /// Names of the opposing characters whose flag it holds.
    pub holds: Vec<String>,
    /// Its ability (used only with abilities on, and only by a runner).
    pub ability: Option<Ability>,
    /// Caught in a trap (Character Abilities, Trap) until a reset token selects it.
    #[serde(default)]
    pub trapped: bool,
    /// Trap tokens (Tech Nerd) or tunnel tokens (Construction Worker) still in its supply.
    #[serde(default)]
    pub supply: u8,
}

/// True when `a` and `b` are the same text: `a == b` compared byte by byte in line, without a
/// branch on each byte, cheaper than the library comparison's call for names of a few letters
/// (the flag carrier's look-up in every win check of every move the built-in player tries).
fn same_name(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0, |differ, (x, y)| differ | (x ^ y)) == 0
}

impl Character {
    /// True for a runner.
    pub fn is_runner(&self) -> bool {
        self.seat.is_some()
    }
}

/// One planned move (Phase 1): a card, a token, the choices written in advance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MovePlan {
    /// The action card.
    pub card: Card,
    /// The priority token on it.
    pub token: Token,
    /// With a combo token, the second card from hand. Fixed at planning (Priority Tokens, Combo:
    /// "another from your hand"; at the table chosen when the move resolves): asking then would
    /// cost a mail round trip each time (our interpretation for mail).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub combo: Option<Card>,
    /// For a Copy card (played or as combo card), the card copied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy: Option<Card>,
    /// The alternatives, in order (the orders module gives the grammar).
    pub tries: Vec<String>,
    /// With a spy token, the opponent seat whose card the spy sees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spy_on: Option<String>,
}

/// One seat's plan for the round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// First and (unless only the reset token was left) second move.
    pub moves: Vec<MovePlan>,
    /// The teammate seat that should move first when the two tie on priority (optional).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tie_first: Option<String>,
    /// Alternate board: take the secret tunnel at the end of Phase 2 if on its entrance. Fixed at
    /// planning (Alternate Board Setup: "at the end of Phase 2 (and only then), you may move"):
    /// asking then would cost a mail round trip each round (our interpretation for mail).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub secret_tunnel: bool,
}

/// Where the round stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "stage")]
pub enum Stage {
    /// Before round 1 of a secret custom layout: each team sets up its half (Custom Layout).
    Layout,
    /// Phase 1: every seat plans.
    Plan,
    /// Phase 2, move `mv` (1 or 2): tokens revealed; waiting to resolve (or for a tie answer).
    Move {
        /// 1 or 2.
        mv: u8,
    },
    /// The game is over.
    Over,
}

/// The game state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// The board (shared, not copied, by the copies of a state: it never changes in a game).
    pub layout: Arc<Layout>,
    /// Players and seats.
    pub mode: Mode,
    /// Character abilities in use.
    pub abilities: bool,
    /// Columns out of play (the basic 2-player game's outer columns).
    pub out_columns: Vec<i32>,
    /// The seats in role order.
    pub seats: Vec<Seat>,
    /// The characters in layout order.
    pub chars: Vec<Character>,
    /// The team flags.
    pub flags: Teams<FlagAt>,
    /// Tunnel spaces on the board.
    pub tunnels: Vec<Sq>,
    /// Trap tokens on the board: space and the name of the character who placed it.
    #[serde(default)]
    pub traps: Vec<(Sq, String)>,
    /// The team holding the tiebreak marker.
    pub tiebreak: Team,
    /// Round number, from 1.
    pub round: u32,
    /// Where the round stands.
    #[serde(flatten)]
    pub stage: Stage,
    /// This round's plans by role (secret until revealed move by move).
    pub plans: BTreeMap<String, Plan>,
    /// Cards each role has played (revealed) this round, in order.
    pub played: BTreeMap<String, Vec<Card>>,
    /// What each spy seat saw in the current move (secret to its team until the move resolves).
    #[serde(default)]
    pub spied: BTreeMap<String, String>,
    /// A team's answer to a same-team tie in the current move: the seat moving first.
    pub tie_answers: BTreeMap<String, String>,
    /// The public account of the round so far (and of the last round once a new one is planned).
    pub log: Vec<String>,
    /// The steps characters took in the round's account (name, from, to), cleared with it: the
    /// paths the picture of the board draws.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trail: Vec<(String, Sq, Sq)>,
    /// The team of the last seat that moved in Phase 2 so far (gets the tiebreak marker at cleanup).
    pub last_mover: Option<Team>,
    /// Set when the game is over.
    pub outcome: Option<Outcome>,
}

impl State {
    /// Index of the character named `name` (any case).
    pub fn char_named(&self, name: &str) -> Option<usize> {
        self.chars.iter().position(|c| c.name.eq_ignore_ascii_case(name.trim()))
    }

    /// The character on `q`.
    pub fn char_at(&self, q: Sq) -> Option<usize> {
        self.chars.iter().position(|c| c.at == q)
    }

    /// Index of the character named `name` as the state writes names (a flag's carrier, a trap's
    /// owner): the exact name first, the cheap look-up every move's win check makes; else as
    /// [`State::char_named`] finds it (names are unique in any case, so both agree).
    pub fn char_written(&self, name: &str) -> Option<usize> {
        self.chars.iter().position(|c| same_name(&c.name, name)).or_else(|| self.char_named(name))
    }

    /// Where team `t`'s flag is now (its carrier's space when carried).
    pub fn flag_space(&self, t: Team) -> Sq {
        match self.flags.get(t) {
            FlagAt::Space(q) => *q,
            FlagAt::Carried(n) => self.chars[self.char_written(n).expect("carrier exists")].at,
        }
    }

    /// The character carrying team `t`'s flag (the first whose name the flag names, as
    /// [`State::carried_by`] reads it).
    pub fn carrier(&self, t: Team) -> Option<usize> {
        match self.flags.get(t) {
            FlagAt::Carried(n) => self.chars.iter().position(|c| same_name(&c.name, n)),
            FlagAt::Space(_) => None,
        }
    }

    /// The team flag lying (not carried) on `q` (White's first). Both flags are looked at before
    /// a branch on either (every step of every move the built-in player tries asks).
    pub fn flag_lying_at(&self, q: Sq) -> Option<Team> {
        let on = |t: Team| matches!(self.flags.get(t), FlagAt::Space(p) if *p == q);
        let (white, red) = (on(Team::White), on(Team::Red));
        if !(white | red) {
            return None;
        }
        Some(if white { Team::White } else { Team::Red })
    }

    /// The team flag that character `i` carries.
    pub fn carried_by(&self, i: usize) -> Option<Team> {
        let n = &self.chars[i].name;
        Team::ALL.into_iter().find(|&t| matches!(self.flags.get(t), FlagAt::Carried(c) if c == n))
    }

    /// True when `q` is on the board and in play.
    pub fn in_play(&self, q: Sq) -> bool {
        q.c >= 0 && q.r >= 0 && q.c < self.layout.columns && q.r < self.layout.rows && !self.out_columns.contains(&q.c)
    }

    /// The seat with role `role`.
    pub fn seat(&self, role: &str) -> Option<&Seat> {
        self.seats.iter().find(|s| s.role == role)
    }

    /// The characters `role` may select for a move: its runner or its team's defender (any of the
    /// team's three in the basic 2-player game; Flag Dash, Move Characters and 2-Player Rules).
    pub fn movable(&self, role: &str) -> Vec<usize> {
        self.movable_iter(role).collect()
    }

    /// [`State::movable`] without making a list, in the same order (none for an unknown role).
    pub fn movable_iter<'a>(&'a self, role: &str) -> impl Iterator<Item = usize> + 'a {
        self.seat(role).into_iter().flat_map(move |seat| {
            (0..self.chars.len()).filter(move |&i| {
                let c = &self.chars[i];
                c.team == seat.team && (seat.number == 0 || c.seat.is_none() || c.seat == Some(seat.number))
            })
        })
    }

    /// The runner of `role` (its own character); `None` in the basic 2-player game.
    pub fn runner_of(&self, role: &str) -> Option<usize> {
        let seat = self.seat(role)?;
        self.chars.iter().position(|c| c.team == seat.team && c.seat == Some(seat.number))
    }

    /// The roles of team `t`.
    pub fn team_roles(&self, t: Team) -> Vec<&str> {
        self.seats.iter().filter(|s| s.team == t).map(|s| s.role.as_str()).collect()
    }
}
