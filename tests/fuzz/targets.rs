//! Inputs for the no-panic tests (tests/no_panic.rs, bounded) and the million-input run
//! (benches/fuzz.rs): real seeds (a signed order file, its detached signature, mails of every
//! shape intake meets), a deterministic mutator, and one function that throws an input at every
//! parser a player's bytes reach: the order parser, the armor parser with signature checking, and
//! mail extraction.
#![allow(dead_code)]

use pbem::mail::extract;
use pbem::orderfile::{self, Header};
use pbem::sig::{self, NS_ORDERS};
use ssh_key::PrivateKey;
use ssh_key::private::Ed25519Keypair;

/// Which parsers an input is meant for (every input goes to all of them; this picks the seed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An order file with its signature appended.
    Order,
    /// A detached armored signature (`FILE.sig`).
    Armor,
    /// A whole mail message.
    Mail,
}

/// The fixed seat key every seed is signed with (from a fixed seed: runs are reproducible).
pub fn key() -> PrivateKey {
    PrivateKey::from(Ed25519Keypair::from_seed(&[7; 32]))
}

/// The unsigned order text of the seeds: what `pbem form` writes, with a nonce.
pub fn order_text() -> String {
    let header = Header { game: "g1".into(), step: 3, role: "union".into(), host_seed_commitment: "ab".repeat(32), nonce: "cd".repeat(32) };
    let mut orders = toml::Table::new();
    orders.insert("cards".into(), toml::Value::Array(vec!["Forced march".into(), "Élan".into()]));
    let mut moves = toml::Table::new();
    moves.insert("I".into(), "York — via Gettysburg".into());
    moves.insert("XI".into(), toml::Value::Integer(12));
    orders.insert("moves".into(), toml::Value::Table(moves));
    orderfile::form_text(&header, &["Union, step 3: your order form".into(), String::new(), "answer below".into()], &orders)
}

fn b64(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for (i, c) in data.chunks(3).enumerate() {
        if i > 0 && i % 19 == 0 {
            out.push_str("\r\n");
        }
        let n = c.iter().enumerate().fold(0u32, |n, (j, &b)| n | (b as u32) << (16 - 8 * j));
        for j in 0..4 {
            out.push(if j <= c.len() { A[(n >> (18 - 6 * j)) as usize & 63] as char } else { '=' });
        }
    }
    out
}

/// The seeds: real inputs that parse and verify, each with the kind it stands for.
pub fn seeds() -> Vec<(Kind, Vec<u8>)> {
    let text = order_text();
    let armor = sig::sign(&key(), NS_ORDERS, text.as_bytes()).unwrap();
    let signed = format!("{text}{armor}");
    let head = "From: Meade <meade@example.org>\r\nTo: judge@example.net\r\nSubject: orders\r\nMessage-ID: <x1@example.org>\r\n";
    let mails = [
        format!("{head}Content-Type: text/plain; charset=utf-8\r\n\r\nHello,\r\n\r\n{}\r\n-- \r\nGeorge\r\n> old quoted report\r\n", signed.replace('\n', "\r\n")),
        format!(
            "{head}MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nmy orders\r\n--b1\r\nContent-Type: application/toml; name=\"union.toml\"\r\nContent-Disposition: attachment; filename=\"union.toml\"\r\nContent-Transfer-Encoding: base64\r\n\r\n{}\r\n--b1\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=\"union.toml.sig\"\r\n\r\n{}--b1--\r\n",
            b64(text.as_bytes()),
            armor.replace('\n', "\r\n")
        ),
        format!("{head}Content-Type: text/plain; charset=utf-8; format=flowed; delsp=yes\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n{}\r\n", signed.replace('=', "=3D").replace('\n', " \r\n")),
        format!(
            "{head}Content-Type: multipart/alternative; boundary=\"a\"\r\n\r\n--a\r\nContent-Type: text/html\r\n\r\n<p>[pbem]</p>\r\n--a\r\nContent-Type: message/rfc822\r\n\r\nFrom: x@y.z\r\nSubject: fwd\r\n\r\n{signed}\r\n--a--\r\n"
        ),
    ];
    let mut out = vec![(Kind::Order, signed.clone().into_bytes()), (Kind::Order, text.into_bytes()), (Kind::Armor, armor.into_bytes())];
    out.extend(mails.into_iter().map(|m| (Kind::Mail, m.into_bytes())));
    out
}

/// Tokens a mutation may insert: the structure the parsers look for, and characters that broke
/// them (non-ASCII of 2, 3 and 4 bytes; CR; BOM).
const TOKENS: &[&str] = &[
    "-----BEGIN SSH SIGNATURE-----\n", "-----END SSH SIGNATURE-----", "[pbem]\n", "[orders]\n", "\r\n", "\r", "\n", "> ",
    "=?utf-8?b?w6k=?=", "=C3=A9", "=\r\n", "--b1\r\n", "--b1--", "Content-Type: multipart/mixed; boundary=\"b1\"\r\n",
    "Content-Transfer-Encoding: base64\r\n", "format=flowed", "step = 18446744073709551615\n", "nonce = \"\"\n", "\u{e9}",
    "\u{2014}", "\u{1F600}", "\u{FEFF}", "\0", "\"", "'''", "[[", "]]", "=", "AAAA", "U1NIU0lH",
];

/// A source of the numbers that drive one mutation (a seeded ChaCha20 stream in the bench, a
/// proptest-made list in the tests).
pub trait Dice {
    /// The next number.
    fn next(&mut self) -> u64;
    /// The next number below `n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Applies `count` mutations to `input`: bit flips, byte inserts, deletions, duplications,
/// inserted tokens, non-ASCII characters put inside the armored block, truncation, and splices
/// from another seed.
pub fn mutate(input: &[u8], seeds: &[(Kind, Vec<u8>)], count: usize, dice: &mut dyn Dice) -> Vec<u8> {
    let mut b = input.to_vec();
    for _ in 0..count {
        let at = dice.below(b.len() + 1);
        match dice.below(9) {
            0 if !b.is_empty() => {
                let i = at.min(b.len() - 1);
                b[i] ^= 1 << dice.below(8);
            }
            1 => b.insert(at, dice.next() as u8),
            2 => {
                let n = dice.below(16).min(b.len() - at);
                b.drain(at..at + n);
            }
            3 => {
                let n = dice.below(64).min(b.len() - at);
                let piece = b[at..at + n].to_vec();
                b.splice(at..at, piece);
            }
            4 | 5 => {
                let t = TOKENS[dice.below(TOKENS.len())].as_bytes();
                b.splice(at..at, t.iter().copied());
            }
            6 => {
                // Inside the armor, where a non-ASCII letter crashed the judge.
                let begin = b.windows(29).position(|w| w == b"-----BEGIN SSH SIGNATURE-----");
                let c = ['\u{e9}', '\u{2014}', '\u{1F600}', '\u{a0}'][dice.below(4)];
                let mut buf = [0; 4];
                let at = begin.map_or(at, |p| (p + 30 + dice.below(200)).min(b.len()));
                b.splice(at..at, c.encode_utf8(&mut buf).bytes());
            }
            7 => b.truncate(at),
            _ => {
                let other = &seeds[dice.below(seeds.len())].1;
                let from = dice.below(other.len() + 1);
                let n = dice.below(256).min(other.len() - from);
                b.splice(at..at, other[from..from + n].iter().copied());
            }
        }
    }
    b
}

/// Throws `input` at every parser a player's bytes reach. Returns a problem when a parser
/// refused it without saying why (a panic is caught by the caller).
pub fn run_one(input: &[u8], key: &ssh_key::PublicKey) -> Result<(), String> {
    let lossy = String::from_utf8_lossy(input);
    // The order parser, and the field lookup used for its error messages.
    match orderfile::parse(&lossy) {
        Err(p) if p.message.trim().is_empty() => return Err(format!("order parse error without a message: {p:?}")),
        Err(p) => {
            if let Some(f) = &p.field {
                orderfile::locate(&lossy, f);
            }
        }
        Ok(f) => {
            orderfile::locate(&lossy, "orders.moves.I");
            let _ = f.header.step.checked_add(1);
        }
    }
    let _ = orderfile::fill_nonce(&lossy);
    let _ = orderfile::fresh_nonce(&lossy);
    // Normalization, splitting and signatures (appended, and the input as a detached armor).
    let _ = sig::normalize(input);
    let _ = sig::split_appended(&lossy);
    for detached in [None, Some(lossy.as_ref())] {
        if let Err(e) = sig::verify_order_text(key, NS_ORDERS, input, detached)
            && e.to_string().trim().is_empty()
        {
            return Err(format!("signature error without a message: {e:?}"));
        }
    }
    if let Err(e) = sig::verify(key, NS_ORDERS, b"x\n", &lossy)
        && e.to_string().trim().is_empty()
    {
        return Err(format!("signature error without a message: {e:?}"));
    }
    // The key-line parser (never a path: that would read files named by the input).
    let _ = sig::public_key_line(&lossy.chars().take(400).collect::<String>());
    // Mail extraction, with the seat's key known (so pasted orders are cut by verifying).
    let key_for = |g: &str, r: &str| (g == "g1" && r == "union").then(|| key.clone());
    if let Some(ex) = extract::extract(input, &key_for) {
        for f in &ex.orders {
            let _ = sig::verify_order_text(key, NS_ORDERS, &f.file, f.detached.as_deref());
        }
    }
    let _ = extract::unflow(&lossy, true);
    Ok(())
}

/// Runs [`run_one`] with the panic caught: `Err` holds the panic's text or the problem.
pub fn no_panic(input: &[u8], key: &ssh_key::PublicKey) -> Result<(), String> {
    match std::panic::catch_unwind(|| run_one(input, key)) {
        Ok(r) => r,
        Err(payload) => Err(payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into())),
    }
}
