//! The game state: the companies on the map, the activation bag and its placement rows, the
//! token being resolved, the player's standing orders, and where the day stands.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::hex::Space;
use super::scenario::Scenario;
use std::sync::Arc;
use crate::game::Outcome;

/// A side: the First Minnesota (role `union`) or the Confederates (moved by the engine).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The First Minnesota, the player.
    Union,
    /// The Confederates, moved by the engine (Confederate Activations).
    Confederate,
}

impl Side {
    /// "First Minnesota" / "Confederate".
    pub fn name(self) -> &'static str {
        match self {
            Side::Union => "First Minnesota",
            Side::Confederate => "Confederate",
        }
    }
    /// The other side.
    pub fn other(self) -> Side {
        match self {
            Side::Union => Side::Confederate,
            Side::Confederate => Side::Union,
        }
    }
}

/// The one role of the game.
pub const ROLE: &str = "union";

/// One company counter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Company {
    /// Owner.
    pub side: Side,
    /// Its letter.
    pub letter: String,
    /// Str now; 0 means the company is out of the fight (removed from the map).
    pub str: u32,
    /// Str at the start of the day.
    pub start_str: u32,
    /// Where it is; `None` once removed (Str 0) or broken through.
    pub at: Option<Space>,
    /// Whether it still has its gun marker.
    pub gun: bool,
    /// Whether it holds its side's colors.
    pub colors: bool,
    /// Set when a Confederate company reached the objective.
    #[serde(default)]
    pub broke_through: bool,
}

/// An activation token (Round Structure 1).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Token {
    /// A letter token: activates the company with that letter on each side.
    Letter(String),
    /// A colors token: activates the company holding each side's colors.
    Colors,
}

impl Token {
    /// "letter C" / "colors".
    pub fn name(&self) -> String {
        match self {
            Token::Letter(l) => format!("letter {l}"),
            Token::Colors => "colors".into(),
        }
    }
}

/// The token being resolved and which sides have activated for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Activation {
    /// The token.
    pub token: Token,
    /// The face that came up: that side activates first.
    pub first: Side,
    /// The sides done with this token.
    pub done: Vec<Side>,
}

/// Which move a company's standing order makes when nothing else applies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MoveRule {
    /// Up to two spaces toward the nearest Confederate company.
    Nearest,
    /// Stay (pass).
    Hold,
    /// Up to two spaces toward this space, then stay there.
    To(Space),
    /// Ask the player (used to leave one company out of an `all` order).
    Ask,
}

/// A company's standing order (the player's answer ahead of time), or the `all` entry. A field not
/// given in a company's own entry is taken from `all` ([`State::standing_for`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Standing {
    /// Melee the weakest adjacent Confederate company with this many tokens; 0 ("off"): never,
    /// whatever `all` says.
    pub melee: Option<u32>,
    /// Shoot the nearest Confederate company within `range` with this many tokens; 0 ("off"):
    /// never, whatever `all` says.
    pub shoot: Option<u32>,
    /// Longest distance the standing shot is taken at (default 2).
    pub range: Option<u32>,
    /// What to do when neither attack applies.
    #[serde(rename = "move")]
    pub movement: Option<MoveRule>,
}

/// The result of a day (campaign games keep July 2's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DayResult {
    /// Scenario name.
    pub name: String,
    /// Whether the First Minnesota won the day.
    pub won: bool,
    /// One line.
    pub summary: String,
    /// First Minnesota Str lost that day.
    pub str_lost: u32,
    /// The same in men (Str x men per Str).
    pub men_lost: u32,
}

/// The whole state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    /// The day being played (shared, not copied, by the copies of a state: it never changes
    /// within a day).
    pub scenario: Arc<Scenario>,
    /// Campaign games: the day still to come (July 3), played with the survivors.
    pub next: Option<Arc<Scenario>>,
    /// Days already finished in this game.
    pub days: Vec<DayResult>,
    /// Every company: First Minnesota first, then Confederates, in scenario order.
    pub companies: Vec<Company>,
    /// Tokens in the activation bag, sorted (the order draws index into).
    pub bag: Vec<Token>,
    /// Tokens removed from the game (no company of either side has the letter).
    pub removed: Vec<Token>,
    /// Top placement row: letter tokens drawn this round, left to right.
    pub letters_row: Vec<String>,
    /// Bottom placement row: colors tokens drawn this round (0 to 3).
    pub colors_row: u32,
    /// The round (bag) being played, from 1.
    pub round: u32,
    /// The token being resolved.
    pub current: Option<Activation>,
    /// Standing orders by company letter, or `all` for every company without its own.
    pub standing: BTreeMap<String, Standing>,
    /// The First Minnesota company the engine waits on (index into `companies`).
    pub asking: Option<usize>,
    /// Whether the Confederate colors were taken.
    pub colors_taken: bool,
    /// Set when the game is over.
    pub outcome: Option<Outcome>,
    /// The last step's account in short: one line per activation token (both sides' activations
    /// and what came of them), and the bag resets and day ends between them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summary: Vec<String>,
}

impl State {
    /// The company at `p`, if any.
    pub fn at(&self, p: Space) -> Option<usize> {
        self.companies.iter().position(|c| c.at == Some(p))
    }

    /// The company of `side` with letter `l` still on the map.
    pub fn by_letter(&self, side: Side, l: &str) -> Option<usize> {
        self.companies.iter().position(|c| c.side == side && c.at.is_some() && c.letter.eq_ignore_ascii_case(l.trim()))
    }

    /// Companies of `side` still on the map.
    pub fn active(&self, side: Side) -> Vec<usize> {
        (0..self.companies.len()).filter(|&i| self.companies[i].side == side && self.companies[i].at.is_some()).collect()
    }

    /// The company of `side` holding its colors, if on the map.
    pub fn colors_of(&self, side: Side) -> Option<usize> {
        self.companies.iter().position(|c| c.side == side && c.at.is_some() && c.colors)
    }

    /// Enemy companies next to company `i`.
    pub fn adjacent_enemies(&self, i: usize) -> Vec<usize> {
        let Some(p) = self.companies[i].at else { return Vec::new() };
        let side = self.companies[i].side.other();
        self.active(side).into_iter().filter(|&j| self.companies[j].at.is_some_and(|q| q.adjacent(p))).collect()
    }

    /// "First Minnesota company A" / "Confederate company C".
    pub fn label(&self, i: usize) -> String {
        let c = &self.companies[i];
        format!("{} company {}", c.side.name(), c.letter)
    }

    /// Confederate companies that broke through today.
    pub fn breakthroughs(&self) -> u32 {
        self.companies.iter().filter(|c| c.broke_through).count() as u32
    }

    /// First Minnesota Str lost today.
    pub fn str_lost(&self) -> u32 {
        self.companies.iter().filter(|c| c.side == Side::Union).map(|c| c.start_str - c.str).sum()
    }

    /// The standing order in force for company `i`: each field from its own entry, else from
    /// `all`; "off" (0) attacks come out as `None`. `None` when neither entry exists.
    pub fn standing_for(&self, i: usize) -> Option<Standing> {
        let own = self.standing.get(&self.companies[i].letter);
        let all = self.standing.get("all");
        if own.is_none() && all.is_none() {
            return None;
        }
        let pick = |f: fn(&Standing) -> Option<u32>| own.and_then(f).or_else(|| all.and_then(f)).filter(|&n| n > 0);
        Some(Standing {
            melee: pick(|x| x.melee),
            shoot: pick(|x| x.shoot),
            range: pick(|x| x.range),
            movement: own.and_then(|x| x.movement.clone()).or_else(|| all.and_then(|x| x.movement.clone())),
        })
    }
}
