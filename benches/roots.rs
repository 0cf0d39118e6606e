//! The fast path of `benches/host.sh` for building a large root (`--games 100000`): the same
//! games `pbem new` makes, made by `pipeline::create` in one process on every core, without
//! their ~20 fsyncs a game (in a `store::Batch` ended without its sync: a bench root need not
//! survive a power loss). The files byte-identical in every game (the scenario copy and the
//! opening state) are hard links to the first game's: pbem replaces a file by rename, never in
//! place, so a game gets its own copy at its first change; ~40% less disk (~6 GB for 100,000).
//!
//!   cargo bench --bench roots -- ROOT GAMES DUE NOW UNION_KEY.pub CONFEDERATE_KEY.pub
//!
//! Game `gI` in `ROOT/gI` (I from 1), seats `union-I@example.org` and `conf-I@example.org` with the
//! two keys, deadlines of 1 hour for the first DUE games and 72 hours for the others, opened at
//! NOW: what `benches/host.sh` builds with `pbem new`. A game folder already there is left as it
//! is (a run can be resumed). Each game is a real one (`pbem audit` passes). Its opening reports
//! are marked mailed (`ROOT/.mail/mailed/gI` = 0) instead of composed: each report mail draws a
//! picture of the board, hours for 200,000 of them, and the idle cron sweep timed reads only the
//! marks. Prints nothing but errors; `cargo test` runs it on a few games.

use std::path::{Path, PathBuf};

use pbem::model::{Deadlines, NmrMode, NmrPolicy, Seat};
use pbem::pipeline::{self, Entropy, NewGame};

/// Games made in one batch (it keeps every written path until it ends).
const CHUNK: usize = 2000;

/// The files every game holds byte for byte the same (hard links to the first game's).
const SHARED: [&str; 2] = ["scenario.toml", "states/000000.json"];

fn main() {
    // `cargo bench` passes `--bench`; `cargo test` (whatever else it passes) runs a smoke test on
    // a few games in a temporary folder, so the builder keeps building and working.
    let bench = std::env::args().any(|a| a == "--bench");
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let result = match &args[..] {
        _ if !bench => smoke(),
        [root, games, due, now, union, conf] => run(Path::new(root), games, due, now, Path::new(union), Path::new(conf)),
        _ => Err("usage: cargo bench --bench roots -- ROOT GAMES DUE NOW UNION_KEY.pub CONFEDERATE_KEY.pub".to_string()),
    };
    if let Err(e) = result {
        eprintln!("roots: {e}");
        std::process::exit(1);
    }
}

fn run(root: &Path, games: &str, due: &str, now: &str, union: &Path, conf: &Path) -> Result<(), String> {
    let n: usize = games.parse().map_err(|_| format!("GAMES {games:?}: not a number"))?;
    let due: usize = due.parse().map_err(|_| format!("DUE {due:?}: not a number"))?;
    let now = pbem::when::parse_time(now).map_err(|e| e.to_string())?;
    let key = |p: &Path| -> Result<String, String> {
        let k = pbem::sig::load_public_key(&p.to_string_lossy()).map_err(|e| format!("{}: {e}", p.display()))?;
        k.to_openssh().map_err(|e| e.to_string())
    };
    let (union, conf) = (key(union)?, key(conf)?);
    let mailed = root.join(".mail").join("mailed");
    std::fs::create_dir_all(&mailed).map_err(|e| format!("{}: {e}", mailed.display()))?;
    // Game 1 first: the others link to its shared files.
    if n > 0 {
        make(root, 1, 1 <= due, now, &union, &conf)?;
    }
    let all: Vec<usize> = (2..=n).collect();
    for chunk in all.chunks(CHUNK) {
        let batch = pbem::store::Batch::open();
        let made = pbem::par::map(chunk, |&i| make(root, i, i <= due, now, &union, &conf).and_then(|()| share(root, i)));
        drop(batch);
        made.into_iter().collect::<Result<Vec<()>, String>>()?;
    }
    Ok(())
}

/// Replaces each of game `gI`'s [`SHARED`] files by a hard link to game `g1`'s when their bytes
/// are the same.
fn share(root: &Path, i: usize) -> Result<(), String> {
    let (first, dir) = (root.join("g1"), root.join(format!("g{i}")));
    for f in SHARED.iter().filter(|_| i > 1) {
        let (one, mine) = (first.join(f), dir.join(f));
        if std::fs::read(&one).ok() == std::fs::read(&mine).ok() {
            let tmp = mine.with_extension("link.tmp");
            let _ = std::fs::remove_file(&tmp);
            std::fs::hard_link(&one, &tmp).and_then(|()| std::fs::rename(&tmp, &mine)).map_err(|e| format!("{}: {e}", mine.display()))?;
        }
    }
    Ok(())
}

/// Game `gI` in `ROOT/gI`, and its opening reports marked mailed.
fn make(root: &Path, i: usize, due: bool, now: chrono::DateTime<chrono::Utc>, union: &str, conf: &str) -> Result<(), String> {
    let dir: PathBuf = root.join(format!("g{i}"));
    if dir.exists() {
        return Ok(());
    }
    let seat = |role: &str, email: String, key: &str| Seat { role: role.into(), email, key: key.into(), time_zone: None };
    let new = NewGame {
        id: Some(format!("g{i}")),
        rules: "gettysburg-campaign".into(),
        scenario: None,
        options: Default::default(),
        seats: vec![seat("union", format!("union-{i}@example.org"), union), seat("confederate", format!("conf-{i}@example.org"), conf)],
        deadlines: Deadlines { default_hours: if due { 1 } else { 72 }, ..Deadlines::default() },
        nmr: NmrPolicy { policy: NmrMode::Defaults, bot_after: 2 },
        wording: pbem::report::WORDING,
    };
    pipeline::create(&dir, new, now, &mut Entropy::Os).map_err(|e| format!("{}: {e}", dir.display()))?;
    pbem::store::write_atomic(&root.join(".mail").join("mailed").join(format!("g{i}")), b"0\n").map_err(|e| e.to_string())
}

fn smoke() -> Result<(), String> {
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let keys = tmp.path().join("k");
    for k in ["union", "conf"] {
        let key = pipeline::key_from_seed(&[if k == "union" { 1 } else { 2 }; 32], k);
        std::fs::create_dir_all(&keys).map_err(|e| e.to_string())?;
        std::fs::write(keys.join(format!("{k}.pub")), key.public_key().to_openssh().map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    }
    let root = tmp.path().join("games");
    run(&root, "3", "1", "2026-07-01T12:00:00Z", &keys.join("union.pub"), &keys.join("conf.pub"))?;
    for i in 1..=3 {
        pbem::audit::audit(&root.join(format!("g{i}")), None).map_err(|e| format!("g{i}: {e}"))?;
    }
    Ok(())
}
