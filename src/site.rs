//! `pbem publish`: the static web site of a game, built from its public copy alone (so it can never
//! show a secret): an index of the games, per game a page per record with the observer's picture,
//! the public events, the orders as revealed, receipts and commitments, how to audit, and the
//! public copy to download. Plain HTML and one stylesheet from the embedded `templates/site/`;
//! no scripts; the same game gives the same bytes; unchanged files are not rewritten.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use minijinja::{Environment, context};
use serde::{Deserialize, Serialize};

use crate::error::{AuditCheck, AuditFailure, Error, Result};
use crate::model::{GameFile, LateReveal, Receipt, Record, Revealed, WithheldUntil};
use crate::store::{self, GameDir};
use crate::{audit, commit, pipeline, public};

/// What one `publish` of one game did.
#[derive(Debug)]
pub struct Published {
    /// The game's id (its folder in the site).
    pub game: String,
    /// The game's folder in the site.
    pub folder: PathBuf,
    /// Pages of the game written (one per record, and its index).
    pub pages: usize,
    /// Files whose bytes changed and were rewritten (0 when the game is as published before).
    pub written: usize,
    /// The first record whose orders are still withheld, when the copy could not be replayed past it.
    pub secret_from: Option<u64>,
}

impl Published {
    /// One line, e.g. "demo-x into site/demo-x: 23 pages, 5 files changed".
    pub fn describe(&self) -> String {
        let secret = match self.secret_from {
            Some(n) => format!("; record {n} on show their commitments only (orders still withheld)"),
            None => String::new(),
        };
        format!("{} into {}: {} pages, {} files changed{secret}", self.game, self.folder.display(), self.pages, self.written)
    }
}

/// What the site's index reads of each game (`SITE/GAME/site.json`), so that publishing one game
/// lists every game already in the site.
#[derive(Debug, Serialize, Deserialize)]
struct Summary {
    /// The pbem version that wrote the pages (a newer one rewrites them: its pages or pictures may differ).
    #[serde(default)]
    pbem: String,
    id: String,
    title: String,
    status: String,
    /// How many records the published copy holds, and the SHA-256 (hex) of the last one's bytes:
    /// a later copy of the game must hold that record at that place ([`check_extends`]). Absent
    /// (0 and empty) in a site an earlier version wrote.
    #[serde(default)]
    records: u64,
    #[serde(default)]
    last_record: String,
}

/// Writes `bytes` to `path` unless it already holds exactly them; counts a write in `written`.
fn put(path: &Path, bytes: &[u8], written: &mut usize) -> Result<()> {
    if store::read(path).ok().as_deref() == Some(bytes) {
        return store::make_public(path);
    }
    // The site is for everyone: its files 0644, its folders 0755, whatever the host's umask.
    store::write_atomic_public(path, bytes)?;
    *written += 1;
    Ok(())
}

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.set_syntax(minijinja::syntax::SyntaxConfig::builder().trim_blocks(true).lstrip_blocks(true).build().expect("valid syntax config"));
    minijinja_embed::load_templates!(&mut env);
    env
}

/// A serializable value for a template.
fn serde_value<T: Serialize>(v: &T) -> minijinja::Value {
    minijinja::Value::from(minijinja::value::Serde(v))
}

fn render(env: &Environment<'_>, name: &str, ctx: minijinja::Value) -> Result<String> {
    let t = env.get_template(name).map_err(|e| Error::Usage(format!("template {name}: {e}")))?;
    t.render(ctx).map_err(|e| Error::Usage(format!("template {name}: {e}")))
}

/// A game id usable as a folder of the site (no `.`, `..` or hidden name).
/// The folder of game `id` in `site` (`None` for an id that cannot name a folder).
pub fn game_folder(site: &Path, id: &str) -> Option<PathBuf> {
    folder_name(id).ok().map(|f| site.join(f))
}

fn folder_name(id: &str) -> Result<&str> {
    let ok = !id.is_empty() && !id.starts_with('.') && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok { Ok(id) } else { Err(Error::Usage(format!("game id {id:?} cannot name a folder of the site"))) }
}

/// The public copy of one game, unpacked and audited, read for the pages.
struct Copy {
    gf: GameFile,
    game: &'static dyn crate::game::DynGame,
    records: Vec<(Vec<u8>, Record)>,
    receipts: BTreeMap<u64, Vec<Receipt>>,
    /// Late reveals by (step, role): the reveal and the record it is in.
    reveals: BTreeMap<(u64, String), (LateReveal, u64)>,
    audit: audit::AuditSummary,
}

/// Reads the unpacked public copy at `dir` (audited first: a copy that fails is not published).
fn read_copy(dir: &Path) -> Result<Copy> {
    let audit = audit::audit(dir, None)?;
    let gd = GameDir::new(dir);
    let gf = pipeline::read_game_file(&gd)?;
    let game = pipeline::rules(&gf.rules)?;
    let last = gd.last_record()?.unwrap_or(0);
    let mut records = Vec::new();
    let mut reveals = BTreeMap::new();
    let mut receipts = BTreeMap::new();
    for n in 0..=last {
        let bytes = store::read(&gd.record(n))?;
        let rec: Record = serde_json::from_slice(&bytes).map_err(|e| Error::input(gd.record(n), e.to_string()))?;
        for r in &rec.reveals {
            reveals.insert((r.step, r.role.clone()), (r.clone(), n));
        }
        // By the step a record opens (a host control opens its step again): a page shows the
        // receipts of the step its record resolves (tester22 T22b-1: they were looked up by the
        // record's number, which runs ahead of the step's once a control is written).
        if let Some(op) = &rec.opening {
            receipts.insert(op.step, pipeline::read_receipts(&gd, op.step)?.into_iter().map(|(_, r)| r).collect());
        }
        records.push((bytes, rec));
    }
    Ok(Copy { gf, game, records, receipts, reveals, audit })
}

/// Where the game stands after its last record, in one line.
fn status(copy: &Copy) -> String {
    let (_, last) = copy.records.last().expect("record 0");
    match (&last.outcome, &last.opening) {
        (Some(o), _) => format!("Over after {} steps: {}", last.index, o.summary),
        (None, Some(op)) => {
            let roles: Vec<&str> = op.asks.iter().map(|a| a.role.as_str()).collect();
            format!("Step {} is open: orders of {} are due by {}", op.step, roles.join(" and "), op.deadline)
        }
        (None, None) => "No step open".to_string(),
    }
}

/// The orders of one role in a step's page: as revealed in the record, or later, or still secret.
fn order_view(copy: &Copy, step: u64, o: &Revealed) -> minijinja::Value {
    let late = copy.reveals.get(&(step, o.role.clone()));
    let full = match late {
        Some((r, _)) if o.withheld => o.with_reveal(r),
        _ => o.clone(),
    };
    let secret = o.withheld && late.is_none();
    let until = match o.withheld_until {
        WithheldUntil::RoundEnd => "round's end",
        WithheldUntil::GameEnd => "game's end",
    };
    context! {
        role => &o.role, seq => o.seq, commitment => &o.commitment, nmr => o.nmr.as_deref().unwrap_or("default"),
        text => full.text, orders => if secret { String::new() } else { toml::to_string(&full.orders).unwrap_or_default() },
        secret => secret, until => until, revealed_in => late.filter(|_| o.withheld).map(|(_, at)| *at),
    }
}

/// An event on a step's page: its text (its lines joined), its roll, the events nested under it.
#[derive(Debug, Serialize, PartialEq)]
struct Nested {
    text: String,
    roll: Option<Roll>,
    children: Vec<Nested>,
}

/// A roll on a step's page: the die's sides and the value rolled.
#[derive(Debug, Serialize, PartialEq)]
struct Roll {
    sides: u32,
    value: u32,
}

/// `events` as nested lists: an event indented further (leading spaces, as games write an event
/// under the one it belongs to, e.g. a Flag Dash alternative's moves) than the one before it goes
/// in that one's sub-list, and so on down; its continued lines are joined with a space.
fn nest(events: &[crate::dice::Event]) -> Vec<Nested> {
    let depth = |e: &crate::dice::Event| e.text.len() - e.text.trim_start_matches(' ').len();
    let mut out = Vec::new();
    let mut i = 0;
    while i < events.len() {
        let d = depth(&events[i]);
        let end = events[i + 1..].iter().position(|e| depth(e) <= d).map_or(events.len(), |k| i + 1 + k);
        let e = &events[i];
        out.push(Nested {
            text: e.text.split_whitespace().collect::<Vec<_>>().join(" "),
            roll: e.roll.as_ref().map(|x| Roll { sides: x.sides, value: x.value }),
            children: nest(&events[i + 1..end]),
        });
        i = end;
    }
    out
}

/// The heading of record `n`'s page.
/// A record's page heading: the setup, the step it resolves, or what the host or players did
/// (a record's number and its step's differ once a control is written: tester22 T22b-2).
fn heading(n: u64, rec: &Record) -> String {
    match (&rec.resolution, &rec.control) {
        (Some(r), _) => format!("Step {}", r.step),
        (None, Some(c)) if c.action.by_players() => format!("Record {n}: the players end the game"),
        (None, Some(_)) => format!("Record {n}: the host"),
        (None, None) if n == 0 => "Setup".to_string(),
        (None, None) => format!("Record {n}"),
    }
}

/// Renders record `n`'s page; `picture` is its SVG file's name, if the game drew one.
fn step_page(env: &Environment<'_>, copy: &Copy, n: u64, picture: Option<&str>) -> Result<String> {
    let (bytes, rec) = &copy.records[n as usize];
    let last = copy.records.len() as u64 - 1;
    let replayed = (n as usize) < copy.audit.states.len();
    let no_picture = if !replayed {
        format!("The board after this step is drawn once the orders withheld in record {} are revealed.", copy.audit.states.len())
    } else {
        format!("{} draws no picture of the board yet.", copy.game.title())
    };
    let resolution = rec.resolution.as_ref().map(|r| {
        let prev_opening = copy.records[n as usize - 1].1.opening.as_ref();
        context! {
            step => r.step, host_seed => &r.host_seed, seed => &r.seed, resolved => &r.resolved,
            host_seed_commitment => prev_opening.map(|o| o.host_seed_commitment.clone()),
            events => serde_value(&nest(&r.events)),
            orders => r.orders.iter().map(|o| order_view(copy, r.step, o)).collect::<Vec<_>>(),
        }
    });
    let used: BTreeMap<&str, Option<u64>> = rec.resolution.iter().flat_map(|r| r.orders.iter()).map(|o| (o.role.as_str(), o.seq)).collect();
    let step = rec.resolution.as_ref().map(|r| r.step);
    let receipts: Vec<minijinja::Value> = step.and_then(|s| copy.receipts.get(&s)).into_iter().flatten().map(|r| {
        context! { role => &r.role, seq => r.seq, received => &r.received, commitment => &r.commitment, used => used.get(r.role.as_str()) == Some(&Some(r.seq)) }
    }).collect();
    let ctx = context! {
        root => "../", version => env!("CARGO_PKG_VERSION"), title => copy.game.title(), id => &copy.gf.id,
        index => n, heading => heading(n, rec), prev => n.checked_sub(1), next => (n < last).then_some(n + 1),
        control => rec.control.as_ref().map(|c| context! {
            text => c.describe(rec.opening.as_ref()), at => &c.at, by_players => c.action.by_players(),
            // The signed orders that ended the game, as the record quotes them (tester22 T22b-3).
            orders => c.orders.iter().map(|o| context! { role => &o.role, step => o.step, seq => o.seq, text => &o.text, signature => &o.signature }).collect::<Vec<_>>(),
        }),
        picture => picture, no_picture => no_picture, resolution => resolution, receipts => receipts,
        reveals => rec.reveals.iter().map(|r| context! { step => r.step, role => &r.role }).collect::<Vec<_>>(),
        outcome => rec.outcome.as_ref().map(|o| o.summary.clone()),
        opening => serde_value(&rec.opening),
        record => context! { sha256 => commit::sha256_hex(bytes), prev => &rec.prev, state => &rec.state, state_key => &rec.state_key },
    };
    render(env, "site/step.html", ctx)
}

/// One line for record `n` in the game's list of steps.
fn step_line(copy: &Copy, n: usize) -> String {
    let rec = &copy.records[n].1;
    if let Some(o) = &rec.outcome {
        return o.summary.clone();
    }
    match &rec.resolution {
        None => match &rec.control {
            Some(c) => c.describe(rec.opening.as_ref()),
            None => "the game is set up".to_string(),
        },
        Some(r) => {
            let rolls = r.events.iter().filter(|e| e.roll.is_some()).count();
            let nmr: Vec<&str> = r.orders.iter().filter(|o| o.seq.is_none()).map(|o| o.role.as_str()).collect();
            let mut line = format!("{} events, {rolls} rolls", r.events.len());
            if !nmr.is_empty() {
                line.push_str(&format!("; NMR: {}", nmr.join(", ")));
            }
            if r.orders.iter().any(|o| o.withheld) {
                line.push_str("; orders withheld for a while");
            }
            line
        }
    }
}

/// Renders the game's own index page.
fn game_page(env: &Environment<'_>, copy: &Copy, archive: &str, archive_bytes: &[u8]) -> Result<String> {
    let steps: Vec<minijinja::Value> = (0..copy.records.len())
        .map(|n| {
            let r = &copy.records[n].1;
            context! { href => format!("step-{n}.html"), heading => heading(n as u64, r), resolved => r.resolution.as_ref().map(|r| r.resolved.clone()), line => step_line(copy, n) }
        })
        .collect();
    let ctx = context! {
        root => "../", version => env!("CARGO_PKG_VERSION"), title => copy.game.title(), id => &copy.gf.id, rules => &copy.gf.rules,
        status => status(copy), seats => copy.gf.seats.iter().map(|s| s.role.clone()).collect::<Vec<_>>(),
        options => copy.gf.options.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(),
        archive => archive, archive_bytes => archive_bytes.len(), archive_sha256 => commit::sha256_hex(archive_bytes),
        steps => steps, audit => copy.audit.describe(), secret => copy.audit.secret.map(|(first, _)| first),
    };
    render(env, "site/game.html", ctx)
}

/// Publishes the game in `dir` into the site folder `site`: builds its public copy
/// ([`public::public_archive`]), unpacks and audits it, and writes from that copy alone
/// `site/GAME/index.html`, `site/GAME/step-N.html` (and `step-N.svg` where the game draws the
/// board, `Game::picture` as an observer), `site/GAME/GAME.tar`, then the site's `index.html`
/// listing every game in it and `style.css`. Files that already hold the right bytes are left
/// alone; nothing else in `site` is touched.
///
/// Errors: the game cannot be read, its public copy fails the audit (nothing of it is written),
/// or a file of the site cannot be written.
pub fn publish(dir: &Path, site: &Path) -> Result<Published> {
    let archive_bytes = public::public_archive(dir)?;
    let id = pipeline::read_game_file(&GameDir::new(dir))?.id;
    publish_archive(&id, archive_bytes, site)
}

/// [`publish`], unless the site already holds this game's public copy as it is now (and its
/// pages, written by this version of pbem): `None` then. What the cron run calls after every adjudication.
///
/// Errors: as [`publish`].
pub fn publish_if_changed(dir: &Path, site: &Path) -> Result<Option<Published>> {
    let archive_bytes = public::public_archive(dir)?;
    let id = pipeline::read_game_file(&GameDir::new(dir))?.id;
    let folder = site.join(folder_name(&id)?);
    let same = store::read(&folder.join(format!("{id}.tar"))).ok() == Some(archive_bytes.clone());
    let by_us = store::read_text(&folder.join("site.json")).ok().and_then(|t| serde_json::from_str::<Summary>(&t).ok()).is_some_and(|s| s.pbem == env!("CARGO_PKG_VERSION"));
    if same && by_us && folder.join("index.html").is_file() && site.join("index.html").is_file() {
        return Ok(None);
    }
    publish_archive(&id, archive_bytes, site).map(Some)
}

/// Publishes game `id` from its public copy `archive_bytes` (see [`publish`]).
fn publish_archive(id: &str, archive_bytes: Vec<u8>, site: &Path) -> Result<Published> {
    let id = id.to_string();
    let folder_id = folder_name(&id)?.to_string();
    let archive = format!("{folder_id}.tar");
    let unpacked = public::unpack_bytes(&archive_bytes, Path::new(&archive))?;
    let copy = read_copy(&unpacked.game).map_err(|e| {
        // Named as in the archive, not the folder it was unpacked into.
        let mut f = AuditFailure::from_error(AuditCheck::Record, e);
        f.path = f.path.map(|p| PathBuf::from(unpacked.rename(&p.display().to_string())));
        f.detail = unpacked.rename(&f.detail);
        Error::from(f)
    })?;
    let env = environment();
    let folder = site.join(&folder_id);
    check_extends(&folder, &id, &copy)?;
    // Everything is rendered before anything is written: a failure leaves the site as it was.
    let mut files: Vec<(PathBuf, Vec<u8>)> = Vec::new();
    for n in 0..copy.records.len() {
        let svg = match copy.audit.states.get(n) {
            Some(state) => copy.game.picture(state, None, copy.records[n].1.outcome.is_some())?,
            None => None,
        };
        let name = format!("step-{n}.svg");
        let page = step_page(&env, &copy, n as u64, svg.as_ref().map(|_| name.as_str()))?;
        if let Some(svg) = svg {
            files.push((folder.join(&name), svg.into_bytes()));
        }
        files.push((folder.join(format!("step-{n}.html")), page.into_bytes()));
    }
    files.push((folder.join("index.html"), game_page(&env, &copy, &archive, &archive_bytes)?.into_bytes()));
    let last_record = copy.records.last().map(|(bytes, _)| commit::sha256_hex(bytes)).unwrap_or_default();
    let summary = Summary { pbem: env!("CARGO_PKG_VERSION").to_string(), id: id.clone(), title: copy.game.title().to_string(), status: status(&copy), records: copy.records.len() as u64, last_record };
    files.push((folder.join("site.json"), format!("{}\n", serde_json::to_string_pretty(&summary).expect("summary serializes")).into_bytes()));
    files.push((folder.join(&archive), archive_bytes));
    let mut written = 0;
    for (path, bytes) in &files {
        put(path, bytes, &mut written)?;
    }
    write_index(&env, site, &mut written)?;
    Ok(Published { game: id, folder, pages: copy.records.len() + 1, written, secret_from: copy.audit.secret.map(|(f, _)| f) })
}

/// Whether `copy` of game `id` holds the site's copy in `folder` (its `site.json`) as its first
/// records: publishing an older copy (a backup) or another game with the same id (two demos of
/// one seed) would take the public record back or rewrite it (tester13 D7). A `site.json` an
/// earlier version wrote (no record count) is not checked.
///
/// Errors: [`Error::input`] on the site's `site.json`, saying how the copy differs and that
/// removing the folder publishes it in its place.
fn check_extends(folder: &Path, id: &str, copy: &Copy) -> Result<()> {
    let path = folder.join("site.json");
    let Some(shown) = store::read_text(&path).ok().and_then(|t| serde_json::from_str::<Summary>(&t).ok()).filter(|s| s.records > 0) else { return Ok(()) };
    let last = shown.records - 1;
    let why = match copy.records.get(last as usize) {
        Some((bytes, _)) if commit::sha256_hex(bytes) == shown.last_record => return Ok(()),
        Some(_) => format!("this copy's record {last} is not the one the site shows: another game with the id {id}, or a history rewritten"),
        None => format!("this copy ends at record {}: an older copy of the game, or another game with the id {id}", copy.records.len().saturating_sub(1)),
    };
    Err(Error::input(path, format!("the site shows game {id} up to record {last}, but {why} (remove {} to publish this copy in its place)", folder.display())))
}

/// Writes the site's `index.html` (every `GAME/site.json` in it, by id) and `style.css`.
fn write_index(env: &Environment<'_>, site: &Path, written: &mut usize) -> Result<()> {
    let mut games = Vec::new();
    for name in store::list(site)? {
        let path = site.join(&name).join("site.json");
        if !path.is_file() {
            continue;
        }
        let s: Summary = serde_json::from_str(&store::read_text(&path)?).map_err(|e| Error::input(&path, format!("not a game summary of pbem publish: {e}")))?;
        games.push(s);
    }
    let ctx = context! { root => "", version => env!("CARGO_PKG_VERSION"), games => serde_value(&games) };
    put(&site.join("index.html"), render(env, "site/index.html", ctx)?.as_bytes(), written)?;
    let css = env.get_template("site/style.css").map_err(|e| Error::Usage(format!("template site/style.css: {e}")))?.source().to_string();
    put(&site.join("style.css"), css.as_bytes(), written)
}
