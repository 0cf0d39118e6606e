//! Press (njudge's word for players' messages through the judge) and teammates' plans by mail.
//!
//! A press message is mailed at once to each addressee and kept in `ROOT/.mail/press/GAME/ID.toml`
//! (the host's alone, like the rest of `ROOT/.mail/`), from where each addressee's next report
//! mail lists it. It never enters a record or a report file: those are public or replayed by
//! `pbem audit` from public records, and press is private (ARCHITECTURE.md "Press and teams").
//! A Flag Dash seat's accepted plan is mailed at once to its teammates, never to the other team.

use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::compose::{self, Draft, stable_id};
use super::config::HostConfig;
use super::config::state_dir;
use super::outbox::Outbox;
use super::reply::ReplyLedger;
use crate::error::{Error, Result};
use crate::model::{Receipt, Record};
use crate::team::{self, Press};
use crate::{pipeline, store};

/// The most bytes of text one press message may carry.
pub const MAX_PRESS_BYTES: usize = 8000;

/// Who a press message is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Whom {
    /// Every other seat of the game.
    All,
    /// The other seats of the sender's team.
    Team,
    /// These roles.
    Roles(Vec<String>),
}

impl Whom {
    /// How a mail or report names it.
    pub fn shown(&self) -> String {
        match self {
            Whom::All => "all".into(),
            Whom::Team => "team".into(),
            Whom::Roles(r) => r.join(", "),
        }
    }
}

/// One relayed press message, as kept in `ROOT/.mail/press/GAME/ID.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Kept {
    /// When the judge took it in (RFC 3339).
    time: String,
    /// The sender's roles.
    from: Vec<String>,
    /// Whom the sender addressed (`all`, `team`, or roles).
    whom: String,
    /// The roles it went to.
    to: Vec<String>,
    /// The text.
    text: String,
}

/// What a press message needs to be relayed.
pub(super) struct Relay<'a> {
    /// The game's folder.
    pub dir: &'a Path,
    /// The sender's roles in it.
    pub from: &'a [String],
    /// The sender's registered address (never sent a copy of their own press).
    pub from_addr: &'a str,
    /// Whom it is for.
    pub to: &'a Whom,
    /// The text.
    pub text: &'a str,
    /// A stable id for this press (message hash and place), so a message handled again after a
    /// kill relays nothing twice.
    pub id: String,
}

/// Relays one press message; `Ok(line)` says to whom it went, `Err(why)` why it was refused
/// (press off, to the other team under `press=team`, too long, an unknown role).
pub(super) fn relay(r: &Relay<'_>, outbox: &Outbox, cfg: &HostConfig, now: DateTime<Utc>) -> Result<std::result::Result<String, String>> {
    let g = pipeline::load(r.dir)?;
    let gid = g.gf.id.clone();
    let setting = Press::of(&g.gf)?;
    if setting == Press::None {
        return Ok(Err(format!("press is off in game {gid} (the host set press=none)")));
    }
    if r.text.trim().is_empty() {
        return Ok(Err("the press message has no text (write it between the press line and `endpress`)".into()));
    }
    if r.text.len() > MAX_PRESS_BYTES {
        return Ok(Err(format!("the press message has {} bytes; at most {MAX_PRESS_BYTES} are relayed", r.text.len())));
    }
    let to = match recipients(&g, r, setting)? {
        Ok(to) => to,
        Err(why) => return Ok(Err(why)),
    };
    let kept = Kept { time: pipeline::timestamp(now), from: r.from.to_vec(), whom: r.to.shown(), to: to.clone(), text: r.text.to_string() };
    let path = state_dir(r.dir.parent().unwrap_or(Path::new("."))).join("press").join(&gid).join(format!("{}.toml", r.id));
    if !path.exists() {
        store::make_dirs(path.parent().expect("press folder"), true)?;
        store::write_atomic(&path, toml::to_string(&kept).expect("press serializes").as_bytes())?;
    }
    let ledger = ReplyLedger::for_press(outbox, cfg);
    let mut over = Vec::new();
    let mut addrs: Vec<(String, Vec<String>)> = Vec::new();
    for role in &to {
        let email = &g.gf.seat(role).expect("seat").email;
        match addrs.iter_mut().find(|(a, _)| a.eq_ignore_ascii_case(email)) {
            Some((_, rs)) => rs.push(role.clone()),
            None => addrs.push((email.clone(), vec![role.clone()])),
        }
    }
    for (addr, roles_there) in addrs.iter().filter(|(a, _)| !a.eq_ignore_ascii_case(r.from_addr)) {
        let id = stable_id(&["press", &r.id, addr]);
        if !ledger.allows(addr, &id, now)? {
            over.push(roles_there.join(", "));
            continue;
        }
        let mail = compose::build(Draft {
            id: id.clone(),
            from: &cfg.from,
            to: vec![addr.clone()],
            cc: vec![],
            subject: format!("[pbem {gid}] press from {} to {}", kept.from.join(", "), kept.whom),
            body: format!("{}\nTo answer, write to the judge a line `press {gid} to {}`, your text, and a line `endpress`.\n", entry_text(&kept, &super::config::local_time(cfg, addr, &kept.time)), kept.from[0]),
            attachments: vec![],
            in_reply_to: None,
            date: now,
        })?;
        outbox.queue(&mail, now)?;
        ledger.record(addr, &id, now)?;
    }
    let mut line = format!("press to {} in game {gid}: relayed to {}; listed in their next reports", kept.whom, to.join(", "));
    if !over.is_empty() {
        line.push_str(&format!(" (not mailed now to {}: over the hourly mail cap)", over.join("; ")));
    }
    Ok(Ok(line))
}

/// The roles a press message goes to, or why it goes to none (an unknown role, outside the team
/// under `press=team`, nobody there).
fn recipients(g: &pipeline::Loaded, r: &Relay<'_>, setting: Press) -> Result<std::result::Result<Vec<String>, String>> {
    let gid = &g.gf.id;
    let teams = team::teams(g)?;
    let mine: Vec<&String> = r.from.iter().filter_map(|role| teams.get(role)).collect();
    let roles: Vec<String> = g.gf.seats.iter().map(|s| s.role.clone()).filter(|role| !r.from.contains(role)).collect();
    let to: Vec<String> = match r.to {
        Whom::All => roles.clone(),
        Whom::Team => roles.iter().filter(|role| teams.get(*role).is_some_and(|t| mine.contains(&t))).cloned().collect(),
        Whom::Roles(named) => {
            let mut out = Vec::new();
            for n in named {
                match roles.iter().find(|role| role.eq_ignore_ascii_case(n)) {
                    Some(role) if !out.contains(role) => out.push(role.clone()),
                    Some(_) => {}
                    None => return Ok(Err(format!("game {gid} has no other seat {:?}; its seats: {}", super::reply::shorten(n), roles.join(", ")))),
                }
            }
            out
        }
    };
    if setting == Press::Team {
        let outside: Vec<&String> = to.iter().filter(|role| !teams.get(*role).is_some_and(|t| mine.contains(&t))).collect();
        if !outside.is_empty() || *r.to == Whom::All {
            return Ok(Err(format!("in game {gid} press goes to your own team only (the host set press=team)")));
        }
    }
    if to.is_empty() {
        return Ok(Err(format!("in game {gid} you have no {} to send it to", if *r.to == Whom::Team { "teammate" } else { "other seat" })));
    }
    Ok(Ok(to))
}

/// One kept press message as a mail or a report shows it, each line [`crate::text::shown_safely`].
fn entry_text(k: &Kept, when: &str) -> String {
    let mut s = format!("Press from {} to {} ({when}):\n", k.from.join(", "), k.whom);
    for line in k.text.lines() {
        s.push_str(&format!("  | {}\n", crate::text::shown_safely(line)));
    }
    s
}


/// When record `rec` was written: its opening's time, else its resolution's, else the host
/// control's (a game the host ended has neither an opening nor a resolution in its last record).
pub(super) fn record_time(rec: &Record) -> Result<DateTime<Utc>> {
    let opened = rec.opening.as_ref().map(|o| o.opened.as_str());
    let t = opened.or(rec.resolution.as_ref().map(|r| r.resolved.as_str())).or(rec.control.as_ref().map(|c| c.at.as_str())).unwrap_or_default();
    pipeline::parse_time(t)
}

/// The press `role` of game `game` received after `since` and up to `upto`, oldest first, as the
/// report mail lists it (empty when there is none).
pub(super) fn listed(root: &Path, game: &str, role: &str, since: Option<DateTime<Utc>>, upto: DateTime<Utc>) -> Result<String> {
    let dir = state_dir(root).join("press").join(game);
    let mut found: Vec<(DateTime<Utc>, String, Kept)> = Vec::new();
    for name in store::list(&dir)?.into_iter().filter(|n| n.ends_with(".toml")) {
        let path = dir.join(&name);
        let k: Kept = toml::from_str(&store::read_text(&path)?).map_err(|e| Error::input(&path, e.message().to_string()))?;
        let t = pipeline::parse_time(&k.time)?;
        if k.to.iter().any(|r| r == role) && since.is_none_or(|s| t > s) && t <= upto {
            found.push((t, name, k));
        }
    }
    if found.is_empty() {
        return Ok(String::new());
    }
    found.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let mut s = String::from("Press you received since your last report:\n\n");
    for (_, _, k) in &found {
        s.push_str(&entry_text(k, &k.time));
        s.push('\n');
    }
    Ok(s)
}

/// Mails each accepted plan in `receipts` at once to the seat's teammates (Flag Dash), never to
/// the other team, and not to the address that sent it; returns a line per plan mailed.
pub(super) fn mail_plans(dir: &Path, receipts: &[&Receipt], sender: &str, outbox: &Outbox, cfg: &HostConfig, now: DateTime<Utc>) -> Result<Vec<String>> {
    let g = pipeline::load(dir)?;
    let mut lines = Vec::new();
    if !g.game.teammates_see_plans() {
        return Ok(lines);
    }
    for rc in receipts {
        let Some(plan) = team::plan_of(&g, &rc.role)?.filter(|p| p.seq == rc.seq && p.step == rc.step) else { continue };
        let mut told = Vec::new();
        for mate in team::teammates(&g, &rc.role)? {
            let email = &g.gf.seat(&mate).expect("seat").email;
            let own = g.gf.seat(&rc.role).is_some_and(|s| compose::same_address(&s.email, email));
            if own || compose::same_address(email, sender) || team::on_other_team(&g, &rc.role, email)? {
                continue;
            }
            let mail = compose::build(Draft {
                id: stable_id(&["plan", &g.gf.id, &rc.step.to_string(), &rc.role, &rc.seq.to_string(), &mate]),
                from: &cfg.from,
                to: vec![email.clone()],
                cc: vec![],
                subject: format!("[pbem {}] your teammate {}'s plan for step {} ({mate})", g.gf.id, rc.role, rc.step),
                body: format!(
                    "{}Teammates may look at each other's plans at any time (the other team never sees them\nhere). A later plan from {} replaces this one and is mailed to you too.\n",
                    team::plans_text(std::slice::from_ref(&plan)),
                    rc.role
                ),
                attachments: vec![],
                in_reply_to: None,
                date: now,
            })?;
            outbox.queue(&mail, now)?;
            told.push(mate);
        }
        if !told.is_empty() {
            lines.push(format!("your plan for step {} of game {} was mailed to your teammate(s) {}", rc.step, g.gf.id, told.join(", ")));
        }
    }
    Ok(lines)
}
