//! What a game's records say about its setup over time, for the audit: the `game.toml` in force
//! at each record (followed through the seat changes the host recorded), which records stood
//! while each step was open, and the checks of host control records (SPEC.md "Host controls"),
//! among them the players' own end of a game, by the signed orders it quotes.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, Utc};

use crate::commit;
use crate::control;
use crate::error::{AuditCheck, AuditFailure, Error, Result};
use crate::game::DynGame;
use crate::model::{ControlAction, GameFile, Opening, Receipt, Record, SignedOrder};
use crate::orderfile::Ending;
use crate::sig;
use crate::pipeline;
use crate::store::{self, GameDir};

/// Record 0's setup hash is not that of the game's files: `RECORD:LINE: setup: ...`.
fn setup_changed(r0: &Path) -> Error {
    const WHY: &str = "setup: is not the hash of game.toml and scenario.toml as they are now: one of them was edited since the game began";
    let line = store::read_text(r0).ok().and_then(|t| t.lines().position(|l| l.trim_start().starts_with("\"setup\":")));
    AuditFailure::new(AuditCheck::History, r0, WHY).at_line(line.map(|i| i + 1)).into()
}

/// An audit failure of the history about `path`: `PATH: what`.
fn fail(path: &Path, what: impl std::fmt::Display) -> Error {
    AuditFailure::new(AuditCheck::History, path, what.to_string()).into()
}

/// A record as the history read it: its bytes, their SHA-256 (hex) and what they say. The
/// audit checks each from these, without reading the file again.
pub struct ReadRecord {
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// Their SHA-256, hex: what the next record's `prev` and a receipt's `record` name.
    pub sha256: String,
    /// The record they hold.
    pub record: Record,
}

/// The setup of a game record by record.
pub struct History {
    /// Every record, 0..=last, as read.
    pub records: Vec<std::sync::Arc<ReadRecord>>,
    /// Record index by the SHA-256 of its file.
    pub by_hash: BTreeMap<String, u64>,
    /// The setup hash in force after each record.
    pub setups: Vec<String>,
    /// The game file in force after each record.
    pub files: Vec<GameFile>,
    /// For each step: the first and the last record that stood while it was open (its opening's).
    pub spans: BTreeMap<u64, (u64, u64)>,
    /// The last step a record opened.
    pub open_step: u64,
    /// The last step a record resolved.
    pub last_resolved: u64,
}

impl History {
    /// The game file in force when a receipt naming record hash `record` was issued, if the
    /// hash is one of the game's records.
    pub fn file_at(&self, record: &str) -> Option<&GameFile> {
        self.by_hash.get(record).map(|&k| &self.files[k as usize])
    }

    /// Whether `setup` was in force at some time while `step` was open.
    pub fn setup_during(&self, step: u64, setup: &str) -> bool {
        self.spans.get(&step).is_some_and(|&(first, last)| self.setups[first as usize..=last as usize].iter().any(|s| s == setup))
    }

    /// The records that gave seat `role` another key while `step` was open (seat changes), oldest
    /// first.
    pub fn key_changes_during(&self, step: u64, role: &str) -> Vec<u64> {
        let Some(&(first, last)) = self.spans.get(&step) else { return Vec::new() };
        (first + 1..=last).filter(|&k| self.seat_key(k, role) != self.seat_key(k - 1, role)).collect()
    }

    /// The fingerprint (`SHA256:...`) of seat `role`'s key in force after record `k`.
    pub fn seat_key(&self, k: u64, role: &str) -> Option<String> {
        let line = &self.files.get(k as usize)?.seat(role)?.key;
        Some(sig::public_key_line(line).map_or_else(|_| line.split_whitespace().take(2).collect::<Vec<_>>().join(" "), |pk| sig::fingerprint(&pk)))
    }

    /// Whether a receipt of `step` may name record hash `record` under setup `setup`: the record
    /// stood while the step was open, and `setup` was in force after it. `Err` says what is wrong.
    pub fn check_receipt(&self, step: u64, record: &str, setup: &str) -> std::result::Result<(), String> {
        let Some(&(first, last)) = self.spans.get(&step) else {
            return Err(format!("is for step {step}, which no record opened"));
        };
        if !self.setup_during(step, setup) {
            return Err("names another setup than game.toml and scenario.toml (were they rewritten?)".into());
        }
        match self.by_hash.get(record) {
            Some(&k) if (first..=last).contains(&k) => {
                if self.setups[k as usize] != setup {
                    return Err(format!("names the setup of another record than record {k} it was issued after"));
                }
                Ok(())
            }
            _ => Err(format!("names another record than the game's records {first}-{last}, which stood while step {step} was open (was the history rewritten?)")),
        }
    }
}

/// [`read_on`] on every core.
pub fn read(gd: &GameDir, last: u64, gf_bytes: &[u8], scenario: &[u8]) -> Result<History> {
    read_on(gd, last, gf_bytes, scenario, 0)
}

/// Record `n` read, hashed and parsed.
fn read_record(gd: &GameDir, n: u64) -> Result<std::sync::Arc<ReadRecord>> {
    let p = gd.record(n);
    // Only a record not there is missing; one that is no file (a FIFO, a folder, a link to a
    // device) says so (tester20 T20b-4).
    let bytes = store::read_regular(&p).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => fail(&p, "missing (deleted record?)"),
        _ => fail(&p, e.to_string()),
    })?;
    let record: Record = serde_json::from_slice(&bytes).map_err(|e| fail(&p, format!("not a record: {e}")))?;
    Ok(std::sync::Arc::new(ReadRecord { sha256: commit::sha256_hex(&bytes), bytes, record }))
}

/// Reads records 0..=`last` (on at most `jobs` threads, 0: every core; the first record in order
/// that fails is the error, whatever the threads) and follows the setup from record 0 to
/// `game.toml` (`gf_bytes`) through every seat change: each keeps the `game.toml` before it, whose
/// setup hash must be the one in force, and its own `setup` is that of the next text (the next
/// change's, or `game.toml`), which differs from the one before only in that seat.
pub fn read_on(gd: &GameDir, last: u64, gf_bytes: &[u8], scenario: &[u8], jobs: usize) -> Result<History> {
    let numbers: Vec<u64> = (0..=last).collect();
    let recs = crate::par::map_on(&numbers, jobs, |&n| read_record(gd, n)).into_iter().collect::<Result<Vec<_>>>()?;
    let mut texts: Vec<(Vec<u8>, std::path::PathBuf)> = Vec::new();
    for (n, rec) in recs.iter().map(|r| &r.record).enumerate() {
        if let Some(c) = rec.control.as_ref().filter(|c| c.action == ControlAction::Seat) {
            let s = c.seat.as_ref().ok_or_else(|| fail(&gd.record(n as u64), "control: a seat change without control.seat"))?;
            texts.push((s.before.clone().into_bytes(), gd.record(n as u64)));
        }
    }
    texts.push((gf_bytes.to_vec(), gd.game_file()));
    let mut files = Vec::new();
    for (t, path) in &texts {
        let text = std::str::from_utf8(t).map_err(|_| fail(path, "game.toml text is not UTF-8"))?;
        files.push(toml::from_str::<GameFile>(text).map_err(|e| fail(path, format!("not a game file: {}", e.message().trim())))?);
    }
    // The setup hash of each text, computed once (every record after it shares it).
    let hashes: Vec<String> = texts.iter().map(|(t, _)| pipeline::setup_hash(t, scenario)).collect();
    if recs[0].record.setup.as_deref() != Some(&hashes[0]) {
        return Err(if texts.len() == 1 {
            setup_changed(&gd.record(0))
        } else {
            fail(&texts[0].1, "control.seat.before: is not the game.toml whose setup record 0 names")
        });
    }
    let mut h = History { records: Vec::new(), by_hash: BTreeMap::new(), setups: Vec::new(), files: Vec::new(), spans: BTreeMap::new(), open_step: 0, last_resolved: 0 };
    let mut cur = 0;
    for (n, (hash, rec)) in recs.iter().map(|r| (&r.sha256, &r.record)).enumerate() {
        let rpath = gd.record(n as u64);
        let seat = rec.control.as_ref().filter(|c| c.action == ControlAction::Seat).and_then(|c| c.seat.as_ref());
        if n > 0 && rec.setup.is_some() != seat.is_some() {
            return Err(fail(&rpath, "setup: only record 0 and a seat change carry a setup hash"));
        }
        if let Some(s) = seat {
            if rec.setup.as_deref() != Some(&hashes[cur + 1]) {
                return Err(fail(&rpath, if cur + 2 == texts.len() {
                    "setup: names another setup than game.toml and scenario.toml (was game.toml changed without a seat record?)"
                } else {
                    "setup: is not the setup of the game.toml the next seat change keeps"
                }));
            }
            let mut expect = files[cur].clone();
            match expect.seats.iter_mut().find(|x| x.role == s.role) {
                Some(x) => {
                    x.email = s.email.clone();
                    x.key = s.key.clone();
                    if let Some(z) = &s.time_zone {
                        x.time_zone = Some(z.clone());
                    }
                }
                None => return Err(fail(&rpath, format!("control.seat.role: no seat {:?}", s.role))),
            }
            if files[cur + 1] != expect {
                return Err(fail(&texts[cur + 1].1, format!("differs from the game.toml before record {n} in more than seat {}'s address, key and time zone", s.role)));
            }
            cur += 1;
        }
        h.setups.push(hashes[cur].clone());
        h.files.push(files[cur].clone());
        h.by_hash.insert(hash.clone(), n as u64);
        if let Some(op) = &rec.opening {
            h.spans.entry(op.step).or_insert((n as u64, n as u64)).1 = n as u64;
            h.open_step = h.open_step.max(op.step);
        }
        if let Some(res) = &rec.resolution {
            h.last_resolved = h.last_resolved.max(res.step);
            h.open_step = h.open_step.max(res.step);
        }
    }
    if cur + 1 != texts.len() {
        return Err(fail(&gd.game_file(), "is not the game.toml the last seat change names"));
    }
    h.records = recs;
    Ok(h)
}

/// Checks host control record `rec` (file `rpath`, bytes `bytes`) after record `prev`: made no
/// earlier than it, without a resolution or events, and its opening (or outcome) exactly what
/// the control does to `prev`'s opening. Returns the control's time.
pub fn check_control(rpath: &Path, rec: &Record, prev: &Record) -> Result<DateTime<Utc>> {
    let c = rec.control.as_ref().expect("a control record");
    let op = prev.opening.as_ref().ok_or_else(|| fail(rpath, "follows a record that ended the game"))?;
    if rec.resolution.is_some() {
        return Err(fail(rpath, "a host control record resolves no step"));
    }
    let at = pipeline::parse_time(&c.at).map_err(|_| fail(rpath, format!("control.at: {:?} is not an RFC 3339 time", c.at)))?;
    if pipeline::record_time(prev).is_some_and(|t| at < t) {
        return Err(fail(rpath, "control.at: is before the record it follows: times go backwards"));
    }
    if c.seat.is_some() != (c.action == ControlAction::Seat) {
        return Err(fail(rpath, "control.seat: only a seat change names a seat"));
    }
    let same = |o: &Option<Opening>, want: &Opening, what: &str| -> Result<()> {
        if o.as_ref() != Some(want) {
            return Err(fail(rpath, format!("opening: is not the opening of the record before {what}")));
        }
        Ok(())
    };
    let not_paused = || match &op.paused {
        Some(since) => Err(fail(rpath, format!("control: the game was paused (since {since}); only resume, a seat change or an end may follow"))),
        None => Ok(()),
    };
    match c.action {
        ControlAction::Seat => same(&rec.opening, op, "(a seat change leaves it as it was)")?,
        ControlAction::Deadline => {
            not_paused()?;
            let new = rec.opening.as_ref().ok_or_else(|| fail(rpath, "opening: missing"))?;
            same(&rec.opening, &Opening { deadline: new.deadline.clone(), ..op.clone() }, "with a new deadline")?;
            let d = pipeline::parse_time(&new.deadline).map_err(|_| fail(rpath, "opening.deadline: not an RFC 3339 time"))?;
            if d <= at {
                return Err(fail(rpath, "opening.deadline: a moved deadline must lie after the control's time"));
            }
            // Deadlines are only ever moved later (a deadline cut short would NMR players before
            // they are told); see control::move_deadline.
            if pipeline::parse_time(&op.deadline).is_ok_and(|old| d < old) {
                return Err(fail(rpath, format!("opening.deadline: a moved deadline may not be earlier than the one it replaces ({})", op.deadline)));
            }
        }
        ControlAction::Pause => {
            not_paused()?;
            same(&rec.opening, &Opening { paused: Some(c.at.clone()), ..op.clone() }, "paused at control.at")?;
        }
        ControlAction::Resume => {
            let want = control::resumed(op, at).map_err(|e| fail(rpath, format!("control: {e}")))?.ok_or_else(|| fail(rpath, "control: resumes a game that was not paused"))?;
            same(&rec.opening, &want, "resumed, its deadline later by the time paused")?;
        }
        ControlAction::Abandon => {
            if rec.opening.is_some() || rec.outcome.as_ref() != Some(&control::abandoned(&c.reason)) || c.reason.trim().is_empty() {
                return Err(fail(rpath, "outcome: an abandoned game ends with no opening and the outcome naming the host's reason"));
            }
        }
        ControlAction::Resign | ControlAction::Draw => {
            if rec.opening.is_some() || rec.outcome.is_none() || !c.reason.is_empty() {
                return Err(fail(rpath, "outcome: a game its players end has no opening, an outcome, and no host's reason"));
            }
        }
    }
    if c.orders.is_empty() == c.action.by_players() {
        return Err(fail(rpath, "control.orders: a resignation or a draw quotes the players' signed orders, and nothing else does"));
    }
    if !matches!(c.action, ControlAction::Abandon | ControlAction::Resign | ControlAction::Draw) && (rec.outcome.is_some() || !rec.reveals.is_empty()) {
        return Err(fail(rpath, "only a record that ends the game states an outcome or reveals orders"));
    }
    Ok(at)
}

/// Checks that the players really ended the game as record `rec` (file `rpath`, after `prev`, with
/// `state` the game's state then) says: every quoted order has its host-signed receipt (its
/// commitment), its seat's signature under the key in force for that receipt, and asks for this
/// end; a resignation is the resigning role's newest order of the open step; a draw quotes every
/// seat's newest order of the game, each offering a draw; the outcome is the one that follows
/// (SPEC.md "Ending by the players").
#[allow(clippy::too_many_arguments)]
pub fn check_players_end(gd: &GameDir, hist: &History, host: &ssh_key::PublicKey, game: &dyn DynGame, state: &str, rpath: &Path, rec: &Record, prev: &Record) -> Result<()> {
    let Some(c) = rec.control.as_ref().filter(|c| c.action.by_players()) else { return Ok(()) };
    let op = prev.opening.as_ref().ok_or_else(|| fail(rpath, "follows a record that ended the game"))?;
    let mut roles: Vec<&str> = hist.files[rec.index as usize - 1].seats.iter().map(|s| s.role.as_str()).collect();
    roles.sort_unstable();
    let quoted: Vec<&str> = c.orders.iter().map(|o| o.role.as_str()).collect();
    if c.action == ControlAction::Draw && quoted != roles {
        return Err(fail(rpath, format!("control.orders: a draw quotes every seat's order ({}), this one {}", roles.join(", "), quoted.join(", "))));
    }
    if c.action == ControlAction::Resign && (c.orders.len() != 1 || c.orders[0].step != op.step) {
        return Err(fail(rpath, format!("control.orders: a resignation quotes one order of the open step {}", op.step)));
    }
    let now = &hist.files[rec.index as usize - 1];
    for (i, o) in c.orders.iter().enumerate() {
        let field = format!("control.orders[{i}]");
        let ending = check_signed_order(gd, hist, host, rpath, &field, &rec.game, o)?;
        if c.action == ControlAction::Draw && now.wording > 0 {
            check_offer_by_present_holder(gd, now, rpath, &field, o)?;
        }
        let newest = pipeline::newest_receipt(gd, op.step, &o.role).map_err(|e| fail(rpath, e))?;
        let newest = newest.map(|r| (r.step, r.seq));
        if newest != Some((o.step, o.seq)) {
            return Err(fail(rpath, format!("{field}: is not the newest order of {} (receipt {} of step {}; the newest: {newest:?})", o.role, o.seq, o.step)));
        }
        let asks = if c.action == ControlAction::Resign { ending.resign } else { ending.draw == Some(true) };
        if !asks {
            return Err(fail(rpath, format!("{field}: the order of {} does not say `{}`", o.role, if ending.resign || c.action == ControlAction::Resign { "resign = true" } else { "draw = true" })));
        }
    }
    let want = pipeline::players_outcome(game, state, c.action, &c.orders).map_err(|e| fail(rpath, e))?;
    if rec.outcome.as_ref() != Some(&want) {
        return Err(fail(rpath, format!("outcome: is not the outcome of this end ({:?}: {})", want.winner, want.summary)));
    }
    Ok(())
}

/// A draw offer `o` quoted at `field` counts only if signed with the key its seat holds when the
/// draw is made (`now`, the game file in force): a seat change to another key withdrew the earlier
/// holder's offer (SPEC.md "Ending by the players", tester14 T14a-1). Checked in games that carry
/// their report wording (`GameFile::wording`), all made by versions that count offers so; an
/// older game's draw may count an offer the earlier holder made (tester15 T15-4).
fn check_offer_by_present_holder(gd: &GameDir, now: &GameFile, rpath: &Path, field: &str, o: &SignedOrder) -> Result<()> {
    let seat = now.seat(&o.role).ok_or_else(|| fail(rpath, format!("{field}.role: no seat {:?}", o.role)))?;
    let key = sig::public_key_line(&seat.key).map_err(|e| fail(&gd.game_file(), format!("seat {}: {e}", o.role)))?;
    sig::verify(&key, sig::NS_ORDERS, o.text.as_bytes(), &o.signature)
        .map_err(|_| fail(rpath, format!("{field}.signature: a draw offer signed with a key seat {} no longer held when the draw was made (a seat change withdrew it)", o.role)))?;
    Ok(())
}

/// One quoted order: its receipt (present, host-signed, its commitment that of the text), the
/// seat's signature of the text (the key in force after the record the receipt names), and the
/// text's header. Returns what it says of the game's end.
fn check_signed_order(gd: &GameDir, hist: &History, host: &ssh_key::PublicKey, rpath: &Path, field: &str, game_id: &str, o: &SignedOrder) -> Result<Ending> {
    let rp = gd.receipts(o.step).join(format!("{}-{}.toml", o.role, o.seq));
    let rb = store::read(&rp).map_err(|_| fail(rpath, format!("{field}: names receipt {}, which is missing", rp.display())))?;
    let armored = store::read_text(&pipeline::sig_path(&rp)).map_err(|_| fail(&rp, "its host signature (.sig) is missing"))?;
    sig::verify(host, sig::NS_RECEIPT, &rb, &armored).map_err(|e| fail(&rp, format!("host signature: {e}")))?;
    let r: Receipt = toml::from_str(std::str::from_utf8(&rb).unwrap_or("")).map_err(|e: toml::de::Error| fail(&rp, format!("not a receipt: {}", e.message().trim())))?;
    if (r.step, r.role.as_str(), r.seq) != (o.step, o.role.as_str(), o.seq) {
        return Err(fail(&rp, format!("is not receipt {} of {} in step {}", o.seq, o.role, o.step)));
    }
    if r.commitment != hex::encode(commit::order_commitment(game_id, o.step, &o.role, o.text.as_bytes())) {
        return Err(fail(rpath, format!("{field}.text: is not the order receipt {} was issued for (its commitment differs)", rp.display())));
    }
    let gf = hist.file_at(&r.record).ok_or_else(|| fail(&rp, "record: names no record of this game"))?;
    let seat = gf.seat(&o.role).ok_or_else(|| fail(rpath, format!("{field}.role: no seat {:?}", o.role)))?;
    let key = sig::public_key_line(&seat.key).map_err(|e| fail(&gd.game_file(), format!("seat {}: {e}", o.role)))?;
    sig::verify(&key, sig::NS_ORDERS, o.text.as_bytes(), &o.signature)
        .map_err(|e| fail(rpath, format!("{field}.signature: not {}'s signature of the text: {e}", o.role)))?;
    let f = crate::orderfile::parse(&o.text).map_err(|p| fail(rpath, format!("{field}.text: {}", p.message)))?;
    if (f.header.game.as_str(), f.header.step, f.header.role.as_str()) != (game_id, o.step, o.role.as_str()) {
        return Err(fail(rpath, format!("{field}.text: its [pbem] header names another game, step or role")));
    }
    // The receipt's nonce flag tells the order's nonce (SPEC.md "Receipts"), here as for every
    // order a record reveals (tester15 T15-2).
    if r.nonce == f.header.nonce.is_empty() {
        let line = std::str::from_utf8(&rb).ok().and_then(|t| t.lines().position(|l| l.starts_with("nonce = ")).map(|i| i + 1));
        let has = if f.header.nonce.is_empty() { "no nonce" } else { "a nonce" };
        return Err(AuditFailure::new(AuditCheck::History, &rp, format!("nonce: says {}, but the order it receipts has {has}", r.nonce)).at_line(line).into());
    }
    Ok(f.ending)
}
