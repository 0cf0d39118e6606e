//! `pbem intake`: takes mail in from a Maildir, an mbox or standard input, submits every signed
//! order found in it to the game it names, and queues a reply for each message.
//!
//! Nothing is lost and nothing is done twice:
//! - a Maildir message is moved (renamed) to `MAILDIR/done/` or, with `NAME.reason` beside it, to
//!   `MAILDIR/failed/` only after its reply is queued; a run killed before that leaves it in
//!   `new/`/`cur/` and the next run handles it again, which is harmless: a resubmitted order gets
//!   its receipt back ("already received") and the reply has the same id, so it is queued once;
//! - the mail log `ROOT/.mail/log` (`super::log`) marks each handled message seen by the
//!   SHA-256 of its bytes (appended before the move), so the same bytes are never handled twice;
//! - a run's messages are one group commit (`Filing`): their receipts, replies and ledgers are
//!   made durable by one sync a batch of messages, and only then are they marked seen and moved;
//! - messages from an mbox or standard input are first delivered into the spool Maildir
//!   `ROOT/.mail/spool/` as `SECONDS.SEQUENCE.HASH` (taking an mbox again adds nothing: a
//!   message whose hash is waiting or seen is skipped) and handled from there like any Maildir;
//!   every run also handles what an earlier, killed run left in the spool;
//! - messages are handled in arrival order across the Maildirs and the spool (`super::spool`),
//!   so of two orders of one role the later one counts; a message that must wait (its game busy,
//!   unreadable, held by two folders, or behind the clock) holds back only later messages naming
//!   one of its games;
//! - one intake at a time (`ROOT/.mail/intake.lock`, [`lock_root`]; a piped message is spooled
//!   first and then waits for it, the other sources skip the run; a cron run holds it through
//!   adjudication, ARCHITECTURE.md "Locks").
//!
//! Routing is by the `game` inside each order (the folder of games under ROOT whose `game.toml`
//! has that id), never by `From`, and an order is judged by its signature (the seat's key), never
//! by `From`. The reply goes to `From` when that is a seat's address in some game, with a copy to
//! the seat of each validly signed order; a message from any other address is answered only at
//! the registered addresses of the seats whose keys signed its orders, and without such an order
//! it goes to `failed/` unanswered. Delivery reports are never read for orders nor answered,
//! automatic mail never answered, and replies to one address are capped per hour
//! (counted in the mail log).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::compose::{self, Draft, Outgoing, stable_id};
use super::config::HostConfig;
use super::extract::{self, Extracted, Found};
use super::log::MailLog;
use super::outbox::Outbox;
use super::reply::{ReplyLedger, how_to_send, place, reply_body, reply_subject};
pub use super::config::state_dir;
pub use super::games::Games;
pub use super::reply::OrderResult;
use super::spool::{arrival_order, spool_mbox, spool_stdin};
use crate::error::{Error, Result};
use crate::model::{GameFile, Receipt};
use crate::pipeline::Clock;
use crate::{orderfile, pipeline, sig, store};

/// Where mail comes from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A Maildir (`new/`, `cur/`); handled messages move to `done/` or `failed/` inside it.
    Maildir(PathBuf),
    /// An mbox file (never changed).
    Mbox(PathBuf),
    /// One message on standard input (a `.forward` or procmail pipe).
    Stdin,
}

/// Where a message ended up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// Handled (a reply was queued, or none was due).
    Done,
    /// Could not be handled; the reason is beside it.
    Failed,
    /// Left in place for the next run (a game was busy).
    Retry,
}

/// What intake did with one message.
#[derive(Debug, Clone)]
pub struct Handled {
    /// The message's file name in the Maildir.
    pub name: String,
    /// Where it went.
    pub disposition: Disposition,
    /// Why (one line).
    pub reason: String,
    /// Each order found.
    pub orders: Vec<OrderResult>,
    /// The reply's outbox id, if one was queued.
    pub reply: Option<String>,
    /// Whether a reply was held back from an address over the hourly cap (`max_replies_per_hour`),
    /// a command could not be answered for a game whose files need the host, or the message was
    /// left for the next run because its game's folder cannot be read or written, or it is no
    /// message at all (a FIFO, a folder: [`arrival_order`]): a problem the host hears of even with
    /// `--quiet` (the player misses a receipt or an answer); the last two make the run exit 1
    /// ([`Handled::waits_for_host`]).
    pub needs_host: bool,
}

impl Handled {
    /// Whether the host must hear of this message with `--quiet`: it failed, waits, or a reply
    /// was held back by the hourly cap.
    pub fn is_problem(&self) -> bool {
        self.disposition != Disposition::Done || self.needs_host
    }

    /// Whether it waits for the host: to mend its game's folder, or to remove what is no message
    /// (a run that leaves one exits 1).
    pub fn waits_for_host(&self) -> bool {
        self.disposition == Disposition::Retry && self.needs_host
    }
}

/// Creates the mail state folder (`ROOT/.mail`) if needed and makes it the host's alone (mode
/// 0700, like `host/`): it holds players' messages with orders still sealed, and queued reports.
pub fn make_state_dir(root: &Path) -> Result<PathBuf> {
    let state = state_dir(root);
    std::fs::create_dir_all(&state).map_err(|e| store::io(&state, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).map_err(|e| store::io(&state, e))?;
    }
    Ok(state)
}

/// The root's intake lock (`ROOT/.mail/intake.lock`), held while mail is taken in and, in a cron
/// run, while the games are adjudicated: so no step is resolved as NMR while another run holds
/// messages it has not taken in yet (ARCHITECTURE.md "Locks"). Released when dropped.
#[derive(Debug)]
pub struct RootLock(#[allow(dead_code)] std::fs::File);

/// Takes the root's intake lock: waiting for it when `wait`, else [`Error::Locked`] if another
/// run holds it. Always taken before any game's lock, never while holding one.
pub fn lock_root(root: &Path, wait: bool) -> Result<RootLock> {
    let state = make_state_dir(root)?;
    let path = state.join("intake.lock");
    let f = store::open_lock(&path)?;
    if wait {
        f.lock().map_err(|e| store::io(&path, e))?;
    } else if f.try_lock().is_err() {
        return Err(Error::Locked(state));
    }
    Ok(RootLock(f))
}

/// What one intake pass did.
#[derive(Debug, Default)]
pub struct IntakeRun {
    /// Every message, in arrival order.
    pub handled: Vec<Handled>,
    /// The games named by orders in messages left for the next run: their steps must not be
    /// resolved until those messages are taken in. (A message that may be for a game that
    /// cannot be read holds nothing more: that game cannot be adjudicated either.)
    pub held_games: BTreeSet<String>,
    /// Sources that could not be read (a missing Maildir, an mbox that cannot be opened); the
    /// others were taken in.
    pub errors: Vec<Error>,
}

/// Takes mail in from `source`; returns what happened to each message. A piped message
/// (`Source::Stdin`) is first delivered into the spool, then waits for the root lock and is taken
/// in together with the config's own sources (so that a player's mail arriving both ways is taken
/// in the order it arrived); the other sources skip the run ([`Error::Locked`]) when another
/// intake holds the lock. The clock is read once the lock is held.
///
/// Errors: [`Error::Locked`]; the given source cannot be read (not a Maildir, an mbox that cannot
/// be opened); a disk error while handling a message.
pub fn run(root: &Path, source: &Source, cfg: &HostConfig, clock: impl Into<Clock>) -> Result<Vec<Handled>> {
    let clock = clock.into();
    make_state_dir(root)?;
    let piped = matches!(source, Source::Stdin);
    // Spooled before waiting: a cron run holding the lock takes it in before resolving.
    let spooled = if piped { spool_stdin(root, cfg, clock.now())? } else { None };
    let lock = lock_root(root, piped)?;
    let sources = if piped { config_sources(cfg) } else { vec![source.clone()] };
    let mut r = run_locked(root, &sources, cfg, clock, &lock)?;
    if piped {
        r.handled.extend(piped_elsewhere(spooled, &r.handled));
    }
    match r.errors.pop() {
        // From a pipe, a config source that cannot be read is the cron run's to report: the
        // piped message itself is safe in the spool.
        Some(e) if !piped => Err(e),
        _ => Ok(r.handled),
    }
}

/// What became of a piped message this run did not handle: another run took it in while this
/// one waited for the lock, or the same bytes had been taken in before (`spooled` is `None`).
fn piped_elsewhere(spooled: Option<String>, handled: &[Handled]) -> Option<Handled> {
    let done = |name: String, reason: &str| Handled { name, disposition: Disposition::Done, reason: reason.into(), orders: vec![], reply: None, needs_host: false };
    match spooled {
        Some(name) if handled.iter().any(|h| h.name == name) => None,
        Some(name) => Some(done(name, "taken in by another run while this one waited (a cron run: its output says what became of it)")),
        None => Some(done("<stdin>".into(), "the same bytes were taken in before: not handled again")),
    }
}

/// The games named by messages waiting in the spool under `root` (piped messages not yet taken
/// in): a plain `pbem adjudicate`, which reads no mail, must not resolve their steps. Nothing
/// when the spool is empty or missing.
pub fn spooled_games(root: &Path) -> Result<BTreeSet<String>> {
    let spool = state_dir(root).join("spool");
    // What cannot be a message is the intake run's to name.
    let (waiting, _) = arrival_order(std::slice::from_ref(&spool))?;
    if waiting.is_empty() {
        return Ok(BTreeSet::new());
    }
    Ok(waiting.iter().flat_map(|(_, path, _)| message_games(path, u64::MAX)).collect())
}

/// The config's `[intake]` sources: its Maildir, then its mbox.
pub fn config_sources(cfg: &HostConfig) -> Vec<Source> {
    cfg.intake.maildir.iter().map(|d| Source::Maildir(d.clone())).chain(cfg.intake.mbox.iter().map(|f| Source::Mbox(f.clone()))).collect()
}

/// Takes mail in from Maildirs and mboxes while holding the root lock, together with whatever
/// waits in the spool, all in one arrival order across folders. A source that cannot be read is
/// set aside in [`IntakeRun::errors`] and the others are taken in.
///
/// Arrival order is kept per game: once a message must wait (its game is busy, cannot be read, is
/// held by two folders, or is behind the clock), every later message naming one of its games
/// waits too, so an older order is never taken after a newer one of the same seat; messages for
/// other games go on, whoever sent them.
pub fn run_locked(root: &Path, sources: &[Source], cfg: &HostConfig, clock: Clock, _lock: &RootLock) -> Result<IntakeRun> {
    let now = clock.now();
    let spool = state_dir(root).join("spool");
    let mut out = IntakeRun::default();
    let mut folders = Vec::new();
    for source in sources {
        match source {
            Source::Maildir(d) if !d.join("new").is_dir() && !d.join("cur").is_dir() => out.errors.push(Error::input(d, "is not a Maildir (it has no new/ or cur/ folder)")),
            Source::Maildir(d) => folders.push(d.clone()),
            Source::Mbox(f) => match spool_mbox(&spool, f, cfg, now) {
                Ok(()) => folders.push(spool.clone()),
                Err(e) => out.errors.push(e),
            },
            Source::Stdin => folders.push(spool.clone()),
        }
    }
    // Whatever an earlier run spooled but did not get to (it was killed, or its game was busy).
    if spool.is_dir() {
        folders.push(spool);
    }
    folders.sort();
    folders.dedup();
    // Earlier versions copied each order into `ROOT/.mail/tmp/` to submit it; a killed run could
    // leave copies there. Orders are now submitted from memory, and this run holds the lock.
    let old_copies = state_dir(root).join("tmp");
    if old_copies.is_dir() {
        std::fs::remove_dir_all(&old_copies).map_err(|e| store::io(&old_copies, e))?;
    }
    let mut filing = Filing::open(root, clock);
    let taken = take_in(root, &folders, cfg, now, &mut out, &mut filing);
    // Whatever stopped the run, the messages handled before it are filed away.
    let filed = filing.finish(&mut out);
    taken.and(filed)?;
    Ok(out)
}

/// Handles every message of `folders` in arrival order into `out`; each handled message is left
/// in `filing` to be filed away once its receipts and reply are durable. The messages are read
/// and parsed ahead on a second thread ([`super::ahead`]) while this one handles those before
/// them and waits for their syncs.
fn take_in(root: &Path, folders: &[PathBuf], cfg: &HostConfig, now: DateTime<Utc>, out: &mut IntakeRun, filing: &mut Filing) -> Result<()> {
    let (messages, not_messages) = arrival_order(folders)?;
    let taken = take_in_messages(root, &messages, cfg, now, out, filing);
    out.handled.extend(not_messages.into_iter().map(|(path, why)| not_a_message(&path, &why)));
    taken
}

/// What is said of a file among the messages that cannot be one ([`arrival_order`]): left in
/// place, and the run exits 1 until the host removes it.
fn not_a_message(path: &Path, why: &str) -> Handled {
    let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    let reason = format!("{}: {why}: not a message; left in place, not read (remove it)", path.display());
    Handled { name, disposition: Disposition::Retry, reason, orders: vec![], reply: None, needs_host: true }
}

/// [`take_in`] for the messages found.
fn take_in_messages(root: &Path, messages: &[(PathBuf, PathBuf, String)], cfg: &HostConfig, now: DateTime<Utc>, out: &mut IntakeRun, filing: &mut Filing) -> Result<()> {
    if messages.is_empty() {
        // An idle cron run reads no game file.
        return Ok(());
    }
    // A run killed mid-write leaves temp files in the folders intake writes; this run holds the
    // root lock (read only when there is mail).
    remove_stale_mail_temps(root)?;
    let games = Games::load(root)?;
    let waiting = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|scope| {
        let (to, ahead) = std::sync::mpsc::sync_channel(super::ahead::DEPTH);
        scope.spawn(|| super::ahead::run(messages, &games, cfg.intake.max_message_bytes, (to, &waiting)));
        let next = || ahead.recv().unwrap_or_default().taken(&waiting);
        take_in_order(messages, &next, &games, cfg, now, out, filing)
    })
}

/// [`take_in`]'s loop over `messages`, each with what [`super::ahead::run`] made of it (read here
/// again when that thread is gone).
fn take_in_order(messages: &[(PathBuf, PathBuf, String)], ahead: &dyn Fn() -> super::ahead::Ahead, games: &Games, cfg: &HostConfig, now: DateTime<Utc>, out: &mut IntakeRun, filing: &mut Filing) -> Result<()> {
    let outbox = Outbox::under(&filing.root);
    // The games of the messages left for the next run, and of those among them that wait for the
    // host to mend a game.
    let (mut blocked, mut for_host): (BTreeSet<String>, BTreeSet<String>) = Default::default();
    for (folder, path, name) in messages {
        let read = ahead();
        // The games a message names matter only while some game is blocked, or once it must wait
        // itself (it stays in place, so they are read from the same bytes then): most runs read
        // and parse each message once, to handle it.
        let names = std::cell::OnceCell::new();
        let keys = || names.get_or_init(|| message_games(path, cfg.intake.max_message_bytes));
        let h = if !blocked.is_empty() && keys().iter().any(|k| blocked.contains(k)) {
            let mut reason = "an earlier message for the same game waits".to_string();
            if keys().iter().any(|k| for_host.contains(k)) {
                reason = tell_held_back(path, name, reason, games, (&outbox, &filing.log), cfg, now)?;
            }
            Handled { name: name.clone(), disposition: Disposition::Retry, reason, orders: vec![], reply: None, needs_host: false }
        } else {
            match handle_file(folder, path, name, read, games, &outbox, cfg, now, filing) {
                Ok(h) => h,
                // Moved away or deleted since it was listed, before it was read (a mail reader
                // sharing the Maildir; tester t25a-3): nothing of it was taken, nothing to file.
                Err(_) if gone(path) => {
                    crate::errln!("warning: {}: moved away or deleted since this run listed it (a mail reader sharing the Maildir?): left to it", path.display());
                    continue;
                }
                Err(e) => return Err(e),
            }
        };
        if h.disposition == Disposition::Retry {
            blocked.extend(keys().iter().cloned());
            out.held_games.extend(keys().iter().cloned());
        }
        if h.waits_for_host() {
            for_host.extend(keys().iter().cloned());
        }
        out.handled.push(h);
        filing.now_and_then()?;
    }
    Ok(())
}

/// Removes what killed runs left half-written in the mail state folders that intake writes
/// (`ROOT/.mail`, the outbox queue, the spool, the press-sent ledger) ([`store::remove_stale_temps`]).
fn remove_stale_mail_temps(root: &Path) -> Result<()> {
    let state = state_dir(root);
    for d in [state.clone(), Outbox::under(root).dir.join("queue"), state.join("spool").join("new"), state.join("press-sent")] {
        store::remove_stale_temps(&d)?;
    }
    Ok(())
}

/// How many handled messages wait for one sync before they are filed away: the work a run killed
/// (or a power loss) makes the next run redo is bounded by it (each such message is handled
/// again: its orders get their receipts back, its reply has the same id and is queued once).
/// 256 (it was 64): four syncs a batch, each waiting for everything dirty on the file system,
/// were ~14% of a loaded host's intake time at 64; a rerun then redoes at most ~0.3 s of
/// messages, and the replies waiting meanwhile (a few KB each) stay in memory.
const FILING_BATCH: usize = 256;

/// Intake's group commit ([`store::Batch`]): the receipts, replies and reply ledgers of many
/// messages are written without fsyncs and made durable by one sync; only then is each message
/// marked seen and moved to `done/` or `failed/` (renames, made durable by a second sync). So a
/// message leaves `new/` only once everything it caused is on disk, as when every file had its
/// own fsyncs. The accepted orders share their barrier too: each order's sealed copy, signatures
/// and nonce lines wait with its receipt in `group` (holding its game's lock) until a flush
/// writes them, makes them durable with one sync and then writes the receipts
/// ([`store::Group`], [`store::stage_later`]); a later message for a game whose receipt waits, a command, or a
/// teammate's plan mail flushes the group first. The replies wait too, and are queued only once
/// the receipts they attach are durable (a reply queued before a kill would otherwise stay, by
/// its id, beside the different receipt the next run writes). The moves themselves are renames
/// in the Maildir, made durable by no sync of ours (as before): the seen mark is what a rerun
/// trusts.
///
/// The syncs are waited for on the group's own thread ([`store::Group::behind`]), not on the
/// one handling messages: the group's flushes (once [`store::Group::MAX`] receipts wait, and at
/// the end of each batch of [`FILING_BATCH`] messages) and the filing of each batch
/// ([`FiledBatch`], handed over with [`store::Group::then`]) run there one after the other, in
/// the order handed over, while the messages after them are handled. A message for a game
/// whose receipt waits there, or one with commands, waits for them first.
///
/// The order of writes and syncs, per batch of messages (a kill anywhere leaves, for each
/// message, a prefix of its own writes in this order; those of the next batch's messages may be
/// interleaved with steps 2–5):
/// 1. per message: `got` in the mail log; per accepted order, its files staged in `group` with
///    its receipt and the game's lock; `took`/`saw` and `reply` lines in the log;
/// 2. a flush of `group`: per waiting order, its step folders (the step's first order), sealed
///    copy and signature and the receipt's signature (temp file + rename each), and per game and
///    message the nonce index's new lines (one append); sync 1: everything above durable; then
///    each waiting receipt (the commit point of its order, renamed into place) and the game's
///    lock released;
/// 3. sync 2: the receipts durable; then each reply queued, one file `outbox/queue/ID.mail`;
/// 4. sync 3: the replies durable; then per message its `seen` line and its move to `done/` or
///    `failed/` (a rename);
/// 5. the seen marks made durable by the next sync: the next batch's first (its receipts'), or
///    the run's last batch's own. A power loss before it leaves those messages to be handled
///    again, which answers them as the first time ([`MailLog`]: `took`, `saw`): their replies
///    keep their ids and are queued once. So a batch costs a sync for each flush of the group
///    (one each [`store::Group::MAX`] orders) and two more.
struct Filing {
    /// The games' root.
    root: PathBuf,
    /// The batch this intake opened (`None` inside a cron run's batch, or off Linux).
    _batch: Option<store::Batch>,
    /// Seen marks and the reply ledger (shared with the group's thread, which marks seen).
    log: std::sync::Arc<MailLog>,
    /// The replies to the messages of the batch being handled, queued only once the receipts
    /// they attach are on disk: a reply queued before a run killed could write its receipt would
    /// stay queued (by its id) beside the different receipt the next run writes.
    replies: RefCell<Vec<(Outgoing, DateTime<Utc>)>>,
    /// The run's clock: an order is stamped with its time once its game is locked (a receipt a
    /// concurrent `pbem submit` wrote meanwhile is not taken for a clock that went back).
    clock: Clock,
    /// The receipts of the orders accepted, waiting for a sync with their games' locks
    /// ([`pipeline::submit_grouped`]), and the batches handed over to be filed.
    group: store::Group,
    /// The batch being handled: its messages, to be filed away.
    waiting: Vec<ToFile>,
    /// The hashes (and mail keys) of the messages handled in this run: the same bytes again in
    /// this run are not handled twice, before or after their batch is filed.
    hashes: BTreeSet<String>,
    /// The games read again, at most once a run: for a sender with no seat in the games as the
    /// run first read them ([`Filing::seated_since`]).
    reread: std::cell::OnceCell<Option<Games>>,
    /// The messages handled but left in place ([`FiledBatch::file`]), told by the group's thread.
    left: std::sync::Arc<std::sync::Mutex<Vec<LeftMessage>>>,
    /// The senders (lower case) of messages with orders left for the next run in this run: their
    /// later messages without orders (commands) wait too.
    waiting_senders: RefCell<BTreeSet<String>>,
}

/// A handled message, to be marked seen and filed away.
struct ToFile {
    hash: String,
    /// Its [`super::log::mail_key`], when it has one.
    key: Option<String>,
    now: DateTime<Utc>,
    maildir: PathBuf,
    path: PathBuf,
    name: String,
    disposition: Disposition,
    reason: String,
    /// The spool's `NAME.toolarge` beside it, when it was read (removed once the message is filed).
    marker: Option<PathBuf>,
    /// The games (id, folder) whose receipts its accepted orders wait for: should one of them be
    /// left out of the group's flush ([`store::Group::left_out`]), the message is left in place.
    games: Vec<(String, PathBuf)>,
}

/// A handled message left in place for the next run: the receipts of its orders for a game were
/// left out of the run's flush (a write of that game's failed).
struct LeftMessage {
    name: String,
    games: Vec<String>,
    why: String,
}

impl Filing {
    fn open(root: &Path, clock: Clock) -> Filing {
        let state = state_dir(root);
        Filing { root: root.to_path_buf(), _batch: store::Batch::open(), log: std::sync::Arc::new(MailLog::new(&state)), replies: RefCell::new(Vec::new()), clock, group: store::Group::behind(), waiting: Vec::new(), hashes: BTreeSet::new(), reread: std::cell::OnceCell::new(), left: Default::default(), waiting_senders: RefCell::new(BTreeSet::new()) }
    }

    /// Whether `from`, who held no seat in the games as the run first read them, holds one in
    /// them as read again now (once a run: a `pbem seat` during the run gave it a seat; tester
    /// T23a-1: the new holder's commands were failed unanswered for good).
    fn seated_since(&self, from: &str) -> bool {
        self.reread.get_or_init(|| Games::load(&self.root).ok()).as_ref().is_some_and(|g| g.registered(from).is_some())
    }

    /// Whether a message with these bytes was handled in this run.
    fn has(&self, hash: &str) -> bool {
        self.hashes.contains(hash)
    }

    fn add(&mut self, hash: &str, f: ToFile) {
        self.hashes.insert(hash.to_string());
        self.hashes.extend(f.key.clone());
        self.waiting.push(f);
    }

    /// Files the waiting messages away once a batch of them is full; stops the run once the
    /// filing of an earlier batch failed.
    fn now_and_then(&mut self) -> Result<()> {
        self.group.check()?;
        if self.waiting.len() >= FILING_BATCH { self.file_waiting(false) } else { Ok(()) }
    }

    /// Hands the waiting messages, with their replies, to the group's thread, which files them
    /// away ([`FiledBatch::file`]) once their receipts are written, while this thread handles
    /// the messages after them; the `last` batch of the run ends with a sync of its own.
    fn file_waiting(&mut self, last: bool) -> Result<()> {
        let batch = FiledBatch {
            root: self.root.clone(),
            log: self.log.clone(),
            replies: std::mem::take(&mut *self.replies.borrow_mut()),
            waiting: std::mem::take(&mut self.waiting),
            last,
            left_out: self.group.left_out_view(),
            left: self.left.clone(),
        };
        self.group.then(move || batch.file())
    }

    /// Files away what waits, then compacts the mail log once it is large (every line of the
    /// run is durable by then), and ends the batch. The messages left in place are said so in
    /// `out`, and their games held.
    fn finish(mut self, out: &mut IntakeRun) -> Result<()> {
        self.file_waiting(true)?;
        let flushed = self.group.flush();
        for m in std::mem::take(&mut *self.left.lock().unwrap_or_else(|p| p.into_inner())) {
            if let Some(h) = out.handled.iter_mut().find(|h| h.name == m.name && h.disposition != Disposition::Retry) {
                (h.disposition, h.reply, h.needs_host) = (Disposition::Retry, None, true);
                h.reason = format!("unanswered: its receipts could not be written ({})", m.why);
                // None was written: the lines saying them accepted would mislead.
                h.orders.clear();
            }
            out.held_games.extend(m.games);
        }
        flushed?;
        let games = std::cell::OnceCell::new();
        let open_step = |id: &str| -> Option<u64> {
            let dir = store::GameDir::new(games.get_or_init(|| Games::load(&self.root).ok()).as_ref()?.folder(id)?);
            pipeline::read_record(&dir, dir.last_record().ok()??).ok()?.opening.map(|o| o.step)
        };
        let kept = || spool_kept(&state_dir(&self.root).join("spool"));
        self.log.compact(self.clock.now(), super::log::COMPACT_BYTES, &super::log::Horizon { open_step: &open_step, kept: &kept })?;
        Ok(())
    }
}

/// A batch of handled messages and their replies, filed away on the group's thread once the
/// receipts of their orders are written ([`store::Group::then`]).
struct FiledBatch {
    root: PathBuf,
    log: std::sync::Arc<MailLog>,
    replies: Vec<(Outgoing, DateTime<Utc>)>,
    waiting: Vec<ToFile>,
    /// Whether it is the run's last batch, whose seen marks no later batch's sync makes durable.
    last: bool,
    /// The games whose commits the group left out.
    left_out: store::LeftOutView,
    /// Where the messages left in place are told ([`Filing::left`]).
    left: std::sync::Arc<std::sync::Mutex<Vec<LeftMessage>>>,
}

impl FiledBatch {
    /// Steps 3 to 5 of [`Filing`]'s order (the receipts are written): makes them durable, then
    /// queues the replies and makes those durable, then marks each message seen and moves it,
    /// and for the run's last batch makes that durable too (each sync the open batch's: this
    /// run's, or the cron run's).
    fn file(mut self) -> Result<()> {
        let unanswered = self.leave_in_place();
        if !self.replies.is_empty() {
            store::sync_batch()?;
            let outbox = Outbox::under(&self.root);
            for (reply, now) in self.replies.iter().filter(|(r, _)| !unanswered.contains(&r.id)) {
                outbox.queue(reply, *now)?;
            }
        }
        store::sync_batch()?;
        let mut made = BTreeSet::new();
        for f in self.waiting {
            self.log.mark_seen(&f.hash, f.now)?;
            if let Some(key) = &f.key {
                self.log.mark_mail(key, f.now)?;
            }
            file_away(&f.maildir, &f.path, &f.name, (f.disposition, &f.reason), &mut made)?;
            if let Some(marker) = &f.marker {
                std::fs::remove_file(marker).ok();
            }
        }
        if self.last { store::sync_batch() } else { Ok(()) }
    }

    /// Takes out of the batch each message with an order whose game's receipts were left out of
    /// the group's flush (a write of that game's failed, [`store::Group::left_out`]): it stays
    /// where it is, neither marked seen nor answered, and the next run handles it again as it
    /// would after a run killed before its receipt (tester t25a-2). Returns the ids of the
    /// replies not to queue.
    fn leave_in_place(&mut self) -> BTreeSet<String> {
        let mut unanswered = BTreeSet::new();
        let (left_out, left) = (&self.left_out, &self.left);
        self.waiting.retain(|f| {
            let whys: Vec<String> = f.games.iter().filter_map(|(id, dir)| Some(format!("game {id}: {}", left_out.get(dir)?))).collect();
            if whys.is_empty() {
                return true;
            }
            unanswered.insert(stable_id(&["reply", &f.hash]));
            let games = f.games.iter().map(|(id, _)| id.clone()).collect();
            left.lock().unwrap_or_else(|p| p.into_inner()).push(LeftMessage { name: f.name.clone(), games, why: whys.join("; ") });
            false
        });
        unanswered
    }
}

/// The hashes of the messages the spool keeps handled (`done/`, `failed/`; names end `.HASH`).
fn spool_kept(spool: &Path) -> BTreeSet<String> {
    let names = ["done", "failed"].iter().flat_map(|d| store::list(&spool.join(d)).unwrap_or_default());
    names.filter_map(|n| n.rsplit('.').next().filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit())).map(str::to_string)).collect()
}

/// The game ids that the orders in the message at `path` name, read before it is handled (none
/// for a file that cannot be read or parsed: such a message is answered or filed on its own).
pub fn message_games(path: &Path, max: u64) -> Vec<String> {
    // Read before the message is handled, so outside its own guard: whatever fails here is
    // found again, and filed, when the message is handled.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| read_message_games(path, max))).unwrap_or_default()
}

fn read_message_games(path: &Path, max: u64) -> Vec<String> {
    let mut raw = Vec::new();
    let Ok(file) = store::open_regular(path) else { return Vec::new() };
    if file.take(max).read_to_end(&mut raw).is_err() {
        return Vec::new();
    }
    games_named(&raw)
}

/// The game ids the messages appended to the mbox at `path` from byte `from` to byte `to` name
/// (each message read as [`message_games`] reads one; one over `max` bytes only by its head).
/// `None` when that cannot be told (the file shrank or cannot be read, the tail does not start
/// with a `From ` separator or does not end with the blank line that ends an mbox message, so it
/// may be rewritten or still being appended, or a message's parse panicked): then the new mail
/// may name any game. A cron run asks it of an mbox that grew while
/// it ran, so that mail naming no due game (or other games) holds none of them back (tester
/// t25c-2: any mail appended held back every due game, run after run).
pub fn mbox_games(path: &Path, from: u64, to: u64, max: u64) -> Option<Vec<String>> {
    use std::io::Seek;
    std::panic::catch_unwind(|| {
        let mut file = store::open_regular(path).ok()?;
        if to < from || file.metadata().ok()?.len() < to {
            return None;
        }
        file.seek(std::io::SeekFrom::Start(from)).ok()?;
        // Mail appended starts with its separator line; anything else at `from` means the file
        // was rewritten meanwhile (a mail reader), and its new tail is not told by this offset.
        let mut head = [0u8; 5];
        if to - from >= 5 {
            file.read_exact(&mut head).ok()?;
            if &head != b"From " {
                return None;
            }
            file.seek(std::io::SeekFrom::Start(from)).ok()?;
        }
        // The blank line after the last message is written last: without it, mail is still
        // being appended and what it names is not all there yet.
        let mut tail = [0u8; 2];
        file.seek(std::io::SeekFrom::Start(to.checked_sub(2)?.max(from))).ok()?;
        if to - from < 2 || file.read_exact(&mut tail).is_err() || &tail != b"\n\n" {
            return None;
        }
        file.seek(std::io::SeekFrom::Start(from)).ok()?;
        let mut ids = Vec::new();
        let reader = std::io::BufReader::new(file.take(to - from));
        super::spool::split_mbox(reader, max, &mut |bytes, _| {
            ids.extend(games_named(bytes));
            Ok(())
        })
        .ok()?;
        ids.sort();
        ids.dedup();
        Some(ids)
    })
    .ok()
    .flatten()
}

/// The game ids the orders in message `raw` name.
fn games_named(raw: &[u8]) -> Vec<String> {
    // Without keys: where a pasted order starts does not change the game its header names.
    let Some(ex) = extract::extract(raw, &|_, _| None) else { return Vec::new() };
    let mut ids: Vec<String> = ex
        .orders
        .iter()
        .filter_map(|f| {
            let text = sig::normalize(&f.file).ok()?;
            let (body, _) = sig::split_appended(&text);
            orderfile::parse(&body).ok().map(|of| of.header.game)
        })
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// Moves a handled message to `MAILDIR/done/` or `MAILDIR/failed/` (rename: atomic); `made`
/// holds the folders this run made (each is made once, not once a message).
fn file_away(maildir: &Path, path: &Path, name: &str, (disposition, reason): (Disposition, &str), made: &mut BTreeSet<PathBuf>) -> Result<()> {
    let folder = match disposition {
        Disposition::Done => "done",
        Disposition::Failed => "failed",
        Disposition::Retry => return Ok(()),
    };
    let to = maildir.join(folder);
    // They hold players' orders, sealed until their step resolves: the host's alone.
    if !made.contains(&to) {
        store::make_dirs(&to, true)?;
        made.insert(to.clone());
    }
    let name = &free_name(&to, name);
    if disposition == Disposition::Failed {
        store::write_atomic(&to.join(format!("{name}.reason")), format!("{reason}\n").as_bytes())?;
    }
    match std::fs::rename(path, to.join(name)) {
        // Moved away or deleted by another program after it was handled (a mail reader sharing
        // the Maildir; tester t25a-3): its reply and seen mark stand, and it is that program's now.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && gone(path) => {
            crate::errln!("warning: {}: moved away or deleted once handled (a mail reader sharing the Maildir?): not filed in {folder}/", path.display());
            Ok(())
        }
        r => r.map_err(|e| store::io(path, e)),
    }
}

/// `name`, or `name.2`, `name.3`, ... when a message of that name is already filed in `folder`:
/// a message is never filed over another (tester t25a-6: a name used twice, as Maildir names are
/// not, replaced the archived message). A `.reason` without its message (a run killed between
/// the two) does not make a name taken: it is written over, as the message is filed again.
fn free_name(folder: &Path, name: &str) -> String {
    let taken = |n: &str| folder.join(n).symlink_metadata().is_ok();
    if !taken(name) {
        return name.to_string();
    }
    (2..).map(|k| format!("{name}.{k}")).find(|n| !taken(n)).expect("a free name")
}

/// True when nothing is at `path` any more (a message another program moved or deleted).
fn gone(path: &Path) -> bool {
    matches!(std::fs::symlink_metadata(path), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
}

/// Runs the handling of message `name`; should it panic (a bug nobody foresaw), the message is
/// [`Disposition::Failed`] with the panic's text as its reason, so that it goes to `failed/` and
/// the run goes on with the next message instead of crashing on this one at every run. The
/// panic is still printed on stderr (where cron's mail shows it to the host).
fn guard(name: &str, handling: impl FnOnce() -> Result<Handled>) -> Result<Handled> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(handling)).unwrap_or_else(|payload| Ok(panicked(name, &super::ahead::panic_text(payload.as_ref()))))
}

/// A message whose handling panicked with `text`: failed, with the panic's text as its reason.
fn panicked(name: &str, text: &str) -> Handled {
    Handled { name: name.into(), disposition: Disposition::Failed, reason: format!("pbem failed on this message: {text}; please report it"), orders: vec![], reply: None, needs_host: false }
}

#[allow(clippy::too_many_arguments)]
fn handle_file(maildir: &Path, path: &Path, name: &str, ahead: super::ahead::Ahead, games: &Games, outbox: &Outbox, cfg: &HostConfig, now: DateTime<Utc>, filing: &mut Filing) -> Result<Handled> {
    let super::ahead::MessageBytes { marker, marked, raw, size, too_large, hash, key } = match ahead.read {
        Some(read) => read?,
        None => super::ahead::read_message(path, name, cfg.intake.max_message_bytes)?,
    };
    let (parsed, panicked_ahead) = (ahead.parsed, ahead.panicked);
    let seen = filing.has(&hash) || filing.log.seen(&hash)?;
    let same_mail = match &key {
        Some(k) => filing.has(k) || filing.log.mail_seen(k)?,
        None => false,
    };
    let log = &filing.log;
    let mut h = guard(name, || Ok(if seen && !too_large {
        Handled { name: name.into(), disposition: Disposition::Done, reason: "already handled (same bytes): not processed again".into(), orders: vec![], reply: None, needs_host: false }
    } else if same_mail {
        Handled { name: name.into(), disposition: Disposition::Done, reason: "already handled (the same mail delivered again: same sender, Message-ID, subject and body): not processed again".into(), orders: vec![], reply: None, needs_host: false }
    } else if too_large {
        let reply = too_large_reply(&raw, size, games, log, cfg, now, &hash)?;
        let queued = match &reply {
            Some(r) => {
                outbox.queue(r, now)?;
                Some(r.id.clone())
            }
            None => None,
        };
        Handled {
            name: name.into(),
            disposition: Disposition::Failed,
            reason: format!("too large: {size} bytes, the limit is {} (not read whole)", cfg.intake.max_message_bytes),
            orders: vec![],
            reply: queued,
            needs_host: false,
        }
    } else if let Some(text) = &panicked_ahead {
        // Its parse panicked on the read-ahead thread (printed there): parsed again here, it
        // would panic again, and print twice.
        panicked(name, text)
    } else {
        log.note_got(&hash)?;
        match handle((&raw, parsed), &hash, name, games, (outbox, &*filing), cfg, now) {
            Ok(h) => h,
            // A disk problem stops the run (the message stays for the next); anything else is
            // about this message alone, which must not hold up the ones behind it.
            Err(e @ Error::Io { .. }) => return Err(e),
            Err(e) => Handled { name: name.into(), disposition: Disposition::Failed, reason: format!("could not be handled: {e}"), orders: vec![], reply: None, needs_host: false },
        }
    }))?;
    h.name = name.to_string();
    if h.disposition != Disposition::Retry {
        let waits_for = h.orders.iter().filter_map(|r| r.receipt.as_ref()).filter_map(|rc| Some((rc.game.clone(), games.get(&rc.game)?.0.to_path_buf())));
        let mut waits_for: Vec<(String, PathBuf)> = waits_for.collect();
        waits_for.dedup();
        let f = ToFile { hash: hash.clone(), key, now, maildir: maildir.into(), path: path.into(), name: name.into(), disposition: h.disposition, reason: h.reason.clone(), marker: marked.map(|_| marker), games: waits_for };
        filing.add(&hash, f);
    }
    Ok(h)
}

fn too_large_reply(head: &[u8], size: u64, games: &Games, log: &MailLog, cfg: &HostConfig, now: DateTime<Utc>, hash: &str) -> Result<Option<Outgoing>> {
    let Some(ex) = extract::extract(head, &|_, _| None) else { return Ok(None) };
    let Some(from) = ex.from.as_deref() else { return Ok(None) };
    // Never to a stranger, a bounce, automatic mail, or an address over the reply cap; to the
    // address as the seat registered it.
    let id = stable_id(&["reply", hash]);
    let ledger = ReplyLedger::new(log, cfg);
    let Some(to) = games.registered(from).map(str::to_string) else { return Ok(None) };
    if ex.bounce.is_some() || ex.automatic.is_some() || !ledger.allows(from, &id, now)? {
        return Ok(None);
    }
    ledger.record(from, &id, now)?;
    let body = format!(
        "Your message of {size} bytes is larger than this judge accepts ({} bytes), so it was not read.\n\n{}",
        cfg.intake.max_message_bytes,
        how_to_send()
    );
    Ok(Some(compose::build(Draft {
        id,
        from: &cfg.from,
        to: vec![to],
        cc: vec![],
        subject: reply_subject(&ex.subject, &[]),
        body,
        attachments: vec![],
        in_reply_to: ex.message_id.clone(),
        date: now,
    })?))
}

/// Handles one message's bytes (`raw`, with what [`super::ahead`] parsed of them, if it did):
/// submits its orders and queues the reply in `outbox`, counting it in `log`.
fn handle((raw, parsed): (&[u8], super::ahead::Parse), hash: &str, name: &str, games: &Games, (outbox, filing): (&Outbox, &Filing), cfg: &HostConfig, now: DateTime<Utc>) -> Result<Handled> {
    let (log, group, clock) = (&filing.log, &filing.group, filing.clock);
    let failed = |reason: &str| Handled { name: name.into(), disposition: Disposition::Failed, reason: reason.into(), orders: vec![], reply: None, needs_host: false };
    let parsed = match parsed {
        super::ahead::Parse::Done(p) => *p,
        super::ahead::Parse::NotDone => super::ahead::parse_message(raw, games),
    };
    let Some((ex, commands)) = parsed else {
        return Ok(failed("cannot be parsed as a mail message"));
    };
    if let Some(why) = &ex.bounce {
        // A bounce is about mail the judge sent: answering it could start a loop, and what it
        // quotes is the judge's own mail. The host reads it in failed/.
        return Ok(failed(&format!("a delivery report ({why}): not read for orders, not answered (check the address it names)")));
    }
    // Orders are judged by their signatures, never by `From` (README "Routing"): a message with
    // no usable From is treated as from an address that holds no seat (its signed orders count and
    // are answered at their seats' addresses); without orders there is nobody to answer.
    let Some(from) = ex.from.clone().or_else(|| (!ex.orders.is_empty()).then(String::new)) else {
        return Ok(failed("no From address and no orders: nobody to answer"));
    };
    // Commands read the games as they stand: after an earlier message of the same sender that
    // waits (its orders not taken in yet), they wait too (tester t25f D3: `status` was answered
    // "awaited" while the orders sent before it waited).
    let sender = from.to_ascii_lowercase();
    if ex.orders.is_empty() && !from.is_empty() && filing.waiting_senders.borrow().contains(&sender) {
        let why = format!("an earlier message from {from} waits");
        return Ok(Handled { name: name.into(), disposition: Disposition::Retry, reason: why, orders: vec![], reply: None, needs_host: false });
    }
    // A seat's address is answered as the seat registered it, with no display name: the sender's
    // spelling and name (`r1@ex.org (evil@evil.com)`) are theirs to choose, not the reply's.
    let registered = games.registered(&from).map(str::to_string);
    let known = registered.is_some();
    if ex.orders.is_empty() && !known {
        if filing.seated_since(&from) {
            let why = format!("{from} holds a seat since this run read the games (the host changed it): left for the next run");
            return Ok(Handled { name: name.into(), disposition: Disposition::Retry, reason: why, orders: vec![], reply: None, needs_host: false });
        }
        // A seat of a game whose file cannot be read now: its commands wait for the host to
        // mend it (tester t25f D1: they were failed unanswered for good).
        if let Some((dir, e)) = games.seat_of_broken(&from) {
            let why = format!("{from} holds a seat in the game at {}, which cannot be read ({e})", dir.display());
            let why = tell_waiting(ex.message_id.as_deref(), &from, why, hash, (outbox, log), cfg, now)?;
            return Ok(Handled { name: name.into(), disposition: Disposition::Retry, reason: why, orders: vec![], reply: None, needs_host: true });
        }
        return Ok(failed(&format!("no orders, and {from} is not a registered player: not answered")));
    }
    if let (true, Some(why)) = (ex.orders.is_empty(), &ex.automatic) {
        // A vacation notice or a list: answering it could start a mail loop.
        return Ok(Handled { name: name.into(), disposition: Disposition::Done, reason: format!("an automatic message ({why}) with no orders: not answered"), orders: vec![], reply: None, needs_host: false });
    }
    let mut results = Vec::new();
    for f in &ex.orders {
        match submit_found(f, games, (log, hash, group), clock)? {
            Ok(r) => results.push(r),
            Err(Wait { why, host }) => {
                filing.waiting_senders.borrow_mut().insert(sender);
                // A seat's address in a game read now, or in the routing cache's line of one that
                // cannot be read (tester t18c-1: only the first was told).
                let why = match seat_address(games, &from).filter(|_| host) {
                    Some(to) => tell_waiting(ex.message_id.as_deref(), to, why, hash, (outbox, log), cfg, now)?,
                    None => why,
                };
                return Ok(Handled { name: name.into(), disposition: Disposition::Retry, reason: why, orders: vec![], reply: None, needs_host: host });
            }
        }
    }
    let accepted = results.iter().filter(|r| r.receipt.is_some()).count();
    let counted = format!("{accepted} of {} order file(s) accepted", results.len());
    let seats = signing_seats(&results);
    if !known && seats.is_empty() {
        // Forged or stray mail from outside the games: answering it would be backscatter.
        return Ok(Handled {
            name: name.into(),
            disposition: Disposition::Failed,
            // Why each order was refused, for the host (a key a seat held before a seat change is
            // named there: tester22 T22b-5).
            reason: format!(
                "{}, and no order in it is validly signed by a seat's key{} ({counted}): not answered{}",
                came_from(&from),
                if results.iter().any(|r| r.seat_email.is_some()) { " but for orders of steps already resolved (public since)" } else { "" },
                results.iter().filter_map(|r| r.error.as_deref()).map(|e| format!("; {}", crate::text::clip(&e.replace('\n', " "), 300))).collect::<String>()
            ),
            orders: results,
            reply: None,
            needs_host: false,
        });
    }
    if let Some(why) = &ex.automatic {
        // Its orders count, but an automatic message is never answered (no mail loops).
        return Ok(Handled { name: name.into(), disposition: Disposition::Done, reason: format!("an automatic message ({why}): {counted}, not answered"), orders: results, reply: None, needs_host: false });
    }
    // A known sender is answered with a copy to each other seat that signed; an order from an
    // unknown address (a player travelling) is answered at the seat's registered address only.
    let (to, cc): (Vec<(String, String)>, Vec<String>) = if known {
        (vec![(registered.clone().unwrap_or_else(|| from.clone()), from.clone())], seats.iter().filter(|s| !s.eq_ignore_ascii_case(&from)).cloned().collect())
    } else {
        (seats.iter().map(|s| (s.clone(), s.clone())).collect(), vec![])
    };
    // Commands act for the seats the message speaks for: its sender's, when that is a seat's
    // address, else those whose keys signed orders accepted now (a signature alone proves
    // nothing: every resolved order's signed text is public); answers go to those addresses only.
    let vouched: Vec<String> = results.iter().filter(|r| r.fresh).filter_map(|r| r.seat_email.clone()).collect();
    let addrs = if known { vec![from.clone()] } else { seats.iter().filter(|s| vouched.iter().any(|v| v.eq_ignore_ascii_case(s))).cloned().collect() };
    let parsed = commands;
    if !parsed.commands.is_empty() {
        // A command reads the games as they stand: with the receipts still waiting written.
        group.flush()?;
        // Not while a game of the sender's had orders left out in this run (their messages wait).
        if results.is_empty() && games.seated(std::slice::from_ref(&from)).iter().any(|(dir, _)| group.left_out(dir).is_some()) {
            let why = format!("an earlier message from {from} waits (its game could not be written in this run)");
            return Ok(Handled { name: name.into(), disposition: Disposition::Retry, reason: why, orders: vec![], reply: None, needs_host: false });
        }
    }
    let asker = super::commands::Asker { addrs: &addrs, from: &from, hash };
    let mut extra = super::commands::answer(&parsed, &asker, games, outbox, cfg, now)?;
    extra.text.push_str(&plans_mailed(&results, games, &from, (outbox, group), cfg, now)?);
    let ctx = Ctx { hash, name, games, log, replies: &filing.replies, cfg, now };
    answer(&ex, results, counted, known, to, cc, extra, &ctx)
}

/// The sender of the message at `path` (file `name`), held back behind an earlier one that waits
/// for the host to mend a game they both name, is told that it waits as that one's sender is
/// ([`tell_waiting`]; tester t18c-2: a stranger's message first kept the seat's from being told).
/// `why` comes back with what was done; nothing is done for a message that cannot be read now
/// (it is handled, and any failure met, when its turn comes), nor for a bounce, automatic mail
/// or a sender who holds no seat.
fn tell_held_back(path: &Path, name: &str, why: String, games: &Games, (outbox, log): (&Outbox, &MailLog), cfg: &HostConfig, now: DateTime<Utc>) -> Result<String> {
    let Ok(read) = super::ahead::read_message(path, name, cfg.intake.max_message_bytes) else { return Ok(why) };
    let parsed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| super::ahead::parse_message(&read.raw, games))).ok().flatten();
    let Some((ex, _)) = parsed.filter(|_| !read.too_large) else { return Ok(why) };
    if ex.bounce.is_some() || ex.automatic.is_some() {
        return Ok(why);
    }
    let Some(from) = ex.from.as_deref() else { return Ok(why) };
    let Some(to) = seat_address(games, from) else { return Ok(why) };
    tell_waiting(ex.message_id.as_deref(), to, why, &read.hash, (outbox, log), cfg, now)
}

/// `from` as a seat's address: as a seat of a game read now registered it, else as sent when the
/// routing cache's line of a game that cannot be read holds it; `None` for any other address.
fn seat_address<'a>(games: &'a Games, from: &'a str) -> Option<&'a str> {
    games.registered(from).or_else(|| games.seat_of_broken(from).map(|_| from))
}

/// Tells the sender of message `hash`, at `to`, that the message waits for the host to mend a
/// game (`why`, the host's reason, comes back with what was done): the player would otherwise
/// hear nothing until the host acts, and might send the orders again or think them lost. Once per
/// message (the notice's id is made from the message's hash: [`Outbox::queue`] skips an id queued
/// or sent), only to a seat's address (as registered in a game, or as sent when the routing cache
/// of an unreadable game holds it), never over the hourly reply cap. The notice quotes nothing
/// of the message and names no file of the host's.
fn tell_waiting(message_id: Option<&str>, to: &str, why: String, hash: &str, (outbox, log): (&Outbox, &MailLog), cfg: &HostConfig, now: DateTime<Utc>) -> Result<String> {
    let id = stable_id(&["waits", hash]);
    if outbox.knows(&id) {
        return Ok(format!("{why}; the sender was told it waits"));
    }
    let ledger = ReplyLedger::new(log, cfg);
    if !ledger.allows(to, &id, now)? {
        return Ok(format!("{why}; the sender was not told it waits: {}", ledger.over_cap(&[to.to_string()])));
    }
    let when = super::config::local_time(cfg, to, &crate::when::timestamp(now));
    let body = format!(
        "Your message reached the judge at {when}, but it cannot be handled yet: a game it concerns needs the host's attention first, and the host has been told.\n\nYour message is kept as it came. It will be read, and answered with a receipt for each order in it, as soon as the host has mended the game. You need not send it again; orders you send later still replace it as usual.\n"
    );
    // A subject of its own: the message's, which anyone forging its From could choose, is not quoted.
    let subject = "Re: your message (it waits for the host)".to_string();
    let notice = compose::build(Draft { id: id.clone(), from: &cfg.from, to: vec![to.to_string()], cc: vec![], subject, body, attachments: vec![], in_reply_to: message_id.map(str::to_string), date: now })?;
    outbox.queue(&notice, now)?;
    ledger.record(to, &id, now)?;
    Ok(format!("{why}; the sender was told it waits"))
}

/// Who may hear about these orders: the addresses of the seats whose keys signed them, each once
/// (in any case), in the order of the orders. Not for an order refused because its step was
/// resolved already: once resolved, every order's signed text is public, so anyone may send it
/// again, and answering the seat each time would spend its hourly replies (tester t18b-1: ten
/// replays from strangers silenced the player's own receipts) under a subject of the sender's.
fn signing_seats(results: &[OrderResult]) -> Vec<String> {
    let mut seats: Vec<String> = Vec::new();
    for e in results.iter().filter(|r| !r.error.as_deref().is_some_and(pipeline::is_late)).filter_map(|r| r.seat_email.as_ref()) {
        if !seats.iter().any(|s| s.eq_ignore_ascii_case(e)) {
            seats.push(e.clone());
        }
    }
    seats
}

/// Mails each accepted plan to the seat's teammates where the rules let them see it (Flag Dash);
/// returns the lines the reply tells the sender.
fn plans_mailed(results: &[OrderResult], games: &Games, from: &str, (outbox, group): (&Outbox, &store::Group), cfg: &HostConfig, now: DateTime<Utc>) -> Result<String> {
    let mut by_game: BTreeMap<&str, Vec<&Receipt>> = BTreeMap::new();
    for rc in results.iter().filter_map(|r| r.receipt.as_ref()) {
        by_game.entry(rc.game.as_str()).or_default().push(rc);
    }
    let mut text = String::new();
    for (id, receipts) in by_game {
        let Some((dir, gf)) = games.get(id) else { continue };
        if !pipeline::rules(&gf.rules).is_ok_and(|g| g.teammates_see_plans()) {
            continue;
        }
        // The plans are read from the game's receipts: those still waiting are written first
        // (none for a game whose commits were left out: its message waits, unanswered).
        if group.holds_under(dir) {
            group.flush()?;
        }
        if group.left_out(dir).is_some() {
            continue;
        }
        for line in super::press::mail_plans(dir, &receipts, from, outbox, cfg, now)? {
            text.push_str(&format!("Note: {line}.\n"));
        }
    }
    Ok(text)
}

/// What a reply needs besides the message.
struct Ctx<'a> {
    hash: &'a str,
    name: &'a str,
    games: &'a Games,
    log: &'a MailLog,
    /// Where the reply waits to be queued ([`Filing::replies`]).
    replies: &'a RefCell<Vec<(Outgoing, DateTime<Utc>)>>,
    cfg: &'a HostConfig,
    now: DateTime<Utc>,
}

/// Queues the reply to `to` (display form, address) and `cc`, leaving out every address over the
/// hourly reply cap (no reply at all when that is every `to`), but for the seat of an order
/// accepted now as new: its receipt always goes (only the seat's key makes one, so it cannot be
/// made to flood anyone, and the cap must not cost a player a receipt: tester t18b-1); `counted`
/// says how many orders were accepted.
#[allow(clippy::too_many_arguments)]
fn answer(ex: &Extracted, results: Vec<OrderResult>, counted: String, known: bool, to: Vec<(String, String)>, cc: Vec<String>, mut extra: super::commands::Answers, ctx: &Ctx<'_>) -> Result<Handled> {
    let Ctx { hash, name, games, log, cfg, now, .. } = *ctx;
    let from = ex.from.clone().unwrap_or_default();
    let id = stable_id(&["reply", hash]);
    let ledger = ReplyLedger::new(log, cfg);
    let receipt_for = |a: &str| results.iter().filter(|r| r.fresh).filter_map(|r| r.seat_email.as_deref()).any(|s| s.eq_ignore_ascii_case(a));
    let (mut to_ok, mut over) = (Vec::new(), Vec::new());
    for (display, addr) in to {
        if receipt_for(&addr) || ledger.allows(&addr, &id, now)? { to_ok.push((display, addr)) } else { over.push(addr) }
    }
    let mut cc_ok = Vec::new();
    for a in cc {
        if receipt_for(&a) || ledger.allows(&a, &id, now)? { cc_ok.push(a) } else { over.push(a) }
    }
    let cc = cc_ok;
    let commands = !extra.text.is_empty();
    let failures = std::mem::take(&mut extra.failures);
    let base = if results.is_empty() && commands {
        "commands answered".to_string()
    } else if results.is_empty() {
        if ex.html_only { "HTML only".to_string() } else { "no signed orders".to_string() }
    } else {
        counted
    };
    if to_ok.is_empty() {
        let held = failures.iter().map(|f| format!("; not answered for the host's attention: {f}")).collect::<String>();
        return Ok(Handled { name: name.into(), disposition: Disposition::Done, reason: format!("{}; no reply sent: {}{held}", base.replace("commands answered", "commands handled"), ledger.over_cap(&over)), orders: results, reply: None, needs_host: true });
    }
    // Times in the zone of the seat whose order was accepted (its own, else the mail config's for
    // its address), as its reports give them (tester t18d-4: UTC for a seat with a zone of its own).
    let seat = results.iter().filter_map(|r| r.receipt.as_ref()).find_map(|rc| games.get(&rc.game).and_then(|(_, gf)| gf.seat(&rc.role).cloned()));
    let local = |t: &str| match &seat {
        Some(seat) => super::config::seat_time(cfg, seat, t),
        None => super::config::local_time(cfg, &from, t),
    };
    let mut body = if results.is_empty() && commands { String::new() } else { reply_body(ex, &results, &local) };
    if commands && !body.is_empty() {
        body.push('\n');
    }
    body.push_str(&extra.text);
    if results.iter().any(|r| r.receipt.is_some()) {
        body.push_str(&format!("\n{}", super::commands::public_record_note(ctx.cfg)));
    }
    if !known {
        body = format!("{}: the orders in it were judged by their signatures, and this answer goes only to the registered address of the seat. If your address has changed, ask the host to record the new one (`pbem seat GAME --role ROLE --email NEW`): the change goes into the game's signed record and every player's next report.\n\n{body}", came_from(&from));
    }
    let mut known_games: Vec<&str> = results.iter().filter_map(|r| r.game.as_deref()).filter(|g| games.get(g).is_some()).collect();
    known_games.sort_unstable();
    known_games.dedup();
    let reply = compose::build(Draft {
        id: id.clone(),
        from: &cfg.from,
        to: to_ok.iter().map(|(d, _)| d.clone()).collect(),
        cc: cc.clone(),
        subject: reply_subject(&ex.subject, &known_games),
        body,
        attachments: receipt_attachments(&results, games).into_iter().chain(extra.attachments).collect(),
        in_reply_to: ex.message_id.clone(),
        date: now,
    })?;
    // Queued once the receipts it attaches are on disk (`Filing::sync`).
    let reply_id = reply.id.clone();
    ctx.replies.borrow_mut().push((reply, now));
    for a in to_ok.iter().map(|(_, a)| a).chain(cc.iter()) {
        ledger.record(a, &id, now)?;
    }
    let mut reason = if results.is_empty() && !commands { format!("{base}: answered with what to send") } else { base };
    if !over.is_empty() {
        reason.push_str(&format!("; no reply sent to {}", ledger.over_cap(&over)));
    }
    for f in &failures {
        reason.push_str(&format!("; not answered for the host's attention: {f}"));
    }
    let needs_host = !over.is_empty() || !failures.is_empty();
    Ok(Handled { name: name.into(), disposition: Disposition::Done, reason, orders: results, reply: Some(reply_id), needs_host })
}

/// Where a message from outside the seats came from, as its reply and the host's output say it.
fn came_from(from: &str) -> String {
    if from.is_empty() { "This message has no usable From address".into() } else { format!("This message came from {from}, which is not the address of any seat here") }
}

/// The receipts of the accepted orders, each `receipt-GAME-STEP-ROLE-SEQ.toml` with its `.sig`.
fn receipt_attachments(results: &[OrderResult], games: &Games) -> Vec<(String, Vec<u8>)> {
    let mut attachments = Vec::new();
    for r in results {
        let Some(rc) = &r.receipt else { continue };
        let Some((dir, _)) = games.get(&rc.game) else { continue };
        let p = store::GameDir::new(dir).receipts(rc.step).join(format!("{}-{}.toml", rc.role, rc.seq));
        // A receipt accepted now may still wait for its group's sync: its bytes are at hand.
        let signed = r.signed.clone().map(Ok).unwrap_or_else(|| Ok::<_, Error>((store::read(&p)?, store::read(&pipeline::sig_path(&p))?)));
        if let Ok((t, s)) = signed {
            let base = format!("receipt-{}-{}-{}-{}.toml", rc.game, rc.step, rc.role, rc.seq);
            attachments.push((base.clone(), t));
            attachments.push((format!("{base}.sig"), s));
        }
    }
    attachments
}

/// Why a message must wait for a later run, and whether the host must mend something first.
struct Wait {
    why: String,
    /// The game's folder cannot be read or written, or two folders hold its id: the host hears
    /// of it with `--quiet` and the run exits 1 ([`Handled::needs_host`]); not so for a game
    /// that was busy or a clock behind it.
    host: bool,
}

/// Submits one found order of message `hash` (noted in `log`); [`Wait`] when it must wait for a
/// later run (its game stayed locked, the clock is behind the game, the game's folder cannot be
/// read or written, or an unreadable game folder may be the game it names).
fn submit_found(f: &Found, games: &Games, (log, hash, group): (&MailLog, &str, &store::Group), clock: Clock) -> Result<std::result::Result<OrderResult, Wait>> {
    let mut r = OrderResult { label: f.label.clone(), game: None, role: None, receipt: None, signed: None, warnings: vec![], error: None, format_problem: false, seat_email: None, fresh: false, ended_game: false };
    let Some((body, header)) = read_header(f, &mut r) else { return Ok(Ok(r)) };
    r.game = Some(header.game.clone());
    r.role = Some(header.role.clone());
    let (dir, gf) = match route(games, &header.game) {
        Route::Game(dir, gf) => (dir, gf),
        Route::Wait(wait) => return Ok(Err(wait)),
        Route::NoSuchGame => {
            let line = orderfile::locate(&body, "pbem.game");
            r.error = Some(format!("{}: there is no game {:?} at this judge", place(&f.label, line, Some("pbem.game")), shown(&header.game)));
            return Ok(Ok(r));
        }
    };
    let bytes = signed_bytes(f, gf, &header.role, &mut r);
    // Submitted from memory; the name only stands in messages, where `describe` puts the label.
    let file = state_dir(dir.parent().unwrap_or(dir)).join("tmp").join(safe_name(&f.name));
    // A game whose commits this run left out (a write of its failed) takes no more orders in
    // this run: the message waits for the next, as every later one for the game.
    if group.holds_under(dir) {
        group.flush()?;
    }
    if let Some(why) = group.left_out(dir) {
        return Ok(Err(Wait { why: format!("game {} could not be written in this run: {why}", gf.id), host: true }));
    }
    let taken = log.taken_by(hash, &gf.id)?;
    let input = pipeline::OrderInput { path: file.clone(), given: Some((bytes.to_vec(), f.detached.clone())), taken };
    let res = pipeline::submit_grouped(dir, std::slice::from_ref(&input), clock, Some(group), games.known(&gf.id)).and_then(|mut v| v.pop().expect("one result per file"));
    match res {
        Ok(a) => {
            // A receipt an earlier, killed handling of this very message took: answered as then.
            let again_here = a.resent && log.took_here(hash, &a.receipt)?;
            if a.resent {
                log.note_saw(hash, &a.receipt)?;
            } else {
                log.note_took(hash, &a.receipt)?;
            }
            r.warnings = if again_here { pipeline::acceptance_warnings(&a.receipt) } else { a.warnings };
            r.ended_game = a.ended.is_some();
            if let Some(how) = &a.ended {
                r.warnings.push(format!("this order ended the game: {how} Every seat's final report follows."));
            } else if a.ending.draw == Some(true) {
                r.warnings.push("your draw offer stands until you send orders without `draw = true`; the game is drawn once every seat's newest order says `draw = true`".into());
            }
            r.fresh = !a.resent || again_here;
            // The seat as the order was checked under the game's lock: a seat changed since the
            // games were read (`pbem seat` during this run) answers its new holder.
            r.seat_email = Some(a.seat_email).filter(|e| !e.is_empty());
            r.receipt = Some(a.receipt);
            r.signed = a.signed;
        }
        Err(Error::Locked(_)) => return Ok(Err(Wait { why: format!("game {} was busy", gf.id), host: false })),
        // The game's folder cannot be read or written, or something is in the way in it (the
        // host's to mend, not the player's: tester t25d D1, D2): the message waits, unanswered,
        // for a run that can; a full or failing disk stops this one.
        Err(e) if store::stops_everything(&e) => return Err(e),
        Err(e @ Error::Io { .. }) => return Ok(Err(Wait { why: format!("game {}: {e}", gf.id), host: true })),
        Err(e) if e.names_under(dir) => return Ok(Err(Wait { why: format!("game {}: {e}", gf.id), host: true })),
        Err(Error::ClockBehind(m)) => return Ok(Err(Wait { why: m, host: false })),
        Err(e) => {
            r.error = Some(describe(&e, &file, &f.label));
            r.format_problem = matches!(e, Error::Sig(_));
        }
    }
    Ok(Ok(r))
}

/// The order's text without its appended signature, and its `[pbem]` header (read only to
/// route; the pipeline checks everything again), or `None` with the refusal in `r`.
fn read_header(f: &Found, r: &mut OrderResult) -> Option<(String, orderfile::Header)> {
    let refuse = |r: &mut OrderResult, why: String| {
        r.error = Some(why);
        r.format_problem = true;
    };
    if let Some(p) = &f.problem {
        refuse(r, p.clone());
        return None;
    }
    let text = match sig::normalize(&f.file) {
        Ok(t) => t,
        Err(e) => {
            refuse(r, format!("{}: {e}", f.label));
            return None;
        }
    };
    let (body, _) = sig::split_appended(&text);
    match orderfile::parse_remembered(&body) {
        Ok(of) => Some((body.to_string(), of.header)),
        Err(p) => {
            refuse(r, format!("{}: {}", place(&f.label, p.line, p.field.as_deref()), p.message));
            None
        }
    }
}

/// Where an order for game `id` goes.
enum Route<'a> {
    /// The one readable folder holding that game.
    Game(&'a PathBuf, &'a GameFile),
    /// Not now: two folders hold the game, or an unreadable folder may be it.
    Wait(Wait),
    /// No folder holds it, and none that cannot be read may.
    NoSuchGame,
}

/// A game id from a message as a reply or the host's output shows it: at most 64 characters.
fn shown(id: &str) -> String {
    match id.char_indices().nth(64) {
        Some((at, _)) => format!("{}...", &id[..at]),
        None => id.to_string(),
    }
}

fn route<'a>(games: &'a Games, id: &str) -> Route<'a> {
    if let Some(dirs) = games.duplicate(id) {
        let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        return Route::Wait(Wait { why: format!("game {:?} is held by more than one folder ({}); the host must remove all but one", shown(id), dirs.join(", ")), host: true });
    }
    match games.get(id) {
        Some((dir, gf)) => Route::Game(dir, gf),
        None => match games.may_be_broken(id) {
            // A game file changed while this run read mail is read again by the next run.
            Some((dir, e)) => Route::Wait(Wait { why: format!("game {:?} is not among the readable games, and {} cannot be read ({e})", shown(id), dir.display()), host: e != super::games::CHANGED }),
            None => Route::NoSuchGame,
        },
    }
}

/// The bytes to submit: judged by its signature, never by who sent it. A signature covers bytes,
/// not labels: when the text as its charset label decoded it does not verify, the bytes as sent
/// may. Notes in `r` the address of the seat whose key signed it.
fn signed_bytes<'a>(f: &'a Found, gf: &GameFile, role: &str, r: &mut OrderResult) -> &'a [u8] {
    let Some(seat) = gf.seat(role) else { return &f.file };
    let Ok(key) = sig::public_key_line(&seat.key) else { return &f.file };
    let verifies = |b: &[u8]| sig::verify_order_text(&key, sig::NS_ORDERS, b, f.detached.as_deref()).is_ok();
    if verifies(&f.file) {
        r.seat_email = Some(seat.email.clone());
    } else if let Some(raw) = f.raw.as_ref().filter(|raw| verifies(raw)) {
        r.seat_email = Some(seat.email.clone());
        return raw;
    }
    &f.file
}

fn describe(e: &Error, tmp: &Path, label: &str) -> String {
    match e {
        Error::Input { file, line, field, message } if file == tmp => {
            format!("{}: {}", place(label, *line, field.as_deref()), message.replace(&tmp.display().to_string(), label))
        }
        // One line each, under the order's name (the reply and the host's output indent them).
        Error::Problems { file, problems } if file == tmp => {
            let each: String = problems.iter().map(|p| format!("\n- {}: {}", place("", p.line, p.field.as_deref()).trim_start_matches(", "), p.message)).collect();
            format!("{label}: {} problems:{each}", problems.len())
        }
        other => other.to_string().replace(&pipeline::sig_path(tmp).display().to_string(), &format!("{label}.sig")).replace(&tmp.display().to_string(), label),
    }
}

fn safe_name(n: &str) -> String {
    let s: String = n.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' { c } else { '_' }).collect();
    let s = s.trim_start_matches('.').to_string();
    if s.is_empty() || s.ends_with(".sig") { "orders.toml".into() } else { s }
}

#[cfg(test)]
#[path = "intake_tests.rs"]
mod tests;
