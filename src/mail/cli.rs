//! What the `pbem intake` and `pbem adjudicate --all ROOT --mail CONFIG` commands print (the
//! clap definitions stay in `crate::cli`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Result, bail};
use chrono::{DateTime, Utc};

use super::config::HostConfig;
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

/// `pbem intake`.
pub fn intake(root: &Path, maildir: Option<PathBuf>, mbox: Option<PathBuf>, stdin: bool, config: Option<&Path>, now: DateTime<Utc>) -> Result<ExitCode> {
    let cfg = config_for(root, config)?;
    let source = match (maildir, mbox, stdin) {
        (Some(d), None, false) => Source::Maildir(d),
        (None, Some(f), false) => Source::Mbox(f),
        (None, None, true) => Source::Stdin,
        _ => bail!("give exactly one of --maildir DIR, --mbox FILE, --stdin"),
    };
    let handled = match intake::run(root, &source, &cfg, now) {
        Err(crate::error::Error::Locked(_)) => {
            println!("skipped: another intake is running");
            return Ok(ExitCode::SUCCESS);
        }
        other => other?,
    };
    let mut failed = 0;
    for h in &handled {
        let where_ = match h.disposition {
            Disposition::Done => "done",
            Disposition::Failed => {
                failed += 1;
                "failed"
            }
            Disposition::Retry => "left for the next run",
        };
        println!("{}: {where_}: {}", h.name, h.reason);
        for o in &h.orders {
            match (&o.receipt, &o.error) {
                (Some(r), _) => println!("  accepted {}: game {}, role {}, step {}, receipt {}, commitment {}", o.label, r.game, r.role, r.step, r.seq, r.commitment),
                (None, Some(e)) => println!("  refused {e}"),
                _ => {}
            }
        }
    }
    flush(root, &cfg, now)?;
    // A message in failed/ is kept with its reason for the host: not an error of this run.
    let _ = failed;
    Ok(ExitCode::SUCCESS)
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
pub fn cron(root: &Path, config: &Path, now: DateTime<Utc>) -> Result<ExitCode> {
    let cfg = HostConfig::load(config)?;
    let r = super::cron::run(root, &cfg, now, &mut crate::pipeline::Entropy::Os)?;
    for h in &r.intake {
        println!("mail {}: {:?}: {}", h.name, h.disposition, h.reason);
    }
    let mut failed = false;
    for g in &r.games {
        println!("{}: {}", g.game, g.summary);
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
