//! The audit's work done ahead on every core while the checks in order go on: for each record,
//! its signatures checked, its step replayed from the host's stored state before it, and its
//! reports rendered, the records handed out in order to the threads (the checking thread takes
//! one itself when it reaches a record no thread has taken yet). Each result is kept with its
//! exact inputs, and the checks in order (`Audit`) take it only where they would compute it from
//! the very same inputs (all of it is deterministic), so what an audit finds, and the first
//! failure it reports, are what the checks in order alone give; they compute anything not worked
//! out ahead themselves.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use super::{Audit, ReadReceipt, RevealMap, StepReceipts, keys_for_step, read_step_receipts};
use crate::commit;
use crate::dice::{Ctx, Event};
use crate::game::{DynGame, Orders, Pending, Publication};
use crate::history::{History, ReadRecord};
use crate::model::{LateReveal, Record, Resolution};
use crate::pipeline::{self, NS_ORDERS, NS_RECEIPT, NS_RECORD, sig_path};
use crate::report;
use crate::store::{self, GameDir};

/// Records worked out ahead at a time (their states and reports are held until checked).
pub(super) const RUN: u64 = 64;

/// A step replayed ahead: from the state `before`, with `orders` and the step `seed`, the game
/// gave the state `after`, the `events`, and said `publication` of the step and `pending` after.
struct Replayed {
    before: String,
    orders: BTreeMap<String, Orders>,
    seed: [u8; 32],
    after: String,
    events: Vec<Event>,
    publication: Publication,
    pending: Pending,
}

/// What the game gave for a step replayed ahead: the state after, the events, the step's
/// publication and what the game waits for after it.
pub(super) type Outcome = (String, Vec<Event>, Publication, Pending);

/// A record's reports rendered ahead (by role) from the `state` after it (the stored one,
/// matching the record's commitment), the step's `events` and the record's `bytes`; with each,
/// whether the stored report holds exactly its bytes.
struct Rendered {
    state: String,
    events: Vec<Event>,
    bytes: Vec<u8>,
    texts: BTreeMap<String, (String, bool)>,
}

/// What was worked out ahead for one record.
#[derive(Default)]
pub(super) struct Ahead {
    /// The record's bytes as the history holds them were found host-signed by the game's host
    /// key, with its signature file as read then.
    record_signed: bool,
    /// The record's orders (withheld ones as revealed or kept by the host) found signed ahead:
    /// each seat key, signed text and armored signature.
    orders_signed: Vec<(ssh_key::PublicKey, String, String)>,
    /// Host files the checks of the record's step read, read ahead: by path, the bytes, or
    /// `None` where the file is not there (or, for a file the checks only read when it exists,
    /// could not be read; see [`Shared::step_files`]).
    files: BTreeMap<PathBuf, Option<Vec<u8>>>,
    replayed: Option<Replayed>,
    rendered: Option<Rendered>,
}

impl Ahead {
    /// Whether the record being checked (the history's bytes of it) was found signed by the
    /// host key ahead: then its host signature check passes as it would in order.
    pub(super) fn record_signed(&self) -> bool {
        self.record_signed
    }

    /// Whether `signature` was found ahead to be `key`'s good signature of the order `text`:
    /// then its check passes as it would in order.
    pub(super) fn order_signed(&self, key: &ssh_key::PublicKey, text: &str, signature: &str) -> bool {
        self.orders_signed.iter().any(|(k, t, s)| t == text && s == signature && k == key)
    }

    /// The host file `path` of the step being checked as read ahead: `Some(None)` when it was
    /// not there; `None` when it was not read ahead (read it now).
    pub(super) fn file(&self, path: &Path) -> Option<Option<&[u8]>> {
        self.files.get(path).map(Option::as_deref)
    }

    /// What the game gave for the step of the record being checked, if it was replayed ahead
    /// from the state `before` with these `orders` and `seed`.
    pub(super) fn replayed(&mut self, before: &str, orders: &BTreeMap<String, Orders>, seed: &[u8; 32]) -> Option<Outcome> {
        if !self.resolved_from(before, orders) {
            return None;
        }
        let r = self.replayed.take()?;
        (&r.seed == seed).then_some((r.after, r.events, r.publication, r.pending))
    }

    /// Whether the step of the record being checked was resolved ahead from the state `before`
    /// with these `orders`: then the game's check of each of them in that state passed
    /// (`game::check_all`, before every resolution).
    pub(super) fn resolved_from(&self, before: &str, orders: &BTreeMap<String, Orders>) -> bool {
        self.replayed.as_ref().is_some_and(|r| r.before == before && &r.orders == orders)
    }

    /// `role`'s report of the record being checked (read as `bytes`), if it was rendered ahead
    /// from this `state` and these `events`, and whether the stored report is exactly it.
    pub(super) fn report(&self, role: &str, state: &str, events: &[Event], bytes: &[u8]) -> Option<(&str, bool)> {
        let r = self.rendered.as_ref()?;
        (r.state == state && r.events == events && r.bytes == bytes).then(|| r.texts.get(role).map(|(t, same)| (t.as_str(), *same))).flatten()
    }

    /// Whether `state` is the stored state after the record being checked, as read ahead and
    /// found to match the record's state commitment.
    pub(super) fn stored_state_is(&self, state: &str) -> bool {
        self.rendered.as_ref().is_some_and(|r| r.state == state)
    }
}

/// `f()`, or `None` if it panicked. Work done ahead runs the game on stored states the checks in
/// order have not reached yet (each matching its host-signed commitment): a panic there is theirs
/// to meet, in order, or not at all.
fn unless_panics<T>(f: impl FnOnce() -> T) -> Option<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok()
}

/// The records of one run, handed out in order to the threads; each result waits in its
/// record's slot until the checks in order take it.
struct Queue {
    first: u64,
    last: u64,
    /// The next record no thread has taken.
    next: AtomicU64,
    /// Set once the checks in order are done (or failed): no record is taken after it.
    stop: AtomicBool,
    slots: Vec<(Mutex<Option<Ahead>>, Condvar)>,
}

impl Queue {
    /// The records `run`, none taken yet.
    fn new(run: &RangeInclusive<u64>) -> Self {
        let slots = run.clone().map(|_| (Mutex::new(None), Condvar::new())).collect();
        Queue { first: *run.start(), last: *run.end(), next: AtomicU64::new(*run.start()), stop: AtomicBool::new(false), slots }
    }

    /// The next record no thread has taken, taken now.
    fn claim(&self) -> Option<u64> {
        if self.stop.load(Ordering::Relaxed) {
            return None;
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        (n <= self.last).then_some(n)
    }

    /// Works record `n` out and leaves it in its slot.
    fn put(&self, n: u64, shared: &Shared) {
        let (slot, ready) = &self.slots[(n - self.first) as usize];
        let done = shared.work(n);
        *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(done);
        ready.notify_all();
    }

    /// Takes records and works them out until none is left (a helper thread).
    fn serve(&self, shared: &Shared) {
        while let Some(n) = self.claim() {
            self.put(n, shared);
        }
    }

    /// Record `n`'s work: done on this thread if no thread has taken it yet; else, while it is
    /// not ready, the next records no thread has taken are worked out here, then it is waited for.
    fn take(&self, n: u64, shared: &Shared) -> Ahead {
        if self.next.compare_exchange(n, n + 1, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
            return shared.work(n);
        }
        let (slot, ready) = &self.slots[(n - self.first) as usize];
        loop {
            if let Some(d) = slot.lock().unwrap_or_else(|p| p.into_inner()).take() {
                return d;
            }
            match self.claim() {
                Some(k) => self.put(k, shared),
                None => break,
            }
        }
        let mut done = slot.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(d) = done.take() {
                return d;
            }
            done = ready.wait(done).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// What the work ahead reads: the game as [`Audit::open`] read it, shared with the threads and
/// never changed while they run.
pub(super) struct Shared {
    gd: GameDir,
    id: String,
    /// The game's report wording (`game.toml`), for the steps' event texts ([`Ctx::worded`]).
    wording: u32,
    game: &'static dyn DynGame,
    host: ssh_key::PublicKey,
    env: Arc<minijinja::Environment<'static>>,
    hist: Arc<History>,
    reveal_map: Arc<RevealMap>,
    receipts: Arc<StepReceipts>,
    state_key: Option<[u8; 32]>,
    has_states: bool,
    /// The stored states after records `states_from..`, each read and checked once (a record's
    /// state is the next record's state before).
    states_from: u64,
    states: Vec<std::sync::OnceLock<Option<String>>>,
}

/// Whether `--jobs` `jobs` works ahead: more than one thread asked for, or by default on a
/// machine of more than one core.
pub(super) fn works_ahead(jobs: usize) -> bool {
    jobs > 1 || (jobs == 0 && crate::par::workers(usize::MAX) > 1)
}

impl Audit {
    /// The threads that work ahead besides this one: `None` when nothing is worked out ahead.
    fn helpers(&self) -> Option<usize> {
        works_ahead(self.jobs).then(|| crate::par::workers(if self.jobs == 0 { usize::MAX } else { self.jobs }) - 1)
    }

    /// Every opened step's receipts as read (step 1 first), each step's read on every core when
    /// working ahead, with every receipt's host signature checked there, the good ones marked
    /// `signed` (the checks in order meet each again, and check a bad one themselves).
    pub(super) fn read_receipts(&self) -> Vec<crate::error::Result<Vec<ReadReceipt>>> {
        let steps: Vec<u64> = (1..=self.hist.open_step).collect();
        let ahead = self.helpers().is_some();
        crate::par::map_on(&steps, if ahead { self.jobs } else { 1 }, |&step| {
            let mut read = read_step_receipts(&self.gd, step);
            for r in read.iter_mut().flatten().filter(|_| ahead) {
                if let Some(armored) = &r.armored {
                    r.signed = crate::sig::verify(&self.host, NS_RECEIPT, &r.bytes, armored).is_ok();
                }
            }
            read
        })
    }

    /// Checks the records `run` in order ([`Audit::check_record`]) while the other threads work
    /// the next ones out ahead.
    pub(super) fn check_run(&mut self, run: RangeInclusive<u64>) -> crate::error::Result<()> {
        let Some(helpers) = self.helpers() else {
            return run.into_iter().try_for_each(|n| self.check_record(n));
        };
        let shared = self.shared(&run);
        let queue = Queue::new(&run);
        std::thread::scope(|s| {
            for _ in 0..helpers {
                s.spawn(|| queue.serve(&shared));
            }
            let checked = run.into_iter().try_for_each(|n| {
                self.ahead = queue.take(n, &shared);
                self.check_record(n)
            });
            queue.stop.store(true, Ordering::Relaxed);
            self.ahead = Ahead::default();
            checked
        })
    }

    /// What the work ahead of the records `run` reads, shared.
    fn shared(&self, run: &RangeInclusive<u64>) -> Shared {
        let states_from = run.start().saturating_sub(1);
        Shared {
            gd: self.gd.clone(),
            id: self.gf.id.clone(),
            wording: self.gf.wording,
            game: self.game,
            host: self.host.clone(),
            env: self.env.clone(),
            hist: self.hist.clone(),
            reveal_map: self.reveal_map.clone(),
            receipts: self.receipts.clone(),
            state_key: self.state_key,
            has_states: self.has_states,
            states_from,
            states: (states_from..=*run.end()).map(|_| std::sync::OnceLock::new()).collect(),
        }
    }
}

impl Shared {
    /// Record `n` worked out ahead: its signatures checked (the good ones marked), and, on
    /// the host's copy, its step replayed and its reports rendered. A panic leaves it undone.
    fn work(&self, n: u64) -> Ahead {
        unless_panics(|| self.work_out(n)).unwrap_or_default()
    }

    /// [`Shared::work`], a panic not caught.
    fn work_out(&self, n: u64) -> Ahead {
        let Some(read) = self.record_ahead(n) else { return Ahead::default() };
        let rec = &read.record;
        let orders_signed = rec.resolution.as_ref().filter(|_| n >= 1 && (n as usize) <= self.hist.files.len()).map(|res| self.verify_orders_ahead(n, res)).unwrap_or_default();
        let files = rec.resolution.as_ref().map(|res| self.step_files(res)).unwrap_or_default();
        let signed = Ahead { record_signed: true, orders_signed, files, ..Ahead::default() };
        let Some(state) = self.has_states.then(|| self.stored_state(n, rec)).flatten() else { return signed };
        let replayed = match &rec.resolution {
            Some(res) => {
                let before = n.checked_sub(1).and_then(|p| self.stored_state(p, &self.hist.records.get(p as usize)?.record));
                match self.replay_ahead(res, before) {
                    Some(r) => Some(r),
                    None => return signed,
                }
            }
            None => None,
        };
        let events = replayed.as_ref().map_or_else(Vec::new, |r| r.events.clone());
        let rendered = self.render_ahead(n, rec, &read.bytes, state, events);
        Ahead { replayed, rendered, ..signed }
    }

    /// Record `n` read and its host signature checked; `None` if it is missing, not host-signed
    /// or not a record.
    fn record_ahead(&self, n: u64) -> Option<Arc<ReadRecord>> {
        let read = self.hist.records.get(n as usize)?;
        let armored = store::read_text(&sig_path(&self.gd.record(n))).ok()?;
        crate::sig::verify(&self.host, NS_RECORD, &read.bytes, &armored).ok()?;
        Some(read.clone())
    }

    /// The host files the checks of the step `res` resolves read, each read as they read it:
    /// the host seed (`None` if it cannot be read), each sealed order (`None` if it is not
    /// there; left out if it is there but cannot be read, for the checks to meet that error)
    /// with its signature (`None` if it cannot be read), and the withheld copy of each published
    /// order (`None` if it is not there; left out if it is).
    fn step_files(&self, res: &Resolution) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
        let mut files = BTreeMap::new();
        let seed = self.gd.host_seed(res.step);
        let seed_bytes = store::read(&seed).ok();
        files.insert(seed, seed_bytes);
        for o in &res.orders {
            if !o.withheld {
                let hp = self.gd.withheld(res.step, &o.role);
                if !hp.exists() {
                    files.insert(hp, None);
                }
            }
            let Some(seq) = o.seq else { continue };
            let sealed = self.gd.sealed(res.step).join(format!("{}-{seq}.txt", o.role));
            let sealed_sig = sig_path(&sealed);
            if !sealed.exists() {
                files.insert(sealed, None);
                continue;
            }
            if let Ok(b) = store::read(&sealed) {
                files.insert(sealed, Some(b));
            }
            let sig_bytes = store::read(&sealed_sig).ok();
            files.insert(sealed_sig, sig_bytes);
        }
        files
    }

    /// The signatures of record `n`'s orders (withheld ones as revealed or kept by the host),
    /// checked with the seat keys the checks in order use: the good ones, with key and text.
    fn verify_orders_ahead(&self, n: u64, res: &Resolution) -> Vec<(ssh_key::PublicKey, String, String)> {
        let Ok(keys) = keys_for_step(&self.gd, &self.hist, &self.receipts, n - 1, res.step) else { return Vec::new() };
        let mut good = Vec::new();
        for o in &res.orders {
            let signed = if o.withheld { self.revealed(res.step, &o.role).and_then(|r| Some((r.text?, r.signature?))) } else { o.text.clone().zip(o.signature.clone()) };
            if let (Some((text, signature)), Some(key)) = (signed, keys.get(&o.role))
                && crate::sig::verify(key, NS_ORDERS, text.as_bytes(), &signature).is_ok()
            {
                good.push((key.clone(), text, signature));
            }
        }
        good
    }

    /// The orders of `role` in `step` once withheld: as a later record reveals them, else the
    /// host's withheld copy.
    fn revealed(&self, step: u64, role: &str) -> Option<LateReveal> {
        match self.reveal_map.get(&(step, role.to_string())) {
            Some((r, _)) => Some(r.clone()),
            None => serde_json::from_str::<LateReveal>(&store::read_text(&self.gd.withheld(step, role)).ok()?).ok().filter(|r| r.not_for(step, role).is_none()),
        }
    }

    /// The stored state after record `n` (`rec`), if it matches the record's commitment; read
    /// and checked once for a record of the run.
    fn stored_state(&self, n: u64, rec: &Record) -> Option<String> {
        match n.checked_sub(self.states_from).and_then(|i| self.states.get(i as usize)) {
            Some(cell) => cell.get_or_init(|| self.read_stored_state(n, rec)).clone(),
            None => self.read_stored_state(n, rec),
        }
    }

    /// [`Shared::stored_state`], read and checked now.
    fn read_stored_state(&self, n: u64, rec: &Record) -> Option<String> {
        let text = store::read_text(&self.gd.state(n)).ok()?;
        (pipeline::state_commitment(&self.id, n, self.state_key.as_ref()?, &text) == rec.state).then_some(text)
    }

    /// A record's step (`res`) replayed from the stored state after the record before (`before`).
    fn replay_ahead(&self, res: &Resolution, before: Option<String>) -> Option<Replayed> {
        let before = before?;
        let mut orders = BTreeMap::new();
        for o in &res.orders {
            let given = if o.withheld { self.revealed(res.step, &o.role)?.orders } else { o.orders.clone() };
            orders.insert(o.role.clone(), given);
        }
        let seed = commit::parse_32(&res.seed)?;
        let mut ctx = Ctx::new(seed).worded(self.wording).unsent(crate::model::unsent(&res.orders));
        let after = unless_panics(|| self.game.resolve(&before, &orders, &mut ctx))?.ok()?;
        let publication = unless_panics(|| self.game.publication(&before, &after))?.ok()?;
        let pending = unless_panics(|| self.game.pending(&after))?.ok()?;
        Some(Replayed { before, orders, seed, after, events: ctx.into_events(), publication, pending })
    }

    /// Record `n`'s reports (`rec`, read as `bytes`) for every seat then, from the stored `state`
    /// after it and the step's `events`.
    fn render_ahead(&self, n: u64, rec: &Record, bytes: &[u8], state: String, events: Vec<Event>) -> Option<Rendered> {
        let gf = self.hist.files.get(n as usize)?;
        let mut texts = BTreeMap::new();
        for s in &gf.seats {
            let pinned = report::Pinned { record: rec, sha256: &self.hist.records.get(n as usize)?.sha256, earlier_wording: false };
            let text = unless_panics(|| report::render_pinned(&self.env, self.game, gf, pinned, &events, &state, &s.role))?.ok()?;
            let stored = store::read(&self.gd.report(n, &s.role)).is_ok_and(|b| b == text.as_bytes());
            texts.insert(s.role.clone(), (text, stored));
        }
        Some(Rendered { state, events, bytes: bytes.to_vec(), texts })
    }
}
