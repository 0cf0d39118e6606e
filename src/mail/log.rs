//! The mail state log `ROOT/.mail/log`: intake's seen marks and reply ledger as one append-only
//! file instead of a file per message and per address.
//!
//! ```text
//! seen HASH TIME          a message with these bytes (SHA-256) was handled at TIME
//! mail KEY TIME           a message with this sender, Message-ID, subject and body
//!                         ([`mail_key`]) was handled at TIME: a redelivered copy (one more
//!                         `Received:` line) is the same mail
//! reply ADDR TIME ID      reply ID went to the address whose SHA-256 (lowercase) is ADDR
//! got HASH                the handling of message HASH starts
//! took HASH GAME STEP ROLE SEQ   message HASH got receipt SEQ of ROLE for STEP of GAME
//! saw HASH GAME STEP ROLE SEQ    message HASH was answered with that receipt as a resend
//! ```
//!
//! `got` and `took` let a message handled again after a kill (its reply was not yet durable) be
//! answered as the first time: a resent order whose receipt this very message took, or (killed
//! between the receipt and its `took` line) that no message took and this message was the last
//! to start, is a first acceptance, not "already received"; and one whose receipt this message
//! took, or was answered with as a resend (`saw HASH GAME STEP ROLE SEQ`), is answered with it
//! even when a later order of the killed batch has replaced it since
//! (`pipeline::OrderInput::taken`), not refused as a resend of a replaced order.
//!
//! Each record is one line appended with `O_APPEND` (one `write`), made durable by the sync of
//! the group commit it is part of (`intake::Filing`), so it costs no file of its own. The log is
//! read once per run (lazily: an idle cron run reads nothing) while the root's intake lock is
//! held, and kept in memory. A line that cannot be read (a torn last line after a kill or a power
//! loss) is ignored, and the next append starts a fresh line after it. The files of older pbem
//! versions, `seen/HASH` and `replies/ADDR`, are still honoured, so an upgraded host loses
//! nothing; they are read only where they exist.
//!
//! Once it passes [`COMPACT_BYTES`], an intake run ends by rewriting it without what no later
//! run reads ([`MailLog::compact`]: the `got` and `saw` lines of messages marked seen, `took` and
//! `saw` lines of steps already resolved, reply lines over a day old, and `seen` lines over
//! [`KEEP_SEEN_DAYS`] old of messages the spool no longer keeps), atomically and durably. So the
//! log holds the last month's mail and what the spool keeps, not all mail ever received.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::error::Result;
use crate::model::Receipt;
use crate::{pipeline, store};

/// `ROOT/.mail/log` under the mail state folder `state`.
pub(super) fn path(state: &Path) -> PathBuf {
    state.join("log")
}

/// The SHA-256 (hex) of an address as the reply ledger keys it: trimmed, lowercase.
pub(super) fn address_key(addr: &str) -> String {
    crate::commit::sha256_hex(addr.trim().to_ascii_lowercase().as_bytes())
}

/// The log of one mail state folder, read into memory on first use (see the module docs).
/// Shared by intake's threads: the one handling messages appends their lines, and the group's
/// thread that files a batch away its seen marks (`intake::Filing`).
pub(super) struct MailLog {
    state: PathBuf,
    loaded: std::sync::Mutex<Option<Loaded>>,
}

/// What the log holds.
#[derive(Default)]
struct Loaded {
    seen: HashSet<String>,
    /// The [`mail_key`]s of the messages handled.
    mails: HashSet<String>,
    /// Per address key, each reply's time and id, in log order.
    replies: BTreeMap<String, Vec<(DateTime<Utc>, String)>>,
    /// Whether the folders of older versions exist (`seen/`, `replies/`).
    old_seen: bool,
    old_replies: bool,
    /// Per receipt (game, step, role, seq), the message that took it.
    took: BTreeMap<(String, u64, String, u64), String>,
    /// Per message, the receipts it was answered with as a resend (`saw`).
    saw: BTreeSet<(String, String, u64, String, u64)>,
    /// The message whose handling started last (`got`), as read.
    last_got: Option<String>,
    /// The file does not end with a newline (a torn last line): the next append starts one.
    torn: bool,
    /// The log opened for appending, once a line was appended (kept open for the next).
    file: Option<std::fs::File>,
}

impl MailLog {
    /// The log of the mail state folder `state` (`ROOT/.mail`); nothing is read yet.
    pub(super) fn new(state: &Path) -> MailLog {
        MailLog { state: state.to_path_buf(), loaded: std::sync::Mutex::new(None) }
    }

    fn with<T>(&self, f: impl FnOnce(&mut Loaded) -> Result<T>) -> Result<T> {
        // A panic while it was held left at worst a line unwritten, which a rerun's read ignores.
        let mut slot = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(self.load()?);
        }
        f(slot.as_mut().expect("just loaded"))
    }

    fn load(&self) -> Result<Loaded> {
        let p = path(&self.state);
        let bytes = match store::read_regular(&p) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(store::io(&p, e)),
        };
        let mut l = Loaded { old_seen: self.state.join("seen").is_dir(), old_replies: self.state.join("replies").is_dir(), torn: !bytes.is_empty() && !bytes.ends_with(b"\n"), ..Loaded::default() };
        // Only whole lines count: a torn last line is not one.
        let whole = &bytes[..bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1)];
        for line in String::from_utf8_lossy(whole).lines() {
            let f: Vec<&str> = line.split(' ').collect();
            match f.as_slice() {
                // The time must read whole: a line cut short and then ended by a later append is no mark.
                ["seen", hash, time] if is_hash(hash) && pipeline::parse_time(time).is_ok() => {
                    l.seen.insert(hash.to_string());
                }
                ["mail", key, time] if is_hash(key) && pipeline::parse_time(time).is_ok() => {
                    l.mails.insert(key.to_string());
                }
                ["got", hash] if is_hash(hash) => l.last_got = Some(hash.to_string()),
                ["saw", hash, game, step, role, seq] if is_hash(hash) => {
                    if let (Ok(step), Ok(seq)) = (step.parse(), seq.parse()) {
                        l.saw.insert((hash.to_string(), game.to_string(), step, role.to_string(), seq));
                    }
                }
                ["took", hash, game, step, role, seq] if is_hash(hash) => {
                    if let (Ok(step), Ok(seq)) = (step.parse(), seq.parse()) {
                        l.took.insert((game.to_string(), step, role.to_string(), seq), hash.to_string());
                    }
                }
                ["reply", addr, time, id] if is_hash(addr) => {
                    if let Ok(t) = pipeline::parse_time(time) {
                        l.replies.entry(addr.to_string()).or_default().push((t, id.to_string()));
                    }
                }
                _ => {}
            }
        }
        Ok(l)
    }

    /// Appends one line to the log (a fresh line first after a torn one); registered with the
    /// open batch so its sync makes it durable.
    fn append(&self, l: &mut Loaded, line: &str) -> Result<()> {
        let p = path(&self.state);
        let text = if l.torn { format!("\n{line}\n") } else { format!("{line}\n") };
        let f = match &mut l.file {
            Some(f) => f,
            slot => slot.insert(store::open_append(&p)?),
        };
        f.write_all(text.as_bytes()).map_err(|e| store::io(&p, e))?;
        l.torn = false;
        store::written_in_place(&p)
    }

    /// Whether a message with the bytes of SHA-256 `hash` was handled (marked seen).
    pub(super) fn seen(&self, hash: &str) -> Result<bool> {
        self.with(|l| Ok(l.seen.contains(hash) || (l.old_seen && self.state.join("seen").join(hash).exists())))
    }

    /// Marks the message of SHA-256 `hash` handled at `now`.
    pub(super) fn mark_seen(&self, hash: &str, now: DateTime<Utc>) -> Result<()> {
        self.with(|l| {
            if l.seen.insert(hash.to_string()) {
                self.append(l, &format!("seen {hash} {}", pipeline::timestamp(now)))?;
            }
            Ok(())
        })
    }

    /// Whether a message with the [`mail_key`] `key` was handled (marked by [`MailLog::mark_mail`]).
    pub(super) fn mail_seen(&self, key: &str) -> Result<bool> {
        self.with(|l| Ok(l.mails.contains(key)))
    }

    /// Marks the message with the [`mail_key`] `key` handled at `now`.
    pub(super) fn mark_mail(&self, key: &str, now: DateTime<Utc>) -> Result<()> {
        self.with(|l| {
            if l.mails.insert(key.to_string()) {
                self.append(l, &format!("mail {key} {}", pipeline::timestamp(now)))?;
            }
            Ok(())
        })
    }

    /// Notes that the handling of message `hash` starts.
    pub(super) fn note_got(&self, hash: &str) -> Result<()> {
        self.with(|l| self.append(l, &format!("got {hash}")))
    }

    /// Notes that message `hash` took receipt `rc` (a new order accepted).
    /// Notes that the message of SHA-256 `hash` was answered with receipt `rc` as a resend.
    pub(super) fn note_saw(&self, hash: &str, rc: &Receipt) -> Result<()> {
        self.with(|l| {
            if l.saw.insert((hash.to_string(), rc.game.clone(), rc.step, rc.role.clone(), rc.seq)) {
                self.append(l, &format!("saw {hash} {} {} {} {}", rc.game, rc.step, rc.role, rc.seq))?;
            }
            Ok(())
        })
    }

    pub(super) fn note_took(&self, hash: &str, rc: &Receipt) -> Result<()> {
        self.with(|l| {
            l.took.insert(receipt_key(rc), hash.to_string());
            self.append(l, &format!("took {hash} {} {} {} {}", rc.game, rc.step, rc.role, rc.seq))
        })
    }

    /// The receipts of `game` (step, role, seq) that the message of SHA-256 `hash` took, or was
    /// answered with as a resend, when it was handled before (a run killed before it was filed
    /// away).
    pub(super) fn taken_by(&self, hash: &str, game: &str) -> Result<Vec<(u64, String, u64)>> {
        self.with(|l| {
            let took = l.took.iter().filter(|((g, ..), h)| g == game && h.as_str() == hash).map(|((_, step, role, seq), _)| (*step, role.clone(), *seq));
            let saw = l.saw.iter().filter(|(h, g, ..)| h == hash && g == game).map(|(_, _, step, role, seq)| (*step, role.clone(), *seq));
            Ok(took.chain(saw).collect())
        })
    }

    /// Whether the receipt `rc` was taken by the message of SHA-256 `hash` (see the module docs).
    pub(super) fn took_here(&self, hash: &str, rc: &Receipt) -> Result<bool> {
        self.with(|l| {
            Ok(match l.took.get(&receipt_key(rc)) {
                Some(h) => h == hash,
                None => l.last_got.as_deref() == Some(hash),
            })
        })
    }

    /// The replies to `addr` in the hour before `now` (time, id), oldest first.
    pub(super) fn recent_replies(&self, addr: &str, now: DateTime<Utc>) -> Result<Vec<(DateTime<Utc>, String)>> {
        let key = address_key(addr);
        let hour_ago = now - chrono::Duration::hours(1);
        self.with(|l| {
            let mut out = if l.old_replies { read_ledger_file(&self.state.join("replies").join(&key))? } else { Vec::new() };
            out.extend(l.replies.get(&key).into_iter().flatten().cloned());
            out.retain(|(t, _)| *t > hour_ago);
            out.sort_by_key(|(t, _)| *t);
            Ok(out)
        })
    }

    /// Counts reply `id` to `addr` at `now`.
    pub(super) fn record_reply(&self, addr: &str, id: &str, now: DateTime<Utc>) -> Result<()> {
        let key = address_key(addr);
        self.with(|l| {
            self.append(l, &format!("reply {key} {} {id}", pipeline::timestamp(now)))?;
            l.replies.entry(key).or_default().push((now, id.to_string()));
            Ok(())
        })
    }
}

/// The log is compacted at the end of an intake run once it passes this many bytes
/// ([`MailLog::compact`]).
pub(super) const COMPACT_BYTES: u64 = 1 << 20;

/// How long reply lines are kept by a compaction: the cap counts the last hour; a day leaves room
/// for a clock set back.
const KEEP_REPLIES_HOURS: i64 = 24;

/// How long a `seen` line is kept by a compaction (README "The mail log"), unless the spool
/// still keeps its message: a message handled is moved out of `new/` and `cur/` by the run
/// that marks it (or, killed before that, by the next run), and an MTA gives up redelivering a
/// message within days. The same bytes arriving later still are handled again: their orders are
/// for a step resolved long ago and are refused as such.
pub(super) const KEEP_SEEN_DAYS: i64 = 30;

/// What a compaction needs to know beyond the log ([`MailLog::compact`]), asked only when the
/// log is large.
pub(super) struct Horizon<'a> {
    /// The open step of a game by id (`None`: unknown, or over; its lines stay).
    pub open_step: &'a dyn Fn(&str) -> Option<u64>,
    /// The hashes of the messages the spool keeps in `done/` and `failed/`: an mbox taken again
    /// finds them by their seen lines, which stay.
    pub kept: &'a dyn Fn() -> BTreeSet<String>,
}

impl MailLog {
    /// Rewrites the log without the lines no later run reads, when it is larger than `min_bytes`
    /// and a quarter of it or more would go: `got` and `saw` lines of messages marked seen (a
    /// seen message is never handled again), but the last `got` line (the message that started
    /// last, [`MailLog::took_here`]); `took` and `saw` lines of a step its game has resolved (an
    /// order for it is refused before any receipt of it is looked up); `reply` lines more than a
    /// day old (the cap counts an hour); `seen` lines more than [`KEEP_SEEN_DAYS`] old whose
    /// message the spool does not keep (`horizon.kept`); lines that cannot be read (see
    /// [`kept_lines`]). Written to a temp file, synced,
    /// renamed over the log and the folder
    /// synced, whatever batch is open: a kill or a power loss leaves the old log or the new one,
    /// each holding every line a later run needs. Call it under the root's intake lock, with
    /// nothing of the run's left to append. Returns whether it rewrote the log.
    pub(super) fn compact(&self, now: DateTime<Utc>, min_bytes: u64, horizon: &Horizon<'_>) -> Result<bool> {
        let p = path(&self.state);
        let bytes = match store::read_regular(&p) {
            Ok(b) if b.len() as u64 > min_bytes => b,
            Ok(_) => return Ok(false),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(store::io(&p, e)),
        };
        let whole = &bytes[..bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1)];
        let text = String::from_utf8_lossy(whole);
        let kept = kept_lines(&text, now, horizon);
        if kept.len() * 4 > bytes.len() * 3 {
            return Ok(false);
        }
        write_durable(&p, kept.as_bytes())?;
        *self.loaded.lock().unwrap_or_else(|p| p.into_inner()) = None;
        Ok(true)
    }
}

/// The lines of the log's `text` that a compaction keeps ([`MailLog::compact`]).
fn kept_lines(text: &str, now: DateTime<Utc>, horizon: &Horizon<'_>) -> String {
    let seen: HashSet<&str> = text.lines().filter_map(|l| l.strip_prefix("seen ")).filter_map(|r| r.split(' ').next()).collect();
    let lines: Vec<&str> = text.lines().collect();
    let last_got = lines.iter().rposition(|l| l.starts_with("got "));
    let since = now - chrono::Duration::hours(KEEP_REPLIES_HOURS);
    let seen_since = now - chrono::Duration::days(KEEP_SEEN_DAYS);
    let spooled = std::cell::OnceCell::new();
    let kept = |hash: &str| spooled.get_or_init(|| (horizon.kept)()).contains(hash);
    let mut steps: BTreeMap<String, Option<u64>> = BTreeMap::new();
    // A step of `game` its game has resolved (steps only go forward).
    let mut resolved = |game: &str, step: &str| -> bool {
        let open = *steps.entry(game.to_string()).or_insert_with(|| (horizon.open_step)(game));
        step.parse::<u64>().is_ok_and(|s| open.is_some_and(|o| s < o))
    };
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let f: Vec<&str> = line.split(' ').collect();
        let keep = match f.as_slice() {
            ["seen", hash, time] => is_hash(hash) && pipeline::parse_time(time).is_ok_and(|t| t > seen_since || kept(hash)),
            ["mail", key, time] => is_hash(key) && pipeline::parse_time(time).is_ok_and(|t| t > seen_since),
            ["got", hash] => is_hash(hash) && (Some(i) == last_got || !seen.contains(hash)),
            // Which message took a receipt tells a later resend of it in other bytes apart from a
            // killed first handling ([`MailLog::took_here`]): kept while its step is open.
            ["took", hash, game, step, _, _] => is_hash(hash) && !resolved(game, step),
            ["saw", hash, game, step, _, _] => is_hash(hash) && !seen.contains(hash) && !resolved(game, step),
            ["reply", addr, time, _] => is_hash(addr) && pipeline::parse_time(time).is_ok_and(|t| t > since),
            _ => false,
        };
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Replaces the file at `p` with `bytes` durably in this order: a temp file beside it written
/// and fsynced, renamed over it, the folder fsynced (no open batch defers it).
fn write_durable(p: &Path, bytes: &[u8]) -> Result<()> {
    let dir = p.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(".log.{}.0.tmp", std::process::id()));
    let mut options = std::fs::File::options();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options.open(&tmp).and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all())).and_then(|()| std::fs::rename(&tmp, p));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(store::io(p, e));
    }
    std::fs::File::open(dir).and_then(|d| d.sync_all()).map_err(|e| store::io(dir, e))
}

/// Whether the log at `state` or an older version's `seen/HASH` marks the message `hash` as
/// handled: read whole, without the lock (appends are whole lines; a torn one is ignored).
pub(super) fn seen_on_disk(state: &Path, hash: &str) -> Result<bool> {
    if state.join("seen").join(hash).exists() {
        return Ok(true);
    }
    MailLog::new(state).seen(hash)
}

/// What makes a message the same mail though its bytes differ (an MTA or a fetchmail that
/// delivers it again adds `Received:` or `Delivered-To:` lines): the SHA-256 (hex) of its `From`,
/// `Message-ID` and `Subject` header values (unfolded, spaces collapsed) and its body's bytes.
/// `None` when it has no Message-ID or no header block. The body and subject are in the key, so a
/// program that reuses one Message-ID for new mail still gets each new message read.
pub(super) fn mail_key(raw: &[u8]) -> Option<String> {
    let find = |sep: &[u8]| raw.windows(sep.len()).position(|w| w == sep).map(|i| (i, sep.len()));
    let (end, sep) = [find(b"\r\n\r\n"), find(b"\n\n")].into_iter().flatten().min()?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let field = |name: &str| header_value(&head, name);
    let id = field("message-id").filter(|v| !v.is_empty())?;
    let mut keyed = format!("pbem-mail-key\0{}\0{id}\0{}\0", field("from").unwrap_or_default(), field("subject").unwrap_or_default()).into_bytes();
    keyed.extend_from_slice(&raw[end + sep..]);
    Some(crate::commit::sha256_hex(&keyed))
}

/// The first `name:` header's value in a header block, unfolded, its runs of spaces made one.
fn header_value(head: &str, name: &str) -> Option<String> {
    let mut lines = head.lines().skip_while(|l| !l.get(..name.len() + 1).is_some_and(|p| p.eq_ignore_ascii_case(&format!("{name}:"))));
    let first = lines.next()?;
    let folded = lines.take_while(|l| l.starts_with([' ', '\t']));
    let value = std::iter::once(&first[name.len() + 1..]).chain(folded).collect::<Vec<_>>().join(" ");
    Some(value.split_whitespace().collect::<Vec<_>>().join(" "))
}

fn receipt_key(rc: &Receipt) -> (String, u64, String, u64) {
    (rc.game.clone(), rc.step, rc.role.clone(), rc.seq)
}

fn is_hash(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The lines `TIME ID` of a ledger file (older versions' `replies/HASH`, `press-sent/HASH`),
/// unreadable lines dropped; nothing when it does not exist.
pub(super) fn read_ledger_file(p: &Path) -> Result<Vec<(DateTime<Utc>, String)>> {
    let text = match store::read_regular(p).map(|b| String::from_utf8_lossy(&b).into_owned()) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(store::io(p, e)),
    };
    Ok(text.lines().filter_map(|l| l.split_once(' ')).filter_map(|(t, id)| Some((pipeline::parse_time(t).ok()?, id.trim().to_string()))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        pipeline::parse_time(s).unwrap()
    }

    #[test]
    fn marks_and_replies_survive_a_reread_and_a_torn_line_is_ignored() {
        let tmp = tempfile::tempdir().unwrap();
        let (h1, h2) = ("a".repeat(64), "b".repeat(64));
        let log = MailLog::new(tmp.path());
        assert!(!log.seen(&h1).unwrap());
        log.mark_seen(&h1, t("2026-07-01T12:00:00Z")).unwrap();
        log.record_reply("P1@Ex.org ", "r1", t("2026-07-01T12:00:00Z")).unwrap();
        // A kill in the middle of a line: it is ignored, and the next line starts fresh.
        std::fs::OpenOptions::new().append(true).open(path(tmp.path())).unwrap().write_all(format!("seen {h2} 2026").as_bytes()).unwrap();
        let again = MailLog::new(tmp.path());
        assert!(again.seen(&h1).unwrap() && !again.seen(&h2).unwrap());
        let recent = again.recent_replies("p1@ex.org", t("2026-07-01T12:30:00Z")).unwrap();
        assert_eq!(recent, vec![(t("2026-07-01T12:00:00Z"), "r1".to_string())]);
        assert!(again.recent_replies("p1@ex.org", t("2026-07-01T13:00:01Z")).unwrap().is_empty(), "an hour later");
        again.mark_seen(&h2, t("2026-07-01T12:31:00Z")).unwrap();
        let third = MailLog::new(tmp.path());
        assert!(third.seen(&h1).unwrap() && third.seen(&h2).unwrap());
    }

    #[test]
    fn the_files_of_older_versions_still_count() {
        let tmp = tempfile::tempdir().unwrap();
        let h = "c".repeat(64);
        std::fs::create_dir_all(tmp.path().join("seen")).unwrap();
        std::fs::write(tmp.path().join("seen").join(&h), "2026-07-01T12:00:00Z\n").unwrap();
        std::fs::create_dir_all(tmp.path().join("replies")).unwrap();
        std::fs::write(tmp.path().join("replies").join(address_key("p1@ex.org")), "2026-07-01T12:00:00Z old\n").unwrap();
        let log = MailLog::new(tmp.path());
        assert!(log.seen(&h).unwrap());
        assert!(seen_on_disk(tmp.path(), &h).unwrap());
        log.record_reply("p1@ex.org", "new", t("2026-07-01T12:10:00Z")).unwrap();
        let ids: Vec<String> = log.recent_replies("p1@ex.org", t("2026-07-01T12:20:00Z")).unwrap().into_iter().map(|(_, i)| i).collect();
        assert_eq!(ids, vec!["old".to_string(), "new".to_string()]);
    }

    fn receipt(game: &str, seq: u64) -> Receipt {
        Receipt { game: game.into(), step: 1, role: "union".into(), seq, commitment: "c".into(), received: "t".into(), nonce: true, setup: "s".into(), record: "r".into() }
    }

    /// What a later run asks of the log about messages `hashes`, receipts `rcs` and address `addr`.
    fn answers(state: &Path, hashes: &[&String], rcs: &[Receipt], now: DateTime<Utc>) -> Vec<String> {
        let log = MailLog::new(state);
        let mut out = vec![format!("{:?}", log.recent_replies("p1@ex.org", now).unwrap())];
        for h in hashes {
            // A seen message is not handled again: what it took is asked only of the others.
            let seen = log.seen(h).unwrap();
            let taken = if seen { vec![] } else { log.taken_by(h, "g1").unwrap() };
            out.push(format!("{} seen {seen} taken {taken:?}", &h[..4]));
            for rc in rcs {
                out.push(format!("{} took_here {} {}", &h[..4], rc.seq, log.took_here(h, rc).unwrap()));
            }
        }
        out
    }

    /// A compaction drops what no later run reads and changes no answer: a message re-handled
    /// after a kill (got, took or saw, not yet seen) is answered as before.
    #[test]
    fn a_compaction_keeps_every_answer_a_later_run_gets() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b, c, d) = ("a".repeat(64), "b".repeat(64), "c".repeat(64), "d".repeat(64));
        let (r1, r2, r3) = (receipt("g1", 1), receipt("g1", 2), receipt("g1", 3));
        let log = MailLog::new(tmp.path());
        // a: took r1, answered, seen. b: a resend of it in other bytes, seen. c: took r2 and was
        // killed before it was seen; d started last and was killed before its receipt's line.
        log.note_got(&a).unwrap();
        log.note_took(&a, &r1).unwrap();
        log.record_reply("p1@ex.org", "old", t("2026-06-01T12:00:00Z")).unwrap();
        // (Seen within KEEP_SEEN_DAYS: the other test drops older marks.)
        log.mark_seen(&a, t("2026-06-20T12:00:00Z")).unwrap();
        log.note_got(&b).unwrap();
        log.note_saw(&b, &r1).unwrap();
        log.mark_seen(&b, t("2026-07-01T11:00:00Z")).unwrap();
        log.note_got(&c).unwrap();
        log.note_took(&c, &r2).unwrap();
        log.note_saw(&c, &r1).unwrap();
        log.record_reply("p1@ex.org", "new", t("2026-07-01T11:50:00Z")).unwrap();
        log.note_got(&d).unwrap();
        let now = t("2026-07-01T12:00:00Z");
        let hashes = [&a, &b, &c, &d];
        let before = answers(tmp.path(), &hashes, &[r1.clone(), r2.clone(), r3.clone()], now);
        let size = std::fs::metadata(path(tmp.path())).unwrap().len();
        assert!(!log.compact(now, size, &OPEN).unwrap(), "not larger than the limit");
        assert!(log.compact(now, 0, &OPEN).unwrap());
        let text = std::fs::read_to_string(path(tmp.path())).unwrap();
        assert_eq!(answers(tmp.path(), &hashes, &[r1, r2, r3], now), before, "{text}");
        assert!(!text.contains(&format!("got {a}")) && !text.contains(&format!("saw {b}")) && !text.contains(" old\n"), "{text}");
        assert!(text.ends_with(&format!("got {d}\n")) && text.contains(&format!("saw {c}")), "{text}");
        // Appends go on after it; a second compaction finds too little to drop.
        log.mark_seen(&c, now).unwrap();
        assert!(MailLog::new(tmp.path()).seen(&c).unwrap());
        assert!(!log.compact(now, 0, &OPEN).unwrap());
    }

    /// Every game's step 1 open; the spool keeps nothing.
    const OPEN: Horizon<'static> = Horizon { open_step: &|_| Some(1), kept: &BTreeSet::new };

    /// The log is bounded: `seen` lines a month old go unless the spool keeps their message, and
    /// what messages took or saw of a resolved step goes; what an open step needs stays.
    #[test]
    fn a_compaction_drops_old_seen_marks_and_the_lines_of_resolved_steps() {
        let tmp = tempfile::tempdir().unwrap();
        let (a, b, c, d) = ("a".repeat(64), "b".repeat(64), "c".repeat(64), "d".repeat(64));
        let log = MailLog::new(tmp.path());
        let at = |step: u64, seq: u64| Receipt { step, ..receipt("g1", seq) };
        // a: a month and a day ago, took a receipt of step 1. b: as old, its message kept in the
        // spool. c: took one of step 2 (open) and saw one of step 1 a week ago. d: killed, saw step 1.
        log.note_took(&a, &at(1, 1)).unwrap();
        log.mark_seen(&a, t("2026-05-31T12:00:00Z")).unwrap();
        log.mark_seen(&b, t("2026-05-31T12:00:00Z")).unwrap();
        log.note_took(&c, &at(2, 1)).unwrap();
        log.note_saw(&c, &at(1, 1)).unwrap();
        log.mark_seen(&c, t("2026-06-24T12:00:00Z")).unwrap();
        log.note_saw(&d, &at(1, 1)).unwrap();
        log.note_got(&d).unwrap();
        let kept = || BTreeSet::from([b.clone()]);
        let horizon = Horizon { open_step: &|g| (g == "g1").then_some(2), kept: &kept };
        assert!(log.compact(t("2026-07-01T12:00:00Z"), 0, &horizon).unwrap());
        let text = std::fs::read_to_string(path(tmp.path())).unwrap();
        assert_eq!(text, format!("seen {b} 2026-05-31T12:00:00Z\ntook {c} g1 2 union 1\nseen {c} 2026-06-24T12:00:00Z\ngot {d}\n"));
        let log = MailLog::new(tmp.path());
        assert!(!log.seen(&a).unwrap() && log.seen(&b).unwrap() && log.seen(&c).unwrap());
        assert!(log.took_here(&c, &at(2, 1)).unwrap() && !log.took_here(&d, &at(2, 1)).unwrap());
    }
}
