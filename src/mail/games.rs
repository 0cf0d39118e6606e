//! The games under a root, by id, as mail intake routes orders to them: the readable ones, the
//! folders whose `game.toml` cannot be read, and ids that two folders hold; with the routing
//! cache `ROOT/.mail/games` that lets a run read only the game files its mail needs.
//!
//! The cache holds, for each game folder whose `game.toml` was read, the folder's name, the
//! file's inode, size and change time (ctime, which no tool sets back: `touch -d`, `cp -a` and
//! `rsync -a` restore modification times, not it) and what routing needs from it: the game's id
//! and its seats' addresses. A run lists the root and looks at each `game.toml` with one `stat`;
//! a folder whose file has the stamp its line holds is taken from the line, every other one (a new,
//! moved or copied folder, a file edited by hand or by `pbem seat`/`replace`/`leave`, which all
//! rewrite it) is read as without the cache. A game whose orders are routed is read whole when
//! first asked for ([`Games::get`]), and must then still have the stamp, id and addresses its
//! line holds, else its orders wait for the next run. A stamp taken less than
//! [`crate::due::FRESH_NS`] before the run began is not cached (a change within the clock's tick
//! leaves the change time as it was), nor is a folder whose `game.toml` cannot be read (it is
//! read again each run). The file is a hint: written by temp file and rename without fsync,
//! under the root's intake lock, only when a line changed; it carries its format and a SHA-256
//! of its body, and a missing, torn, corrupt or older file is ignored whole (every game is read,
//! and the file written anew). So the cache can make a run faster, never route an order
//! otherwise than reading every `game.toml` would.

use std::sync::{Arc, OnceLock};
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::model::GameFile;
use crate::{pipeline, store};

/// The cache's first line starts with this (then a space and the SHA-256 of the body).
const MAGIC: &str = "pbem-mail-games 1";

/// The cache's file name in the mail state folder.
const FILE: &str = "games";
/// The largest cache read (a line of ~200–400 bytes a game: room for ~500,000 games); a larger
/// file, like one that is not a regular file, is rebuilt from the games (a link to `/dev/zero`
/// found by tester8 was read until memory ran out).
const MAX_BYTES: u64 = 256 << 20;

/// One game folder as the cache remembers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Line {
    /// The folder's name under the root.
    name: String,
    /// Inode, size and change time (seconds, nanoseconds) of its `game.toml`.
    ino: u64,
    size: u64,
    ctime: (i64, i64),
    /// The game's id.
    id: String,
    /// Its seats' addresses, in seat order, as the file spells them.
    emails: Vec<String>,
}

/// A readable game: its folder, its cache line and its game file, read when first needed.
struct Entry {
    dir: PathBuf,
    line: Line,
    file: OnceLock<std::result::Result<(PathBuf, GameFile), String>>,
    /// The bytes `file` was parsed from, when it was read on demand ([`Games::known`]).
    bytes: OnceLock<Vec<u8>>,
    /// The cache file the line came from (removed when the line proves wrong).
    cache: Arc<PathBuf>,
}

/// Why a game's file is not used by this run: it changed after the run looked at it (the next
/// run reads it again; nothing for the host to mend).
pub const CHANGED: &str = "its game.toml changed while this run was reading mail";

impl Entry {
    /// The game file: read now if not yet, and checked against the line routing used.
    fn loaded(&self) -> std::result::Result<&(PathBuf, GameFile), &str> {
        self.file.get_or_init(|| self.read()).as_ref().map_err(String::as_str)
    }

    fn read(&self) -> std::result::Result<(PathBuf, GameFile), String> {
        let (bytes, gf) = pipeline::read_game_file_known(&store::GameDir::new(&self.dir), None).map_err(|e| e.to_string())?;
        // Read after the stat that matched the line: the same stamp after it means the same file.
        let now = stamp(&self.dir).ok().flatten();
        let same_file = now.as_ref() == Some(&(self.line.ino, self.line.size, self.line.ctime));
        if !same_file || gf.id != self.line.id || emails(&gf) != self.line.emails {
            if same_file {
                // The file is as the line says, yet holds another id or addresses: the cache is
                // wrong (made by hand, or by another tool), so the next run reads every game
                // (found by tester T11: a wrong line was believed for good).
                let _ = std::fs::remove_file(self.cache.as_path());
            }
            return Err(CHANGED.into());
        }
        let _ = self.bytes.set(bytes);
        Ok((self.dir.clone(), gf))
    }
}

/// A game folder whose `game.toml` could not be read: its folder, its game id when it can still
/// be read from the file (a line `id = "..."`) or its cache line, the error, and its seats'
/// addresses as its last cache line knew them (a seat's mail then waits for it: tester t25f D1).
struct Broken {
    dir: PathBuf,
    id: Option<String>,
    error: String,
    emails: Vec<String>,
}

/// The games under a root, by id.
pub struct Games {
    by_id: BTreeMap<String, Entry>,
    /// Game folders whose `game.toml` could not be read ([`Broken`]).
    broken: Vec<Broken>,
    /// Game ids held by more than one folder (a backup copy inside ROOT), with every folder.
    duplicates: BTreeMap<String, Vec<PathBuf>>,
    /// Every seat address in lower case, with the spelling of its first seat (games by id): a
    /// sender is looked up once, not by a scan of every seat of every game for each message.
    by_email: BTreeMap<String, String>,
    /// Every seat address in lower case, with the ids of the games seating it: a sender's games
    /// are found without a look at every game.
    games_of: BTreeMap<String, BTreeSet<String>>,
}

impl Games {
    /// The games under `root`, from the routing cache where each `game.toml` is unchanged and by
    /// reading it where not (then the cache is rewritten; see the module's header). A game that
    /// cannot be read is kept aside in [`Games::broken`] (orders that may be for it then wait
    /// instead of being refused); an id held by two folders is routed to neither
    /// ([`Games::duplicate`]). The caller holds the root's intake lock.
    pub fn load(root: &Path) -> Result<Games> {
        let began = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let cache_path = super::config::state_dir(root).join(FILE);
        let cache = Arc::new(cache_path.clone());
        let read = read_cache(&cache_path);
        let mut changed = read.is_none();
        let mut cached = read.unwrap_or_default();
        let mut found: BTreeMap<String, Vec<Entry>> = BTreeMap::new();
        let mut broken = Vec::new();
        let mut lines = Vec::new();
        let names = game_folders(root)?;
        // Each game file looked at, and read where its line does not hold, on every core.
        let looked = crate::par::map(&names, |name| look(&root.join(name), cached.get(name)));
        // A folder without a `game.toml` (or with a folder of that name) holds no game.
        for (name, Looked { seen, read }) in names.into_iter().zip(looked).filter_map(|(n, l)| Some((n, l?))) {
            let dir = root.join(&name);
            let old = cached.remove(&name);
            let (entry, holds) = match (old, read) {
                (Some(line), None) => (Entry { dir, line, file: OnceLock::new(), bytes: OnceLock::new(), cache: cache.clone() }, true),
                (old, read) => match read.expect("a game file is read where its line does not hold") {
                    Ok((gf, after)) => {
                        // Its line goes (rewritten below, if it can be cached now).
                        changed |= old.is_some();
                        (read_entry(dir, name, (seen, after), gf, began, cache.clone()), false)
                    }
                    Err(error) => {
                        // Its old line stays in the cache (it no longer holds, so it is never
                        // trusted): the seats it names are still known while the file is broken.
                        let id = id_of_broken(&dir).or_else(|| old.as_ref().map(|l| l.id.clone()));
                        let emails = old.as_ref().map(|l| l.emails.clone()).unwrap_or_default();
                        lines.extend(old);
                        broken.push(Broken { dir, id, error, emails });
                        continue;
                    }
                },
            };
            // Written only when a line changed: a broken or just-written game file, not cached,
            // does not make every run rewrite the file.
            if entry.line.ino != 0 {
                changed |= !holds;
                lines.push(entry.line.clone());
            }
            found.entry(entry.line.id.clone()).or_default().push(entry);
        }
        if changed || !cached.is_empty() {
            write_cache(&cache_path, &lines);
        }
        Ok(Games::from_found(found, broken))
    }

    fn from_found(found: BTreeMap<String, Vec<Entry>>, broken: Vec<Broken>) -> Games {
        let mut by_id = BTreeMap::new();
        let mut duplicates = BTreeMap::new();
        for (id, mut dirs) in found {
            if dirs.len() == 1 {
                by_id.insert(id, dirs.remove(0));
            } else {
                duplicates.insert(id, dirs.into_iter().map(|e| e.dir).collect());
            }
        }
        let mut by_email = BTreeMap::new();
        let mut games_of: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (id, email) in by_id.iter().flat_map(|(id, e): (&String, &Entry)| e.line.emails.iter().map(move |m| (id, m))) {
            by_email.entry(email.to_ascii_lowercase()).or_insert_with(|| email.clone());
            games_of.entry(email.to_ascii_lowercase()).or_default().insert(id.clone());
        }
        Games { by_id, broken, duplicates, by_email, games_of }
    }

    /// Game folders whose `game.toml` could not be read, each with its error.
    pub fn broken(&self) -> impl Iterator<Item = (&PathBuf, &str)> {
        self.broken.iter().map(|b| (&b.dir, b.error.as_str()))
    }
    /// An unreadable game folder that may be game `id`: one whose file names that id, or one
    /// whose id cannot be read at all; or game `id` itself, when its `game.toml` changed after
    /// this run looked at it.
    pub fn may_be_broken(&self, id: &str) -> Option<(&PathBuf, &str)> {
        if let Some(e) = self.by_id.get(id)
            && let Err(why) = e.loaded()
        {
            return Some((&e.dir, why));
        }
        let named = self.broken.iter().find(|b| b.id.as_deref() == Some(id));
        named.or_else(|| self.broken.iter().find(|b| b.id.is_none())).map(|b| (&b.dir, b.error.as_str()))
    }
    /// An unreadable game folder whose seats, as the routing cache last knew them, include
    /// `email` (any case): a message from it may be for that game.
    pub fn seat_of_broken(&self, email: &str) -> Option<(&PathBuf, &str)> {
        self.broken.iter().find(|b| b.emails.iter().any(|m| m.eq_ignore_ascii_case(email))).map(|b| (&b.dir, b.error.as_str()))
    }
    /// The folders holding game `id`, when more than one does (then none gets its orders).
    pub fn duplicate(&self, id: &str) -> Option<&[PathBuf]> {
        self.duplicates.get(id).map(Vec::as_slice)
    }
    /// Every game id held by more than one folder, with the folders.
    pub fn duplicates(&self) -> &BTreeMap<String, Vec<PathBuf>> {
        &self.duplicates
    }
    /// The game with this id, its `game.toml` read now if not yet (`None` for an id two folders
    /// hold, or a game whose file changed since the run looked at it: [`Games::may_be_broken`]).
    pub fn get(&self, id: &str) -> Option<&(PathBuf, GameFile)> {
        self.by_id.get(id)?.loaded().ok()
    }
    /// Game `id`'s file as [`Games::get`] read it, with its bytes: submitting to the game then
    /// parses it again only if it changed since ([`pipeline::read_game_file_known`]).
    pub fn known(&self, id: &str) -> Option<pipeline::KnownGameFile<'_>> {
        let e = self.by_id.get(id)?;
        Some((e.bytes.get()?.as_slice(), &e.loaded().ok()?.1))
    }
    /// The folder of the game with this id, without reading its file (`None` for an id two
    /// folders hold).
    pub fn folder(&self, id: &str) -> Option<&PathBuf> {
        self.by_id.get(id).map(|e| &e.dir)
    }
    /// True if `email` is a seat's address in any game.
    pub fn knows_sender(&self, email: &str) -> bool {
        self.by_email.contains_key(&email.to_ascii_lowercase())
    }
    /// `email` as a seat registered it (the first such seat, games by id): replies go to that
    /// spelling, never to the sender's own or under a display name the sender chose.
    pub fn registered(&self, email: &str) -> Option<&str> {
        self.by_email.get(&email.to_ascii_lowercase()).map(String::as_str)
    }
    /// Every game with a seat at one of `addrs` (any case), sorted by id; only these game files
    /// are read.
    pub fn seated(&self, addrs: &[String]) -> Vec<&(PathBuf, GameFile)> {
        let ids: BTreeSet<&String> = addrs.iter().filter_map(|a| self.games_of.get(&a.to_ascii_lowercase())).flatten().collect();
        ids.into_iter().filter_map(|id| self.by_id.get(id)?.loaded().ok()).collect()
    }
}

/// What [`Games::load`] finds of one game folder `dir` whose cache line is `line`: the stamp of
/// its `game.toml`, and where that is not the line's, the file as read (or why it cannot be) with
/// its stamp after the read.
/// A game file's stamp as looked at: `Err(())` when it could not be looked at.
type Seen = std::result::Result<Option<Stamp>, ()>;

struct Looked {
    seen: Seen,
    read: Option<std::result::Result<(GameFile, Seen), String>>,
}

/// [`Looked`] at the folder `dir`, whose cache line is `line`; `None` when it holds no game (no
/// `game.toml`, or a folder of that name), known from the same `stat` that takes the stamp.
fn look(dir: &Path, line: Option<&Line>) -> Option<Looked> {
    let seen = match std::fs::metadata(dir.join("game.toml")) {
        Ok(m) if m.is_dir() => return None,
        Ok(m) => Ok(Some((m.ino(), m.len(), (m.ctime(), m.ctime_nsec())))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(_) => Err(()),
    };
    let holds = line.is_some_and(|l| seen.as_ref().is_ok_and(|s| *s == Some((l.ino, l.size, l.ctime))));
    let read = (!holds).then(|| pipeline::read_game_file(&store::GameDir::new(dir)).map(|gf| (gf, stamp(dir))).map_err(|e| e.to_string()));
    Some(Looked { seen, read })
}

/// The entry of a game whose file was just read; its line is cached (`ino` not 0) only when its
/// stamp was taken before the read, is the same after it, and is older than the run by
/// [`crate::due::FRESH_NS`].
fn read_entry(dir: PathBuf, name: String, (before, after): (std::result::Result<Option<Stamp>, ()>, std::result::Result<Option<Stamp>, ()>), gf: GameFile, began: u128, cache: Arc<PathBuf>) -> Entry {
    let old = |s: &Stamp| u128::try_from(s.2.0).ok().zip(u128::try_from(s.2.1).ok()).is_some_and(|(s, n)| s * 1_000_000_000 + n + crate::due::FRESH_NS < began);
    let (ino, size, ctime) = match (before, after) {
        (Ok(Some(b)), Ok(Some(a))) if a == b && old(&b) && b.0 != 0 => b,
        _ => (0, 0, (0, 0)),
    };
    let line = Line { name, ino, size, ctime, id: gf.id.clone(), emails: emails(&gf) };
    let file = OnceLock::from(Ok((dir.clone(), gf)));
    Entry { dir, line, file, bytes: OnceLock::new(), cache }
}

/// Inode, size and change time of a `game.toml`.
type Stamp = (u64, u64, (i64, i64));

/// The stamp of `DIR/game.toml`: `Ok(None)` if it is not there, `Err` if it cannot be looked at.
fn stamp(dir: &Path) -> std::result::Result<Option<Stamp>, ()> {
    match std::fs::metadata(dir.join("game.toml")) {
        Ok(m) => Ok(Some((m.ino(), m.len(), (m.ctime(), m.ctime_nsec())))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(_) => Err(()),
    }
}

fn emails(gf: &GameFile) -> Vec<String> {
    gf.seats.iter().map(|s| s.email.clone()).collect()
}

/// The names of the folders under `root` that may hold games, sorted: as
/// [`pipeline::games_under`], with the folder's type from its directory entry (a `stat` only for
/// a link); which hold one, [`look`] sees.
fn game_folders(root: &Path) -> Result<Vec<String>> {
    if !root.is_dir() {
        return Err(Error::input(root, "no such folder (the root holding the games)"));
    }
    let rd = std::fs::read_dir(root).map_err(|e| store::io(root, e))?;
    let mut names = Vec::new();
    for e in rd {
        let e = e.map_err(|e| store::io(root, e))?;
        let Some(name) = e.file_name().to_str().map(str::to_string) else { continue };
        let folder = match e.file_type() {
            Ok(t) if t.is_symlink() => e.path().is_dir(),
            Ok(t) => t.is_dir(),
            Err(_) => e.path().is_dir(),
        };
        // Whether it holds a game is seen by `look` (one `stat` of its `game.toml`).
        if store::may_hold_game(&name) && folder {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// The cache's lines by folder name; `None` when the file is missing or not whole and current.
fn read_cache(path: &Path) -> Option<BTreeMap<String, Line>> {
    let text = store::read_hint(path, MAX_BYTES)?;
    let (head, body) = text.split_once('\n')?;
    if head != format!("{MAGIC} {}", hex::encode(Sha256::digest(body.as_bytes()))) {
        return None;
    }
    let lines: Vec<Line> = serde_json::from_str(body).ok()?;
    Some(lines.into_iter().map(|l| (l.name.clone(), l)).collect())
}

/// Writes the cache (temp file and rename, no fsync: a hint, checked whole when read). A file
/// that cannot be written only makes the next run read every game.
fn write_cache(path: &Path, lines: &[Line]) {
    let body = serde_json::to_string(lines).expect("cache lines serialize");
    let text = format!("{MAGIC} {}\n{body}", hex::encode(Sha256::digest(body.as_bytes())));
    let _ = store::write_unsynced(path, text.as_bytes());
}

/// The id of a game folder whose `game.toml` does not parse as a game file, from its line
/// `id = "..."` if it has one that parses on its own.
fn id_of_broken(dir: &Path) -> Option<String> {
    let text = store::read_text(&dir.join("game.toml")).ok()?;
    text.lines().take_while(|l| !l.trim_start().starts_with('[')).find_map(|l| {
        let t: toml::Table = toml::from_str(l).ok()?;
        t.get("id")?.as_str().map(str::to_string)
    })
}
