//! Host controls: a seat's address or key changed, the deadline moved, the game paused and
//! resumed, or abandoned; and the game's end by its players (a resignation, an agreed draw): each
//! a host-signed record in the hash chain (SPEC.md "Host controls", "Ending by the players").

use std::path::Path;

use chrono::{DateTime, Utc};

use crate::error::{Error, Missing, Result, Setting};
use crate::game::{Outcome, Publication};
use crate::model::{Control, ControlAction, GameFile, Opening, Record, SeatChange};
use crate::pipeline::{self, Clock, Loaded};
use crate::sig;
use crate::store::{self, GameDir};

/// How a deadline moves (`pbem deadline`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadlineMove {
    /// Later by this long.
    Extend(chrono::Duration),
    /// To this time.
    To(DateTime<Utc>),
}

/// What the host asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// A seat's new address, key or time zone, or more of them (the key as an OpenSSH public key
    /// line).
    Seat {
        /// The role, matched without regard to case ("Union" is `union`).
        role: String,
        /// The new address, if it changes.
        email: Option<String>,
        /// The new key line, if it changes.
        key: Option<String>,
        /// The seat's new time zone (an IANA name), if it changes.
        time_zone: Option<String>,
    },
    /// Move the open step's deadline.
    Deadline(DeadlineMove),
    /// Pause the game.
    Pause,
    /// Resume a paused game.
    Resume,
    /// End the game without a result.
    Abandon,
}

/// The outcome of a game the host abandoned, as its last record states it.
pub fn abandoned(reason: &str) -> Outcome {
    Outcome { winner: None, summary: format!("The host ended the game without a result: {reason}") }
}

/// Parses `48h`, `3d`, `90m` (a deadline extension).
pub fn parse_duration(s: &str) -> Result<chrono::Duration> {
    let bad = || Error::Usage(format!("bad duration {s:?}: write a whole number and a unit, e.g. 48h, 3d or 90m"));
    let unit = s.chars().last().ok_or_else(bad)?;
    let n: i64 = s[..s.len() - unit.len_utf8()].parse().map_err(|_| bad())?;
    let per = match unit {
        'm' => 1,
        'h' => 60,
        'd' => 60 * 24,
        _ => return Err(bad()),
    };
    // Checked: `--extend 99999999999999999d` is too long, not a wrapped (or panicking) product.
    let minutes = n.checked_mul(per).unwrap_or(i64::MAX);
    if !(1..=60 * 24 * 366).contains(&minutes) {
        return Err(Error::Usage(format!("duration {s:?}: between a minute and a year")));
    }
    Ok(chrono::Duration::minutes(minutes))
}

/// Applies a host control to the game in `dir` and commits its record (with every role's report,
/// which announces it). The clock is read once the game's lock is held.
pub fn apply(dir: &Path, req: Request, reason: &str, clock: impl Into<Clock>) -> Result<Record> {
    let gd = GameDir::new(dir);
    let _lock = pipeline::lock_waiting(&gd)?;
    pipeline::finish_seat_change(&gd)?;
    let now = clock.into().now();
    let g = pipeline::load_locked(dir)?;
    pipeline::check_clock(&g, now)?;
    let Some(op) = g.record.opening.clone() else {
        return Err(Error::Refused(format!("game {} is over; there is nothing to change", g.gf.id)));
    };
    pipeline::check_clock_receipts(&g, &pipeline::read_receipts(&g.dir, op.step)?, now)?;
    // The players' accepted orders ended the game (a resignation, or every seat's standing draw
    // offer) but a run killed before its record left the game open (tester14 T14a-6): the end
    // is written first, as the next submit or adjudication would, and the control refused.
    if let Some(end) = pipeline::end_by_players(&g, now)? {
        let summary = end.outcome.map(|o| o.summary).unwrap_or_default();
        return Err(Error::Refused(format!(
            "game {} is over: {summary} (the players' accepted orders ended it; its record {}, which an interrupted run left unwritten, is written now); there is nothing to change",
            g.gf.id, end.index
        )));
    }
    if reason.contains('\n') || reason.len() > 500 {
        return Err(Error::setting(Setting::Reason, "one line of at most 500 characters"));
    }
    let n = g.record.index + 1;
    let action = match &req {
        Request::Seat { .. } => ControlAction::Seat,
        Request::Deadline(_) => ControlAction::Deadline,
        Request::Pause => ControlAction::Pause,
        Request::Resume => ControlAction::Resume,
        Request::Abandon => ControlAction::Abandon,
    };
    let state_key = pipeline::read_state_key(&g.dir)?;
    let mut rec = Record {
        game: g.gf.id.clone(),
        index: n,
        prev: Some(crate::commit::sha256_hex(&store::read(&g.dir.record(g.record.index))?)),
        setup: None,
        control: Some(Control { action, at: pipeline::timestamp(now), reason: reason.to_string(), seat: None, orders: Vec::new() }),
        resolution: None,
        state: pipeline::state_commitment(&g.gf.id, n, &state_key, &g.state),
        state_key: None,
        reveals: Vec::new(),
        opening: Some(op.clone()),
        outcome: None,
    };
    let mut gf = g.gf.clone();
    match req {
        Request::Seat { role, email, key, time_zone } => {
            let change = change_seat(&g, &mut gf, &role, (email, key, time_zone))?;
            let text = toml::to_string(&gf).expect("game file serializes");
            let scenario = store::read(&g.dir.scenario_file())?;
            rec.setup = Some(pipeline::setup_hash(text.as_bytes(), &scenario));
            rec.control.as_mut().expect("control").seat = Some(change);
            commit(&g, &gf, &rec, Some(text))?;
            return Ok(rec);
        }
        Request::Deadline(m) => rec.opening = Some(move_deadline(&op, m, now)?),
        Request::Pause => {
            if let Some(since) = &op.paused {
                return Err(Error::Refused(format!("game {} is already paused (since {since})", g.gf.id)));
            }
            rec.opening.as_mut().expect("opening").paused = Some(pipeline::timestamp(now));
        }
        Request::Resume => rec.opening = Some(resumed(&op, now).map_err(Error::Refused)?.ok_or_else(|| Error::Refused(format!("game {} is not paused", g.gf.id)))?),
        Request::Abandon => {
            if reason.trim().is_empty() {
                return Err(Error::Missing(Missing::AbandonReason));
            }
            rec.opening = None;
            rec.outcome = Some(abandoned(reason));
            rec.state_key = Some(hex::encode(state_key));
            rec.reveals = pipeline::outstanding_reveals(&g.dir, &g.gf.id, g.record.index, Publication::Now, true)?;
        }
    }
    if let Some(op) = &rec.opening {
        // A moved deadline and its grace stay a time the judge can work out (before year 10000).
        let deadline = pipeline::parse_time(&op.deadline)?;
        crate::when::later_hours(deadline, gf.deadlines.grace_hours).map_err(|e| Error::Refused(format!("the deadline and grace: {e}")))?;
    }
    commit(&g, &gf, &rec, None)?;
    Ok(rec)
}

/// The opening after a resume at `now`: the deadline later by the time paused. `Ok(None)` when
/// the opening is not paused; an error when that deadline would be past year 9999 (pbem could
/// not read it back). The audit checks a resume record with this.
pub fn resumed(op: &Opening, now: DateTime<Utc>) -> std::result::Result<Option<Opening>, String> {
    let (Some(since), Ok(deadline)) = (op.paused.as_deref().and_then(|p| pipeline::parse_time(p).ok()), pipeline::parse_time(&op.deadline)) else { return Ok(None) };
    let deadline = crate::when::later(deadline, (now - since).max(chrono::Duration::zero())).map_err(|e| format!("the deadline moved on by the time paused: {e}"))?;
    Ok(Some(Opening { deadline: pipeline::timestamp(deadline), paused: None, ..op.clone() }))
}

fn move_deadline(op: &Opening, m: DeadlineMove, now: DateTime<Utc>) -> Result<Opening> {
    if op.paused.is_some() {
        return Err(Error::Refused("the game is paused: resume it first (`pbem resume`), which moves the deadline on by the time paused".into()));
    }
    let old = pipeline::parse_time(&op.deadline)?;
    let new = match m {
        DeadlineMove::Extend(d) => crate::when::later(old, d).map_err(|e| Error::Usage(format!("the new deadline: {e}")))?,
        DeadlineMove::To(t) => t,
    };
    if new <= now {
        return Err(Error::Usage(format!("the new deadline {} is not in the future (now {})", pipeline::timestamp(new), pipeline::timestamp(now))));
    }
    // Only later: a deadline cut short would NMR players before the notice reaches them (the
    // audit refuses an earlier one). At most a year ahead, so every deadline (and a resume's,
    // later by the time paused) stays a time the records can hold.
    if new < old {
        return Err(Error::Usage(format!("a deadline can only be moved later: {} is before the deadline {}", pipeline::timestamp(new), op.deadline)));
    }
    if new > now + chrono::Duration::days(366) {
        return Err(Error::Usage(format!("the new deadline {} is more than a year from now", pipeline::timestamp(new))));
    }
    if new == old {
        return Err(Error::Refused(format!("the deadline is already {}", op.deadline)));
    }
    Ok(Opening { deadline: pipeline::timestamp(new), ..op.clone() })
}

/// A seat's new holder may not hold the host's key (the host could then sign that seat's
/// orders), nor share an address or key with a seat of another team (that address would get the
/// other team's plans and press, and one player would play both sides: [`pipeline::check_sides`]).
fn check_seat_holder(g: &Loaded, gf: &GameFile, changed: &crate::model::Seat) -> Result<()> {
    if pipeline::same_key(&changed.key, &gf.host_key) {
        return Err(Error::setting(Setting::NewKey, format!("that is the host's key; seat {} needs its player's own key", changed.role)));
    }
    pipeline::check_sides(g.game, &g.state, &gf.seats, Some(&changed.role))
}

/// Changes `role`'s seat in `gf` (`role` in any case) to the address, key and time zone given;
/// the change as the record keeps it (with the old game.toml, and the zone only when given).
fn change_seat(g: &Loaded, gf: &mut GameFile, role: &str, (email, key, time_zone): (Option<String>, Option<String>, Option<String>)) -> Result<SeatChange> {
    let roles: Vec<&str> = g.gf.seats.iter().map(|s| s.role.as_str()).collect();
    let seat = gf
        .seats
        .iter_mut()
        .find(|s| s.role.eq_ignore_ascii_case(role.trim()))
        .ok_or_else(|| Error::setting(Setting::SeatRole(role.to_string()), format!("no such seat; seats: {}", roles.join(", "))))?;
    if email.is_none() && key.is_none() && time_zone.is_none() {
        return Err(Error::Missing(Missing::SeatChange));
    }
    if let Some(z) = &time_zone {
        crate::when::parse_zone(z).map_err(|why| Error::setting(Setting::NewTimeZone(z.clone()), why))?;
        seat.time_zone = Some(z.clone());
    }
    if let Some(e) = email {
        if let Err(why) = crate::mail::compose::check_seat_address(&e) {
            return Err(Error::setting(Setting::Email(e), why));
        }
        seat.email = e;
    }
    if let Some(k) = key {
        let pk = sig::public_key_line(k.trim()).map_err(|e| Error::setting(Setting::NewKey, e.to_string()))?;
        seat.key = pk.to_openssh().map_err(|e| Error::Key(e.to_string()))?;
    }
    let changed = seat.clone();
    let in_force = pipeline::setup_in_force(&g.dir, g.record.index)?;
    if pipeline::setup_hash(&store::read(&g.dir.game_file())?, &store::read(&g.dir.scenario_file())?) != in_force {
        return Err(Error::input(g.dir.game_file(), "is not the setup the game's records name (edited by hand?): restore it before a seat change, which the audit could never pass on top of it"));
    }
    if g.gf.seat(&changed.role) == Some(&changed) {
        return Err(Error::Refused(format!("seat {} already has that address, key and time zone: nothing to change", changed.role)));
    }
    check_seat_holder(g, gf, &changed)?;
    Ok(SeatChange { role: changed.role, email: changed.email, key: changed.key, time_zone, before: store::read_text(&g.dir.game_file())? })
}

/// Writes the reports (rendered first), the state copy, a new `game.toml` if given, and the
/// record, the commit point.
fn commit(g: &Loaded, gf: &GameFile, rec: &Record, game_toml: Option<String>) -> Result<()> {
    // The reports are rendered with the new game file first, so a failed render changes nothing.
    let env = crate::report::environment(crate::report::override_dir())?;
    for seat in &gf.seats {
        crate::report::render(&env, g.game, gf, rec, &[], &g.state, &seat.role)?;
    }
    // A new game.toml waits in host/ until the record (the commit point) is written, then takes
    // its place; a run killed in between is finished or undone by the next one
    // (`pipeline::finish_seat_change`), so game.toml never names a setup the records do not.
    let next = pipeline::pending_game_file(&g.dir);
    if let Some(text) = &game_toml {
        store::write_atomic(&next, text.as_bytes())?;
    }
    pipeline::stage_record(Vec::new(), &g.dir, gf, g.game, rec, &[], &g.state, &pipeline::host_key(&g.dir)?)?.commit()?;
    if let Some(text) = &game_toml {
        store::write_atomic(&g.dir.game_file(), text.as_bytes())?;
        std::fs::remove_file(&next).map_err(|e| store::io(&next, e))?;
    }
    Ok(())
}

