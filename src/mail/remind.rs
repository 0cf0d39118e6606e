//! Deadline reminders: a configurable time before a step's deadline, each asked player who has no
//! receipt yet gets one reminder (its id is fixed by game, step and role: never two).

use chrono::{DateTime, Utc};

use super::compose::{self, Draft, stable_id};
use super::config::HostConfig;
use super::outbox::Outbox;
use crate::error::Result;
use crate::pipeline::{self, Loaded};

/// The outbox id of the reminder to seat `role` for step `step` of game `id` whose newest record
/// has [`crate::due::short_sha`] `record` (one a step, seat and record, so a reminder is queued
/// once however many runs see it due; and again after a host record: a seat given to another
/// player, a deadline moved, a game restored or a deleted game's id reused, whose players or
/// deadline may not be those reminded, tester t25b-2).
pub fn reminder_id(id: &str, step: u64, record: u64, role: &str) -> String {
    stable_id(&["reminder", id, &step.to_string(), &format!("{record:016x}"), role])
}

/// The id an earlier version gave the reminder to seat `role` for step `step` of game `id`
/// (without the record): known to the outbox, it stands for this step's own record (the one
/// that opened it), not for a host record after it (tester t25c-1: an upgrade reminded every
/// awaited seat a second time).
fn reminder_id_before(id: &str, step: u64, role: &str) -> String {
    stable_id(&["reminder", id, &step.to_string(), role])
}

/// What happens without `role`'s orders in the open step of `g`, as its record would say it:
/// by the deadline, or after the game's grace, the game's default orders, or the built-in
/// player's once the seat has missed `bot_after` steps in a row; under the `wait` policy, nothing
/// (SPEC.md "NMR policy"; tester14 T14a-5: every reminder said the default orders).
fn without_orders(g: &Loaded, role: &str) -> Result<String> {
    if g.gf.nmr.policy == crate::model::NmrMode::Wait {
        // The step waits for every asked seat's orders (tester15 T15-5).
        return Ok("The game waits for your orders: the step is not resolved without them.".into());
    }
    let grace = g.gf.deadlines.grace_hours;
    let by = match grace {
        0 => "by the deadline".to_string(),
        1 => "within the hour of grace after the deadline".to_string(),
        h => format!("within the {h} hours of grace after the deadline"),
    };
    let missed = pipeline::missed_in_a_row(g, role)?;
    Ok(match g.gf.nmr.kind_for(missed) {
        "bot" => format!("Without orders {by}, the built-in player plays for you (the game's NMR policy)."),
        _ => format!("Without orders {by}, the game's default (NMR) orders are used for you."),
    })
}

/// Queues due reminders for the open step of `g`; returns the ids queued.
pub fn queue_reminders(g: &Loaded, cfg: &HostConfig, outbox: &Outbox, now: DateTime<Utc>) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let Some(op) = &g.record.opening else { return Ok(out) };
    // A paused game has no deadline running (`pbem resume` moves it on).
    if cfg.reminders.hours_before == 0 || op.paused.is_some() {
        return Ok(out);
    }
    let deadline = pipeline::parse_time(&op.deadline)?;
    // No window start before year 0 (a config of old could give hours enough to overflow).
    let window = deadline.checked_sub_signed(chrono::Duration::hours(i64::from(cfg.reminders.hours_before)));
    if now >= deadline || window.is_some_and(|w| now < w) {
        return Ok(out);
    }
    let receipts = pipeline::latest_receipts(&g.dir, op.step)?;
    let record = crate::due::short_sha(&g.record_bytes);
    for ask in &op.asks {
        if receipts.contains_key(&ask.role) {
            continue;
        }
        let Some(seat) = g.gf.seat(&ask.role) else { continue };
        let id = reminder_id(&g.gf.id, op.step, record, &ask.role);
        let before = || g.record.control.is_none() && outbox.knows(&reminder_id_before(&g.gf.id, op.step, &ask.role));
        if outbox.knows(&id) || before() {
            continue;
        }
        let body = format!(
            "Reminder: your orders for step {} of game {} ({}) are due by {}.\n\
             No orders from you have been received for this step. {}\n\
             Your last report holds the order form.\n",
            op.step,
            g.gf.id,
            ask.kind,
            super::config::seat_time(cfg, seat, &op.deadline),
            without_orders(g, &ask.role)?
        );
        let m = compose::build(Draft {
            id,
            from: &cfg.from,
            to: vec![seat.email.clone()],
            cc: vec![],
            subject: format!("[pbem {}] reminder, step {}: {}", g.gf.id, op.step, super::config::needed(cfg, seat, op, None)),
            body,
            attachments: vec![],
            in_reply_to: None,
            date: now,
        })?;
        if outbox.queue(&m, now)? {
            out.push(m.id);
        }
    }
    Ok(out)
}
