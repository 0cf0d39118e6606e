//! Intake's messages read ahead of their handling, on a second thread: each message's bytes and
//! digests, its parse with the signature checks of the orders in it, its commands, and the host
//! key of each game its orders name, decoded, while the main thread handles the messages before
//! it and waits for their syncs. Only reads and pure work happen here: what is decided, written
//! and answered stays on the main thread, in arrival order, so a run's outcome is the one it
//! would be without this thread. A signature checked or a key decoded here is found again in
//! the process's memos (`sig`), at the cost of a digest.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::SyncSender;

use super::commands::Parsed;
use super::extract::{self, Extracted};
use super::games::Games;
use super::spool::HEAD_BYTES;
use crate::error::Result;
use crate::store::GameDir;
use crate::{orderfile, pipeline, sig, store};

/// How many messages may wait read ahead of the one being handled: enough to keep this thread
/// busy through a batch's syncs (~15 ms each, ~0.15 ms a message here).
pub const DEPTH: usize = 128;

/// How many bytes of messages may wait read ahead: past it, a message is left for the main
/// thread to read (a few messages near the host's size limit would otherwise hold
/// [`DEPTH`] times that limit in memory).
const BUDGET: u64 = 32 << 20;

/// What was parsed of a message ahead.
#[derive(Default)]
pub enum Parse {
    /// Not parsed (too large, unreadable, or this thread stopped on it): the main thread parses
    /// it if it needs to.
    #[default]
    NotDone,
    /// [`parse_message`] of its bytes.
    Done(Box<Option<(Extracted, Parsed)>>),
}

/// One message as read ahead.
#[derive(Default)]
pub struct Ahead {
    /// [`read_message`] of it (`None`: read on the main thread).
    pub read: Option<Result<MessageBytes>>,
    /// What was parsed of it.
    pub parsed: Parse,
    /// The text of the panic its reading or parsing here met (printed here once): the main thread
    /// fails the message with it rather than meet the same panic again.
    pub panicked: Option<String>,
}

/// Reads and parses each of `messages` (Maildir, path, file name) in order into `to`, until they
/// are done or the main thread stops listening. `max`: the host's message size limit in bytes;
/// `waiting`: the bytes sent and not yet taken ([`Ahead::taken`]). A message past the
/// [`BUDGET`] is sent as [`Ahead::default`] (the main thread then reads it); one whose handling
/// here panics, with the panic's text ([`Ahead::panicked`]).
pub fn run(messages: &[(PathBuf, PathBuf, String)], games: &Games, max: u64, (to, waiting): (SyncSender<Ahead>, &AtomicU64)) {
    for (_, path, name) in messages {
        let made = if waiting.load(Ordering::Acquire) > BUDGET {
            Ahead::default()
        } else {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| prepare(path, name, games, max))).unwrap_or_else(|p| Ahead { panicked: Some(panic_text(p.as_ref())), ..Ahead::default() })
        };
        waiting.fetch_add(made.bytes(), Ordering::AcqRel);
        if to.send(made).is_err() {
            return;
        }
    }
}

/// The text a panic was raised with (its message), or "an unknown error".
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    payload.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| payload.downcast_ref::<String>().cloned()).unwrap_or_else(|| "an unknown error".into())
}

impl Ahead {
    /// The message's bytes it holds.
    fn bytes(&self) -> u64 {
        self.read.as_ref().and_then(|r| r.as_ref().ok()).map_or(0, |r| r.raw.len() as u64)
    }

    /// Takes its bytes off `waiting` ([`run`]) as the main thread receives it.
    pub fn taken(self, waiting: &AtomicU64) -> Self {
        waiting.fetch_sub(self.bytes(), Ordering::AcqRel);
        self
    }
}

/// One message read, and parsed unless too large, with its orders' signatures checked and
/// their games' host keys decoded into the memos.
fn prepare(path: &std::path::Path, name: &str, games: &Games, max: u64) -> Ahead {
    let read = read_message(path, name, max);
    let parsed = match &read {
        Ok(r) if !r.too_large => {
            let parsed = parse_message(&r.raw, games);
            if let Some((ex, _)) = &parsed
                && ex.bounce.is_none()
            {
                ex.orders.iter().for_each(|f| warm(f, games));
            }
            Parse::Done(Box::new(parsed))
        }
        _ => Parse::NotDone,
    };
    Ahead { read: Some(read), parsed, panicked: None }
}

/// Checks order `f`'s signature as intake will (the text found, then the bytes as sent) and
/// decodes its game's host key, for the memos; whatever fails is found again, and said, on the
/// main thread.
fn warm(f: &super::extract::Found, games: &Games) {
    if f.problem.is_some() {
        return;
    }
    let Ok(text) = sig::normalize(&f.file) else { return };
    let Ok(of) = orderfile::parse_remembered(&sig::split_appended(&text).0) else { return };
    let Some((dir, gf)) = games.get(&of.header.game) else { return };
    let Some(seat) = gf.seat(&of.header.role) else { return };
    let Ok(key) = sig::public_key_line(&seat.key) else { return };
    let checks = |b: &[u8]| sig::verify_order_text(&key, sig::NS_ORDERS, b, f.detached.as_deref()).is_ok();
    if !checks(&f.file)
        && let Some(raw) = &f.raw
    {
        checks(raw);
    }
    let _ = pipeline::host_key(&GameDir::new(dir));
}

/// A message's bytes as intake reads them to handle it ([`read_message`]).
pub struct MessageBytes {
    /// The spool's `NAME.toolarge` beside it, and the size it holds (a spooled head: the size of
    /// the message it was cut from), when there is one.
    pub marker: PathBuf,
    pub marked: Option<u64>,
    /// The bytes: the head only ([`HEAD_BYTES`]) when the message is too large.
    pub raw: Vec<u8>,
    /// The message's size in bytes, and whether it is over the host's limit.
    pub size: u64,
    pub too_large: bool,
    /// The SHA-256 of `raw` (hex), and its [`super::log::mail_key`] (not for one too large).
    pub hash: String,
    pub key: Option<String>,
}

/// Reads message `path` (`name`) for handling: whole when at most `max` bytes, else its head.
/// Errors: the message cannot be opened or read ([`crate::error::Error::Io`]).
pub fn read_message(path: &Path, name: &str, max: u64) -> Result<MessageBytes> {
    let marker = path.with_file_name(format!("{name}.toolarge"));
    // A spooled head: the marker holds the size of the message it was cut from.
    let marked = store::read_hint(&marker, 64).map(|text| text.trim().parse::<u64>().unwrap_or(u64::MAX));
    // One open: its `fstat` gives the size, and the bytes are read from it.
    let (file, len) = store::open_regular_sized(path).map_err(|e| store::io(path, e))?;
    let size = marked.unwrap_or(len);
    let too_large = size > max;
    // Refused without reading it all: the head is enough for the sender's address.
    let want = if too_large { HEAD_BYTES as u64 } else { u64::MAX };
    let mut raw = Vec::with_capacity(len.min(want) as usize);
    file.take(want).read_to_end(&mut raw).map_err(|e| store::io(path, e))?;
    let hash = crate::commit::sha256_hex(&raw);
    // A copy delivered again with other trace lines: the same mail, answered once (tester16 T16a-6).
    let key = (!too_large).then(|| super::log::mail_key(&raw)).flatten();
    Ok(MessageBytes { marker, marked, raw, size, too_large, hash, key })
}

/// The public key of a seat of a readable game.
fn seat_key(games: &Games, game: &str, role: &str) -> Option<ssh_key::PublicKey> {
    let (_, gf) = games.get(game)?;
    sig::public_key_line(&gf.seat(role)?.key).ok()
}

/// What a message's bytes hold ([`extract::extract`], pasted orders found by their seats' keys)
/// and the commands written in it, or `None` when they are not a mail message.
pub fn parse_message(raw: &[u8], games: &Games) -> Option<(Extracted, super::commands::Parsed)> {
    let ex = extract::extract(raw, &|game: &str, role: &str| seat_key(games, game, role))?;
    let commands = super::commands::parse(&ex.subject, &ex.text);
    Some((ex, commands))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A message read ahead carries its bytes and parse, counted in `waiting` until taken; past
    /// the budget, one is left for the main thread to read.
    #[test]
    fn messages_are_read_ahead_within_the_budget_and_left_past_it() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, md) = (tmp.path().join("games"), tmp.path().join("md"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(md.join("new")).unwrap();
        let path = md.join("new").join("1.x");
        std::fs::write(&path, "From: a@example.org\nSubject: status\n\nstatus\n").unwrap();
        let games = Games::load(&root).unwrap();
        let messages = vec![(md.clone(), path.clone(), "1.x".to_string())];
        for (before, read) in [(0, true), (BUDGET + 1, false)] {
            let waiting = AtomicU64::new(before);
            let (to, from) = std::sync::mpsc::sync_channel(DEPTH);
            run(&messages, &games, 1 << 20, (to, &waiting));
            let got = from.recv().unwrap();
            assert_eq!(got.read.is_some(), read);
            if read {
                assert_eq!(waiting.load(Ordering::Acquire), got.bytes());
                let Parse::Done(p) = &got.parsed else { panic!("not parsed") };
                let Some((ex, commands)) = p.as_ref() else { panic!("not parsed") };
                assert_eq!((ex.from.as_deref(), commands.commands.len()), (Some("a@example.org"), 1));
            }
            got.taken(&waiting);
            assert_eq!(waiting.load(Ordering::Acquire), before);
        }
    }
}
