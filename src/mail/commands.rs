//! Players' commands by mail (like njudge's): `status`, `report`, `help` and `press`, read from the
//! lines a player wrote in a message's new part (or a subject that is only a command), answered in
//! the reply to that message, which goes to the seat's registered address only.
//!
//! Syntax (one command a line; GAME may be left out when the sender plays in one game only, and
//! then means every game they play in):
//! ```text
//! status [GAME]               where the game stands: step, deadline, who has sent orders
//! report [GAME]               my newest report again, with the order form when orders are due
//! public [GAME]               the game's public record as one archive (GAME.tar) for `pbem audit`
//!                             (once the game is over, when the host sets `while_running = false`)
//! help                        these lines
//! press [GAME] to WHOM        a message to other players, relayed by the judge: WHOM is `all`,
//! TEXT...                     `team`, or one or more roles (`press g1 to red-1 red-2`); the
//! endpress                    text runs to the line `endpress` (or the end of the message)
//! ```
//! A line is a command only when it is exactly that: `status`, `report` or `public` with at most one more
//! word, `help` alone, `press` with `to`. Other lines (a greeting, a signature) are not read, and
//! neither are pasted order files (from `[pbem]` to the end of the signature block).

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use super::config::HostConfig;
use super::games::Games;
pub use super::press::{MAX_PRESS_BYTES, Whom};
use super::reply::shorten;
use super::report_mail::{Files, report_parts};
pub use super::report_mail::public_record_note;
use super::outbox::Outbox;
use crate::error::Result;
use crate::model::GameFile;
use crate::sig::ARMOR_END;
use crate::{pipeline, team};

/// The most commands one message may hold; the rest are not read, and the reply says so.
pub const MAX_COMMANDS: usize = 20;
/// One command found in a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `status [GAME]`.
    Status(Option<String>),
    /// `report [GAME]`.
    Report(Option<String>),
    /// `public [GAME]`: the public record as an archive `pbem audit` accepts.
    Public(Option<String>),
    /// `help`.
    Help,
    /// `press [GAME] to WHOM` and its text.
    Press {
        /// The game named, if any.
        game: Option<String>,
        /// The addressees.
        to: Whom,
        /// The text (without the `press` and `endpress` lines).
        text: String,
    },
}

/// The commands of a message, and what could not be read as one.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    /// In the order written, each `status`, `report` and `help` once.
    pub commands: Vec<Command>,
    /// Lines that start like a command but are not one, each with why.
    pub problems: Vec<String>,
}

/// The subject without `Re:`/`Fwd:`/`AW:` prefixes and `[pbem GAME]` tags.
fn bare_subject(subject: &str) -> &str {
    let mut s = subject.trim();
    loop {
        let lower = s.to_ascii_lowercase();
        if let Some(p) = ["re:", "fwd:", "fw:", "aw:", "wg:"].iter().find(|p| lower.starts_with(*p)) {
            s = s[p.len()..].trim_start();
        } else if s.starts_with("[pbem ") && s.contains(']') {
            s = s[s.find(']').map_or(0, |i| i + 1)..].trim_start();
        } else {
            return s;
        }
    }
}

/// Reads the commands in `subject` (when it is only a `status`, `report`, `public` or `help`
/// line) and in `text` (the lines the sender wrote now). A subject of two words is read only when
/// the text holds no command: "public please" over a message whose text says `public g1` is a
/// title, not a second command to refuse (tester t18a-6); a one-word subject (`status`) always.
pub fn parse(subject: &str, text: &str) -> Parsed {
    let body = parse_text(text);
    let bare = bare_subject(subject);
    let mut out = Parsed::default();
    if let Some(c) = simple(bare).filter(|_| bare.split_whitespace().count() == 1 || (body.commands.is_empty() && body.problems.is_empty())) {
        push(&mut out, c);
    }
    for c in body.commands {
        push(&mut out, c);
    }
    out.problems = body.problems;
    drop_covered(&mut out.commands);
    if out.commands.len() > MAX_COMMANDS {
        out.commands.truncate(MAX_COMMANDS);
        out.problems.push(format!("only the first {MAX_COMMANDS} commands of a message are read; send the others in another message"));
    }
    out
}

/// The commands in `text`, as written ([`parse`] merges them with the subject's).
fn parse_text(text: &str) -> Parsed {
    let mut out = Parsed::default();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim();
        i += 1;
        if line == "[pbem]" {
            // A pasted order file: its lines are the order's, not commands.
            while i < lines.len() && lines[i].trim() != ARMOR_END {
                i += 1;
            }
            i += 1;
            continue;
        }
        if let Some(c) = simple(line) {
            push(&mut out, c);
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if !words.first().is_some_and(|w| w.eq_ignore_ascii_case("press")) || words.len() < 2 {
            continue;
        }
        let end = (i..lines.len()).find(|&k| lines[k].trim().eq_ignore_ascii_case("endpress")).unwrap_or(lines.len());
        let body = lines[i..end].join("\n");
        i = end + 1;
        match press_head(&words[1..]) {
            Ok((game, to)) => push(&mut out, Command::Press { game, to, text: body.trim_matches('\n').to_string() + "\n" }),
            Err(why) => out.problems.push(format!("{:?}: {why}", shorten(line))),
        }
    }
    out
}

/// Leaves out a `status`, `report` or `public` naming a game when the same command without a
/// game (every game of the sender) is there too: a subject `report` and a line `report g1` are
/// answered once, not with g1's report twice (tester21 T21b-4).
fn drop_covered(commands: &mut Vec<Command>) {
    let all = commands.clone();
    commands.retain(|c| match c {
        Command::Status(Some(_)) => !all.contains(&Command::Status(None)),
        Command::Report(Some(_)) => !all.contains(&Command::Report(None)),
        Command::Public(Some(_)) => !all.contains(&Command::Public(None)),
        _ => true,
    });
}

/// Adds `c` unless the same `status`, `report` or `help` is there already.
fn push(out: &mut Parsed, c: Command) {
    if matches!(c, Command::Press { .. }) || !out.commands.contains(&c) {
        out.commands.push(c);
    }
}

/// `status [GAME]`, `report [GAME]`, `public [GAME]`, `help`: the whole line, nothing else on it.
fn simple(line: &str) -> Option<Command> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let game = words.get(1).map(|g| g.to_string());
    match (words.first().map(|w| w.to_ascii_lowercase()).as_deref(), words.len()) {
        (Some("status"), 1 | 2) => Some(Command::Status(game)),
        (Some("report"), 1 | 2) => Some(Command::Report(game)),
        (Some("public"), 1 | 2) => Some(Command::Public(game)),
        (Some("help"), 1) => Some(Command::Help),
        _ => None,
    }
}

/// The words after `press`: `[GAME] to WHOM...`.
fn press_head(words: &[&str]) -> Result<(Option<String>, Whom), String> {
    let to = words.iter().position(|w| w.eq_ignore_ascii_case("to")).ok_or("a press line is `press [GAME] to all|team|ROLE...`: it has no `to`")?;
    let game = match to {
        0 => None,
        1 => Some(words[0].to_string()),
        _ => return Err("a press line is `press [GAME] to all|team|ROLE...`: more than a game before `to`".into()),
    };
    let whom: Vec<String> = words[to + 1..].iter().flat_map(|w| w.split(',')).filter(|w| !w.is_empty()).map(str::to_string).collect();
    let to = match whom.as_slice() {
        [] => return Err("say whom it is for after `to`: all, team, or roles".into()),
        [w] if w.eq_ignore_ascii_case("all") => Whom::All,
        [w] if w.eq_ignore_ascii_case("team") => Whom::Team,
        _ => Whom::Roles(whom),
    };
    Ok((game, to))
}


/// The text of the `help` answer (`cfg`: where the host publishes the games, if it does).
pub fn help_text(cfg: &HostConfig) -> String {
    format!(
        "Commands (write each on a line of its own in a plain-text message to the judge, from your
registered address; GAME may be left out when you play in one game only):

  status [GAME]            where the game stands: the step, its deadline, who has sent orders
  report [GAME]            your newest report again, with the order form when orders are due
  public [GAME]            the game's public record as one archive (GAME.tar): `pbem audit
                           GAME.tar` replays and checks every step{}
  help                     this text
  press [GAME] to WHOM     a message to other players, relayed by the judge and listed in their
  YOUR TEXT                next reports: WHOM is `all`, `team` or roles (`press g1 to red-1`);
  endpress                 the text ends at the line `endpress` (at most {MAX_PRESS_BYTES} bytes)

Answers go to your registered address only. Orders may come in the same message. The host
decides per game whom press may go to (press=none, team or all).

{}
{}",
        if cfg.publish.while_running { "" } else { "\n                           (sent once the game is over: the host's setting)" },
        super::reply::how_to_send(),
        public_record_note(cfg)
    )
}

/// What the commands of one message came to: text for the reply and files to attach.
#[derive(Debug, Default)]
pub(super) struct Answers {
    /// The reply's paragraphs about the commands.
    pub text: String,
    /// Order forms of resent reports.
    pub attachments: Files,
    /// Why a command could not be answered for a game (for the host: the run's output).
    pub failures: Vec<String>,
}

/// Where the answers are going and what they need.
pub(super) struct Asker<'a> {
    /// The registered addresses the message speaks for (its sender's, when that is a seat's, else
    /// those of the seats whose keys signed its orders): commands act for their seats only.
    pub addrs: &'a [String],
    /// The sender's address.
    pub from: &'a str,
    /// The message's hash (stable ids for relayed press).
    pub hash: &'a str,
}

/// A game the asker plays in: its folder, its game file and the asker's roles there.
type Held<'g> = (&'g PathBuf, &'g GameFile, Vec<String>);

/// The seats the asker holds, by game, as the run first read the games.
fn seats_of<'g>(games: &'g Games, addrs: &[String]) -> Vec<Held<'g>> {
    games.seated(addrs).into_iter().filter_map(|(dir, gf)| {
        let roles = roles_in(gf, addrs);
        (!roles.is_empty()).then_some((dir, gf, roles))
    }).collect()
}

/// The roles a seat at one of `addrs` (any case) holds in `gf`.
fn roles_in(gf: &GameFile, addrs: &[String]) -> Vec<String> {
    gf.seats.iter().filter(|s| addrs.iter().any(|a| a.eq_ignore_ascii_case(&s.email))).map(|s| s.role.clone()).collect()
}

/// The roles `addrs` hold in the game in `dir` as its `game.toml` stands now (empty: none): a
/// seat the host changed (`pbem seat`) since the run read the games is its new holder's (tester
/// T23a-1: the old address was sent the seat's report written after the change).
fn roles_now(dir: &Path, addrs: &[String]) -> Result<Vec<String>> {
    Ok(roles_in(&pipeline::read_game_file_known(&crate::store::GameDir::new(dir), None)?.1, addrs))
}

/// What an asker who holds no seat in game `id` now is told.
fn seat_gone(id: &str) -> String {
    format!("you no longer hold a seat in game {id}: the host changed its seats")
}

/// The asker's games that `game` names (all of them when it names none).
fn chosen<'s, 'g>(seats: &'s [Held<'g>], game: Option<&str>) -> std::result::Result<Vec<&'s Held<'g>>, String> {
    match game {
        None if seats.is_empty() => Err("you hold no seat in any game here".into()),
        None => Ok(seats.iter().collect()),
        Some(id) => match seats.iter().find(|(_, gf, _)| gf.id == id) {
            Some(s) => Ok(vec![s]),
            None => {
                let ids: Vec<&str> = seats.iter().map(|(_, gf, _)| gf.id.as_str()).collect();
                Err(format!("you hold no seat in a game {:?} here (your games: {})", shorten(id), if ids.is_empty() { "none".into() } else { ids.join(", ") }))
            }
        },
    }
}

/// Carries out the commands of one message for `asker`; press is relayed (queued in `outbox`) at
/// once. A command that cannot be done is answered with why.
pub(super) fn answer(parsed: &Parsed, asker: &Asker<'_>, games: &Games, outbox: &Outbox, cfg: &HostConfig, now: DateTime<Utc>) -> Result<Answers> {
    // The asker's games are looked up only for a command (most messages hold orders alone).
    let seats = if parsed.commands.is_empty() { Vec::new() } else { seats_of(games, asker.addrs) };
    let mut out = Answers::default();
    for (i, c) in parsed.commands.iter().enumerate() {
        let said = match c {
            Command::Help => Ok(help_text(cfg)),
            Command::Status(g) => match chosen(&seats, g.as_deref()) {
                Ok(list) => Ok(per_game(&list, "status", &mut out, |one, _| status_text(one, asker.addrs, cfg, now))),
                Err(e) => Ok(format!("status: {e}\n")),
            },
            Command::Report(g) => match chosen(&seats, g.as_deref()) {
                Ok(list) => Ok(per_game(&list, "report", &mut out, |one, files| report_text(one, asker.addrs, (cfg, now), files))),
                Err(e) => Ok(format!("report: {e}\n")),
            },
            Command::Public(g) => match chosen(&seats, g.as_deref()) {
                Ok(list) => Ok(per_game(&list, "public", &mut out, |one, files| public_text(one, cfg, files))),
                Err(e) => Ok(format!("public: {e}\n")),
            },
            Command::Press { game, to, text } => press(&seats, game.as_deref(), to, text, asker, i, outbox, cfg, now),
        }?;
        out.text.push_str(&said);
        out.text.push('\n');
    }
    for p in &parsed.problems {
        out.text.push_str(&format!("Not understood: {p}\n"));
    }
    Ok(out)
}

/// `answer` of command `what` for each game of `list` in turn: a game whose files cannot be
/// read (a file damaged or planted in it) is answered as needing the host, who hears why in the
/// run's output (`Answers::failures`), and the other games are answered all the same; no
/// attachment of a failed game is kept (tester21 T21a-5: the whole message failed unanswered).
fn per_game(list: &[&Held<'_>], what: &str, out: &mut Answers, mut answer: impl FnMut(&[&Held<'_>], &mut Files) -> Result<String>) -> String {
    let mut said = String::new();
    for one in list {
        let mut files = Files::new();
        match answer(std::slice::from_ref(one), &mut files) {
            Ok(text) => {
                said.push_str(&text);
                out.attachments.extend(files);
            }
            Err(e) => {
                said.push_str(&format!("{what}: game {} cannot be answered now: its files need the host's attention (the host has been told). Ask again later.\n", one.1.id));
                out.failures.push(format!("{what} {}: {e}", one.1.id));
            }
        }
    }
    said
}

/// Each chosen game's public record as `GAME.tar` (`crate::public::public_archive`), attached;
/// with `[publish] while_running = false`, only that of a game that is over.
fn public_text(list: &[&Held<'_>], cfg: &HostConfig, files: &mut Files) -> Result<String> {
    let mut s = String::new();
    for (dir, gf, _) in list {
        if !cfg.publish.while_running && !pipeline::is_over(&crate::store::GameDir::new(dir))? {
            s.push_str(&format!("The public record of game {} is sent once the game is over (the host's setting): ask again then.\n", gf.id));
            continue;
        }
        let name = format!("{}.tar", gf.id);
        files.push((name.clone(), crate::public::public_archive(dir)?));
        s.push_str(&format!("The public record of game {} is attached as {name}: `pbem audit {name}` replays and checks every step.\n", gf.id));
    }
    Ok(s)
}

/// Each chosen game's status, the time left counted from the run's `now` (a run given `--now`
/// answers as of then, not of the wall clock); for a seat of the asker's whose zone only the mail
/// config gives (`time_zones`), the deadline in it too, as its report mails give it (tester
/// t18a-2: the status showed other seats' zones but the asker's own deadline in UTC only).
fn status_text(list: &[&Held<'_>], addrs: &[String], cfg: &HostConfig, now: DateTime<Utc>) -> Result<String> {
    let mut s = String::new();
    for (dir, gf, _) in list {
        match roles_now(dir, addrs)?.as_slice() {
            [] => s.push_str(&format!("status: {}.\n", seat_gone(&gf.id))),
            roles => {
                s.push_str(&format!("Status (you play {}):\n{}", roles.join(", "), pipeline::status_at(dir, now)?));
                s.push_str(&config_zone_deadlines(dir, roles, cfg)?);
            }
        }
    }
    Ok(s)
}

/// The open step's deadline for each of `roles` (seats of the game in `dir`) that has no time zone
/// of its own but one in the mail config: a line each, as its report mails give it.
fn config_zone_deadlines(dir: &std::path::Path, roles: &[String], cfg: &HostConfig) -> Result<String> {
    let g = pipeline::load(dir)?;
    let Some(op) = g.record.opening.as_ref() else { return Ok(String::new()) };
    let mut s = String::new();
    for seat in g.gf.seats.iter().filter(|x| roles.contains(&x.role) && x.time_zone.is_none()) {
        let zone = cfg.zone_of(&seat.email);
        if zone != chrono_tz::UTC {
            s.push_str(&format!("  deadline for {} in {zone} (from the host's mail settings): {}\n", seat.role, super::config::seat_deadline(cfg, seat, op)));
        }
    }
    Ok(s)
}

/// Each chosen seat's newest report as its report mail had it, with the order form attached and
/// teammates' plans below.
fn report_text(list: &[&Held<'_>], addrs: &[String], (cfg, now): (&HostConfig, DateTime<Utc>), files: &mut Files) -> Result<String> {
    let mut s = String::new();
    for (dir, gf, _) in list {
        let g = pipeline::load(dir)?;
        // The seats as the game loaded now has them.
        let roles = roles_in(&g.gf, addrs);
        if roles.is_empty() {
            s.push_str(&format!("report: {}.\n", seat_gone(&gf.id)));
        }
        for role in &roles {
            let (body, attachments) = report_parts(&g.dir, &g.gf, g.game, (&g.record, None), &g.state, role, cfg, now)?;
            s.push_str(&format!("Your newest report in game {} ({role}, after record {}):\n\n{body}\n", g.gf.id, g.record.index));
            let plans = team::teammate_plans(dir, role)?;
            s.push_str(&team::plans_text(&plans));
            files.extend(attachments);
        }
    }
    Ok(s)
}

#[allow(clippy::too_many_arguments)]
fn press(
    seats: &[Held<'_>],
    game: Option<&str>,
    to: &Whom,
    text: &str,
    asker: &Asker<'_>,
    i: usize,
    outbox: &Outbox,
    cfg: &HostConfig,
    now: DateTime<Utc>,
) -> Result<String> {
    let list = match chosen(seats, game) {
        Ok(l) if l.len() == 1 => l,
        Ok(l) => {
            let ids: Vec<&str> = l.iter().map(|(_, gf, _)| gf.id.as_str()).collect();
            return Ok(format!("press not relayed: you play in {} games ({}); name one: `press GAME to ...`\n", ids.len(), ids.join(", ")));
        }
        Err(e) => return Ok(format!("press not relayed: {e}\n")),
    };
    let (dir, gf, _) = list[0];
    let roles = roles_now(dir, asker.addrs)?;
    if roles.is_empty() {
        return Ok(format!("press not relayed: {}.\n", seat_gone(&gf.id)));
    }
    let from_addr = asker.addrs.first().map_or(asker.from, String::as_str);
    let relay = super::press::Relay { dir, from: &roles, from_addr, to, text, id: super::compose::stable_id(&["press", asker.hash, &i.to_string()]) };
    Ok(match super::press::relay(&relay, outbox, cfg, now)? {
        Ok(line) => format!("{line}.\n"),
        Err(why) => format!("press not relayed: {why}.\n"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_says_where_the_host_publishes_the_games_archives() {
        // Found by tester15: with `[publish] public_url` set, players were still told to ask the
        // host where the public record is published.
        let mut cfg = HostConfig::queue_only("judge@example.org");
        assert!(help_text(&cfg).contains("(or ask the host where they are published)"));
        cfg.publish.public_url = Some("https://example.org/pbem/".into());
        let text = help_text(&cfg);
        assert!(text.contains("(or download it from https://example.org/pbem/GAME/GAME.tar)") && !text.contains("ask the host"), "{text}");
    }

    #[test]
    fn commands_are_whole_lines() {
        let p = parse("Re: [pbem g1] status", "Hi judge,\nstatus of my troops is fine\nreport g1\nhelp\nhelp me\nstatus\n");
        assert_eq!(p.commands, vec![Command::Status(None), Command::Report(Some("g1".into())), Command::Help]);
        assert!(p.problems.is_empty());
        // A subject of two words is read only when the text holds no command (tester t18a-6: a
        // subject "public please" over `public g1` was refused as a second command).
        assert_eq!(parse("Re: [pbem g1] status", "Hi judge, how goes it?\n").commands, vec![Command::Status(None)]);
        let p = parse("public please", "public g1\n");
        assert_eq!((p.commands, p.problems), (vec![Command::Public(Some("g1".into()))], vec![]));
        // Not a command subject: the judge's own report subject.
        assert!(parse("Re: [pbem g1] step 3 resolved: your report (union)", "").commands.is_empty());
    }

    /// A command for every game of the sender covers the same command naming one (tester21
    /// T21b-4: a subject `report` and a line `report fd4` sent fd4's report twice).
    #[test]
    fn a_command_for_every_game_covers_one_naming_a_game() {
        let p = parse("report", "report fd4\npublic tdtf2\npublic\nstatus g1\n");
        assert_eq!(p.commands, vec![Command::Report(None), Command::Public(None), Command::Status(Some("g1".into()))]);
    }

    #[test]
    fn press_runs_to_endpress_and_orders_are_skipped() {
        let text = "[pbem]\ngame = \"g1\"\nstatus\n-----END SSH SIGNATURE-----\npress g1 to red-1, red-2\nGo left.\nstatus\nendpress\npress to team\nHold.\n";
        let p = parse("", text);
        assert_eq!(
            p.commands,
            vec![
                Command::Press { game: Some("g1".into()), to: Whom::Roles(vec!["red-1".into(), "red-2".into()]), text: "Go left.\nstatus\n".into() },
                Command::Press { game: None, to: Whom::Team, text: "Hold.\n".into() },
            ]
        );
        let p = parse("", "press g1 all\nx\n");
        assert!(p.commands.is_empty() && p.problems[0].contains("no `to`"), "{:?}", p.problems);
    }
}
