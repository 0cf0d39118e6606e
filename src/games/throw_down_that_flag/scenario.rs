//! The scenario of one day: the ground, the companies of both sides, the success bag and the
//! day's conditions, read from TOML and checked.
//!
//! The rulebook prints none of these components (it describes only the procedures), so the shipped
//! `scenarios/throw-down-that-flag-july-2.toml` and `-july-3.toml` are reconstructions from the
//! historical record; an owner of the printed game enters the real values there, not in code.

use serde::{Deserialize, Serialize};

use super::hex::Space;
use crate::game::GameError;

/// One day's scenario, as in the TOML file (kept inside the state, so a state is self-contained).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short name used by `--option scenario=NAME`, e.g. `"july-2"`.
    pub name: String,
    /// Shown in reports.
    pub title: String,
    /// The numbers and conditions of the day.
    pub rules: DayRules,
    /// The ground.
    pub map: Map,
    /// The success bag (Player Activations: Shoot, Melee).
    pub success_bag: SuccessBag,
    /// The First Minnesota's companies.
    pub union: Vec<CompanySetup>,
    /// The Confederate companies.
    pub confederate: Vec<CompanySetup>,
}

/// The numbers and victory/defeat conditions of a day (the rulebook leaves them to the scenario).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DayRules {
    /// Rounds (bag resets) the First Minnesota must last; after the last one the day is won.
    pub rounds: u32,
    /// Spaces a Confederate company moves when it activates.
    pub confederate_move: u32,
    /// Confederate companies reaching the objective that lose the day.
    pub breakthrough: u32,
    /// Whether taking the Confederate colors in melee wins the day at once.
    pub colors_win: bool,
    /// Upper limit of tokens pulled in one aimed shot (the rulebook: ten). Melee has none but the
    /// bag's size ([`Scenario::token_limit`]).
    pub max_tokens: u32,
    /// Men one point of Str stands for, to state casualties in men.
    pub men_per_str: u32,
}

/// A hex map of `columns` x `rows` spaces (rows from 1 at the Union line; see [`super::hex`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Map {
    /// Columns, named A, B, ... from the left of the Union line.
    pub columns: u32,
    /// Rows, numbered 1 (the Union line) to `rows` (where the Confederates come from).
    pub rows: u32,
    /// Spaces that are the Confederate objective: a company entering one breaks through.
    pub objective: Vec<String>,
    /// What the ground is, by row, for the report (row number as text -> description).
    #[serde(default)]
    pub landmarks: std::collections::BTreeMap<String, String>,
    /// Where the picture of the board draws the hexes (none: the picture's defaults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub picture: Option<HexPicture>,
}

/// The hex layout of the picture of the board, in pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HexPicture {
    /// The distance from a hex's centre to a corner (pointy-top hexes).
    pub size: u32,
    /// The centre of space A1 from the left.
    pub origin_x: u32,
    /// The centre of space A1 from the top.
    pub origin_y: u32,
}

/// The success bag's contents by symbol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuccessBag {
    /// Tokens showing a First Minnesota success.
    pub union_success: u32,
    /// Tokens showing a First Minnesota flame.
    pub union_flame: u32,
    /// Tokens showing a Confederate success.
    pub confederate_success: u32,
    /// Tokens showing a Confederate flame.
    pub confederate_flame: u32,
    /// Tokens showing nothing.
    pub blank: u32,
}

impl SuccessBag {
    /// All tokens in the bag (at most [`MAX_BAG_TOKENS`] in a checked scenario).
    pub fn total(&self) -> u32 {
        self.counts().iter().fold(0u32, |sum, &(_, n)| sum.saturating_add(n))
    }

    /// Each symbol's field name and count.
    fn counts(&self) -> [(&'static str, u32); 5] {
        [
            ("union_success", self.union_success),
            ("union_flame", self.union_flame),
            ("confederate_success", self.confederate_success),
            ("confederate_flame", self.confederate_flame),
            ("blank", self.blank),
        ]
    }
}

/// The most tokens the success bag may hold, and so each symbol's count. The printed game's bag
/// holds a few dozen chits (the shipped reconstructions: 26); every pull draws from the whole bag,
/// so a mistyped `4294967295` is refused by its field rather than exhausting memory.
pub const MAX_BAG_TOKENS: u32 = 1000;

/// The largest Str of a company (the shipped companies: 1 to 3).
pub const MAX_STR: u32 = 99;

/// The most men one point of Str may stand for (the shipped days: 11 and 10); with at most 52
/// companies of [`MAX_STR`] the casualties in men stay far inside the numbers reports print.
pub const MAX_MEN_PER_STR: u32 = 1000;

/// The most men the Union companies' Str may stand for, so the casualties of two days (a
/// campaign) are counted without overflow in any game, an old one's too.
pub const MAX_MEN: u64 = (u32::MAX / 2) as u64;

/// The most rounds a day may last (the shipped days: 4 and 5), so a day always ends.
pub const MAX_ROUNDS: u32 = 100;

/// The most spaces a Confederate company may move per activation (the longest map's rows).
pub const MAX_CONFEDERATE_MOVE: u32 = 60;

/// The longest scenario name, and the longest title, landmark or note (characters).
const MAX_NAME: usize = 40;
const MAX_TEXT: usize = 200;

/// The largest picture of the board (pixels each way) that can be drawn.
const MAX_PICTURE: u32 = 8000;

/// One company counter at the start of the day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompanySetup {
    /// Its letter, e.g. `"A"` (matches activation tokens).
    pub letter: String,
    /// Str: hits it can take.
    pub str: u32,
    /// Its starting space, e.g. `"E3"`.
    pub at: String,
    /// Whether it starts with a gun marker.
    #[serde(default = "yes")]
    pub gun: bool,
    /// Whether it holds its side's colors (exactly one company per side does).
    #[serde(default)]
    pub colors: bool,
    /// Who it was, for the report.
    #[serde(default)]
    pub note: String,
}

fn yes() -> bool {
    true
}

fn err(field: impl AsRef<str>, message: impl AsRef<str>) -> GameError {
    GameError::Scenario(format!("{}: {}", field.as_ref(), message.as_ref()))
}

impl Scenario {
    /// The most tokens one attack may pull: an aimed shot up to `rules.max_tokens` (Player
    /// Activations, Shoot: "up to a maximum of 10"); a melee as many as the success bag holds
    /// (Melee: "the number of tokens you will pull", no maximum given).
    pub fn token_limit(&self, melee: bool) -> u32 {
        if melee { self.success_bag.total() } else { self.rules.max_tokens }
    }

    /// Parses and checks scenario text as any game's setup needs it (an existing game's too: the
    /// audit sets it up again): what keeps the bag, the casualties and the rules' arithmetic safe.
    ///
    /// Errors: [`GameError::Scenario`] naming the field.
    pub fn parse(text: &str) -> Result<Scenario, GameError> {
        Self::read(text, false)
    }

    /// Parses and checks scenario text for a new game: [`Scenario::parse`]'s checks and the limits
    /// a new game keeps (text, Str, rounds, moves, objective and landmark names, picture, a
    /// breakthrough that can happen), which games made before a limit may exceed.
    ///
    /// Errors: as [`Scenario::parse`].
    pub fn parse_new(text: &str) -> Result<Scenario, GameError> {
        Self::read(text, true)
    }

    fn read(text: &str, new: bool) -> Result<Scenario, GameError> {
        let s: Scenario = toml::from_str(text).map_err(|e| GameError::Scenario(e.to_string().trim_end().to_string()))?;
        s.validate(new)?;
        Ok(s)
    }

    /// The space named `name` on this map, if it is one.
    pub fn space(&self, name: &str) -> Option<Space> {
        Space::parse(name).filter(|p| p.col < self.map.columns && p.row < self.map.rows)
    }

    /// The objective spaces.
    pub fn objective(&self) -> Vec<Space> {
        self.map.objective.iter().filter_map(|n| self.space(n)).collect()
    }

    /// The checks; `new` adds those of a new game only ([`Scenario::parse_new`]).
    fn validate(&self, new: bool) -> Result<(), GameError> {
        self.validate_text(new)?;
        self.validate_numbers(new)?;
        // Each bound at its own field, so that the error names its line (tester15 T15-6).
        if !(2..=26).contains(&self.map.columns) {
            return Err(err("map.columns", "must be 2 to 26 (and rows 2 to 60)"));
        }
        if !(2..=60).contains(&self.map.rows) {
            return Err(err("map.rows", "must be 2 to 60 (and columns 2 to 26)"));
        }
        self.validate_bag()?;
        self.validate_map(new)?;
        self.validate_companies(new)?;
        self.validate_men()?;
        let n = self.confederate.len() as u32;
        if new && self.rules.breakthrough > n {
            return Err(err("rules.breakthrough", format!("is more than the {n} Confederate companies: they could never break through")));
        }
        Ok(())
    }

    /// Names, titles, landmarks and notes (a new game's): one line each, of a sensible length.
    fn validate_text(&self, new: bool) -> Result<(), GameError> {
        if self.name.trim().is_empty() {
            return Err(err("name", "must not be empty"));
        }
        if !new {
            return Ok(());
        }
        crate::text::check_shown(&self.name, MAX_NAME).map_err(|m| err("name", m))?;
        crate::text::check_shown(&self.title, MAX_TEXT).map_err(|m| err("title", m))?;
        for (k, t) in &self.map.landmarks {
            crate::text::check_shown(t, MAX_TEXT).map_err(|m| err(format!("map.landmarks.{k}"), m))?;
        }
        for (side, list) in [("union", &self.union), ("confederate", &self.confederate)] {
            for (i, c) in list.iter().enumerate() {
                crate::text::check_shown(&c.note, MAX_TEXT).map_err(|m| err(format!("{side}[{i}].note"), m))?;
            }
        }
        Ok(())
    }

    /// The numbers of `[rules]`: at least 1, at most their limits (the bag's in any game, the
    /// others in a new game: [`Scenario::validate_men`] keeps any game's casualties countable).
    fn validate_numbers(&self, new: bool) -> Result<(), GameError> {
        let r = &self.rules;
        let new_only = |max| if new { max } else { u32::MAX };
        let limits = [
            ("rules.rounds", r.rounds, new_only(MAX_ROUNDS)),
            ("rules.confederate_move", r.confederate_move, new_only(MAX_CONFEDERATE_MOVE)),
            ("rules.breakthrough", r.breakthrough, u32::MAX),
            ("rules.max_tokens", r.max_tokens, MAX_BAG_TOKENS),
            ("rules.men_per_str", r.men_per_str, new_only(MAX_MEN_PER_STR)),
        ];
        for (f, v, max) in limits {
            if v == 0 {
                return Err(err(f, "must be at least 1"));
            }
            if v > max {
                return Err(err(f, format!("is {v}; at most {max}")));
            }
        }
        Ok(())
    }

    /// The success bag: each count and the sum at most [`MAX_BAG_TOKENS`], and enough tokens for
    /// the largest aimed shot.
    fn validate_bag(&self) -> Result<(), GameError> {
        let mut total = 0u32;
        for (f, n) in self.success_bag.counts() {
            total = total.checked_add(n).filter(|&t| t <= MAX_BAG_TOKENS).ok_or_else(|| {
                err(format!("success_bag.{f}"), format!("the bag would hold more than {MAX_BAG_TOKENS} tokens (the printed game's holds a few dozen)"))
            })?;
        }
        if total < self.rules.max_tokens {
            return Err(err("success_bag", format!("holds {total} tokens, fewer than rules.max_tokens")));
        }
        Ok(())
    }

    /// The objective (spaces of the map; in a new game each once, as the map names them), and in
    /// a new game the landmarks (row numbers of the map) and the picture (drawable).
    fn validate_map(&self, new: bool) -> Result<(), GameError> {
        let m = &self.map;
        if m.objective.is_empty() {
            return Err(err("map.objective", "give one or more spaces of the map, e.g. \"A1\""));
        }
        for (i, n) in m.objective.iter().enumerate() {
            let f = format!("map.objective[{i}]");
            if self.space(n).is_none_or(|p| new && p.name() != *n) {
                return Err(err(f, format!("\"{n}\" is not a space of the map (a capital column letter and a row number, e.g. \"A1\")")));
            }
            if !new {
                continue;
            }
            if m.objective[..i].contains(n) {
                return Err(err(f, format!("\"{n}\" is listed twice")));
            }
        }
        if new {
            self.validate_picture()?;
        }
        Ok(())
    }

    /// A new game's landmarks (row numbers of the map) and picture (drawable).
    fn validate_picture(&self) -> Result<(), GameError> {
        let m = &self.map;
        for k in m.landmarks.keys() {
            if k.parse::<u32>().ok().filter(|r| (1..=m.rows).contains(r)).is_none_or(|r| r.to_string() != *k) {
                return Err(err(format!("map.landmarks.{k}"), format!("a landmark's key is a row number of the map, 1 to {}", m.rows)));
            }
        }
        if let Some(p) = m.picture {
            if !(10..=200).contains(&p.size) {
                return Err(err("map.picture.size", "must be between 10 and 200 pixels"));
            }
            let (w, h) = super::picture::canvas(p.size, p.origin_x, p.origin_y, m.columns, m.rows);
            if w > MAX_PICTURE || h > MAX_PICTURE {
                return Err(err("map.picture", format!("the picture of the board would be {w}x{h} pixels; at most {MAX_PICTURE} each way (smaller size or origin)")));
            }
        }
        Ok(())
    }

    /// The companies of both sides: letters, Str (in a new game at most [`MAX_STR`]) and starting
    /// spaces.
    fn validate_companies(&self, new: bool) -> Result<(), GameError> {
        let mut seen: Vec<Space> = Vec::new();
        for (side, list) in [("union", &self.union), ("confederate", &self.confederate)] {
            if list.is_empty() {
                return Err(err(side, "the side needs at least one company"));
            }
            if list.iter().filter(|c| c.colors).count() != 1 {
                return Err(err(side, "exactly one company holds the colors (colors = true)"));
            }
            for (i, c) in list.iter().enumerate() {
                let f = format!("{side}[{i}]");
                if c.letter.len() != 1 || !c.letter.chars().all(|ch| ch.is_ascii_uppercase()) {
                    return Err(err(format!("{f}.letter"), "one capital letter, e.g. \"A\""));
                }
                if list[..i].iter().any(|o| o.letter == c.letter) {
                    return Err(err(format!("{f}.letter"), format!("company {} is listed twice", c.letter)));
                }
                if c.str == 0 || (new && c.str > MAX_STR) {
                    return Err(err(format!("{f}.str"), format!("must be between 1 and {MAX_STR}")));
                }
                let Some(p) = self.space(&c.at) else {
                    return Err(err(format!("{f}.at"), format!("\"{}\" is not a space of the map", c.at)));
                };
                if seen.contains(&p) {
                    return Err(err(format!("{f}.at"), format!("two companies start on {}", c.at)));
                }
                if side == "confederate" && self.objective().contains(&p) {
                    return Err(err(format!("{f}.at"), "a Confederate company may not start on its objective"));
                }
                seen.push(p);
            }
        }
        Ok(())
    }

    /// The men the Union companies' Str stands for at most [`MAX_MEN`] (the casualties counted,
    /// Str lost and men, are the Union's: without this a game could count them wrapped).
    fn validate_men(&self) -> Result<(), GameError> {
        let str: u64 = self.union.iter().map(|c| u64::from(c.str)).sum();
        let men = str * u64::from(self.rules.men_per_str);
        if men > MAX_MEN {
            return Err(err("rules.men_per_str", format!("the Union companies' {str} Str would stand for {men} men; at most {MAX_MEN} can be counted")));
        }
        Ok(())
    }
}
