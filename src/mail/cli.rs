//! What the `pbem intake` and `pbem adjudicate --all ROOT --mail CONFIG` commands print (the
//! clap definitions stay in the top-level `cli` module).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Result, bail};
use chrono::{DateTime, Utc};

use super::config::HostConfig;
use crate::pipeline::Clock;
use super::intake::{self, Disposition, Handled, Source};
use super::outbox::{Flushed, Outbox};

/// The config to use: `--config FILE`, else `ROOT/pbem-mail.toml`, else queue-only as `pbem@localhost`.
pub fn config_for(root: &Path, given: Option<&Path>) -> Result<HostConfig> {
    let default = root.join("pbem-mail.toml");
    Ok(match given {
        Some(p) => HostConfig::load(p)?,
        None if default.is_file() => HostConfig::load(&default)?,
        None => {
            crate::errln!("warning: no --config and no {}: replies are queued (not sent) from pbem@localhost", default.display());
            HostConfig::queue_only("pbem@localhost")
        }
    })
}

/// `pbem intake`: from the source given, else from the config's `[intake]` Maildir and mbox.
/// With `quiet`, only problems are printed (one line each): nothing when all went well.
#[allow(clippy::too_many_arguments)]
pub fn intake(root: &Path, maildir: Option<PathBuf>, mbox: Option<PathBuf>, stdin: bool, config: Option<&Path>, clock: Clock, quiet: bool) -> Result<ExitCode> {
    if !root.is_dir() {
        bail!("{}: no such folder of games", root.display());
    }
    let cfg = config_for(root, config)?;
    let sources = match (maildir, mbox, stdin) {
        (Some(d), None, false) => vec![Source::Maildir(d)],
        (None, Some(f), false) => vec![Source::Mbox(f)],
        (None, None, true) => vec![Source::Stdin],
        (None, None, false) => {
            let s = intake::config_sources(&cfg);
            if s.is_empty() {
                // A usage error (exit 2: README "Exit status", tester18 T18-5).
                return Err(crate::error::Error::Missing(crate::error::Missing::IntakeSource).into());
            }
            s
        }
        _ => bail!("give only one of --maildir DIR, --mbox FILE, --stdin"),
    };
    let (mut handled, mut skipped) = (Vec::new(), false);
    for source in &sources {
        match intake::run(root, source, &cfg, clock) {
            Err(crate::error::Error::Locked(_)) => {
                skipped = true;
                if !quiet {
                    crate::outln!("skipped: another intake is running");
                }
            }
            other => handled.extend(other?),
        }
    }
    // Messages another run is taking in are not "no new messages" (tester T23a-3).
    if handled.is_empty() && !quiet && !skipped {
        crate::outln!("no new messages (a message taken in before is not handled again)");
    }
    for h in &handled {
        match (quiet, h.is_problem()) {
            (true, false) => continue,
            // README "Output and exit status": with --quiet, one line per problem on stderr.
            (true, true) => crate::errln!("{}: {}: {}", h.name, disposition_word(h.disposition), h.reason),
            (false, _) => crate::outln!("{}: {}: {}", h.name, disposition_word(h.disposition), h.reason),
        }
        for o in h.orders.iter().filter(|_| !quiet) {
            match (&o.receipt, &o.error) {
                (Some(r), _) => crate::outln!("  accepted {}: game {}, role {}, step {}, receipt {}, commitment {}", o.label, r.game, r.role, r.step, r.seq, r.commitment),
                (None, Some(e)) => crate::outln!("  refused {}", e.replace('\n', "\n    ")),
                _ => {}
            }
        }
    }
    let queued = super::outbox::queued_by_this_process();
    let dead = flush(root, &cfg, clock.now(), queued, quiet)?;
    // A message in failed/ is kept with its reason for the host: not an error of this run. A mail
    // moved to `dead/` needs the host, as in the cron run (README "Mail that cannot be sent"),
    // except from a `.forward` pipe: there a failure status would make the MTA bounce or retry
    // the message just taken in.
    // So does a message that waits for its game's folder to be mended (tester t25d D4).
    let held = handled.iter().any(Handled::waits_for_host);
    Ok(if (dead > 0 || held) && !stdin { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Where a message ended up, as `intake` and the cron run print it.
fn disposition_word(d: Disposition) -> &'static str {
    match d {
        Disposition::Done => "done",
        Disposition::Failed => "failed",
        Disposition::Retry => "left for the next run",
    }
}

/// Sends what the outbox holds through the configured transport (nothing for `kind = "none"`)
/// and prints what happened ([`print_flush`]); returns how many mails it moved to `dead/`.
pub fn flush(root: &Path, cfg: &HostConfig, now: DateTime<Utc>, queued: usize, quiet: bool) -> Result<usize> {
    let outbox = super::Outbox::under(root);
    let Some(t) = super::transport::from_config(&cfg.transport)? else {
        let n = outbox.pending()?.len();
        if n > 0 && !quiet {
            crate::outln!("outbox: {n} mail(s) queued in {} (transport: none)", outbox.dir.display());
        }
        return Ok(0);
    };
    let f = outbox.flush(t.as_ref(), now)?;
    print_flush(&outbox, &f, queued, quiet);
    Ok(f.dead.len())
}

/// Prints what a flush did: each problem on stderr in one line (a server that cannot be reached
/// is one line, however many mails wait; a mail refused for good is told here, once); unless
/// `quiet`, one line of counts on stdout. `queued`: mails queued by this run. False when something
/// went wrong (a mail not sent or refused, the server not reached).
pub fn print_flush(outbox: &Outbox, f: &Flushed, queued: usize, quiet: bool) -> bool {
    if !quiet && (queued > 0 || !f.sent.is_empty() || f.waiting > 0) {
        let busy = if f.busy { " (another run is sending them)" } else { "" };
        crate::outln!("outbox: {queued} queued in this run, {} sent, {} waiting{busy}", f.sent.len(), f.waiting);
    }
    for d in &f.dead {
        crate::errln!("outbox: mail {} to {} refused, moved to {} and never tried again: {}", d.id, d.to.join(", "), outbox.dead_dir().join(format!("{}.eml", d.id)).display(), d.reason);
    }
    // Told (stderr is unbuffered): no later run tells them again. A mark that cannot be removed
    // only makes the next run tell the letter once more.
    if let Err(e) = outbox.told(&f.dead) {
        crate::errln!("outbox: {e}");
    }
    // One line per reason, however many mails it kept back (a greylisting server answers every
    // mail the same).
    let mut by_reason: std::collections::BTreeMap<&str, Vec<(&str, &str)>> = std::collections::BTreeMap::new();
    for (id, to, e) in &f.failed {
        by_reason.entry(e.as_str()).or_default().push((id.as_str(), to.as_str()));
    }
    for (e, ids) in by_reason {
        match ids.as_slice() {
            [(id, "")] => crate::errln!("outbox: mail {id} not sent (kept for the next run): {e}"),
            [(id, to)] => crate::errln!("outbox: mail {id} to {to} not sent (kept for the next run): {e}"),
            _ => crate::errln!("outbox: {} mails not sent (kept for the next run), the first {}: {e}", ids.len(), ids[0].0),
        }
    }
    if let Some(why) = &f.unreachable {
        crate::errln!("outbox: {why}; {} mail(s) wait for the next run", f.waiting);
    }
    f.dead.is_empty() && f.failed.is_empty() && f.unreachable.is_none()
}

/// `pbem adjudicate --all ROOT --mail CONFIG`: the cron run.
/// With `quiet`, only problems are printed (one line each): nothing when all went well. Exit
/// status 1 when something needs the host: a game that failed, a source that could not be read, a
/// mail not sent or refused for good (only in the run that moved it to `dead/`).
pub fn cron(root: &Path, config: &Path, clock: Clock, quiet: bool) -> Result<ExitCode> {
    let cfg = HostConfig::load(config)?;
    let r = super::cron::run(root, &cfg, clock, &mut crate::pipeline::Entropy::Os)?;
    for h in r.intake.iter().filter(|h| !quiet || h.is_problem()) {
        if quiet {
            crate::errln!("mail {}: {}: {}", h.name, disposition_word(h.disposition), h.reason);
        } else {
            crate::outln!("mail {}: {}: {}", h.name, disposition_word(h.disposition), h.reason);
        }
    }
    for e in &r.intake_errors {
        crate::errln!("intake: {e}");
    }
    let mut failed = !r.intake_errors.is_empty() || r.intake.iter().any(Handled::waits_for_host);
    for g in &r.games {
        if g.failed {
            // The host must hear of it: cron mails what a run prints on stderr.
            crate::errln!("{}: {}", g.game, g.summary);
        } else if !quiet || g.held {
            crate::outln!("{}: {}", g.game, g.summary);
        }
        failed |= g.failed;
    }
    for (line, bad) in &r.published {
        if *bad {
            crate::errln!("{line}");
            failed = true;
        } else if !quiet {
            crate::outln!("{line}");
        }
    }
    let queued = super::outbox::queued_by_this_process();
    match &r.flushed {
        Some(f) => failed |= !print_flush(&super::Outbox::under(root), f, queued, quiet),
        None if queued > 0 && !quiet => crate::outln!("outbox: {queued} queued in this run (transport: none)"),
        None => {}
    }
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
