//! Players' commands by mail (`status`, `report`, `public`, `help`), press to one seat, a team or all, press
//! switched off, and Flag Dash teammates seeing each other's plans: all through the real binary,
//! from a Maildir, reading what the judge queued in its outbox.

#[path = "mail/common.rs"]
mod common;

use std::path::{Path, PathBuf};

use assert_cmd::cargo::cargo_bin_cmd;
use common::*;
use pbem::model::{Deadlines, Seat};
use pbem::pipeline::{self, Entropy, NewGame};
use pbem::{orderfile, sig};

fn pbem() -> assert_cmd::Command {
    cargo_bin_cmd!("pbem")
}

/// A judge whose mail stays queued (`kind = "none"`), taking mail from `tmp/Maildir`.
fn setup(tmp: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let root = tmp.join("turns");
    std::fs::create_dir_all(&root).unwrap();
    let md = tmp.join("Maildir");
    for d in ["tmp", "new", "cur"] {
        std::fs::create_dir_all(md.join(d)).unwrap();
    }
    let cfg = tmp.join("pbem-mail.toml");
    std::fs::write(&cfg, "from = \"Judge <judge@example.net>\"\n[intake]\nmaildir = \"Maildir\"\nmax_replies_per_hour = 0\n[transport]\nkind = \"none\"\n").unwrap();
    (root, md, cfg)
}

/// [`setup`] with at most `cap` replies an hour to one address (`max_replies_per_hour`).
fn setup_capped(tmp: &Path, cap: u32) -> (PathBuf, PathBuf, PathBuf) {
    let (root, md, cfg) = setup(tmp);
    std::fs::write(&cfg, format!("from = \"Judge <judge@example.net>\"\n[intake]\nmaildir = \"Maildir\"\nmax_replies_per_hour = {cap}\n[transport]\nkind = \"none\"\n")).unwrap();
    (root, md, cfg)
}

fn deliver(md: &Path, name: &str, bytes: &[u8]) {
    std::fs::write(md.join("tmp").join(name), bytes).unwrap();
    std::fs::rename(md.join("tmp").join(name), md.join("new").join(name)).unwrap();
}

fn message(from: &str, subject: &str, body: &str) -> Vec<u8> {
    format!("From: {from}\nTo: judge@example.net\nSubject: {subject}\nMessage-ID: <{}@example.org>\nContent-Type: text/plain\n\n{body}", pbem::commit::sha256_hex(body.as_bytes())).into_bytes()
}

fn intake(root: &Path, md: &Path, cfg: &Path, now: &str) -> String {
    let out = pbem().args(["intake", "--now", now, "--root"]).arg(root).arg("--maildir").arg(md).arg("--config").arg(cfg).assert().success();
    String::from_utf8(out.get_output().stdout.clone()).unwrap()
}

/// The bytes of every mail in the outbox queue, by id.
fn queued_raw(root: &Path) -> Vec<Vec<u8>> {
    let outbox = pbem::mail::Outbox::under(root);
    outbox.pending().unwrap().iter().map(|id| outbox.queued_message(id).unwrap().unwrap()).collect()
}

/// Every mail in the outbox queue.
fn queued(root: &Path) -> Vec<Mail> {
    queued_raw(root).iter().map(|b| read_mail(b)).collect()
}

/// The ids of the mails in the outbox queue.
fn pending(root: &Path) -> Vec<String> {
    pbem::mail::Outbox::under(root).pending().unwrap()
}

/// The mails queued since the queue held the ids `before` (ids are hashes: a new mail's name may
/// sort anywhere among the old ones).
fn queued_since(root: &Path, before: &[String]) -> Vec<Mail> {
    let outbox = pbem::mail::Outbox::under(root);
    pending(root).iter().filter(|id| !before.contains(id)).map(|id| read_mail(&outbox.queued_message(id).unwrap().unwrap())).collect()
}

fn to(mails: &[Mail], addr: &str) -> Vec<Mail> {
    mails.iter().filter(|m| m.to.iter().chain(&m.cc).any(|a| a == addr)).cloned().collect()
}

#[test]
fn status_report_and_help_answer_the_seats_address_only_and_strangers_not_at_all() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, md, cfg) = setup(tmp.path());
    new_game(&root, "g1", 72);
    deliver(&md, "1", &message("George Meade <meade@example.org>", "status", "Hello judge,\n\nreport g1\nhelp\nStatus of my army: fine.\n\nGeorge\n"));
    intake(&root, &md, &cfg, "2026-07-01T13:00:00Z");
    let mails = queued(&root);
    assert_eq!(mails.len(), 1, "one reply: {:?}", mails.iter().map(|m| &m.subject).collect::<Vec<_>>());
    let m = &mails[0];
    assert_eq!(m.to, ["meade@example.org"]);
    assert!(m.cc.is_empty());
    for want in ["Status (you play union)", "game g1 (", "Your newest report in game g1 (union, after record 0)", "Commands (write each", "press [GAME] to WHOM", "pbem audit GAME.tar"] {
        assert!(m.text.contains(want), "{want:?} not in:\n{}", m.text);
    }
    assert!(!m.text.contains("No signed orders were found"), "{}", m.text);
    // The report is the one the game wrote for union, not the confederate's.
    let report = std::fs::read_to_string(root.join("g1/reports/000000/union.txt")).unwrap();
    assert!(m.text.contains(report.lines().next().unwrap()));
    if m.text.contains("Your orders for step 1 are due") {
        assert!(m.attachments.iter().any(|a| a == "g1-step-1-union.toml"), "{:?}", m.attachments);
    }
    // A stranger asking for a seat's report or status is not answered at all (nor is the seat).
    deliver(&md, "2", &message("stranger@example.com", "status g1", "status g1\nreport g1\nhelp\npress g1 to all\nhi\nendpress\n"));
    let out = intake(&root, &md, &cfg, "2026-07-01T13:01:00Z");
    assert!(out.contains("not answered"), "{out}");
    assert_eq!(queued(&root).len(), 1, "nothing queued for a stranger");
    assert_eq!(std::fs::read_dir(md.join("failed")).unwrap().filter(|e| !e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".reason")).count(), 1);
    // A game the sender has no seat in.
    deliver(&md, "3", &message("lee@example.org", "x", "status g7\n"));
    intake(&root, &md, &cfg, "2026-07-01T13:02:00Z");
    let m = to(&queued(&root), "lee@example.org").pop().unwrap();
    assert!(m.text.contains("status: you hold no seat in a game \"g7\" here (your games: g1)"), "{}", m.text);
}

#[test]
fn press_goes_to_its_addressees_and_into_their_next_report_mail_never_into_the_record() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, md, cfg) = setup(tmp.path());
    let game = new_game(&root, "g1", 72);
    deliver(&md, "1", &message("lee@example.org", "talk", "press g1 to union\nMeet at Pipe Creek?\nendpress\nRegards\n"));
    intake(&root, &md, &cfg, "2026-07-01T13:00:00Z");
    let mails = queued(&root);
    let reply = to(&mails, "lee@example.org");
    assert_eq!(reply.len(), 1);
    assert!(reply[0].text.contains("press to union in game g1: relayed to union"), "{}", reply[0].text);
    assert!(!reply[0].text.contains("Meet at Pipe Creek"));
    let press = to(&mails, "meade@example.org");
    assert_eq!(press.len(), 1);
    assert_eq!(press[0].subject, "[pbem g1] press from confederate to union");
    assert!(press[0].text.contains("  | Meet at Pipe Creek?") && !press[0].text.contains("Regards"), "{}", press[0].text);
    assert!(!press[0].text.contains("lee@example.org"), "the sender's address is not given away");
    // Both orders in: the cron run resolves step 1; union's report mail lists the press.
    deliver(&md, "2", &order_mail(&game, "union", 1));
    deliver(&md, "3", &order_mail(&game, "confederate", 1));
    pbem().args(["adjudicate", "--all"]).arg(&root).arg("--mail").arg(&cfg).args(["--now", "2026-07-01T13:05:00Z"]).assert().success();
    let reports: Vec<Mail> = queued(&root).into_iter().filter(|m| m.subject.contains("step 1 resolved")).collect();
    assert_eq!(reports.len(), 2, "{:?}", queued(&root).iter().map(|m| &m.subject).collect::<Vec<_>>());
    let union = reports.iter().find(|m| m.to == ["meade@example.org"]).unwrap();
    let conf = reports.iter().find(|m| m.to == ["lee@example.org"]).unwrap();
    assert!(union.text.contains("Press you received since your last report:") && union.text.contains("  | Meet at Pipe Creek?"), "{}", union.text);
    assert!(!conf.text.contains("Pipe Creek"), "{}", conf.text);
    // Press is in no report file and no record, and the audit replays every report unchanged.
    for entry in walk(&game) {
        assert!(!std::fs::read_to_string(&entry).unwrap_or_default().contains("Pipe Creek"), "{}", entry.display());
    }
    pbem().arg("audit").arg(&game).assert().success();
    // To all: every other seat; to a seat that does not exist: refused with the seats.
    deliver(&md, "4", &message("meade@example.org", "x", "press to all\nThanks.\nendpress\npress g1 to lincoln\nx\nendpress\n"));
    intake(&root, &md, &cfg, "2026-07-01T13:10:00Z");
    let mails = queued(&root);
    assert!(to(&mails, "lee@example.org").iter().any(|m| m.subject == "[pbem g1] press from union to all" && m.text.contains("Thanks.")));
    let reply = to(&mails, "meade@example.org").into_iter().find(|m| m.subject.starts_with("Re: x")).unwrap();
    assert!(reply.text.contains("press not relayed: game g1 has no other seat \"lincoln\"; its seats: confederate."), "{}", reply.text);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() { out.extend(walk(&p)) } else { out.push(p) }
    }
    out
}

/// A game of `rules` with `options`, each seat's address `ROLE@example.org`.
fn game_of(root: &Path, id: &str, rules: &str, roles: &[&str], options: &[(&str, &str)]) -> pbem::error::Result<PathBuf> {
    let dir = root.join(id);
    let seats = roles.iter().map(|r| Seat { role: r.to_string(), email: format!("{r}@example.org"), key: key(r).public_key().to_openssh().unwrap(), time_zone: None }).collect();
    let new = NewGame {
        id: Some(id.into()),
        rules: rules.into(),
        scenario: None,
        options: options.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        seats,
        deadlines: Deadlines { default_hours: 72, ..Default::default() },
        nmr: Default::default(),
        wording: pbem::report::WORDING,
    };
    pipeline::create(&dir, new, pipeline::parse_time(T0).unwrap(), &mut Entropy::seeded([3; 32]))?;
    Ok(dir)
}

#[test]
fn press_switched_off_is_refused_and_relays_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, md, cfg) = setup(tmp.path());
    game_of(&root, "quiet", "gettysburg-campaign", &["confederate", "union"], &[("press", "none")]).unwrap();
    let e = game_of(&root, "bad", "gettysburg-campaign", &["confederate", "union"], &[("press", "some")]).unwrap_err();
    assert!(e.to_string().contains("press=none, press=team or press=all"), "{e}");
    deliver(&md, "1", &message("union@example.org", "x", "press to confederate\nTruce?\nendpress\n"));
    intake(&root, &md, &cfg, "2026-07-01T13:00:00Z");
    let mails = queued(&root);
    assert!(to(&mails, "confederate@example.org").is_empty());
    assert!(to(&mails, "union@example.org")[0].text.contains("press not relayed: press is off in game quiet (the host set press=none)."));
    // The judge's option is not the game's: the game audits.
    pbem().arg("audit").arg(root.join("quiet")).assert().success();
}

const FD: [&str; 4] = ["white-1", "white-2", "red-1", "red-2"];

/// `role`'s plan for the open step by the built-in player, signed, pasted in a mail.
fn plan_mail(game: &Path, role: &str) -> Vec<u8> {
    let g = pipeline::load(game).unwrap();
    let op = g.record.opening.clone().unwrap();
    let header = orderfile::Header { game: g.gf.id.clone(), step: op.step, role: role.into(), host_seed_commitment: op.host_seed_commitment.clone(), nonce: pbem::commit::sha256_hex(role.as_bytes()) };
    let body = g.game.bot_order(&g.state, role, &mut pbem::dice::Ctx::new([9; 32])).unwrap();
    let text = orderfile::form_text(&header, &[], &body);
    let signed = format!("{text}{}", sig::sign(&key(role), sig::NS_ORDERS, text.as_bytes()).unwrap());
    message(&format!("{role}@example.org"), "plan", &signed)
}

#[test]
fn flag_dash_teammates_see_plans_and_talk_as_a_team_the_other_team_never() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, md, cfg) = setup(tmp.path());
    let game = game_of(&root, "fd", "flag-dash", &FD, &[]).unwrap();
    // Press defaults to team in Flag Dash.
    deliver(&md, "1", &message("white-1@example.org", "x", "press to team\nI take the left.\nendpress\npress to all\nGood luck!\nendpress\npress to red-1\npsst\nendpress\n"));
    intake(&root, &md, &cfg, "2026-07-01T13:00:00Z");
    let mails = queued(&root);
    assert_eq!(to(&mails, "white-2@example.org").len(), 1);
    assert!(to(&mails, "white-2@example.org")[0].text.contains("I take the left."));
    assert!(to(&mails, "red-1@example.org").is_empty() && to(&mails, "red-2@example.org").is_empty());
    let reply = &to(&mails, "white-1@example.org")[0];
    assert_eq!(reply.text.matches("press not relayed: in game fd press goes to your own team only (the host set press=team).").count(), 2, "{}", reply.text);
    // white-1's plan is accepted: white-2 gets it at once, red never.
    let before = queued(&root).len();
    deliver(&md, "2", &plan_mail(&game, "white-1"));
    intake(&root, &md, &cfg, "2026-07-01T13:01:00Z");
    let mails = queued(&root);
    assert_eq!(mails.len(), before + 2, "the receipt and one plan mail");
    let plan = to(&mails, "white-2@example.org").into_iter().find(|m| m.subject.contains("plan")).unwrap();
    assert_eq!(plan.subject, "[pbem fd] your teammate white-1's plan for step 1 (white-2)");
    assert!(plan.text.contains("Your teammate white-1's plan for step 1 (receipt 1") && plan.text.contains("    [orders]"), "{}", plan.text);
    assert!(!plan.text.contains("BEGIN SSH SIGNATURE"));
    assert!(to(&mails, "red-1@example.org").is_empty() && to(&mails, "red-2@example.org").is_empty());
    let receipt = to(&mails, "white-1@example.org").into_iter().find(|m| m.subject.contains("plan")).unwrap();
    assert!(receipt.text.contains("your plan for step 1 of game fd was mailed to your teammate(s) white-2"), "{}", receipt.text);
    // `pbem report` shows it to the teammate, not to the other team; `report` by mail too.
    let shown = |role: &str| String::from_utf8(pbem().arg("report").arg(&game).args(["--role", role]).assert().success().get_output().stdout.clone()).unwrap();
    assert!(shown("white-2").contains("Your teammate white-1's plan for step 1"));
    assert!(!shown("red-1").contains("white-1's plan") && !shown("white-1").contains("Your teammate"));
    deliver(&md, "3", &message("red-2@example.org", "report", "report\n"));
    deliver(&md, "4", &message("white-2@example.org", "report", "report fd\n"));
    intake(&root, &md, &cfg, "2026-07-01T13:02:00Z");
    let mails = queued(&root);
    assert!(!to(&mails, "red-2@example.org")[0].text.contains("white-1's plan"));
    assert!(to(&mails, "white-2@example.org").iter().any(|m| m.subject.contains("Re: report") && m.text.contains("Your teammate white-1's plan for step 1")));
}

#[test]
fn a_seat_given_to_a_new_player_gets_the_teammates_plans_already_in_the_other_team_never() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, md, cfg) = setup(tmp.path());
    let game = game_of(&root, "fd", "flag-dash", &FD, &[]).unwrap();
    deliver(&md, "1", &plan_mail(&game, "white-1"));
    deliver(&md, "2", &plan_mail(&game, "red-1"));
    intake(&root, &md, &cfg, "2026-07-01T13:00:00Z");
    pbem().arg("seat").arg(&game).args(["--role", "white-2", "--email", "new@example.org", "--reason", "replacement", "--now", "2026-07-01T13:01:00Z"]).assert().success();
    let before = pending(&root);
    pbem().args(["adjudicate", "--all"]).arg(&root).arg("--mail").arg(&cfg).args(["--now", "2026-07-01T13:02:00Z"]).assert().success();
    let mails = queued_since(&root, &before);
    let new = to(&mails, "new@example.org");
    assert_eq!(new.len(), 1, "the control's report mail");
    assert!(new[0].text.contains("You now hold the seat white-2.") && new[0].text.contains("Your teammate white-1's plan for step 1 (receipt 1"), "{}", new[0].text);
    assert!(new[0].text.contains("    [orders]") && !new[0].text.contains("red-1's plan"));
    // Nobody else gets plans with this record's report mail, the other team above all.
    for m in mails.iter().filter(|m| !m.to.contains(&"new@example.org".to_string())) {
        assert!(!m.text.contains("'s plan for step"), "{}: {}", m.subject, m.text);
    }
    // A seat change keeping the address (a new key) sends nothing again.
    let fresh = key("fresh").public_key().to_openssh().unwrap();
    pbem().arg("seat").arg(&game).args(["--role", "white-2", "--key", &fresh, "--reason", "new key", "--now", "2026-07-01T13:03:00Z"]).assert().success();
    let before = pending(&root);
    pbem().args(["adjudicate", "--all"]).arg(&root).arg("--mail").arg(&cfg).args(["--now", "2026-07-01T13:04:00Z"]).assert().success();
    assert!(queued_since(&root, &before).iter().all(|m| !m.text.contains("'s plan for step")));
}

#[test]
fn a_new_holder_is_told_the_order_in_for_the_seat_is_the_previous_holders() {
    // tester14 T14a-3: the new holder's mail said "your orders are in; nothing more is needed"
    // of an order the seat's previous holder had signed.
    let tmp = tempfile::tempdir().unwrap();
    let (root, md, cfg) = setup(tmp.path());
    let game = game_of(&root, "fd", "flag-dash", &FD, &[]).unwrap();
    deliver(&md, "1", &plan_mail(&game, "white-1"));
    intake(&root, &md, &cfg, "2026-07-01T13:00:00Z");
    let fresh = key("fresh").public_key().to_openssh().unwrap();
    pbem().arg("seat").arg(&game).args(["--role", "white-1", "--email", "new@example.org", "--key", &fresh, "--reason", "left", "--now", "2026-07-01T13:01:00Z"]).assert().success();
    let before = pending(&root);
    pbem().args(["adjudicate", "--all"]).arg(&root).arg("--mail").arg(&cfg).args(["--now", "2026-07-01T13:02:00Z"]).assert().success();
    let new = to(&queued_since(&root, &before), "new@example.org");
    assert_eq!(new.len(), 1, "the control's report mail");
    assert!(new[0].subject.contains("the seat's previous holder's orders are in (receipt 1; yours until "), "{}", new[0].subject);
    assert!(new[0].text.contains("An order for step 1 that this seat's previous holder signed is in (receipt 1): it stands unless you send your own."), "{}", new[0].text);
    assert!(!new[0].text.contains("Your orders for step 1 are in"), "{}", new[0].text);
    let status = String::from_utf8(pbem().arg("status").arg(&game).args(["--now", "2026-07-01T13:03:00Z"]).assert().success().get_output().stdout.clone()).unwrap();
    assert!(status.lines().any(|l| l.starts_with("  white-1 (plan): received ") && l.ends_with(", signed by the seat's previous holder)")), "{status}");
    assert!(status.lines().any(|l| l.starts_with("  white-2 (plan): awaited")), "{status}");
}

#[test]
fn public_mails_the_public_record_as_an_archive_that_the_audit_accepts() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, md, cfg) = setup(tmp.path());
    new_game(&root, "g1", 72);
    deliver(&md, "1", &message("George Meade <meade@example.org>", "Re: [pbem g1] the game begins", "public g1\n"));
    // A stranger asking gets nothing.
    deliver(&md, "2", &message("Nosy <nosy@example.com>", "public", "public g1\n"));
    intake(&root, &md, &cfg, "2026-07-01T13:00:00Z");
    let mails = queued(&root);
    assert_eq!(mails.len(), 1, "{:?}", mails.iter().map(|m| (&m.to, &m.subject)).collect::<Vec<_>>());
    let m = &mails[0];
    assert_eq!(m.to, ["meade@example.org"]);
    // The report's subject the player replied to is not repeated (tester t18a-3: "orders needed
    // by ..." came back on the answer to an order already accepted, or to a game that had ended).
    assert_eq!(m.subject, "[pbem g1] Re: your message");
    assert!(m.text.contains("The public record of game g1 is attached as g1.tar"), "{}", m.text);
    let (_, tar) = m.files.iter().find(|(n, _)| n == "g1.tar").expect("g1.tar attached");
    let file = tmp.path().join("g1.tar");
    std::fs::write(&file, tar).unwrap();
    pbem().arg("audit").arg(&file).assert().success();
    // The archive holds nothing of host/, states/ or reports/.
    let names: Vec<String> = tar::Archive::new(&tar[..]).entries().unwrap().map(|e| e.unwrap().path().unwrap().display().to_string()).collect();
    assert!(names.iter().all(|n| !n.contains("/host/") && !n.contains("/states/") && !n.contains("/reports/")), "{names:?}");
}

/// A signed order is public once its step is resolved: pasted into a stranger's message, it is
/// refused (an old step), and it must not make the stranger's press or commands speak for its
/// seat (a tester relayed press "from union" this way).
#[test]
fn a_strangers_message_with_an_old_public_order_speaks_for_no_seat() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, md, cfg) = setup(tmp.path());
    let game = new_game(&root, "g1", 72);
    let text = form(&game, "union", 1, &|s| s);
    let signed = format!("{text}{}", sign("union", &text));
    deliver(&md, "1", &order_mail(&game, "union", 1));
    deliver(&md, "2", &order_mail(&game, "confederate", 1));
    pbem().args(["adjudicate", "--all"]).arg(&root).arg("--mail").arg(&cfg).args(["--now", "2026-07-01T13:05:00Z"]).assert().success();
    let before = pending(&root);
    let body = format!("press g1 to confederate\nI surrender, says Meade.\nendpress\nstatus g1\n\n{signed}");
    deliver(&md, "3", &message("Mallory <mallory@evil.example>", "hi", &body));
    intake(&root, &md, &cfg, "2026-07-01T13:10:00Z");
    let mails = queued(&root);
    assert!(mails.iter().all(|m| !m.text.contains("I surrender") && !m.subject.contains("press from")), "press relayed");
    assert!(queued_since(&root, &before).iter().all(|m| !m.text.contains("Status (you play")), "a command answered for a stranger");
}

/// Press others send has its own hourly cap: a flood of it never silences the receipt of a
/// player's own orders.
#[test]
fn press_from_others_never_uses_up_the_replies_a_players_orders_get() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, md, cfg) = setup_capped(tmp.path(), 3);
    let game = new_game(&root, "g1", 72);
    for i in 0..5 {
        deliver(&md, &format!("p{i}"), &message("lee@example.org", "talk", &format!("press g1 to union\nnumber {i}\nendpress\n")));
    }
    deliver(&md, "z", &order_mail(&game, "union", 1));
    intake(&root, &md, &cfg, "2026-07-01T13:00:00Z");
    let meade = to(&queued(&root), "meade@example.org");
    assert_eq!(meade.iter().filter(|m| m.subject.contains("press from")).count(), 3, "press capped at 3 an hour");
    assert!(meade.iter().any(|m| m.subject == "[pbem g1] Re: orders"), "the receipt went out: {:?}", meade.iter().map(|m| &m.subject).collect::<Vec<_>>());
}

/// A reply the hourly cap holds back is a problem the host hears of even with `--quiet`, on
/// stderr, in words that do not say it was answered; a run without `--quiet` prints it too, and
/// a quiet run with nothing held back prints nothing (tester20 T20a-1, T20a-2).
#[test]
fn a_reply_the_cap_holds_back_is_told_with_quiet() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, md, cfg) = setup_capped(tmp.path(), 2);
    let game = new_game(&root, "g1", 72);
    let run = |now: &str| pbem().args(["intake", "--quiet", "--now", now, "--root"]).arg(&root).arg("--maildir").arg(&md).arg("--config").arg(&cfg).assert().success();
    deliver(&md, "a", &message("meade@example.org", "one", "status\n"));
    deliver(&md, "b", &message("meade@example.org", "two", "status g1\n"));
    let out = run("2026-07-01T13:00:00Z");
    assert!(out.get_output().stdout.is_empty() && out.get_output().stderr.is_empty(), "nothing held back: {out:?}");
    deliver(&md, "c", &message("meade@example.org", "three", "status\n"));
    deliver(&md, "d", &order_mail(&game, "union", 1));
    let out = run("2026-07-01T13:01:00Z");
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(out.get_output().stdout.is_empty(), "{out:?}");
    assert_eq!(stderr.lines().count(), 1, "one line a message held back: {stderr}");
    assert!(stderr.lines().all(|l| l.contains("no reply sent") && l.contains("max_replies_per_hour = 2")), "{stderr}");
    assert!(stderr.contains("commands handled; no reply sent") && !stderr.contains("answered"), "{stderr}");
    // The new order's receipt is not held back (tester t18b-1).
    assert!(to(&queued(&root), "meade@example.org").iter().any(|m| m.subject == "[pbem g1] Re: orders"), "the receipt went out");
}

/// A command for a game whose files need the host (a link planted among its receipts) is
/// answered as such, the other commands of the message all the same, and the host is told why,
/// with `--quiet` too (tester21 T21a-5: the message failed unanswered).
#[test]
fn a_command_for_a_game_whose_files_need_the_host_is_answered_and_the_host_told() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, md, cfg) = setup(tmp.path());
    let game = new_game(&root, "g1", 72);
    let receipts = game.join("receipts/000001");
    std::fs::create_dir_all(&receipts).unwrap();
    for name in ["confederate-9.toml", "confederate-9.toml.sig"] {
        std::os::unix::fs::symlink(game.join("game.toml"), receipts.join(name)).unwrap();
    }
    deliver(&md, "a", &message("meade@example.org", "hello", "public g1\nhelp\n"));
    let out = pbem().args(["intake", "--quiet", "--now", "2026-07-01T13:00:00Z", "--root"]).arg(&root).arg("--maildir").arg(&md).arg("--config").arg(&cfg).assert().success();
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(stderr.contains("not answered for the host's attention: public g1:") && stderr.contains("a symbolic link"), "{stderr}");
    let reply = to(&queued(&root), "meade@example.org").pop().expect("a reply");
    assert!(reply.text.contains("public: game g1 cannot be answered now: its files need the host's attention") && !reply.text.contains("symbolic"), "{}", reply.text);
    assert!(reply.text.contains("pbem") && reply.attachments.iter().all(|a| !a.ends_with(".tar")), "help answered, no archive: {}", reply.text);
}

/// Tester's notes: press text with control characters, the `status` reply's clock, the reply's
/// address and name.
#[test]
fn press_shows_control_characters_as_escapes_status_counts_from_the_runs_now_and_replies_go_to_the_registered_address() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, md, cfg) = setup(tmp.path());
    new_game(&root, "g1", 72);
    let body = "status\npress to confederate\nred\u{1b}[31m alert\u{0} \u{202e}gnp.exe\nendpress\n";
    let raw = format!("From: \"evil@evil.com\" <MEADE@Example.org>\nTo: judge@example.net\nSubject: hello\nMessage-ID: <ctl@example.org>\nContent-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit\n\n{body}");
    deliver(&md, "1", raw.as_bytes());
    intake(&root, &md, &cfg, "2026-07-01T13:00:00Z");
    let raws: Vec<String> = queued_raw(&root).into_iter().map(|b| String::from_utf8(b).unwrap()).collect();
    let reply = raws.iter().find(|r| r.contains("Subject: Re: hello")).expect("the reply");
    assert!(reply.contains("\r\nTo: meade@example.org\r\n") && !reply.contains("evil"), "{reply}");
    let reply = read_mail(reply.as_bytes());
    // The deadline is 72 hours after 2026-07-01T12:00Z: as of the run's --now, not the wall clock.
    assert!(reply.text.contains("(2 days 23 hours left)") && !reply.text.contains("(passed)"), "{}", reply.text);
    let press = to(&queued(&root), "lee@example.org").pop().expect("the press mail");
    assert!(press.text.contains("  | red\\u{1b}[31m alert\\u{0} \\u{202e}gnp.exe"), "{}", press.text);
    assert!(!press.text.contains(['\u{1b}', '\u{0}', '\u{202e}']), "{:?}", press.text);
}

/// The host's `[publish] while_running = false` (found by tester T11, D1: a record reveals a
/// Gettysburg seat's standing orders, and any seat could mail `public GAME` and read the
/// opponent's at once, and the cron run put them on the site): the record, the site and the
/// link to its pages wait for the end of the game; then they go out as before.
#[test]
fn a_host_who_keeps_the_record_back_sends_it_once_the_game_is_over() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, md, cfg) = setup(tmp.path());
    let site = tmp.path().join("site");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, format!("{text}[publish]\nout = \"site\"\npublic_url = \"https://example.org/pbem\"\nwhile_running = false\n")).unwrap();
    let game = new_game(&root, "g1", 72);
    let cron = |now: &str| pbem().args(["adjudicate", "--all"]).arg(&root).arg("--mail").arg(&cfg).args(["--now", now]).assert().success();
    cron("2026-07-01T12:30:00Z");
    assert!(!site.join("g1").exists(), "a running game is not published");
    assert!(queued(&root).iter().all(|m| !m.text.contains("https://example.org/pbem/g1/step-")), "no link to a page that is not there");
    let before = pending(&root);
    deliver(&md, "1", &message("George Meade <meade@example.org>", "Re: [pbem g1] the game begins", "public g1\nhelp\n"));
    intake(&root, &md, &cfg, "2026-07-01T13:00:00Z");
    let mails = queued_since(&root, &before);
    assert_eq!(mails.len(), 1);
    let m = &mails[0];
    assert!(m.text.contains("The public record of game g1 is sent once the game is over (the host's setting)"), "{}", m.text);
    assert!(m.text.contains("once the game is over, send the judge a line `public GAME`"), "{}", m.text);
    assert!(m.files.iter().all(|(n, _)| !n.ends_with(".tar")), "{:?}", m.files.iter().map(|f| &f.0).collect::<Vec<_>>());

    pbem::control::apply(&game, pbem::control::Request::Abandon, "the club closed", pipeline::parse_time("2026-07-01T13:10:00Z").unwrap()).unwrap();
    cron("2026-07-01T13:15:00Z");
    assert!(site.join("g1/index.html").is_file(), "a game over is published");
    let before = pending(&root);
    deliver(&md, "2", &message("George Meade <meade@example.org>", "Re: [pbem g1] final result", "public g1\n"));
    intake(&root, &md, &cfg, "2026-07-01T13:20:00Z");
    let mails = queued_since(&root, &before);
    assert!(mails[0].text.contains("The public record of game g1 is attached as g1.tar"), "{}", mails[0].text);
    assert!(mails[0].files.iter().any(|(n, _)| n == "g1.tar"));
}

/// A mail of many stray signature blocks (found by tester T11, D3: 100,000 of them from a forged
/// seat address took 27.8 s, quadratic, and queued a 7.5 MB reply of as many notes): identical
/// notes are merged into one line with their count, the reply stays small.
#[test]
fn identical_notes_are_merged_and_the_reply_stays_small() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, md, cfg) = setup(tmp.path());
    new_game(&root, "g1", 72);
    let blocks = "-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n".repeat(20_000);
    deliver(&md, "1", &message("meade@example.org", "x", &blocks));
    let out = intake(&root, &md, &cfg, "2026-07-01T13:00:00Z");
    let raw = queued_raw(&root);
    assert_eq!(raw.len(), 1, "{out}");
    assert!(raw[0].len() < 8_000, "a reply of {} bytes", raw[0].len());
    let m = read_mail(&raw[0]);
    let notes: Vec<&str> = m.text.lines().filter(|l| l.starts_with("Note:")).collect();
    assert_eq!(notes, ["Note: a signature block in the message body has no [pbem] orders above it (20000 times)"], "{}", m.text);
    assert!(out.len() < 2_000, "the run line: {out}");
}

/// A receipt the judge sent, mailed back (found by tester T11, D4: a reply with its attachments
/// was refused as a bad order, "unknown table"): it is recognised by its shape and not read.
#[test]
fn a_receipt_sent_back_is_not_an_order() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, md, cfg) = setup(tmp.path());
    let game = new_game(&root, "g1", 72);
    deliver(&md, "1", &order_mail(&game, "union", 1));
    intake(&root, &md, &cfg, "2026-07-01T13:00:00Z");
    let before = pending(&root);
    let receipt = queued(&root).into_iter().flat_map(|m| m.files).filter(|(n, _)| n.starts_with("receipt-")).collect::<Vec<_>>();
    assert_eq!(receipt.len(), 2, "the receipt and its signature");
    let mut body = String::from("From: meade@example.org\nTo: judge@example.net\nSubject: Re: [pbem g1] Re: orders\nMessage-ID: <back@example.org>\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b\"\n\n--b\nContent-Type: text/plain\n\nFor my files.\n");
    for (i, (name, bytes)) in receipt.iter().enumerate() {
        // Named otherwise: the shape, not the name, tells a receipt.
        let name = if name.ends_with(".sig") { "kept.toml.sig".to_string() } else { "kept.toml".to_string() };
        assert!(i < 2);
        body.push_str(&format!("--b\nContent-Type: text/plain\nContent-Disposition: attachment; filename=\"{name}\"\n\n{}", String::from_utf8(bytes.clone()).unwrap()));
    }
    body.push_str("--b--\n");
    deliver(&md, "2", body.as_bytes());
    let out = intake(&root, &md, &cfg, "2026-07-01T13:05:00Z");
    let mails = queued_since(&root, &before);
    assert_eq!(mails.len(), 1, "{out}");
    let text = &mails[0].text;
    assert!(text.contains("Note: attachment \"kept.toml\" is a receipt, not an order: not read"), "{text}");
    assert!(!text.contains("REFUSED") && !text.contains("unknown table") && !text.contains("signature attachment"), "{text}");
    assert!(!out.contains("refused") && !out.contains("0 of 1"), "{out}");
}

/// Robots are kept from answering the judge, and the judge answers none (found by tester T11,
/// D6): every mail carries `X-Auto-Response-Suppress` and `Precedence: bulk` besides
/// `Auto-Submitted`; an Outlook-style out-of-office reply (its subject, no orders) or one marked
/// `X-Auto-Response` gets no reply, while orders under such a subject still count and are answered.
#[test]
fn out_of_office_replies_are_not_answered_and_the_judges_mail_asks_for_none() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, md, cfg) = setup(tmp.path());
    let game = new_game(&root, "g1", 72);
    deliver(&md, "1", &message("meade@example.org", "status", "status g1\n"));
    intake(&root, &md, &cfg, "2026-07-01T13:00:00Z");
    let raw = queued_raw(&root);
    assert_eq!(raw.len(), 1);
    let head = String::from_utf8_lossy(&raw[0]).to_string();
    assert!(head.contains("\r\nX-Auto-Response-Suppress: All\r\n") && head.contains("\r\nPrecedence: bulk\r\n") && head.contains("Auto-Submitted: auto-replied"), "{head}");
    let before = pending(&root);
    let oof = "From: meade@example.org\nTo: judge@example.net\nSubject: Automatic reply: [pbem g1] Re: status\nMessage-ID: <oof@example.org>\nX-Auto-Response-Suppress: All\n\nI am out of the office until Monday.\nstatus g1\n";
    deliver(&md, "2", oof.as_bytes());
    let marked = "From: meade@example.org\nTo: judge@example.net\nSubject: Re: status\nMessage-ID: <marked@example.org>\nX-Auto-Response: yes\n\nstatus g1\n";
    deliver(&md, "3", marked.as_bytes());
    let out = intake(&root, &md, &cfg, "2026-07-01T13:05:00Z");
    assert!(queued_since(&root, &before).is_empty(), "{out}");
    assert_eq!(out.matches("an automatic message").count(), 2, "{out}");
    // Only `X-Auto-Response-Suppress` (a mail program sets it on a player's own mail): answered.
    let plain = "From: meade@example.org\nTo: judge@example.net\nSubject: status\nMessage-ID: <plain@example.org>\nX-Auto-Response-Suppress: All\n\nstatus g1\n";
    deliver(&md, "4", plain.as_bytes());
    // Orders under an out-of-office subject count, and are answered.
    let orders = String::from_utf8(order_mail(&game, "union", 1)).unwrap().replace("Subject: orders", "Subject: Out of Office: orders");
    deliver(&md, "5", orders.as_bytes());
    intake(&root, &md, &cfg, "2026-07-01T13:10:00Z");
    let mails = queued_since(&root, &before);
    assert_eq!(mails.len(), 2, "{:?}", mails.iter().map(|m| &m.subject).collect::<Vec<_>>());
    assert!(mails.iter().any(|m| m.text.contains("ACCEPTED")));
}
