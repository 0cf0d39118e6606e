//! What the `pbem intake` and `pbem adjudicate --all ROOT --mail CONFIG` commands print (the
//! clap definitions stay in `crate::cli`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Result, bail};
use chrono::{DateTime, Utc};

use super::config::HostConfig;
use crate::pipeline::Clock;
use super::intake::{self, Disposition, Source};

/// The config to use: `--config FILE`, else `ROOT/pbem-mail.toml`, else queue-only as `pbem@localhost`.
pub fn config_for(root: &Path, given: Option<&Path>) -> Result<HostConfig> {
    let default = root.join("pbem-mail.toml");
    Ok(match given {
        Some(p) => HostConfig::load(p)?,
        None if default.is_file() => HostConfig::load(&default)?,
        None => {
            eprintln!("warning: no --config and no {}: replies are queued (not sent) from pbem@localhost", default.display());
            HostConfig::queue_only("pbem@localhost")
        }
    })
}

/// `pbem intake`: from the source given, else from the config's `[intake]` Maildir and mbox.
pub fn intake(root: &Path, maildir: Option<PathBuf>, mbox: Option<PathBuf>, stdin: bool, config: Option<&Path>, clock: Clock) -> Result<ExitCode> {
    if !root.is_dir() {
        bail!("{}: no such folder of games", root.display());
    }
    let cfg = config_for(root, config)?;
    let sources = match (maildir, mbox, stdin) {
        (Some(d), None, false) => vec![Source::Maildir(d)],
        (None, Some(f), false) => vec![Source::Mbox(f)],
        (None, None, true) => vec![Source::Stdin],
        (None, None, false) => {
            let s: Vec<Source> = cfg.intake.maildir.iter().map(|d| Source::Maildir(d.clone())).chain(cfg.intake.mbox.iter().map(|f| Source::Mbox(f.clone()))).collect();
            if s.is_empty() {
                bail!("give --maildir DIR, --mbox FILE or --stdin, or set [intake] maildir or mbox in the host config");
            }
            s
        }
        _ => bail!("give only one of --maildir DIR, --mbox FILE, --stdin"),
    };
    let mut handled = Vec::new();
    for source in &sources {
        match intake::run(root, source, &cfg, clock) {
            Err(crate::error::Error::Locked(_)) => println!("skipped: another intake is running"),
            other => handled.extend(other?),
        }
    }
    if handled.is_empty() {
        println!("no new messages (a message taken in before is not handled again)");
    }
    for h in &handled {
        println!("{}: {}: {}", h.name, disposition_word(h.disposition), h.reason);
        for o in &h.orders {
            match (&o.receipt, &o.error) {
                (Some(r), _) => println!("  accepted {}: game {}, role {}, step {}, receipt {}, commitment {}", o.label, r.game, r.role, r.step, r.seq, r.commitment),
                (None, Some(e)) => println!("  refused {e}"),
                _ => {}
            }
        }
    }
    flush(root, &cfg, clock.now())?;
    // A message in failed/ is kept with its reason for the host: not an error of this run (and
    // for a `.forward` pipe a failure status would make the MTA bounce or retry a handled message).
    Ok(ExitCode::SUCCESS)
}

/// Where a message ended up, as `intake` and the cron run print it.
fn disposition_word(d: Disposition) -> &'static str {
    match d {
        Disposition::Done => "done",
        Disposition::Failed => "failed",
        Disposition::Retry => "left for the next run",
    }
}

/// Sends what the outbox holds through the configured transport (nothing for `kind = "none"`).
pub fn flush(root: &Path, cfg: &HostConfig, now: DateTime<Utc>) -> Result<bool> {
    let outbox = super::Outbox::under(root);
    let Some(t) = super::transport::from_config(&cfg.transport)? else {
        let n = outbox.pending()?.len();
        if n > 0 {
            println!("outbox: {n} mail(s) queued in {} (transport: none)", outbox.dir.display());
        }
        return Ok(true);
    };
    let f = outbox.flush(t.as_ref(), now)?;
    if f.busy {
        println!("outbox: another run is sending");
    }
    if !f.sent.is_empty() {
        println!("outbox: sent {} mail(s)", f.sent.len());
    }
    for (id, e) in &f.failed {
        eprintln!("outbox: {id} not sent (kept for the next run): {e}");
    }
    Ok(f.failed.is_empty())
}

/// `pbem adjudicate --all ROOT --mail CONFIG`: the cron run.
/// With `quiet`, games where nothing happened print nothing.
pub fn cron(root: &Path, config: &Path, clock: Clock, quiet: bool) -> Result<ExitCode> {
    let cfg = HostConfig::load(config)?;
    let r = super::cron::run(root, &cfg, clock, &mut crate::pipeline::Entropy::Os)?;
    for h in &r.intake {
        println!("mail {}: {}: {}", h.name, disposition_word(h.disposition), h.reason);
    }
    for e in &r.intake_errors {
        eprintln!("intake: {e}");
    }
    let mut failed = !r.intake_errors.is_empty();
    for g in &r.games {
        if g.failed {
            // The host must hear of it: cron mails what a run prints on stderr.
            eprintln!("{}: {}", g.game, g.summary);
        } else if !(quiet && g.summary == "nothing due") {
            println!("{}: {}", g.game, g.summary);
        }
        failed |= g.failed;
    }
    if !r.queued.is_empty() {
        println!("outbox: queued {} mail(s)", r.queued.len());
    }
    if let Some(f) = &r.flushed {
        if !f.sent.is_empty() {
            println!("outbox: sent {} mail(s)", f.sent.len());
        }
        for (id, e) in &f.failed {
            eprintln!("outbox: {id} not sent (kept for the next run): {e}");
        }
        failed |= !f.failed.is_empty();
    }
    Ok(if failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
