//! The host's mail configuration (`pbem-mail.toml`): the judge's address, where mail comes in, how
//! it goes out. Relative paths are relative to the config file's folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{Error, Result};

/// Default limit of one incoming message: larger ones are refused without being read whole.
pub const DEFAULT_MAX_MESSAGE_BYTES: u64 = 10 * 1024 * 1024;

/// The largest `intake.max_message_bytes` a config may set (1 GiB: a message is read into memory).
pub const MAX_MESSAGE_BYTES: u64 = 1 << 30;

/// The longest SMTP `timeout_secs` a config may set, in seconds: a server that never answers
/// must not hold a cron run for ever.
pub const MAX_TIMEOUT_SECS: u64 = 3600;

/// The whole host config.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    /// The judge's address, as it appears in `From` (e.g. `"pbem judge <judge@example.org>"`).
    pub from: String,
    /// Where mail comes in.
    #[serde(default)]
    pub intake: IntakeConfig,
    /// How mail goes out.
    #[serde(default)]
    pub transport: TransportConfig,
    /// Deadline reminders.
    #[serde(default)]
    pub reminders: Reminders,
    /// A player's time zone (IANA name, e.g. `America/New_York`) by e-mail address, for the
    /// deadlines shown in mails to a seat that has no `time_zone` of its own in game.toml (which
    /// wins, and is also what its reports use) and in replies; the default is UTC.
    #[serde(default)]
    pub time_zones: BTreeMap<String, String>,
    /// The public web site of the games (`pbem publish`), written after each adjudication.
    #[serde(default)]
    pub publish: PublishConfig,
}

/// `[publish]`: where the cron run writes the games' static site, and where it is seen.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublishConfig {
    /// The site's folder (relative to the config file's folder); each cron run publishes there
    /// every game whose public copy changed. None: no site is written.
    pub out: Option<PathBuf>,
    /// Where that folder is served (`https://example.org/games`): report mails link to the
    /// game's page of the record they report. None: no link.
    pub public_url: Option<String>,
    /// Whether a game's public record goes out while the game runs (default true): false keeps
    /// it back, from the `public` mail command and the cron run's site alike, until the game is
    /// over (a Gettysburg host who wants standing orders secret for the whole game sets it so).
    #[serde(default = "yes")]
    pub while_running: bool,
}

fn yes() -> bool {
    true
}

impl Default for PublishConfig {
    fn default() -> Self {
        PublishConfig { out: None, public_url: None, while_running: true }
    }
}

impl PublishConfig {
    /// The address of the page of record `index` of game `id`, when `public_url` is set.
    pub fn page_url(&self, id: &str, index: u64) -> Option<String> {
        self.public_url.as_ref().map(|u| format!("{}/{id}/step-{index}.html", u.trim_end_matches('/')))
    }
}

/// Reminder policy.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reminders {
    /// Hours before a deadline to remind players who have not sent orders; 0 = no reminders.
    #[serde(default = "default_remind_hours")]
    pub hours_before: u32,
}

fn default_remind_hours() -> u32 {
    12
}

impl Default for Reminders {
    fn default() -> Self {
        Reminders { hours_before: default_remind_hours() }
    }
}

/// Where incoming mail is read by `pbem adjudicate --all ROOT --mail CONFIG`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntakeConfig {
    /// A Maildir (with `new/` and `cur/`) that the MTA or fetchmail delivers to.
    pub maildir: Option<PathBuf>,
    /// An mbox file (read, never changed; each message is taken once).
    pub mbox: Option<PathBuf>,
    /// Messages larger than this are refused without being read whole (1024 to
    /// [`MAX_MESSAGE_BYTES`]).
    #[serde(default = "default_max")]
    pub max_message_bytes: u64,
    /// At most this many replies go to one address in any hour (more messages from it are still
    /// taken in, just not answered: a loop or a flood ends here); 0 for no cap.
    #[serde(default = "default_max_replies")]
    pub max_replies_per_hour: u32,
}

fn default_max_replies() -> u32 {
    DEFAULT_MAX_REPLIES_PER_HOUR
}

fn default_max() -> u64 {
    DEFAULT_MAX_MESSAGE_BYTES
}

impl Default for IntakeConfig {
    fn default() -> Self {
        IntakeConfig { maildir: None, mbox: None, max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES, max_replies_per_hour: default_max_replies() }
    }
}

/// How SMTP connections are secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Security {
    /// STARTTLS, required (port 587).
    #[default]
    Starttls,
    /// Implicit TLS (port 465).
    Tls,
    /// No TLS at all: only for a server on this machine (127.0.0.1).
    None,
}

/// The outgoing transport (`[transport]`, chosen by `kind`: `none`, `file`, `sendmail`, `smtp`).
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(try_from = "RawTransport")]
pub enum TransportConfig {
    /// Mail is only queued in the outbox (nothing is sent).
    #[default]
    None,
    /// Dry run: each mail is written to `DIR/ID.eml`.
    File {
        /// The folder.
        dir: PathBuf,
    },
    /// The local sendmail (`sendmail -i -f FROM -- TO...`).
    Sendmail {
        /// The command (default `sendmail` on the PATH).
        command: Option<String>,
    },
    /// An SMTP server.
    Smtp {
        /// Server name (also the TLS name checked in its certificate).
        host: String,
        /// Port (default 587 for STARTTLS, 465 for TLS, 25 for none).
        port: Option<u16>,
        /// `starttls` (default), `tls` or `none`.
        #[serde(default)]
        security: Security,
        /// User name for AUTH.
        user: Option<String>,
        /// Environment variable holding the password (default `PBEM_SMTP_PASSWORD`).
        password_env: Option<String>,
        /// File holding the password (first line).
        password_file: Option<PathBuf>,
        /// Extra root certificate (PEM) to trust, e.g. for a self-signed server.
        ca_file: Option<PathBuf>,
        /// Connection timeout in seconds (default 30; 1 to [`MAX_TIMEOUT_SECS`]).
        timeout_secs: Option<u64>,
    },
}

/// `[transport]` as written: one flat table, so that a wrong type is reported at its own line
/// (an internally tagged enum would report it at the table's), then checked against its `kind`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTransport {
    kind: Option<String>,
    dir: Option<PathBuf>,
    command: Option<String>,
    host: Option<String>,
    port: Option<u16>,
    security: Option<Security>,
    user: Option<String>,
    password_env: Option<String>,
    password_file: Option<PathBuf>,
    ca_file: Option<PathBuf>,
    timeout_secs: Option<u64>,
}

impl TryFrom<RawTransport> for TransportConfig {
    type Error = String;
    fn try_from(r: RawTransport) -> std::result::Result<Self, String> {
        let kind = r.kind.clone().unwrap_or_else(|| "none".into());
        let given = [
            ("dir", r.dir.is_some()),
            ("command", r.command.is_some()),
            ("host", r.host.is_some()),
            ("port", r.port.is_some()),
            ("security", r.security.is_some()),
            ("user", r.user.is_some()),
            ("password_env", r.password_env.is_some()),
            ("password_file", r.password_file.is_some()),
            ("ca_file", r.ca_file.is_some()),
            ("timeout_secs", r.timeout_secs.is_some()),
        ];
        let allowed: &[&str] = match kind.as_str() {
            "none" => &[],
            "file" => &["dir"],
            "sendmail" => &["command"],
            "smtp" => &["host", "port", "security", "user", "password_env", "password_file", "ca_file", "timeout_secs"],
            other => return Err(format!("transport.kind = {other:?}: one of \"smtp\", \"sendmail\", \"file\", \"none\"")),
        };
        if let Some((field, _)) = given.iter().find(|(f, set)| *set && !allowed.contains(f)) {
            return Err(format!("transport.{field} is not a setting of kind = {kind:?} (it takes: {})", if allowed.is_empty() { "nothing else".to_string() } else { allowed.join(", ") }));
        }
        Ok(match kind.as_str() {
            "none" => TransportConfig::None,
            "file" => TransportConfig::File { dir: r.dir.ok_or("transport.dir: the folder to write mails to (kind = \"file\")")? },
            "sendmail" => TransportConfig::Sendmail { command: r.command },
            _ => TransportConfig::Smtp {
                host: r.host.ok_or("transport.host: the SMTP server's name (kind = \"smtp\")")?,
                port: r.port,
                security: r.security.unwrap_or_default(),
                user: r.user,
                password_env: r.password_env,
                password_file: r.password_file,
                ca_file: r.ca_file,
                timeout_secs: r.timeout_secs,
            },
        })
    }
}

/// True for a name or address of this machine: `localhost` or a loopback IP address.
fn is_loopback(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h.eq_ignore_ascii_case("localhost") || h.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

impl HostConfig {
    /// Reads a config file; relative paths in it are made relative to its folder.
    pub fn load(path: &Path) -> Result<HostConfig> {
        let text = crate::store::read_text(path)?;
        let mut c: HostConfig = toml::from_str(&text).map_err(|e: toml::de::Error| Error::Input {
            line: e.span().map(|s| crate::orderfile::line_of(&text, s.start)),
            file: path.to_path_buf(),
            field: None,
            message: e.message().trim().to_string(),
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let fix = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        if let Some(p) = c.intake.maildir.as_mut() {
            fix(p)
        }
        if let Some(p) = c.intake.mbox.as_mut() {
            fix(p)
        }
        if let Some(p) = c.publish.out.as_mut() {
            fix(p)
        }
        match &mut c.transport {
            TransportConfig::File { dir } => fix(dir),
            TransportConfig::Smtp { password_file, ca_file, .. } => {
                if let Some(p) = password_file.as_mut() {
                    fix(p)
                }
                if let Some(p) = ca_file.as_mut() {
                    fix(p)
                }
            }
            _ => {}
        }
        c.check().map_err(|m| Error::input(path, m))?;
        Ok(c)
    }

    /// A config with only a sender address (mail is queued, not sent).
    pub fn queue_only(from: &str) -> HostConfig {
        HostConfig {
            from: from.to_string(),
            intake: IntakeConfig::default(),
            transport: TransportConfig::None,
            reminders: Reminders::default(),
            time_zones: BTreeMap::new(),
            publish: PublishConfig::default(),
        }
    }

    fn check(&self) -> std::result::Result<(), String> {
        let from = self.from.parse::<lettre::message::Mailbox>().map_err(|e| format!("from = {:?}: not a mail address: {e}", self.from))?;
        super::compose::check_ascii_address(from.email.as_ref()).map_err(|e| format!("from = {:?}: {e}", self.from))?;
        if let Some(u) = &self.publish.public_url
            && (!(u.starts_with("https://") || u.starts_with("http://")) || u.contains(char::is_whitespace))
        {
            return Err(format!("publish.public_url = {u:?}: give the web address the site is served at (https://...)"));
        }
        if !(1024..=MAX_MESSAGE_BYTES).contains(&self.intake.max_message_bytes) {
            return Err(format!("intake.max_message_bytes = {}: between 1024 and {MAX_MESSAGE_BYTES} (1 GiB)", self.intake.max_message_bytes));
        }
        if let TransportConfig::Smtp { timeout_secs: Some(t), .. } = &self.transport
            && !(1..=MAX_TIMEOUT_SECS).contains(t)
        {
            return Err(format!("transport.timeout_secs = {t}: between 1 and {MAX_TIMEOUT_SECS} (an hour; a cron run must end)"));
        }
        if self.reminders.hours_before > crate::model::MAX_HOURS {
            return Err(format!("reminders.hours_before = {}: at most {} hours (a year)", self.reminders.hours_before, crate::model::MAX_HOURS));
        }
        for (addr, tz) in &self.time_zones {
            tz.parse::<chrono_tz::Tz>().map_err(|_| format!("time_zones: {addr} = {tz:?} is not an IANA time zone (e.g. Europe/Berlin)"))?;
        }
        if let TransportConfig::Sendmail { command: Some(c) } = &self.transport
            && c.split_whitespace().count() > 1
            && !Path::new(c).exists()
        {
            return Err(format!("transport.command = {c:?}: give the program alone (pbem passes -i -f FROM -- TO... itself)"));
        }
        if let TransportConfig::Smtp { host, security: Security::None, .. } = &self.transport
            && !is_loopback(host)
        {
            // Without TLS the password and every report would cross the network in clear.
            return Err(format!("transport.security = \"none\" is only for a server on this machine (localhost, 127.0.0.1, ::1), not {host:?}: use \"starttls\" or \"tls\""));
        }
        Ok(())
    }

    /// The judge's bare address (`judge@example.org`).
    pub fn from_address(&self) -> String {
        self.from.parse::<lettre::message::Mailbox>().map(|m| m.email.to_string()).unwrap_or_else(|_| self.from.clone())
    }

    /// The domain part of the judge's address (for Message-IDs).
    pub fn domain(&self) -> String {
        self.from_address().rsplit_once('@').map(|(_, d)| d.to_string()).unwrap_or_else(|| "localhost".into())
    }

    /// The time zone of a seat in mails: its own `time_zone` in game.toml (the one its reports
    /// use), else this file's `time_zones` entry for its address, else UTC.
    pub fn seat_zone(&self, seat: &crate::model::Seat) -> chrono_tz::Tz {
        match &seat.time_zone {
            Some(z) => crate::when::zone(Some(z)),
            None => self.zone_of(&seat.email),
        }
    }

    /// The time zone of a player by address (UTC unless configured).
    pub fn zone_of(&self, email: &str) -> chrono_tz::Tz {
        self.time_zones
            .iter()
            .find(|(a, _)| a.eq_ignore_ascii_case(email))
            .and_then(|(_, z)| z.parse().ok())
            .unwrap_or(chrono_tz::UTC)
    }
}

/// The default of `[intake] max_replies_per_hour`.
pub const DEFAULT_MAX_REPLIES_PER_HOUR: u32 = 10;

/// The mail state folder under a games root.
pub fn state_dir(root: &Path) -> PathBuf {
    root.join(".mail")
}

/// A UTC timestamp (RFC 3339: a deadline, a receipt's time) as the player at `email` reads
/// it: `Wed 01 Jul 2026 09:00 EDT (2026-07-01T13:00:00Z)` in their configured zone, else
/// `Wed 01 Jul 2026 13:00 UTC` (for a sender who may hold no seat; a seat's mails use
/// [`seat_time`]).
pub fn local_time(cfg: &HostConfig, email: &str, t: &str) -> String {
    in_zone(cfg.zone_of(email), t)
}

/// A UTC timestamp as `seat`'s player reads it, in [`HostConfig::seat_zone`].
pub fn seat_time(cfg: &HostConfig, seat: &crate::model::Seat, t: &str) -> String {
    in_zone(cfg.seat_zone(seat), t)
}

/// The deadline of the step `op` opens as a report mail gives it to `seat`: [`seat_time`], or,
/// while the host has paused the game, that it runs again on resume, moved on by the time paused
/// (the `resume` record moves it: README "Host controls").
pub fn seat_deadline(cfg: &HostConfig, seat: &crate::model::Seat, op: &crate::model::Opening) -> String {
    let at = seat_time(cfg, seat, &op.deadline);
    match op.paused {
        Some(_) => format!("the deadline (the game is paused by the host: {at} now, moved on by the time paused when it resumes)"),
        None => at,
    }
}

fn in_zone(tz: chrono_tz::Tz, t: &str) -> String {
    crate::when::parse_time(t).map_or_else(|_| t.to_string(), |t| crate::when::long(t, tz))
}

/// A seat's newest accepted order of a step: its receipt number, and whether the seat's present
/// holder sent it (signed with the seat's key in `game.toml`) or its holder before a seat change
/// did (it stands, but the mail must not tell the new holder "your orders are in": tester14 T14a-3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct In {
    pub seq: u64,
    pub by_you: bool,
}

/// What a seat's mail subject says is needed in the step `op` opens: `orders needed by Thu 3
/// Dec 08:00 EST` (in the seat's zone), `no orders needed from you`, or, while the game is paused,
/// that no deadline runs.
pub fn needed(cfg: &HostConfig, seat: &crate::model::Seat, op: &crate::model::Opening, sent: Option<In>) -> String {
    if !op.asks.iter().any(|a| a.role == seat.role) {
        return "no orders needed from you".into();
    }
    // A paused game's deadline does not run (tester10 M1): no time is announced.
    if op.paused.is_some() {
        return match sent {
            Some(In { seq, by_you: true }) => format!("game paused; your orders are in (receipt {seq})"),
            Some(In { seq, by_you: false }) => format!("game paused; the seat's previous holder's orders are in (receipt {seq})"),
            None => "game paused; no deadline runs until it resumes".into(),
        };
    }
    let by = match crate::when::parse_time(&op.deadline) {
        Ok(t) => crate::when::short(t, cfg.seat_zone(seat)),
        Err(_) => op.deadline.clone(),
    };
    match sent {
        Some(In { seq, by_you: true }) => format!("your orders are in (receipt {seq}; changes until {by})"),
        Some(In { seq, by_you: false }) => format!("the seat's previous holder's orders are in (receipt {seq}; yours until {by})"),
        None => format!("orders needed by {by}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<HostConfig> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pbem-mail.toml");
        std::fs::write(&path, text).unwrap();
        HostConfig::load(&path)
    }

    #[test]
    fn publish_reads_its_folder_beside_the_config_and_wants_a_web_address() {
        let c = load("from = \"judge@example.org\"\n[publish]\nout = \"site\"\npublic_url = \"https://example.org/games/\"\n").unwrap();
        assert!(c.publish.out.as_ref().unwrap().ends_with("site") && c.publish.out.as_ref().unwrap().is_absolute());
        assert_eq!(c.publish.page_url("g1", 3).as_deref(), Some("https://example.org/games/g1/step-3.html"));
        assert_eq!(load("from = \"judge@example.org\"\n").unwrap().publish.page_url("g1", 3), None);
        assert!(c.publish.while_running && load("from = \"judge@example.org\"\n").unwrap().publish.while_running);
        assert!(!load("from = \"judge@example.org\"\n[publish]\nwhile_running = false\n").unwrap().publish.while_running);
        let err = load("from = \"judge@example.org\"\n[publish]\npublic_url = \"example.org/games\"\n").unwrap_err().to_string();
        assert!(err.contains("publish.public_url") && err.contains("https://"), "{err}");
        let err = load("from = \"judge@example.org\"\n[publish]\noutt = \"x\"\n").unwrap_err().to_string();
        assert!(err.contains("pbem-mail.toml:3") && err.contains("outt"), "{err}");
    }

    #[test]
    fn reminders_at_most_a_year_before_a_deadline() {
        assert_eq!(load("from = \"judge@example.org\"\n[reminders]\nhours_before = 8784\n").unwrap().reminders.hours_before, 8784);
        let err = load("from = \"judge@example.org\"\n[reminders]\nhours_before = 4294967295\n").unwrap_err().to_string();
        assert!(err.ends_with("pbem-mail.toml: reminders.hours_before = 4294967295: at most 8784 hours (a year)"), "{err}");
    }

    /// tester13 D3, D5: a message size past 1 GiB wrapped the read's limit (every message lost),
    /// and a timeout past an hour held the cron run for ever.
    #[test]
    fn message_size_and_server_timeout_are_bounded() {
        let size = |n: &str| load(&format!("from = \"judge@example.org\"\n[intake]\nmax_message_bytes = {n}\n"));
        assert_eq!(size("1073741824").unwrap().intake.max_message_bytes, 1 << 30);
        let err = size("18446744073709551615").unwrap_err().to_string();
        assert!(err.ends_with("intake.max_message_bytes = 18446744073709551615: between 1024 and 1073741824 (1 GiB)"), "{err}");
        assert!(size("0").is_err());
        let smtp = |t: &str| load(&format!("from = \"judge@example.org\"\n[transport]\nkind = \"smtp\"\nhost = \"127.0.0.1\"\nsecurity = \"none\"\ntimeout_secs = {t}\n"));
        assert!(smtp("3600").is_ok());
        let err = smtp("18446744073709551615").unwrap_err().to_string();
        assert!(err.ends_with("transport.timeout_secs = 18446744073709551615: between 1 and 3600 (an hour; a cron run must end)"), "{err}");
        assert!(smtp("0").is_err());
    }

    #[test]
    fn smtp_without_tls_only_to_this_machine() {
        let with = |host: &str| load(&format!("from = \"judge@example.org\"\n[transport]\nkind = \"smtp\"\nhost = \"{host}\"\nsecurity = \"none\"\n"));
        for local in ["localhost", "127.0.0.1", "::1", "[::1]"] {
            with(local).unwrap();
        }
        let err = with("192.0.2.2").unwrap_err().to_string();
        assert!(err.contains("pbem-mail.toml") && err.contains("only for a server on this machine"), "{err}");
        load("from = \"judge@example.org\"\n[transport]\nkind = \"smtp\"\nhost = \"192.0.2.2\"\nsecurity = \"starttls\"\n").unwrap();
    }

    #[test]
    fn transport_errors_name_the_line_and_field() {
        let err = |text: &str| load(&format!("from = \"judge@example.org\"\n[transport]\n{text}")).unwrap_err().to_string();
        // A wrong type is reported at its own line (line 5), not at [transport].
        let e = err("kind = \"smtp\"\nhost = \"smtp.example.org\"\nport = \"587\"\n");
        assert!(e.contains("pbem-mail.toml:5:") && e.contains("expected u16"), "{e}");
        let e = err("kind = \"sendmail\"\nhost = \"x\"\n");
        assert!(e.contains("transport.host is not a setting of kind = \"sendmail\""), "{e}");
        let e = err("kind = \"smtpp\"\n");
        assert!(e.contains("transport.kind = \"smtpp\""), "{e}");
        let e = err("kind = \"smtp\"\nhots = \"x\"\n");
        assert!(e.contains("pbem-mail.toml:4:") && e.contains("unknown field `hots`"), "{e}");
        let e = err("kind = \"file\"\n");
        assert!(e.contains("transport.dir"), "{e}");
        let e = err("kind = \"sendmail\"\ncommand = \"/usr/sbin/sendmail -oi\"\n");
        assert!(e.contains("give the program alone"), "{e}");
        assert!(matches!(load("from = \"judge@example.org\"\n").unwrap().transport, TransportConfig::None));
    }
}
