//! A player's report mail: its text (what is due, the press received, the report, the note on
//! auditing after the last record) and its attachments (the order form, the picture of the
//! board). The cron run mails it; the `report` command sends it again.

use std::path::Path;

use chrono::{DateTime, Utc};

use super::config::{HostConfig, In, seat_deadline};
use crate::error::{Error, Result};
use crate::model::{GameFile, Record};
use crate::{pipeline, report, store};

/// Text attachments of a mail: (file name, content).
pub type Files = Vec<(String, Vec<u8>)>;

/// The text of `role`'s report mail for record `rec` (what is due, the press received since the
/// record before it, the report; after the last record, how to audit the game) and its
/// attachment (the order form when orders are due): what the `report` command sends again.
/// `replaced_by`: the game's newest record, mailed in the same run, when it is later than `rec`:
/// then the mail says so and asks for nothing, with no form (its deadline is gone: tester20
/// T20a-3, T21a-1).
#[allow(clippy::too_many_arguments)]
pub fn report_parts(
    dir: &store::GameDir,
    gf: &GameFile,
    game: &dyn crate::game::DynGame,
    (rec, replaced_by): (&Record, Option<u64>),
    state: &str,
    role: &str,
    cfg: &HostConfig,
    now: DateTime<Utc>,
) -> Result<(String, Files)> {
    let seat = gf.seat(role).ok_or_else(|| Error::input(dir.game_file(), format!("no seat {role}")))?;
    let text = store::read_text(&dir.report(rec.index, role))?;
    let mut attachments = Vec::new();
    let mut head = String::new();
    // A site that holds a game only once it is over has no page of a running game's step.
    if let Some(url) = cfg.publish.page_url(&gf.id, rec.index).filter(|_| cfg.publish.while_running || rec.outcome.is_some()) {
        head.push_str(&format!("This step on the game's public page: {url}\n\n"));
    }
    let replaced = replaced_by.filter(|&n| n > rec.index && rec.opening.is_some());
    if let Some(n) = replaced {
        head.push_str(&format!("This report is out of date: record {n}, mailed with it, replaces it: read that one instead.\n\n"));
    }
    if let Some(op) = rec.opening.as_ref().filter(|_| replaced.is_none()) {
        match report::order_form(game, gf, op, state, role, "", Some(now))? {
            Some(form) => {
                head.push_str(&match orders_in(dir, gf, op.step, role)? {
                    Some(In { seq, by_you: false }) => format!(
                        "An order for step {} that this seat's previous holder signed is in (receipt {seq}): it stands unless you send your own. To replace it before {}, fill in the attached form, sign it and send it: the newest order counts.\n\n",
                        op.step,
                        seat_deadline(cfg, seat, op)
                    ),
                    Some(In { seq, .. }) => format!(
                        "Your orders for step {} are in (receipt {seq}); nothing more is needed. To change them before {}, fill in the attached form, sign it and send it: the newest order counts.\n\n",
                        op.step,
                        seat_deadline(cfg, seat, op)
                    ),
                    None => format!(
                        "Your orders for step {} are due by {}.\nThe order form is attached: fill it in, sign it (`pbem sign --key KEY FILE` fills the nonce) and send it back.\n\n",
                        op.step,
                        seat_deadline(cfg, seat, op)
                    ),
                });
                attachments.push((format!("{}-step-{}-{role}.toml", gf.id, op.step), form.into_bytes()));
            }
            None => head.push_str(&format!("Step {} asks nothing of you; its deadline is {}.\n\n", op.step, seat_deadline(cfg, seat, op))),
        }
    }
    let root = dir.root.parent().unwrap_or(Path::new("."));
    let since = match rec.index {
        0 => None,
        n => Some(super::press::record_time(&pipeline::read_record(dir, n - 1)?)?),
    };
    head.push_str(&super::press::listed(root, &gf.id, role, since, super::press::record_time(rec)?)?);
    picture_attachment(game, gf, (rec.index, rec.outcome.is_some()), state, role, &mut head, &mut attachments);
    let mut body = format!("{head}{text}");
    if rec.outcome.is_some() {
        body.push_str(&format!("\n{}", public_record_note(cfg)));
    }
    Ok((body, attachments))
}

/// For a seat change that gave `role` a new address: the plans its teammates have in for the
/// step still open, as their plan mails had them (those went to the old address). Empty for any
/// other record, once that step is over, and for an address that also holds a seat of another
/// team (a team's plans never reach the other side).
pub fn new_holder_plans(dir: &store::GameDir, rec: &Record, role: &str) -> Result<String> {
    let Some(change) = rec.control.as_ref().and_then(|c| c.seat.as_ref()).filter(|c| c.role == role) else { return Ok(String::new()) };
    let old = toml::from_str::<GameFile>(&change.before).ok().and_then(|b| b.seat(role).map(|s| s.email.clone()));
    if old.is_some_and(|e| e.eq_ignore_ascii_case(&change.email)) {
        return Ok(String::new());
    }
    let g = pipeline::load(&dir.root)?;
    let open_step = |r: &Record| r.opening.as_ref().map(|o| o.step);
    let email = match g.gf.seat(role) {
        Some(s) if open_step(&g.record).is_some() && open_step(&g.record) == open_step(rec) => s.email.clone(),
        _ => return Ok(String::new()),
    };
    if !g.game.teammates_see_plans() || crate::team::on_other_team(&g, role, &email)? {
        return Ok(String::new());
    }
    let mut plans = Vec::new();
    for mate in crate::team::teammates(&g, role)? {
        if !g.gf.seat(&mate).is_some_and(|s| super::compose::same_address(&s.email, &email)) {
            plans.extend(crate::team::plan_of(&g, &mate)?);
        }
    }
    if plans.is_empty() {
        return Ok(String::new());
    }
    Ok(format!(
        "\nYou now hold the seat {role}. Your teammates' plans already in for this step (teammates may look at each\nother's plans at any time; a later plan is mailed to you as it comes):\n\n{}",
        crate::team::plans_text(&plans)
    ))
}

/// The seq of `role`'s newest receipt in `step`, if its orders are in.
pub fn orders_in(dir: &store::GameDir, gf: &GameFile, step: u64, role: &str) -> Result<Option<In>> {
    Ok(pipeline::latest_receipts(dir, step)?.get(role).map(|r| In { seq: r.seq, by_you: pipeline::sent_by_present_holder(dir, gf, r) }))
}

/// Attaches the picture of the board as `role` sees it after record `n` (a PNG, mail programs
/// rarely show SVG) and says so at the head of the mail; a picture that cannot be drawn is said
/// there instead (the report goes out all the same). `ended`: record `n` ended the game.
fn picture_attachment(
    game: &dyn crate::game::DynGame,
    gf: &GameFile,
    (n, ended): (u64, bool),
    state: &str,
    role: &str,
    head: &mut String,
    attachments: &mut Vec<(String, Vec<u8>)>,
) {
    let png = match game.picture(state, Some(role), ended) {
        Ok(Some(svg)) => crate::picture::png(&svg),
        Ok(None) => return,
        Err(e) => Err(e.into()),
    };
    match png {
        Ok(bytes) => {
            let name = format!("{}-record-{n}-{role}.png", gf.id);
            head.push_str(&format!("A picture of the board as you see it is attached ({name}).\n\n"));
            attachments.push((name, bytes));
        }
        Err(e) => head.push_str(&format!("(The picture of the board could not be drawn: {e}.)\n\n")),
    }
}

/// How a player gets and audits the public record (in the receipt reply, `help` and the final
/// report mail): where the host publishes the site (`[publish] public_url`), each game's archive
/// is there too; with `[publish] while_running = false`, once the game is over.
pub fn public_record_note(cfg: &HostConfig) -> String {
    let where_ = match &cfg.publish.public_url {
        Some(u) => format!("or download it from {}/GAME/GAME.tar", u.trim_end_matches('/')),
        None => "or ask the host where they are published".into(),
    };
    let when = if cfg.publish.while_running { "" } else { "once the game is over, " };
    format!(
        "How to check the game yourself: the public record is the game folder's game.toml,\n\
scenario.toml, records/ and receipts/: {when}send the judge a line `public GAME` and it mails them\n\
as one archive ({where_}).\n\
`pbem audit GAME.tar` (or a folder) replays and checks every step; `--receipt RECEIPT.toml` shows\n\
that your order was the one used, and `pbem audit DIR --report SAVED.eml` that a report you\n\
kept still matches the game.\n"
    )
}
