//! One cron run (`pbem adjudicate --all ROOT --mail CONFIG`): take mail in, resolve every due
//! step of every game, queue each player's new reports (and reminders), send the outbox.
//!
//! Reports are mailed from what is on disk, not from what this run did: `ROOT/.mail/mailed/GAME`
//! holds the newest record whose reports were queued, so a run killed after an adjudication and
//! before queueing its mails queues them next time (each mail's id is fixed by game, record and
//! role, so none is queued twice). A game first seen by a mail run gets only its newest reports.

use std::path::Path;

use chrono::{DateTime, Utc};

use super::compose::{self, Draft, stable_id};
use super::config::HostConfig;
use super::intake::{self, Source};
use super::outbox::Outbox;
use crate::error::{Error, Result};
use crate::model::{GameFile, Record};
use crate::pipeline::{self, Entropy};
use crate::{report, store};

/// What a cron run did to one game.
#[derive(Debug, Default)]
pub struct GameRun {
    /// The game id.
    pub game: String,
    /// One line: resolved steps, NMR, skipped, refused...
    pub summary: String,
    /// True when the game could not be handled (an error, not a lock).
    pub failed: bool,
}

/// What one cron run did.
#[derive(Debug, Default)]
pub struct CronRun {
    /// Messages taken in.
    pub intake: Vec<intake::Handled>,
    /// Sources that could not be read (a missing Maildir, an unreadable mbox); the games are
    /// still adjudicated and the outbox still sent.
    pub intake_errors: Vec<String>,
    /// Per game.
    pub games: Vec<GameRun>,
    /// Mails queued in this run.
    pub queued: Vec<String>,
    /// The outbox flush (None without a transport).
    pub flushed: Option<super::outbox::Flushed>,
}

/// Runs intake, adjudication, mailing and sending for every game under `root`.
pub fn run(root: &Path, cfg: &HostConfig, now: DateTime<Utc>, entropy: &mut Entropy) -> Result<CronRun> {
    if !root.is_dir() {
        return Err(Error::input(root, "no such folder of games"));
    }
    intake::make_state_dir(root)?;
    let mut out = CronRun::default();
    let mut sources: Vec<Source> = cfg.intake.maildir.iter().map(|d| Source::Maildir(d.clone())).chain(cfg.intake.mbox.iter().map(|f| Source::Mbox(f.clone()))).collect();
    // A host taking mail only from a pipe (`intake --stdin`) has no source here, but a piped
    // message left waiting (its game was busy) sits in the spool: take it in with the rest.
    let spool = intake::state_dir(root).join("spool");
    if sources.is_empty() && spool.join("new").is_dir() {
        sources.push(Source::Maildir(spool));
    }
    for source in sources {
        match intake::run(root, &source, cfg, now) {
            Ok(h) => out.intake.extend(h),
            Err(Error::Locked(_)) => {}
            Err(e) => out.intake_errors.push(e.to_string()),
        }
    }
    let outbox = Outbox::under(root);
    for dir in pipeline::games_under(root)? {
        let mut g = GameRun { game: dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(), ..Default::default() };
        match adjudicate_one(&dir, now, entropy) {
            Ok(s) => g.summary = s,
            Err(Error::Locked(_)) => g.summary = "skipped, locked by another run".into(),
            Err(e) => {
                g.summary = e.to_string();
                g.failed = true;
            }
        }
        match queue_game_mail(&dir, cfg, &outbox, now) {
            Ok(ids) => out.queued.extend(ids),
            Err(e) => {
                g.summary.push_str(&format!("; mail not queued: {e}"));
                g.failed = true;
            }
        }
        out.games.push(g);
    }
    if let Some(t) = super::transport::from_config(&cfg.transport)? {
        out.flushed = Some(outbox.flush(t.as_ref(), now)?);
    }
    Ok(out)
}

/// Adjudicates one game (refused when the clock is behind its newest record).
fn adjudicate_one(dir: &Path, now: DateTime<Utc>, entropy: &mut Entropy) -> Result<String> {
    let a = pipeline::adjudicate(dir, now, entropy)?;
    let mut s = if a.resolved.is_empty() { "nothing due".to_string() } else { format!("resolved step(s) {}", a.resolved.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")) };
    if !a.nmr.is_empty() {
        s.push_str(&format!("; NMR: {}", a.nmr.iter().map(|(st, r)| format!("{r} in step {st}")).collect::<Vec<_>>().join(", ")));
    }
    if a.over {
        s.push_str("; game over");
    }
    Ok(s)
}

fn mailed_path(root: &Path, id: &str) -> std::path::PathBuf {
    intake::state_dir(root).join("mailed").join(id)
}

/// Queues the reports of every record not yet mailed, and due reminders; returns the ids queued.
pub fn queue_game_mail(dir: &Path, cfg: &HostConfig, outbox: &Outbox, now: DateTime<Utc>) -> Result<Vec<String>> {
    let g = pipeline::load(dir)?;
    let root = dir.parent().unwrap_or(Path::new("."));
    let mark = mailed_path(root, &g.gf.id);
    let first = if mark.exists() {
        store::read_text(&mark)?.trim().parse::<u64>().map_err(|_| Error::input(&mark, "not a record number"))? + 1
    } else {
        g.record.index
    };
    let mut queued = Vec::new();
    for n in first..=g.record.index {
        let rec = pipeline::read_record(&g.dir, n)?;
        let state = store::read_text(&g.dir.state(n))?;
        for seat in &g.gf.seats {
            let m = report_mail(&g.dir, &g.gf, g.game, &rec, &state, &seat.role, cfg, now)?;
            if outbox.queue(&m, now)? {
                queued.push(m.id);
            }
        }
        store::write_atomic(&mark, format!("{n}\n").as_bytes())?;
    }
    queued.extend(super::remind::queue_reminders(&g, cfg, outbox, now)?);
    Ok(queued)
}

/// A UTC timestamp (RFC 3339: a deadline, a receipt's time) as the player at `email` reads
/// it: `Wed 01 Jul 2026 09:00 EDT (2026-07-01T13:00:00Z)` in their configured zone, else
/// `Wed 01 Jul 2026 13:00 UTC`.
pub fn local_time(cfg: &HostConfig, email: &str, deadline: &str) -> String {
    match pipeline::parse_time(deadline) {
        Ok(t) => {
            let tz = cfg.zone_of(email);
            if tz == chrono_tz::UTC {
                format!("{} UTC", t.format("%a %d %b %Y %H:%M"))
            } else {
                format!("{} ({deadline})", t.with_timezone(&tz).format("%a %d %b %Y %H:%M %Z"))
            }
        }
        Err(_) => deadline.to_string(),
    }
}

#[allow(clippy::too_many_arguments)]
fn report_mail(
    dir: &store::GameDir,
    gf: &GameFile,
    game: &dyn crate::game::DynGame,
    rec: &Record,
    state: &str,
    role: &str,
    cfg: &HostConfig,
    now: DateTime<Utc>,
) -> Result<compose::Outgoing> {
    let seat = gf.seat(role).expect("seat of the game");
    let text = store::read_text(&dir.report(rec.index, role))?;
    let mut attachments = Vec::new();
    let mut head = String::new();
    let subject = if rec.outcome.is_some() {
        format!("[pbem {}] final result ({role})", gf.id)
    } else if rec.index == 0 {
        format!("[pbem {}] the game begins: your report ({role})", gf.id)
    } else {
        format!("[pbem {}] step {} resolved: your report ({role})", gf.id, rec.index)
    };
    if let Some(op) = &rec.opening {
        match report::order_form(game, gf, op, state, role, "")? {
            Some(form) => {
                head.push_str(&format!(
                    "Your orders for step {} are due by {}.\nThe order form is attached: fill it in, sign it (`pbem sign --key KEY FILE` fills the nonce) and send it back.\n\n",
                    op.step,
                    local_time(cfg, &seat.email, &op.deadline)
                ));
                attachments.push((format!("{}-step-{}-{role}.toml", gf.id, op.step), form.into_bytes()));
            }
            None => head.push_str(&format!("Step {} asks nothing of you; its deadline is {}.\n\n", op.step, local_time(cfg, &seat.email, &op.deadline))),
        }
    }
    compose::build(Draft {
        id: stable_id(&["report", &gf.id, &rec.index.to_string(), role]),
        from: &cfg.from,
        to: vec![seat.email.clone()],
        cc: vec![],
        subject,
        body: format!("{head}{text}"),
        attachments,
        in_reply_to: None,
        date: now,
    })
}
