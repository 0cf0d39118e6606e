//! One cron run (`pbem adjudicate --all ROOT --mail CONFIG`): take mail in, resolve every due
//! step of every game, queue each player's new reports (and reminders), send the outbox.
//!
//! Reports are mailed from what is on disk, not from what this run did: `ROOT/.mail/mailed/GAME`
//! holds the newest record whose reports were queued, so a run killed after an adjudication and
//! before queueing its mails queues them next time (each mail's id is fixed by game, record and
//! role, so none is queued twice). A game first seen by a mail run gets only its newest reports.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use chrono::{DateTime, Utc};

use super::compose::{self, Draft, stable_id};
use super::config::{HostConfig, needed};
use super::report_mail::report_parts;
pub use super::config::{local_time, seat_time};
use super::intake::{self, Source};
use super::marks::{Mark, Marks};
use super::outbox::Outbox;
use crate::error::{Error, Result};
use crate::model::{GameFile, Record};
use crate::pipeline::{self, Clock, Entropy};
use crate::{commit, due, store};

/// What a cron run did to one game: its line. Small (a game its index showed idle has a
/// summary that borrows a constant), as a run over 100,000 games keeps one for each.
#[derive(Debug, Default)]
pub struct GameRun {
    /// The game's folder name.
    pub game: String,
    /// One line: resolved steps, NMR, skipped, refused...
    pub summary: Cow<'static, str>,
    /// True when the game could not be handled (an error, not a lock).
    pub failed: bool,
    /// A due step was not resolved because orders for it may still wait to be taken in
    /// (shown even with `--quiet`).
    pub held: bool,
    /// No reports are queued for it (its id is held by two folders).
    pub skip_mail: bool,
}

/// The summary of a game its index shows idle: what [`pipeline::Adjudicated::summary`] says of
/// a game with nothing done (a constant: no line is built for each idle game).
pub fn idle_summary(over: bool) -> &'static str {
    if over { "nothing due; game over" } else { "nothing due" }
}

/// A game loaded by the run: its line, what adjudication did over every pass, and whether a
/// step waits because mail arrived while this run adjudicated (it takes mail in again).
#[derive(Debug, Default)]
struct Loaded {
    line: GameRun,
    adjudicated: pipeline::Adjudicated,
    held_for_arrivals: bool,
}

impl Loaded {
    /// The last step this run resolved was not committed: mail for the game arrived before its
    /// record was written ([`LateMail`]). It is held for that mail, as a step held before it is
    /// resolved.
    fn held_back(&mut self) {
        let a = &mut self.adjudicated;
        if let Some(step) = a.resolved.pop() {
            a.nmr.retain(|(s, _)| *s != step);
            (a.over, a.held) = (false, Some((step, ARRIVED.to_string())));
        }
        self.held_for_arrivals = true;
        self.line.held = true;
        self.line.summary = a.summary().into();
    }

    /// The steps this run resolved from some point on were not committed: a write of the game's
    /// failed ([`crate::store::Group::left_out`]). The game's line says so, as failed.
    fn left_out(&mut self, dir: &Path, why: &str) {
        self.held_for_arrivals = false;
        self.line.failed = true;
        self.line.summary = pipeline::left_out(dir, why).to_string().into();
    }
}

/// What one cron run did.
#[derive(Debug, Default)]
pub struct CronRun {
    /// Messages taken in.
    pub intake: Vec<intake::Handled>,
    /// Sources that could not be read (a missing Maildir, an unreadable mbox); the games are
    /// still adjudicated and the outbox still sent.
    pub intake_errors: Vec<String>,
    /// Per game.
    pub games: Vec<GameRun>,
    /// Mails queued in this run.
    pub queued: Vec<String>,
    /// The outbox flush (None without a transport).
    pub flushed: Option<super::outbox::Flushed>,
    /// With `[publish] out`: one line per game published (its public copy changed), as
    /// (line, failed).
    pub published: Vec<(String, bool)>,
}

/// How many times one cron run takes mail in again because messages arrived while it was
/// adjudicating (each pass re-adjudicates only the games it held back).
const MAX_PASSES: usize = 3;

/// Runs intake, adjudication, mailing and sending for every game under `root`.
///
/// The root lock ([`intake::lock_root`]) is held from the first intake to the last mail queued,
/// so a second cron run or a piped `intake --stdin` waits instead of resolving steps while
/// messages wait (a piped message is spooled before it waits, so this run takes it in). Before
/// resolving a step, the run checks that no message left waiting names that game and that no
/// message naming it arrived since this intake pass began ([`Waiting`]); if one did, the step
/// waits for another intake pass. Sending happens after the lock is released.
pub fn run(root: &Path, cfg: &HostConfig, clock: impl Into<Clock>, entropy: &mut Entropy) -> Result<CronRun> {
    if !root.is_dir() {
        return Err(Error::input(root, "no such folder of games"));
    }
    let clock = clock.into();
    let lock = intake::lock_root(root, true)?;
    // One group commit for the run (`store::Batch`): the intake files its mail away after its
    // own syncs; the steps of a pass share one sync before their records (`store::Group`, a full
    // one flushed on its own thread while the steps go on, and flushed at the end of each pass,
    // before the next intake reads the games); the records and the
    // queued mail are made durable together below, before anything is published or sent.
    let batch = crate::store::Batch::open();
    let group = crate::store::Group::behind();
    let now = clock.now();
    let mut out = CronRun::default();
    let sources = intake::config_sources(cfg);
    let folders = game_folders(root)?;
    // What waits before the first pass begins: whatever arrives after this is new.
    let before = Arrivals::now(root, &sources);
    let held = take_in(root, &sources, cfg, clock, &lock, &mut out)?;
    // After the intake (an order taken in can make a game due); ids do not change. A game its
    // index shows idle is not loaded at all (nothing would be done to it); nor is one whose id
    // two folders hold.
    let peeked = peek_games(root, folders, now);
    let mut todo: Vec<usize> = (0..peeked.len()).filter(|&i| !peeked.doubled(i) && peeked.idle_at(i).is_none()).collect();
    let mut runs: BTreeMap<usize, Loaded> = BTreeMap::new();
    let late = LateMail::set(&group, root, &sources, cfg.intake.max_message_bytes, todo.iter().map(|&i| (peeked.dir(i), peeked.id(i).to_string())).collect());
    let mut first = Some((before, held));
    for pass in 1..=MAX_PASSES {
        let (before, held) = match first.take() {
            Some(taken) => taken,
            None => (Arrivals::now(root, &sources), take_in(root, &sources, cfg, clock, &lock, &mut out)?),
        };
        late.pass_begins(&before);
        let waiting = Mutex::new(Waiting { root, sources: &sources, max: cfg.intake.max_message_bytes, held, before, named: BTreeMap::new() });
        let run_one = |&i: &usize, entropy: &mut Entropy| {
            let mut check = |gf: &GameFile, _: &crate::model::Opening| waiting.lock().unwrap_or_else(|p| p.into_inner()).hold_reason(gf);
            // The first pass read the index already (it did not show the game idle).
            let peek = (pass == 1).then_some(None);
            game_run(&peeked.dir(i), clock, entropy, &mut check, peek, &group)
        };
        // Different games on every core (each under its own lock), unless the entropy is a seeded
        // stream (tests, demos), whose draws must come in the games' order.
        let results: Vec<Loaded> = match entropy {
            Entropy::Os => crate::par::map(&todo, |i| run_one(i, &mut Entropy::Os)),
            _ => todo.iter().map(|i| run_one(i, entropy)).collect(),
        };
        // The steps' records (one sync for all their files) before the next pass reads the games.
        group.flush()?;
        let vetoed = late.vetoed();
        let left = group.all_left_out();
        for dir in &vetoed {
            if let Err(e) = pipeline::clear_left_out(dir) {
                crate::errln!("warning: {}: what a step held back for new mail wrote is left for the next run to clear: {e}", dir.display());
            }
        }
        let mut again = Vec::new();
        for (i, mut g) in todo.into_iter().zip(results) {
            if vetoed.contains(&peeked.dir(i)) {
                g.held_back();
            }
            if let Some(why) = left.get(&peeked.dir(i)) {
                g.left_out(&peeked.dir(i), why);
            }
            if g.held_for_arrivals && pass < MAX_PASSES {
                again.push(i);
            }
            let prev = runs.remove(&i);
            runs.insert(i, merge_runs(prev, g));
        }
        if again.is_empty() {
            break;
        }
        todo = again;
    }
    let seen = queue_mail(root, &peeked, runs, cfg, now, &mut out);
    crate::store::sync_batch()?;
    // After the sync (which takes a while: the marks written are more often quiet long enough
    // for the snapshot's stamp), still under the root lock.
    seen.save(&peeked);
    drop(batch);
    drop(lock);
    // The site before the mail that links to it; from the public copies alone, so without the
    // root lock.
    if let Some(site) = &cfg.publish.out {
        out.published = publish_games(root, site, cfg.publish.while_running, &out.games)?;
    }
    if let Some(t) = super::transport::from_config(&cfg.transport)? {
        out.flushed = Some(Outbox::under(root).flush(t.as_ref(), now)?);
    }
    Ok(out)
}

/// Queues each game's new reports (none for a game its index showed idle with nothing to mail)
/// and puts its line in `out`; a game whose mail cannot be queued says so in its line. The
/// games' mails are composed on every core (each report mail draws a picture of the board, most
/// of a due step's cost): each game writes only its own mails and mark, and the outbox sends by
/// name, so the order they are written in changes nothing; the lines keep the games' order.
/// `runs`: the games loaded, by their index in `peeked` (every other game was idle or doubled).
/// Returns the marks seen, for the snapshot ([`MarksSeen::save`]).
fn queue_mail(root: &Path, peeked: &Peeked, mut runs: BTreeMap<usize, Loaded>, cfg: &HostConfig, now: DateTime<Utc>, out: &mut CronRun) -> MarksSeen {
    let outbox = Outbox::under(root);
    // The mailed marks: from their snapshot when it holds, else each read relative to their folder.
    let marks = Marks::open(root, peeked.len());
    // Which games have mail to queue (each idle game's mark looked up on every core), then their mail.
    let all: Vec<usize> = (0..peeked.len()).collect();
    let looked = crate::par::map(&all, |&i| match (peeked.idle_at(i), peeked.doubled(i)) {
        (_, true) => (false, None),
        (Some(idle), false) => {
            let mailed = marks.get(peeked.id(i));
            (!nothing_to_mail(mailed, &peeked.dir(i), peeked.id(i), &idle, cfg, &outbox, now), mailed)
        }
        (None, false) => (runs.get(&i).is_some_and(|g| !g.line.skip_mail), None),
    });
    drop(all);
    let to_mail: Vec<usize> = looked.iter().enumerate().filter_map(|(i, &(w, _))| w.then_some(i)).collect();
    // The marks of the games with nothing to mail, as looked up (the others' are read after).
    let mut seen: Vec<(u32, Mark)> = looked.iter().enumerate().filter_map(|(i, &(w, m))| Some((u32::try_from(i).ok()?, m.filter(|_| !w)?))).collect();
    drop(looked);
    let composed = !to_mail.is_empty();
    let mut queued = to_mail.iter().copied().zip(crate::par::map(&to_mail, |&i| queue_game_mail(&peeked.dir(i), cfg, &outbox, now))).peekable();
    out.games.reserve_exact(peeked.len());
    for i in 0..peeked.len() {
        let mut g = match runs.remove(&i) {
            Some(run) => run.line,
            None => peeked.unloaded_run(i),
        };
        let result = queued.next_if(|(k, _)| *k == i).map(|(_, r)| r);
        match result {
            Some(Ok(ids)) => out.queued.extend(ids),
            // Said once: a game that cannot be read fails here the same way.
            Some(Err(e)) if g.failed && g.summary == e.to_string() => {}
            Some(Err(e)) => {
                g.summary.to_mut().push_str(&format!("; mail not queued: {e}"));
                g.failed = true;
            }
            None => {}
        }
        out.games.push(g);
    }
    if composed {
        // A run killed while queueing left its temp files in the queue and among the mailed marks
        // (this run holds the root lock); an idle run lists neither.
        let _ = crate::store::remove_stale_temps(&outbox.dir.join("queue"));
        let _ = crate::store::remove_stale_temps(&intake::state_dir(root).join("mailed"));
    }
    seen.extend(to_mail.iter().filter_map(|&i| Some((u32::try_from(i).ok()?, marks.read_mark(peeked.id(i))?))));
    MarksSeen { marks, seen, wrote: composed }
}

/// The mailed marks a cron run looked up, wrote or read back, by game (its index in
/// [`Peeked`]): what the run's snapshot of them holds ([`super::marks`]).
struct MarksSeen {
    marks: Marks,
    seen: Vec<(u32, Mark)>,
    /// The run may have written a mark.
    wrote: bool,
}

impl MarksSeen {
    /// Writes the marks' snapshot (with the root lock held, after the run's last mark).
    fn save(self, peeked: &Peeked) {
        let MarksSeen { marks, seen, wrote } = self;
        let ids = seen.iter().map(|&(i, n)| (peeked.id(i as usize), n)).filter(|(id, _)| !id.is_empty()).collect();
        marks.save(ids, wrote);
    }
}

/// One intake pass over every source and the spool, in one arrival order; returns the games
/// named by messages left waiting.
fn take_in(root: &Path, sources: &[Source], cfg: &HostConfig, clock: Clock, lock: &intake::RootLock, out: &mut CronRun) -> Result<BTreeSet<String>> {
    let r = intake::run_locked(root, sources, cfg, clock, lock)?;
    out.intake.extend(r.handled);
    out.intake_errors.extend(r.errors.iter().map(ToString::to_string));
    Ok(r.held_games)
}

const ARRIVED: &str = "mail for this game arrived while adjudicating; it is taken in first";

/// The cron run's veto on its group's commit points ([`crate::store::Veto`]): a step's record is
/// not written when a message naming its game (or an mbox that grew, which may name any) arrived
/// since the pass began, even after the step was resolved and its files made durable (tester
/// t25a-1: the group writes a record up to a second, or 128 records, after the step's last
/// look at the mail, and orders that came meanwhile were refused as late). The step is then
/// left as a run killed right before its record leaves it, and the next pass takes the mail in
/// and resolves it anew.
struct LateMail {
    shared: std::sync::Arc<Mutex<LateState>>,
}

/// What [`LateMail`]'s veto reads and writes.
struct LateState {
    /// What waited when the pass began.
    before: Arrivals,
    /// The games each new arrival names (`None`: an mbox that grew).
    named: BTreeMap<(PathBuf, Option<u64>), Option<Vec<String>>>,
    /// The commits left out, by game folder.
    vetoed: BTreeSet<PathBuf>,
}

impl LateMail {
    /// Sets the veto on `group` for the games adjudicated, `ids` (each game's folder and id).
    fn set(group: &crate::store::Group, root: &Path, sources: &[Source], max: u64, ids: BTreeMap<PathBuf, String>) -> LateMail {
        let shared = std::sync::Arc::new(Mutex::new(LateState { before: Arrivals(BTreeSet::new()), named: BTreeMap::new(), vetoed: BTreeSet::new() }));
        let (state, root, sources) = (shared.clone(), root.to_path_buf(), sources.to_vec());
        group.set_veto(std::sync::Arc::new(move |point: &Path| {
            // A record is DIR/records/N.json.
            let Some((dir, id)) = point.parent().and_then(Path::parent).and_then(|d| ids.get_key_value(d)) else { return true };
            let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
            let LateState { before, named, vetoed } = &mut *st;
            if mail_arrived_for(id, &Arrivals::now(&root, &sources), before, named, max) {
                vetoed.insert(dir.clone());
                return false;
            }
            true
        }));
        LateMail { shared }
    }

    /// A pass begins: arrivals are new from `before` on.
    fn pass_begins(&self, before: &Arrivals) {
        let mut st = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        st.before = Arrivals(before.0.clone());
        st.named.clear();
    }

    /// The game folders whose commits were left out since the last call.
    fn vetoed(&self) -> BTreeSet<PathBuf> {
        std::mem::take(&mut self.shared.lock().unwrap_or_else(|p| p.into_inner()).vetoed)
    }
}

/// What may still hold orders after an intake pass: messages left waiting, and messages that
/// arrived since the pass began (their games read once each).
struct Waiting<'a> {
    root: &'a Path,
    sources: &'a [Source],
    max: u64,
    /// Games named by messages left waiting.
    held: BTreeSet<String>,
    /// What waited when the pass began.
    before: Arrivals,
    /// The games each new arrival names (`None`: an mbox that grew, which may name any game).
    named: BTreeMap<(PathBuf, Option<u64>), Option<Vec<String>>>,
}

impl Waiting<'_> {
    /// Why a due step of game `gf` must not be resolved now, if so.
    fn hold_reason(&mut self, gf: &GameFile) -> std::result::Result<(), String> {
        if self.held.contains(&gf.id) {
            return Err(format!("a message with orders for game {} waits to be taken in", gf.id));
        }
        if mail_arrived_for(&gf.id, &Arrivals::now(self.root, self.sources), &self.before, &mut self.named, self.max) {
            return Err(ARRIVED.to_string());
        }
        Ok(())
    }
}

/// Whether mail that may name game `id` is among the arrivals `now` has since `before` (each
/// arrival's games worked out once, kept in `named` by its path and mbox length).
fn mail_arrived_for(id: &str, now: &Arrivals, before: &Arrivals, named: &mut BTreeMap<(PathBuf, Option<u64>), Option<Vec<String>>>, max: u64) -> bool {
    now.new_since(before).into_iter().any(|(path, mbox_len)| {
        let ids = named.entry((path.clone(), mbox_len)).or_insert_with(|| arrival_games(before, &path, mbox_len, max));
        ids.as_ref().is_none_or(|ids| ids.iter().any(|x| x == id))
    })
}

/// The games an arrival names: a message file's, or those of the messages an mbox grew by since
/// `before` (its length `mbox_len` now; from 0 if it was not there). `None`: it may name any game.
fn arrival_games(before: &Arrivals, path: &Path, mbox_len: Option<u64>, max: u64) -> Option<Vec<String>> {
    match mbox_len {
        None => Some(intake::message_games(path, max)),
        Some(to) => {
            let from = before.0.iter().find(|(p, l)| p == path && l.is_some()).and_then(|x| x.1).unwrap_or(0);
            intake::mbox_games(path, from, to, max)
        }
    }
}

/// The messages waiting in the sources at one moment: Maildir (and spool, where a piped message
/// waits) files, and each mbox with its length.
#[derive(Debug, PartialEq, Eq)]
struct Arrivals(BTreeSet<(PathBuf, Option<u64>)>);

impl Arrivals {
    fn now(root: &Path, sources: &[Source]) -> Arrivals {
        let mut set = BTreeSet::new();
        let spool = Source::Maildir(intake::state_dir(root).join("spool"));
        for s in sources.iter().chain(std::iter::once(&spool)) {
            match s {
                Source::Maildir(d) => {
                    for sub in ["new", "cur"] {
                        for n in store::list(&d.join(sub)).unwrap_or_default() {
                            if !n.starts_with('.') && !n.ends_with(".toolarge") {
                                set.insert((d.join(sub).join(n), None));
                            }
                        }
                    }
                }
                Source::Mbox(f) => {
                    set.insert((f.clone(), Some(std::fs::metadata(f).map_or(0, |m| m.len()))));
                }
                Source::Stdin => {}
            }
        }
        Arrivals(set)
    }
    /// What is here now and was not `before`.
    fn new_since(&self, before: &Arrivals) -> Vec<(PathBuf, Option<u64>)> {
        self.0.iter().filter(|x| !before.0.contains(x)).cloned().collect()
    }
}

/// The folders directly under a root that may hold a game, by name, in the names' order
/// ([`game_folders`]): every name in one text, so that a root of 100,000 games costs a few
/// bytes a game, not a path each.
#[derive(Debug, Default)]
pub struct Folders {
    root: PathBuf,
    text: String,
    /// Each name's start and end in `text`.
    names: Vec<(u32, u32)>,
}

impl Folders {
    /// How many folders.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The name of folder `i`.
    pub fn name(&self, i: usize) -> &str {
        self.names.get(i).map_or("", |&(a, b)| &self.text[a as usize..b as usize])
    }

    /// The path of folder `i` (`ROOT/NAME`).
    pub fn dir(&self, i: usize) -> PathBuf {
        self.root.join(self.name(i))
    }
}

/// The folders directly under `root` that may hold a game, sorted: each name not starting with
/// `.` that the listing's own file type shows to be a folder (no `stat` each; a symbolic link is
/// followed). [`peek_games`] keeps the games among them, the folders [`pipeline::games_under`] lists.
pub fn game_folders(root: &Path) -> Result<Folders> {
    let rd = match std::fs::read_dir(root) {
        Ok(rd) => rd,
        Err(e) if root.is_dir() => return Err(store::io(root, e)),
        Err(_) => return Err(Error::input(root, "no such folder (the root holding the games)")),
    };
    let mut f = Folders { root: root.to_path_buf(), ..Folders::default() };
    for entry in rd {
        let entry = entry.map_err(|e| store::io(root, e))?;
        let os = entry.file_name();
        let Some(name) = os.to_str().filter(|n| store::may_hold_game(n)) else { continue };
        let kind = entry.file_type().map_err(|e| store::io(&root.join(name), e))?;
        if kind.is_dir() || kind.is_symlink() && root.join(name).is_dir() {
            let Some(at) = append(&mut f.text, name) else { return Err(Error::input(root, "too many game folders to list (over 4 GB of names)")) };
            f.names.push(at);
        }
    }
    let Folders { text, names, .. } = &mut f;
    names.sort_unstable_by(|&(a, b), &(c, d)| text[a as usize..b as usize].cmp(&text[c as usize..d as usize]));
    Ok(f)
}

/// Appends `s` to `text`: its start and end there (`None`, and nothing appended, past 4 GB).
fn append(text: &mut String, s: &str) -> Option<(u32, u32)> {
    let at = (u32::try_from(text.len()).ok()?, u32::try_from(text.len() + s.len()).ok()?);
    text.push_str(s);
    Some(at)
}

/// Each game's due index read once at `now` ([`due::peek`]), compactly (one small record a
/// game, the ids in one text): what it says of each game among the folders (the folders that
/// hold no game are left out), and every game id held by more than one folder, with the folders
/// (the id from the index, else from `game.toml`; a game that cannot be read fails on its own
/// when adjudicated).
pub struct Peeked {
    /// The folders that hold a game: game `i` is folder `i`.
    folders: Folders,
    /// The games' ids, one after another.
    ids: String,
    games: Vec<PeekedGame>,
    duplicates: BTreeMap<String, Vec<PathBuf>>,
}

/// One game of [`Peeked`] (40 bytes on a 64-bit machine).
struct PeekedGame {
    /// Its id's start and end in `ids` (`None`: unknown).
    id: Option<(u32, u32)>,
    /// The index shows the game idle: then [`IdleAt`]'s fields follow.
    idle: bool,
    over: bool,
    /// Its id is held by another folder too.
    doubled: bool,
    record: u64,
    /// The newest record's [`due::short_sha`].
    sha: u64,
    /// The open step's deadline (`i64::MIN`: none).
    deadline: i64,
}

/// What the due index says of an idle game ([`due::Idle`] without its id).
#[derive(Debug, Clone, Copy)]
pub struct IdleAt {
    /// Index of the newest record.
    pub record: u64,
    /// The newest record's [`due::short_sha`].
    pub sha: u64,
    /// The open step's deadline, Unix seconds (`None` once the game is over).
    pub deadline: Option<i64>,
    /// The game is over.
    pub over: bool,
}

impl Peeked {
    /// How many games.
    pub fn len(&self) -> usize {
        self.games.len()
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.games.is_empty()
    }

    /// The folder of game `i`.
    pub fn dir(&self, i: usize) -> PathBuf {
        self.folders.dir(i)
    }

    /// The folder name of game `i`.
    pub fn name(&self, i: usize) -> &str {
        self.folders.name(i)
    }

    /// The id of game `i` ("" when unknown).
    pub fn id(&self, i: usize) -> &str {
        self.games.get(i).and_then(|g| g.id).map_or("", |(a, b)| &self.ids[a as usize..b as usize])
    }

    /// What the index says of game `i` when it shows it idle.
    pub fn idle_at(&self, i: usize) -> Option<IdleAt> {
        let g = self.games.get(i).filter(|g| g.idle)?;
        Some(IdleAt { record: g.record, sha: g.sha, deadline: (g.deadline != i64::MIN).then_some(g.deadline), over: g.over })
    }

    /// The index's word on game `i` for [`pipeline::adjudicate_peeked`].
    pub fn idle(&self, i: usize) -> Option<due::Idle> {
        self.idle_at(i).map(|t| due::Idle { id: self.id(i).to_string(), record: t.record, sha: t.sha, deadline: t.deadline, over: t.over })
    }

    /// True when the id of game `i` is held by more than one folder (it is not adjudicated).
    pub fn doubled(&self, i: usize) -> bool {
        self.games.get(i).is_some_and(|g| g.doubled)
    }

    /// Every game id held by more than one folder, with the folders.
    pub fn duplicates(&self) -> &BTreeMap<String, Vec<PathBuf>> {
        &self.duplicates
    }

    /// The cron run's line of game `i` when it was not loaded: its id doubled, or idle.
    fn unloaded_run(&self, i: usize) -> GameRun {
        let game = self.name(i).to_string();
        match self.duplicates.get(self.id(i)).filter(|_| self.doubled(i)) {
            Some(dirs) => {
                let all: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
                let summary = format!("not adjudicated: game {} is held by more than one folder ({}); remove all but one", self.id(i), all.join(", "));
                GameRun { game, summary: summary.into(), failed: true, skip_mail: true, ..Default::default() }
            }
            None => GameRun { game, summary: idle_summary(self.idle_at(i).is_some_and(|t| t.over)).into(), ..Default::default() },
        }
    }
}

/// How many games [`peek_games`] peeks at a time ([`due::RootIndex::peek_many`]): enough that
/// starting the threads costs little beside their work (~10 ms a batch), few enough that their
/// lines held (~150 bytes each) cost little memory.
const PEEK_BATCH: usize = 1024;

/// See [`Peeked`]; also the plain sweep's (`adjudicate --all` without `--mail`). `folders` as
/// [`game_folders`] lists them: a folder whose index holds has a `game.toml` (its `stat` was
/// checked); of the others, those without one are no game ([`pipeline::holds_game`]).
/// The index of every game under `root` (`ROOT/.due-index`, [`due::RootIndex`]) is read once
/// and rewritten when what it says changed.
pub fn peek_games(root: &Path, mut folders: Folders, now: DateTime<Utc>) -> Peeked {
    let mut index = due::RootIndex::read(root);
    let (mut ids, mut games, mut kept) = (String::new(), Vec::with_capacity(folders.len()), 0);
    // A batch of folders at a time, their lines' stamps looked at on every core.
    for from in (0..folders.len()).step_by(PEEK_BATCH) {
        let to = folders.len().min(from + PEEK_BATCH);
        let peeks = index.peek_many(&(from..to).map(|k| folders.name(k)).collect::<Vec<_>>(), now);
        for (k, p) in (from..to).zip(peeks) {
            if p.id.is_none() && !pipeline::holds_game(&folders.dir(k)) {
                continue;
            }
            let id = p.id.or_else(|| pipeline::read_game_file(&store::GameDir::new(folders.dir(k))).ok().map(|gf| gf.id)).and_then(|id| append(&mut ids, &id));
            let (record, sha, deadline, over) = p.idle.as_ref().map_or((0, 0, None, false), |t| (t.record, t.sha, t.deadline, t.over));
            games.push(PeekedGame { id, idle: p.idle.is_some(), over, doubled: false, record, sha, deadline: deadline.unwrap_or(i64::MIN) });
            // The folders that hold no game are left out: game `i` is folder `i`.
            folders.names[kept] = folders.names[k];
            kept += 1;
        }
    }
    index.save();
    folders.names.truncate(kept);
    let mut peeked = Peeked { folders, ids, games, duplicates: BTreeMap::new() };
    // Games by id (a stable sort: each id's folders in their order), then each run of one id.
    let mut by_id: Vec<usize> = (0..peeked.len()).filter(|&i| peeked.games[i].id.is_some()).collect();
    by_id.sort_by(|&x, &y| peeked.id(x).cmp(peeked.id(y)));
    let doubled: Vec<&[usize]> = by_id.chunk_by(|&x, &y| peeked.id(x) == peeked.id(y)).filter(|same| same.len() > 1).collect();
    let duplicates = doubled.iter().map(|same| (peeked.id(same[0]).to_string(), same.iter().map(|&i| peeked.dir(i)).collect())).collect();
    for &i in doubled.iter().copied().flatten() {
        peeked.games[i].doubled = true;
    }
    peeked.duplicates = duplicates;
    peeked
}

/// True when [`queue_game_mail`] would queue nothing for the game `id` in `dir` its index shows
/// idle (`mailed`: its mailed mark, [`Marks::get`]): the newest record's reports were queued (the
/// mark names that very record, by number and hash: a game restored from an older copy, or a new
/// game given a deleted game's id, has another record with the number, tester t25b-1; a mark of
/// an older version, without a hash, is trusted by its number as [`first_unmailed`] trusts it),
/// and no reminder can be due (none configured, outside the hours before the deadline, or each
/// one the open step needs already known to the outbox).
fn nothing_to_mail(mailed: Option<Mark>, dir: &Path, id: &str, idle: &IdleAt, cfg: &HostConfig, outbox: &Outbox, now: DateTime<Utc>) -> bool {
    let names_newest = |m: Mark| match m.sha {
        Some(sha) => m.record == idle.record && sha == idle.sha,
        None => m.record >= idle.record,
    };
    if !mailed.is_some_and(names_newest) {
        return false;
    }
    let hours = i64::from(cfg.reminders.hours_before) * 3600;
    let secs = now.timestamp();
    idle.over || hours == 0 || idle.deadline.is_none_or(|d| secs >= d || secs < d - hours) || reminders_known(dir, id, idle, outbox)
}

/// Inside the reminder window: whether the reminder of every seat the open step still awaits
/// (by the game's index) is known to the outbox (queued, sent or refused), so that loading the
/// game would queue none (`remind::queue_reminders` names them the same way). Without the index,
/// or with one reminder unknown, false: the game is loaded and its reminders worked out in full.
/// Without this, every game inside the window was loaded on every cron run.
fn reminders_known(dir: &Path, id: &str, idle: &IdleAt, outbox: &Outbox) -> bool {
    let Some((step, awaited)) = due::awaited(&crate::store::GameDir::new(dir), idle.record) else { return false };
    awaited.iter().all(|role| outbox.knows(&super::remind::reminder_id(id, step, idle.sha, role)))
}

/// Adjudicates one game for the cron run (a game that cannot be read is reported and left
/// alone). `peek`: the game's due index as [`peek_games`] read it.
fn game_run(dir: &Path, clock: Clock, entropy: &mut Entropy, may_resolve: &mut pipeline::ResolveCheck<'_>, peek: Option<Option<due::Idle>>, group: &crate::store::Group) -> Loaded {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut g = Loaded { line: GameRun { game: name, ..Default::default() }, ..Default::default() };
    // Refused when the clock is behind the game's newest record or receipt.
    let result = match peek {
        Some(idle) => pipeline::adjudicate_peeked(dir, clock, entropy, may_resolve, idle, group),
        None => pipeline::adjudicate_sweep(dir, clock, entropy, may_resolve, group),
    };
    match result {
        Ok(a) => {
            g.line.summary = a.summary().into();
            g.line.held = a.held.is_some();
            g.held_for_arrivals = a.held.as_ref().is_some_and(|(_, why)| why == ARRIVED);
            g.adjudicated = a;
        }
        Err(Error::Locked(_)) => g.line.summary = "skipped, locked by another run".into(),
        Err(e) => {
            g.line.summary = e.to_string().into();
            g.line.failed = true;
        }
    }
    g
}

/// The run of a game over several passes: every step resolved, then the last pass's hold.
fn merge_runs(prev: Option<Loaded>, mut next: Loaded) -> Loaded {
    let Some(mut p) = prev else { return next };
    p.adjudicated.resolved.append(&mut next.adjudicated.resolved);
    p.adjudicated.nmr.append(&mut next.adjudicated.nmr);
    p.adjudicated.over = next.adjudicated.over;
    p.adjudicated.held = next.adjudicated.held.take();
    if !next.line.failed {
        next.line.summary = p.adjudicated.summary().into();
    }
    Loaded { adjudicated: p.adjudicated, ..next }
}

/// Publishes into `site` every game of `games` (not failed, not skipped) whose public copy
/// changed since it was last published there; returns a line for each published or failed.
///
/// Runs under `ROOT/.mail/publish.lock` (two overlapping cron runs publish one after the other,
/// so a mark never stands for a site the other run overwrote). A game is not read at all when
/// its mark `ROOT/.mail/published/FOLDER` holds this pbem, this site, its
/// [`due::public_stamp`] and the stamp of its folder in the site (a page deleted, added or
/// replaced there, or the folder restored from a copy, changes it), and the site's own index
/// and stylesheet are there; a game whose mark holds but whose folder in the site changed (or
/// whose site lost its index) is written again where the bytes differ ([`crate::site::publish`]);
/// any other game is checked in full ([`crate::site::publish_if_changed`]). Unless that fails,
/// it is marked anew with the stamp taken before. A mark is a hint (written without a sync):
/// lost, the game is checked in full. Unless `while_running`, a game not yet over is left out
/// (and its mark as it was): it is published once it is over.
fn publish_games(root: &Path, site: &Path, while_running: bool, games: &[GameRun]) -> Result<Vec<(String, bool)>> {
    let state = intake::state_dir(root);
    let path = state.join("publish.lock");
    let lock = store::open_lock(&path)?;
    lock.lock().map_err(|e| store::io(&path, e))?;
    let marks = state.join("published");
    std::fs::create_dir_all(&marks).map_err(|e| store::io(&marks, e))?;
    let _ = store::remove_stale_temps(&marks);
    let whole = site.join("index.html").is_file() && site.join("style.css").is_file();
    let mut lines = Vec::new();
    for g in games.iter().filter(|g| !g.failed && !g.skip_mail) {
        if let Some(line) = publish_game(root, &marks.join(&g.game), &g.game, site, whole, while_running) {
            lines.push(line);
        }
    }
    Ok(lines)
}

/// Publishes the game in folder `name` into `site` if its public copy changed since it was last
/// published there (by its `mark` when `whole` says the site's own pages are there, else in
/// full): `None` when nothing changed (or the game runs and not `while_running`), else the line
/// to print and whether it failed.
fn publish_game(root: &Path, mark: &Path, name: &str, site: &Path, whole: bool, while_running: bool) -> Option<(String, bool)> {
    let dir = root.join(name);
    let stamp = due::public_stamp(&store::GameDir::new(&dir));
    let head = |id: &str, s: &str| format!("pbem-published 1\n{}\n{}\n{id}\n{s}\n", env!("CARGO_PKG_VERSION"), site.display());
    let folder = stamp.as_ref().and_then(|(id, ..)| crate::site::game_folder(site, id));
    let marked = due::read_small(mark);
    if let (Some((id, s, _)), Some(f), Some(m)) = (&stamp, &folder, &marked)
        && whole
        && folder_stamp(f).is_some_and(|fs| *m == format!("{}{fs}\n", head(id, s)))
    {
        return None;
    }
    if !while_running {
        match stamp.as_ref().map_or_else(|| pipeline::is_over(&store::GameDir::new(&dir)), |st| Ok(st.2)) {
            Ok(true) => {}
            Ok(false) => return None,
            Err(e) => return Some((format!("{}: not published: {e}", dir.display()), true)),
        }
    }
    // The game as last marked, but its pages in the site touched (deleted, replaced, restored
    // from a copy) or the site's own pages gone: written in full, where the bytes differ.
    let site_only = stamp.as_ref().zip(marked.as_ref()).is_some_and(|((id, s, _), m)| m.starts_with(&head(id, s)));
    let result = if site_only || !whole {
        crate::site::publish(&dir, site).map(|p| (p.written > 0).then_some(p))
    } else {
        crate::site::publish_if_changed(&dir, site)
    };
    // The site's folder of the game as this run left it, with the game's stamp from before.
    let written = match (&result, &stamp, &folder) {
        (Ok(_), Some((id, s, _)), Some(f)) => folder_stamp(f).map(|fs| format!("{}{fs}\n", head(id, s))),
        _ => None,
    };
    match written {
        Some(text) => drop(store::write_unsynced(mark, text.as_bytes())),
        None => drop(std::fs::remove_file(mark)),
    }
    match result {
        Ok(None) => None,
        Ok(Some(p)) => Some((format!("published {}", p.describe()), false)),
        Err(e) => Some((format!("{}: not published: {e}", dir.display()), true)),
    }
}

/// Inode and change time of a game's folder in the site: a file added, removed or renamed in it
/// changes them, and so does a folder put back from a copy.
fn folder_stamp(folder: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(folder).ok()?;
    Some(format!("site folder {}:{}:{}", m.ino(), m.ctime(), m.ctime_nsec()))
}

fn mailed_path(root: &Path, id: &str) -> std::path::PathBuf {
    intake::state_dir(root).join("mailed").join(id)
}

/// Queues the reports of every record not yet mailed, and due reminders; returns the ids queued.
pub fn queue_game_mail(dir: &Path, cfg: &HostConfig, outbox: &Outbox, now: DateTime<Utc>) -> Result<Vec<String>> {
    let g = pipeline::load(dir)?;
    let root = dir.parent().unwrap_or(Path::new("."));
    let mark = mailed_path(root, &g.gf.id);
    let first = first_unmailed(&g, &mark, outbox)?;
    let mut queued = Vec::new();
    for n in first..=g.record.index {
        let sha = record_sha(&g, n)?;
        let rec = pipeline::read_record(&g.dir, n)?;
        let state = store::read_text(&g.dir.state(n))?;
        for seat in &g.gf.seats {
            let m = report_mail(&g.dir, &g.gf, g.game, (&rec, g.record.index), &state, &seat.role, &sha, cfg, now)?;
            if outbox.queue(&m, now)? {
                queued.push(m.id);
            }
        }
        // A seat moved to another address: the old one is told too (the report went to the new).
        if let Some(m) = old_address_notice(&g.gf, &rec, cfg, now)?
            && outbox.queue(&m, now)?
        {
            queued.push(m.id);
        }
        store::write_atomic(&mark, format!("{n} {sha}\n").as_bytes())?;
    }
    queued.extend(super::remind::queue_reminders(&g, cfg, outbox, now)?);
    Ok(queued)
}

/// For a seat change that moved a seat to another address: a mail to the old address saying so
/// (the record's report goes to the new one). `None` for any other record.
fn old_address_notice(gf: &GameFile, rec: &Record, cfg: &HostConfig, now: DateTime<Utc>) -> Result<Option<compose::Outgoing>> {
    let Some((c, change)) = rec.control.as_ref().and_then(|c| c.seat.as_ref().map(|s| (c, s))) else { return Ok(None) };
    let before: GameFile = match toml::from_str(&change.before) {
        Ok(b) => b,
        Err(_) => return Ok(None),
    };
    let Some(old) = before.seat(&change.role).map(|s| s.email.clone()).filter(|e| *e != change.email) else { return Ok(None) };
    let body = format!(
        "Game {}: {}.\n\nFrom record {} on, the reports and order forms of the seat {} go to {}, and only orders signed with\nthe key named there are accepted. The change is part of the game's signed record (`pbem audit`).\nIf you did not expect this, write to the host.\n",
        gf.id,
        c.describe(rec.opening.as_ref()),
        rec.index,
        change.role,
        change.email
    );
    Ok(Some(compose::build(Draft {
        id: stable_id(&["seat-change", &gf.id, &rec.index.to_string(), &old]),
        from: &cfg.from,
        to: vec![old],
        cc: vec![],
        subject: format!("[pbem {}] your seat {} now belongs to another address", gf.id, change.role),
        body,
        attachments: vec![],
        in_reply_to: None,
        date: now,
    })?))
}

/// How many hex digits of a record's SHA-256 its mailed mark keeps after the record number.
const MARK_SHA_HEX: usize = 16;


/// The first record of game `g` whose reports are not queued yet, by its mark `mark` (without
/// one, the newest). A game restored from an older copy (or a new game given a deleted one's id:
/// tester8 D4, tester9, tester10 H2) may have another record with the number the mark names, or
/// fewer records than it names: then the records are walked back from there to the newest one
/// whose reports the outbox knows in that very form ([`mailed_before`]), with a warning, and every
/// record after it is queued. Records are hash-chained, so the ones before it are unchanged too.
/// A mark of the older form (`N` alone) is trusted as it is.
/// Errors: a mark that is not a small regular file; a record that cannot be read.
fn first_unmailed(g: &pipeline::Loaded, mark: &Path, outbox: &Outbox) -> Result<u64> {
    if mark.symlink_metadata().is_err() {
        return Ok(g.record.index);
    }
    // A regular file only (a FIFO there would hold the run): anything else is not a mark.
    let text = store::read_hint(mark, 64).ok_or_else(|| Error::input(mark, "not a small regular file"))?;
    // A mark that names no record (emptied, edited: tester9 D4) is as none: the newest record is
    // queued, and the outbox knows whether it was sent.
    let Some((n, sha)) = super::marks::parse_mark(&text) else { return Ok(g.record.index) };
    let Some(sha) = sha.filter(|s| s.len() == MARK_SHA_HEX) else { return Ok(if n > g.record.index { g.record.index } else { n + 1 }) };
    if n <= g.record.index && record_sha(g, n)? == sha {
        return Ok(n + 1);
    }
    let first = mailed_before(g, n.min(g.record.index), outbox)?;
    if first > g.record.index {
        // Restored to a record the players have, and none after it yet: nothing to mail. The
        // mark names that record from now on, so that the cron run's look at an idle game (by
        // number and hash, `nothing_to_mail`) finds it mailed without loading the game.
        store::write_atomic(mark, format!("{} {}\n", g.record.index, record_sha(g, g.record.index)?).as_bytes())?;
        return Ok(first);
    }
    crate::errln!("warning: game {}: records from {first} on are not the ones whose reports were mailed (restored from an older copy?): their reports are mailed", g.gf.id);
    Ok(first)
}

/// One past the newest record, from `from` down, whose report mails (to any seat) the outbox knows
/// as queued, sent or refused in its present form; 0 when none is. Each record is read once.
fn mailed_before(g: &pipeline::Loaded, from: u64, outbox: &Outbox) -> Result<u64> {
    for k in (0..=from).rev() {
        let sha = record_sha(g, k)?;
        if g.gf.seats.iter().any(|s| outbox.knows(&report_id(&g.gf.id, k, &s.role, &sha))) {
            return Ok(k + 1);
        }
    }
    Ok(0)
}

/// The first [`MARK_SHA_HEX`] hex digits of the SHA-256 of record `n` of `g` (its newest from
/// memory, any other read).
fn record_sha(g: &pipeline::Loaded, n: u64) -> Result<String> {
    let bytes: Cow<'_, [u8]> = if n == g.record.index { Cow::Borrowed(&g.record_bytes) } else { Cow::Owned(store::read(&g.dir.record(n))?) };
    Ok(commit::sha256_hex(&bytes)[..MARK_SHA_HEX].to_string())
}

/// The id of the report mail of record `n` (whose [`record_sha`] is `sha`) to `role` of `game`:
/// the record's hash in it, so another record with this number (a game restored from an older copy
/// and resolved anew, a new game with a deleted one's id) is mailed, not taken as sent.
fn report_id(game: &str, n: u64, role: &str, sha: &str) -> String {
    stable_id(&["report", game, &n.to_string(), role, sha])
}

/// The report mail of record `rec` to `role`; `newest`: the game's newest record, mailed in the
/// same run when it is later (a record whose step a later one resolved or whose deadline a host
/// control moved is mailed all the same, for the audit's chain, but its subject says it is out of
/// date rather than asking for orders by a deadline already gone: tester20 T20a-3).
#[allow(clippy::too_many_arguments)]
fn report_mail(
    dir: &store::GameDir,
    gf: &GameFile,
    game: &dyn crate::game::DynGame,
    (rec, newest): (&Record, u64),
    state: &str,
    role: &str,
    sha: &str,
    cfg: &HostConfig,
    now: DateTime<Utc>,
) -> Result<compose::Outgoing> {
    let seat = gf.seat(role).expect("seat of the game");
    let what = match &rec.resolution {
        Some(res) => format!("step {} resolved", res.step),
        None if rec.index == 0 => "the game begins".to_string(),
        None => "notice from the host".to_string(),
    };
    let subject = match &rec.opening {
        _ if rec.outcome.is_some() => format!("[pbem {}] final result ({role})", gf.id),
        Some(_) if newest > rec.index => format!("[pbem {}] {what}: out of date: see the mail of record {newest} (your report, {role})", gf.id),
        Some(op) => format!("[pbem {}] {what}: {} (your report, {role})", gf.id, needed(cfg, seat, op, super::report_mail::orders_in(dir, gf, op.step, role)?)),
        None => format!("[pbem {}] {what}: your report ({role})", gf.id),
    };
    let (mut body, attachments) = report_parts(dir, gf, game, (rec, Some(newest)), state, role, cfg, now)?;
    body.push_str(&super::report_mail::new_holder_plans(dir, rec, role)?);
    compose::build(Draft {
        id: report_id(&gf.id, rec.index, role, sha),
        from: &cfg.from,
        to: vec![seat.email.clone()],
        cc: vec![],
        subject,
        body,
        attachments,
        in_reply_to: None,
        date: now,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step's record waiting in the cron run's group is not written when mail that may name its
    /// game arrived since the pass began (here an mbox rewritten, whose new mail cannot be told
    /// apart), and the run learns which game's was left out; without such mail, or with mail that
    /// names no game (a stranger's, appended), it is written (testers t25a-1, t25c-2).
    #[test]
    fn a_record_is_left_out_when_mail_for_its_game_arrived_before_it_was_written() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("turns");
        let games: Vec<PathBuf> = ["g1", "g2", "g3"].iter().map(|g| root.join(g)).collect();
        for g in &games {
            std::fs::create_dir_all(g.join("records")).unwrap();
        }
        let mbox = tmp.path().join("mbox");
        let stranger = "From a@b Wed Jul  1 13:00:00 2026\nFrom: a@b\nSubject: hi\n\nhello\n\n";
        std::fs::write(&mbox, stranger).unwrap();
        let sources = [Source::Mbox(mbox.clone())];
        let group = crate::store::Group::new();
        let ids = games.iter().map(|g| (g.clone(), g.file_name().unwrap().to_string_lossy().into_owned())).collect();
        let late = LateMail::set(&group, &root, &sources, 1 << 20, ids);
        late.pass_begins(&Arrivals::now(&root, &sources));
        let record = |g: &Path| g.join("records").join("000001.json");
        let commit = |g: &Path| {
            let point = crate::store::CommitPoint::new(record(g), b"{}".to_vec());
            group.add(crate::store::stage(&[], point).unwrap());
            group.flush().unwrap();
        };
        commit(&games[0]);
        assert!(record(&games[0]).exists() && late.vetoed().is_empty(), "no mail came: written");
        std::fs::write(&mbox, format!("{stranger}{stranger}")).unwrap();
        commit(&games[1]);
        assert!(record(&games[1]).exists() && late.vetoed().is_empty(), "a stranger's mail: written");
        std::fs::write(&mbox, format!("X{stranger}{stranger}")).unwrap();
        commit(&games[2]);
        assert!(!record(&games[2]).exists(), "mail that may name any game came: left out");
        assert_eq!(late.vetoed(), [games[2].clone()].into_iter().collect());
        let mut run = Loaded { adjudicated: pipeline::Adjudicated { resolved: vec![1, 2], nmr: vec![(1, "union".into()), (2, "union".into())], over: true, held: None, paused: None }, ..Default::default() };
        run.held_back();
        assert_eq!((run.adjudicated.resolved, run.adjudicated.nmr.len(), run.adjudicated.over), (vec![1], 1, false));
        assert!(run.held_for_arrivals && run.line.summary.contains("arrived while adjudicating"), "{}", run.line.summary);
    }

    #[test]
    fn arrivals_see_a_new_maildir_message_a_spooled_one_and_a_grown_mbox() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("turns");
        let md = tmp.path().join("Maildir");
        for sub in ["new", "cur", "tmp"] {
            std::fs::create_dir_all(md.join(sub)).unwrap();
        }
        let mbox = tmp.path().join("mbox");
        std::fs::write(&mbox, "From a@b Wed Jul  1 13:00:00 2026\n\n").unwrap();
        std::fs::write(md.join("new").join("1.M1.host"), "left waiting").unwrap();
        let sources = [Source::Maildir(md.clone()), Source::Mbox(mbox.clone())];
        let seen = Arrivals::now(&root, &sources);
        assert!(Arrivals::now(&root, &sources).new_since(&seen).is_empty(), "a message already there is not new");
        // Mail being delivered (in tmp/) has not arrived yet.
        std::fs::write(md.join("tmp").join("2.M2.host"), "x").unwrap();
        assert!(Arrivals::now(&root, &sources).new_since(&seen).is_empty());
        std::fs::rename(md.join("tmp").join("2.M2.host"), md.join("new").join("2.M2.host")).unwrap();
        assert_eq!(Arrivals::now(&root, &sources).new_since(&seen), vec![(md.join("new").join("2.M2.host"), None)]);
        let seen = Arrivals::now(&root, &sources);
        std::fs::create_dir_all(root.join(".mail/spool/new")).unwrap();
        std::fs::write(root.join(".mail/spool/new/00000000001.000000.aa"), "piped").unwrap();
        assert_eq!(Arrivals::now(&root, &sources).new_since(&seen).len(), 1, "a piped message in the spool");
        let seen = Arrivals::now(&root, &sources);
        std::fs::write(&mbox, "From a@b Wed Jul  1 13:00:00 2026\n\nFrom c@d Wed Jul  1 13:01:00 2026\n\n").unwrap();
        assert_eq!(Arrivals::now(&root, &sources).new_since(&seen).first().map(|x| x.1.is_some()), Some(true), "an mbox that grew");
    }

    #[test]
    fn a_game_tried_again_keeps_what_its_first_pass_resolved() {
        let first = pipeline::Adjudicated { resolved: vec![1], nmr: vec![], over: false, held: Some((2, ARRIVED.into())), paused: None };
        let second = pipeline::Adjudicated { resolved: vec![2], nmr: vec![(2, "union".into())], over: false, held: None, paused: None };
        let run = |a: pipeline::Adjudicated| Loaded { line: GameRun { game: "g1".into(), summary: a.summary().into(), ..Default::default() }, adjudicated: a, ..Default::default() };
        let merged = merge_runs(Some(run(first)), run(second));
        assert_eq!(merged.line.summary, "resolved step(s) 1, 2; NMR: union in step 2");
    }

    #[test]
    fn the_idle_summary_is_what_adjudication_says_of_a_game_with_nothing_done() {
        for over in [false, true] {
            assert_eq!(idle_summary(over), pipeline::Adjudicated { over, ..Default::default() }.summary());
        }
    }
}
