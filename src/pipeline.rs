//! The turn pipeline: create a game, take orders in (`submit`), resolve due steps (`adjudicate`),
//! and tell where a game stands (`status`). Every step's data flow is in ARCHITECTURE.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use rand_chacha::ChaCha20Rng;
use rand_chacha::rand_core::{Rng, SeedableRng};

use crate::commit::{self, NMR_NONCE};
use crate::dice::Ctx;
use crate::error::{Error, Missing, Result, Setting};
use crate::game::{DynGame, Orders, Outcome, Pending, Publication};
use crate::model::{self, Control, ControlAction, GameFile, LateReveal, Opening, Receipt, Record, Resolution, Revealed, Seat, SignedOrder, WithheldUntil};
use crate::nonces::{self, Brief, NonceIndex};
use crate::orderfile;
use crate::report;
use crate::sig;
use crate::store::{self, GameDir};
pub use crate::when::{parse_time, timestamp};

pub use crate::sig::{NS_ORDERS, NS_RECEIPT, NS_RECORD};

/// The largest order file, or detached signature (`FILE.sig`), that `submit`, `verify` and
/// `sign` read: 1 MiB, hundreds of times a real order. A larger file is refused by its length
/// before it is read, so a huge file cannot take the judge's memory.
pub const MAX_ORDER_FILE_BYTES: u64 = 1 << 20;

/// Reads an order file given to `submit`, `verify` or `sign`, at most [`MAX_ORDER_FILE_BYTES`].
pub fn read_order_file(path: &Path) -> Result<Vec<u8>> {
    store::read_limited(path, MAX_ORDER_FILE_BYTES, "an order file")
}

/// Reads a detached signature file (`FILE.sig`), at most [`MAX_ORDER_FILE_BYTES`], as text.
pub fn read_sig_file(path: &Path) -> Result<String> {
    store::read_text_limited(path, MAX_ORDER_FILE_BYTES, "a signature file")
}

/// Where the host's secret randomness (host seeds, keys) comes from.
pub enum Entropy {
    /// The operating system (every real game).
    Os,
    /// A seeded ChaCha20 stream (`pbem demo --seed`, tests): the whole game is reproducible.
    Seeded(Box<ChaCha20Rng>),
}

impl Entropy {
    /// A seeded source.
    pub fn seeded(seed: [u8; 32]) -> Self {
        Entropy::Seeded(Box::new(ChaCha20Rng::from_seed(seed)))
    }
    /// 32 fresh bytes.
    pub fn bytes32(&mut self) -> [u8; 32] {
        match self {
            Entropy::Os => commit::fresh_32(),
            Entropy::Seeded(r) => {
                let mut b = [0u8; 32];
                r.fill_bytes(&mut b);
                b
            }
        }
    }
}

/// Where "now" comes from. A run that waits for a lock reads the system clock only once it holds
/// the lock, so a record or receipt written by a concurrent run while it waited is never taken for
/// a clock that jumped back (issue: "a run that finds a record written a moment ago by a concurrent
/// run must not call it a clock jump"). `Fixed` is `--now` (tests, replaying a time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// The system clock, read when asked.
    System,
    /// Always this time.
    Fixed(DateTime<Utc>),
}

impl Clock {
    /// The time now, by this clock.
    pub fn now(self) -> DateTime<Utc> {
        match self {
            Clock::System => Utc::now(),
            Clock::Fixed(t) => t,
        }
    }
}

impl From<DateTime<Utc>> for Clock {
    fn from(t: DateTime<Utc>) -> Self {
        Clock::Fixed(t)
    }
}

/// Everything needed to create a game (`pbem new`).
pub struct NewGame {
    /// Game id; `None` takes the directory's name.
    pub id: Option<String>,
    /// Rules id.
    pub rules: String,
    /// Scenario file; `None` uses the game's shipped scenario.
    pub scenario: Option<PathBuf>,
    /// `--option K=V` values.
    pub options: BTreeMap<String, String>,
    /// The seats.
    pub seats: Vec<Seat>,
    /// Deadline policy.
    pub deadlines: model::Deadlines,
    /// What missing orders become.
    pub nmr: model::NmrPolicy,
    /// The report wording the game keeps ([`report::WORDING`]; an earlier one only to make, in
    /// tests, a game as an earlier version did: `pbem new --wording`, hidden).
    pub wording: u32,
}

/// A loaded game: its directory, game file, rules and the newest record.
pub struct Loaded {
    /// The directory.
    pub dir: GameDir,
    /// `game.toml`.
    pub gf: GameFile,
    /// The rules.
    pub game: &'static dyn DynGame,
    /// The newest record.
    pub record: Record,
    /// The state text after it.
    pub state: String,
    /// The newest record's bytes as read (hashed for the next record's `prev` only when one is
    /// made: [`Loaded::record_sha256`]).
    pub record_bytes: Vec<u8>,
    /// The host's state key (`host/state_key.hex`) as read, `None` if it could not be read (a
    /// copy without it; a new record reads it again for its error: [`Loaded::host_state_key`]).
    pub state_key: Option<[u8; 32]>,
}

impl Loaded {
    /// The SHA-256 of the newest record's bytes (64 hex digits): the next record's `prev`.
    pub fn record_sha256(&self) -> String {
        commit::sha256_hex(&self.record_bytes)
    }

    /// The host's state key, which a new record's state commitment takes: as [`load`] read it,
    /// or read again for the error that it could not be read.
    fn host_state_key(&self) -> Result<[u8; 32]> {
        match self.state_key {
            Some(key) => Ok(key),
            None => read_state_key(&self.dir),
        }
    }
}

/// Looks up rules by id with an error listing the known ones.
pub fn rules(id: &str) -> Result<&'static dyn DynGame> {
    crate::games::by_rules(id)
        .ok_or_else(|| Error::Usage(format!("unknown rules {id:?}; known: {}", crate::games::rules_ids().join(", "))))
}

/// [`rules`] for an id the caller gave for a new game (`--rules`): an unknown one is a refused
/// setting ([`Error::Setting`], [`Setting::Rules`]) listing the known ids.
pub fn given_rules(id: &str) -> Result<&'static dyn DynGame> {
    crate::games::by_rules(id).ok_or_else(|| Error::setting(Setting::Rules(id.to_string()), format!("one of {}", crate::games::rules_ids().join(", "))))
}

/// Whether `id` may name a new game: 1-64 ASCII letters, digits, `-`, `_` and `.`, not starting
/// with `.` (tester t18b-2: `.` and `..` were taken, and the mail marks and site folders named by
/// the id then named the folder itself or its parent) nor `-` (t18c-7: `GAME.tar` then reads as
/// an option: `pbem audit -x.tar`).
fn valid_id(id: &str) -> bool {
    safe_id(id) && !id.starts_with(['.', '-'])
}

/// Whether a game file's `id` can name files and folders (the mail marks, the site's pages): what
/// [`valid_id`] took before it refused a leading `.`, less `.` and `..`.
pub fn safe_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.') && id != "." && id != ".."
}

/// Reads and parses `game.toml` of `dir`.
pub fn read_game_file(dir: &GameDir) -> Result<GameFile> {
    read_game_file_known(dir, None).map(|(_, gf)| gf)
}

/// The dotted name of the TOML key written on line `line` (from 1) of `text`, under the table
/// header above it: `deadlines.default_hours`; `None` for a line that holds no `key = value`.
fn key_at_line(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let key = lines.get(line.checked_sub(1)?)?.split_once('=')?.0.trim();
    if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || "_-.\"".contains(c)) {
        return None;
    }
    let table = lines[..line - 1].iter().rev().map(|l| l.trim()).find(|l| l.starts_with('['));
    Some(match table.map(|t| t.trim_matches(|c| c == '[' || c == ']').trim()) {
        Some(t) => format!("{t}.{key}"),
        None => key.to_string(),
    })
}

/// A game file read before: its bytes and what they parse to ([`read_game_file_known`]).
pub type KnownGameFile<'a> = (&'a [u8], &'a GameFile);

/// [`read_game_file`], with the bytes read; when they are those of `known` (read earlier in
/// this run), its parse is taken instead of parsing them again.
pub fn read_game_file_known(dir: &GameDir, known: Option<KnownGameFile<'_>>) -> Result<(Vec<u8>, GameFile)> {
    let path = dir.game_file();
    // Read at once (no `stat` first); one that cannot be read otherwise (permission denied)
    // fails with the reason.
    // A regular file only (a FIFO there would hold every run over the root); a folder, FIFO or
    // device named game.toml fails naming that file, not as a missing one (tester9 D8).
    let bytes = match store::read_regular(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::input(dir.root.clone(), "not a pbem game directory (no game.toml)"));
        }
        read => read.map_err(|e| store::io(&path, e))?,
    };
    if let Some((_, gf)) = known.filter(|(b, _)| *b == bytes.as_slice()) {
        return Ok((bytes, gf.clone()));
    }
    let text = String::from_utf8(bytes).map_err(|e| Error::input(&path, format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to())))?;
    let gf: GameFile = toml::from_str(&text).map_err(|e: toml::de::Error| {
        let line = e.span().map(|s| orderfile::line_of(&text, s.start));
        Error::Input { field: line.and_then(|l| key_at_line(&text, l)), line, file: path.clone(), message: e.message().trim().to_string() }
    })?;
    if !safe_id(&gf.id) {
        let line = text.lines().position(|l| l.trim_start().starts_with("id")).map(|i| i + 1);
        return Err(Error::Input { file: path, line, field: Some("id".into()), message: format!("{:?} cannot name a game: use 1-64 ASCII letters, digits, '-', '_' or '.' (not `.` or `..`)", gf.id) });
    }
    for (i, s) in gf.seats.iter().enumerate() {
        if let Some(Err(message)) = s.time_zone.as_deref().map(crate::when::parse_zone) {
            let line = text.find(&format!("{:?}", s.time_zone.as_deref().unwrap_or_default())).map(|at| orderfile::line_of(&text, at));
            return Err(Error::Input { file: path, line, field: Some(format!("seat[{i}].time_zone")), message });
        }
    }
    if gf.wording > report::WORDING {
        let line = text.lines().position(|l| l.starts_with("wording")).map(|i| i + 1);
        return Err(Error::Input { file: path, line, field: Some("wording".into()), message: format!(
            "{}: this game's reports use report wording {}, which this pbem ({}) does not know (it knows up to {}): audit and continue the game with a newer pbem",
            gf.wording, gf.wording, env!("CARGO_PKG_VERSION"), report::WORDING
        ) });
    }
    // Hours above [`model::MAX_HOURS`] are refused where a game is made, not here: a game an
    // earlier version made may hold more (`--deadline-hours 9000` was accepted), and every time
    // worked out from them is checked (`when::later`), so such a game goes on to its end.
    Ok((text.into_bytes(), gf))
}

/// Loads a game directory at its newest record.
pub fn load(dir: &Path) -> Result<Loaded> {
    load_known(dir, None)
}

/// [`load`], with `game.toml` parsed again only if its bytes are not those of `known`
/// ([`read_game_file_known`]).
pub fn load_known(dir: &Path, known: Option<KnownGameFile<'_>>) -> Result<Loaded> {
    let dir = GameDir::new(dir);
    let (_, gf) = read_game_file_known(&dir, known)?;
    let game = rules(&gf.rules)?;
    let n = dir.last_record()?.ok_or_else(|| Error::input(dir.record(0), "missing: the game has no records"))?;
    let path = dir.record(n);
    let text = store::read_text(&path)?;
    let record: Record = parse_json(&path, &text)?;
    let state = store::read_text(&dir.state(n))?;
    // The host's copy has the key; a copy without it (a finished game published whole) takes it
    // from the last record, where it is revealed.
    let state_key = read_state_key(&dir).ok();
    if let Some(key) = state_key.or_else(|| record.state_key.as_deref().and_then(commit::parse_32))
        && state_commitment(&gf.id, n, &key, &state) != record.state
    {
        return Err(Error::input(dir.state(n), format!("state does not match the state commitment in record {n}")));
    }
    Ok(Loaded { dir, gf, game, record, state, record_bytes: text.into_bytes(), state_key })
}

/// [`load`] for a command that holds the game's lock (an adjudication, a host control, an
/// order's intake): first it clears what a run killed before its record left ([`clear_unwritten`]).
pub(crate) fn load_locked(dir: &Path) -> Result<Loaded> {
    load_locked_known(dir, None)
}

/// [`load_locked`] with `game.toml` parsed again only if its bytes are not those of `known`
/// ([`load_known`]).
fn load_locked_known(dir: &Path, known: Option<KnownGameFile<'_>>) -> Result<Loaded> {
    let g = load_known(dir, known)?;
    clear_unwritten(&g)?;
    Ok(g)
}

/// Clears what a run killed before the record after `g`'s newest (its commit point) left: that
/// record's signature, state and reports, their temp files, and the host-side files only that
/// record would have reached (the next step's host seed and the open step's withheld orders; the
/// open step's seed, which a record did reach, stays). The record's file is the commit point:
/// such a run did not happen (a due step is resolved again, a control may be given again). With
/// the game's lock held, nothing of this is being written. The signature is written first
/// ([`stage_record`]), so nothing else is looked for without it or the state or reports.
fn clear_unwritten(g: &Loaded) -> Result<()> {
    let d = &g.dir;
    let n = g.record.index + 1;
    let (record, state, reports) = (d.record(n), d.state(n), d.reports(n));
    let mut cleared = remove_if_there(&sig_path(&record))? | remove_if_there(&state)?;
    match std::fs::remove_dir_all(&reports) {
        Ok(()) => cleared = true,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(store::io(&reports, e)),
    }
    if !cleared {
        return Ok(());
    }
    if let Some(op) = &g.record.opening {
        remove_if_there(&d.host_seed(op.step + 1))?;
        for ask in &op.asks {
            remove_if_there(&d.withheld(op.step, &ask.role))?;
        }
    }
    let name = format!("{n:06}.json");
    store::remove_temps_of(&d.records(), &name)?;
    store::remove_temps_of(&d.records(), &format!("{name}.sig"))?;
    store::remove_temps_of(&d.states(), &name)?;
    Ok(())
}

/// Clears what a step whose record its group left out ([`store::Veto`]) left of the game in
/// `dir`, as a run killed right before the record would have ([`clear_unwritten`]), under the
/// game's lock: a game no later pass of the run loads again would otherwise fail the audit
/// until the next run (tester t25c-3). Errors: the lock's (another run holds the game: it clears
/// them itself) or the removals'.
pub fn clear_left_out(dir: &Path) -> Result<()> {
    let _lock = GameDir::new(dir).lock()?;
    load_locked_known(dir, None).map(drop)
}

/// Removes the file at `path`; whether it was there.
fn remove_if_there(path: &Path) -> Result<bool> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(store::io(path, e)),
    }
}

/// The game's secret state key, from `host/state_key.hex`.
pub fn read_state_key(dir: &GameDir) -> Result<[u8; 32]> {
    let path = dir.state_key();
    commit::parse_32(&store::read_text(&path)?).ok_or_else(|| Error::input(&path, "not 64 hex digits"))
}

/// The state commitment a record carries (hex; SPEC.md "State commitment").
pub fn state_commitment(game: &str, index: u64, key: &[u8; 32], state: &str) -> String {
    hex::encode(commit::state_commitment(game, index, key, state.as_bytes()))
}

/// Whether the game in `dir` is over: its newest record states the outcome (read for that field
/// alone).
pub fn is_over(dir: &GameDir) -> Result<bool> {
    #[derive(serde::Deserialize)]
    struct Ending {
        outcome: Option<serde::de::IgnoredAny>,
    }
    let n = dir.last_record()?.ok_or_else(|| Error::input(dir.record(0), "missing: the game has no records"))?;
    Ok(read_json::<Ending>(dir.record(n))?.outcome.is_some())
}

/// Reads and parses record `n`.
pub fn read_record(dir: &GameDir, n: u64) -> Result<Record> {
    read_json(dir.record(n))
}

/// Reads record `n` for what a new step needs of it ([`model::Trail`]): cheaper than
/// [`read_record`], which a step calls only for the newest record.
fn read_trail(dir: &GameDir, n: u64) -> Result<model::Trail> {
    read_json(dir.record(n))
}

/// A JSON file parsed as `T`; a parse error names the file and line.
fn read_json<T: serde::de::DeserializeOwned>(path: PathBuf) -> Result<T> {
    let text = store::read_text(&path)?;
    parse_json(&path, &text)
}

/// Parses `text`, read from `path`, as JSON; an error names the file and line.
fn parse_json<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<T> {
    serde_json::from_str(text).map_err(|e| Error::Input { file: path.to_owned(), line: Some(e.line()), field: None, message: e.to_string() })
}

pub(crate) fn host_key(dir: &GameDir) -> Result<ssh_key::PrivateKey> {
    Ok(sig::load_private_key(&dir.host_key(), None)?)
}

/// `FILE.sig` beside `FILE`.
pub fn sig_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".sig");
    PathBuf::from(s)
}

/// Opens the next step for `state` (draws its host seed, put in `files` for the record's commit)
/// or states the outcome.
#[allow(clippy::too_many_arguments)]
fn open_next(
    files: &mut Vec<(PathBuf, Vec<u8>)>,
    dir: &GameDir,
    gf: &GameFile,
    game: &dyn DynGame,
    state: &str,
    step: u64,
    now: DateTime<Utc>,
    entropy: &mut Entropy,
) -> Result<(Option<Opening>, Option<crate::game::Outcome>)> {
    match game.pending(state)? {
        Pending::Over(o) => Ok((None, Some(o))),
        Pending::Orders(asks) => {
            let seed = entropy.bytes32();
            files.push((dir.host_seed(step), format!("{}\n", hex::encode(seed)).into_bytes()));
            let hours = gf.deadlines.hours_for(asks.iter().map(|a| a.kind.as_str()));
            // Never a time past year 9999 (the records could not be read back).
            let deadline = crate::when::later_hours(now, hours).map_err(|e| Error::Refused(format!("step {step}'s deadline: {e}")))?;
            // Nor a step that could never be resolved: its deadline and grace are worked out too.
            crate::when::later_hours(deadline, gf.deadlines.grace_hours).map_err(|e| Error::Refused(format!("step {step}'s deadline and grace: {e}")))?;
            let opening = Opening {
                step,
                host_seed_commitment: hex::encode(commit::host_seed_commitment(&gf.id, step, &seed)),
                opened: timestamp(now),
                deadline: timestamp(deadline),
                asks,
                paused: None,
            };
            Ok((Some(opening), None))
        }
    }
}

/// Writes the record's signature, then `files` (the host seed of the step it opens, withheld
/// orders), state and reports for record `rec.index`, and returns them with the record (the
/// commit point) left waiting ([`store::Staged`]): its `commit` makes them durable together and
/// then writes the record; a sweep lets it wait in a [`store::Group`]. `events` is the step's full
/// event list (the record holds only the public ones). A run killed before the record leaves the
/// step to be redone; whatever it wrote is cleared by the next run that holds the game's lock
/// ([`clear_unwritten`]), and the signature written first marks it for the due index's check.
#[allow(clippy::too_many_arguments)]
pub(crate) fn stage_record(
    mut files: Vec<(PathBuf, Vec<u8>)>,
    dir: &GameDir,
    gf: &GameFile,
    game: &dyn DynGame,
    rec: &Record,
    events: &[crate::dice::Event],
    state: &str,
    key: &ssh_key::PrivateKey,
) -> Result<store::Staged> {
    // Every report is rendered before anything is written: a template that fails (e.g. an
    // override without the pin block) leaves the game as it was.
    // The record's bytes are made and hashed once: every report pins them, the signature signs them.
    let env = report::shared_environment(report::override_dir())?;
    let bytes = model::record_bytes(rec);
    let sha256 = commit::sha256_hex(&bytes);
    let pinned = report::Pinned { record: rec, sha256: &sha256, earlier_wording: false };
    let mut texts = Vec::new();
    for seat in &gf.seats {
        texts.push((dir.report(rec.index, &seat.role), report::render_pinned(&env, game, gf, pinned, events, state, &seat.role)?));
    }
    let path = dir.record(rec.index);
    files.insert(0, (sig_path(&path), sig::sign(key, NS_RECORD, &bytes)?.into_bytes()));
    files.push((dir.state(rec.index), state.as_bytes().to_vec()));
    files.extend(texts.into_iter().map(|(path, text)| (path, text.into_bytes())));
    store::stage(&files, store::CommitPoint::new(path, bytes).of_game(&dir.root))
}

/// Hash binding the setup (game file and scenario bytes) into record 0.
pub fn setup_hash(game_toml: &[u8], scenario: &[u8]) -> String {
    let mut all = Vec::new();
    for part in [game_toml, scenario] {
        all.extend((part.len() as u64).to_be_bytes());
        all.extend(part);
    }
    commit::sha256_hex(&all)
}

/// The scenario text for `pbem new --scenario ARG`: the game's default without one; the file ARG
/// if it exists; else the shipped scenario named ARG. Errors name the file or list the names.
pub fn scenario_text(game: &dyn DynGame, arg: Option<&Path>) -> Result<String> {
    let Some(p) = arg else { return Ok(game.default_scenario().to_string()) };
    if p.is_file() {
        return store::read_text(p);
    }
    let name = p.to_string_lossy();
    match game.scenarios().iter().find(|(n, _)| *n == name) {
        Some((_, text)) => Ok(text.to_string()),
        // A FIFO, a device or a folder: refused, saying what it is (not "no such file").
        None if p.exists() => store::read_text(p),
        None => Err(Error::input(
            p,
            format!(
                "no such file, nor a scenario shipped with {}: {}",
                game.title(),
                game.scenarios().iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            ),
        )),
    }
}

/// Checks a deadline policy: at least one hour for every deadline, at most
/// [`model::MAX_HOURS`] for any deadline or grace, and only kinds of step the game asks.
pub fn check_deadlines(d: &model::Deadlines, kinds: &[&str]) -> Result<()> {
    let too_long = format!("at most {} hours (a year)", model::MAX_HOURS);
    if d.default_hours == 0 {
        return Err(Error::setting(Setting::DefaultDeadline(0), "deadline hours must be at least 1"));
    }
    if d.default_hours > model::MAX_HOURS {
        return Err(Error::setting(Setting::DefaultDeadline(d.default_hours), too_long));
    }
    if d.grace_hours > model::MAX_HOURS {
        return Err(Error::setting(Setting::Grace(d.grace_hours), too_long));
    }
    for (k, h) in &d.kinds {
        let refuse = |message: String| Err(Error::setting(Setting::Deadline { kind: k.clone(), hours: *h }, message));
        if !kinds.contains(&k.as_str()) {
            return refuse(format!("this game has no step kind {k:?}; kinds: {}", kinds.join(", ")));
        }
        if *h == 0 {
            return refuse("deadline hours must be at least 1".into());
        }
        if *h > model::MAX_HOURS {
            return refuse(too_long.clone());
        }
    }
    Ok(())
}

/// A [`NewGame`] checked against its rules, before anything is written: the game id, the
/// scenario text, the set-up state and the game's roles.
struct CheckedNew {
    id: String,
    scenario: String,
    state: String,
    roles: Vec<String>,
}

/// Checks `new` for `game` in `dir` in the order a host fixes them: the folder, the id, the
/// scenario and options, one seat per role with a good key and time zone, the deadlines.
fn check_new(game: &dyn DynGame, dir: &Path, new: &mut NewGame) -> Result<CheckedNew> {
    if dir.exists() && std::fs::read_dir(dir).map_err(|e| store::io(dir, e))?.next().is_some() {
        return Err(Error::input(dir, "already exists and is not empty; choose a new directory"));
    }
    let id = match &new.id {
        Some(id) => id.clone(),
        None => dir.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string(),
    };
    if !valid_id(&id) {
        return Err(Error::setting(Setting::GameId(id), "use 1-64 ASCII letters (a-z, A-Z), digits, '-', '_' or '.', not starting with '.' or '-'"));
    }
    let scenario = scenario_text(game, new.scenario.as_deref())?;
    crate::options::check_options(&new.options)?;
    let state = game.check_new_scenario(&scenario).and_then(|()| game.setup(&scenario, &crate::options::rules_options(&new.options))).map_err(|e| match &new.scenario {
        Some(p) => Error::input(p, e.to_string()),
        None => Error::Game(e),
    })?;
    let roles = game.roles(&state)?;
    canonical_roles(&mut new.seats, &roles);
    check_seats(&new.seats, &roles)?;
    check_sides(game, &state, &new.seats, None)?;
    check_deadlines(&new.deadlines, game.ask_kinds())?;
    Ok(CheckedNew { id, scenario, state, roles })
}

/// Each seat's role as the game spells it when it matches one without regard to case
/// (`Union` is `union`): the game file stores the game's name (README "Roles").
fn canonical_roles(seats: &mut [Seat], roles: &[String]) {
    for s in seats {
        if let Some(r) = roles.iter().find(|r| r.eq_ignore_ascii_case(s.role.trim())) {
            s.role = r.clone();
        }
    }
}

/// Exactly one seat for each of `roles`, each with a key pbem accepts and a known time zone.
fn check_seats(seats: &[Seat], roles: &[String]) -> Result<()> {
    let mut given: Vec<String> = seats.iter().map(|s| s.role.clone()).collect();
    given.sort();
    let mut want = roles.to_vec();
    want.sort();
    if given != want {
        return Err(Error::Missing(Missing::Seats { roles: want, given }));
    }
    for s in seats {
        crate::mail::compose::check_seat_address(&s.email).map_err(|e| Error::setting(Setting::SeatEmail { role: s.role.clone() }, format!("{:?}: {e}", s.email)))?;
        sig::public_key_line(&s.key).map_err(|e| Error::setting(Setting::SeatKey { role: s.role.clone() }, e.to_string()))?;
        if let Some(z) = &s.time_zone {
            crate::when::parse_zone(z).map_err(|e| Error::setting(Setting::TimeZone { role: s.role.clone() }, e.to_string()))?;
        }
    }
    Ok(())
}

/// Whether two OpenSSH public key lines hold the same key (their comments aside).
pub fn same_key(a: &str, b: &str) -> bool {
    let body = |k: &str| k.split_whitespace().take(2).collect::<Vec<_>>().join(" ");
    body(a) == body(b)
}

/// Refuses two seats of different sides (teams, in a game without teams each seat its own) that
/// share an address ([`crate::mail::compose::same_address`]) or a key: one player would hold both,
/// and in Flag Dash get the other team's plans. With `only`, just the pairs with that seat (a
/// seat change). Seats of one team may share them (one player holding two seats of a side).
pub fn check_sides(game: &dyn DynGame, state: &str, seats: &[Seat], only: Option<&str>) -> Result<()> {
    for (i, a) in seats.iter().enumerate() {
        for b in &seats[i + 1..] {
            if only.is_some_and(|r| a.role != r && b.role != r) {
                continue;
            }
            let shared = if crate::mail::compose::same_address(&a.email, &b.email) {
                "address"
            } else if same_key(&a.key, &b.key) {
                "key"
            } else {
                continue;
            };
            if game.team(state, &a.role)? != game.team(state, &b.role)? {
                let (changed, other) = if only == Some(b.role.as_str()) { (b, a) } else { (a, b) };
                return Err(Error::Usage(format!("seat {} would share its {shared} with seat {} of another side: one player may not hold both", changed.role, other.role)));
            }
        }
    }
    Ok(())
}

/// Makes the host's folders and writes the host key and the state key; returns the state key.
/// host/ holds the host key, unrevealed seeds and sealed orders; states/ what the rules keep
/// secret; reports/ each role's own report: for the host's eyes only on a shared machine
/// (README "What is public").
fn write_host_files(gd: &GameDir, key: &ssh_key::PrivateKey, entropy: &mut Entropy) -> Result<[u8; 32]> {
    let host_dir = gd.host_key().parent().expect("host dir").to_path_buf();
    for private in [host_dir, gd.states(), gd.root.join("reports")] {
        std::fs::create_dir_all(&private).map_err(|e| store::io(&private, e))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).map_err(|e| store::io(&private, e))?;
        }
    }
    sig::write_private_key(&gd.host_key(), key)?;
    // Its public half is in game.toml; the copy in host/ is the host's like the rest of host/.
    store::make_private(&gd.host().join("host_key.pub"))?;
    // The secret salt of every record's state commitment, revealed by the last record.
    let state_key = entropy.bytes32();
    store::write_atomic(&gd.state_key(), format!("{}\n", hex::encode(state_key)).as_bytes())?;
    Ok(state_key)
}

/// Creates a game in `dir` (which must not exist or be empty): game file, scenario copy, host key,
/// initial state, record 0 with the first step's opening, and the first reports.
///
/// Errors: unknown rules, bad scenario/option, seats not matching the game's roles, bad keys.
/// A seat's role in another case than the game's (`Union`) is stored as the game spells it.
///
/// The game is built in a hidden folder beside `dir` ([`store::make_new_folder`]: the sweep and
/// the mail runs skip hidden names) and renamed into place as the last step, so a killed `new`
/// leaves no half-made game where a game is looked for.
pub fn create(dir: &Path, mut new: NewGame, now: DateTime<Utc>, entropy: &mut Entropy) -> Result<GameFile> {
    let game = given_rules(&new.rules)?;
    let checked = check_new(game, dir, &mut new)?;
    let place = if dir.file_name().is_some() { dir.to_path_buf() } else { dir.canonicalize().map_err(|e| store::io(dir, e))? };
    let name = place.file_name().and_then(|n| n.to_str()).ok_or_else(|| Error::input(dir, "cannot hold a new game; choose a new directory"))?;
    let parent = place.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let tmp = store::make_new_folder(parent, name)?;
    let made = build_game(game, &tmp, checked, new, now, entropy).and_then(|gf| move_into_place(&tmp, &place).map(|()| gf));
    if made.is_err() {
        let _ = std::fs::remove_dir_all(&tmp);
    }
    made
}

/// Renames the game built in `tmp` to `dir` (an empty folder there is replaced, its mode kept),
/// then syncs the folder holding it, so the rename lasts.
fn move_into_place(tmp: &Path, dir: &Path) -> Result<()> {
    if let Ok(meta) = std::fs::metadata(dir) {
        std::fs::set_permissions(tmp, meta.permissions()).map_err(|e| store::io(tmp, e))?;
    }
    std::fs::rename(tmp, dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::DirectoryNotEmpty | std::io::ErrorKind::AlreadyExists => Error::input(dir, "already exists and is not empty; choose a new directory"),
        _ => store::io(dir, e),
    })?;
    store::sync_together(std::iter::once(dir))
}

/// Builds the game `checked` in the folder `dir`: host files, game file, scenario, record 0.
fn build_game(game: &'static dyn DynGame, dir: &Path, checked: CheckedNew, new: NewGame, now: DateTime<Utc>, entropy: &mut Entropy) -> Result<GameFile> {
    let CheckedNew { id, scenario, state, roles } = checked;
    let gd = GameDir::new(dir);
    let key = key_from_seed(&entropy.bytes32(), &format!("pbem-host@{id}"));
    let state_key = write_host_files(&gd, &key, entropy)?;
    let mut seats = new.seats;
    seats.sort_by_key(|s| roles.iter().position(|r| *r == s.role));
    let gf = GameFile {
        pbem: env!("CARGO_PKG_VERSION").to_string(),
        wording: new.wording,
        id,
        rules: new.rules,
        options: new.options,
        host_key: key.public_key().to_openssh().map_err(|e| Error::Key(e.to_string()))?,
        deadlines: new.deadlines,
        nmr: new.nmr,
        seats,
    };
    let gf_text = toml::to_string(&gf).expect("game file serializes");
    store::write_atomic(&gd.scenario_file(), scenario.as_bytes())?;
    store::write_atomic(&gd.game_file(), gf_text.as_bytes())?;
    let mut files = Vec::new();
    let (opening, outcome) = open_next(&mut files, &gd, &gf, game, &state, 1, now, entropy)?;
    let rec = Record {
        reveals: Vec::new(),
        game: gf.id.clone(),
        index: 0,
        prev: None,
        setup: Some(setup_hash(gf_text.as_bytes(), scenario.as_bytes())),
        control: None,
        resolution: None,
        state: state_commitment(&gf.id, 0, &state_key, &state),
        state_key: outcome.is_some().then(|| hex::encode(state_key)),
        opening,
        outcome,
    };
    stage_record(files, &gd, &gf, game, &rec, &[], &state, &key)?.commit()?;
    make_order_folders(&gd);
    Ok(gf)
}

/// Makes the folders each step's order folders go in (`host/sealed/`, private, and `receipts/`)
/// with the game, so that a step's first order makes only its own two (`NNNNNN/`). Not the step
/// folders themselves: a receipts folder made less than [`crate::due::FRESH_NS`] before the due
/// index is written keeps the index from being trusted, so the next sweep would load the game.
/// Best effort: an order makes any that is missing ([`store_accepted`]); an empty folder holds
/// no receipt.
fn make_order_folders(dir: &GameDir) {
    let _ = store::make_dirs_in_order(&[&dir.host().join("sealed")], true);
    let _ = store::make_dirs_in_order(&[&dir.root.join("receipts")], false);
}

/// An accepted order: its receipt, where it was stored and any warning for the player.
#[derive(Debug)]
pub struct Accepted {
    /// The receipt (also written, host-signed, under `receipts/`).
    pub receipt: Receipt,
    /// The receipt file.
    pub path: PathBuf,
    /// E.g. "no nonce: this order adds no randomness to the step seed".
    pub warnings: Vec<String>,
    /// The same signed text was accepted before (its receipt came back; nothing changed).
    pub resent: bool,
    /// What the order said of the game's end (`resign`, `draw`).
    pub ending: orderfile::Ending,
    /// Set by [`submit`] when this order ended the game (a resignation, the last draw offer):
    /// the outcome's summary.
    pub ended: Option<String>,
    /// The receipt file's bytes and its signature's, as written (`None` for a resend: read them
    /// from `path`). With [`submit_grouped`] the file may not be written yet.
    pub signed: Option<SignedFile>,
    /// The registered address of the seat whose key signed the order, as the game stood when
    /// the order was checked under the game's lock (a seat change just before is seen).
    pub seat_email: String,
}

/// A file's bytes and its signature file's bytes.
pub type SignedFile = (Vec<u8>, Vec<u8>);

/// An order file read and verified, not yet checked against the game.
pub struct Verified {
    /// The exact signed text.
    pub text: String,
    /// Its armored signature.
    pub signature: String,
    /// The parsed file.
    pub file: orderfile::OrderFile,
}

fn parse_problem(path: &Path, p: orderfile::ParseProblem) -> Error {
    Error::Input { file: path.to_path_buf(), line: p.line, field: p.field, message: p.message }
}

/// Reads an order file (signature appended or in `FILE.sig`), checks it is for this game and a
/// seat, and verifies the signature with that seat's key.
pub fn read_signed_order(path: &Path, gf: &GameFile) -> Result<Verified> {
    verify_order(&OrderInput::file(path), gf, None)
}

/// [`read_signed_order`] for the game in `dir`: an order signed with another seat's key, or with
/// its seat's key before a seat change, says so ([`whose_key`]).
pub fn read_signed_order_in(path: &Path, dir: &GameDir, gf: &GameFile) -> Result<Verified> {
    verify_order(&OrderInput::file(path), gf, Some(dir))
}

/// An order to submit: a file (its signature appended or in `FILE.sig`), or the bytes of one as
/// received (by mail) with the detached signature that came with it; `path` names it in every
/// message either way.
#[derive(Debug, Clone)]
pub struct OrderInput {
    /// The order file, or the name its bytes go by in messages.
    pub path: PathBuf,
    /// The bytes and detached signature received (`None`: read `path` and `path.sig`).
    pub given: Option<(Vec<u8>, Option<String>)>,
    /// Receipts (step, role, seq) that the same message took when an interrupted run handled it
    /// before (intake's mail log): resending one of them is answered with it even when a later
    /// order has replaced it since, as that run would have answered.
    pub taken: Vec<(u64, String, u64)>,
}

impl OrderInput {
    /// The order file at `path`.
    pub fn file(path: &Path) -> OrderInput {
        OrderInput { path: path.to_path_buf(), given: None, taken: Vec::new() }
    }
}

/// [`read_signed_order`] of an [`OrderInput`]. Given bytes are held to the same limit as a file
/// ([`MAX_ORDER_FILE_BYTES`]). With the game's `dir`, a wrong key is named when pbem knows it.
fn verify_order(input: &OrderInput, gf: &GameFile, dir: Option<&GameDir>) -> Result<Verified> {
    let path = input.path.as_path();
    let raw = match &input.given {
        Some((raw, _)) if raw.len() as u64 > MAX_ORDER_FILE_BYTES => return Err(Error::input(path, format!("too large for an order file: {} bytes, the limit is {MAX_ORDER_FILE_BYTES}", raw.len()))),
        Some((raw, _)) => std::borrow::Cow::Borrowed(raw.as_slice()),
        None => std::borrow::Cow::Owned(read_order_file(path)?),
    };
    let normalized = sig::normalize(&raw).map_err(|e| Error::input(path, e.to_string()))?;
    let (body, appended) = sig::split_appended(&normalized);
    let sig_file = sig_path(path);
    let detached = match &input.given {
        _ if appended.is_some() => None,
        Some((_, given)) => given.clone(),
        None if sig_file.exists() => Some(read_sig_file(&sig_file)?),
        None => None,
    };
    if appended.is_none() && detached.is_none() {
        return Err(Error::input(path, format!("not signed: no appended SSH signature and no {} (sign it with `pbem sign --key KEY FILE`)", sig_file.display())));
    }
    let pre = orderfile::parse_remembered(&body).map_err(|p| parse_problem(path, p))?;
    if pre.header.game != gf.id {
        return Err(Error::Input {
            file: path.into(),
            line: orderfile::locate(&body, "pbem.game"),
            field: Some("pbem.game".into()),
            message: format!("order is for game {:?}, this is game {:?}", pre.header.game, gf.id),
        });
    }
    let seat = gf.seat(&pre.header.role).ok_or_else(|| Error::Input {
        file: path.into(),
        line: orderfile::locate(&body, "pbem.role"),
        field: Some("pbem.role".into()),
        message: no_seat(gf, &pre.header.role),
    })?;
    let pk = sig::public_key_line(&seat.key)?;
    let signed = sig::verify_order_text(&pk, NS_ORDERS, &raw, detached.as_deref())
        .map_err(|e| {
            let whose = match &e {
                sig::SigError::WrongKey { found, .. } => whose_key(dir, gf, &seat.role, found).map(|w| format!("; {w}")).unwrap_or_default(),
                _ => String::new(),
            };
            Error::input(path, format!("signature for seat {}: {e}{whose}", seat.role))
        })?;
    // The text signed is most often the body read above, already parsed.
    let file = if signed.text == body { pre } else { orderfile::parse(&signed.text).map_err(|p| parse_problem(path, p))? };
    Ok(Verified { text: signed.text, signature: signed.signature, file })
}

/// Whose key made a signature (fingerprint `found`) refused for seat `role`, when pbem knows:
/// another seat's, or `role`'s own before a seat change (the records of the game in `dir`): the
/// same player's old key, or a former holder's when the change gave the seat another address.
fn whose_key(dir: Option<&GameDir>, gf: &GameFile, role: &str, found: &str) -> Option<String> {
    let holds = |key: &str| sig::public_key_line(key).is_ok_and(|k| sig::fingerprint(&k) == found);
    if let Some(other) = gf.seats.iter().find(|s| s.role != role && holds(&s.key)) {
        return Some(format!("this is seat {}'s key: did you sign seat {role}'s form instead of your own?", other.role));
    }
    let dir = dir?;
    let last = dir.last_record().ok()??;
    (1..=last).rev().find_map(|n| {
        let change = read_record(dir, n).ok()?.control?.seat.filter(|c| c.role == role)?;
        let before: GameFile = toml::from_str(&change.before).ok()?;
        let old = before.seat(role).filter(|s| holds(&s.key))?;
        // A former holder is told the seat is no longer theirs, not to sign again (tester t18a-5).
        Some(if crate::mail::compose::same_address(&old.email, &change.email) {
            format!("this is the key seat {role} held before record {n}, which gave the seat a new key: sign with the new one")
        } else {
            format!("this is the key of seat {role}'s holder before record {n}, which gave the seat to another player ({}){FORMER}", change.email)
        })
    })
}

/// Why an order's `role` names no seat. The header is signed text, so a role in another case is
/// refused too (not rewritten), with the spelling to use.
fn no_seat(gf: &GameFile, role: &str) -> String {
    match gf.seats.iter().find(|s| s.role.eq_ignore_ascii_case(role.trim())) {
        Some(s) => format!("no seat {role:?}: roles are lower case: write role = {:?} (then sign again)", s.role),
        None => format!("no seat {role:?}; seats: {}", gf.seats.iter().map(|s| s.role.as_str()).collect::<Vec<_>>().join(", ")),
    }
}

/// The time of a record: when it was resolved, when the host's control was made, or opened for
/// record 0.
pub fn record_time(rec: &Record) -> Option<DateTime<Utc>> {
    let t = rec
        .resolution
        .as_ref()
        .map(|r| r.resolved.as_str())
        .or(rec.control.as_ref().map(|c| c.at.as_str()))
        .or(rec.opening.as_ref().map(|o| o.opened.as_str()))?;
    parse_time(t).ok()
}

/// Refuses to act when `now` is before the game's newest record: a clock that jumped backwards
/// would write receipts and records out of time order. Errors: [`Error::ClockBehind`] saying so.
pub fn check_clock(g: &Loaded, now: DateTime<Utc>) -> Result<()> {
    match record_time(&g.record) {
        Some(t) if now < t => Err(clock_behind(g, now, &format!("its record {}", g.record.index), t)),
        _ => Ok(()),
    }
}

/// Refuses to act when `now` is before the newest receipt of the open step: resolving then would
/// write a record older than a receipt it uses, which the audit fails forever ("every receipt
/// received while its step was open"), and a new receipt would be older than an earlier one.
pub fn check_clock_receipts(g: &Loaded, receipts: &[(PathBuf, Receipt)], now: DateTime<Utc>) -> Result<()> {
    check_clock_received(g, receipts.iter().map(|(_, r)| (r.received.as_str(), r.seq, r.role.as_str(), r.step)), now)
}

/// [`check_clock_receipts`] over (received, seq, role, step) of each receipt.
fn check_clock_received<'a>(g: &Loaded, receipts: impl Iterator<Item = (&'a str, u64, &'a str, u64)>, now: DateTime<Utc>) -> Result<()> {
    let newest = receipts.filter_map(|r| parse_time(r.0).ok().map(|t| (t, r))).max_by_key(|(t, _)| *t);
    match newest {
        Some((t, (_, seq, role, step))) if now < t => Err(clock_behind(g, now, &format!("receipt {seq} of {role} for step {step}"), t)),
        _ => Ok(()),
    }
}

fn clock_behind(g: &Loaded, now: DateTime<Utc>, what: &str, t: DateTime<Utc>) -> Error {
    Error::ClockBehind(format!(
        "refusing to act on game {}: the clock says {}, before {what} ({}); fix the clock",
        g.gf.id,
        timestamp(now),
        timestamp(t)
    ))
}

/// What the orders of one `submit` share, read once: the nonce index (kept up to date as orders
/// are accepted), the setup hash in force, the newest record's hash, the host key.
#[derive(Default)]
struct Intake {
    index: Option<NonceIndex>,
    setup: Option<String>,
    record: Option<String>,
    key: Option<ssh_key::PrivateKey>,
    /// The receipts of the orders accepted, waiting for one sync of all their files (at the end
    /// of the batch, or in a group: [`submit_grouped`]).
    staged: Vec<store::Staged>,
}

impl Intake {
    /// Writes the waiting receipts now (one sync for all their files and the nonce index).
    fn commit_staged(&mut self, g: &Loaded) -> Result<()> {
        self.write_index(g)?;
        store::commit_all(std::mem::take(&mut self.staged))
    }

    /// Brings the nonce index file up to date with the orders accepted (one append for the
    /// batch, or the file replaced whole after a rebuild), before any of their receipts: it is
    /// made durable by the sync before them ([`store::Staged::also_append`]). A crash before a receipt
    /// leaves the index naming a receipt that is absent, which makes the next submit rebuild it.
    fn write_index(&mut self, g: &Loaded) -> Result<()> {
        let (Some(index), Some(first)) = (self.index.as_mut(), self.staged.first_mut()) else { return Ok(()) };
        let p = nonces::path(&g.dir);
        match index.update() {
            None => return Ok(()),
            Some(nonces::Update::Append(lines)) => first.also_append(p, lines),
            Some(nonces::Update::Replace(text)) => first.also_write(p, text),
        }
        index.written();
        Ok(())
    }

    fn index(&mut self, g: &Loaded, step: u64) -> Result<&mut NonceIndex> {
        if self.index.is_none() {
            self.index = Some(NonceIndex::load(&g.dir, step)?);
        }
        Ok(self.index.as_mut().expect("just loaded"))
    }
}

/// Gets a cached value or computes it.
fn cached<T: Clone>(slot: &mut Option<T>, make: impl FnOnce() -> Result<T>) -> Result<T> {
    if slot.is_none() {
        *slot = Some(make()?);
    }
    Ok(slot.clone().expect("just set"))
}

/// An error about `field` of the order file `path` whose text is `text`, at its line.
fn order_field_error(path: &Path, text: &str, field: &str, message: String) -> Error {
    Error::Input { file: path.into(), line: orderfile::locate(text, field), field: Some(field.into()), message }
}

/// The intake check of one order file against a loaded game: signature, game/step/role, the
/// host-seed commitment, a fresh nonce, legal orders. An accepted order's sealed copy and
/// host-signed receipt wait in `intake` (with what the batch's orders share) until it commits
/// them ([`Intake::commit_staged`], or a group's flush); a rejected one stores nothing. Refused
/// while the clock is behind the newest record ([`check_clock`]).
fn submit_in(g: &Loaded, intake: &mut Intake, input: &OrderInput, now: DateTime<Utc>) -> Result<Accepted> {
    check_clock(g, now)?;
    let path = input.path.as_path();
    let v = verify_order(input, &g.gf, Some(&g.dir))?;
    let (step, asked) = check_order_header(g, &v, path)?;
    let h = &v.file.header;
    let ending = v.file.ending;
    // The same signed text again: an idempotent resend of the order in force gets its receipt back;
    // a resend of a superseded order is refused (it would silently replace the newer one).
    let commitment = hex::encode(commit::order_commitment(&g.gf.id, step, &h.role, v.text.as_bytes()));
    let index = intake.index(g, step)?;
    let last_seq = match check_resend(g, index, (&v, &input.taken), path, step, &commitment, now)? {
        Resend::Fresh { last_seq } => last_seq,
        Resend::Again { path } => {
            // Accepted earlier in this batch: its receipt, waiting, is written first.
            if intake.staged.iter().any(|s| s.point.path == path) {
                intake.commit_staged(g)?;
            }
            let receipt = model::read_receipt(&path)?;
            let warnings = vec![format!("already received as receipt {}: nothing changed", receipt.seq)];
            return Ok(Accepted { receipt, path, warnings, resent: true, ending, ended: None, signed: None, seat_email: seat_email(g, &h.role) });
        }
    };
    let withdrawn = (ending.draw.is_none() && !ending.resign).then(|| index.newest_of(&h.role, step)).flatten().and_then(|at| offered_draw(g, &h.role, at));
    let (nonce, mut warnings) = check_nonce(index, &v, path)?;
    warnings.extend(withdrawn.map(|s| format!("this order withdraws your draw offer (your orders of step {s} offered a draw); to keep the offer, send these orders again with `draw = true` in [orders]")));
    // A resignation, and an unasked seat's draw offer, carry no orders for the game to check.
    if !ending.resign && asked {
        check_legal(g, &v, path)?;
    }
    let (receipt, rpath, signed) = store_accepted(g, intake, &v, step, last_seq + 1, commitment, nonce, now)?;
    Ok(Accepted { receipt, path: rpath, warnings, resent: false, ending, ended: None, signed: Some(signed), seat_email: seat_email(g, &h.role) })
}

/// The registered address of `role` in the loaded game (empty if it has no such seat, which a
/// verified order cannot be for).
fn seat_email(g: &Loaded, role: &str) -> String {
    g.gf.seat(role).map(|s| s.email.clone()).unwrap_or_default()
}

/// The header and ending of the verified order `v` (read from `path`) against the open step:
/// a step is open and it is this one; `resign` stands alone; the seat is asked, or only resigns
/// or offers a draw; a draw needs two sides; the host-seed commitment is the step's. Returns the
/// step and whether the seat is asked.
fn check_order_header(g: &Loaded, v: &Verified, path: &Path) -> Result<(u64, bool)> {
    let h = &v.file.header;
    let at = |field: &str, message: String| order_field_error(path, &v.text, field, message);
    let Some(opening) = &g.record.opening else {
        return Err(at("pbem.step", OVER.into()));
    };
    if h.step != opening.step {
        return Err(at("pbem.step", format!("order is for step {}, but the pending step is {}{}", h.step, opening.step, wrong_step_why(g, &h.role, h.step, opening.step))));
    }
    let ending = v.file.ending;
    if ending.resign && !v.file.orders.is_empty() {
        return Err(at("orders.resign", "`resign = true` stands alone in [orders]: a side that resigns gives no other orders".into()));
    }
    // A seat may resign or offer a draw at any open step; other orders only when asked.
    let asked = opening.asks.iter().any(|a| a.role == h.role);
    let only_ending = (ending.resign || ending.draw.is_some()) && v.file.orders.is_empty();
    if !asked && !only_ending {
        let awaited: Vec<&str> = opening.asks.iter().map(|a| a.role.as_str()).collect();
        return Err(at("pbem.role", format!(
            "step {} asks nothing of {}; it awaits: {} (to resign or offer a draw now, send `resign = true` or `draw = true` alone in [orders])",
            opening.step, h.role, awaited.join(", ")
        )));
    }
    if ending.draw == Some(true) && g.game.sides(&g.state)?.len() < 2 {
        return Err(at("orders.draw", "a game of one side cannot be drawn; `resign = true` ends it as lost".into()));
    }
    if h.host_seed_commitment != opening.host_seed_commitment {
        return Err(at("pbem.host_seed_commitment", format!(
            "{:?} does not match step {}'s host seed commitment {} (start from the step's own form: `pbem form`)",
            crate::text::clip(&h.host_seed_commitment, 80), opening.step, opening.host_seed_commitment
        )));
    }
    Ok((opening.step, asked))
}

/// What every refusal of an order for a step already resolved says ([`wrong_step_why`]): sent
/// again it would be refused again, and a stranger's copy of a revealed order (public once its
/// step is resolved) is no more than that ([`is_late`]).
const LATE: &str = " before this order was taken in";

/// What the refusal of any order for a game that is over says: every order of it is public.
const OVER: &str = "the game is over; no orders are awaited";

/// How the refusal of an order signed with a former holder's key ends ([`whose_key`]).
const FORMER: &str = ": it signs no orders of the seat any more";

/// Whether refusal `message` is of an order signed with the key of a seat's former holder (the
/// seat passed to another address: tester t18a-5).
pub fn is_former_holders(message: &str) -> bool {
    message.contains(FORMER)
}

/// Whether refusal `message` is of an order for a step already resolved ([`LATE`]), or for a game
/// that is over ([`OVER`]): one that sending again cannot mend, and that anyone may have sent,
/// since the order's signed text may be public (tester t18c-3).
pub fn is_late(message: &str) -> bool {
    message.contains(LATE) || message.contains(OVER)
}

/// How many records back [`wrong_step_why`] looks for the one that resolved an order's step.
const LATE_LOOKBACK: u64 = 8;

/// Why an order of `role` for `step` came when `pending` is open, after "the pending step is N": a
/// step not open yet; or, for an earlier step, when it was resolved and why then (its deadline had
/// passed, or every order was in), and whether the seat's orders in it were an earlier order's
/// (then this may be a resend) or none (this one came too late). The record is looked for among the newest
/// [`LATE_LOOKBACK`]; an older step is said to be resolved, no more.
fn wrong_step_why(g: &Loaded, role: &str, step: u64, pending: u64) -> String {
    if step > pending {
        return format!(" (step {step} is not open yet)");
    }
    let lowest = g.record.index.saturating_sub(LATE_LOOKBACK).max(1);
    let found = (lowest..=g.record.index).rev().find_map(|n| {
        let rec = if n == g.record.index { g.record.clone() } else { read_record(&g.dir, n).ok()? };
        let res = rec.resolution.as_ref().filter(|r| r.step == step)?.clone();
        let deadline = read_record(&g.dir, n - 1).ok().and_then(|p| p.opening).map(|o| o.deadline);
        Some((res, deadline))
    });
    let Some((res, deadline)) = found else {
        return format!(": step {step} was resolved{LATE}");
    };
    // Before the grace after the deadline ends only every order being in resolves a step.
    let grace = g.gf.deadlines.grace_hours;
    let due = |d: DateTime<Utc>| crate::when::later_hours(d, grace).unwrap_or(d);
    let why = match deadline.as_deref().and_then(|d| parse_time(d).ok()).zip(parse_time(&res.resolved).ok()) {
        Some((d, r)) if r >= due(d) && grace > 0 => format!(" (its deadline and the {grace} hour{} of grace after it had passed)", if grace == 1 { "" } else { "s" }),
        Some((d, r)) if r >= due(d) => " (its deadline had passed)".into(),
        Some(_) => " (every order was in)".into(),
        None => String::new(),
    };
    let seat = match res.orders.iter().find(|o| o.role == role).map(|o| o.seq) {
        Some(Some(seq)) => format!("; it counted your seat's order of receipt {seq} (is this one sent again?)"),
        Some(None) => "; your seat had no orders in it".into(),
        None => String::new(),
    };
    // In the seat's time zone, as the reply's other times are (tester18 T18-6).
    let at = parse_time(&res.resolved).map(|t| crate::when::long(t, g.gf.zone_of(role))).unwrap_or_else(|_| res.resolved.clone());
    format!(": step {step} was resolved at {at}{why}{LATE}{seat}")
}

/// Whether an order was received before ([`check_resend`]).
enum Resend {
    /// A new order; its role's newest receipt of the step so far is number `last_seq` (0: none).
    Fresh { last_seq: u64 },
    /// The same signed text as the order in force: its receipt file.
    Again { path: PathBuf },
}

/// The order `v` (with `commitment`) against the receipts of `step` in the nonce index: refused
/// while the clock is behind the newest of them, or when it resends a superseded order.
fn check_resend(g: &Loaded, index: &NonceIndex, (v, taken): (&Verified, &[(u64, String, u64)]), path: &Path, step: u64, commitment: &str, now: DateTime<Utc>) -> Result<Resend> {
    let role = &v.file.header.role;
    let all = index.receipts(step);
    check_clock_received(g, all.iter().map(|b| (b.received.as_str(), b.seq, b.role.as_str(), step)), now)?;
    let receipts: Vec<&Brief> = all.into_iter().filter(|b| &b.role == role).collect();
    let last_seq = receipts.last().map_or(0, |b| b.seq);
    match receipts.iter().find(|b| b.commitment == commitment) {
        None => Ok(Resend::Fresh { last_seq }),
        Some(r) if r.seq == last_seq || taken.iter().any(|(s, role, seq)| (*s, role, *seq) == (step, &r.role, r.seq)) => {
            Ok(Resend::Again { path: g.dir.receipts(step).join(format!("{}-{}.toml", r.role, r.seq)) })
        }
        Some(r) => Err(order_field_error(path, &v.text, "pbem.nonce", format!("this order was received before as receipt {} and later replaced; resending it is refused (sign a fresh form)", r.seq))),
    }
}

/// The warning for an order accepted without a nonce.
const NO_NONCE: &str = "no nonce: this order adds no randomness to the step seed, and its public commitment can be \
     matched by guessing orders until the step resolves; `pbem sign` fills a fresh nonce";

/// `Some(step)` when the order of `role`'s receipt `(step, seq)` offers a draw and is signed by
/// the seat's present holder: the offer a next order without `draw` withdraws (README "Ending a
/// game by the players"; tester t17a-1: returning the mailed form as it was withdrew it unsaid).
/// `None` too when its sealed copy cannot be read (not yet written: an order earlier in the same
/// batch): this is only for a warning.
fn offered_draw(g: &Loaded, role: &str, (step, seq): (u64, u64)) -> Option<u64> {
    let sealed = g.dir.sealed(step).join(format!("{role}-{seq}.txt"));
    let text = store::read_text(&sealed).ok().filter(|t| report::offers_draw(t))?;
    let signature = store::read_text(&sig_path(&sealed)).ok()?;
    signed_by_seat(&g.gf, role, &text, &signature).then_some(step)
}

/// The warnings an order got when it was accepted as receipt `rc` (what a resend that must read
/// as that first acceptance shows again).
pub fn acceptance_warnings(rc: &Receipt) -> Vec<String> {
    if rc.nonce { vec![] } else { vec![NO_NONCE.to_string()] }
}

/// The nonce of `v`: none (accepted, with a warning), or 64 hex digits not all zeros and not
/// used before in the game (`index`). Returns it, if it parses, and the warnings.
fn check_nonce(index: &NonceIndex, v: &Verified, path: &Path) -> Result<(Option<[u8; 32]>, Vec<String>)> {
    let h = &v.file.header;
    let nonce = commit::parse_32(&h.nonce);
    let mut warnings = Vec::new();
    if h.nonce.is_empty() {
        warnings.push(NO_NONCE.to_string());
    } else if nonce == Some(NMR_NONCE) {
        // The placeholder of an NMR: it would pass for randomness while adding none.
        return Err(order_field_error(path, &v.text, "pbem.nonce", "a nonce of zeros is no randomness; leave it empty for `pbem sign` to fill, or write 64 random hex digits".into()));
    } else if nonce.is_some_and(|n| index.used(&n)) {
        return Err(order_field_error(path, &v.text, "pbem.nonce", "this nonce was already used: a replayed order? (sign a fresh form)".into()));
    }
    Ok((nonce, warnings))
}

/// The game's check of the orders of `v` in the current state: every problem at its line, with
/// what the player wrote there ([`orderfile::with_written`]).
fn check_legal(g: &Loaded, v: &Verified, path: &Path) -> Result<()> {
    let Err(problems) = g.game.check_order(&g.state, &v.file.header.role, &v.file.orders)? else {
        return Ok(());
    };
    let problems = problems
        .into_iter()
        .map(|p| {
            let message = match orderfile::value_at(&v.file.orders, &p.field) {
                Some(written) if !p.field.is_empty() => orderfile::with_written(&p.message, written),
                _ => p.message,
            };
            let field = if p.field.is_empty() { "orders".to_string() } else { format!("orders.{}", p.field) };
            crate::error::Problem { line: orderfile::locate(&v.text, &field), field: Some(field), message }
        })
        .collect();
    Err(Error::problems(path, problems))
}

/// Stores the accepted order `v` as receipt `seq` of `step`: its sealed copy, the signatures and
/// the nonce index (written for the whole batch by [`Intake::write_index`]) made durable
/// together, then the host-signed receipt, the commit point (a sealed order without its receipt
/// was never accepted); the receipt waits in `intake`, so that one sync serves a batch's orders
/// ([`submit_grouped`]). Returns the receipt, its file, and the
/// file's bytes and signature.
#[allow(clippy::too_many_arguments)]
fn store_accepted(g: &Loaded, intake: &mut Intake, v: &Verified, step: u64, seq: u64, commitment: String, nonce: Option<[u8; 32]>, now: DateTime<Utc>) -> Result<(Receipt, PathBuf, SignedFile)> {
    let h = &v.file.header;
    let name = format!("{}-{seq}", h.role);
    // The step's first order: its folders are made with its files, one `mkdir` each (their
    // parents are made with the game: [`make_order_folders`]; for an older game, then too).
    let (sealed_dir, receipts_dir) = (g.dir.sealed(step), g.dir.receipts(step));
    let first = intake.index(g, step)?.receipts(step).is_empty();
    let dirs: &[(&Path, bool)] = if first { &[(&sealed_dir, true), (&receipts_dir, false)] } else { &[] };
    let sealed = g.dir.sealed(step).join(format!("{name}.txt"));
    let mut files = vec![(sig_path(&sealed), v.signature.clone().into_bytes()), (sealed.clone(), v.text.clone().into_bytes())];
    let receipt = Receipt {
        game: g.gf.id.clone(),
        step,
        role: h.role.clone(),
        seq,
        commitment,
        received: timestamp(now),
        nonce: !h.nonce.is_empty(),
        // The newest record as `load` read it under this lock: its setup hash when it carries
        // one (record 0, a seat change), and its bytes' hash.
        setup: cached(&mut intake.setup, || g.record.setup.clone().map_or_else(|| setup_in_force(&g.dir, g.record.index), Ok))?,
        record: cached(&mut intake.record, || Ok(g.record_sha256()))?,
    };
    let rpath = g.dir.receipts(step).join(format!("{name}.toml"));
    let bytes = toml::to_string(&receipt).expect("receipt serializes").into_bytes();
    let key = cached(&mut intake.key, || host_key(&g.dir))?;
    let signature = sig::sign(&key, NS_RECEIPT, &bytes)?.into_bytes();
    files.push((sig_path(&rpath), signature.clone()));
    // Written when the receipts are committed, under the game's lock ([`Intake::commit_staged`],
    // or a group's flush: on its own thread in intake); a write that fails then fails the commit,
    // and the receipt is not written.
    let staged = store::stage_later(dirs, files, store::CommitPoint::new(rpath.clone(), bytes.clone()).of_game(&g.dir.root));
    intake.index(g, step)?.add(&receipt, nonce);
    intake.staged.push(staged);
    Ok((receipt, rpath, (bytes, signature)))
}

/// Waits up to a few seconds for the game's lock (a cron adjudication is short).
pub(crate) fn lock_waiting(dir: &GameDir) -> Result<std::fs::File> {
    for _ in 0..50 {
        match dir.lock() {
            Err(Error::Locked(_)) => std::thread::sleep(std::time::Duration::from_millis(100)),
            other => return other,
        }
    }
    dir.lock()
}

/// Submits order files to the game in `dir`; one result per file, in order.
/// The clock is read once the lock is held ([`Clock`]).
pub fn submit(dir: &Path, files: &[PathBuf], clock: impl Into<Clock>) -> Result<Vec<Result<Accepted>>> {
    let inputs: Vec<OrderInput> = files.iter().map(|f| OrderInput::file(f)).collect();
    submit_inputs(dir, &inputs, clock)
}

/// [`submit`] of orders given as files or as bytes received ([`OrderInput`]).
pub fn submit_inputs(dir: &Path, files: &[OrderInput], clock: impl Into<Clock>) -> Result<Vec<Result<Accepted>>> {
    submit_grouped(dir, files, clock, None, None)
}

/// [`submit_inputs`], whose accepted orders share one sync before their receipts; with a `group`
/// (intake), the receipts of the orders accepted wait in it,
/// with the game's lock, for one sync shared with other games' and messages' orders
/// ([`store::Group`]), instead of one sync each. The caller must flush the group before the
/// replies naming those receipts are made durable and before anything else reads the game's
/// receipts; a group holding this game's lock is flushed first. `known`: the game file as the
/// caller read it before taking the lock, parsed again only if the file changed since.
pub fn submit_grouped(dir: &Path, files: &[OrderInput], clock: impl Into<Clock>, group: Option<&store::Group>, known: Option<KnownGameFile<'_>>) -> Result<Vec<Result<Accepted>>> {
    let gd = GameDir::new(dir);
    if let Some(group) = group.filter(|gr| gr.holds_under(&gd.root)) {
        group.flush()?;
    }
    let lock = lock_waiting(&gd)?;
    finish_seat_change(&gd)?;
    let now = clock.into().now();
    let mut g = load_locked_known(dir, known)?;
    let mut intake = Intake::default();
    let mut out = Vec::new();
    for f in files {
        let mut res = submit_in(&g, &mut intake, f, now);
        // A resignation or a draw offer may end the game at once (its record written here, under
        // the lock, after the receipts it reads); later files are then refused as for any game
        // that is over.
        if let Ok(a) = &mut res
            && (a.ending.resign || a.ending.draw == Some(true))
        {
            intake.commit_staged(&g)?;
            if let Some(rec) = end_by_players(&g, now)? {
                a.ended = rec.outcome.map(|o| o.summary);
                g = load(dir)?;
                intake = Intake::default();
            }
        }
        out.push(res);
    }
    match group {
        Some(group) => {
            intake.write_index(&g)?;
            group.add_all(std::mem::take(&mut intake.staged), lock);
        }
        None => intake.commit_staged(&g)?,
    }
    Ok(out)
}

/// The error of a game whose step was resolved in a sweep but whose commit was left out of the
/// sweep's group: a write of it failed (`why`) with an error of that game alone
/// ([`store::Group::left_out`]); the next run resolves the step again.
pub fn left_out(dir: &Path, why: &str) -> Error {
    store::io(dir, std::io::Error::other(format!("its step could not be written ({why}); the next run resolves it again")))
}

/// Where `pbem seat` keeps the new `game.toml` (host only) while it writes the seat change's
/// record, the commit point.
pub fn pending_game_file(dir: &GameDir) -> PathBuf {
    dir.host().join("game.toml.next")
}

/// Finishes or undoes a seat change that a killed `pbem seat` left half done; called with the
/// game's lock held, before the game is loaded. When the newest record is a host control naming
/// the pending file's setup, that file takes `game.toml`'s place (roll forward); otherwise it is
/// dropped (roll back: [`load_locked`] then clears what was written for the record that never
/// came), and `game.toml` is as the records say.
pub fn finish_seat_change(dir: &GameDir) -> Result<()> {
    let next = pending_game_file(dir);
    let text = match store::read_regular(&next) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(store::io(&next, e)),
    };
    let last = dir.last_record()?.ok_or_else(|| Error::input(dir.record(0), "missing"))?;
    let rec = read_record(dir, last)?;
    let setup = setup_hash(&text, &store::read(&dir.scenario_file())?);
    if rec.control.is_some() && rec.setup.as_deref() == Some(setup.as_str()) {
        store::write_atomic(&dir.game_file(), &text)?;
    }
    std::fs::remove_file(&next).map_err(|e| store::io(&next, e))
}

/// The setup hash in force after record `last`: that of the newest record up to it that carries
/// one (record 0, or a seat change).
pub fn setup_in_force(dir: &GameDir, last: u64) -> Result<String> {
    for n in (0..=last).rev() {
        if let Some(s) = read_record(dir, n)?.setup {
            return Ok(s);
        }
    }
    Err(Error::input(dir.record(0), "holds no setup hash"))
}

/// Every receipt of `step` with its file, sorted by role and then seq.
pub fn read_receipts(dir: &GameDir, step: u64) -> Result<Vec<(PathBuf, Receipt)>> {
    let mut out = Vec::new();
    let rdir = dir.receipts(step);
    for name in store::list(&rdir)? {
        if !name.ends_with(".toml") {
            continue;
        }
        let path = rdir.join(&name);
        let r = model::read_receipt(&path)?;
        out.push((path, r));
    }
    out.sort_by(|(_, a), (_, b)| (&a.role, a.seq).cmp(&(&b.role, b.seq)));
    Ok(out)
}

/// The newest receipt of each role for `step`, by role.
pub fn latest_receipts(dir: &GameDir, step: u64) -> Result<BTreeMap<String, Receipt>> {
    Ok(read_receipts(dir, step)?.into_iter().map(|(_, r)| (r.role.clone(), r)).collect())
}

/// What one adjudication run did to one game.
#[derive(Debug, Default)]
pub struct Adjudicated {
    /// Steps resolved in this run.
    pub resolved: Vec<u64>,
    /// Roles that were NMR in a resolved step, as (step, role).
    pub nmr: Vec<(u64, String)>,
    /// True when the game is over after this run.
    pub over: bool,
    /// A due step not resolved because orders for it may still wait to be taken in (the step,
    /// and why).
    pub held: Option<(u64, String)>,
    /// Since when the host has paused the game (nothing is resolved while it is).
    pub paused: Option<String>,
}

impl Adjudicated {
    /// One line: `resolved step(s) 1, 2; NMR: union in step 2; game over`, `nothing due`, and
    /// why an overdue step waits.
    pub fn summary(&self) -> String {
        let mut s = if self.resolved.is_empty() { "nothing due".to_string() } else { format!("resolved step(s) {}", self.resolved.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")) };
        if !self.nmr.is_empty() {
            s.push_str(&format!("; NMR: {}", self.nmr.iter().map(|(st, r)| format!("{r} in step {st}")).collect::<Vec<_>>().join(", ")));
        }
        if self.over {
            s.push_str("; game over");
        }
        if let Some(since) = &self.paused {
            s.push_str(&format!("; paused by the host since {since} (`pbem resume` goes on)"));
        }
        if let Some((step, why)) = &self.held {
            s.push_str(&format!("; step {step} is due but not resolved: {why}"));
        }
        s
    }
}

/// Whether a due step may be resolved now: `Ok(())`, or `Err(why)` when a message that could
/// hold orders for it (a missing order, or a newer one) still waits to be taken in.
pub type ResolveCheck<'a> = dyn FnMut(&GameFile, &Opening) -> std::result::Result<(), String> + 'a;

/// Resolves every due step of the game in `dir`: all asked roles have receipts, or the deadline
/// has passed (missing orders become the game's NMR default). Idempotent; takes the game's lock
/// and fails with [`Error::Locked`] if another run holds it. Knows nothing of mail: a mail host
/// asks [`adjudicate_with`] to wait for messages not yet taken in.
pub fn adjudicate(dir: &Path, clock: impl Into<Clock>, entropy: &mut Entropy) -> Result<Adjudicated> {
    adjudicate_with(dir, clock, entropy, &mut |_, _| Ok(()))
}

/// [`adjudicate`], asking `may_resolve` before resolving each due step (a step it refuses stays
/// open, and `held` says why), and again once the step is resolved, before its record is written:
/// a message that came while it was resolved holds it too (the files written for it have no
/// record, so they are cleared as a killed run's are). The clock is read once the game's lock is
/// held ([`Clock`]).
pub fn adjudicate_with(dir: &Path, clock: impl Into<Clock>, entropy: &mut Entropy, may_resolve: &mut ResolveCheck<'_>) -> Result<Adjudicated> {
    adjudicate_game(dir, clock.into(), entropy, may_resolve, Sweep::Off, None)
}

/// How [`adjudicate_game`] uses the due index.
enum Sweep {
    Off,
    Index,
    /// The caller read it ([`crate::due::peek`]) with the same clock.
    Peeked(Option<crate::due::Idle>),
}

/// [`adjudicate_with`] for a sweep of every game under a root (`adjudicate --all`, the cron
/// run): a game its due index (`DIR/.due`, [`crate::due`]) shows idle is not loaded, not even
/// locked, and the index is rewritten each time the game is left with nothing due. The record of
/// the last step resolved waits in `group` (holding the game's lock) for the sweep's one sync:
/// the caller must [`store::Group::flush`] it before anything reads the game. Otherwise the same
/// result as [`adjudicate_with`], faster.
pub fn adjudicate_sweep(dir: &Path, clock: impl Into<Clock>, entropy: &mut Entropy, may_resolve: &mut ResolveCheck<'_>, group: &store::Group) -> Result<Adjudicated> {
    adjudicate_game(dir, clock.into(), entropy, may_resolve, Sweep::Index, Some(group))
}

/// [`adjudicate_sweep`] with the due index already read by the caller at the clock's time
/// ([`crate::due::peek`]; the cron run reads it once for the game's id and this).
pub fn adjudicate_peeked(dir: &Path, clock: impl Into<Clock>, entropy: &mut Entropy, may_resolve: &mut ResolveCheck<'_>, idle: Option<crate::due::Idle>, group: &store::Group) -> Result<Adjudicated> {
    adjudicate_game(dir, clock.into(), entropy, may_resolve, Sweep::Peeked(idle), Some(group))
}

/// The due index of a game left with nothing due, owned so that it can wait for the record it
/// stamps ([`crate::due::write`]).
struct IndexLater {
    dir: GameDir,
    id: String,
    record: u64,
    /// The newest record's [`crate::due::short_sha`].
    sha: u64,
    step: u64,
    until: Option<DateTime<Utc>>,
    deadline: Option<DateTime<Utc>>,
    newest: Option<DateTime<Utc>>,
    over: bool,
    awaited: Vec<String>,
}

impl IndexLater {
    fn over(g: &Loaded) -> IndexLater {
        IndexLater { dir: g.dir.clone(), id: g.gf.id.clone(), record: g.record.index, sha: crate::due::short_sha(&g.record_bytes), step: 0, until: None, deadline: None, newest: record_time(&g.record), over: true, awaited: vec![] }
    }

    fn write(&self) {
        let awaited = self.awaited.iter().map(String::as_str).collect();
        let w = crate::due::Waiting { id: &self.id, record: self.record, sha: self.sha, step: self.step, until: self.until, deadline: self.deadline, newest: self.newest, over: self.over, awaited };
        crate::due::write(&self.dir, &w);
    }
}

/// Leaves a game with nothing due: its waiting record (if a step was resolved in a group) goes
/// to the group with the game's lock and the due index to write after it; else the index now.
fn leave(group: Option<&store::Group>, staged: Option<store::Staged>, lock: std::fs::File, index: Option<IndexLater>) {
    match (group, staged) {
        (Some(group), Some(mut staged)) => {
            staged.point.hold = Some(lock);
            staged.point.then = index.map(|i| Box::new(move || i.write()) as Box<dyn FnOnce() + Send>);
            group.add(staged);
        }
        _ => {
            if let Some(i) = index {
                i.write();
            }
        }
    }
}

fn adjudicate_game(dir: &Path, clock: Clock, entropy: &mut Entropy, may_resolve: &mut ResolveCheck<'_>, sweep: Sweep, group: Option<&store::Group>) -> Result<Adjudicated> {
    let gd = GameDir::new(dir);
    let indexed = !matches!(sweep, Sweep::Off);
    // Nothing is written for an idle game, so reading the clock before the lock is harmless here.
    let idle = match sweep {
        Sweep::Off => None,
        Sweep::Index => crate::due::idle(&gd, clock.now()),
        Sweep::Peeked(idle) => idle,
    };
    if let Some(idle) = idle {
        return Ok(Adjudicated { over: idle.over, ..Default::default() });
    }
    let lock = gd.lock()?;
    finish_seat_change(&gd)?;
    let now = clock.now();
    let mut done = Adjudicated::default();
    // A step just resolved: the game as it stands after it, and (in a group) its record not yet
    // written.
    let mut carried: Option<(Loaded, Option<store::Staged>)> = None;
    loop {
        let (g, staged) = match carried.take() {
            Some(carried) => carried,
            None => (load_locked(dir)?, None),
        };
        check_clock(&g, now)?;
        let Some(opening) = g.record.opening.clone() else {
            done.over = true;
            leave(group, staged, lock, indexed.then(|| IndexLater::over(&g)));
            return Ok(done);
        };
        if let Some(since) = &opening.paused {
            done.paused = Some(since.clone());
            leave(group, staged, lock, None);
            return Ok(done);
        }
        let receipts = match waiting_for(&g, &opening, now)? {
            Due::Not(index) => {
                leave(group, staged, lock, index.filter(|_| indexed));
                return Ok(done);
            }
            Due::Now(receipts) => receipts,
        };
        // Due again at once: the record that waits goes first (the next step reads it).
        if let Some(staged) = staged {
            staged.commit()?;
            continue;
        }
        // An end the players asked for whose record a crash left unwritten ends the game here.
        if end_by_players(&g, now)?.is_some() {
            done.over = true;
            return Ok(done);
        }
        if let Err(why) = may_resolve(&g.gf, &opening) {
            done.held = Some((opening.step, why));
            return Ok(done);
        }
        remove_stale_temps(&g, opening.step);
        let r = resolve_step(&g, &opening, &receipts, now, entropy)?;
        // Asked again just before the commit point (a directory read for the mail host): an order
        // spooled while the step was resolved is taken in first, not refused as late.
        if let Err(why) = may_resolve(&g.gf, &opening) {
            drop(r);
            clear_unwritten(&g)?;
            done.held = Some((opening.step, why));
            return Ok(done);
        }
        for o in &r.rec.resolution.as_ref().expect("resolution").orders {
            if o.seq.is_none() {
                done.nmr.push((opening.step, o.role.clone()));
            }
        }
        done.resolved.push(opening.step);
        let record_bytes = r.staged.point.bytes.clone();
        let staged = match group {
            Some(_) => Some(r.staged),
            None => {
                r.staged.commit()?;
                None
            }
        };
        carried = Some((Loaded { record: r.rec, state: r.state, record_bytes, ..g }, staged));
    }
}

/// Removes the temp files killed runs left in the folders that resolving `step` of `g` writes
/// (`store::remove_stale_temps`) and, whatever their age, in those its orders were written to
/// (`store::remove_temps_locked`: every writer of an order's files holds the game's lock, as this
/// run does): once a step; best effort (a folder that cannot be listed is left as it is).
fn remove_stale_temps(g: &Loaded, step: u64) {
    let d = &g.dir;
    let folders = [d.states(), d.records(), d.host_seeds(), d.withheld_folder(), d.reports(g.record.index + 1), d.host()];
    for folder in folders {
        let _ = store::remove_stale_temps(&folder);
    }
    for folder in [d.receipts(step), d.sealed(step)] {
        let _ = store::remove_temps_locked(&folder);
    }
    let _ = remove_unreceipted(d, step);
}

/// Removes the files an order never accepted left in `step`'s order folders: a receipt's
/// signature without its receipt (`receipts/N/ROLE-K.toml.sig`), and a sealed copy or its
/// signature without a receipt of its name (`host/sealed/N/ROLE-K.txt[.sig]`), which a run
/// killed before the receipt, the commit point, leaves (tester T24b-3: such a signature stayed in
/// the public `receipts/`). Under the game's lock, which every writer of those files holds, so
/// none is being written; a later order of the same number writes them anew.
fn remove_unreceipted(d: &GameDir, step: u64) -> Result<()> {
    let (receipts, sealed) = (d.receipts(step), d.sealed(step));
    let names = store::list(&receipts)?;
    let has = |stem: &str| names.iter().any(|n| n.strip_suffix(".toml") == Some(stem));
    for n in &names {
        if n.strip_suffix(".toml.sig").is_some_and(|stem| !has(stem)) {
            remove_if_there(&receipts.join(n))?;
        }
    }
    for n in store::list(&sealed)? {
        let stem = n.strip_suffix(".txt.sig").or_else(|| n.strip_suffix(".txt"));
        if stem.is_some_and(|stem| !stem.starts_with('.') && !has(stem)) {
            remove_if_there(&sealed.join(&n))?;
        }
    }
    Ok(())
}

/// Whether the open step is due: its receipts by role, or the due index of a game left waiting.
enum Due {
    Now(BTreeMap<String, Receipt>),
    Not(Option<IndexLater>),
}

/// Whether the open step `opening` of `g` is due at `now`: every asked role has a receipt, or
/// the deadline and the game file's grace hours have passed (unless the NMR policy is to wait).
fn waiting_for(g: &Loaded, opening: &Opening, now: DateTime<Utc>) -> Result<Due> {
    let all = read_receipts(&g.dir, opening.step)?;
    check_clock_receipts(g, &all, now)?;
    let newest = all.iter().filter_map(|(_, r)| parse_time(&r.received).ok()).chain(record_time(&g.record)).max();
    let receipts: BTreeMap<String, Receipt> = all.into_iter().map(|(_, r)| (r.role.clone(), r)).collect();
    let all_in = opening.asks.iter().all(|a| receipts.contains_key(&a.role));
    let deadline = parse_time(&opening.deadline)?;
    let due_at = crate::when::later_hours(deadline, g.gf.deadlines.grace_hours)
        .map_err(|e| Error::Input { file: g.dir.game_file(), line: None, field: Some("deadlines.grace_hours".into()), message: format!("step {}'s deadline {e}", opening.step) })?;
    let overdue = now >= due_at;
    if all_in || (overdue && g.gf.nmr.policy != model::NmrMode::Wait) {
        return Ok(Due::Now(receipts));
    }
    let until = (g.gf.nmr.policy != model::NmrMode::Wait).then_some(due_at);
    let awaited = opening.asks.iter().map(|a| a.role.clone()).filter(|r| !receipts.contains_key(r)).collect();
    let index = IndexLater { dir: g.dir.clone(), id: g.gf.id.clone(), record: g.record.index, sha: crate::due::short_sha(&g.record_bytes), step: opening.step, until, deadline: Some(deadline), newest, over: false, awaited };
    Ok(Due::Not(Some(index)))
}

/// A step resolved, its record not yet written.
struct Resolved {
    rec: Record,
    /// The state after the step.
    state: String,
    /// Its files written, the record waiting for them to be durable.
    staged: store::Staged,
}

/// Resolves the opened step of `g` with the given receipts and writes every file of the new
/// record but the record itself (the caller commits it).
fn resolve_step(g: &Loaded, opening: &Opening, receipts: &BTreeMap<String, Receipt>, now: DateTime<Utc>, entropy: &mut Entropy) -> Result<Resolved> {
    let step = opening.step;
    let host_seed = read_host_seed(g, opening)?;
    // First the nonces (an NMR contributes the placeholder), then the seed, then NMR orders, since
    // a built-in player's orders are drawn from a seed derived from the step seed.
    let (mut revealed, nonces) = reveal_orders(g, opening, receipts)?;
    let seed = commit::step_seed(&g.gf.id, step, &host_seed, nonces.iter().map(|(r, n)| (r.as_str(), n)));
    let before = read_before_kept(&g.dir, g.record.index, &g.record_bytes)?;
    fill_nmr_orders(g, step, &seed, &before.misses, &mut revealed)?;
    let orders: BTreeMap<String, Orders> = revealed.iter().map(|o| (o.role.clone(), o.orders.clone())).collect();
    let mut ctx = Ctx::new(seed).worded(g.gf.wording).unsent(crate::model::unsent(&revealed));
    let state = g.game.resolve(&g.state, &orders, &mut ctx)?;
    let events = ctx.into_events();
    // Orders the game still holds secret are kept host-side and only their commitments go public,
    // until the round's end or the game's end as the game says (SPEC.md "Withheld orders"); a
    // record whose step may be published reveals what waited for the round's end, and the record
    // that ends the game reveals everything.
    let publication = g.game.publication(&g.state, &state)?;
    let over = matches!(g.game.pending(&state)?, Pending::Over(_));
    let reveals = due_reveals(&g.dir, &g.gf.id, before.withheld, publication, over)?;
    let mut files = Vec::new();
    withhold_orders(&mut files, g, step, WithheldUntil::for_step(publication, over), &mut revealed)?;
    let (next_open, outcome) = open_next(&mut files, &g.dir, &g.gf, g.game, &state, step + 1, now, entropy)?;
    let state_key = g.host_state_key()?;
    let rec = Record {
        reveals,
        game: g.gf.id.clone(),
        index: g.record.index + 1,
        prev: Some(g.record_sha256()),
        setup: None,
        control: None,
        resolution: Some(Resolution {
            step,
            host_seed: hex::encode(host_seed),
            orders: revealed,
            seed: hex::encode(seed),
            events: public_events(&events),
            resolved: timestamp(now),
        }),
        state: state_commitment(&g.gf.id, g.record.index + 1, &state_key, &state),
        state_key: outcome.is_some().then(|| hex::encode(state_key)),
        opening: next_open,
        outcome,
    };
    let staged = stage_record(files, &g.dir, &g.gf, g.game, &rec, &events, &state, &host_key(&g.dir)?)?;
    Ok(Resolved { rec, state, staged })
}

/// The host seed of the opened step, checked against the commitment the opening published.
fn read_host_seed(g: &Loaded, opening: &Opening) -> Result<[u8; 32]> {
    open_host_seed(&g.dir, &g.gf.id, opening)
}

/// The host seed of step `opening` opened in game `id` (folder `dir`), as the host keeps it for
/// the step's adjudication, checked against the commitment the opening published. Errors name
/// the seed file: missing, not 64 hex digits, or another seed than the one committed to.
pub fn open_host_seed(dir: &GameDir, id: &str, opening: &Opening) -> Result<[u8; 32]> {
    let seed_path = dir.host_seed(opening.step);
    let host_seed = commit::parse_32(&store::read_text(&seed_path)?).ok_or_else(|| Error::input(&seed_path, "not 64 hex digits"))?;
    if hex::encode(commit::host_seed_commitment(id, opening.step, &host_seed)) != opening.host_seed_commitment {
        return Err(Error::input(&seed_path, "host seed does not match the published commitment"));
    }
    Ok(host_seed)
}

/// Each role's order nonce, by role.
type Nonces = BTreeMap<String, [u8; 32]>;

/// Each asked role's newest sealed order (by `receipts`) revealed, or an NMR placeholder with
/// empty orders, and the nonces the step seed is derived from (an NMR's is [`NMR_NONCE`]).
fn reveal_orders(g: &Loaded, opening: &Opening, receipts: &BTreeMap<String, Receipt>) -> Result<(Vec<Revealed>, Nonces)> {
    let mut revealed = Vec::new();
    let mut nonces = Nonces::new();
    for ask in &opening.asks {
        let role = &ask.role;
        let mut o = Revealed {
            role: role.clone(),
            seq: None,
            commitment: None,
            text: None,
            signature: None,
            orders: Orders::new(),
            nmr: None,
            withheld: false,
            withheld_until: WithheldUntil::RoundEnd,
        };
        let mut nonce = NMR_NONCE;
        if let Some(r) = receipts.get(role) {
            let (sealed, text, signature) = read_sealed(&g.dir, &g.gf.id, r, Recover::Resend)?;
            verify_sealed(&g.dir, r, &text, &signature, Recover::Resend)?;
            let file = orderfile::parse(&text).map_err(|p| parse_problem(&sealed, p))?;
            nonce = commit::parse_32(&file.header.nonce).unwrap_or(NMR_NONCE);
            (o.seq, o.commitment, o.text, o.signature, o.orders) = (Some(r.seq), Some(r.commitment.clone()), Some(text), Some(signature), file.orders);
        }
        nonces.insert(role.clone(), nonce);
        revealed.push(o);
    }
    Ok((revealed, nonces))
}

/// The NMR orders (the game's default or the built-in player's, by the seat's `misses` so far)
/// of every role in `revealed` that sent none.
fn fill_nmr_orders(g: &Loaded, step: u64, seed: &[u8; 32], misses: &BTreeMap<String, u32>, revealed: &mut [Revealed]) -> Result<()> {
    for o in revealed.iter_mut().filter(|o| o.seq.is_none()) {
        let (orders, kind) = nmr_orders(g.game, &g.gf, &g.state, step, seed, &o.role, misses.get(&o.role).copied().unwrap_or(0))?;
        o.orders = orders;
        o.nmr = Some(kind.to_string());
    }
    Ok(())
}

/// Removes copies an interrupted run withheld for this step (they are not this resolution's: it
/// may publish), then, when the step's orders are withheld (`until`), moves each order's text,
/// signature and orders out of `revealed` into a host-side file added to `files`.
fn withhold_orders(files: &mut Vec<(PathBuf, Vec<u8>)>, g: &Loaded, step: u64, until: Option<WithheldUntil>, revealed: &mut [Revealed]) -> Result<()> {
    for o in revealed.iter() {
        let stale = g.dir.withheld(step, &o.role);
        if stale.exists() {
            std::fs::remove_file(&stale).map_err(|e| store::io(&stale, e))?;
        }
    }
    let Some(until) = until else { return Ok(()) };
    for o in revealed {
        let keep = LateReveal { step, role: o.role.clone(), text: o.text.take(), signature: o.signature.take(), orders: std::mem::take(&mut o.orders) };
        let mut bytes = serde_json::to_string_pretty(&keep).expect("reveal serializes");
        bytes.push('\n');
        files.push((g.dir.withheld(step, &o.role), bytes.into_bytes()));
        o.withheld = true;
        o.withheld_until = until;
    }
    Ok(())
}

/// The events everyone may see, as the public record holds them: events addressed to some roles
/// only stay out of it (each reaches its roles in their reports, and the audit regenerates them
/// by replaying the step).
pub fn public_events(events: &[crate::dice::Event]) -> Vec<crate::dice::Event> {
    events.iter().filter(|e| e.to.is_empty()).cloned().collect()
}

/// The orders withheld in records 1..=`last`, not yet revealed by any of them, and due now in a
/// record whose step the game says `publication` of (`over`: the record ends the game), in step
/// and role order, read from the host's `host/withheld/` copies.
pub(crate) fn outstanding_reveals(dir: &GameDir, game_id: &str, last: u64, publication: Publication, over: bool) -> Result<Vec<LateReveal>> {
    due_reveals(dir, game_id, read_before(dir, last)?.withheld, publication, over)
}

/// What records 1..=`last` tell a new step, gathered in one pass over them ([`read_trail`]).
struct Before {
    /// Orders withheld and not yet revealed, by step and role, with how long they stay withheld.
    withheld: BTreeMap<(u64, String), WithheldUntil>,
    /// Consecutive missed steps per role ([`model::count_misses`]).
    misses: BTreeMap<String, u32>,
}

/// The steps in a row `role` has missed up to `g`'s newest record ([`model::count_misses`]): with
/// the game's NMR policy, which orders its next miss gets (`NmrPolicy::kind_for`).
pub fn missed_in_a_row(g: &Loaded, role: &str) -> Result<u32> {
    Ok(read_before_kept(&g.dir, g.record.index, &g.record_bytes)?.misses.get(role).copied().unwrap_or(0))
}

/// Reads records 1..=`last` for a new step ([`Before`]).
fn read_before(dir: &GameDir, last: u64) -> Result<Before> {
    let mut before = Before { withheld: BTreeMap::new(), misses: BTreeMap::new() };
    read_after(dir, &mut before, 1, last)?;
    Ok(before)
}

/// Adds what records `from..=last` tell a new step to `before`.
fn read_after(dir: &GameDir, before: &mut Before, from: u64, last: u64) -> Result<()> {
    for n in from..=last {
        let rec = read_trail(dir, n)?;
        for r in &rec.reveals {
            before.withheld.remove(&(r.step, r.role.clone()));
        }
        if let Some(res) = rec.resolution {
            model::count_misses(&mut before.misses, res.orders.iter().map(|o| (o.role.as_str(), o.seq.is_some())));
            before.withheld.extend(res.orders.iter().filter(|o| o.withheld).map(|o| ((res.step, o.role.clone()), o.withheld_until)));
        }
    }
    Ok(())
}

/// How many records a step reads past the kept [`Kept`] before it keeps a newer one: a step
/// reads at most this many earlier records, and the host writes the hint once this many steps.
const KEEP_EVERY: u64 = 16;

/// [`Before`] as of one record, kept in `host/trail` ([`GameDir::trail`]) so that a step does not
/// read every earlier record of a long game. A hint: trusted only for the record whose bytes'
/// SHA-256 it names (the hash chain commits that record to every one before it); a file that
/// does not parse or whose checksum line does not match is ignored and the records read.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Kept {
    /// The record it is as of.
    record: u64,
    /// The SHA-256 of that record's bytes (64 hex digits).
    sha256: String,
    /// [`Before::withheld`]: step, role and how long.
    withheld: Vec<(u64, String, WithheldUntil)>,
    /// [`Before::misses`].
    misses: BTreeMap<String, u32>,
}

impl Kept {
    /// The file's text: the JSON on one line, then its SHA-256 (64 hex digits) on the next.
    fn text(&self) -> String {
        let json = serde_json::to_string(self).expect("the kept trail serializes");
        let sum = commit::sha256_hex(json.as_bytes());
        format!("{json}\n{sum}\n")
    }

    /// Parses [`Kept::text`]; `None` for anything else.
    fn parse(text: &str) -> Option<Kept> {
        let (json, sum) = text.strip_suffix('\n')?.split_once('\n')?;
        (commit::sha256_hex(json.as_bytes()) == sum).then(|| serde_json::from_str(json).ok()).flatten()
    }
}

/// The largest kept trail read (its orders still withheld are a round's at most): a larger file,
/// like one that is not a regular file, is ignored and the records read.
const TRAIL_MAX: u64 = 16 << 20;

/// [`read_before`] for a new step after record `last` (whose bytes are `last_bytes`), starting
/// from the kept trail where it is as of `last` or an earlier record whose bytes still hash as it
/// says; keeps a new one once [`KEEP_EVERY`] records were read past it (a hint written without
/// sync: a failed write is ignored).
fn read_before_kept(dir: &GameDir, last: u64, last_bytes: &[u8]) -> Result<Before> {
    if last < KEEP_EVERY {
        // No trail is kept as of a record before this one: the file is not even looked for.
        return read_before(dir, last);
    }
    let kept = store::read_hint(&dir.trail(), TRAIL_MAX).and_then(|t| Kept::parse(&t)).filter(|k| k.record >= 1 && k.record <= last);
    let kept = kept.filter(|k| {
        let bytes = if k.record == last { Some(last_bytes.to_vec()) } else { store::read(&dir.record(k.record)).ok() };
        bytes.is_some_and(|b| commit::sha256_hex(&b) == k.sha256)
    });
    let (mut before, from) = match kept {
        Some(k) => (Before { withheld: k.withheld.into_iter().map(|(s, r, u)| ((s, r), u)).collect(), misses: k.misses }, k.record + 1),
        None => (Before { withheld: BTreeMap::new(), misses: BTreeMap::new() }, 1),
    };
    read_after(dir, &mut before, from, last)?;
    if last + 1 - from >= KEEP_EVERY {
        let k = Kept {
            record: last,
            sha256: commit::sha256_hex(last_bytes),
            withheld: before.withheld.iter().map(|((s, r), u)| (*s, r.clone(), *u)).collect(),
            misses: before.misses.clone(),
        };
        let _ = store::write_unsynced(&dir.trail(), k.text().as_bytes());
    }
    Ok(before)
}

/// Of the orders still `withheld`, those due in a record whose step the game says `publication`
/// of (`over`: the record ends the game), in step and role order, read from `host/withheld/`.
fn due_reveals(dir: &GameDir, game_id: &str, withheld: BTreeMap<(u64, String), WithheldUntil>, publication: Publication, over: bool) -> Result<Vec<LateReveal>> {
    withheld
        .into_iter()
        .filter(|(_, until)| until.due(publication, over))
        .map(|((step, role), _)| {
            let path = dir.withheld(step, &role);
            let text = store::read_text(&path)?;
            let reveal: LateReveal = serde_json::from_str(&text).map_err(|e| Error::input(&path, e.to_string()))?;
            check_withheld_copy(dir, game_id, &path, &reveal, (step, &role))?;
            Ok(reveal)
        })
        .collect()
}

/// The host's withheld copy `reveal` (file `path`) is the order its step used, as the player
/// signed it, before a record reveals it: the text the newest receipt's commitment, the orders
/// those the text gives, the signature the seat's under the key of the receipt (tester17 T17-4:
/// an edited copy was published, and the game failed its audit for good). An NMR's copy holds
/// no text. Errors name the file and say how to mend it.
fn check_withheld_copy(dir: &GameDir, game_id: &str, path: &Path, reveal: &LateReveal, (step, role): (u64, &str)) -> Result<()> {
    let bad = |what: &str| Error::Input { file: path.to_path_buf(), line: None, field: None, message: format!(
        "{what}: this is the host's copy of {role}'s withheld order for step {step}, which is due to be revealed; nothing was published. Restore the game's host/ folder from a backup"
    ) };
    if let Some(wrong) = reveal.not_for(step, role) {
        return Err(bad(&wrong));
    }
    let receipt = latest_receipts(dir, reveal.step)?.remove(&reveal.role);
    let (text, signature, r) = match (&reveal.text, &reveal.signature, receipt) {
        (None, None, None) => return Ok(()),
        (Some(t), Some(s), Some(r)) => (t, s, r),
        _ => return Err(bad("does not match the step's receipts (an order where there was none, or none where there was one)")),
    };
    if hex::encode(commit::order_commitment(game_id, reveal.step, &reveal.role, text.as_bytes())) != r.commitment {
        return Err(bad("text: is not the order its receipt was issued for (edited or damaged)"));
    }
    if orderfile::parse(text).map(|f| f.orders).ok().as_ref() != Some(&reveal.orders) {
        return Err(bad("orders: differ from the signed text"));
    }
    match key_at_receipt(dir, &r)? {
        Some(key) if sig::verify(&key, sig::NS_ORDERS, text.as_bytes(), signature).is_err() => Err(bad("signature: is not the seat's signature of the text")),
        _ => Ok(()),
    }
}

/// The orders used for a missing `role` under the game's NMR policy, and which kind they are
/// (`"default"` or `"bot"`): the game's default orders, or, once the seat has missed
/// `bot_after` steps in a row under the `bot` policy, the built-in player's orders drawn from the
/// bot seed. The audit calls this too.
pub fn nmr_orders(
    game: &dyn DynGame,
    gf: &GameFile,
    state: &str,
    step: u64,
    step_seed: &[u8; 32],
    role: &str,
    missed: u32,
) -> Result<(Orders, &'static str)> {
    let kind = gf.nmr.kind_for(missed);
    let orders = if kind == "bot" {
        game.bot_order(state, role, &mut Ctx::new(commit::bot_seed(&gf.id, step, step_seed, role)))?
    } else {
        game.default_order(state, role)?
    };
    Ok((orders, kind))
}

/// The game directories under `root` (each holding a `game.toml`), sorted.
pub fn games_under(root: &Path) -> Result<Vec<PathBuf>> {
    if !root.is_dir() {
        return Err(Error::input(root, "no such folder (the root holding the games)"));
    }
    Ok(store::list(root)?.into_iter().filter(|n| store::may_hold_game(n)).map(|n| root.join(n)).filter(|p| p.is_dir() && holds_game(p)).collect())
}

/// The folder `dir` holds a game: something is named `game.toml` in it, of whatever kind. A
/// `game.toml` that is a folder, a FIFO or a dangling link, or that cannot even be looked at
/// (permission denied), still counts, so that reading it fails loudly (naming the file) instead of
/// the game silently not being there.
pub fn holds_game(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join("game.toml")).map_or_else(|e| e.kind() != std::io::ErrorKind::NotFound, |_| true)
}

/// A plain-text status of the game in `dir`: step, awaited roles, deadline, receipts.
pub fn status(dir: &Path) -> Result<String> {
    status_at(dir, Utc::now())
}

/// [`status`] with the time left until the deadline counted from `now`; a seat with a time zone
/// of its own also gets the deadline in it.
pub fn status_at(dir: &Path, now: DateTime<Utc>) -> Result<String> {
    let g = load(dir)?;
    let mut out = format!("game {} ({}), {} step(s) resolved\n", g.gf.id, g.game.title(), steps_resolved(&g)?);
    if let Some(o) = &g.record.outcome {
        out.push_str(&format!("game over: {}\n", o.summary));
    }
    if let Some(c) = &g.record.control {
        let by = if c.action.by_players() { "ended by the players" } else { "last host control" };
        out.push_str(&format!("{by} (record {}): {}\n", g.record.index, c.describe(g.record.opening.as_ref())));
    }
    if g.record.opening.is_some()
        && let Ok(Some((action, orders))) = players_end(&g)
    {
        // A run killed between the order that ended the game and its record (tester17 T17-9).
        let what = players_outcome(g.game, &g.state, action, &orders).map(|o| o.summary).unwrap_or_default();
        out.push_str(&format!("game over: {what} (the players' accepted orders ended it; the next submit, adjudicate or host control writes its record)\n"));
    }
    if let Some(op) = &g.record.opening {
        let receipts = latest_receipts(&g.dir, op.step)?;
        let left = match parse_time(&op.deadline) {
            Ok(_) if op.paused.is_some() => " (it moves on by the time paused when the host resumes)".to_string(),
            Ok(t) => deadline_left(t, g.gf.deadlines.grace_hours, now),
            Err(_) => String::new(),
        };
        if let Some(since) = &op.paused {
            out.push_str(&format!("PAUSED by the host since {since}: nothing is resolved until `pbem resume`\n"));
        }
        out.push_str(&format!("step {} opened {}, deadline {}{left}\n", op.step, op.opened, op.deadline));
        out.push_str(&format!("host seed commitment {}\n", op.host_seed_commitment));
        for a in &op.asks {
            // A seat with a time zone of its own sees the deadline in it, whether or not it has
            // sent orders (they can still be replaced until the step is resolved; tester t17a-2).
            let zone = match g.gf.zone_of(&a.role) == chrono_tz::UTC {
                true => String::new(),
                false => format!("; in its time zone the deadline is {}", report::deadline_for(&g.gf, op, &a.role, Some(now)).0),
            };
            match receipts.get(&a.role) {
                Some(r) => {
                    // An order the seat's holder before a seat change signed stands, but the
                    // present holder has not sent it (tester14 T14a-3).
                    let by = if sent_by_present_holder(&g.dir, &g.gf, r) { "" } else { ", signed by the seat's previous holder" };
                    out.push_str(&format!("  {} ({}): received {} (receipt {}, commitment {}{by}){zone}\n", a.role, a.kind, r.received, r.seq, r.commitment))
                }
                None => out.push_str(&format!("  {} ({}): awaited{zone}\n", a.role, a.kind)),
            }
        }
    }
    Ok(out)
}

/// How many steps the game has resolved: host control records resolve none, so this is not the
/// record count (the open step's number less one, or the last resolution's step).
fn steps_resolved(g: &Loaded) -> Result<u64> {
    if let Some(op) = &g.record.opening {
        return Ok(op.step - 1);
    }
    for n in (0..=g.record.index).rev() {
        if let Some(res) = read_record(&g.dir, n)?.resolution {
            return Ok(res.step);
        }
    }
    Ok(0)
}

/// One line per game under `root` (`pbem status --all ROOT`): id, rules, step, the seats still
/// awaited, the deadline and the time left at `now`, paused or over. A game that cannot be read
/// gets a line saying why, after the table, and so does a game id held by more than one folder
/// (a backup copy inside the root, which `adjudicate` skips: README "Broken or doubled game
/// folders"). Returns the text and how many such notes it holds (unreadable or doubled games).
pub fn status_all(root: &Path, now: DateTime<Utc>) -> Result<(String, usize)> {
    let mut rows = vec![["GAME".to_string(), "RULES".into(), "STEP".into(), "AWAITING".into(), "DEADLINE".into(), "LEFT".into()]];
    let mut notes = Vec::new();
    let mut folders: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for dir in games_under(root)? {
        match status_row(&dir, now) {
            Ok(row) => {
                folders.entry(row[0].clone()).or_default().push(dir.display().to_string());
                rows.push(row);
            }
            Err(e) => notes.push(format!("{}: cannot be read: {e}", dir.display())),
        }
    }
    for (id, dirs) in folders.iter().filter(|(_, d)| d.len() > 1) {
        notes.push(doubled_game(id, dirs));
    }
    let widths: Vec<usize> = (0..6).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for r in &rows {
        let line: Vec<String> = r.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    if rows.len() == 1 {
        out.push_str("(no games)\n");
    }
    for n in &notes {
        out.push_str(n);
        out.push('\n');
    }
    Ok((out, notes.len()))
}

/// What `status --all` and `adjudicate --all` say of a game id that more than one folder holds
/// (README "Broken or doubled game folders").
pub fn doubled_game(id: &str, dirs: &[String]) -> String {
    format!("game {id} is held by more than one folder ({}): not adjudicated; remove all but one", dirs.join(", "))
}

/// The `status --all` row of one game.
fn status_row(dir: &Path, now: DateTime<Utc>) -> Result<[String; 6]> {
    let g = load(dir)?;
    let (step, awaiting, deadline, left) = match (&g.record.opening, &g.record.outcome) {
        (Some(op), _) => {
            let receipts = latest_receipts(&g.dir, op.step)?;
            let awaited: Vec<&str> = op.asks.iter().map(|a| a.role.as_str()).filter(|r| !receipts.contains_key(*r)).collect();
            let left = match &op.paused {
                Some(since) => format!("paused since {since}"),
                None => {
                    let deadline = parse_time(&op.deadline)?;
                    match grace_end(deadline, g.gf.deadlines.grace_hours, now) {
                        Some(end) if now > deadline => format!("{}, grace {}", time_left(deadline - now), time_left(end - now)),
                        _ => time_left(deadline - now),
                    }
                }
            };
            (op.step.to_string(), if awaited.is_empty() { "(all in)".to_string() } else { awaited.join(", ") }, op.deadline.clone(), left)
        }
        (None, o) => ("-".into(), "-".into(), "-".into(), format!("over: {}", o.as_ref().map_or("", |o| o.summary.as_str()))),
    };
    Ok([g.gf.id, g.gf.rules, step, awaiting, deadline, left])
}

/// What `status` says after a step's `deadline` as of `now`: the time left, or that it passed,
/// with the grace of `grace_hours` after it (no NMR falls before its end) while it runs
/// (tester20 T20a-4).
fn deadline_left(deadline: DateTime<Utc>, grace_hours: u32, now: DateTime<Utc>) -> String {
    match (crate::when::left(deadline, now), grace_end(deadline, grace_hours, now)) {
        (Some(l), _) => format!(" ({l} left)"),
        (None, Some(g)) => format!(" (passed; grace: {} left before the step is resolved without the missing orders)", crate::when::left(g, now).unwrap_or_default()),
        (None, None) => " (passed)".to_string(),
    }
}

/// The end of the grace of `grace_hours` after `deadline` if it is still to come at `now`.
fn grace_end(deadline: DateTime<Utc>, grace_hours: u32, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    crate::when::later_hours(deadline, grace_hours).ok().filter(|&end| grace_hours > 0 && end > now)
}

/// `2d 5h`, `3h 20m`, `overdue 4h 10m`.
fn time_left(d: chrono::Duration) -> String {
    let m = d.num_minutes().abs();
    let text = if m >= 24 * 60 { format!("{}d {}h", m / (24 * 60), m / 60 % 24) } else { format!("{}h {}m", m / 60, m % 60) };
    if d < chrono::Duration::zero() { format!("overdue {text}") } else { text }
}

/// A fresh order form for `role` in the pending step, with a fresh nonce and the time left from
/// `now` (`pbem form`).
pub fn form(dir: &Path, role: &str, now: DateTime<Utc>) -> Result<String> {
    let g = load(dir)?;
    let op = g.record.opening.as_ref().ok_or_else(|| Error::Refused(OVER.into()))?;
    if g.gf.seat(role).is_none() {
        return Err(Error::Usage(format!("no seat {role:?}")));
    }
    let nonce = hex::encode(commit::fresh_32());
    match report::order_form(g.game, &g.gf, op, &g.state, role, &nonce, Some(now))? {
        Some(form) => Ok(form),
        None => report::ending_form(g.game, &g.gf, op, &g.state, role, &nonce),
    }
}

/// An Ed25519 key from 32 bytes of the given entropy (the host key, and demo players' keys).
pub fn key_from_seed(seed: &[u8; 32], comment: &str) -> ssh_key::PrivateKey {
    let mut key = ssh_key::PrivateKey::from(ssh_key::private::Ed25519Keypair::from_seed(seed));
    key.set_comment(comment);
    key
}

// Ending by the players (SPEC.md "Ending by the players"): here, beside `submit` and
// `adjudicate`, which both end a game whose accepted orders ask for it.

/// Ends the game in `g` by its players when their accepted orders ask for it, and commits the
/// record: a resignation among the open step's newest orders, or every seat's standing draw
/// offer (SPEC.md "Ending by the players"). `None` when they do not.
pub fn end_by_players(g: &Loaded, now: DateTime<Utc>) -> Result<Option<Record>> {
    let Some((action, orders)) = players_end(g)? else { return Ok(None) };
    // The record quotes each order with its signature: a damaged `.sig` is not published.
    for o in &orders {
        let r = model::read_receipt(&g.dir.receipts(o.step).join(format!("{}-{}.toml", o.role, o.seq)))?;
        verify_sealed(&g.dir, &r, &o.text, &o.signature, Recover::Resend)?;
    }
    let outcome = players_outcome(g.game, &g.state, action, &orders)?;
    let n = g.record.index + 1;
    let state_key = g.host_state_key()?;
    let rec = Record {
        game: g.gf.id.clone(),
        index: n,
        prev: Some(g.record_sha256()),
        setup: None,
        control: Some(Control { action, at: timestamp(now), reason: String::new(), seat: None, orders }),
        resolution: None,
        state: state_commitment(&g.gf.id, n, &state_key, &g.state),
        state_key: Some(hex::encode(state_key)),
        reveals: outstanding_reveals(&g.dir, &g.gf.id, g.record.index, Publication::Now, true)?,
        opening: None,
        outcome: Some(outcome),
    };
    stage_record(Vec::new(), &g.dir, &g.gf, g.game, &rec, &[], &g.state, &host_key(&g.dir)?)?.commit()?;
    Ok(Some(rec))
}

/// The end the accepted orders ask for: a resignation among the open step's newest orders (the
/// first by role), else, when one of them offers a draw, every seat's newest order (in any step)
/// offering it, by role. A resignation ended the game when it was accepted (only a crash before
/// its record leaves it here), so it counts whoever holds the seat now; a draw offer stands for
/// the seat's holder, so only offers signed with the seat's present key count: a seat change to
/// another key withdraws the earlier holder's (the new holder has not agreed to it; SPEC.md
/// "Ending by the players", tester14 T14a-1, tester15 T15-1).
fn players_end(g: &Loaded) -> Result<Option<(ControlAction, Vec<SignedOrder>)>> {
    let Some(op) = &g.record.opening else { return Ok(None) };
    let mut draw_offered = false;
    for r in latest_receipts(&g.dir, op.step)?.values() {
        let (order, ending) = sealed_order(g, r)?;
        if ending.resign {
            return Ok(Some((ControlAction::Resign, vec![order])));
        }
        draw_offered |= ending.draw == Some(true) && by_present_holder(g, &order);
    }
    if !draw_offered {
        return Ok(None);
    }
    let mut roles: Vec<&str> = g.gf.seats.iter().map(|s| s.role.as_str()).collect();
    roles.sort_unstable();
    let mut orders = Vec::new();
    for role in roles {
        let Some(r) = newest_receipt(&g.dir, op.step, role)? else { return Ok(None) };
        let (order, ending) = sealed_order(g, &r)?;
        if ending.draw != Some(true) || !by_present_holder(g, &order) {
            return Ok(None);
        }
        orders.push(order);
    }
    Ok(Some((ControlAction::Draw, orders)))
}

/// Whether `order` is signed with the key its seat holds now (`game.toml`), not only with a key
/// the seat held before a seat change.
fn by_present_holder(g: &Loaded, order: &SignedOrder) -> bool {
    signed_by_seat(&g.gf, &order.role, &order.text, &order.signature)
}

/// Whether `text` is signed (`signature`) with the key `role`'s seat holds in `gf`.
fn signed_by_seat(gf: &GameFile, role: &str, text: &str, signature: &str) -> bool {
    let Some(key) = gf.seat(role).and_then(|s| sig::public_key_line(&s.key).ok()) else { return false };
    sig::verify(&key, sig::NS_ORDERS, text.as_bytes(), signature).is_ok()
}

/// Whether the order receipt `r` was issued for (as the host keeps it sealed in `dir`) is signed
/// with the key its seat holds in `gf`: `false` for an order the seat's holder before a seat
/// change sent (it stands, but the present holder has not sent it). A receipt issued under the
/// setup in force now was checked against the present key when its order was accepted (no
/// signature checked again: one a report mail); where the sealed copy cannot be read (a public
/// copy has none), `true`: nothing says otherwise.
pub fn sent_by_present_holder(dir: &GameDir, gf: &GameFile, r: &Receipt) -> bool {
    let setup_now = store::read(&dir.game_file()).and_then(|g| Ok(setup_hash(&g, &store::read(&dir.scenario_file())?)));
    if setup_now.is_ok_and(|s| s == r.setup) {
        return true;
    }
    let path = dir.sealed(r.step).join(format!("{}-{}.txt", r.role, r.seq));
    match (store::read_text(&path), store::read_text(&sig_path(&path))) {
        (Ok(text), Ok(signature)) => signed_by_seat(gf, &r.role, &text, &signature),
        _ => true,
    }
}

/// `role`'s newest receipt in steps `last` down to 1.
pub fn newest_receipt(dir: &GameDir, last: u64, role: &str) -> Result<Option<Receipt>> {
    for step in (1..=last).rev() {
        if let Some(r) = latest_receipts(dir, step)?.remove(role) {
            return Ok(Some(r));
        }
    }
    Ok(None)
}

/// How a damaged or lost sealed copy can be mended, as its error says ([`read_sealed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recover {
    /// A copy the open step still needs: from a backup, or by the player's next order.
    Resend,
    /// A copy nothing reads any more (superseded, or of a game that has ended): from a backup.
    Backup,
}

/// The host's sealed copy of the order receipt `r` was issued for (`host/sealed/N/ROLE-K.txt`,
/// with its `.sig`): its file, text and signature, the text checked against the receipt's
/// commitment (SPEC.md "Order commitment"), so a damaged or edited copy is never adjudicated.
/// Errors: a copy missing or not the order receipted, naming the file, the receipt and how to
/// mend it (`recover`).
pub fn read_sealed(dir: &GameDir, game_id: &str, r: &Receipt, recover: Recover) -> Result<(PathBuf, String, String)> {
    let path = dir.sealed(r.step).join(format!("{}-{}.txt", r.role, r.seq));
    let read = |file: &Path| match store::read_regular(file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(sealed_problem(file, "missing", r, recover)),
        Err(e) => Err(store::io(file, e)),
        Ok(b) => String::from_utf8(b).map_err(|_| sealed_problem(file, "not UTF-8 text (damaged?)", r, recover)),
    };
    let (text, signature) = (read(&path)?, read(&sig_path(&path))?);
    if hex::encode(commit::order_commitment(game_id, r.step, &r.role, text.as_bytes())) != r.commitment {
        return Err(sealed_problem(&path, "is not the order its receipt was issued for (its commitment differs: edited or damaged)", r, recover));
    }
    Ok((path, text, signature))
}

/// A sealed copy's `signature` (of `text`, read by [`read_sealed`]) is the seat's, under the key
/// the seat held when receipt `r` was issued ([`key_at_receipt`]): a damaged or replaced `.sig`
/// is never published (tester17 T17-1: it made the game fail its audit for good).
pub fn verify_sealed(dir: &GameDir, r: &Receipt, text: &str, signature: &str, recover: Recover) -> Result<()> {
    let Some(key) = key_at_receipt(dir, r)? else { return Ok(()) };
    let path = dir.sealed(r.step).join(format!("{}-{}.txt", r.role, r.seq));
    sig::verify(&key, sig::NS_ORDERS, text.as_bytes(), signature)
        .map_err(|e| sealed_problem(&sig_path(&path), &format!("is not {}'s signature of the order ({e}: edited or damaged)", r.role), r, recover))
}

/// The seat key `r`'s role held when receipt `r` was issued: that of the game file whose setup
/// hash the receipt names (`game.toml` as it is, or one a later seat change replaced, kept in
/// its record). `None` when no game file of this game has that setup (the audit names that).
fn key_at_receipt(dir: &GameDir, r: &Receipt) -> Result<Option<ssh_key::PublicKey>> {
    let scenario = store::read(&dir.scenario_file())?;
    let now = store::read(&dir.game_file())?;
    let mut text = (setup_hash(&now, &scenario) == r.setup).then(|| String::from_utf8_lossy(&now).into_owned());
    if text.is_none() {
        for n in (0..=dir.last_record()?.unwrap_or(0)).rev() {
            if let Some(s) = read_record(dir, n)?.control.and_then(|c| c.seat).filter(|s| setup_hash(s.before.as_bytes(), &scenario) == r.setup) {
                text = Some(s.before);
                break;
            }
        }
    }
    let Some(gf) = text.and_then(|t| toml::from_str::<GameFile>(&t).ok()) else { return Ok(None) };
    Ok(gf.seat(&r.role).and_then(|s| sig::public_key_line(&s.key).ok()))
}

/// A sealed copy's problem (`what`) with its receipt and how to mend it.
fn sealed_problem(file: &Path, what: &str, r: &Receipt, recover: Recover) -> Error {
    let how = match recover {
        Recover::Resend => format!(
            "Restore the game's host/ folder from a backup, or ask {} to send the order again (a newer order replaces it; `pbem deadline` gives time if the deadline has passed)",
            r.role
        ),
        Recover::Backup => "Restore the game's host/ folder from a backup (nothing reads this copy any more)".to_string(),
    };
    Error::Input { file: file.to_path_buf(), line: None, field: None, message: format!(
        "{what}: this is the host's sealed copy of {}'s order for step {} (receipt {}, commitment {}). {how}",
        r.role, r.step, r.seq, r.commitment
    ) }
}

/// An accepted order as the host keeps it sealed, and what it says of the game's end.
fn sealed_order(g: &Loaded, r: &Receipt) -> Result<(SignedOrder, crate::orderfile::Ending)> {
    let (path, text, signature) = read_sealed(&g.dir, &g.gf.id, r, Recover::Resend)?;
    let file = crate::orderfile::parse(&text).map_err(|p| Error::Input { file: path, line: p.line, field: p.field, message: p.message })?;
    Ok((SignedOrder { step: r.step, role: r.role.clone(), seq: r.seq, text, signature }, file.ending))
}

/// The outcome of a game its players ended: a draw; or a resignation, where the resigning
/// seat's side ([`crate::game::Game::team`]) loses and the one other side, if there is exactly
/// one, wins (a game of one side is lost).
pub fn players_outcome(game: &dyn DynGame, state: &str, action: ControlAction, orders: &[SignedOrder]) -> Result<Outcome> {
    let roles: Vec<&str> = orders.iter().map(|o| o.role.as_str()).collect();
    if action == ControlAction::Draw {
        return Ok(Outcome { winner: None, summary: format!("Drawn: every seat agreed a draw ({}).", roles.join(", ")) });
    }
    let role = roles.first().copied().unwrap_or_default();
    let side = game.team(state, role)?;
    let others: Vec<String> = game.sides(state)?.into_iter().filter(|s| *s != side).collect();
    let who = if side == role { role.to_string() } else { format!("{role} (side {side})") };
    Ok(match others.as_slice() {
        [] => Outcome { winner: None, summary: format!("{who} resigned: the game is lost.") },
        [winner] => Outcome { winner: Some(winner.clone()), summary: format!("{who} resigned: {winner} wins.") },
        _ => Outcome { winner: None, summary: format!("{who} resigned: the game ends without a winner.") },
    })
}
