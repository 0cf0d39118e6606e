//! The file formats of a game: the game file, receipts and the hash-chained records.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::dice::Event;
use crate::game::{Ask, Outcome, Publication};

/// `game.toml`: everything fixed when the game is created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GameFile {
    /// The pbem version that created the game (reports are replayed by the audit, so a game is
    /// best audited and continued by the version that made it).
    #[serde(default)]
    pub pbem: String,
    /// The wording of this game's reports (`WORDING` of the `report` module when the game was made):
    /// a game keeps the wording it began with, so its reports stay those the audit replays byte
    /// for byte; 0 (absent) for a game made before the mark, whose reports may use the earlier
    /// wordings too (`report::Pinned::earlier_wording`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub wording: u32,
    /// Game id, quoted in every order file and hashed into every commitment and seed.
    pub id: String,
    /// Rules id, e.g. `gettysburg-campaign`.
    pub rules: String,
    /// `--option K=V` values given at creation.
    #[serde(default)]
    pub options: BTreeMap<String, String>,
    /// The host's OpenSSH public key line; receipts and records are signed with its private half.
    pub host_key: String,
    /// Deadline policy.
    #[serde(default)]
    pub deadlines: Deadlines,
    /// What missing orders become.
    #[serde(default)]
    pub nmr: NmrPolicy,
    /// The seats, one per role.
    #[serde(rename = "seat")]
    pub seats: Vec<Seat>,
}

/// One seat: a role held by a player.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Seat {
    /// The role, e.g. `union`.
    pub role: String,
    /// Where reports go.
    pub email: String,
    /// The player's OpenSSH public key line (Ed25519, ECDSA, RSA of 2048+ bits, or a FIDO security key: `sig::check_key`).
    pub key: String,
    /// The player's time zone (IANA name, e.g. `America/New_York`): deadlines in their reports,
    /// forms, mails and `pbem status` are shown in it. Unset means UTC (and, in mails only, the
    /// mail config's `time_zones` entry for the address, if any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
}

/// The most hours any deadline or grace may be: a year (366 days). No real game waits longer,
/// and every deadline stays a time the records can hold.
pub const MAX_HOURS: u32 = 366 * 24;

/// How long players have to answer, per kind of ask, in hours.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deadlines {
    /// Hours for any ask kind not listed in `kinds`.
    pub default_hours: u32,
    /// Hours per ask kind (e.g. `command = 72`, `retreat = 24`).
    #[serde(default)]
    pub kinds: BTreeMap<String, u32>,
    /// Hours after the deadline before missing orders count as NMR (the deadline shown to players
    /// does not include it).
    #[serde(default)]
    pub grace_hours: u32,
}

impl Default for Deadlines {
    fn default() -> Self {
        Deadlines { default_hours: 72, kinds: BTreeMap::new(), grace_hours: 0 }
    }
}

/// What happens to a seat whose orders are missing when a step's deadline (and grace) has passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NmrMode {
    /// The game's documented default orders are used (NMR).
    #[default]
    Defaults,
    /// The step waits for every asked seat, however long (reminders still go out).
    Wait,
    /// Defaults at first; after `bot_after` consecutive missed steps the built-in player answers.
    Bot,
}

/// The game's NMR policy (`[nmr]` in `game.toml`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NmrPolicy {
    /// The mode.
    #[serde(default)]
    pub policy: NmrMode,
    /// With [`NmrMode::Bot`]: how many consecutive missed steps a seat gets default orders before
    /// the built-in player takes over (0 = at once). A seat that sends orders again is its own.
    #[serde(default)]
    pub bot_after: u32,
}

impl Deadlines {
    /// Hours allowed for a step whose asks have these kinds: the longest of them.
    pub fn hours_for<'a>(&self, kinds: impl Iterator<Item = &'a str>) -> u32 {
        kinds.map(|k| *self.kinds.get(k).unwrap_or(&self.default_hours)).max().unwrap_or(self.default_hours)
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl GameFile {
    /// The seat of `role`, if any.
    pub fn seat(&self, role: &str) -> Option<&Seat> {
        self.seats.iter().find(|s| s.role == role)
    }

    /// The time zone of `role`'s seat (UTC when unset or no such seat).
    pub fn zone_of(&self, role: &str) -> chrono_tz::Tz {
        crate::when::zone(self.seat(role).and_then(|s| s.time_zone.as_deref()))
    }
}

/// A receipt: the host's signed statement that it accepted an order with this commitment.
/// Stored as TOML at `receipts/STEP/ROLE-K.toml` with the host's signature beside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Receipt {
    /// Game id.
    pub game: String,
    /// Step the order is for.
    pub step: u64,
    /// Role that sent it.
    pub role: String,
    /// 1 for the first accepted order of this role in this step, 2 for the next, ...; the highest wins.
    pub seq: u64,
    /// Hex SHA-256 order commitment (SPEC.md "Order commitment").
    pub commitment: String,
    /// When it was accepted (RFC 3339, UTC).
    pub received: String,
    /// False when the order carried no nonce (it adds no randomness to the step seed).
    pub nonce: bool,
    /// The game's setup hash in force (record 0's `setup`, or the newest seat change's: `game.toml`
    /// with the seat keys, deadlines and NMR policy, and `scenario.toml`), so a receipt a player keeps pins the game it was issued
    /// in: a host rewriting `game.toml` later (another seat key, another policy) cannot match it.
    pub setup: String,
    /// SHA-256 (hex) of the newest record file when the receipt was issued (the one that opened
    /// the step, or a host control after it), so a receipt a player keeps pins the whole history
    /// before it: through the hash chain, every earlier record.
    pub record: String,
}

/// The opening of a step: who is asked, by when, and the host-seed commitment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Opening {
    /// Step number (1 for the first step).
    pub step: u64,
    /// The asks, sorted by role.
    pub asks: Vec<Ask>,
    /// Hex SHA-256 commitment to the step's host seed.
    pub host_seed_commitment: String,
    /// When the step opened (RFC 3339, UTC).
    pub opened: String,
    /// When missing orders become NMR (RFC 3339, UTC).
    pub deadline: String,
    /// Since when the host has paused the game (RFC 3339, UTC): nothing is resolved and no NMR
    /// falls until a resume record extends the deadline by the time paused. Absent when running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<String>,
}

/// How one asked role's orders were obtained for a resolved step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Revealed {
    /// The role.
    pub role: String,
    /// Receipt seq used; `None` for NMR.
    pub seq: Option<u64>,
    /// Hex commitment of that receipt; `None` for NMR.
    pub commitment: Option<String>,
    /// The exact signed text (normalized), revealed; `None` for NMR.
    pub text: Option<String>,
    /// The armored SSH signature of `text`; `None` for NMR.
    pub signature: Option<String>,
    /// The `[orders]` used: the player's, the NMR default, or the built-in player's.
    pub orders: toml::Table,
    /// For an NMR: `"default"` (the game's default orders) or `"bot"` (the built-in player's, from
    /// the bot seed of SPEC.md); absent for submitted orders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nmr: Option<String>,
    /// True when `text`, `signature` and `orders` are withheld from this record (the game said the
    /// orders are still secret) and revealed in a later record's `reveals`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub withheld: bool,
    /// Until when withheld orders stay secret: `"round-end"` (absent, the default; also every
    /// record written before this field existed) or `"game-end"`. Always absent when not withheld.
    #[serde(default, skip_serializing_if = "WithheldUntil::is_round_end")]
    pub withheld_until: WithheldUntil,
}

/// The seats of a step's `orders` that sent none (an NMR, SPEC.md "NMR policy"), each with how the
/// orders used were made: `"default"` or `"bot"` (a record written before `nmr` existed: the
/// default). What [`crate::dice::Ctx::unsent`] is given.
pub fn unsent(orders: &[Revealed]) -> BTreeMap<String, String> {
    orders.iter().filter(|o| o.seq.is_none()).map(|o| (o.role.clone(), o.nmr.clone().unwrap_or_else(|| "default".into()))).collect()
}

/// How long withheld orders stay out of the public record (SPEC.md "Withheld orders").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WithheldUntil {
    /// Until the next record whose step the game says may be published ([`Publication::Now`]), or
    /// the game's end.
    #[default]
    RoundEnd,
    /// Until the record that ends the game ([`Publication::AfterGame`]).
    GameEnd,
}

impl WithheldUntil {
    /// True for the default, which the record leaves out.
    pub fn is_round_end(&self) -> bool {
        *self == WithheldUntil::RoundEnd
    }

    /// True when orders withheld this long are revealed by a record whose step the game says
    /// `publication` of, `over` when that record ends the game: at the game's end everything is;
    /// at a [`Publication::Now`] step, what waited for the round's end.
    pub fn due(self, publication: Publication, over: bool) -> bool {
        over || (publication == Publication::Now && self == WithheldUntil::RoundEnd)
    }

    /// Whether and how long a step's own orders are withheld, given what the game says of the step
    /// and whether its record ends the game (then nothing is withheld).
    pub fn for_step(publication: Publication, over: bool) -> Option<WithheldUntil> {
        match publication {
            _ if over => None,
            Publication::Now => None,
            Publication::AfterRound => Some(WithheldUntil::RoundEnd),
            Publication::AfterGame => Some(WithheldUntil::GameEnd),
        }
    }
}

/// Orders withheld from an earlier record, revealed once they are due (the round's or the game's
/// end, as the withheld entry says).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LateReveal {
    /// The step the orders were for.
    pub step: u64,
    /// The role.
    pub role: String,
    /// The exact signed text; `None` for an NMR.
    pub text: Option<String>,
    /// Its armored signature; `None` for an NMR.
    pub signature: Option<String>,
    /// The `[orders]` used.
    pub orders: toml::Table,
}

impl LateReveal {
    /// What is wrong with this copy as the withheld orders of `role` in `step` (a host's copy
    /// `host/withheld/STEP-ROLE.json` whose fields name another step or role: tester20 T20b-2),
    /// or `None` when it is theirs.
    pub fn not_for(&self, step: u64, role: &str) -> Option<String> {
        (self.step != step || self.role != role).then(|| format!("holds the orders of {} in step {}, not those of {role} in step {step} its name says (edited?)", self.role, self.step))
    }
}

impl Revealed {
    /// This entry with a late reveal filled in (text, signature, orders), no longer withheld.
    pub fn with_reveal(&self, r: &LateReveal) -> Revealed {
        Revealed {
            text: r.text.clone(),
            signature: r.signature.clone(),
            orders: r.orders.clone(),
            withheld: false,
            withheld_until: WithheldUntil::RoundEnd,
            ..self.clone()
        }
    }
}

/// Consecutive missed steps per role, updated with one resolution's orders, each a role and
/// whether its seat sent orders (a receipt seq): an NMR adds one, orders reset the count to zero.
/// Fold this over records 1..=N to get the counts after record N.
pub fn count_misses<'a>(misses: &mut BTreeMap<String, u32>, orders: impl IntoIterator<Item = (&'a str, bool)>) {
    for (role, sent) in orders {
        let m = misses.entry(role.to_string()).or_insert(0);
        *m = if sent { 0 } else { m.saturating_add(1) };
    }
}

/// What a new step needs of each record before it: which withheld orders the record revealed,
/// and of its resolution each order's role, receipt seq and whether (and how long) it was
/// withheld. Parsed from a record file without its texts, orders, events and opening (serde
/// skips them unbuilt), so that going through every earlier record each step stays cheap in a
/// long game; the fields keep [`Record`]'s names and meaning.
#[derive(Debug, Deserialize)]
pub struct Trail {
    /// The `(step, role)` of each late reveal ([`Record::reveals`]).
    #[serde(default)]
    pub reveals: Vec<TrailReveal>,
    /// The resolution, if any ([`Record::resolution`]).
    pub resolution: Option<TrailResolution>,
}

/// A late reveal's step and role ([`LateReveal`]).
#[derive(Debug, Deserialize)]
pub struct TrailReveal {
    /// The step the orders were for.
    pub step: u64,
    /// The role.
    pub role: String,
}

/// A resolution's step and orders ([`Resolution`]).
#[derive(Debug, Deserialize)]
pub struct TrailResolution {
    /// The step resolved.
    pub step: u64,
    /// Each asked role's entry.
    pub orders: Vec<TrailOrder>,
}

/// An order's role, receipt seq and withholding ([`Revealed`]).
#[derive(Debug, Deserialize)]
pub struct TrailOrder {
    /// The role.
    pub role: String,
    /// Receipt seq used; `None` for NMR.
    pub seq: Option<u64>,
    /// Whether the orders were withheld from this record.
    #[serde(default)]
    pub withheld: bool,
    /// Until when they stay withheld.
    #[serde(default)]
    pub withheld_until: WithheldUntil,
}

impl NmrPolicy {
    /// How a missing order of a seat that has already missed `missed` steps in a row is made:
    /// `"default"` or `"bot"`.
    pub fn kind_for(&self, missed: u32) -> &'static str {
        if self.policy == NmrMode::Bot && missed >= self.bot_after { "bot" } else { "default" }
    }
}

/// A resolved step: seeds revealed, orders revealed, events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resolution {
    /// The step resolved.
    pub step: u64,
    /// The revealed host seed (hex); must hash to the opening's commitment.
    pub host_seed: String,
    /// One entry per asked role, sorted by role.
    pub orders: Vec<Revealed>,
    /// The derived step seed (hex), SPEC.md "Step seed".
    pub seed: String,
    /// Everything everyone may see, in order (every roll included). Events addressed to some roles
    /// only are not here: they reach those roles in their reports, and the audit regenerates them.
    pub events: Vec<Event>,
    /// When it was adjudicated (RFC 3339, UTC).
    pub resolved: String,
}

/// One link of the public hash chain, stored as `records/NNNNNN.json` (signed by the host).
/// Record 0 is the genesis (no resolution); record N resolves step N.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// Game id.
    pub game: String,
    /// Index N of this record.
    pub index: u64,
    /// Hex SHA-256 of the previous record file's bytes; `None` for record 0.
    pub prev: Option<String>,
    /// Hex SHA-256 of `game.toml` and `scenario.toml` (record 0, and a seat change record: the
    /// setup in force from this record on; binds the setup).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<String>,
    /// A host control (a record without a resolution, between steps): SPEC.md "Host controls".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<Control>,
    /// The step this record resolves (none in record 0).
    pub resolution: Option<Resolution>,
    /// Hex state commitment of `states/NNNNNN.json` after this record (SPEC.md "State
    /// commitment": salted with the game's secret state key, so it cannot be matched by guessing).
    pub state: String,
    /// The game's state key (hex), revealed by the record that ends the game, so that anyone can
    /// then check every record's state commitment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_key: Option<String>,
    /// Orders withheld from earlier records, revealed now.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reveals: Vec<LateReveal>,
    /// The next step, if the game goes on.
    pub opening: Option<Opening>,
    /// The result, once the game is over.
    pub outcome: Option<Outcome>,
}

/// What a host control record did (SPEC.md "Host controls").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ControlAction {
    /// A seat's address or key changed (a player replaced, a key lost, an address moved).
    Seat,
    /// The open step's deadline was moved.
    Deadline,
    /// The game was paused: nothing resolves and no NMR falls until it is resumed.
    Pause,
    /// The game was resumed: the deadline moves on by the time it was paused.
    Resume,
    /// The host ended the game without a result.
    Abandon,
    /// A player resigned (conceded) by a signed order: that seat's side loses.
    Resign,
    /// Every seat agreed a draw by signed orders.
    Draw,
}

impl ControlAction {
    /// True for an end the players asked for by signed orders (resign, draw), not the host.
    pub fn by_players(self) -> bool {
        matches!(self, ControlAction::Resign | ControlAction::Draw)
    }
}

/// A host control: a host-signed record without a resolution, in the chain between two steps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Control {
    /// What was done.
    pub action: ControlAction,
    /// When (RFC 3339, UTC).
    pub at: String,
    /// The host's reason, as given (may be empty).
    pub reason: String,
    /// A seat change: which seat and what it was before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seat: Option<SeatChange>,
    /// A resignation or a draw: the players' signed orders that asked for it (SPEC.md "Ending
    /// by the players"), each with its receipt's step and number.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub orders: Vec<SignedOrder>,
}

/// A player's accepted order as a record quotes it: the receipt it got and the signed text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SignedOrder {
    /// The step of its receipt.
    pub step: u64,
    /// The role that sent it.
    pub role: String,
    /// Its receipt's `seq`.
    pub seq: u64,
    /// The exact signed text (normalized).
    pub text: String,
    /// The armored SSH signature of `text`.
    pub signature: String,
}

/// A seat change: the seat's new address and key are in the `game.toml` the record's `setup`
/// names; the record keeps the whole `game.toml` before the change, so the audit can follow the
/// setup back to record 0.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeatChange {
    /// The role whose seat changed.
    pub role: String,
    /// The seat's address from this record on.
    pub email: String,
    /// The seat's public key from this record on.
    pub key: String,
    /// The seat's time zone from this record on (an IANA name), when the change set it; absent:
    /// the zone stays as `before` has it (and records made before the field have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// The exact text of `game.toml` before the change.
    pub before: String,
}

impl Control {
    /// One line for reports, status and mail: what the host did.
    pub fn describe(&self, opening: Option<&Opening>) -> String {
        let why = if self.reason.is_empty() { String::new() } else { format!(" ({})", self.reason) };
        let deadline = opening.map(|o| o.deadline.as_str()).unwrap_or("-");
        match (self.action, &self.seat) {
            (ControlAction::Seat, Some(s)) => {
                let zone = s.time_zone.as_ref().map(|z| format!(", time zone {z}")).unwrap_or_default();
                format!("the host changed the seat of {}: address {}, key {}{zone}{why}", s.role, s.email, key_summary(&s.key))
            }
            (ControlAction::Deadline, _) => format!("the host moved the deadline to {deadline}{why}"),
            (ControlAction::Pause, _) => format!("the host paused the game at {}{why}: nothing is resolved until it resumes", self.at),
            (ControlAction::Resume, _) => format!("the host resumed the game at {}{why}; the deadline is now {deadline}", self.at),
            (ControlAction::Abandon, _) => format!("the host ended the game without a result{why}"),
            (ControlAction::Resign, _) => match self.orders.first() {
                Some(o) => format!("{} resigned by a signed order (step {}, receipt {}): the game is over", o.role, o.step, o.seq),
                None => "a player resigned: the game is over".to_string(),
            },
            (ControlAction::Draw, _) => {
                let roles: Vec<&str> = self.orders.iter().map(|o| o.role.as_str()).collect();
                format!("every seat agreed a draw by signed orders ({}): the game is over", roles.join(", "))
            }
            (ControlAction::Seat, None) => format!("the host changed a seat{why}"),
        }
    }
}

/// A key line shortened for a report: its type and the end of its base64.
fn key_summary(key: &str) -> String {
    let mut parts = key.split_whitespace();
    let kind = parts.next().unwrap_or("");
    let body = parts.next().unwrap_or("");
    let tail: String = body.chars().rev().take(12).collect::<Vec<_>>().into_iter().rev().collect();
    format!("{kind} ...{tail}")
}

/// The canonical bytes of a record file: pretty JSON and a final newline.
pub fn record_bytes(r: &Record) -> Vec<u8> {
    let mut s = serde_json::to_string_pretty(r).expect("record serializes");
    s.push('\n');
    s.into_bytes()
}


/// One receipt file, never read through a symbolic link. Errors: unreadable, a link, or not a
/// receipt (with the line).
pub fn read_receipt(path: &std::path::Path) -> crate::error::Result<Receipt> {
    parse_receipt(path, &crate::store::read_text_no_link(path)?)
}

/// The receipt in `text`, read from `path`. Errors: not a receipt (with the line).
pub fn parse_receipt(path: &std::path::Path, text: &str) -> crate::error::Result<Receipt> {
    toml::from_str(text).map_err(|e: toml::de::Error| crate::error::Error::Input {
        line: e.span().map(|s| crate::orderfile::line_of(text, s.start)),
        file: path.to_path_buf(),
        field: None,
        message: format!("not a receipt: {}", e.message().trim()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn withheld_orders_are_due_at_the_round_or_the_game_end() {
        use Publication::*;
        use WithheldUntil::*;
        assert_eq!(WithheldUntil::for_step(Now, false), None);
        assert_eq!(WithheldUntil::for_step(AfterRound, false), Some(RoundEnd));
        assert_eq!(WithheldUntil::for_step(AfterGame, false), Some(GameEnd));
        for p in [Now, AfterRound, AfterGame] {
            assert_eq!(WithheldUntil::for_step(p, true), None, "nothing is withheld by the record that ends the game");
            assert!(RoundEnd.due(p, true) && GameEnd.due(p, true), "everything is revealed at the game's end");
        }
        assert!(RoundEnd.due(Now, false));
        assert!(!GameEnd.due(Now, false));
        assert!(!RoundEnd.due(AfterRound, false) && !RoundEnd.due(AfterGame, false));
    }

    #[test]
    fn a_withheld_entry_reads_and_writes_as_before_unless_kept_to_the_game_end() {
        // A record written before `withheld_until` existed reads as withheld until the round's end
        // and is written back byte for byte (the audit requires canonical bytes).
        let old = r#"{"role":"union","seq":1,"commitment":"ab","text":null,"signature":null,"orders":{},"withheld":true}"#;
        let r: Revealed = serde_json::from_str(old).unwrap();
        assert_eq!(r.withheld_until, WithheldUntil::RoundEnd);
        assert_eq!(serde_json::to_string(&r).unwrap(), old);
        let kept = Revealed { withheld_until: WithheldUntil::GameEnd, ..r };
        assert!(serde_json::to_string(&kept).unwrap().ends_with(r#""withheld":true,"withheld_until":"game-end"}"#));
    }
}
