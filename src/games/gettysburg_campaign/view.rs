//! What one side may know of the state: the only path from state to what a player sees.
//!
//! Shown to both: the map (towns, corps in them, corps advancing along roads), points, turn and
//! round, the revealed commands of the round, the last initiative dice, the army commanders' use
//! (public once revealed), the game's end. Shown to the side only: its hand, its planned moves,
//! its standing orders, its question. Never shown: the opponent's planned moves, standing orders,
//! and cards chosen in a round that ended in an initiative tie.

use serde_json::{Value, json};

use super::forms::{prompt, standing_list};
use super::side::Side;
use super::state::{Location, Stage, State};

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

/// The view of `side` (see the module doc for what is in it).
pub fn view(s: &State, side: Side) -> Value {
    let (phase, phase_text) = phase(s);
    let army = s.scenario.army(side);
    let revealed = |x: Side| {
        let cmds = s.this_round.commands.get(x);
        (!cmds.is_empty()).then(|| super::engine::describe_commands(s, x, cmds))
    };
    let question = s.question.as_ref().filter(|q| q.sides().contains(&side)).map(|q| json!({ "kind": q.kind(), "prompt": prompt(s, side, q) }));
    let waiting: Vec<Value> = s
        .question
        .iter()
        .flat_map(|q| q.sides().into_iter().map(move |x| json!({ "role": x.role(), "kind": q.kind() })))
        .collect();
    let other = side.other();
    let mut v = json!({
        "role": side.role(),
        "side": side.name(),
        "title": s.scenario.title,
        "turn": s.turn,
        "last_turn": s.scenario.rules.last_turn,
        "round": s.round,
        "phase": phase,
        "phase_text": phase_text,
        "optional_fire": s.optional_fire,
        "points": { "scored": s.points(), "needed": s.scenario.rules.victory_points, "towns": s.scored },
        "cards_to_play": army.cards_to_play,
        "army_commander": { "name": army.army_commander, "used": s.army_used.get(side) },
        "opponent": {
            "side": other.name(),
            "hand_size": s.scenario.army(other).cards.len(),
            "army_commander": s.scenario.army(other).army_commander,
            "army_commander_used": s.army_used.get(other),
        },
        "initiative_player": s.this_round.initiative.map(|x| x.role()),
        "commands": { "confederate": revealed(Side::Confederate), "union": revealed(Side::Union) },
        "standing_orders": s.standing.get(side),
        "initiative": s.last_initiative,
        "game_over": s.outcome,
    });
    // Values built here are moved in (`json!` would copy each by serializing it again).
    let map = v.as_object_mut().expect("an object");
    map.insert("towns".into(), Value::Array(towns(s)));
    map.insert("corps".into(), Value::Array(corps(s)));
    map.insert("hand".into(), Value::Array(hand(s, side)));
    map.insert("planned_moves".into(), Value::from(planned_moves(s, side)));
    map.insert("standing".into(), Value::from(standing_list(s.standing.get(side))));
    map.insert("question".into(), question.unwrap_or(Value::Null));
    map.insert("waiting_for".into(), Value::Array(waiting));
    v
}

/// A corps as a counter on the map: "Union VI Corps (Sedgwick, strength 4)".
fn counter(s: &State, c: usize) -> String {
    let k = &s.corps[c];
    format!("{} {} Corps ({}, strength {})", k.side.name(), k.id, k.commander, k.strength)
}

/// Every town in map order: its points, whether scored, who holds it, the corps in it and those
/// advancing on it, its roads and its place in the picture.
fn towns(s: &State) -> Vec<Value> {
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
            json!({
                "name": t.name,
                "points": t.points,
                "scored": s.scored.contains(&t.name),
                "holder": inside.first().map(|&c| s.corps[c].side.role()),
                "corps": inside.iter().map(|&c| counter(s, c)).collect::<Vec<_>>(),
                "attacked_by": attackers,
                "roads_to": s.scenario.neighbors(&t.name),
                "x": t.x, "y": t.y,
            })
        })
        .collect()
}

/// Every corps of both sides: where it is, in words and as data.
fn corps(s: &State) -> Vec<Value> {
    (0..s.corps.len())
        .map(|c| {
            let k = &s.corps[c];
            let (where_, town) = match &k.at {
                Location::Town { town } => (town.clone(), Some(town.clone())),
                Location::Advancing { from, to } => (format!("advancing on {to} from {from}"), None),
                Location::Eliminated => ("eliminated".into(), None),
            };
            let advancing = match &k.at {
                Location::Advancing { from, to } => Some(json!({ "from": from, "to": to })),
                _ => None,
            };
            json!({
                "side": k.side.role(), "id": k.id, "commander": k.commander, "strength": k.strength,
                "where": where_, "town": town, "advancing": advancing, "label": s.label(c),
            })
        })
        .collect()
}

/// The cards of `side`, each half marked used once it is the army commander's and he has been
/// played.
fn hand(s: &State, side: Side) -> Vec<Value> {
    let army = s.scenario.army(side);
    army.cards
        .iter()
        .enumerate()
        .map(|(i, card)| {
            let used = |name: &str| name.eq_ignore_ascii_case(&army.army_commander) && *s.army_used.get(side);
            json!({
                "card": i + 1, "upper": card.upper, "lower": card.lower,
                "upper_used": used(&card.upper), "lower_used": used(&card.lower),
            })
        })
        .collect()
}

/// The moves `side` planned this round: "XI Corps (Howard): Gettysburg then York".
fn planned_moves(s: &State, side: Side) -> Vec<String> {
    s.this_round
        .plans
        .get(side)
        .iter()
        .map(|(&c, p)| format!("{}: {}", s.short(c), if p.is_empty() { "stay".to_string() } else { p.join(" then ") }))
        .collect()
}
