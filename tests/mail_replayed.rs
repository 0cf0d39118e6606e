//! Orders mailed back once their step is resolved (their signed texts are public then) spend no
//! seat's replies, and a player's new order is always answered with its receipt, whatever the
//! hourly cap (tester t18b-1). Run as the real binary.

#[path = "mail/common.rs"]
mod common;

use std::path::PathBuf;

use assert_cmd::cargo::cargo_bin_cmd;
use common::*;

struct Host {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    game: PathBuf,
    cfg: PathBuf,
    sent: PathBuf,
}

impl Host {
    fn new(cap: u32) -> Host {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("turns");
        let game = new_game(&root, "g1", 72);
        let sent = tmp.path().join("sent");
        let cfg = tmp.path().join("pbem-mail.toml");
        std::fs::write(&cfg, format!("from = \"Judge <judge@example.net>\"\n[intake]\nmax_replies_per_hour = {cap}\n[transport]\nkind = \"file\"\ndir = \"{}\"\n", sent.display())).unwrap();
        Host { _tmp: tmp, root, game, cfg, sent }
    }

    /// Takes `mail` in at `now`; returns what intake printed.
    fn intake(&self, mail: &[u8], now: &str) -> String {
        let out = cargo_bin_cmd!("pbem").args(["intake", "--stdin", "--now", now, "--root"]).arg(&self.root).arg("--config").arg(&self.cfg).write_stdin(mail.to_vec()).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    /// The recipients of every mail sent so far (each mail's `To:` and `Cc:` lines).
    fn recipients(&self) -> Vec<String> {
        let mut all = Vec::new();
        for e in std::fs::read_dir(&self.sent).into_iter().flatten().flatten() {
            let text = std::fs::read_to_string(e.path()).unwrap();
            all.extend(text.lines().take_while(|l| !l.is_empty()).filter(|l| l.starts_with("To:") || l.starts_with("Cc:")).map(str::to_string));
        }
        all
    }
}

/// The body of `mail` (after its header).
fn signed_body(mail: &[u8]) -> String {
    let text = String::from_utf8(mail.to_vec()).unwrap();
    text.split_once("\n\n").unwrap().1.to_string()
}

fn mail(from: &str, subject: &str, n: usize, body: &str) -> Vec<u8> {
    format!("From: {from}\nTo: judge@example.net\nSubject: {subject}\nMessage-ID: <m{n}@example.org>\nContent-Type: text/plain\n\n{body}").into_bytes()
}

#[test]
fn replayed_orders_spend_no_seats_replies_and_a_new_order_is_always_answered() {
    let h = Host::new(3);
    // Two union orders for step 1, signed before it is resolved and sent after: one Meade sends
    // himself, the other stands for any revealed order (every resolved order's text is public).
    let late = order_mail(&h.game, "union", 2);
    let replay = signed_body(&order_mail(&h.game, "union", 3));
    h.intake(&order_mail(&h.game, "union", 1), "2026-07-01T13:00:00Z");
    h.intake(&order_mail(&h.game, "confederate", 1), "2026-07-01T13:01:00Z");
    cargo_bin_cmd!("pbem").arg("adjudicate").arg(&h.game).args(["--now", "2026-07-01T13:02:00Z"]).assert().success();
    let to = |who: &str| h.recipients().iter().filter(|l| l.contains(who)).count();
    let (meade, lee) = (to("meade@example.org"), to("lee@example.org"));
    // Strangers mail the order back, under subjects of their choosing: not answered.
    for n in 0..6 {
        let out = h.intake(&mail(&format!("x{n}@stranger.example"), "Your account is suspended", n, &replay), "2026-07-01T13:10:00Z");
        assert!(out.contains("not answered") && out.contains("steps already resolved"), "{out}");
    }
    // The confederate player mails it back: answered to him alone, not copied to the union seat.
    h.intake(&mail("lee@example.org", "look", 10, &replay), "2026-07-01T13:11:00Z");
    assert_eq!(to("meade@example.org"), meade, "the union seat heard of none of it");
    assert_eq!(to("lee@example.org"), lee + 1, "the confederate is answered");
    // Meade's own late order is answered (to his address, from his address).
    let out = h.intake(&late, "2026-07-01T13:12:00Z");
    assert!(out.contains("0 of 1 order file(s) accepted") && !out.contains("no reply sent"), "{out}");
    // Over the cap with commands, Meade's new order still gets its receipt.
    for n in 0..3 {
        h.intake(&mail("meade@example.org", "status", 20 + n, "status\n"), "2026-07-01T13:13:00Z");
    }
    let out = h.intake(&mail("meade@example.org", "status", 30, "status\n"), "2026-07-01T13:14:00Z");
    assert!(out.contains("no reply sent"), "the cap holds for commands: {out}");
    let out = h.intake(&order_mail(&h.game, "union", 3), "2026-07-01T13:15:00Z");
    assert!(out.contains("1 of 1 order file(s) accepted") && !out.contains("no reply sent"), "{out}");
    // Once the game is over, every order of it may be public: not answered to its seat either
    // (tester t18c-3).
    cargo_bin_cmd!("pbem").arg("end").arg(&h.game).args(["--abandon", "--reason", "test", "--now", "2026-07-01T13:20:00Z"]).assert().success();
    let meade = to("meade@example.org");
    let out = h.intake(&mail("x9@stranger.example", "Your account is suspended", 40, &replay), "2026-07-01T13:21:00Z");
    assert!(out.contains("not answered"), "{out}");
    h.intake(&mail("lee@example.org", "look", 41, &replay), "2026-07-01T13:22:00Z");
    assert_eq!(to("meade@example.org"), meade, "the union seat heard of none of it");
}
