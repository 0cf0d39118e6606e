//! A refused order names every problem at once, each with its line and field: on the command
//! line (`pbem submit`) and in the mail reply (`pbem intake`), run as the real binary.

#[path = "mail/common.rs"]
mod common;

use assert_cmd::cargo::cargo_bin_cmd;
use common::*;

fn pbem() -> assert_cmd::Command {
    cargo_bin_cmd!("pbem")
}

/// The Union's first form with three bad fields; returns the signed text.
fn bad_orders(game: &std::path::Path) -> String {
    let text = form(game, "union", 1, &|f| {
        f.replacen("\nI = \"stay\"", "\nI = \"Paris\"", 1)
            .replacen("\nII = \"stay\"", "\nII = \"Nowhere\"", 1)
            .replacen("\n[orders.moves]", "foo = 1\n\n[orders.moves]", 1)
    });
    format!("{text}{}", sign("union", &text))
}

/// A mail config under `tmp` whose transport writes each mail into `tmp/sent`: (config, sent).
fn file_transport(tmp: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (cfg, sent) = (tmp.join("pbem-mail.toml"), tmp.join("sent"));
    std::fs::write(&cfg, format!("from = \"Judge <judge@example.net>\"\n[transport]\nkind = \"file\"\ndir = \"{}\"\n", sent.display())).unwrap();
    (cfg, sent)
}

fn line_of(text: &str, start: &str) -> usize {
    text.lines().position(|l| l.starts_with(start)).unwrap() + 1
}

#[test]
fn submit_prints_every_problem_with_its_line_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let game = new_game(&tmp.path().join("turns"), "g1", 72);
    let signed = bad_orders(&game);
    let file = tmp.path().join("u.toml");
    std::fs::write(&file, &signed).unwrap();
    let out = pbem().arg("submit").arg(&game).arg(&file).args(["--now", "2026-07-01T13:00:00Z"]).assert().code(1);
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    let f = file.display();
    let (foo, one, two) = (line_of(&signed, "foo ="), line_of(&signed, "I ="), line_of(&signed, "II ="));
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines[0], format!("pbem: rejected {f}: 3 problems:"), "{err}");
    assert_eq!(lines[1], format!("  {f}:{foo}: orders.foo: unknown field `foo` for this question (command); accepted here: cards, meade, moves, standing"));
    assert!(lines[2].starts_with(&format!("  {f}:{one}: orders.moves.I: unknown town \"Paris\"; ")), "{err}");
    assert!(lines[3].starts_with(&format!("  {f}:{two}: orders.moves.II: unknown town \"Nowhere\"; ")), "{err}");
    assert_eq!(lines.len(), 4, "{err}");
    assert!(!err.contains("more problem"), "{err}");
    assert!(!game.join("receipts/000001").exists() || std::fs::read_dir(game.join("receipts/000001")).unwrap().next().is_none(), "nothing stored");
}

#[test]
fn the_mail_reply_lists_every_problem_with_its_line_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 72);
    let signed = bad_orders(&game);
    let (cfg, sent) = file_transport(tmp.path());
    let mail = format!("From: {}\nTo: judge@example.net\nSubject: orders\nMessage-ID: <bad@example.org>\nContent-Type: text/plain\n\n{signed}", email("union"));
    let out = pbem().args(["intake", "--stdin", "--now", "2026-07-01T13:00:00Z", "--root"]).arg(&root).arg("--config").arg(&cfg).write_stdin(mail).assert().success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let (foo, one) = (line_of(&signed, "foo ="), line_of(&signed, "I ="));
    assert!(stdout.contains(&format!("  refused the message body: 3 problems:\n    - line {foo}, field orders.foo: unknown field `foo`")), "{stdout}");
    let reply = std::fs::read_dir(&sent).unwrap().map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap()).next().unwrap();
    let body = reply.replace("\r\n", "\n").replace("=\n", ""); // quoted-printable soft breaks
    assert!(body.contains("1. the message body (game g1, role union): REFUSED\n   the message body: 3 problems:\n"), "{body}");
    assert!(body.contains(&format!("\n   - line {foo}, field orders.foo: unknown field `foo` for this question (command); accepted here: cards, meade, moves, standing\n")), "{body}");
    assert!(body.contains(&format!("\n   - line {one}, field orders.moves.I: unknown town \"Paris\"; ")), "{body}");
    assert!(body.contains("\n   - line ") && body.contains("field orders.moves.II: unknown town \"Nowhere\""), "{body}");
}

/// `pbem submit` of the Union's first form edited by `edit` and signed: its standard error.
fn submit_edited(tmp: &std::path::Path, game: &std::path::Path, name: &str, edit: &dyn Fn(String) -> String) -> (String, String, std::path::PathBuf) {
    let text = form(game, "union", 1, edit);
    let file = tmp.join(name);
    std::fs::write(&file, format!("{text}{}", sign("union", &text))).unwrap();
    let out = pbem().arg("submit").arg(game).arg(&file).args(["--now", "2026-07-01T13:00:00Z"]).assert().code(1);
    (String::from_utf8(out.get_output().stderr.clone()).unwrap(), text, file)
}

/// A bad `[pbem]` field is named with its own line, not as `FILE:1: pbem` (tester16 T16c-4): a
/// wrong type, an unknown field, a missing one (on the `[pbem]` line).
#[test]
fn header_problems_name_their_field_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let game = new_game(&tmp.path().join("turns"), "g1", 72);
    type Edit<'a> = &'a dyn Fn(String) -> String;
    let cases: [(&str, Edit, &str, &str); 3] = [
        ("step.toml", &|f| f.replacen("\nstep = 1\n", "\nstep = \"1\"\n", 1), "step = ", "pbem.step: want the step number, a whole number without quotes, e.g. step = 1; found the string \"1\""),
        ("extra.toml", &|f| f.replacen("\nstep = 1\n", "\nstep = 1\nextra = 1\n", 1), "extra = ", "pbem.extra: unknown field \"extra\": [pbem] has only game, step, role, host_seed_commitment, nonce"),
        ("role.toml", &|f| f.replacen("\nrole = \"union\"\n", "\n", 1), "[pbem]", "pbem.role: missing: your role, a string (start from the form)"),
    ];
    for (name, edit, at, want) in cases {
        let (err, text, file) = submit_edited(tmp.path(), &game, name, edit);
        assert_eq!(err, format!("pbem: rejected {}:{}: {want}\n", file.display(), line_of(&text, at)), "{name}");
    }
}

/// An order's role in another case is refused, not rewritten (the header is signed), with the
/// spelling to use (tester16 T16c-5).
#[test]
fn a_role_in_another_case_is_refused_with_its_spelling() {
    let tmp = tempfile::tempdir().unwrap();
    let game = new_game(&tmp.path().join("turns"), "g1", 72);
    let (err, text, file) = submit_edited(tmp.path(), &game, "u.toml", &|f| f.replacen("\nrole = \"union\"\n", "\nrole = \"Union\"\n", 1));
    let line = line_of(&text, "role = ");
    assert_eq!(err, format!("pbem: rejected {}:{line}: pbem.role: no seat \"Union\": roles are lower case: write role = \"union\" (then sign again)\n", file.display()));
}

/// An order signed with a key pbem knows says whose it is, on the command line and in the mail
/// reply (tester16 T16c-6): another seat's, or the seat's own before a seat change.
#[test]
fn a_wrong_key_is_named_when_pbem_knows_whose_it_is() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 72);
    let text = form(&game, "union", 1, &|f| f);
    let signed = format!("{text}{}", sign("confederate", &text));
    let file = tmp.path().join("u.toml");
    std::fs::write(&file, &signed).unwrap();
    let other = "this is seat confederate's key: did you sign seat union's form instead of your own?";
    let out = pbem().arg("submit").arg(&game).arg(&file).args(["--now", "2026-07-01T13:00:00Z"]).assert().code(1);
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.contains("signed by a different key: fingerprint ") && err.trim_end().ends_with(other), "{err}");
    // By mail, from the Union's address.
    let (cfg, sent) = file_transport(tmp.path());
    let mail = format!("From: {}\nTo: judge@example.net\nSubject: orders\nMessage-ID: <key@example.org>\nContent-Type: text/plain\n\n{signed}", email("union"));
    pbem().args(["intake", "--stdin", "--now", "2026-07-01T13:00:00Z", "--root"]).arg(&root).arg("--config").arg(&cfg).write_stdin(mail).assert().success();
    let reply = std::fs::read_dir(&sent).unwrap().map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap()).next().unwrap();
    let body = reply.replace("\r\n", "\n").replace("=\n", "").split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(body.contains(other), "{body}");
    // The seat's key before a seat change.
    let new_key = tmp.path().join("new.pub");
    std::fs::write(&new_key, key("union-2").public_key().to_openssh().unwrap()).unwrap();
    pbem().arg("seat").arg(&game).args(["--role", "union", "--key"]).arg(&new_key).args(["--now", "2026-07-01T13:10:00Z"]).assert().success();
    let text = form(&game, "union", 2, &|f| f);
    std::fs::write(&file, format!("{text}{}", sign("union", &text))).unwrap();
    let out = pbem().arg("submit").arg(&game).arg(&file).args(["--now", "2026-07-01T13:20:00Z"]).assert().code(1);
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.trim_end().ends_with("this is the key seat union held before record 1, which gave the seat a new key: sign with the new one"), "{err}");
}

/// A former holder's order is refused saying the seat passed to another player, not "sign with
/// the new key" (tester t18a-5); an order for a step already resolved is not answered "send them
/// again" (t18a-4).
#[test]
fn refusals_say_what_cannot_be_mended_by_sending_again() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 72);
    let (cfg, sent) = file_transport(tmp.path());
    let intake = |mail: Vec<u8>, now: &str| {
        pbem().args(["intake", "--stdin", "--now", now, "--root"]).arg(&root).arg("--config").arg(&cfg).write_stdin(mail).assert().success();
        let mut mails: Vec<_> = std::fs::read_dir(&sent).unwrap().map(|e| e.unwrap().path()).collect();
        mails.sort_by_key(|p| std::fs::metadata(p).unwrap().modified().unwrap());
        let last = std::fs::read_to_string(mails.last().unwrap()).unwrap().replace("\r\n", "\n").replace("=\n", "");
        last.split_whitespace().collect::<Vec<_>>().join(" ")
    };
    // Step 1 resolved with both orders; Meade's step-1 order made before it, sent after it.
    let late = order_mail(&game, "union", 2);
    intake(order_mail(&game, "union", 1), "2026-07-01T13:00:00Z");
    intake(order_mail(&game, "confederate", 1), "2026-07-01T13:01:00Z");
    pbem().arg("adjudicate").arg(&game).args(["--now", "2026-07-01T13:02:00Z"]).assert().success();
    let body = intake(late, "2026-07-01T13:03:00Z");
    assert!(body.contains("REFUSED") && body.contains("Orders for a step already resolved count for nothing, and sending them again cannot change that") && !body.contains("correct them and send them again"), "{body}");
    // The union seat passes to Hancock; Meade's order, signed with the key the seat held, is refused.
    let new_key = tmp.path().join("hancock.pub");
    std::fs::write(&new_key, key("union-2").public_key().to_openssh().unwrap()).unwrap();
    pbem().arg("seat").arg(&game).args(["--role", "union", "--email", "hancock@example.org", "--key"]).arg(&new_key).args(["--now", "2026-07-01T13:10:00Z"]).assert().success();
    let text = form(&game, "union", 3, &|f| f);
    let file = tmp.path().join("meade.toml");
    std::fs::write(&file, format!("{text}{}", sign("union", &text))).unwrap();
    let out = pbem().arg("submit").arg(&game).arg(&file).args(["--now", "2026-07-01T13:20:00Z"]).assert().code(1);
    let err = String::from_utf8(out.get_output().stderr.clone()).unwrap();
    assert!(err.trim_end().ends_with("this is the key of seat union's holder before record 2, which gave the seat to another player (hancock@example.org): it signs no orders of the seat any more"), "{err}");
}

/// The paragraph of `body` that starts with `start`: its lines (to the next blank line).
fn paragraph_of<'a>(body: &'a str, start: &str) -> Vec<&'a str> {
    let at = body.find(start).unwrap_or_else(|| panic!("no {start:?} in {body}"));
    body[at..].lines().take_while(|l| !l.trim().is_empty()).collect()
}

/// A reply's prose is wrapped between words to 76 columns, not broken mid-sentence by lines
/// wrapped by hand, and says that a step resolves once every order is in, not only at its
/// deadline (tester16 T16c-14).
#[test]
fn reply_paragraphs_are_wrapped_whole_and_say_when_a_step_resolves() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("turns");
    let game = new_game(&root, "g1", 72);
    let (cfg, sent) = file_transport(tmp.path());
    let refused = format!("From: {}\nTo: judge@example.net\nSubject: orders\nMessage-ID: <bad@example.org>\nContent-Type: text/plain\n\n{}", email("union"), bad_orders(&game));
    for mail in [refused.into_bytes(), order_mail(&game, "confederate", 1)] {
        pbem().args(["intake", "--stdin", "--now", "2026-07-01T13:00:00Z", "--root"]).arg(&root).arg("--config").arg(&cfg).write_stdin(mail).assert().success();
    }
    let bodies: Vec<String> = std::fs::read_dir(&sent).unwrap().map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap().replace("\r\n", "\n").replace("=\n", "")).collect();
    let all = bodies.join("\n");
    let cases = [
        ("Refused orders count for nothing", "Refused orders count for nothing: correct them and send them again. The step takes orders until it is resolved, which the judge does once every order it awaits is in, or else once its deadline (and the grace the game gives after it, if any) has passed."),
        ("   The host-signed receipt", "The host-signed receipt is attached: keep it (`pbem audit GAME --receipt FILE` shows whether the order used was this one or a later one). A later order for the same step replaces this one while the step is open."),
    ];
    for (start, text) in cases {
        let lines = paragraph_of(&all, start);
        assert!(lines.iter().all(|l| l.chars().count() <= 76), "{lines:#?}");
        assert_eq!(lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" "), text);
    }
}

/// An order's problem repeats what the player wrote beside the choices; typographic quotes are
/// named as the cause of a syntax error (tester16 T16c-7), on the real binary: Flag Dash's
/// `card = "fwd"` and the curly quotes of a word processor.
#[test]
fn a_problem_repeats_what_was_written_and_names_typographic_quotes() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let g = d.join("fd");
    let mut new = pbem();
    new.arg("new").arg(&g).args(["--rules", "flag-dash", "--now", "2026-07-02T12:00:00Z"]);
    for role in ["red-1", "red-2", "white-1", "white-2"] {
        let st = std::process::Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(d.join(role)).status().unwrap();
        assert!(st.success());
        new.arg("--player").arg(format!("{role}:{role}@example.org:{}.pub", d.join(role).display()));
    }
    new.assert().success();
    let f = d.join("red.toml");
    let refused = |edit: &dyn Fn(String) -> String| {
        pbem().arg("form").arg(&g).args(["--role", "red-1", "-o"]).arg(&f).args(["--now", "2026-07-02T12:00:00Z"]).assert().success();
        let text = edit(std::fs::read_to_string(&f).unwrap());
        std::fs::write(&f, &text).unwrap();
        let sign = pbem().arg("sign").arg("--key").arg(d.join("red-1")).arg(&f).output().unwrap();
        let out = if sign.status.success() { pbem().arg("submit").arg(&g).arg(&f).args(["--now", "2026-07-02T12:30:00Z"]).output().unwrap() } else { sign };
        assert_eq!(out.status.code(), Some(1));
        (String::from_utf8(out.stderr).unwrap(), line_of(&text, "card = "))
    };
    let (err, line) = refused(&|t| t.replacen("card = \"forward\"", "card = \"fwd\"", 1));
    assert_eq!(err, format!("pbem: rejected {}:{line}: orders.move1.card: one of your cards: forward, back, left, right, flag, push, copy; you wrote \"fwd\"\n", f.display()));
    let (err, line) = refused(&|t| t.replacen("card = \"forward\"", "card = \u{201C}forward\u{201D}", 1));
    assert!(err.starts_with(&format!("pbem: {}:{line}: ", f.display())), "{err}");
    assert!(err.contains("the line holds the typographic quote \u{201C}, which TOML does not take: write straight quotes"), "{err}");
}
