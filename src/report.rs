//! Players' text reports: one template environment (embedded `templates/`, overridable from a
//! folder) and the one function that builds what a role may see after a record.

use std::path::Path;

use chrono::{DateTime, Utc};
use minijinja::{Environment, UndefinedBehavior};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::game::DynGame;
use crate::model::{GameFile, Opening, Record};
use crate::orderfile::{self, Header};

/// Whether the signed order `text` offers a draw (`draw = true` in `[orders]`): parsed only when
/// a line starts with `draw` (the form's comments mention it too).
pub(crate) fn offers_draw(text: &str) -> bool {
    text.lines().any(|l| l.trim_start().starts_with("draw")) && orderfile::parse(text).is_ok_and(|f| f.ending.draw == Some(true))
}

/// The seats whose orders an earlier record withheld and `record` reveals offer a draw, each
/// with the step of those orders (`{role, step}`; reports of wording 3: tester t17c-1, an offer in
/// a Gettysburg round's secret orders was never told), unless the record shows the seat sent
/// orders of a later step (they replaced the offer, or carry their own).
fn revealed_offers(record: &Record) -> Vec<minijinja::Value> {
    let later = |role: &str, step: u64| {
        record.reveals.iter().any(|r| r.role == role && r.step > step && r.text.is_some())
            || record.resolution.iter().any(|res| res.step > step && res.orders.iter().any(|o| o.role == role && o.seq.is_some()))
    };
    record
        .reveals
        .iter()
        .filter(|r| r.text.as_deref().is_some_and(offers_draw) && !later(&r.role, r.step))
        .map(|r| minijinja::context! { role => &r.role, step => r.step })
        .collect()
}

/// A template environment: the embedded templates, each replaced by a file of the same relative
/// name in `override_dir` when given. Undefined variables are errors (strict).
pub fn environment(override_dir: Option<&Path>) -> Result<Environment<'static>> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .keep_trailing_newline(true)
            .build()
            .expect("valid syntax config"),
    );
    // `text|wrap(width)`: the text's words wrapped to `width` columns, as the games wrap theirs
    // (`crate::text::wrap`): for a line a template changed after the game wrapped it.
    env.add_filter("wrap", |text: String, width: usize| crate::text::wrap(&text, width));
    minijinja_embed::load_templates!(&mut env);
    if let Some(dir) = override_dir {
        add_dir(&mut env, dir, dir)?;
    }
    Ok(env)
}

/// The [`environment`] for `override_dir`, built once per process and shared (a step's reports,
/// every step of a run): building it parses every template. The override folder is read when
/// first asked for; a failure is not kept (the next call tries again).
pub fn shared_environment(override_dir: Option<&Path>) -> Result<std::sync::Arc<Environment<'static>>> {
    type Cache = std::sync::Mutex<Vec<(Option<std::path::PathBuf>, std::sync::Arc<Environment<'static>>)>>;
    static CACHE: Cache = std::sync::Mutex::new(Vec::new());
    let key = override_dir.map(Path::to_path_buf);
    if let Some((_, env)) = CACHE.lock().unwrap_or_else(|p| p.into_inner()).iter().find(|(k, _)| *k == key) {
        return Ok(env.clone());
    }
    let env = std::sync::Arc::new(environment(override_dir)?);
    CACHE.lock().unwrap_or_else(|p| p.into_inner()).push((key, env.clone()));
    Ok(env)
}

/// Adds every `*.txt` file under `dir` (its relative name from `base`) to `env`. A folder named
/// like a template (`report.txt/`) is an error naming it, not a silent fall back to the built-in
/// template (tester9 D10); a FIFO or device fails to read, naming it (`store::read`).
fn add_dir(env: &mut Environment<'static>, base: &Path, dir: &Path) -> Result<()> {
    for name in crate::store::list(dir)? {
        let path = dir.join(&name);
        if path.is_dir() && name.ends_with(".txt") {
            return Err(Error::input(&path, "a folder, where a template file is expected"));
        } else if path.is_dir() {
            add_dir(env, base, &path)?;
        } else if name.ends_with(".txt") {
            let rel = path.strip_prefix(base).expect("under base").to_string_lossy().replace('\\', "/");
            let src = crate::store::read_text(&path)?;
            env.add_template_owned(rel, src).map_err(|e| Error::input(&path, e.to_string()))?;
        }
    }
    Ok(())
}

/// The order form for `role` in the step `opening` asks, with `nonce` (empty in reports).
/// Comments: the prompt, the deadline in the seat's time zone with the time left at `made` (when
/// the form is made; `None`: when the step opened, as in a report of the record that opened it), the game's help on legal
/// choices; body: the game's default (legal) order.
pub fn order_form(game: &dyn DynGame, gf: &GameFile, opening: &Opening, state: &str, role: &str, nonce: &str, made: Option<DateTime<Utc>>) -> Result<Option<String>> {
    let Some(ask) = opening.asks.iter().find(|a| a.role == role) else { return Ok(None) };
    let (deadline, left) = deadline_for(gf, opening, role, made);
    let mut comments = vec![format!("{}: order form for {role}, step {} ({})", game.title(), opening.step, ask.kind), format!("Deadline: {deadline}")];
    comments.extend(left.map(|l| format!("Time left: {l} (when this form was made)")));
    comments.push(String::new());
    comments.extend(ask.prompt.lines().map(str::to_string));
    comments.push(String::new());
    comments.extend(game.form_help(state, role, gf.wording)?);
    comments.push(String::new());
    comments.extend(ending_help(game, state)?);
    comments.push(String::new());
    comments.push("Leave [pbem] as it is. `pbem sign` puts fresh randomness of your own".into());
    comments.push("in the nonce; signing with ssh-keygen instead, put your own 64 random".into());
    comments.push("hex digits there (openssl rand -hex 32).".into());
    let header = Header {
        game: gf.id.clone(),
        step: opening.step,
        role: role.to_string(),
        host_seed_commitment: opening.host_seed_commitment.clone(),
        nonce: nonce.to_string(),
    };
    let orders = game.default_order(state, role)?;
    Ok(Some(orderfile::form_text(&header, &comments, &orders)))
}

/// The form's lines on ending the game by a signed order (SPEC.md "Ending by the players").
fn ending_help(game: &dyn DynGame, state: &str) -> Result<Vec<String>> {
    if game.sides(state)?.len() < 2 {
        return Ok(vec!["To resign (the game is then lost): send `resign = true` alone in [orders].".into()]);
    }
    Ok(vec![
        "To resign (your side loses at once): send `resign = true` alone in [orders].".into(),
        "To offer or agree a draw: add `draw = true` to [orders]; the game is drawn".into(),
        "when every seat's newest order says so (orders without it withdraw it).".into(),
    ])
}

/// The form of a seat the open step asks nothing of: only for resigning or a draw offer, which
/// a seat may send at any open step (`pbem form`).
pub fn ending_form(game: &dyn DynGame, gf: &GameFile, opening: &Opening, state: &str, role: &str, nonce: &str) -> Result<String> {
    let mut comments = vec![
        format!("{}: form for {role}, step {}", game.title(), opening.step),
        format!("Step {} asks nothing of {role}: this form is only for ending the game.", opening.step),
        String::new(),
    ];
    comments.extend(ending_help(game, state)?);
    comments.push("`draw = false` withdraws your draw offer.".into());
    let header = Header { game: gf.id.clone(), step: opening.step, role: role.to_string(), host_seed_commitment: opening.host_seed_commitment.clone(), nonce: nonce.to_string() };
    Ok(orderfile::form_text(&header, &comments, &crate::game::Orders::new()))
}

/// `opening`'s deadline as `role` reads it (in the seat's time zone) and the time left from `from`
/// (`None`: from when the step opened, which is the time of the record that opened it).
pub fn deadline_for(gf: &GameFile, opening: &Opening, role: &str, from: Option<DateTime<Utc>>) -> (String, Option<String>) {
    let from = from.or_else(|| crate::when::parse_time(&opening.opened).ok());
    let (at, left) = crate::when::deadline(&opening.deadline, gf.zone_of(role), from.unwrap_or(DateTime::<Utc>::MIN_UTC));
    (at, if from.is_some() { left } else { None })
}

#[derive(Serialize)]
struct ReceiptLine {
    role: String,
    seq: Option<u64>,
    commitment: Option<String>,
    /// For an NMR, whose orders were used: `"default"` or `"bot"` (the built-in player's).
    nmr: Option<String>,
}

/// Renders `role`'s report after `record`, from the state after it and the step's full event list
/// (`events`: the record holds only the public ones; the others come from resolving or replaying
/// the step). Deterministic: the form inside has an empty nonce.
pub fn render(
    env: &Environment<'_>,
    game: &dyn DynGame,
    gf: &GameFile,
    record: &Record,
    events: &[crate::dice::Event],
    state: &str,
    role: &str,
) -> Result<String> {
    let sha256 = crate::commit::sha256_hex(&crate::model::record_bytes(record));
    render_pinned(env, game, gf, Pinned { record, sha256: &sha256, earlier_wording: false }, events, state, role)
}

/// The report wording a game made now keeps for its whole life (`game.toml`'s `wording`), given
/// to the templates as `wording`: a change to what reports say for the same record and state is
/// made under a new number, with the old text kept for games of the old one, so that every game
/// still audits byte for byte (reports are replayed). 0 stands for games made before the mark.
///
/// 1 (2026-12-03): Gettysburg's planned moves say "moved" for a corps whose moves this round are
/// done, and none are listed once the game is over (tester16 T16b-1, T16c-12); Throw Down That
/// Flag says "All N rounds played" past the last round, not "Round N+1 of N" (T16c-3); a game
/// its players or the host ended asks no question and lists no planned moves (tester17 T17-3);
/// only the present wordings of `Pinned::earlier_wording`'s cases are accepted.
///
/// 2 (2026-12-03): a game its players or the host ended heads its reports "The game is over",
/// not the phase it stopped in (Gettysburg, Flag Dash: tester20 T20c-6); Throw Down That Flag's
/// short account says an order the seat did not send was the default orders or the built-in
/// player's, not "your order" (`own_nmr`, T20c-2), its line wrapped again at 90 columns (T21a-6);
/// Flag Dash lists no team plans once the game is over (T21b-8) and says a plan is set for every
/// seat, not that every plan is in, when a seat's came from its NMR (an event: `Ctx::worded`,
/// T21b-2); a Flag Dash card repeat that fails says which repeat it is (T20c-3); a step's report
/// names the seats whose orders of the step offer a draw (T21b-1).
///
/// 3 (2026-12-04): Gettysburg's planned moves say a corps whose move into an enemy-held town
/// waits for the enemy's vacate-or-defend decision is "moving into" it, not "moved" (tester
/// t17b-1: it has not left its town yet); Throw Down That Flag's text map puts each company's
/// letter under its column's, and marks a company with a gun and the colors `*` (t17b-12: `H3+^`
/// ran into the next cell); a record that reveals orders an earlier one withheld names the seats
/// whose revealed orders offer a draw, unless they sent orders since (t17c-1).
///
/// 4 (2026-12-04), from a tester's games of Flag Dash and Throw Down That Flag by mail: Flag
/// Dash tells a same-team tie's answer the asked seat did not send as the default (or the built-in
/// player's), not as the seat's: "white-1 did not answer the tie: by default, white-1 (the team's
/// first seat) moves first." (an event: `Ctx::unsent`); Throw Down That Flag's short account
/// marks where a campaign's July 3 begins with a line of its own, and its line for a First
/// Minnesota activation tells what the attack did right after it, cause before effect (the
/// target's loss, then the company's own, each with its colors passing, then the guns), a move
/// after the attack last, and an attack that missed says "a miss", not "no hit" (which read as
/// the whole exchange's result: tester t19a D5) (`summary::union`); its activation form (part of the report) lists the
/// spaces holding a company of the player's that the asked company can move through (the rules
/// allow it and the engine took such paths; the form left them out); a campaign's reports say, in
/// their head while the campaign goes on, how it is won (pbem's: both days; README), or that it
/// is lost once a day of it was lost (t19a D4), the next
/// day's title on a line of its own (the line ran past 100 columns).
pub const WORDING: u32 = 4;

/// A record with the SHA-256 (hex) of its file, its canonical bytes: what a report pins.
#[derive(Clone, Copy)]
pub struct Pinned<'a> {
    /// The record.
    pub record: &'a Record,
    /// The SHA-256 of `model::record_bytes(record)`, hex (the caller has it already: the audit).
    pub sha256: &'a str,
    /// Render as versions before 2026-12-03 did: an NMR the built-in player covered worded as
    /// the default orders ("the default orders were used"), and a host control record's time
    /// left counted from when its step opened, not from the control (tester14 T14a-2), its asked
    /// seats headed "awaiting orders from" (T14a-4). The audit
    /// accepts a report those versions wrote so, so that a game they made still audits (reports
    /// are replayed byte for byte): only for a game of wording 0 (made before [`WORDING`]).
    /// `false` everywhere else.
    pub earlier_wording: bool,
}

/// [`render`] for a record whose file's hash the caller has.
pub fn render_pinned(
    env: &Environment<'_>,
    game: &dyn DynGame,
    gf: &GameFile,
    pinned: Pinned<'_>,
    events: &[crate::dice::Event],
    state: &str,
    role: &str,
) -> Result<String> {
    let record = pinned.record;
    let view = game.report_view(state, role)?;
    let events: Vec<String> = events
        .iter()
        .filter(|e| e.visible_to(role))
        .map(|e| e.text.clone())
        .collect();
    let receipts: Vec<ReceiptLine> = record
        .resolution
        .iter()
        .flat_map(|r| r.orders.iter())
        .map(|o| ReceiptLine { role: o.role.clone(), seq: o.seq, commitment: o.commitment.clone(), nmr: o.nmr.clone().filter(|_| !pinned.earlier_wording) })
        .collect();
    // The seats whose revealed orders of this step offer a draw (wording 2: tester21 T21b-1, the
    // other seats were never told of an offer). Only this step's: a record holds no other.
    let draw_offers: Vec<String> = record
        .resolution
        .iter()
        .flat_map(|r| r.orders.iter())
        .filter(|o| gf.wording >= 2 && !o.withheld)
        .filter(|o| o.text.as_deref().is_some_and(offers_draw))
        .map(|o| o.role.clone())
        .collect();
    let revealed_offers = if gf.wording >= 3 { revealed_offers(record) } else { Vec::new() };
    // How this seat's orders of the step were made when it sent none (`"default"`, `"bot"`).
    let own_nmr = record.resolution.iter().flat_map(|r| r.orders.iter()).find(|o| o.role == role && o.seq.is_none()).map(|o| o.nmr.clone().unwrap_or_else(|| "default".into()));
    let pin = pin_block(gf, record, pinned.sha256);
    // The time left when the report was written: at a host control (a resume, a deadline moved,
    // a seat changed), from the control's time; else from when the step opened (its record).
    let written = record.control.as_ref().filter(|_| !pinned.earlier_wording).and_then(|c| crate::when::parse_time(&c.at).ok());
    let form = match &record.opening {
        Some(op) => order_form(game, gf, op, state, role, "", written)?,
        None => None,
    };
    let deadline = record.opening.as_ref().map(|op| deadline_for(gf, op, role, written));
    use minijinja::Value;
    let ctx = minijinja::context! {
        title => game.title(),
        rules => game.rules(),
        game => &gf.id,
        role => role,
        wording => gf.wording,
        own_nmr => own_nmr,
        draw_offers => draw_offers,
        revealed_offers => revealed_offers,
        index => record.index,
        resolution => record.resolution.as_ref().map(|r| minijinja::context! {
            step => r.step, resolved => &r.resolved, host_seed => &r.host_seed, seed => &r.seed,
        }),
        control => record.control.as_ref().map(|c| minijinja::context! {
            at => &c.at, text => c.describe(record.opening.as_ref()),
            by => if c.action.by_players() { "ended by the players" } else { "host control" },
            title => if c.action.by_players() { "THE PLAYERS ENDED THE GAME" } else { "NOTICE FROM THE HOST" },
        }),
        events => events,
        receipts => Value::from(minijinja::value::Serde(receipts)),
        view => view,
        opening => Value::from(minijinja::value::Serde(&record.opening)),
        outcome => Value::from(minijinja::value::Serde(&record.outcome)),
        form => form,
        // A host control's report is written with orders perhaps already in, which it cannot
        // see (a report is a function of the record and state): it names the seats asked, not
        // the ones still awaited (tester14 T14a-4; the mail's head and `status` say who sent).
        asks_heading => if record.control.is_some() && !pinned.earlier_wording { "orders asked of (some may be in already)" } else { "awaiting orders from" },
        deadline => deadline.as_ref().map(|d| d.0.clone()),
        time_left => deadline.and_then(|d| d.1),
        pin => &pin,
    };
    let tmpl = env.get_template("report.txt").map_err(|e| Error::Usage(format!("template: {e}")))?;
    let text = tmpl.render(ctx).map_err(|e| Error::Usage(format!("report template for {}: {e:#}", game.rules())))?;
    // The block is what a player keeps to pin the history (README "What a kept report pins"): a
    // template that leaves it out would make every report of the game useless as evidence.
    if !shows(&text, &pin) {
        return Err(Error::Usage(format!("report template report.txt must show {{{{ pin }}}} (the {PIN_HEAD} block) as it is")));
    }
    Ok(text)
}

/// Whether `text` holds `pin` (a [`pin_block`]) as it is: where its first line, [`PIN_HEAD`],
/// stands (what `text.contains(pin)` says, without preparing a search for the whole block).
fn shows(text: &str, pin: &str) -> bool {
    if !pin.starts_with(PIN_HEAD) {
        return text.contains(pin);
    }
    text.match_indices(PIN_HEAD).any(|(i, _)| text[i..].starts_with(pin))
}

/// The first line of the block in every report that pins the record it follows.
pub const PIN_HEAD: &str = "KEEP THIS REPORT";

/// The block a player keeps: game id, record index, whether the record ends the game, and the
/// SHA-256 of the record file (its canonical bytes, as written and as the audit reads them).
/// Lines stay under 76 characters and hold no `=`, so that a saved mail keeps them unbroken.
fn pin_block(gf: &GameFile, record: &Record, hash: &str) -> String {
    let over = if record.outcome.is_some() { "yes, the game ended with this record" } else { "no, the game goes on" };
    format!(
        "{PIN_HEAD}\n  `pbem audit GAME --report FILE` checks that the game still holds this\n  \
         record, with this hash, and every record before it.\n  \
         game:   {}\n  record: {}\n  over:   {over}\n  sha256: {hash}\n",
        gf.id, record.index
    )
}

/// What a kept report pins: read back from its [`PIN_HEAD`] block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// The game id.
    pub game: String,
    /// The record the report follows.
    pub record: u64,
    /// Whether the report says that record ended the game.
    pub over: bool,
    /// Hex SHA-256 of that record's file.
    pub sha256: String,
}

/// Reads every [`PIN_HEAD`] block of a kept report: the report text as written or mailed, with
/// any mail quoting (`>`) or indentation. A text may hold several (a reply quoting an older
/// report, a saved thread): each is a claim about the game and each is checked. Errors say what
/// is missing or malformed, with the line (from 1).
pub fn read_pins(text: &str) -> std::result::Result<Vec<Pin>, String> {
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim_start_matches(|c: char| c == '>' || c.is_whitespace()).trim_end()))
        .collect();
    let starts: Vec<usize> = lines.iter().enumerate().filter(|(_, (_, l))| *l == PIN_HEAD).map(|(i, _)| i).collect();
    if starts.is_empty() {
        return Err(format!("holds no \"{PIN_HEAD}\" block (is it a pbem report?)"));
    }
    starts.into_iter().map(|start| read_pin_at(&lines, start)).collect()
}

/// The block whose head is `lines[start]`.
fn read_pin_at(lines: &[(usize, &str)], start: usize) -> std::result::Result<Pin, String> {
    let (mut game, mut record, mut over, mut sha256) = (None, None, None, None);
    for &(at, l) in lines[start + 1..].iter().take_while(|(_, l)| !l.is_empty()) {
        let Some((key, value)) = l.split_once(':') else { continue };
        let value = value.trim();
        let bad = |what: &str| format!("line {at}: {key}: {what}");
        match key {
            "game" => game = Some(value.to_string()),
            "record" => record = Some(value.parse::<u64>().map_err(|_| bad("not a record number"))?),
            "over" if value.starts_with("yes") => over = Some(true),
            "over" if value.starts_with("no") => over = Some(false),
            "over" => return Err(bad("neither yes nor no")),
            "sha256" if value.len() == 64 && value.bytes().all(|b| b.is_ascii_hexdigit()) => sha256 = Some(value.to_ascii_lowercase()),
            "sha256" => return Err(bad("not 64 hex digits")),
            _ => {}
        }
    }
    let head = lines[start].0;
    let need = |what: &str| format!("the {PIN_HEAD} block at line {head} has no {what} line");
    Ok(Pin {
        game: game.ok_or_else(|| need("game:"))?,
        record: record.ok_or_else(|| need("record:"))?,
        over: over.ok_or_else(|| need("over:"))?,
        sha256: sha256.ok_or_else(|| need("sha256:"))?,
    })
}

static OVERRIDE: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();

/// Sets the process-wide template override folder (the CLI's `--templates`), once.
pub fn set_override(dir: Option<std::path::PathBuf>) {
    let _ = OVERRIDE.set(dir);
}

/// The override folder set by [`set_override`], if any.
pub fn override_dir() -> Option<&'static Path> {
    OVERRIDE.get().and_then(|o| o.as_deref())
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: &str = "d9b489338cce12e9418c44ce70210b15f69470114b42f02f8f0bc46235bd4ee0";

    fn block(record: u64, over: &str) -> String {
        format!("{PIN_HEAD}\n  some words\n  game:   g1\n  record: {record}\n  over:   {over}\n  sha256: {H}\n")
    }

    /// The one block of `text`.
    fn read_pin(text: &str) -> std::result::Result<Pin, String> {
        read_pins(text).map(|mut v| v.remove(0))
    }

    #[test]
    fn every_pin_is_read_through_mail_quoting() {
        let quoted: String = block(3, "no, the game goes on").lines().map(|l| format!("> > {l}\n")).collect();
        let text = format!("Report\n{}\nlater:\n{quoted}", block(9, "yes, the game ended with this record"));
        assert_eq!(read_pin(&quoted), Ok(Pin { game: "g1".into(), record: 3, over: false, sha256: H.into() }));
        let both = read_pins(&text).unwrap();
        assert_eq!(both.iter().map(|p| (p.record, p.over)).collect::<Vec<_>>(), vec![(9, true), (3, false)], "a final report with an older one quoted below it: both");
    }

    #[test]
    fn a_report_shows_its_pin_only_as_it_is() {
        let pin = block(3, "no");
        let edited = pin.replace("record: 3", "record: 4");
        for text in [pin.clone(), format!("x{PIN_HEAD}\n{pin}y"), format!("{edited}{pin}"), edited.clone(), pin[..pin.len() - 1].to_string(), String::new()] {
            assert_eq!(shows(&text, &pin), text.contains(&pin), "{text:?}");
        }
        assert!(!shows("anything", "not a pin") && shows("a not a pin b", "not a pin"));
    }

    #[test]
    fn a_broken_pin_says_what_is_wrong() {
        assert!(read_pin("no block here").unwrap_err().contains("holds no"));
        let short = block(3, "no").replace(&H[..2], "");
        assert!(read_pin(&short).unwrap_err().contains("line 6: sha256: not 64 hex digits"), "{:?}", read_pin(&short));
        let gone = block(3, "no").replace("  game:   g1\n", "");
        assert!(read_pin(&gone).unwrap_err().contains("has no game: line"));
        assert!(read_pin(&block(3, "maybe")).unwrap_err().contains("over: neither yes nor no"));
        assert!(read_pin(&block(3, "no").replace("record: 3", "record: x")).unwrap_err().contains("not a record number"));
    }
}
