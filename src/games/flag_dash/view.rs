//! What one seat may know of the state: the only path from state to a report.
//!
//! Public: the board, characters, boosts, held flags, each seat's tokens not yet revealed (behind
//! the screen or face down on a later move: they follow from the face-up discards) and discarded,
//! the tiebreak marker, the round's account. Team only: the
//! round's plans of the seat and its teammate (teammates may look at each other's plans, Move
//! Characters note). Never shown: the opposing team's plans before they are revealed (a spied
//! card is revealed to all).

use serde_json::{Value, json};

use super::forms::{prompt, wrap};
use super::layout::{Sq, Team};
use super::state::{Card, Character, FlagAt, Mode, Seat, Stage, State};

/// One-letter marks of the characters (the first letter of the name not used by an earlier one).
pub fn marks(s: &State) -> Vec<char> {
    let mut used: Vec<char> = vec!['W', 'R'];
    let mut out = Vec::new();
    for c in &s.chars {
        let m = c.name.to_ascii_uppercase().chars().find(|x| x.is_ascii_alphabetic() && !used.contains(x)).unwrap_or('?');
        used.push(m);
        out.push(m);
    }
    out
}

/// The board as text lines, top row (Red's back row) first.
pub fn board_lines(s: &State) -> Vec<String> {
    let marks = marks(s);
    let l = &s.layout;
    // What lies under a piece: a tunnel, else the secret tunnel's entrance or an exit (Alternate
    // Board Setup).
    let under = |q: Sq| match &l.secret_tunnel {
        _ if s.tunnels.contains(&q) => 'o',
        Some(st) if st.entrance == q => 's',
        Some(st) if Team::ALL.iter().any(|t| *st.exits.get(*t) == q) => 'x',
        _ => ' ',
    };
    let mut lines = Vec::new();
    let mut head = String::from("    ");
    for c in 0..l.columns {
        head.push_str(&format!(" {} ", (b'a' + c as u8) as char));
    }
    let head = head.trim_end().to_string();
    lines.push(head.clone());
    for r in (0..l.rows).rev() {
        let mut line = format!("{:>4}", r + 1);
        for c in 0..l.columns {
            let q = Sq { c, r };
            let sep = if c > 0 && l.wall_between(q, Sq { c: c - 1, r }) { '|' } else { ' ' };
            let cell = if !s.in_play(q) {
                "##".to_string()
            } else if let Some(i) = s.char_at(q) {
                let marker = match s.carried_by(i) {
                    Some(Team::White) => 'w',
                    Some(Team::Red) => 'r',
                    None if s.traps.iter().any(|t| t.0 == q) => 't',
                    None => under(q),
                };
                format!("{}{marker}", marks[i])
            } else if let Some(t) = s.flag_lying_at(q) {
                format!("{}{}", if t == Team::White { 'w' } else { 'r' }, under(q))
            } else if s.traps.iter().any(|t| t.0 == q) {
                "t ".to_string()
            } else if under(q) != ' ' {
                format!("{} ", under(q))
            } else {
                ". ".to_string()
            };
            line.push(sep);
            line.push_str(&cell);
        }
        lines.push(line.trim_end().to_string());
        if r > 0 && (0..l.columns).any(|c| l.wall_between(Sq { c, r }, Sq { c, r: r - 1 })) {
            let mut w = String::from("    ");
            for c in 0..l.columns {
                w.push_str(if l.wall_between(Sq { c, r }, Sq { c, r: r - 1 }) { " --" } else { "   " });
            }
            lines.push(w.trim_end().to_string());
        }
    }
    lines.push(head);
    lines
}

fn role_text(s: &State, c: &Character) -> String {
    match (c.seat, s.mode) {
        (None, _) => "defender".into(),
        (Some(n), Mode::TwoBasic) => format!("runner {n}"),
        (Some(n), _) => format!("runner of {}-{n}", c.team.key()),
    }
}

fn flag_text(s: &State, t: Team) -> String {
    match s.flags.get(t) {
        FlagAt::Space(q) => format!("lying on {q}"),
        FlagAt::Carried(n) => format!("carried by {n} on {}", s.flag_space(t)),
    }
}

fn plan_lines(s: &State, role: &str) -> Vec<String> {
    let Some(p) = s.plans.get(role) else { return Vec::new() };
    let mut out = Vec::new();
    for (i, m) in p.moves.iter().enumerate() {
        let mut t = format!("move {}: {} with {}", i + 1, m.card.title(), m.token.title());
        if let Some(c) = m.combo {
            t.push_str(&format!(", combo {}", c.title()));
        }
        if let Some(c) = m.copy {
            t.push_str(&format!(", copying {}", c.title()));
        }
        t.push_str(&format!("; try {}", m.tries.iter().map(|x| format!("\"{x}\"")).collect::<Vec<_>>().join(", ")));
        out.extend(wrap(&t, 90));
    }
    if let Some(r) = &p.tie_first {
        out.push(format!("on a tie with your teammate: {r} first"));
    }
    out
}

/// Why a round stopped in Phase 2: the spy's question (Character Abilities, Spy) or a same-team
/// tie (Determine Move Order).
pub fn paused_for(s: &State) -> &'static str {
    if super::engine::spy_asked(s).is_some() { "the spy's question" } else { "a tie question" }
}

/// The board as data for the picture: size, columns out of play, walls, tunnels, traps, flags,
/// territories and the steps taken in the round's account (all public).
fn board_data(s: &State) -> Value {
    let rect = |t: Team| {
        let r = s.layout.territory.get(t);
        json!({ "columns": r.c, "rows": r.r })
    };
    let flag = |t: Team| json!({ "at": s.flag_space(t).to_string(), "carried": matches!(s.flags.get(t), FlagAt::Carried(_)) });
    json!({
        "columns": s.layout.columns,
        "rows": s.layout.rows,
        "out_columns": s.out_columns,
        "walls": s.layout.walls.iter().map(|[a, b]| [a.to_string(), b.to_string()]).collect::<Vec<_>>(),
        "tunnels": s.tunnels.iter().map(|q| q.to_string()).collect::<Vec<_>>(),
        "traps": s.traps.iter().map(|(q, o)| json!({ "at": q.to_string(), "by": o })).collect::<Vec<_>>(),
        "flags": { "white": flag(Team::White), "red": flag(Team::Red) },
        "territory": { "white": rect(Team::White), "red": rect(Team::Red) },
        "paths": s.trail.iter().map(|(n, a, b)| json!({ "name": n, "from": a.to_string(), "to": b.to_string() })).collect::<Vec<_>>(),
        // Before round 1 with a secret layout: what the board shows is the scenario's default
        // set-up, which each team may still change in its half.
        "setting_up": matches!(s.stage, Stage::Layout),
    })
}

/// The view of `role` (see the module doc for what is in it).
pub fn view(s: &State, role: &str) -> Value {
    let Some(me) = s.seat(role) else { return Value::Null };
    let marks = marks(s);
    let chars: Vec<Value> = s.chars.iter().enumerate().map(|(i, c)| char_json(s, i, c, marks[i])).collect();
    let seats: Vec<Value> = s.seats.iter().map(|x| seat_json(s, x)).collect();
    let team_plans: Vec<Value> = s
        .team_roles(me.team)
        .into_iter()
        .filter(|r| s.plans.contains_key(*r))
        .map(|r| json!({ "role": r, "lines": plan_lines(s, r) }))
        .collect();
    let asked = super::engine::spy_asked(s)
        .or_else(|| super::engine::tie_asked(s))
        .or_else(|| super::engine::layout_asked(s).into_iter().find(|r| r == role));
    let question = asked.filter(|r| r == role).map(|_| prompt(s, role));
    let spied: Vec<String> = s.spied.values().map(|t| wrap(t, 94).join("\n")).collect();
    let mut v = json!({
        "title": s.layout.title,
        "role": role,
        "team": me.team.name(),
        "run_cards": run_cards(me.team),
        "mode": mode_text(s.mode),
        "abilities": s.abilities,
        "phase_text": phase_text(s),
        "round": s.round,
        "board": board_lines(s),
        "flags": { "white": flag_text(s, Team::White), "red": flag_text(s, Team::Red) },
        "territory": { "white": territory_text(s, Team::White), "red": territory_text(s, Team::Red) },
        "tunnels": s.tunnels.iter().map(|q| q.to_string()).collect::<Vec<_>>().join(" "),
        "secret_tunnel": s.layout.secret_tunnel.as_ref().map(|st| json!({
            "entrance": st.entrance.to_string(), "white": st.exits.white.to_string(), "red": st.exits.red.to_string(),
        })),
        "tiebreak": s.tiebreak.name(),
        "log": if matches!(s.stage, Stage::Move { .. }) { s.log.as_slice() } else { &[] },
        "paused_for": paused_for(s),
        "question": question,
        "spied": spied,
        "traps": s.traps.iter().map(|(q, o)| format!("{q} ({o})")).collect::<Vec<_>>().join(", "),
    });
    // Values built here are moved in (`json!` would copy each by serializing it again).
    let map = v.as_object_mut().expect("an object");
    map.insert("characters".into(), Value::Array(chars));
    map.insert("seats".into(), Value::Array(seats));
    map.insert("team_plans".into(), Value::Array(team_plans));
    map.insert("board_data".into(), board_data(s));
    v
}

/// Where the game stands, in a line.
fn phase_text(s: &State) -> String {
    match s.stage {
        Stage::Layout => "Before round 1: each team sets up its half in secret".to_string(),
        Stage::Plan => format!("Round {} of at most {}: Phase 1, plan moves", s.round, s.layout.round_limit),
        Stage::Move { mv } => format!("Round {}: Phase 2, move {mv} ({})", s.round, paused_for(s)),
        Stage::Over => format!("The game is over (round {})", s.round),
    }
}

/// How many players, in words.
fn mode_text(mode: Mode) -> &'static str {
    match mode {
        Mode::Four => "4 players",
        Mode::Three => "3 players (one player holds both seats of a team)",
        Mode::TwoAdvanced => "2 players, advanced (each player holds both seats of a team)",
        Mode::TwoBasic => "2 players, basic (one hand per team, any character per move)",
    }
}

/// Character `i` (`c`, marked `mark` on the board): where it stands and what it holds.
fn char_json(s: &State, i: usize, c: &Character, mark: char) -> Value {
    let mut notes = Vec::new();
    if let Some(t) = s.carried_by(i) {
        notes.push(format!("CARRIES THE {} FLAG", t.name().to_ascii_uppercase()));
    }
    if !c.holds.is_empty() {
        notes.push(format!("holds character flags of {}", c.holds.join(", ")));
    }
    if let Some(a) = c.ability.filter(|_| s.abilities && c.is_runner()) {
        let sup = if c.supply > 0 { format!(" ({} tokens left)", c.supply) } else { String::new() };
        notes.push(format!("ability {a:?}{sup}").to_ascii_lowercase());
    }
    if c.trapped {
        notes.push("TRAPPED (only a reset token frees it)".into());
    }
    json!({
        "notes": notes.join("; "),
        "mark": mark.to_string(), "name": c.name, "team": c.team.name(), "role": role_text(s, c),
        "at": c.at.to_string(), "boosts": c.boosts, "flags_left": c.flags_left,
        "holds": c.holds, "carries": s.carried_by(i).map(|t| t.name()),
    })
}

/// A seat's tokens not yet revealed and its discarded ones.
fn seat_json(s: &State, x: &Seat) -> Value {
    // Behind the screen and not yet revealed: a planned token of a later move is counted
    // here, so a paused round does not tell which token a seat put on its next move.
    let revealed = match s.stage {
        Stage::Move { mv } => mv as usize,
        _ => usize::MAX,
    };
    let mut hidden = x.tokens.clone();
    if let Some(p) = s.plans.get(&x.role) {
        hidden.extend(p.moves.iter().skip(revealed).map(|m| m.token));
    }
    hidden.sort_by_key(|t| (t.priority(), t.key()));
    json!({
        "role": x.role, "team": x.team.name(),
        "tokens": hidden.iter().map(|t| t.title()).collect::<Vec<_>>().join(" "),
        "discarded": x.discarded.iter().map(|t| t.title()).collect::<Vec<_>>().join(" "),
    })
}

/// A team's territory as a range of spaces, e.g. `a1-i3`.
fn territory_text(s: &State, t: Team) -> String {
    let r = s.layout.territory.get(t);
    format!("{}{}-{}{}", (b'a' + r.c[0] as u8) as char, r.r[0] + 1, (b'a' + r.c[1] as u8) as char, r.r[1] + 1)
}

/// The Run cards and the direction each moves `team`, e.g. `forward n, back s, left w, right e`.
fn run_cards(team: Team) -> String {
    [Card::Forward, Card::Back, Card::Left, Card::Right]
        .iter()
        .map(|&c| format!("{} {}", c.key(), super::engine::run_dir(team, c).key()))
        .collect::<Vec<_>>()
        .join(", ")
}
