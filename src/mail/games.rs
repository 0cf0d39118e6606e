//! The games under a root, by id, as mail intake routes orders to them: the readable ones, the
//! folders whose `game.toml` cannot be read, and ids that two folders hold.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::model::GameFile;
use crate::{pipeline, store};

/// The games under a root, by id.
pub struct Games {
    by_id: BTreeMap<String, (PathBuf, GameFile)>,
    /// Game folders whose `game.toml` could not be read, with the game id when it can still be
    /// read from the file (a line `id = "..."`) and the error.
    broken: Vec<(PathBuf, Option<String>, String)>,
    /// Game ids held by more than one folder (a backup copy inside ROOT), with every folder.
    duplicates: BTreeMap<String, Vec<PathBuf>>,
    /// Every seat address in lower case, with the spelling of its first seat (games by id): a
    /// sender is looked up once, not by a scan of every seat of every game for each message.
    by_email: BTreeMap<String, String>,
}

impl Games {
    /// Reads every `game.toml` under `root`. A game that cannot be read is kept aside in
    /// [`Games::broken`] (orders that may be for it then wait instead of being refused); an id
    /// held by two folders is routed to neither ([`Games::duplicate`]).
    pub fn load(root: &Path) -> Result<Games> {
        let mut found: BTreeMap<String, Vec<(PathBuf, GameFile)>> = BTreeMap::new();
        let mut broken = Vec::new();
        for dir in pipeline::games_under(root)? {
            match pipeline::read_game_file(&store::GameDir::new(&dir)) {
                Ok(gf) => found.entry(gf.id.clone()).or_default().push((dir, gf)),
                Err(e) => broken.push((dir.clone(), id_of_broken(&dir), e.to_string())),
            }
        }
        let mut by_id = BTreeMap::new();
        let mut duplicates = BTreeMap::new();
        for (id, mut dirs) in found {
            if dirs.len() == 1 {
                by_id.insert(id, dirs.remove(0));
            } else {
                duplicates.insert(id, dirs.into_iter().map(|(d, _)| d).collect());
            }
        }
        let mut by_email = BTreeMap::new();
        for s in by_id.values().flat_map(|(_, gf): &(PathBuf, GameFile)| &gf.seats) {
            by_email.entry(s.email.to_ascii_lowercase()).or_insert_with(|| s.email.clone());
        }
        Ok(Games { by_id, broken, duplicates, by_email })
    }
    /// Game folders whose `game.toml` could not be read, each with its error.
    pub fn broken(&self) -> impl Iterator<Item = (&PathBuf, &str)> {
        self.broken.iter().map(|(d, _, e)| (d, e.as_str()))
    }
    /// An unreadable game folder that may be game `id`: one whose file names that id, or one
    /// whose id cannot be read at all.
    pub fn may_be_broken(&self, id: &str) -> Option<(&PathBuf, &str)> {
        let named = self.broken.iter().find(|(_, bid, _)| bid.as_deref() == Some(id));
        named.or_else(|| self.broken.iter().find(|(_, bid, _)| bid.is_none())).map(|(d, _, e)| (d, e.as_str()))
    }
    /// The folders holding game `id`, when more than one does (then none gets its orders).
    pub fn duplicate(&self, id: &str) -> Option<&[PathBuf]> {
        self.duplicates.get(id).map(Vec::as_slice)
    }
    /// Every game id held by more than one folder, with the folders.
    pub fn duplicates(&self) -> &BTreeMap<String, Vec<PathBuf>> {
        &self.duplicates
    }
    /// The game with this id (`None` for an id two folders hold).
    pub fn get(&self, id: &str) -> Option<&(PathBuf, GameFile)> {
        self.by_id.get(id)
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
    /// Every game, sorted by id.
    pub fn iter(&self) -> impl Iterator<Item = &(PathBuf, GameFile)> {
        self.by_id.values()
    }
}

/// The id of a game folder whose `game.toml` does not parse as a game file, from its line
/// `id = "..."` if it has one that parses on its own.
fn id_of_broken(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("game.toml")).ok()?;
    text.lines().take_while(|l| !l.trim_start().starts_with('[')).find_map(|l| {
        let t: toml::Table = toml::from_str(l).ok()?;
        t.get("id")?.as_str().map(str::to_string)
    })
}
