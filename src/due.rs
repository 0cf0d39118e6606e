//! The due index: a game's next due time in `DIR/.due`, so that an idle cron sweep skips a game
//! with a few system calls instead of loading it.
//!
//! `adjudicate` writes the file (temp + rename, no fsync: it is only a hint) each time it leaves
//! a game with nothing due. The next sweep trusts it only while everything it was computed from
//! is unchanged, each checked with one `stat`: the same `game.toml` (size and modification
//! time) and newest record (size and modification time), no record after it, and no first
//! receipt (`receipts/N/ROLE-1.toml`) of a role it still awaited, the only ways a step becomes due
//! before its deadline. On any doubt (missing, unreadable, another format, anything changed, the
//! clock before the newest record or receipt it saw, the deadline reached) the game is loaded and
//! adjudicated as without the index, which then rewrites it. So the index can make a sweep
//! faster, never a due game wait. It also keeps the game's id and the open step's deadline, so
//! that the cron run finds game ids held by two folders and skips the mail of an idle game
//! (nothing new to mail, no reminder due) without reading `game.toml` ([`peek`]). One file per game (not one per root): games are written by
//! different processes under their own locks, and a sweep reads each game's file once.

use std::path::Path;
use std::time::UNIX_EPOCH;

use chrono::{DateTime, Utc};

use crate::store::GameDir;

const MAGIC: &str = "pbem-due 3";

/// What the index says about a game, when it still holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Idle {
    /// The game's id (from its `game.toml`, unchanged since).
    pub id: String,
    /// Index of the newest record.
    pub record: u64,
    /// The open step's deadline, Unix seconds (`None` once the game is over).
    pub deadline: Option<i64>,
    /// The game is over (nothing will ever be due).
    pub over: bool,
}

/// What one read of the index tells a sweep.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Peek {
    /// The game's id, when the index holds and `game.toml` is unchanged since it was written.
    pub id: Option<String>,
    /// The game is idle (see [`idle`]).
    pub idle: Option<Idle>,
}

/// `DIR/.due`.
pub fn path(dir: &GameDir) -> std::path::PathBuf {
    dir.root.join(".due")
}

/// Size and modification time (ns) of a file, as the index records them; `None` if absent.
fn stamp(path: &Path) -> Option<(u64, u128)> {
    let m = std::fs::metadata(path).ok()?;
    let t = m.modified().ok()?.duration_since(UNIX_EPOCH).ok()?.as_nanos();
    Some((m.len(), t))
}

/// The index's fields, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    id: String,
    record: u64,
    /// The open step (receipts are filed by step, which host control records part from the
    /// record number).
    step: u64,
    record_stamp: (u64, u128),
    game_stamp: (u64, u128),
    /// Unix seconds at which the open step is due by time (`None`: never by time).
    until: Option<i64>,
    /// Unix seconds of the open step's deadline (reminders are due before it).
    deadline: Option<i64>,
    /// Unix seconds of the newest record or receipt: before it, the game must be loaded (its
    /// "clock behind" refusal).
    not_before: i64,
    over: bool,
    awaited: Vec<String>,
}

impl Entry {
    fn text(&self) -> String {
        let never = |t: Option<i64>| t.map_or("never".to_string(), |u| u.to_string());
        let (until, deadline) = (never(self.until), never(self.deadline));
        format!(
            "{MAGIC}\nid {}\nrecord {} {} {}\nstep {}\ngame {} {}\nuntil {until}\ndeadline {deadline}\nnot_before {}\nover {}\nawaited {}\nend\n",
            self.id,
            self.record,
            self.record_stamp.0,
            self.record_stamp.1,
            self.step,
            self.game_stamp.0,
            self.game_stamp.1,
            self.not_before,
            u8::from(self.over),
            self.awaited.join(" ")
        )
    }

    fn parse(text: &str) -> Option<Entry> {
        let mut lines = text.lines();
        if lines.next()? != MAGIC {
            return None;
        }
        let mut field = |name: &str| lines.next()?.strip_prefix(name)?.strip_prefix(' ').map(str::to_string);
        let id = field("id")?;
        let record: Vec<String> = field("record")?.split(' ').map(str::to_string).collect();
        let step = field("step")?.parse().ok()?;
        let game: Vec<String> = field("game")?.split(' ').map(str::to_string).collect();
        let until = field("until")?;
        let deadline = field("deadline")?;
        let not_before = field("not_before")?.parse().ok()?;
        let over = match field("over")?.as_str() {
            "0" => false,
            "1" => true,
            _ => return None,
        };
        let awaited = field("awaited")?.split(' ').filter(|s| !s.is_empty()).map(str::to_string).collect();
        if lines.next()? != "end" || lines.next().is_some() {
            return None;
        }
        let [n, rl, rt] = record.as_slice() else { return None };
        let [gl, gt] = game.as_slice() else { return None };
        let time = |t: String| if t == "never" { Some(None) } else { t.parse().ok().map(Some) };
        Some(Entry {
            id,
            record: n.parse().ok()?,
            step,
            record_stamp: (rl.parse().ok()?, rt.parse().ok()?),
            game_stamp: (gl.parse().ok()?, gt.parse().ok()?),
            until: time(until)?,
            deadline: time(deadline)?,
            not_before,
            over,
            awaited,
        })
    }
}

/// The game in `dir` is idle at `now` by its index: nothing can be due, so it need not be
/// loaded. `None` whenever the index is missing or in any doubt (then load the game).
pub fn idle(dir: &GameDir, now: DateTime<Utc>) -> Option<Idle> {
    peek(dir, now).idle
}

/// One read of the index: the game's id (what a cron run needs to find a game held by two
/// folders) and whether it is idle at `now` ([`idle`]).
pub fn peek(dir: &GameDir, now: DateTime<Utc>) -> Peek {
    let Some(e) = std::fs::read_to_string(path(dir)).ok().and_then(|t| Entry::parse(&t)) else { return Peek::default() };
    if stamp(&dir.game_file()) != Some(e.game_stamp) {
        return Peek::default();
    }
    Peek { id: Some(e.id.clone()), idle: still_idle(dir, e, now) }
}

fn still_idle(dir: &GameDir, e: Entry, now: DateTime<Utc>) -> Option<Idle> {
    let secs = now.timestamp();
    if secs < e.not_before || e.until.is_some_and(|u| secs >= u) {
        return None;
    }
    if stamp(&dir.record(e.record))? != e.record_stamp {
        return None;
    }
    if std::fs::symlink_metadata(dir.record(e.record + 1)).is_ok() {
        return None;
    }
    let receipts = dir.receipts(e.step);
    if !e.over && e.awaited.iter().any(|role| std::fs::symlink_metadata(receipts.join(format!("{role}-1.toml"))).is_ok()) {
        return None;
    }
    Some(Idle { id: e.id, record: e.record, deadline: e.deadline, over: e.over })
}

/// What the game is waiting for, for [`write`].
pub struct Waiting<'a> {
    /// The game's id.
    pub id: &'a str,
    /// Index of the newest record.
    pub record: u64,
    /// The open step (0 when the game is over).
    pub step: u64,
    /// When the open step becomes due by time (`None`: never by time, or the game is over).
    pub until: Option<DateTime<Utc>>,
    /// The open step's deadline (`None` once the game is over).
    pub deadline: Option<DateTime<Utc>>,
    /// The newest record's or receipt's time.
    pub newest: Option<DateTime<Utc>>,
    /// The game is over.
    pub over: bool,
    /// Roles of the open step with no receipt yet.
    pub awaited: Vec<&'a str>,
}

/// Writes the index of the game in `dir` (called with the game's lock held, after loading it).
/// Best effort: an index that cannot be written is only a slower next sweep, so errors are
/// ignored; a role name that could not be written on one line leaves the index out.
pub fn write(dir: &GameDir, w: &Waiting<'_>) {
    if std::iter::once(&w.id).chain(&w.awaited).any(|r| r.is_empty() || r.contains(char::is_whitespace)) {
        return;
    }
    let (Some(game_stamp), Some(record_stamp)) = (stamp(&dir.game_file()), stamp(&dir.record(w.record))) else { return };
    let e = Entry {
        id: w.id.to_string(),
        record: w.record,
        step: w.step,
        record_stamp,
        game_stamp,
        until: if w.over { None } else { w.until.map(|t| t.timestamp()) },
        deadline: if w.over { None } else { w.deadline.map(|t| t.timestamp()) },
        not_before: w.newest.map_or(0, |t| t.timestamp() + 1),
        over: w.over,
        awaited: w.awaited.iter().map(|r| r.to_string()).collect(),
    };
    let path = path(dir);
    let tmp = dir.root.join(".due.tmp");
    if std::fs::write(&tmp, e.text()).is_ok() && std::fs::rename(&tmp, &path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

/// Removes the index (a change it cannot see coming, e.g. a rewritten game file, is safe
/// anyway; this is for callers that know the game changed).
pub fn forget(dir: &GameDir) {
    let _ = std::fs::remove_file(path(dir));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_round_trips_and_rejects_damage() {
        let e = Entry {
            id: "g1".into(),
            record: 3,
            step: 2,
            record_stamp: (10, 20),
            game_stamp: (30, 40),
            until: Some(99),
            deadline: Some(90),
            not_before: 5,
            over: false,
            awaited: vec!["union".into(), "confederate".into()],
        };
        assert_eq!(Entry::parse(&e.text()), Some(e.clone()));
        let never = Entry { until: None, deadline: None, awaited: vec![], over: true, ..e.clone() };
        assert_eq!(Entry::parse(&never.text()), Some(never));
        let text = e.text();
        for cut in 0..text.len() - 1 {
            assert_eq!(Entry::parse(&text[..cut]), None, "cut at {cut}");
        }
        assert_eq!(Entry::parse(&text.replace("until 99", "until x")), None);
        assert_eq!(Entry::parse(&text.replace("deadline 90", "deadline")), None);
        assert_eq!(Entry::parse(&text.replace("pbem-due 3", "pbem-due 2")), None);
    }
}
