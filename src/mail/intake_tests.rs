//! Unit tests of intake: a panic while handling one message, and moments inside one run (a host
//! control landing between the run reading the games and taking a message in).

use super::*;
use crate::commit;
use crate::model::{Deadlines, Seat};
use crate::pipeline::{self, Entropy, NewGame};

const T0: &str = "2026-07-01T12:00:00Z";

fn key(name: &str) -> ssh_key::PrivateKey {
    pipeline::key_from_seed(&commit::step_seed("intake-test", 0, &[7; 32], std::iter::once((name, &[0u8; 32]))), name)
}

/// A Gettysburg game `g1` under `root` with seats lee@ (confederate) and meade@ (union).
fn new_game(root: &Path) -> PathBuf {
    let dir = root.join("g1");
    let seat = |role: &str, email: &str| Seat { role: role.into(), email: email.into(), key: key(role).public_key().to_openssh().unwrap(), time_zone: None };
    let seats = vec![seat("confederate", "lee@example.org"), seat("union", "meade@example.org")];
    let new = NewGame { id: Some("g1".into()), rules: "gettysburg-campaign".into(), scenario: None, options: Default::default(), seats, deadlines: Deadlines { default_hours: 72, ..Default::default() }, nmr: Default::default(), wording: crate::report::WORDING };
    pipeline::create(&dir, new, pipeline::parse_time(T0).unwrap(), &mut Entropy::seeded([3; 32])).unwrap();
    dir
}

/// A plain-text mail from `from` with the union's current form pasted and signed by `signer`.
fn order_mail(game: &Path, from: &str, signer: &ssh_key::PrivateKey) -> Vec<u8> {
    let g = pipeline::load(game).unwrap();
    let op = g.record.opening.as_ref().unwrap();
    let nonce = commit::sha256_hex(b"union#1");
    let form = crate::report::order_form(g.game, &g.gf, op, &g.state, "union", &nonce, None).unwrap().unwrap();
    let text = sig::normalize(form.as_bytes()).unwrap();
    let signed = format!("{text}{}", sig::sign(signer, sig::NS_ORDERS, text.as_bytes()).unwrap());
    format!("From: {from}\nTo: judge@example.net\nSubject: orders\nMessage-ID: <o1@example.org>\nContent-Type: text/plain\n\n{signed}").into_bytes()
}

/// Game `g1` under a root whose games a run has read, after which the host gave the union seat
/// to hancock@ (key `newcomer`); with a Maildir and the run's filing.
struct SeatChanged {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    game: PathBuf,
    md: PathBuf,
    cfg: HostConfig,
    now: DateTime<Utc>,
    games: Games,
    filing: Filing,
}

impl SeatChanged {
    fn new() -> SeatChanged {
        let tmp = tempfile::tempdir().unwrap();
        let (root, md) = (tmp.path().join("turns"), tmp.path().join("Maildir"));
        let game = new_game(&root);
        std::fs::create_dir_all(md.join("new")).unwrap();
        let cfg: HostConfig = toml::from_str("from = \"judge <judge@example.net>\"").unwrap();
        let now = pipeline::parse_time("2026-07-01T13:00:00Z").unwrap();
        std::fs::create_dir_all(state_dir(&root)).unwrap();
        let games = Games::load(&root).unwrap();
        let req = crate::control::Request::Seat { role: "union".into(), email: Some("hancock@example.org".into()), key: Some(key("newcomer").public_key().to_openssh().unwrap()), time_zone: None };
        crate::control::apply(&game, req, "Meade left", now).unwrap();
        let filing = Filing::open(&root, now.into());
        SeatChanged { _tmp: tmp, root, game, md, cfg, now, games, filing }
    }

    /// Handles message `name` with these bytes as the run that read the games before the change.
    fn handle(&mut self, name: &str, bytes: &[u8]) -> Handled {
        let path = self.md.join("new").join(name);
        std::fs::write(&path, bytes).unwrap();
        handle_file(&self.md, &path, name, Default::default(), &self.games, &Outbox::under(&self.root), &self.cfg, self.now, &mut self.filing).unwrap()
    }

    /// The text of the newest reply waiting.
    fn last_reply(&self) -> String {
        String::from_utf8_lossy(&self.filing.replies.borrow().last().unwrap().0.bytes).to_string()
    }
}

#[test]
fn an_order_from_a_seat_changed_after_the_games_were_read_is_answered_to_its_new_holder() {
    // Found by a tester (T11 D3): `pbem seat` gave the union seat a new player between the run
    // reading the games and taking in the new player's order. The order was checked (under the
    // game's lock) against the new key and accepted, but the reply was worked out from the games
    // as first read, where the sender held no seat: the message went to failed/ unanswered.
    let mut t = SeatChanged::new();
    let mail = order_mail(&t.game, "hancock@example.org", &key("newcomer"));
    let h = t.handle("1.M1.host", &mail);
    assert_eq!(h.disposition, Disposition::Done, "{}", h.reason);
    assert!(h.orders.iter().all(|o| o.receipt.is_some()), "the order is accepted: {}", h.reason);
    let replies = t.filing.replies.borrow();
    assert_eq!(replies.len(), 1, "the sender is answered");
    assert_eq!(replies[0].0.to, vec!["hancock@example.org".to_string()], "at the seat's new address only");
}

#[test]
fn a_command_from_an_address_whose_seat_changed_after_the_games_were_read_gets_no_report() {
    // Found by tester T23a-1: `pbem seat` moved the union seat to a new player while an intake run
    // was going; a `report` from the old address, answered from the games as the run first read
    // them, was sent the seat's report written after the change.
    let mut t = SeatChanged::new();
    let mail = |n: usize, from: &str, text: &str| format!("From: {from}\nTo: judge@example.net\nSubject: hi\nMessage-ID: <c{n}@example.org>\n\n{text}\n").into_bytes();
    for (n, command) in ["report", "status", "press g1 to confederate\nHold the line.\nendpress"].iter().enumerate() {
        let h = t.handle(&format!("{n}.M1.host"), &mail(n, "meade@example.org", command));
        let text = t.last_reply();
        assert!(text.contains("you no longer hold a seat in game g1") && !text.contains("Your newest report") && !text.contains("you play union"), "{command}: {}: {text}", h.reason);
    }
    let queue = Outbox::under(&t.root).dir.join("queue");
    assert!(!queue.exists() || store::list(&queue).unwrap().is_empty(), "no press relayed");
    // The seat's new holder, a stranger to the games as first read: left for the next run, which
    // reads the games anew; a true stranger is failed as before.
    for (n, from, disposition) in [(7, "hancock@example.org", Disposition::Retry), (8, "nobody@example.org", Disposition::Failed)] {
        let h = t.handle(&format!("{n}.M1.host"), &mail(n, from, "status"));
        assert_eq!(h.disposition, disposition, "{from}: {}", h.reason);
    }
}

#[test]
fn a_panic_while_handling_a_message_fails_that_message_only() {
    let h = guard("m1", || panic!("index out of bounds")).unwrap();
    assert_eq!(h.disposition, Disposition::Failed);
    assert_eq!(h.reason, "pbem failed on this message: index out of bounds; please report it");
    let n = 3;
    let h = guard("m2", || panic!("bad {n}")).unwrap();
    assert_eq!(h.reason, "pbem failed on this message: bad 3; please report it");
    let ok = guard("m3", || Ok(Handled { name: "m3".into(), disposition: Disposition::Done, reason: "fine".into(), orders: vec![], reply: None, needs_host: false })).unwrap();
    assert_eq!(ok.disposition, Disposition::Done);
}

#[test]
fn a_message_whose_parse_panicked_ahead_is_failed_with_that_panic_not_parsed_again() {
    // The read-ahead thread printed the panic; parsed again here it would panic, and print, again.
    let mut t = SeatChanged::new();
    let mail = order_mail(&t.game, "hancock@example.org", &key("newcomer"));
    let path = t.md.join("new").join("1.M1.host");
    std::fs::write(&path, &mail).unwrap();
    let ahead = super::super::ahead::Ahead { panicked: Some("bad armor".into()), ..Default::default() };
    let h = handle_file(&t.md, &path, "1.M1.host", ahead, &t.games, &Outbox::under(&t.root), &t.cfg, t.now, &mut t.filing).unwrap();
    assert_eq!((h.disposition, h.reason.as_str()), (Disposition::Failed, "pbem failed on this message: bad armor; please report it"));
    assert!(h.orders.is_empty() && t.filing.replies.borrow().is_empty(), "nothing of it handled");
    assert_eq!(t.filing.waiting.len(), 1, "filed away as failed");
}

#[test]
fn a_piped_message_another_run_took_in_is_told_as_such() {
    let h = |name: &str| Handled { name: name.into(), disposition: Disposition::Done, reason: "accepted".into(), orders: vec![], reply: None, needs_host: false };
    assert!(piped_elsewhere(Some("m1".into()), &[h("m0"), h("m1")]).is_none(), "handled here: its own line says");
    let other = piped_elsewhere(Some("m1".into()), &[h("m0")]).unwrap();
    assert_eq!((other.name.as_str(), other.disposition), ("m1", Disposition::Done));
    assert!(other.reason.starts_with("taken in by another run"), "{}", other.reason);
    assert!(piped_elsewhere(None, &[]).unwrap().reason.contains("the same bytes were taken in before"));
}

/// A message another program moved or deleted after the run listed it (a mail reader sharing
/// the Maildir; tester t25a-3): one gone before it is read is left to that program and the run
/// goes on with the next; one gone once handled is not filed, and that is no failure either.
#[test]
fn a_message_moved_away_during_the_run_is_left_to_whoever_moved_it() {
    let mut t = SeatChanged::new();
    let (gone, here) = (t.md.join("new").join("1.gone"), t.md.join("new").join("2.here"));
    std::fs::write(&here, "From: nobody@example.org\nTo: judge@example.net\nSubject: hello\nMessage-ID: <h@example.org>\n\nhello\n").unwrap();
    let messages = vec![(t.md.clone(), gone.clone(), "1.gone".to_string()), (t.md.clone(), here, "2.here".to_string())];
    let mut out = IntakeRun::default();
    take_in_order(&messages, &Default::default, &t.games, &t.cfg, t.now, &mut out, &mut t.filing).unwrap();
    let names: Vec<&str> = out.handled.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["2.here"]);
    let mut made = BTreeSet::new();
    file_away(&t.md, &gone, "1.gone", (Disposition::Done, ""), &mut made).unwrap();
    assert!(!t.md.join("done").join("1.gone").exists());
    // Another failure to file a message is still one: a name that cannot be made.
    std::fs::write(&gone, "x").unwrap();
    assert!(file_away(&t.md, &gone, &"x".repeat(300), (Disposition::Done, ""), &mut made).is_err());
}

/// The games named by the messages appended to an mbox since a length (tester t25c-2): a
/// stranger's mail names none, an order names its game; a file that shrank or whose tail does not
/// start with a separator (rewritten meanwhile) may name any (`None`).
#[test]
fn the_mail_appended_to_an_mbox_names_its_games() {
    let t = SeatChanged::new();
    let mbox = t.root.join("inbox.mbox");
    let stranger = "From a@b Wed Jul  1 13:00:00 2026\nFrom: a@b\nSubject: hi\n\nhello\n\n";
    std::fs::write(&mbox, stranger).unwrap();
    let len = |p: &Path| std::fs::metadata(p).unwrap().len();
    assert_eq!(mbox_games(&mbox, 0, len(&mbox) - 1, 1 << 20), None, "still being appended");
    let first = len(&mbox);
    assert_eq!(mbox_games(&mbox, 0, first, 1 << 20), Some(vec![]));
    let order = order_mail(&t.game, "hancock@example.org", &key("newcomer"));
    let mut text = std::fs::read(&mbox).unwrap();
    text.extend_from_slice(b"From h@example.org Wed Jul  1 13:01:00 2026\n");
    text.extend_from_slice(&order);
    text.extend_from_slice(b"\n");
    std::fs::write(&mbox, &text).unwrap();
    assert_eq!(mbox_games(&mbox, first, len(&mbox), 1 << 20), Some(vec!["g1".to_string()]));
    assert_eq!(mbox_games(&mbox, first + 1, len(&mbox), 1 << 20), None, "not at a separator");
    assert_eq!(mbox_games(&mbox, first, len(&mbox) + 10, 1 << 20), None, "shrank since");
}

/// A message whose name is already filed in `done/` (or `failed/`) is filed beside it under
/// another name, never over it (tester t25a-6).
#[test]
fn a_message_is_never_filed_over_another_of_its_name() {
    let t = SeatChanged::new();
    let mut made = BTreeSet::new();
    for (k, text) in ["first", "second", "third"].iter().enumerate() {
        let path = t.md.join("new").join("1.same");
        std::fs::write(&path, text).unwrap();
        let disposition = if k == 2 { Disposition::Failed } else { Disposition::Done };
        file_away(&t.md, &path, "1.same", (disposition, "why"), &mut made).unwrap();
    }
    let read = |f: &str| std::fs::read_to_string(t.md.join(f)).unwrap();
    assert_eq!((read("done/1.same"), read("done/1.same.2"), read("failed/1.same")), ("first".into(), "second".into(), "third".into()));
    assert_eq!(read("failed/1.same.reason"), "why\n");
}
