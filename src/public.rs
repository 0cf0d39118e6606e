//! The public copy of a game as one tar archive (`pbem public`), and reading such an archive back
//! into a fresh temporary folder for `pbem audit FILE` and `pbem publish`.
//!
//! The archive holds exactly what README "What is public" calls public at any time: `game.toml`,
//! `scenario.toml`, `records/` and `receipts/` (each file with its `.sig`), under one folder named
//! by the game id. Never `host/`, `states/` or `reports/`; a withheld step's orders are in a record
//! only as commitments, so nothing of it leaks. Its bytes depend only on those files (sorted
//! names, no times, owners or modes of the machine), so the same game gives the same archive.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};
use crate::pipeline;
use crate::store::{self, GameDir};

/// The most an archive given to [`unpack`] may hold once unpacked (a tar bomb is refused).
pub const MAX_UNPACKED_BYTES: u64 = 1 << 30;

/// The most entries an archive given to [`unpack`] may hold.
pub const MAX_ENTRIES: u64 = 1_000_000;

/// The public files of the game in `dir` as (path inside the game folder, bytes), in archive
/// order: game.toml, scenario.toml, every record with its signature, then the receipts of every
/// step a record opened. Read records first, receipts after: a step resolved meanwhile adds
/// nothing the records read do not already open (its receipts were all there before its record).
pub fn public_files(dir: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    let gd = GameDir::new(dir);
    pipeline::read_game_file(&gd)?;
    let last = gd.last_record()?.ok_or_else(|| Error::input(gd.record(0), "missing: the game has no records"))?;
    let mut out = vec![("game.toml".to_string(), store::read(&gd.game_file())?), ("scenario.toml".to_string(), store::read(&gd.scenario_file())?)];
    let mut open_step = last;
    for n in 0..=last {
        let path = gd.record(n);
        let bytes = store::read(&path)?;
        if n == last && pipeline::read_record(&gd, n)?.opening.is_some() {
            open_step = last + 1;
        }
        let name = format!("records/{:06}.json", n);
        out.push((format!("{name}.sig"), store::read(&pipeline::sig_path(&path))?));
        out.push((name, bytes));
    }
    for step in 1..=open_step {
        let rdir = gd.receipts(step);
        for name in store::list(&rdir)?.into_iter().filter(|n| n.ends_with(".toml")) {
            // A receipt's signature is written before the receipt: one without it is not there yet.
            let (path, sig) = (rdir.join(&name), rdir.join(format!("{name}.sig")));
            let Ok(sig_bytes) = std::fs::read(&sig) else { continue };
            let rel = format!("receipts/{:06}/{name}", step);
            out.push((format!("{rel}.sig"), sig_bytes));
            out.push((rel, store::read(&path)?));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// The public copy of the game in `dir` as a tar archive (its bytes): [`public_files`] under a
/// folder named by the game id, each a plain file of mode 0644, owner 0, time 0. What a player's
/// `public` mail command and `pbem publish` hand out.
///
/// Errors: the game's files cannot be read (naming the file).
pub fn public_archive(dir: &Path) -> Result<Vec<u8>> {
    let id = pipeline::read_game_file(&GameDir::new(dir))?.id;
    let mut b = tar::Builder::new(Vec::new());
    for (rel, bytes) in public_files(dir)? {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_size(bytes.len() as u64);
        h.set_mode(0o644);
        h.set_mtime(0);
        h.set_uid(0);
        h.set_gid(0);
        let path = format!("{id}/{rel}");
        b.append_data(&mut h, &path, bytes.as_slice()).map_err(|e| Error::input(dir, format!("cannot archive {path}: {e}")))?;
    }
    b.into_inner().map_err(|e| Error::input(dir, format!("cannot finish the archive: {e}")))
}

/// A public copy unpacked into a temporary folder, removed when this is dropped.
pub struct Unpacked {
    tmp: tempfile::TempDir,
    /// The game folder inside it.
    pub game: PathBuf,
    archive: PathBuf,
}

impl Unpacked {
    /// `message` with the temporary folder's path replaced by the archive's name
    /// (`game.tar:ID/records/000003.json: ...`), so that a failure names the file in the archive.
    pub fn rename(&self, message: &str) -> String {
        let tmp = format!("{}/", self.tmp.path().display());
        message.replace(&tmp, &format!("{}:", self.archive.display()))
    }
}

/// True for a path a public copy may hold, inside its game folder: `game.toml`, `scenario.toml`,
/// `records/FILE`, `receipts/STEP/FILE`.
fn public_shape(parts: &[&str]) -> bool {
    matches!(parts, ["game.toml"] | ["scenario.toml"] | ["records", _] | ["receipts", _, _])
}

/// Unpacks the public copy in the tar archive `archive` into a fresh temporary folder (the
/// content is public, so the system's temporary folder is fine). Only plain files under one game
/// folder, in the shapes of a public copy, are accepted: anything else (`host/`, links, `..`, a
/// second folder) is refused, as is an archive larger than [`MAX_UNPACKED_BYTES`] unpacked.
///
/// Errors: [`Error::Input`] naming the archive and the entry.
pub fn unpack(archive: &Path) -> Result<Unpacked> {
    let file = std::fs::File::open(archive).map_err(|e| store::io(archive, e))?;
    unpack_reader(file, archive)
}

/// [`unpack`] of an archive held in memory; `name` stands for it in messages.
pub fn unpack_bytes(bytes: &[u8], name: &Path) -> Result<Unpacked> {
    unpack_reader(bytes, name)
}

fn unpack_reader(file: impl Read, archive: &Path) -> Result<Unpacked> {
    let tmp = tempfile::Builder::new().prefix("pbem-public-").tempdir().map_err(|e| store::io(&std::env::temp_dir(), e))?;
    let bad = |what: String| Error::input(archive, what);
    let mut ar = tar::Archive::new(file);
    let mut game: Option<String> = None;
    let (mut total, mut count) = (0u64, 0u64);
    for entry in ar.entries().map_err(|e| bad(format!("not a tar archive: {e}")))? {
        let mut entry = entry.map_err(|e| bad(format!("not a tar archive: {e}")))?;
        count += 1;
        let path = entry.path().map_err(|e| bad(format!("entry {count}: {e}")))?.into_owned();
        let shown = path.display().to_string();
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            continue;
        }
        if !kind.is_file() {
            return Err(bad(format!("{shown}: not a plain file (a public copy holds only files)")));
        }
        let parts: Option<Vec<&str>> = path.components().map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        }).collect();
        let Some(parts) = parts.filter(|p| p.len() >= 2 && public_shape(&p[1..])) else {
            return Err(bad(format!("{shown}: not a file of a public copy (GAME/game.toml, GAME/scenario.toml, GAME/records/*, GAME/receipts/STEP/*)")));
        };
        match &game {
            None => game = Some(parts[0].to_string()),
            Some(g) if g != parts[0] => return Err(bad(format!("{shown}: a second game folder (the archive holds {g})"))),
            Some(_) => {}
        }
        total += entry.header().size().unwrap_or(u64::MAX);
        if total > MAX_UNPACKED_BYTES || count > MAX_ENTRIES {
            return Err(bad(format!("larger than a public copy may be ({MAX_UNPACKED_BYTES} bytes, {MAX_ENTRIES} files)")));
        }
        let mut bytes = Vec::new();
        (&mut entry).take(MAX_UNPACKED_BYTES + 1).read_to_end(&mut bytes).map_err(|e| bad(format!("{shown}: {e}")))?;
        let dest = tmp.path().join(&path);
        store::make_dirs(dest.parent().unwrap_or(tmp.path()), false)?;
        std::fs::write(&dest, &bytes).map_err(|e| store::io(&dest, e))?;
    }
    let game = game.ok_or_else(|| bad("holds no game (no GAME/game.toml)".into()))?;
    let game = tmp.path().join(game);
    if !game.join("game.toml").is_file() {
        return Err(bad(format!("{}: missing", Path::new(game.file_name().unwrap_or_default()).join("game.toml").display())));
    }
    Ok(Unpacked { tmp, game, archive: archive.to_path_buf() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tar_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (p, bytes) in entries {
            // The name written as it is (the builder itself refuses `..`).
            let mut h = tar::Header::new_gnu();
            h.set_size(bytes.len() as u64);
            h.set_mode(0o644);
            h.as_gnu_mut().unwrap().name[..p.len()].copy_from_slice(p.as_bytes());
            h.set_cksum();
            b.append(&h, *bytes).unwrap();
        }
        b.into_inner().unwrap()
    }

    fn unpack_bytes(bytes: &[u8]) -> std::result::Result<Unpacked, String> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.tar");
        std::fs::write(&p, bytes).unwrap();
        unpack(&p).map_err(|e| e.to_string())
    }

    #[test]
    fn only_the_files_of_a_public_copy_unpack() {
        let ok = unpack_bytes(&tar_of(&[("g/game.toml", b"x"), ("g/records/000000.json", b"{}")])).unwrap();
        assert!(ok.game.join("records/000000.json").is_file());
        for (path, why) in [
            ("g/host/host_key", "not a file of a public copy"),
            ("g/states/000001.json", "not a file of a public copy"),
            ("g/records/../../evil", "not a file of a public copy"),
            ("h/game.toml", "a second game folder"),
        ] {
            let e = unpack_bytes(&tar_of(&[("g/game.toml", b"x"), (path, b"secret")])).err().unwrap();
            assert!(e.contains(why), "{path}: {e}");
        }
        assert!(unpack_bytes(b"not a tar at all, just some text that is not 512 bytes").is_err());
        assert!(unpack_bytes(&tar_of(&[])).err().unwrap().contains("holds no game"));
    }
}
