//! Mail: orders in by mail (`intake`), replies, reports and reminders out through an outbox
//! (`outbox`, `transport`), configured by the host's `pbem-mail.toml` (`config`); `cron` is the
//! one run a crontab line makes (`pbem adjudicate --all ROOT --mail CONFIG`).
//!
//! State lives beside the games, in `ROOT/.mail/`: `outbox/` (queue and sent ledger), `log`
//! (hashes of handled messages and replies per address: `log`; older versions kept them in `seen/`
//! and `replies/`), `spool/` (messages taken from an mbox or standard input), `press-sent/`
//! (relayed press per address in the last hour),
//! `mailed/` (per game, the newest record whose reports were queued).

mod ahead;
pub mod cli;
pub mod commands;
pub mod compose;
pub mod config;
pub mod cron;
pub mod extract;
mod games;
pub mod intake;
mod log;
pub mod marks;
pub mod outbox;
mod press;
mod recover;
pub mod remind;
mod reply;
mod report_mail;
mod spool;
pub mod transport;

pub use config::HostConfig;
pub use intake::{Disposition, Handled, Source};
pub use outbox::Outbox;
