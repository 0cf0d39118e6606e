//! The scenario: map, counters, cards and the numbers of the rules, read from TOML and checked.
//!
//! The rulebook prints none of the components, so the shipped `scenarios/gettysburg-campaign.toml`
//! is a reconstruction; an owner of the printed game enters the real ones there, not in code.

use serde::{Deserialize, Serialize};

use super::side::Side;
use crate::game::GameError;

/// A whole scenario, as in the TOML file (and kept inside the state, so a state is self-contained).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Shown in reports.
    pub title: String,
    /// The numbers of the rules.
    pub rules: RuleNumbers,
    /// Towns and roads.
    pub map: Map,
    /// The Confederate army.
    pub confederate: Army,
    /// The Union army.
    pub union: Army,
}

/// The numbers the rules use (Gettysburg Campaign §4, §9, §10).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleNumbers {
    /// Points the Confederates need to win (§4).
    pub victory_points: u32,
    /// The last turn; the game ends after its combat phase (§10).
    pub last_turn: u32,
    /// Combat strength per automatic hit of the defender (§9 1).
    pub defender_divisor: u32,
    /// Combat strength per automatic hit of the attacker, by number of distinct roads attacked from
    /// (entry 0 = one road); more roads than entries use the last entry (§9 2).
    pub attack_divisors: Vec<u32>,
    /// Upper limit of dice in one firing under the optional firing rule (§9).
    pub optional_fire_max_dice: u32,
}

/// The map: towns (in display order) and the roads between them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Map {
    /// Every road joins two towns and is usable both ways.
    pub roads: Vec<[String; 2]>,
    /// The towns; their order is the order of lists and defaults.
    pub towns: Vec<Town>,
}

/// One town of the map.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Town {
    /// Unique name, e.g. `"Gettysburg"`.
    pub name: String,
    /// Points a Confederate corps scores on first entering the town (§4).
    pub points: u32,
    /// Where the picture of the board draws the town: pixels from the left (none: the picture
    /// places the towns on a circle).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x: Option<u32>,
    /// Where the picture draws the town: pixels from the top.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub y: Option<u32>,
}

/// One side's counters and cards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Army {
    /// The town every corps of the side starts in (§3).
    pub start: String,
    /// How many cards the side plays per command phase (§6).
    pub cards_to_play: u32,
    /// The army commander (Lee, Meade): a card half naming him commands any one corps, once per
    /// game, and that corps may move twice (§6, §8).
    pub army_commander: String,
    /// The corps, in display order.
    pub corps: Vec<CorpsSetup>,
    /// The hand (§3); every card has two halves naming commanders (§6).
    pub cards: Vec<Card>,
}

/// One corps counter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorpsSetup {
    /// The name order files use, unique within the side, e.g. `"XI"`.
    pub id: String,
    /// The corps commander a card half names, e.g. `"Howard"`.
    pub commander: String,
    /// Combat strength (§9), 1 to [`MAX_STRENGTH`].
    pub strength: u32,
}

/// One command card: the half played upward names the commander who takes the command (§6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Card {
    /// The upper half as printed.
    pub upper: String,
    /// The lower half as printed.
    pub lower: String,
}

impl Card {
    /// The commander named by half `upper` (true) or the lower half (false).
    pub fn half(&self, upper: bool) -> &str {
        if upper { &self.upper } else { &self.lower }
    }
}

/// Words order files use as values, so no town may be named like them.
const RESERVED: &[&str] = &["stay", "defend", "vacate"];

/// The largest combat strength a corps may have. The rulebook's are small (§9's example: three
/// corps of 13 in all), and the built-in players' look-ahead works out every pair of strengths, so
/// a mistyped `5000000` is refused by its field rather than making a game take hours or exhaust
/// memory.
pub const MAX_STRENGTH: u32 = 99;

fn err(field: impl AsRef<str>, message: impl AsRef<str>) -> GameError {
    GameError::Scenario(format!("{}: {}", field.as_ref(), message.as_ref()))
}

impl Scenario {
    /// Parses and checks scenario text.
    ///
    /// Errors: [`GameError::Scenario`] naming the field (TOML syntax and missing/unknown fields come
    /// from the TOML reader with their line; consistency errors name the dotted field).
    pub fn parse(text: &str) -> Result<Scenario, GameError> {
        let s: Scenario = toml::from_str(text).map_err(|e| GameError::Scenario(e.to_string().trim_end().to_string()))?;
        s.validate()?;
        Ok(s)
    }

    fn validate(&self) -> Result<(), GameError> {
        let r = &self.rules;
        if r.victory_points == 0 {
            return Err(err("rules.victory_points", "must be at least 1"));
        }
        if r.last_turn == 0 {
            return Err(err("rules.last_turn", "must be at least 1"));
        }
        if r.defender_divisor == 0 {
            return Err(err("rules.defender_divisor", "must be at least 1"));
        }
        if r.attack_divisors.is_empty() {
            return Err(err("rules.attack_divisors", "give at least the divisor for an attack along one road"));
        }
        if let Some(i) = r.attack_divisors.iter().position(|&d| d == 0) {
            return Err(err(format!("rules.attack_divisors[{i}]"), "must be at least 1"));
        }
        if r.optional_fire_max_dice == 0 {
            return Err(err("rules.optional_fire_max_dice", "must be at least 1"));
        }
        if self.map.towns.len() < 2 {
            return Err(err("map.towns", "the map needs at least two towns"));
        }
        for (i, t) in self.map.towns.iter().enumerate() {
            let f = format!("map.towns[{i}].name");
            if t.name.trim().is_empty() || t.name.trim() != t.name {
                return Err(err(f, "a town name must be non-empty, without leading or trailing spaces"));
            }
            if RESERVED.iter().any(|w| w.eq_ignore_ascii_case(&t.name)) {
                return Err(err(f, format!("\"{}\" is a word order files use; rename the town", t.name)));
            }
            if self.map.towns[..i].iter().any(|o| o.name.eq_ignore_ascii_case(&t.name)) {
                return Err(err(f, format!("town \"{}\" is listed twice (names are compared ignoring case)", t.name)));
            }
        }
        for (i, [a, b]) in self.map.roads.iter().enumerate() {
            let f = format!("map.roads[{i}]");
            for t in [a, b] {
                if self.town(t).is_none() {
                    return Err(err(&f, format!("unknown town \"{t}\" (towns are listed in [[map.towns]])")));
                }
            }
            if a == b {
                return Err(err(&f, "a road must join two different towns"));
            }
            if self.map.roads[..i].iter().any(|[c, d]| (c == a && d == b) || (c == b && d == a)) {
                return Err(err(&f, format!("the road {a}-{b} is listed twice")));
            }
        }
        for side in Side::ALL {
            self.validate_army(side)?;
        }
        Ok(())
    }

    fn validate_army(&self, side: Side) -> Result<(), GameError> {
        let a = self.army(side);
        let p = side.role();
        if self.town(&a.start).is_none() {
            return Err(err(format!("{p}.start"), format!("unknown town \"{}\"", a.start)));
        }
        if a.corps.is_empty() {
            return Err(err(format!("{p}.corps"), "the side needs at least one corps"));
        }
        let key = army_key(&a.army_commander);
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || ORDER_KEYS.contains(&key.as_str()) {
            return Err(err(
                format!("{p}.army_commander"),
                "must be a name of letters (order files use it in lower case as a key, e.g. lee = \"II\")",
            ));
        }
        for (i, c) in a.corps.iter().enumerate() {
            let f = format!("{p}.corps[{i}]");
            if c.id.trim().is_empty() || c.id.trim() != c.id {
                return Err(err(format!("{f}.id"), "must be non-empty, without leading or trailing spaces"));
            }
            if c.id.eq_ignore_ascii_case("stay") {
                return Err(err(format!("{f}.id"), "\"stay\" is a word order files use"));
            }
            if a.corps[..i].iter().any(|o| o.id.eq_ignore_ascii_case(&c.id)) {
                return Err(err(format!("{f}.id"), format!("corps id \"{}\" is used twice", c.id)));
            }
            if c.commander.eq_ignore_ascii_case(&a.army_commander)
                || a.corps[..i].iter().any(|o| o.commander.eq_ignore_ascii_case(&c.commander))
            {
                return Err(err(format!("{f}.commander"), format!("commander \"{}\" is used twice", c.commander)));
            }
            if c.strength == 0 || c.strength > MAX_STRENGTH {
                return Err(err(format!("{f}.strength"), format!("must be between 1 and {MAX_STRENGTH}")));
            }
        }
        if a.cards.is_empty() {
            return Err(err(format!("{p}.cards"), "the side needs at least one card"));
        }
        if a.cards_to_play == 0 || a.cards_to_play as usize > a.cards.len() {
            return Err(err(format!("{p}.cards_to_play"), format!("must be between 1 and the number of cards in the hand ({})", a.cards.len())));
        }
        let mut seen: Vec<&str> = Vec::new();
        for (i, card) in a.cards.iter().enumerate() {
            for (half, name) in [("upper", &card.upper), ("lower", &card.lower)] {
                let f = format!("{p}.cards[{i}].{half}");
                let known = name.eq_ignore_ascii_case(&a.army_commander) || a.corps.iter().any(|c| c.commander.eq_ignore_ascii_case(name));
                if !known {
                    return Err(err(f, format!("\"{name}\" is neither a corps commander of the side nor its army commander")));
                }
                if seen.iter().any(|s| s.eq_ignore_ascii_case(name)) {
                    return Err(err(f, format!("\"{name}\" is on two card halves; order files name a half by its commander")));
                }
                seen.push(name);
            }
        }
        Ok(())
    }

    /// The army of `side`.
    pub fn army(&self, side: Side) -> &Army {
        match side {
            Side::Confederate => &self.confederate,
            Side::Union => &self.union,
        }
    }

    /// The town named `name` exactly.
    pub fn town(&self, name: &str) -> Option<&Town> {
        self.map.towns.iter().find(|t| t.name == name)
    }

    /// The scenario's spelling of a town a player typed (ignoring case), if it exists.
    pub fn town_named(&self, typed: &str) -> Option<&str> {
        self.map.towns.iter().find(|t| t.name.eq_ignore_ascii_case(typed.trim())).map(|t| t.name.as_str())
    }

    /// Position of a town in the map's list (for ordering); towns not found sort last.
    pub fn town_rank(&self, name: &str) -> usize {
        self.map.towns.iter().position(|t| t.name == name).unwrap_or(usize::MAX)
    }

    /// Points of a town (0 for an unknown name).
    pub fn points(&self, town: &str) -> u32 {
        self.town(town).map_or(0, |t| t.points)
    }

    /// True when a road joins `a` and `b`.
    pub fn adjacent(&self, a: &str, b: &str) -> bool {
        self.map.roads.iter().any(|[c, d]| (c == a && d == b) || (c == b && d == a))
    }

    /// The towns a road joins to `town`, in map order.
    pub fn neighbors(&self, town: &str) -> Vec<String> {
        // The far ends of the roads from `town` first (one pass over the roads), then map order.
        let ends: Vec<&str> = self.map.roads.iter().filter_map(|[c, d]| if c == town { Some(d.as_str()) } else if d == town { Some(c.as_str()) } else { None }).collect();
        self.map.towns.iter().filter(|t| ends.contains(&t.name.as_str())).map(|t| t.name.clone()).collect()
    }

    /// The attacker's divisor for an attack along `roads` distinct roads (§9 2): the table entry,
    /// or its last entry beyond the table (our floor: the rulebook stops at three roads).
    pub fn attack_divisor(&self, roads: usize) -> u32 {
        let d = &self.rules.attack_divisors;
        d[roads.clamp(1, d.len()) - 1]
    }
}

/// Top-level order keys, which an army commander's key must not shadow.
pub const ORDER_KEYS: &[&str] = &[
    "cards", "moves", "standing", "decision", "vacate_to", "combat_order", "automatic_hits", "retreat_to", "remove",
];

/// The order-file key that names the corps an army commander commands: his name in lower case with
/// spaces and dots turned into `_` (`"Lee"` -> `lee`).
pub fn army_key(name: &str) -> String {
    name.trim().to_lowercase().chars().map(|c| if c == ' ' || c == '.' { '_' } else { c }).collect()
}
