//! The outbox: every outgoing mail is written to `queue/` first and removed only after the
//! transport accepted it. `sent/ID` is written right after acceptance and before removal, so a run
//! that dies after that never sends the same mail again (one killed between the server's
//! acceptance and that write sends it once more, with the same Message-ID), and a mail queued
//! twice (same id) is queued once.
//!
//! ```text
//! OUTBOX/queue/ID.eml   the message (written first)
//! OUTBOX/queue/ID.toml  envelope (written last: the commit point of queueing)
//! OUTBOX/queue/ID.error the last transport error, if a send failed
//! OUTBOX/sent/ID        when it was accepted (a ledger of sent ids)
//! OUTBOX/.lock          one flush at a time
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::compose::Outgoing;
use super::transport::Transport;
use crate::error::{Error, Result};
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

/// What one flush did.
#[derive(Debug, Default)]
pub struct Flushed {
    /// Ids accepted by the transport in this flush.
    pub sent: Vec<String>,
    /// Ids whose send failed (they stay queued), with the error.
    pub failed: Vec<(String, String)>,
    /// True when another run was flushing (nothing was done).
    pub busy: bool,
}

fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
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
    /// True if a mail with this id was ever queued (and is still queued or was sent).
    pub fn knows(&self, id: &str) -> bool {
        self.queue_dir().join(format!("{id}.toml")).exists() || self.sent_path(id).exists()
    }
    /// Whether `id` was accepted by a transport.
    pub fn was_sent(&self, id: &str) -> bool {
        self.sent_path(id).exists()
    }
    /// Queues a mail unless one with the same id is queued or was sent; true if queued now.
    pub fn queue(&self, m: &Outgoing, now: chrono::DateTime<chrono::Utc>) -> Result<bool> {
        if !valid_id(&m.id) {
            return Err(Error::Usage(format!("bad outbox id {:?}", m.id)));
        }
        if self.knows(&m.id) {
            return Ok(false);
        }
        let q = self.queue_dir();
        store::write_atomic(&q.join(format!("{}.eml", m.id)), &m.bytes)?;
        let env = Envelope { id: m.id.clone(), from: m.from.clone(), to: m.to.clone(), queued: crate::pipeline::timestamp(now) };
        store::write_atomic(&q.join(format!("{}.toml", m.id)), toml::to_string(&env).expect("envelope serializes").as_bytes())?;
        Ok(true)
    }
    /// Ids waiting in the queue, oldest name first.
    pub fn pending(&self) -> Result<Vec<String>> {
        Ok(store::list(&self.queue_dir())?.into_iter().filter_map(|n| n.strip_suffix(".toml").map(str::to_string)).collect())
    }
    /// Sends every queued mail through `t`. A mail whose send fails stays queued (its error in
    /// `ID.error`) and is tried again by the next flush.
    pub fn flush(&self, t: &dyn Transport, now: chrono::DateTime<chrono::Utc>) -> Result<Flushed> {
        let mut out = Flushed::default();
        std::fs::create_dir_all(&self.dir).map_err(|e| store::io(&self.dir, e))?;
        let lock_path = self.dir.join(".lock");
        let lock = std::fs::File::options().create(true).truncate(false).write(true).open(&lock_path).map_err(|e| store::io(&lock_path, e))?;
        if lock.try_lock().is_err() {
            out.busy = true;
            return Ok(out);
        }
        let q = self.queue_dir();
        let mut unreachable: Option<String> = None;
        for id in self.pending()? {
            let meta = q.join(format!("{id}.toml"));
            let eml = q.join(format!("{id}.eml"));
            if self.was_sent(&id) {
                // Accepted by an earlier run that died before removing it.
                remove(&eml)?;
                remove(&meta)?;
                continue;
            }
            let text = store::read_text(&meta)?;
            let env: Envelope = toml::from_str(&text).map_err(|e| Error::input(&meta, e.to_string()))?;
            if let Some(why) = &unreachable {
                // The server did not answer for an earlier mail: not tried (each try would wait
                // out the timeout again); the next run sends it.
                out.failed.push((id, format!("not tried: {why}")));
                continue;
            }
            let bytes = store::read(&eml)?;
            match t.send(&env.id, &env.from, &env.to, &bytes) {
                Ok(()) => {
                    store::write_atomic(&self.sent_path(&id), format!("{}\n", crate::pipeline::timestamp(now)).as_bytes())?;
                    // The envelope goes last: while it is there, the next flush finishes this.
                    remove(&eml)?;
                    remove(&q.join(format!("{id}.error")))?;
                    remove(&meta)?;
                    out.sent.push(id);
                }
                Err(e) => {
                    store::write_atomic(&q.join(format!("{id}.error")), format!("{}: {e}\n", crate::pipeline::timestamp(now)).as_bytes())?;
                    if e.unreachable {
                        unreachable = Some(e.message.clone());
                    }
                    out.failed.push((id, e.message));
                }
            }
        }
        // A message left without its envelope by a run killed in the middle of queueing or of
        // the removal above: once sent, nothing needs it (unsent, it is queued again whole).
        for name in store::list(&q)? {
            if let Some(id) = name.strip_suffix(".eml")
                && self.was_sent(id)
                && !q.join(format!("{id}.toml")).exists()
            {
                remove(&q.join(&name))?;
            }
        }
        Ok(out)
    }
}

fn remove(p: &Path) -> Result<()> {
    match std::fs::remove_file(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(store::io(p, e)),
    }
}
