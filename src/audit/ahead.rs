//! The audit's work done ahead on every core, a run of records at a time: every signature
//! checked, each step replayed from the host's stored state before it, and each record's reports
//! rendered. Each result is kept with its exact inputs, and the checks in order (`Audit`) take
//! it only where they would compute it from the very same inputs (all of it is deterministic),
//! so what an audit finds, and the first failure it reports, are what the checks in order alone
//! give; they compute anything not worked out ahead themselves.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::sync::Arc;

use super::{Audit, ReadReceipt, verify_once};
use crate::commit;
use crate::dice::{Ctx, Event};
use crate::game::Orders;
use crate::history::ReadRecord;
use crate::model::{LateReveal, Record, Resolution};
use crate::pipeline::{self, NS_ORDERS, NS_RECEIPT, NS_RECORD, sig_path};
use crate::report;
use crate::store;

/// Records worked out ahead at a time (their states and reports are held until checked).
pub(super) const RUN: u64 = 64;

/// A step replayed ahead: from the state `before`, with `orders` and the step `seed`, the game
/// gave the state `after` and the `events`.
struct Replayed {
    before: String,
    orders: BTreeMap<String, Orders>,
    seed: [u8; 32],
    after: String,
    events: Vec<Event>,
}

/// A record's reports rendered ahead (by role) from the `state` after it, the step's `events`
/// and the record's `bytes`.
struct Rendered {
    state: String,
    events: Vec<Event>,
    bytes: Vec<u8>,
    texts: BTreeMap<String, String>,
}

/// What was worked out ahead for the records of the current run, by record index.
#[derive(Default)]
pub(super) struct Ahead {
    replayed: BTreeMap<u64, Replayed>,
    rendered: BTreeMap<u64, Rendered>,
}

impl Ahead {
    /// The state after, and the events of, record `n`'s step, if it was replayed ahead from the
    /// state `before` with these `orders` and `seed`.
    pub(super) fn replayed(&mut self, n: u64, before: &str, orders: &BTreeMap<String, Orders>, seed: &[u8; 32]) -> Option<(String, Vec<Event>)> {
        let r = self.replayed.remove(&n)?;
        (r.before == before && &r.orders == orders && &r.seed == seed).then_some((r.after, r.events))
    }

    /// `role`'s report of record `n` (read as `bytes`), if it was rendered ahead from this
    /// `state` and these `events`.
    pub(super) fn report(&self, n: u64, role: &str, state: &str, events: &[Event], bytes: &[u8]) -> Option<&str> {
        let r = self.rendered.get(&n)?;
        (r.state == state && r.events == events && r.bytes == bytes).then(|| r.texts.get(role).map(String::as_str)).flatten()
    }
}

/// `f()`, or `None` if it panicked. Work done ahead runs the game on stored states the checks in
/// order have not reached yet (each matching its host-signed commitment): a panic there is theirs
/// to meet, in order, or not at all.
fn unless_panics<T>(f: impl FnOnce() -> T) -> Option<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok()
}

impl Audit {
    /// Whether work is done ahead: asked for more than one thread, or by default on a machine
    /// of more than one core.
    fn ahead_on(&self) -> bool {
        self.jobs > 1 || (self.jobs == 0 && crate::par::workers(usize::MAX) > 1)
    }

    /// Checks every receipt's host signature on every core, remembering the good ones (the
    /// checks in order meet each again, and check a bad one themselves).
    pub(super) fn verify_receipts_ahead(&self, loaded: &[crate::error::Result<Vec<ReadReceipt>>]) {
        if !self.ahead_on() {
            return;
        }
        let files: Vec<&ReadReceipt> = loaded.iter().filter_map(|r| r.as_ref().ok()).flatten().collect();
        crate::par::map_on(&files, self.jobs, |r| {
            if let Ok(armored) = store::read_text(&sig_path(&r.path)) {
                let _ = verify_once(&self.host, NS_RECEIPT, &r.bytes, &armored);
            }
        });
    }

    /// Works out records `run` ahead (what was kept for the run before is dropped): each
    /// record's signatures, then, on the host's copy, each step replayed and each record's
    /// reports rendered.
    pub(super) fn work_ahead(&mut self, run: RangeInclusive<u64>) {
        self.ahead = Ahead::default();
        if !self.ahead_on() {
            return;
        }
        // The record before the run too: its state is where the run's first step starts.
        let read: Vec<u64> = (run.start().saturating_sub(1)..=*run.end()).collect();
        // Each record with the stored state after it (read once: the step after it starts there).
        let records = crate::par::map_on(&read, self.jobs, |&n| {
            let r = self.record_ahead(n)?;
            let state = if self.has_states { self.stored_state(n, &r.record) } else { None };
            Some((r, state))
        });
        let records: BTreeMap<u64, (Arc<ReadRecord>, Option<String>)> = read.into_iter().zip(records).filter_map(|(n, r)| Some((n, r?))).collect();
        if !self.has_states {
            return;
        }
        let todo: Vec<u64> = run.filter(|n| records.contains_key(n)).collect();
        let done = crate::par::map_on(&todo, self.jobs, |&n| {
            let (read, state) = &records[&n];
            let (bytes, rec) = (&read.bytes, &read.record);
            let before = records.get(&(n.wrapping_sub(1))).and_then(|(_, s)| s.as_ref());
            let replayed = match &rec.resolution {
                Some(res) => match self.replay_ahead(res, before) {
                    Some(r) => Some(r),
                    None => return (None, None),
                },
                None => None,
            };
            let events = replayed.as_ref().map_or_else(Vec::new, |r| r.events.clone());
            let rendered = state.as_ref().and_then(|state| self.render_ahead(n, rec, bytes, state, events));
            (replayed, rendered)
        });
        for (n, (replayed, rendered)) in todo.into_iter().zip(done) {
            if let Some(r) = replayed {
                self.ahead.replayed.insert(n, r);
            }
            if let Some(r) = rendered {
                self.ahead.rendered.insert(n, r);
            }
        }
    }

    /// Record `n` read, its host signature and its orders' signatures checked (the good ones
    /// remembered); `None` if it is missing, not host-signed or not a record.
    fn record_ahead(&self, n: u64) -> Option<Arc<ReadRecord>> {
        let read = self.hist.records.get(n as usize)?;
        let armored = store::read_text(&sig_path(&self.gd.record(n))).ok()?;
        verify_once(&self.host, NS_RECORD, &read.bytes, &armored).ok()?;
        if let Some(res) = read.record.resolution.as_ref().filter(|_| n >= 1 && (n as usize) <= self.hist.files.len()) {
            self.verify_orders_ahead(n, res);
        }
        Some(read.clone())
    }

    /// The signatures of record `n`'s orders (withheld ones as revealed or kept by the host),
    /// with the seat keys the checks in order use.
    fn verify_orders_ahead(&self, n: u64, res: &Resolution) {
        let Ok(keys) = self.keys_for_step(n - 1, res.step) else { return };
        for o in &res.orders {
            let signed = if o.withheld { self.revealed(res.step, &o.role).and_then(|r| Some((r.text?, r.signature?))) } else { o.text.clone().zip(o.signature.clone()) };
            if let (Some((text, signature)), Some(key)) = (signed, keys.get(&o.role)) {
                let _ = verify_once(key, NS_ORDERS, text.as_bytes(), &signature);
            }
        }
    }

    /// The orders of `role` in `step` once withheld: as a later record reveals them, else the
    /// host's withheld copy.
    fn revealed(&self, step: u64, role: &str) -> Option<LateReveal> {
        match self.reveal_map.get(&(step, role.to_string())) {
            Some((r, _)) => Some(r.clone()),
            None => serde_json::from_str(&store::read_text(&self.gd.withheld(step, role)).ok()?).ok(),
        }
    }

    /// The stored state after record `n` (`rec`), if it matches the record's commitment.
    fn stored_state(&self, n: u64, rec: &Record) -> Option<String> {
        let text = store::read_text(&self.gd.state(n)).ok()?;
        (pipeline::state_commitment(&self.gf.id, n, self.state_key.as_ref()?, &text) == rec.state).then_some(text)
    }

    /// A record's step (`res`) replayed from the stored state after the record before (`before`).
    fn replay_ahead(&self, res: &Resolution, before: Option<&String>) -> Option<Replayed> {
        let before = before?.clone();
        let mut orders = BTreeMap::new();
        for o in &res.orders {
            let given = if o.withheld { self.revealed(res.step, &o.role)?.orders } else { o.orders.clone() };
            orders.insert(o.role.clone(), given);
        }
        let seed = commit::parse_32(&res.seed)?;
        let mut ctx = Ctx::new(seed);
        let after = unless_panics(|| self.game.resolve(&before, &orders, &mut ctx))?.ok()?;
        Some(Replayed { before, orders, seed, after, events: ctx.into_events() })
    }

    /// Record `n`'s reports (`rec`, read as `bytes`) for every seat then, from the stored `state`
    /// after it and the step's `events`.
    fn render_ahead(&self, n: u64, rec: &Record, bytes: &[u8], state: &str, events: Vec<Event>) -> Option<Rendered> {
        let state = state.to_string();
        let gf = self.hist.files.get(n as usize)?;
        let mut texts = BTreeMap::new();
        for s in &gf.seats {
            let pinned = report::Pinned { record: rec, sha256: &self.hist.records.get(n as usize)?.sha256 };
            let text = unless_panics(|| report::render_pinned(&self.env, self.game, gf, pinned, &events, &state, &s.role))?.ok()?;
            texts.insert(s.role.clone(), text);
        }
        Some(Rendered { state, events, bytes: bytes.to_vec(), texts })
    }
}
