//! Shared by the mail tests: a fixture game, signed order artifacts and the message templates'
//! transforms (quoted-printable, base64, format=flowed, Latin-1, ...).
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use pbem::model::{Deadlines, Seat};
use pbem::pipeline::{self, Entropy, NewGame};
use pbem::{commit, report, sig};

pub const T0: &str = "2026-07-01T12:00:00Z";

pub fn key(role: &str) -> ssh_key::PrivateKey {
    pipeline::key_from_seed(&commit::step_seed("mail-test", 0, &[7; 32], std::iter::once((role, &[0u8; 32]))), role)
}

pub fn email(role: &str) -> &'static str {
    if role == "union" { "meade@example.org" } else { "lee@example.org" }
}

/// Creates game `id` under `root` with seats lee/meade and the fixed keys; returns its folder.
pub fn new_game(root: &Path, id: &str, deadline_hours: u32) -> PathBuf {
    new_game_with(root, id, Deadlines { default_hours: deadline_hours, ..Default::default() }, Default::default())
}

/// [`new_game`] with these `deadlines` and NMR policy.
pub fn new_game_with(root: &Path, id: &str, deadlines: Deadlines, nmr: pbem::model::NmrPolicy) -> PathBuf {
    let dir = root.join(id);
    let seats = ["confederate", "union"]
        .iter()
        .map(|r| Seat { role: r.to_string(), email: email(r).to_string(), key: key(r).public_key().to_openssh().unwrap(), time_zone: None })
        .collect();
    let new = NewGame {
        id: Some(id.into()),
        rules: "gettysburg-campaign".into(),
        scenario: None,
        options: Default::default(),
        seats,
        deadlines,
        nmr,
        wording: pbem::report::WORDING,
    };
    pipeline::create(&dir, new, pipeline::parse_time(T0).unwrap(), &mut Entropy::seeded([3; 32])).unwrap();
    dir
}

/// The current form of `role` in `game` with nonce number `n`, optionally edited.
pub fn form(game: &Path, role: &str, n: u32, edit: &dyn Fn(String) -> String) -> String {
    let g = pipeline::load(game).unwrap();
    let op = g.record.opening.as_ref().unwrap();
    let nonce = commit::sha256_hex(format!("{role}#{n}").as_bytes());
    let f = report::order_form(g.game, &g.gf, op, &g.state, role, &nonce, None).unwrap().unwrap();
    sig::normalize(edit(f).as_bytes()).unwrap()
}

pub fn sign(role: &str, text: &str) -> String {
    sig::sign(&key(role), sig::NS_ORDERS, text.as_bytes()).unwrap()
}

/// A plain-text mail from the seat of `role` with its current form (nonce number `n`) pasted and
/// signed, as a player sends orders.
pub fn order_mail(game: &Path, role: &str, n: u32) -> Vec<u8> {
    let text = form(game, role, n, &|s| s);
    let signed = format!("{text}{}", sign(role, &text));
    format!("From: {}\nTo: judge@example.net\nSubject: orders\nMessage-ID: <{role}-{n}@example.org>\nContent-Type: text/plain\n\n{signed}", email(role)).into_bytes()
}

/// An artifact by name: `ROLE[-VARIANT][#N][+sig|.sig]`, `report-ROLE`, `filler-20MB`.
pub fn artifact(game: &Path, name: &str) -> Vec<u8> {
    if name == "filler-20MB" {
        let line = "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB\n";
        return line.repeat(20 * 1024 * 1024 / line.len() + 1).into_bytes();
    }
    if let Some(role) = name.strip_prefix("report-") {
        let g = pipeline::load(game).unwrap();
        return std::fs::read(g.dir.report(0, role)).unwrap();
    }
    let (base, tail) = if let Some(b) = name.strip_suffix("+sig") {
        (b, "+sig")
    } else if let Some(b) = name.strip_suffix(".sig") {
        (b, ".sig")
    } else {
        (name, "")
    };
    let (who, n) = match base.split_once('#') {
        Some((w, n)) => (w, n.parse::<u32>().unwrap()),
        None => (base, 1),
    };
    let (role, variant) = who.split_once('-').unwrap_or((who, ""));
    let edit: Box<dyn Fn(String) -> String> = match variant {
        "" => Box::new(|s| s),
        "accent" => Box::new(|s| format!("# Signé à Taneytown par le général Meade, ça marche\n{s}")),
        "step2" => Box::new(|s| s.replacen("step = 1", "step = 2", 1)),
        "g9" => Box::new(|s| s.replacen("game = \"g1\"", "game = \"g9\"", 1)),
        "resign" => Box::new(|s| format!("{}[orders]\nresign = true\n", &s[..s.find("\n[orders]\n").unwrap() + 1])),
        v => panic!("unknown variant {v}"),
    };
    let text = form(game, role, n + if variant.is_empty() { 0 } else { 1000 }, &edit);
    let s = sign(role, &text);
    match tail {
        "+sig" => format!("{text}{s}").into_bytes(),
        ".sig" => s.into_bytes(),
        _ => text.into_bytes(),
    }
}

pub fn b64(data: &[u8]) -> Vec<u8> {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = Vec::new();
    let mut col = 0;
    for c in data.chunks(3) {
        let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            out.push(if i <= c.len() { A[(n >> (18 - 6 * i) & 63) as usize] } else { b'=' });
        }
        col += 4;
        if col == 76 {
            out.push(b'\n');
            col = 0;
        }
    }
    out.push(b'\n');
    out
}

pub fn qp(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in data.split(|&b| b == b'\n') {
        let mut col = 0;
        for (i, &b) in line.iter().enumerate() {
            let last = i + 1 == line.len();
            let plain = (33..=126).contains(&b) || (b == b' ' && !last);
            let enc = !plain || b == b'=';
            let piece = if enc { format!("={b:02X}").into_bytes() } else { vec![b] };
            if col + piece.len() > 75 {
                out.extend_from_slice(b"=\n");
                col = 0;
            }
            col += piece.len();
            out.extend(piece);
        }
        out.push(b'\n');
    }
    out.pop();
    out
}

/// RFC 3676 format=flowed (delsp=no): long lines broken after a space, space-stuffing.
pub fn flowed(data: &[u8]) -> Vec<u8> {
    let text = String::from_utf8(data.to_vec()).unwrap();
    let mut out = String::new();
    for line in text.split('\n') {
        let mut rest = line.to_string();
        loop {
            let stuffed = rest.starts_with(' ') || rest.starts_with('>') || rest.starts_with("From ");
            let prefix = if stuffed { " " } else { "" };
            if rest.len() <= 40 {
                out.push_str(prefix);
                out.push_str(&rest);
                out.push('\n');
                break;
            }
            match rest[20..].find(' ').map(|p| p + 21) {
                Some(cut) if cut < rest.len() => {
                    out.push_str(prefix);
                    out.push_str(&rest[..cut]);
                    out.push('\n');
                    rest = rest[cut..].to_string();
                }
                _ => {
                    out.push_str(prefix);
                    out.push_str(&rest);
                    out.push('\n');
                    break;
                }
            }
        }
    }
    out.pop();
    out.into_bytes()
}

pub fn transform(data: Vec<u8>, t: &str) -> Vec<u8> {
    match t {
        "b64" => b64(&data),
        "qp" => qp(&data),
        "flowed" => flowed(&data),
        "crlf" => String::from_utf8(data).unwrap().replace('\n', "\r\n").into_bytes(),
        "bom" => [b"\xEF\xBB\xBF".as_slice(), &data].concat(),
        "latin1" => String::from_utf8(data).unwrap().chars().map(|c| u8::try_from(c as u32).unwrap_or(b'?')).collect(),
        "quote" => String::from_utf8(data).unwrap().lines().map(|l| format!("> {l}\n")).collect::<String>().into_bytes(),
        // One non-ASCII character inside the armored signature, where it straddles a 70-byte line
        // of the re-wrapped block (a mail program "correcting" a letter).
        "armor-accent" => {
            let mut text = String::from_utf8(data).unwrap();
            let begin = "-----BEGIN SSH SIGNATURE-----\n";
            text.insert(text.find(begin).expect("an armored block") + begin.len() + 69, '\u{e9}');
            text.into_bytes()
        }
        "tamper" => String::from_utf8(data).unwrap().replacen("order form", "order f0rm", 1).into_bytes(),
        // A mail program that hard-wraps lines at 72 characters (at the last space before).
        "wrap72" => String::from_utf8(data)
            .unwrap()
            .lines()
            .map(|l| {
                let mut out = String::new();
                let mut rest = l;
                while rest.len() > 72 {
                    let cut = rest[..72].rfind(' ').filter(|&c| c > 0).unwrap_or(72);
                    out.push_str(&rest[..cut]);
                    out.push('\n');
                    rest = rest[cut..].trim_start();
                }
                out.push_str(rest);
                out.push('\n');
                out
            })
            .collect::<String>()
            .into_bytes(),
        // The first half of the bytes (a file cut off at a line or in the middle of one).
        "half" => data[..data.len() / 2].to_vec(),
        // Base64 cut off in the middle of a group of four characters (a message cut off in transit).
        "cut-b64" => {
            let mut text = String::from_utf8(data).unwrap().trim_end().trim_end_matches('=').to_string();
            text.truncate(text.len() / 2);
            while text.bytes().filter(u8::is_ascii_alphanumeric).count() % 4 != 2 {
                text.pop();
            }
            text.into_bytes()
        }
        t => panic!("unknown transform {t}"),
    }
}

/// Fills a message template's `{{ARTIFACT|transform|...}}` placeholders.
pub fn expand(game: &Path, template: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(start) = find(rest, b"{{") {
        out.extend_from_slice(&rest[..start]);
        let end = find(&rest[start..], b"}}").expect("closing }}") + start;
        let spec = std::str::from_utf8(&rest[start + 2..end]).unwrap();
        let mut parts = spec.split('|');
        let mut data = artifact(game, parts.next().unwrap());
        for t in parts {
            data = transform(data, t);
        }
        out.extend(data);
        rest = &rest[end + 2..];
    }
    out.extend_from_slice(rest);
    out
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

/// The text and headers of a queued or sent mail.
#[derive(Clone)]
pub struct Mail {
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub subject: String,
    pub text: String,
    pub attachments: Vec<String>,
    pub files: Vec<(String, Vec<u8>)>,
    pub message_id: String,
}

pub fn read_mail(raw: &[u8]) -> Mail {
    use mail_parser::MimeHeaders;
    let m = mail_parser::MessageParser::default().parse(raw).expect("a mail");
    let addrs = |a: Option<&mail_parser::Address>| a.map(|a| a.iter().filter_map(|x| x.address().map(str::to_string)).collect()).unwrap_or_default();
    Mail {
        to: addrs(m.to()),
        cc: addrs(m.cc()),
        subject: m.subject().unwrap_or("").to_string(),
        text: m.body_text(0).map(|t| t.to_string()).unwrap_or_default(),
        attachments: m.attachments().filter_map(|a| a.attachment_name().map(str::to_string)).collect(),
        files: m.attachments().filter_map(|a| a.attachment_name().map(|n| (n.to_string(), a.contents().to_vec()))).collect(),
        message_id: m.message_id().unwrap_or("").to_string(),
    }
}

/// `intake::run`, taken again while another run holds the root's intake lock: a process another
/// test of this binary starts (fork, then exec) holds a copy of every open file, this run's
/// released lock included, until its exec, so on a loaded machine a run right after another can
/// find the lock held for a moment. Tests of the lock itself call `intake::run`.
pub fn take_in(root: &Path, source: &pbem::mail::intake::Source, cfg: &pbem::mail::HostConfig, now: chrono::DateTime<chrono::Utc>) -> pbem::error::Result<Vec<pbem::mail::intake::Handled>> {
    for _ in 0..200 {
        match pbem::mail::intake::run(root, source, cfg, now) {
            Err(pbem::error::Error::Locked(_)) => std::thread::sleep(std::time::Duration::from_millis(25)),
            other => return other,
        }
    }
    pbem::mail::intake::run(root, source, cfg, now)
}
