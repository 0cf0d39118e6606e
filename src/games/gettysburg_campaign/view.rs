//! What one side may know of the state: the only path from state to what a player sees.
//!
//! Shown to both: the map (towns, corps in them, corps advancing along roads), points, turn and
//! round, the revealed commands of the round, the last initiative dice, the army commanders' use
//! (public once revealed), the game's end. Shown to the side only: its hand, its planned moves,
//! its standing orders, its question. Never shown: the opponent's planned moves, standing orders,
//! and cards chosen in a round that ended in an initiative tie.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::forms::{prompt, standing_list};
use super::side::Side;
use super::state::{InitiativeRoll, Location, Stage, Standing, State};
use crate::game::Outcome;

fn phase(s: &State) -> (&'static str, String) {
    let last = s.scenario.rules.last_turn;
    match &s.stage {
        Stage::Command => ("command", format!("Turn {} of {last}, round {}: command phase", s.turn, s.round)),
        Stage::Movement { side, second } => (
            "movement",
            format!(
                "Turn {} of {last}, round {}: {} movement phase ({} player)",
                s.turn,
                s.round,
                side.name(),
                if *second { "non-initiative" } else { "initiative" }
            ),
        ),
        Stage::Combat(_) => ("combat", format!("Turn {} of {last}: combat phase", s.turn)),
        Stage::Over => ("over", "The game is over".into()),
    }
}

/// The view of `side` (see the module doc for what is in it), as JSON.
pub fn view(s: &State, side: Side) -> Value {
    // Nothing in a view can fail to serialize (its maps are keyed by strings).
    serde_json::to_value(View::of(s, side)).unwrap_or(Value::Null)
}

/// The view of `side` as the report template's value: what [`view`] gives, made a template
/// value, without the JSON in between; the board (towns and corps) made once for both sides'
/// reports of a state ([`board`]).
///
/// Errors: none in practice (see [`crate::template_value::to_value`]).
pub fn report_view(s: &State, side: Side) -> Result<minijinja::Value, crate::template_value::Error> {
    let (towns, corps) = board(s)?;
    let side_only = crate::template_value::to_value(&View::without_board(s, side))?;
    // A view is a map (a struct): its entries as made, with the board's in place of the empty ones.
    let Some(side_map) = side_only.downcast_object_ref::<BTreeMap<minijinja::Value, minijinja::Value>>() else {
        return crate::template_value::to_value(&View::of(s, side));
    };
    let mut map = side_map.clone();
    map.insert(minijinja::Value::from("towns"), towns);
    map.insert(minijinja::Value::from("corps"), corps);
    Ok(minijinja::Value::from_object(map))
}

thread_local! {
    /// The board's part of the last report view made on this thread (the same for both sides: the
    /// towns and the corps), with the state it was made from: a record's reports are made one
    /// side after the other from the same state.
    static BOARD: std::cell::RefCell<Option<(State, minijinja::Value, minijinja::Value)>> = const { std::cell::RefCell::new(None) };
}

/// The view's `towns` and `corps` of `s` as template values, made once for a state (`BOARD`).
fn board(s: &State) -> Result<(minijinja::Value, minijinja::Value), crate::template_value::Error> {
    let kept = BOARD.with_borrow(|b| b.as_ref().filter(|(state, _, _)| state == s).map(|(_, t, c)| (t.clone(), c.clone())));
    if let Some(made) = kept {
        return Ok(made);
    }
    let made = (crate::template_value::to_value(&towns(s))?, crate::template_value::to_value(&corps(s))?);
    BOARD.set(Some((s.clone(), made.0.clone(), made.1.clone())));
    Ok(made)
}

/// What `side` may know of a state, as the report template reads it (`view.FIELD`): each field
/// is serialized under its name (maps ordered by key, as JSON objects are).
#[derive(Serialize)]
struct View<'a> {
    role: &'static str,
    side: &'static str,
    title: &'a str,
    turn: u32,
    last_turn: u32,
    round: u32,
    phase: &'static str,
    phase_text: String,
    optional_fire: bool,
    points: Points<'a>,
    cards_to_play: u32,
    army_commander: Commander<'a>,
    opponent: Opponent<'a>,
    initiative_player: Option<&'static str>,
    commands: Commands,
    standing_orders: &'a Standing,
    initiative: &'a Option<InitiativeRoll>,
    game_over: &'a Option<Outcome>,
    towns: Vec<TownView<'a>>,
    corps: Vec<CorpsView<'a>>,
    hand: Vec<CardView<'a>>,
    planned_moves: Vec<String>,
    plans: Vec<String>,
    /// [`plan_lines_now`]: reports of wording 3 show these.
    plans_now: Vec<String>,
    standing: Vec<String>,
    question: Option<Asked>,
    waiting_for: Vec<Waiting>,
}

/// The Confederate points: scored, needed to win, and the towns scored.
#[derive(Serialize)]
struct Points<'a> {
    scored: u32,
    needed: u32,
    towns: &'a [String],
}

/// The side's army commander and whether he has been played.
#[derive(Serialize)]
struct Commander<'a> {
    name: &'a str,
    used: bool,
}

/// What the side knows of the other: its cards in hand, its army commander and his use.
#[derive(Serialize)]
struct Opponent<'a> {
    side: &'static str,
    hand_size: usize,
    army_commander: &'a str,
    army_commander_used: bool,
}

/// The commands each side revealed this round, described (none before they are revealed).
#[derive(Serialize)]
struct Commands {
    confederate: Option<String>,
    union: Option<String>,
}

/// The question the side is asked: its kind and its prompt.
#[derive(Serialize)]
struct Asked {
    kind: &'static str,
    prompt: String,
}

/// A role the game waits for, and for what.
#[derive(Serialize)]
struct Waiting {
    role: &'static str,
    kind: &'static str,
}

impl<'a> View<'a> {
    /// The view of `side`.
    fn of(s: &'a State, side: Side) -> Self {
        View { towns: towns(s), corps: corps(s), ..View::without_board(s, side) }
    }

    /// The view of `side` with no towns and no corps (the board, the same for both sides).
    fn without_board(s: &'a State, side: Side) -> Self {
        let (phase, phase_text) = phase(s);
        let army = s.scenario.army(side);
        let revealed = |x: Side| {
            let cmds = s.this_round.commands.get(x);
            (!cmds.is_empty()).then(|| super::engine::describe_commands(s, x, cmds))
        };
        let other = side.other();
        View {
            role: side.role(),
            side: side.name(),
            title: &s.scenario.title,
            turn: s.turn,
            last_turn: s.scenario.rules.last_turn,
            round: s.round,
            phase,
            phase_text,
            optional_fire: s.optional_fire,
            points: Points { scored: s.points(), needed: s.scenario.rules.victory_points, towns: &s.scored },
            cards_to_play: army.cards_to_play,
            army_commander: Commander { name: &army.army_commander, used: *s.army_used.get(side) },
            opponent: Opponent {
                side: other.name(),
                hand_size: s.scenario.army(other).cards.len(),
                army_commander: &s.scenario.army(other).army_commander,
                army_commander_used: *s.army_used.get(other),
            },
            initiative_player: s.this_round.initiative.map(|x| x.role()),
            commands: Commands { confederate: revealed(Side::Confederate), union: revealed(Side::Union) },
            standing_orders: s.standing.get(side),
            initiative: &s.last_initiative,
            game_over: &s.outcome,
            towns: Vec::new(),
            corps: Vec::new(),
            hand: hand(s, side),
            planned_moves: planned_moves(s, side),
            plans: plan_lines(s, side),
            plans_now: plan_lines_now(s, side),
            standing: standing_lines(s.standing.get(side)),
            question: s.question.as_ref().filter(|q| q.sides().contains(&side)).map(|q| Asked { kind: q.kind(), prompt: prompt(s, side, q) }),
            waiting_for: s.question.iter().flat_map(|q| q.sides().into_iter().map(move |x| Waiting { role: x.role(), kind: q.kind() })).collect(),
        }
    }
}

/// [`standing_list`] of `st`, kept for the last two sides' standing orders on this thread: they
/// change seldom from step to step, and a record's reports ask for each side's in turn.
fn standing_lines(st: &Standing) -> Vec<String> {
    thread_local! {
        static MADE: std::cell::RefCell<Vec<(Standing, Vec<String>)>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    if let Some(lines) = MADE.with_borrow(|m| m.iter().find(|(kept, _)| kept == st).map(|(_, l)| l.clone())) {
        return lines;
    }
    let lines = standing_list(st);
    MADE.with_borrow_mut(|m| {
        if m.len() >= 2 {
            m.remove(0);
        }
        m.push((st.clone(), lines.clone()));
    });
    lines
}

/// A corps as a counter on the map: "Union VI Corps (Sedgwick, strength 4)".
fn counter(s: &State, c: usize) -> String {
    let k = &s.corps[c];
    format!("{} {} Corps ({}, strength {})", k.side.name(), k.id, k.commander, k.strength)
}

/// A town on the map: its points, whether scored, who holds it, the corps in it and those
/// advancing on it, its roads and its place in the picture.
#[derive(Serialize)]
struct TownView<'a> {
    name: &'a str,
    points: u32,
    scored: bool,
    holder: Option<&'static str>,
    corps: Vec<String>,
    attacked_by: Vec<String>,
    roads_to: Vec<String>,
    x: Option<u32>,
    y: Option<u32>,
}

/// Every town in map order.
fn towns(s: &State) -> Vec<TownView<'_>> {
    s.scenario
        .map
        .towns
        .iter()
        .map(|t| {
            let inside: Vec<usize> = (0..s.corps.len()).filter(|&c| s.town_of(c) == Some(t.name.as_str())).collect();
            let attackers: Vec<String> = s
                .advancing_on(&t.name)
                .into_iter()
                .map(|c| match &s.corps[c].at {
                    Location::Advancing { from, .. } => format!("{} from {from}", counter(s, c)),
                    _ => counter(s, c),
                })
                .collect();
            TownView {
                name: &t.name,
                points: t.points,
                scored: s.scored.contains(&t.name),
                holder: inside.first().map(|&c| s.corps[c].side.role()),
                corps: inside.iter().map(|&c| counter(s, c)).collect(),
                attacked_by: attackers,
                roads_to: s.scenario.neighbors(&t.name),
                x: t.x,
                y: t.y,
            }
        })
        .collect()
}

/// A corps: where it is, in words and as data.
#[derive(Serialize)]
struct CorpsView<'a> {
    side: &'static str,
    id: &'a str,
    commander: &'a str,
    strength: u32,
    #[serde(rename = "where")]
    where_: String,
    town: Option<&'a str>,
    advancing: Option<Advancing<'a>>,
    label: String,
}

/// A corps on a road: from the town it left to the one it advances on.
#[derive(Serialize)]
struct Advancing<'a> {
    from: &'a str,
    to: &'a str,
}

/// Every corps of both sides.
fn corps(s: &State) -> Vec<CorpsView<'_>> {
    (0..s.corps.len())
        .map(|c| {
            let k = &s.corps[c];
            let (where_, town, advancing) = match &k.at {
                Location::Town { town } => (town.clone(), Some(town.as_str()), None),
                Location::Advancing { from, to } => (format!("advancing on {to} from {from}"), None, Some(Advancing { from, to })),
                Location::Eliminated => ("eliminated".into(), None, None),
            };
            CorpsView { side: k.side.role(), id: &k.id, commander: &k.commander, strength: k.strength, where_, town, advancing, label: s.label(c) }
        })
        .collect()
}

/// A card in hand: its number (from 1), its halves, and each half's use.
#[derive(Serialize)]
struct CardView<'a> {
    card: usize,
    upper: &'a str,
    lower: &'a str,
    upper_used: bool,
    lower_used: bool,
}

/// The cards of `side`, each half marked used once it is the army commander's and he has been
/// played.
fn hand(s: &State, side: Side) -> Vec<CardView<'_>> {
    let army = s.scenario.army(side);
    army.cards
        .iter()
        .enumerate()
        .map(|(i, card)| {
            let used = |name: &str| name.eq_ignore_ascii_case(&army.army_commander) && *s.army_used.get(side);
            CardView { card: i + 1, upper: &card.upper, lower: &card.lower, upper_used: used(&card.upper), lower_used: used(&card.lower) }
        })
        .collect()
}

/// The moves `side` planned this round as reports of wording 0 show them: "XI Corps (Howard):
/// Gettysburg then York", and "stay" for an empty plan, a corps that has carried its moves out
/// included.
fn planned_moves(s: &State, side: Side) -> Vec<String> {
    s.this_round
        .plans
        .get(side)
        .iter()
        .map(|(&c, p)| format!("{}: {}", s.short(c), if p.is_empty() { "stay".to_string() } else { p.join(" then ") }))
        .collect()
}

/// The moves `side` planned this round as reports of wording 1 and 2 ([`crate::report::WORDING`])
/// show them: none once the game is over; a corps that has carried out its plan (§8: a plan is
/// carried out town by town) "moved", not "stay", and one part-way "moved, then" the towns
/// still to go: "XI Corps (Howard): moved, then York" (tester16 T16b-1, T16c-12).
pub fn plan_lines(s: &State, side: Side) -> Vec<String> {
    plan_lines_worded(s, side, false)
}

/// [`plan_lines`] as reports of wording 3 and every picture show them: a corps whose move into
/// an enemy-held town waits for the enemy's decision to vacate or defend it (§8) is "moving into"
/// that town, not "moved": it has not left its town yet (tester t17b-1).
pub fn plan_lines_now(s: &State, side: Side) -> Vec<String> {
    plan_lines_worded(s, side, true)
}

fn plan_lines_worded(s: &State, side: Side, entering: bool) -> Vec<String> {
    if s.outcome.is_some() || matches!(s.stage, Stage::Over) {
        return Vec::new();
    }
    s.this_round
        .plans
        .get(side)
        .iter()
        .map(|(&c, p)| {
            let moved = s.this_round.steps.get(&c).is_some_and(|&n| n > 0);
            let rest = match (p.is_empty(), moved, s.this_round.entry.as_ref().filter(|e| entering && e.mover == c)) {
                (true, _, Some(e)) => format!("moving into {} (the {} player decides: vacate or defend)", e.to, side.other().name()),
                (false, _, Some(e)) => format!("moving into {} (the {} player decides: vacate or defend), then {}", e.to, side.other().name(), p.join(" then ")),
                (true, true, None) => "moved".to_string(),
                (true, false, None) => "stay".to_string(),
                (false, true, None) => format!("moved, then {}", p.join(" then ")),
                (false, false, None) => p.join(" then "),
            };
            format!("{}: {rest}", s.short(c))
        })
        .collect()
}

/// Draws a corps whose move into an enemy-held town waits for the enemy's decision (§8) on its
/// road, advancing on that town, in the picture's view `v` (as [`corps`] lists them, by index):
/// the state keeps it in the town it comes from until the decision, but the move is under way, and
/// the enemy is asked about it (tester t17b-1: its counter stood at home with no sign of it).
pub fn show_entering(v: &mut serde_json::Value, s: &State) {
    let Some(e) = &s.this_round.entry else { return };
    if let Some(c) = v.get_mut("corps").and_then(|c| c.get_mut(e.mover)).and_then(serde_json::Value::as_object_mut) {
        c.insert("town".into(), serde_json::Value::Null);
        c.insert("advancing".into(), serde_json::json!({ "from": e.from, "to": e.to }));
    }
}
