//! The outbox: every outgoing mail is written to `queue/` first and removed only after the
//! transport accepted it. `sent/ID` is written right after acceptance and before removal, so a run
//! that dies after that never sends the same mail again (one killed between the server's
//! acceptance and that write sends it once more, with the same Message-ID), and a mail queued
//! twice (same id) is queued once.
//!
//! ```text
//! OUTBOX/queue/ID.mail  the envelope on its first line (`pbem-envelope QUEUED FROM TO...`),
//!                       then the message: one file, written whole by one rename (the commit
//!                       point of queueing)
//! OUTBOX/queue/ID.eml   the message, and
//! OUTBOX/queue/ID.toml  its envelope (written last), as older versions queued a mail, and as
//!                       one is still queued when an address would not fit on the line
//! OUTBOX/queue/ID.error the last transport error, if a send failed
//! OUTBOX/sent/ID        when it was accepted (a ledger of sent ids)
//! OUTBOX/dead/ID.eml, ID.toml, ID.reason   refused for good (a 5xx reply, or a mail the
//!                       transport can never send, [`Failure::Permanent`]), or not accepted
//!                       for GIVE_UP_DAYS: never tried again; the flush that moves it reports it
//! OUTBOX/untold/ID      a dead letter the host has not been told of yet: written before the
//!                       mail moves to `dead/`, removed once the notice is printed
//!                       ([`Outbox::told`]); a flush that finds one with its dead letter (a run
//!                       killed in between) tells it then, so each is told once (twice if a
//!                       run is killed between printing the notice and removing the mark, or
//!                       another flush starts in that moment: the lock is released by then)
//! OUTBOX/.lock          one flush at a time (its holder sends what others queued meanwhile)
//! ```
//!
//! Before the first mail of a flush the transport checks the server (connection, TLS, login):
//! when that fails, nothing is tried and every mail waits for the next run.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::compose::Outgoing;
use super::transport::{Failure, Transport};
use crate::error::{Error, MailProblem, Result};
use crate::store;

/// An outbox folder.
pub struct Outbox {
    /// The folder.
    pub dir: PathBuf,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Envelope {
    id: String,
    from: String,
    to: Vec<String>,
    queued: String,
}

/// A transient failure older than this many days ends the mail's tries (as an MTA gives up on
/// a message it could not deliver for days).
pub const GIVE_UP_DAYS: i64 = 5;

/// What one flush did.
#[derive(Debug, Default)]
pub struct Flushed {
    /// Ids accepted by the transport in this flush.
    pub sent: Vec<String>,
    /// Mails moved to `dead/` by this flush (each is reported once, by the flush that moved it).
    pub dead: Vec<DeadLetter>,
    /// Mails whose send failed for now (they stay queued): id, recipients (`, ` between; empty
    /// when the queued mail could not be read), the error.
    pub failed: Vec<(String, String, String)>,
    /// Why the server could not be reached, when it could not: the mails not tried stay queued.
    pub unreachable: Option<String>,
    /// Mails still queued after the flush.
    pub waiting: usize,
    /// True when another run was flushing (nothing was done).
    pub busy: bool,
}

/// A mail the server refused for good.
#[derive(Debug, Clone)]
pub struct DeadLetter {
    /// The mail's id (`dead/ID.eml`).
    pub id: String,
    /// Its recipients.
    pub to: Vec<String>,
    /// The server's answer, as a sentence.
    pub reason: String,
}

/// The first word of a queue file's envelope line (`ID.mail`).
const ENVELOPE_LINE: &str = "pbem-envelope";

impl Envelope {
    /// The envelope's line (with its newline), or `None` when a field is empty or holds a space
    /// or a control character (then the mail is queued as `ID.eml` and `ID.toml`).
    fn line(&self) -> Option<String> {
        let word = |s: &str| !s.is_empty() && !s.chars().any(|c| c.is_whitespace() || c.is_control());
        let fields = [&self.queued, &self.from].into_iter().chain(&self.to);
        (word(&self.id) && fields.clone().all(|f| word(f)) && !self.to.is_empty()).then(|| format!("{ENVELOPE_LINE} {}\n", fields.map(String::as_str).collect::<Vec<_>>().join(" ")))
    }

    /// Reads an `ID.mail` file's bytes: its envelope and the message.
    fn split(id: &str, bytes: &[u8], path: &Path) -> Result<(Envelope, Vec<u8>)> {
        let bad = || Error::input(path, "not a queued mail: its first line is not `pbem-envelope QUEUED FROM TO...`");
        let end = bytes.iter().position(|b| *b == b'\n').ok_or_else(bad)?;
        let line = std::str::from_utf8(&bytes[..end]).map_err(|_| bad())?;
        let f: Vec<&str> = line.split(' ').collect();
        let [ENVELOPE_LINE, queued, from, to @ ..] = f.as_slice() else { return Err(bad()) };
        if to.is_empty() {
            return Err(bad());
        }
        let env = Envelope { id: id.to_string(), from: from.to_string(), to: to.iter().map(|t| t.to_string()).collect(), queued: queued.to_string() };
        Ok((env, bytes[end + 1..].to_vec()))
    }
}

fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
}

/// Mails queued by this process (any outbox): what a run's `outbox:` line counts as "queued in
/// this run" (replies, reports, reminders, press and teammates' plans alike).
static QUEUED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many mails this process has queued so far ([`Outbox::queue`]).
pub fn queued_by_this_process() -> usize {
    QUEUED.load(std::sync::atomic::Ordering::Relaxed)
}

impl Outbox {
    /// The outbox under a games root: `ROOT/.mail/outbox`.
    pub fn under(root: &Path) -> Outbox {
        Outbox { dir: root.join(".mail").join("outbox") }
    }
    fn queue_dir(&self) -> PathBuf {
        self.dir.join("queue")
    }
    fn sent_path(&self, id: &str) -> PathBuf {
        self.dir.join("sent").join(id)
    }
    /// `OUTBOX/dead/`: mails refused for good.
    pub fn dead_dir(&self) -> PathBuf {
        self.dir.join("dead")
    }
    /// `OUTBOX/untold/`: marks of the dead letters the host has not been told of.
    fn untold_dir(&self) -> PathBuf {
        self.dir.join("untold")
    }
    /// Notes that the host has been told of `dead` (printed, after the flush that returned them):
    /// their marks in `untold/` go, and no later flush tells them again.
    pub fn told(&self, dead: &[DeadLetter]) -> Result<()> {
        for d in dead {
            remove(&self.untold_dir().join(&d.id))?;
        }
        Ok(())
    }
    /// The dead letters a killed run moved to `dead/` without telling the host, by id; a mark
    /// whose mail never reached `dead/` (killed before that; the mail is still queued) goes.
    fn untold(&self) -> Result<Vec<DeadLetter>> {
        let mut out = Vec::new();
        for id in store::list(&self.untold_dir())?.into_iter().filter(|n| !n.starts_with('.')) {
            let dead = self.dead_dir();
            let Ok(text) = store::read_text(&dead.join(format!("{id}.toml"))) else {
                remove(&self.untold_dir().join(&id))?;
                continue;
            };
            let to = toml::from_str::<Envelope>(&text).map(|e| e.to).unwrap_or_default();
            let reason = store::read_text(&dead.join(format!("{id}.reason"))).unwrap_or_default();
            // `TIME: REASON`, as `bury` wrote it.
            let reason = reason.trim_end().split_once(": ").map_or(reason.trim_end(), |(_, r)| r).to_string();
            out.push(DeadLetter { id, to, reason });
        }
        Ok(out)
    }
    fn mail_path(&self, id: &str) -> PathBuf {
        self.queue_dir().join(format!("{id}.mail"))
    }
    /// True if a mail with this id was ever queued (and is still queued, was sent or refused).
    pub fn knows(&self, id: &str) -> bool {
        self.mail_path(id).exists() || self.queue_dir().join(format!("{id}.toml")).exists() || self.sent_path(id).exists() || self.dead_dir().join(format!("{id}.toml")).exists()
    }
    /// Ids of the mails in `dead/`, by name.
    pub fn dead(&self) -> Result<Vec<String>> {
        Ok(store::list(&self.dead_dir())?.into_iter().filter_map(|n| n.strip_suffix(".toml").map(str::to_string)).collect())
    }
    /// Whether `id` was accepted by a transport.
    pub fn was_sent(&self, id: &str) -> bool {
        self.sent_path(id).exists()
    }
    /// Queues a mail unless one with the same id is queued or was sent; true if queued now
    /// (counted in [`queued_by_this_process`]).
    pub fn queue(&self, m: &Outgoing, now: chrono::DateTime<chrono::Utc>) -> Result<bool> {
        if !valid_id(&m.id) {
            return Err(Error::Mail(MailProblem::OutboxId(m.id.clone())));
        }
        if self.knows(&m.id) {
            return Ok(false);
        }
        let q = self.queue_dir();
        let env = Envelope { id: m.id.clone(), from: m.from.clone(), to: m.to.clone(), queued: crate::pipeline::timestamp(now) };
        if let Some(line) = env.line() {
            let mut bytes = line.into_bytes();
            bytes.extend_from_slice(&m.bytes);
            store::write_atomic(&self.mail_path(&m.id), &bytes)?;
        } else {
            store::write_atomic(&q.join(format!("{}.eml", m.id)), &m.bytes)?;
            store::write_atomic(&q.join(format!("{}.toml", m.id)), toml::to_string(&env).expect("envelope serializes").as_bytes())?;
        }
        QUEUED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(true)
    }
    /// Ids waiting in the queue, oldest name first.
    pub fn pending(&self) -> Result<Vec<String>> {
        let mut ids: Vec<String> = store::list(&self.queue_dir())?.into_iter().filter(|n| !n.starts_with('.')).filter_map(|n| n.strip_suffix(".toml").or_else(|| n.strip_suffix(".mail")).map(str::to_string)).collect();
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    /// The envelope and the bytes of queued mail `id`, in either form of the queue.
    fn read_queued(&self, id: &str) -> Result<(Envelope, Vec<u8>)> {
        let q = self.queue_dir();
        let mail = self.mail_path(id);
        match store::read_regular(&mail) {
            Ok(bytes) => return Envelope::split(id, &bytes, &mail),
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(store::io(&mail, e)),
            Err(_) => {}
        }
        let meta = q.join(format!("{id}.toml"));
        let env: Envelope = toml::from_str(&store::read_text(&meta)?).map_err(|e| Error::input(&meta, e.to_string()))?;
        Ok((env, store::read(&q.join(format!("{id}.eml")))?))
    }

    /// The message of queued mail `id` as it will be sent (`None` when none is queued by that id).
    pub fn queued_message(&self, id: &str) -> Result<Option<Vec<u8>>> {
        if !self.pending()?.iter().any(|p| p == id) {
            return Ok(None);
        }
        Ok(Some(self.read_queued(id)?.1))
    }
    /// Sends every queued mail through `t`. A mail whose send fails for now stays queued (its
    /// error in `ID.error`) and is tried again by the next flush; one refused for good moves to
    /// `dead/`. When the server cannot be reached, the mails not tried stay queued.
    ///
    /// One flush at a time (`OUTBOX/.lock`). A run that finds the lock taken waits for it up to
    /// [`BUSY_WAIT`] (the holder may have been killed, or be no pbem at all) and then leaves its
    /// mail to the holder (`busy`). The holder makes that safe: it looks at the queue again before
    /// it lets the lock go, until nothing new came, and once more after, taking the lock again when
    /// a mail came in between. So every mail queued by a run that found the lock taken is sent by
    /// a run that held it after that mail was queued.
    pub fn flush(&self, t: &dyn Transport, now: chrono::DateTime<chrono::Utc>) -> Result<Flushed> {
        let mut f = Flush { outbox: self, t, now, tried: Default::default(), checked: false, out: Flushed::default() };
        std::fs::create_dir_all(&self.dir).map_err(|e| store::io(&self.dir, e))?;
        let lock = store::open_lock(&self.dir.join(".lock"))?;
        if !wait_for(&lock) {
            f.out.busy = true;
            f.out.waiting = self.pending()?.len();
            return Ok(f.out);
        }
        self.finish_interrupted()?;
        // Dead letters of a run killed before it told them are told by this one.
        f.out.dead = self.untold()?;
        loop {
            f.send_until_none_new()?;
            // Unlocking is no error a run could act on: a failed unlock ends with the process.
            let _ = lock.unlock();
            // A mail queued after the last look by a run that then found the lock taken.
            if f.out.unreachable.is_some() || f.new_ids()?.is_empty() || lock.try_lock().is_err() {
                break;
            }
        }
        f.out.waiting = self.pending()?.len();
        Ok(f.out)
    }

    /// Sends queued mail `id` and records what became of it in `out`.
    fn send_one(&self, t: &dyn Transport, id: &str, now: chrono::DateTime<chrono::Utc>, out: &mut Flushed) -> Result<()> {
        let q = self.queue_dir();
        let meta = q.join(format!("{id}.toml"));
        let eml = q.join(format!("{id}.eml"));
        // A queued mail that cannot be read (damaged, or not a regular file) stays queued and is
        // told as failed, naming the file; the mails after it are still sent.
        let (env, bytes) = match self.read_queued(id) {
            Ok(queued) => queued,
            Err(e) => {
                out.failed.push((id.to_string(), String::new(), e.to_string()));
                return Ok(());
            }
        };
        let e = match t.send(&env.id, &env.from, &env.to, &bytes) {
            Ok(()) => {
                store::write_atomic(&self.sent_path(id), format!("{}\n", crate::pipeline::timestamp(now)).as_bytes())?;
                // The envelope goes last: while it is there, the next flush finishes this.
                remove(&eml)?;
                remove(&q.join(format!("{id}.error")))?;
                remove(&meta)?;
                remove(&self.mail_path(id))?;
                out.sent.push(id.to_string());
                return Ok(());
            }
            Err(e) => e,
        };
        let queued = crate::pipeline::parse_time(&env.queued).ok();
        let too_old = queued.is_some_and(|q| now - q >= chrono::Duration::days(GIVE_UP_DAYS));
        match e.kind {
            Failure::Permanent => self.bury(&env, &e.message, now, out),
            Failure::Transient if too_old => self.bury(&env, &format!("not accepted in {GIVE_UP_DAYS} days (queued {}); the last answer: {}", env.queued, e.message), now, out),
            kind => {
                store::write_atomic(&q.join(format!("{id}.error")), format!("{}: {e}\n", crate::pipeline::timestamp(now)).as_bytes())?;
                if kind == Failure::Unreachable {
                    out.unreachable = Some(e.message);
                } else {
                    out.failed.push((id.to_string(), env.to.join(", "), e.message));
                }
                Ok(())
            }
        }
    }

    /// Moves a queued mail to `dead/` with its reason: its mark in `untold/` first, then the
    /// reason, then the envelope (the commit point: the mail leaves the queue), then the message. A mail queued as one file
    /// (`ID.mail`) is written to `dead/` as `ID.eml` and then `ID.toml`, and then removed from the queue.
    fn bury(&self, env: &Envelope, reason: &str, now: chrono::DateTime<chrono::Utc>, out: &mut Flushed) -> Result<()> {
        let (q, dead) = (self.queue_dir(), self.dead_dir());
        store::make_dirs(&dead, true)?;
        // The mark first: from the commit point below until the host is told, it is there.
        store::write_atomic(&self.untold_dir().join(&env.id), b"")?;
        store::write_atomic(&dead.join(format!("{}.reason", env.id)), format!("{}: {reason}\n", crate::pipeline::timestamp(now)).as_bytes())?;
        if self.mail_path(&env.id).exists() {
            let (env, bytes) = self.read_queued(&env.id)?;
            store::write_atomic(&dead.join(format!("{}.eml", env.id)), &bytes)?;
            store::write_atomic(&dead.join(format!("{}.toml", env.id)), toml::to_string(&env).expect("envelope serializes").as_bytes())?;
            // The error first: a run killed between the two leaves nothing in the queue for good
            // (found by tester T11: an `.error` without its mail stayed).
            remove(&q.join(format!("{}.error", env.id)))?;
            remove(&self.mail_path(&env.id))?;
            out.dead.push(DeadLetter { id: env.id.clone(), to: env.to.clone(), reason: reason.to_string() });
            return Ok(());
        }
        for ext in ["toml", "eml"] {
            let from = q.join(format!("{}.{ext}", env.id));
            std::fs::rename(&from, dead.join(format!("{}.{ext}", env.id))).map_err(|e| store::io(&from, e))?;
        }
        remove(&q.join(format!("{}.error", env.id)))?;
        out.dead.push(DeadLetter { id: env.id.clone(), to: env.to.clone(), reason: reason.to_string() });
        Ok(())
    }

    /// Finishes what a run killed in the middle of a flush or of queueing left: a mail accepted
    /// but not yet removed from the queue, a message whose envelope was removed after sending
    /// (unsent, it is queued again whole), a dead letter whose message was not moved yet.
    fn finish_interrupted(&self) -> Result<()> {
        let q = self.queue_dir();
        for id in self.pending()? {
            // Sent, or (queued as one file) written to `dead/` whole: what is left in the queue goes.
            let buried = self.mail_path(&id).exists() && self.dead_dir().join(format!("{id}.toml")).exists();
            if self.was_sent(&id) || buried {
                remove(&q.join(format!("{id}.eml")))?;
                remove(&q.join(format!("{id}.error")))?;
                remove(&q.join(format!("{id}.toml")))?;
                remove(&self.mail_path(&id))?;
            }
        }
        for name in store::list(&q)? {
            // An error note whose mail is gone (sent or buried by an older run killed between).
            if let Some(id) = name.strip_suffix(".error")
                && !["mail", "eml", "toml"].iter().any(|ext| q.join(format!("{id}.{ext}")).exists())
            {
                remove(&q.join(&name))?;
                continue;
            }
            let Some(id) = name.strip_suffix(".eml") else { continue };
            if q.join(format!("{id}.toml")).exists() {
                continue;
            }
            if self.was_sent(id) {
                remove(&q.join(&name))?;
            } else if self.dead_dir().join(format!("{id}.toml")).exists() {
                let to = self.dead_dir().join(&name);
                std::fs::rename(q.join(&name), &to).map_err(|e| store::io(&to, e))?;
                remove(&q.join(format!("{id}.error")))?;
            }
        }
        Ok(())
    }
}

/// How long a flush waits for another run's flush to end before it leaves its mail to that run.
pub const BUSY_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Takes `lock`, waiting up to [`BUSY_WAIT`] while another process holds it; false if it never
/// came free.
fn wait_for(lock: &std::fs::File) -> bool {
    let start = std::time::Instant::now();
    loop {
        if lock.try_lock().is_ok() {
            return true;
        }
        if start.elapsed() >= BUSY_WAIT {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// One flush in progress: what it has tried (each mail once a flush) and done.
struct Flush<'a> {
    outbox: &'a Outbox,
    t: &'a dyn Transport,
    now: chrono::DateTime<chrono::Utc>,
    /// Ids this flush tried to send (sent, failed or buried): not tried again by it.
    tried: std::collections::BTreeSet<String>,
    /// The server was checked ([`Transport::check`]) and answered.
    checked: bool,
    out: Flushed,
}

impl Flush<'_> {
    /// The queued ids this flush has not tried yet, oldest name first.
    fn new_ids(&self) -> Result<Vec<String>> {
        Ok(self.outbox.pending()?.into_iter().filter(|id| !self.tried.contains(id)).collect())
    }

    /// Sends the queue, then what was queued meanwhile, until a look finds nothing new (or the
    /// server cannot be reached). The caller holds the outbox lock.
    fn send_until_none_new(&mut self) -> Result<()> {
        loop {
            let todo = self.new_ids()?;
            if todo.is_empty() || self.out.unreachable.is_some() {
                return Ok(());
            }
            if !self.checked {
                // A run killed while writing a sent mark or a dead letter left its temp file there
                // (this run holds the outbox lock; a flush with nothing to send lists neither).
                let _ = store::remove_stale_temps(&self.outbox.dir.join("sent"));
                let _ = store::remove_stale_temps(&self.outbox.dead_dir());
                if let Err(e) = self.t.check() {
                    self.out.unreachable = Some(e.message);
                    return Ok(());
                }
                self.checked = true;
            }
            for id in todo {
                if self.out.unreachable.is_some() {
                    // Not tried: each try would wait out the timeout again; the next run sends it.
                    break;
                }
                self.outbox.send_one(self.t, &id, self.now, &mut self.out)?;
                self.tried.insert(id);
            }
        }
    }
}

fn remove(p: &Path) -> Result<()> {
    match std::fs::remove_file(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(store::io(p, e)),
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::mail::transport::SendError;

    /// One mail handed over: id, sender, recipients, bytes.
    type Handed = (String, String, Vec<String>, Vec<u8>);

    /// Keeps what it was given.
    #[derive(Default)]
    struct Recorder(RefCell<Vec<Handed>>);

    impl Transport for Recorder {
        fn send(&self, id: &str, from: &str, to: &[String], bytes: &[u8]) -> std::result::Result<(), SendError> {
            self.0.borrow_mut().push((id.into(), from.into(), to.to_vec(), bytes.to_vec()));
            Ok(())
        }
    }

    fn mail(id: &str, to: &[&str]) -> Outgoing {
        Outgoing { id: id.into(), from: "judge@example.net".into(), to: to.iter().map(|t| t.to_string()).collect(), bytes: format!("Subject: {id}\r\n\r\nbody\nline\r\n").into_bytes() }
    }

    #[test]
    fn a_flush_removes_the_temp_files_killed_runs_left_in_sent_and_dead() {
        let tmp = tempfile::tempdir().unwrap();
        let outbox = Outbox { dir: tmp.path().join("outbox") };
        let now = crate::pipeline::parse_time("2026-07-01T12:00:00Z").unwrap();
        let (sent, dead) = (outbox.dir.join("sent"), outbox.dead_dir());
        std::fs::create_dir_all(&sent).unwrap();
        std::fs::create_dir_all(&dead).unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let gone = child.id();
        child.wait().unwrap();
        let library = sent.join(".pbem-reply-x.AbC123");
        std::fs::File::create(&library).unwrap().set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600)).unwrap();
        let ours = dead.join(format!(".pbem-reply-y.reason.{gone}.0.tmp"));
        std::fs::write(&ours, "half").unwrap();
        // Nothing to send: nothing listed.
        outbox.flush(&Recorder::default(), now).unwrap();
        assert!(library.exists() && ours.exists());
        assert!(outbox.queue(&mail("m-1", &["a@example.org"]), now).unwrap());
        outbox.flush(&Recorder::default(), now).unwrap();
        assert!(!library.exists() && !ours.exists(), "the killed runs' temp files are left");
        assert!(outbox.was_sent("m-1"));
        // An error note left without its mail by a run killed while burying it goes too.
        std::fs::write(outbox.queue_dir().join("m-2.error"), "refused\n").unwrap();
        assert!(outbox.queue(&mail("m-3", &["a@example.org"]), now).unwrap());
        outbox.flush(&Recorder::default(), now).unwrap();
        assert!(!outbox.queue_dir().join("m-2.error").exists());
    }

    #[test]
    fn a_mail_is_queued_as_one_file_and_an_older_queue_is_still_sent() {
        let tmp = tempfile::tempdir().unwrap();
        let outbox = Outbox { dir: tmp.path().join("outbox") };
        let now = crate::pipeline::parse_time("2026-07-01T12:00:00Z").unwrap();
        let new = mail("new-1", &["a@example.org", "b@example.org"]);
        assert!(outbox.queue(&new, now).unwrap());
        assert_eq!(store::list(&outbox.queue_dir()).unwrap(), ["new-1.mail"], "one file a mail");
        assert!(!outbox.queue(&new, now).unwrap(), "queued once");
        // An address that does not fit on the line: the two files, as older versions wrote.
        let odd = mail("odd-1", &["\"a b\"@example.org"]);
        assert!(outbox.queue(&odd, now).unwrap());
        // As an older pbem left it.
        let old = mail("old-1", &["c@example.org"]);
        std::fs::write(outbox.queue_dir().join("old-1.eml"), &old.bytes).unwrap();
        std::fs::write(outbox.queue_dir().join("old-1.toml"), "id = \"old-1\"\nfrom = \"judge@example.net\"\nto = [\"c@example.org\"]\nqueued = \"2026-07-01T11:00:00Z\"\n").unwrap();
        assert_eq!(outbox.pending().unwrap(), ["new-1", "odd-1", "old-1"]);
        assert_eq!(outbox.queued_message("new-1").unwrap(), Some(new.bytes.clone()));
        let sent = Recorder::default();
        let f = outbox.flush(&sent, now).unwrap();
        assert_eq!(f.sent, ["new-1", "odd-1", "old-1"]);
        let got = sent.0.into_inner();
        for (m, g) in [&new, &odd, &old].into_iter().zip(&got) {
            assert_eq!((&g.0, &g.1, &g.2, &g.3), (&m.id, &m.from, &m.to, &m.bytes), "byte for byte");
        }
        assert!(store::list(&outbox.queue_dir()).unwrap().is_empty() && outbox.knows("new-1") && outbox.was_sent("old-1"));
    }
}
