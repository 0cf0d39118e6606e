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

/// The most points a town may be worth (the shipped towns: 0 to 3); with the sum checked, the
/// Confederate score cannot overflow.
pub const MAX_POINTS: u32 = 99;

/// The last turn a scenario may set (the rulebook's game: 9 turns), so a game always ends.
pub const MAX_LAST_TURN: u32 = 100;

/// The most corps a side may have (the shipped armies: 3 and 4).
pub const MAX_CORPS: usize = 20;

/// Where the picture may place a town in a new game (`x`, `y`: pixels, from 60 to 2000 each), so
/// the town, its scored ring, a label of about 14 characters and two corps side by side are drawn
/// inside a picture that can be drawn (the shipped file's coordinate formula: +60 at the western
/// edge, +90 at the northern).
pub const CANVAS: std::ops::RangeInclusive<u32> = 60..=2000;

/// The longest town name (drawn on the map) and the longest other name or title (characters).
const MAX_TOWN_NAME: usize = 30;
const MAX_NAME: usize = 40;
const MAX_TITLE: usize = 100;

fn err(field: impl AsRef<str>, message: impl AsRef<str>) -> GameError {
    GameError::Scenario(format!("{}: {}", field.as_ref(), message.as_ref()))
}

impl Scenario {
    /// Parses and checks scenario text as any game's setup needs it (an existing game's too: the
    /// audit sets it up again): what keeps the rules' arithmetic and pictures safe.
    ///
    /// Errors: [`GameError::Scenario`] naming the field (TOML syntax and missing/unknown fields come
    /// from the TOML reader with their line; consistency errors name the dotted field).
    pub fn parse(text: &str) -> Result<Scenario, GameError> {
        Self::read(text, false)
    }

    /// Parses and checks scenario text for a new game: [`Scenario::parse`]'s checks and the limits
    /// a new game keeps (name lengths and characters, reserved words, canvas, corps, last turn,
    /// victory reachable), which games made before a limit may exceed.
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

    /// The checks; `new` adds those of a new game only ([`Scenario::parse_new`]).
    fn validate(&self, new: bool) -> Result<(), GameError> {
        let r = &self.rules;
        if r.victory_points == 0 {
            return Err(err("rules.victory_points", "must be at least 1"));
        }
        if r.last_turn == 0 || (new && r.last_turn > MAX_LAST_TURN) {
            return Err(err("rules.last_turn", format!("must be between 1 and {MAX_LAST_TURN}")));
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
        if new {
            crate::text::check_shown(&self.title, MAX_TITLE).map_err(|m| err("title", m))?;
        }
        self.validate_towns(new)?;
        self.validate_roads()?;
        for side in Side::ALL {
            self.validate_army(side, new)?;
        }
        if new {
            self.validate_victory()?;
        }
        Ok(())
    }

    /// The towns: names, points (always: the score must not overflow) and, in a new game, places
    /// on the picture.
    fn validate_towns(&self, new: bool) -> Result<(), GameError> {
        if self.map.towns.len() < 2 {
            return Err(err("map.towns", "the map needs at least two towns"));
        }
        let mut total = 0u32;
        for (i, t) in self.map.towns.iter().enumerate() {
            if t.points > MAX_POINTS {
                return Err(err(format!("map.towns[{i}].points"), format!("must be between 0 and {MAX_POINTS}")));
            }
            total = total.checked_add(t.points).ok_or_else(|| err(format!("map.towns[{i}].points"), "the towns' points add up to more than can be counted"))?;
            for (axis, v) in [("x", t.x), ("y", t.y)] {
                if new && v.is_some_and(|v| !CANVAS.contains(&v)) {
                    return Err(err(format!("map.towns[{i}].{axis}"), format!("must be between {} and {} pixels (the picture's canvas)", CANVAS.start(), CANVAS.end())));
                }
            }
            self.validate_town_name(i, t, new)?;
        }
        Ok(())
    }

    fn validate_town_name(&self, i: usize, t: &Town, new: bool) -> Result<(), GameError> {
        let f = format!("map.towns[{i}].name");
        if new {
            crate::text::check_shown(&t.name, MAX_TOWN_NAME).map_err(|m| err(&f, m))?;
        }
        if t.name.trim().is_empty() || t.name.trim() != t.name {
            return Err(err(f, "a town name must be non-empty, without leading or trailing spaces"));
        }
        if RESERVED.iter().any(|w| w.eq_ignore_ascii_case(&t.name)) {
            return Err(err(f, format!("\"{}\" is a word order files use; rename the town", t.name)));
        }
        if self.map.towns[..i].iter().any(|o| o.name.eq_ignore_ascii_case(&t.name)) {
            return Err(err(f, format!("town \"{}\" is listed twice (names are compared ignoring case)", t.name)));
        }
        Ok(())
    }

    /// The roads: between two different known towns, each once.
    fn validate_roads(&self) -> Result<(), GameError> {
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
        Ok(())
    }

    /// The game can be won and lost: the sides start in different towns, and the towns the
    /// Confederates can reach by road from their start hold the points they need (§4).
    fn validate_victory(&self) -> Result<(), GameError> {
        let start = &self.confederate.start;
        if start.eq_ignore_ascii_case(&self.union.start) {
            return Err(err("union.start", format!("both sides start in {start}; the sides start in different towns (§3)")));
        }
        let mut reached = vec![start.as_str()];
        let mut i = 0;
        while let Some(&town) = reached.get(i) {
            for [a, b] in &self.map.roads {
                let next = if a == town { b } else if b == town { a } else { continue };
                if !reached.contains(&next.as_str()) {
                    reached.push(next);
                }
            }
            i += 1;
        }
        let reachable: u32 = reached[1..].iter().map(|t| self.points(t)).sum();
        if self.rules.victory_points > reachable {
            let need = self.rules.victory_points;
            return Err(err("rules.victory_points", format!("is {need}, but the towns the Confederates can reach by road from {start} hold {reachable} points: they could never win")));
        }
        Ok(())
    }

    fn validate_army(&self, side: Side, new: bool) -> Result<(), GameError> {
        let a = self.army(side);
        let p = side.role();
        if self.town(&a.start).is_none() {
            return Err(err(format!("{p}.start"), format!("unknown town \"{}\"", a.start)));
        }
        if a.corps.is_empty() || (new && a.corps.len() > MAX_CORPS) {
            return Err(err(format!("{p}.corps"), format!("the side needs 1 to {MAX_CORPS} corps")));
        }
        if new {
            for (f, name) in [("start", &a.start), ("army_commander", &a.army_commander)] {
                crate::text::check_shown(name, MAX_NAME).map_err(|m| err(format!("{p}.{f}"), m))?;
            }
        }
        let key = army_key(&a.army_commander);
        // `resign` and `draw` joined the reserved keys later: a game made before keeps its commander.
        let reserved = if new { ORDER_KEYS } else { &ORDER_KEYS[NEW_ORDER_KEYS..] };
        if reserved.contains(&key.as_str()) {
            return Err(err(format!("{p}.army_commander"), format!("\"{}\" is a key order files use (`{key} = ...`); rename the commander", a.army_commander)));
        }
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(err(
                format!("{p}.army_commander"),
                "must be a name of letters (order files use it in lower case as a key, e.g. lee = \"II\")",
            ));
        }
        for (i, c) in a.corps.iter().enumerate() {
            let f = format!("{p}.corps[{i}]");
            if new {
                check_corps_names(&f, c)?;
            }
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

/// A new game's checks of a corps' id and commander: one line, not too long, a commander named.
fn check_corps_names(f: &str, c: &CorpsSetup) -> Result<(), GameError> {
    for (g, name) in [("id", &c.id), ("commander", &c.commander)] {
        crate::text::check_shown(name, MAX_NAME).map_err(|m| err(format!("{f}.{g}"), m))?;
    }
    if c.commander.trim().is_empty() || c.commander.trim() != c.commander {
        return Err(err(format!("{f}.commander"), "must be non-empty, without leading or trailing spaces"));
    }
    Ok(())
}

/// How many of [`ORDER_KEYS`], the first, only a new game's army commanders must not shadow.
const NEW_ORDER_KEYS: usize = 2;

/// Top-level order keys, which an army commander's key must not shadow (with `resign` and
/// `draw`, which every game's order file takes: SPEC.md "Ending by the players").
pub const ORDER_KEYS: &[&str] = &[
    "resign", "draw", "cards", "moves", "standing", "decision", "vacate_to", "combat_order", "automatic_hits", "retreat_to", "remove",
];

/// The order-file key that names the corps an army commander commands: his name in lower case with
/// spaces and dots turned into `_` (`"Lee"` -> `lee`).
pub fn army_key(name: &str) -> String {
    name.trim().to_lowercase().chars().map(|c| if c == ' ' || c == '.' { '_' } else { c }).collect()
}
