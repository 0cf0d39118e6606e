//! The game state: where every corps is, what has been scored and played, the standing orders of
//! both sides, and where the turn sequence stands (including the question awaiting an answer).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::scenario::Scenario;
use super::side::{Side, Sides};
use crate::game::Outcome;

/// The whole state, secrets included; players see it only through `view`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    /// The scenario the game was set up from (shared: it never changes, and a step's copy of the
    /// state need not copy it; it serializes as the scenario itself).
    pub scenario: std::sync::Arc<Scenario>,
    /// Whether the optional firing rule (§9) is in use (`--option optional-fire=true`).
    pub optional_fire: bool,
    /// The current turn, from 1 (§5).
    pub turn: u32,
    /// The current round of the turn, from 1 (§5).
    pub round: u32,
    /// Every corps of both sides, Confederates first, in scenario order; indices are stable.
    pub corps: Vec<Corps>,
    /// Whether each side's army commander (Lee / Meade) has been used (§6).
    pub army_used: Sides<bool>,
    /// Towns that have given the Confederates their points, in the order scored (§4).
    pub scored: Vec<String>,
    /// Each side's standing answers (secret from the other side); shared by a step's copies of
    /// the state until one changes (most steps change neither; serializes as the orders themselves).
    pub standing: Sides<std::sync::Arc<Standing>>,
    /// What has happened in the current round.
    pub this_round: Round,
    /// Where the turn sequence stands.
    pub stage: Stage,
    /// The decision awaited (None only when the game is over).
    pub question: Option<Question>,
    /// The most recent initiative rolls (§7), public.
    pub last_initiative: Option<InitiativeRoll>,
    /// Set when the game is over (§10).
    pub outcome: Option<Outcome>,
}

/// One corps counter and its position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Corps {
    /// Owner.
    pub side: Side,
    /// Order-file name, unique within the side, e.g. `"XI"`.
    pub id: String,
    /// The commander whose card half commands it.
    pub commander: String,
    /// Combat strength (§9).
    pub strength: u32,
    /// Where it is.
    pub at: Location,
}

/// Where a corps is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Location {
    /// In a town.
    Town {
        /// The town.
        town: String,
    },
    /// On the road from `from`, advancing on the defended town `to` (§8): an attacker in combat.
    Advancing {
        /// The town it came from (where it returns if the attack fails, §9 3).
        from: String,
        /// The town it attacks.
        to: String,
    },
    /// Removed from the game.
    Eliminated,
}

/// One played card: the half played upward and the corps it commands (§6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Command {
    /// Index into the side's `cards` in the scenario.
    pub card: usize,
    /// True when the card's printed upper half is played upward.
    pub upper: bool,
    /// The commanded corps (index into [`State::corps`]).
    pub corps: usize,
}

/// The record of the current round.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Round {
    /// Revealed commands (set once the initiative is won, §7-§8; empty before and on a tie).
    pub commands: Sides<Vec<Command>>,
    /// The side with the initiative this round.
    pub initiative: Option<Side>,
    /// Planned moves by corps index: the towns still to move to (empty = stay). Secret.
    pub plans: Sides<BTreeMap<usize, Vec<String>>>,
    /// Moves made this round by corps index.
    pub steps: BTreeMap<usize, u32>,
    /// Commanded corps whose movement is over for this round.
    pub finished: Vec<usize>,
    /// Non-initiative corps that vacated or defended, which cannot move this round (§8).
    pub locked: Vec<usize>,
    /// Whether any corps moved this round (§8: a round without moves ends the turn's rounds).
    pub moved_any: bool,
    /// A move into an enemy-held town awaiting the enemy's vacate-or-defend decision (§8).
    pub entry: Option<Entry>,
}

/// A corps that has moved into a town held by the enemy and waits for its decision (§8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The moving corps.
    pub mover: usize,
    /// The town it came from (vacating corps may not go there).
    pub from: String,
    /// The enemy-held town.
    pub to: String,
}

/// The initiative dice of one round (§7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InitiativeRoll {
    /// Turn of the roll.
    pub turn: u32,
    /// Round of the roll.
    pub round: u32,
    /// The Confederate die.
    pub confederate: u32,
    /// The Union die.
    pub union: u32,
    /// The side with the higher die; None on a tie.
    pub winner: Option<Side>,
}

/// Where the turn sequence stands (§5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "stage", rename_all = "kebab-case")]
pub enum Stage {
    /// The command phase of a round (§6).
    Command,
    /// A side's movement phase (§8); `second` for the non-initiative player's.
    Movement {
        /// The moving side.
        side: Side,
        /// True for the non-initiative player's movement phase.
        second: bool,
    },
    /// The combat phase (§9).
    Combat(Combat),
    /// The game has ended (§10).
    Over,
}

/// Progress through the combat phase (§9).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Combat {
    /// Whether the towns in combat have been listed.
    pub started: bool,
    /// The towns where combat takes place, in the order of resolution once `ordered`.
    pub towns: Vec<String>,
    /// Whether the Confederate player's order of towns is known.
    pub ordered: bool,
    /// The town being resolved (index into `towns`).
    pub index: usize,
    /// The step of that town's combat.
    pub step: CombatStep,
}

/// The steps of one town's combat (§9 1-3).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "kebab-case")]
pub enum CombatStep {
    /// 1) The defender fires.
    #[default]
    DefenderFire,
    /// 2) The attacker fires, knowing the defender's hits.
    AttackerFire {
        /// Hits the defender scored.
        defender_hits: u32,
    },
    /// 3) The comparison's result is carried out.
    Result {
        /// The result.
        result: CombatResult,
        /// Whether the losing side still has to remove a corps.
        casualty_pending: bool,
    },
}

/// The result of comparing hits (§9 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CombatResult {
    /// Tie, or the defender one hit ahead: the attack fails, attackers return.
    AttackFails,
    /// The defender two or more ahead: the attacker loses a corps, the rest return.
    AttackRepulsed,
    /// The attacker one ahead: every defender retreats.
    DefenderRetreats,
    /// The attacker two or more ahead: the defender loses a corps, the rest retreat.
    DefenderRouted,
}

/// A decision awaited from one role (or both, for the command phase).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Question {
    /// §6: choose cards (both sides that can command, at once and in secret).
    Command {
        /// The sides asked.
        sides: Vec<Side>,
    },
    /// §8: a commanded corps has no planned move.
    Move {
        /// The moving side.
        side: Side,
        /// The corps.
        corps: usize,
    },
    /// §8: an enemy corps moved into the side's town: vacate or defend it.
    VacateOrDefend {
        /// The side holding the town.
        side: Side,
        /// The town.
        town: String,
        /// The enemy corps that moved in.
        mover: usize,
        /// Where it came from.
        from: String,
        /// Legal vacate destinations (non-empty; with none the defence is automatic).
        options: Vec<String>,
    },
    /// §9: the Confederate player orders the towns in combat.
    CombatOrder {
        /// The towns, in map order.
        towns: Vec<String>,
    },
    /// §9 optional rule: trade automatic hits for dice.
    FireOption {
        /// The firing side.
        side: Side,
        /// The town in combat.
        town: String,
        /// True when the firing side is the attacker.
        attacking: bool,
        /// Its total combat strength.
        strength: u32,
        /// Its divisor.
        divisor: u32,
        /// The defender's hits (known to the attacker when it chooses).
        defender_hits: Option<u32>,
    },
    /// §9 3: the side that lost by two or more removes one of its corps in the combat.
    Casualty {
        /// The side removing a corps.
        side: Side,
        /// The town in combat.
        town: String,
        /// Its corps in this combat.
        candidates: Vec<usize>,
    },
    /// §9 3: the attacker chooses where the defeated defenders retreat.
    Retreat {
        /// The attacking side, which chooses.
        side: Side,
        /// The town the defenders leave.
        town: String,
        /// The retreating corps.
        corps: Vec<usize>,
        /// Legal destinations.
        options: Vec<String>,
    },
}

impl Question {
    /// Every value [`Question::kind`] can return.
    pub const KINDS: &'static [&'static str] =
        &["command", "move", "vacate-or-defend", "combat-order", "fire-option", "casualty", "retreat"];

    /// The ask kind used in order forms and deadline policies.
    pub fn kind(&self) -> &'static str {
        match self {
            Question::Command { .. } => "command",
            Question::Move { .. } => "move",
            Question::VacateOrDefend { .. } => "vacate-or-defend",
            Question::CombatOrder { .. } => "combat-order",
            Question::FireOption { .. } => "fire-option",
            Question::Casualty { .. } => "casualty",
            Question::Retreat { .. } => "retreat",
        }
    }

    /// The sides asked, in role order.
    pub fn sides(&self) -> Vec<Side> {
        match self {
            Question::Command { sides } => sides.clone(),
            Question::CombatOrder { .. } => vec![Side::Confederate],
            Question::Move { side, .. }
            | Question::VacateOrDefend { side, .. }
            | Question::FireOption { side, .. }
            | Question::Casualty { side, .. }
            | Question::Retreat { side, .. } => vec![*side],
        }
    }
}

/// A side's standing answers: used whenever still legal, else the engine asks (replaced key by key
/// by later order files).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Standing {
    /// Towns to defend when an enemy corps moves in (§8).
    pub defend: Vec<String>,
    /// Towns to vacate when an enemy corps moves in, with preferred destinations (§8).
    pub vacate: BTreeMap<String, Vec<String>>,
    /// Own corps in the order to remove them when a combat costs a corps (§9 3).
    pub casualties: Vec<String>,
    /// As attacker: where defeated defenders of a town retreat, in preference order (§9 3).
    pub retreat: BTreeMap<String, Vec<String>>,
    /// Confederates only: the order of combat towns (§9).
    pub combat_order: Vec<String>,
    /// The optional firing rule's choice (§9), when the option is in use.
    pub optional_fire: Option<FirePolicy>,
}

/// A standing choice for the optional firing rule (§9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FirePolicy {
    /// Always keep every automatic hit.
    Never,
    /// Always roll as many dice as allowed.
    Always,
    /// Ask every time.
    Ask,
}

impl State {
    /// The corps' town, if it is in one.
    pub fn town_of(&self, c: usize) -> Option<&str> {
        match &self.corps[c].at {
            Location::Town { town } => Some(town),
            _ => None,
        }
    }

    /// Corps of `side` in `town`.
    pub fn in_town(&self, side: Side, town: &str) -> Vec<usize> {
        (0..self.corps.len()).filter(|&c| self.corps[c].side == side && self.town_of(c) == Some(town)).collect()
    }

    /// Corps advancing on `town`.
    pub fn advancing_on(&self, town: &str) -> Vec<usize> {
        (0..self.corps.len())
            .filter(|&c| matches!(&self.corps[c].at, Location::Advancing { to, .. } if to == town))
            .collect()
    }

    /// True when a corps of `side` is on the road between `a` and `b` (either direction).
    pub fn on_road(&self, side: Side, a: &str, b: &str) -> bool {
        self.corps.iter().any(|c| {
            c.side == side
                && matches!(&c.at, Location::Advancing { from, to } if (from == a && to == b) || (from == b && to == a))
        })
    }

    /// Confederate points scored so far (§4).
    pub fn points(&self) -> u32 {
        self.scored.iter().map(|t| self.scenario.points(t)).sum()
    }

    /// "Union XI Corps (Howard)".
    pub fn label(&self, c: usize) -> String {
        let k = &self.corps[c];
        format!("{} {} Corps ({})", k.side.name(), k.id, k.commander)
    }

    /// "XI Corps (Howard)", for a side's own messages.
    pub fn short(&self, c: usize) -> String {
        let k = &self.corps[c];
        format!("{} Corps ({})", k.id, k.commander)
    }

    /// The corps of `side` a player named (ignoring case).
    pub fn corps_named(&self, side: Side, typed: &str) -> Option<usize> {
        (0..self.corps.len()).find(|&c| self.corps[c].side == side && self.corps[c].id.eq_ignore_ascii_case(typed.trim()))
    }

    /// All corps indices of `side`.
    pub fn corps_of(&self, side: Side) -> Vec<usize> {
        (0..self.corps.len()).filter(|&c| self.corps[c].side == side).collect()
    }

    /// Total strength of some corps.
    pub fn strength(&self, corps: &[usize]) -> u32 {
        corps.iter().map(|&c| self.corps[c].strength).sum()
    }

    /// The ids of some corps, "I, III".
    pub fn ids(&self, corps: &[usize]) -> String {
        corps.iter().map(|&c| self.corps[c].id.clone()).collect::<Vec<_>>().join(", ")
    }
}
