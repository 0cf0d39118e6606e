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
        // Players' commands and press, from the subject and the new part of the body.
        let _ = pbem::mail::commands::parse(&ex.subject, &ex.text);
    }
    let _ = pbem::mail::commands::parse(&lossy, &lossy);
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

/// A seat's orders at some point of a game: what a player can sign and send with any content.
pub struct GameSeed {
    /// The game.
    pub game: &'static dyn pbem::game::DynGame,
    /// The state the orders are for.
    pub state: String,
    /// The role giving them.
    pub role: String,
    /// The `[orders]` table as TOML text (to be mutated).
    pub text: Vec<u8>,
}

/// The orders of every asked seat (the built-in player's and the default) in the first steps of
/// every game, played by the built-in players.
pub fn game_seeds() -> Vec<GameSeed> {
    use pbem::dice::Ctx;
    use pbem::game::Pending;
    let mut out = Vec::new();
    for &game in pbem::games::ALL {
        let mut state = game.setup(game.default_scenario(), &Default::default()).unwrap();
        for step in 0..8u8 {
            let Pending::Orders(asks) = game.pending(&state).unwrap() else { break };
            let mut chosen = std::collections::BTreeMap::new();
            for a in &asks {
                let bot = game.bot_order(&state, &a.role, &mut Ctx::new([step; 32])).unwrap();
                for o in [&bot, &game.default_order(&state, &a.role).unwrap()] {
                    let mut t = toml::Table::new();
                    t.insert("orders".into(), toml::Value::Table(o.clone()));
                    out.push(GameSeed { game, state: state.clone(), role: a.role.clone(), text: toml::to_string(&t).unwrap().into_bytes() });
                }
                chosen.insert(a.role.clone(), bot);
            }
            state = game.resolve(&state, &chosen, &mut Ctx::new([step + 1; 32])).unwrap();
        }
    }
    out
}

/// Checks `text` (an order file's `[orders]`, any bytes) as the seed's seat's orders; an order the
/// game accepts is then resolved with the other asked seats' defaults. Returns a problem when a
/// refusal says nothing, or when an accepted order cannot be resolved (it would stop the game).
pub fn run_game(seed: &GameSeed, text: &[u8]) -> Result<(), String> {
    let Ok(table) = String::from_utf8_lossy(text).parse::<toml::Table>() else { return Ok(()) };
    let Some(toml::Value::Table(orders)) = table.get("orders") else { return Ok(()) };
    let game = seed.game;
    match game.check_order(&seed.state, &seed.role, orders) {
        Ok(Err(problems)) if problems.is_empty() || problems.iter().any(|p| p.message.trim().is_empty()) => {
            Err(format!("{}: a refusal without a message: {problems:?}", game.rules()))
        }
        Ok(Err(_)) | Err(_) => Ok(()),
        Ok(Ok(())) => {
            let pbem::game::Pending::Orders(asks) = game.pending(&seed.state).unwrap() else { return Ok(()) };
            let mut all = std::collections::BTreeMap::new();
            for a in asks {
                let o = if a.role == seed.role { orders.clone() } else { game.default_order(&seed.state, &a.role).unwrap() };
                all.insert(a.role, o);
            }
            match game.resolve(&seed.state, &all, &mut pbem::dice::Ctx::new([9; 32])) {
                Ok(_) => Ok(()),
                Err(e) => Err(format!("{}: an accepted order does not resolve: {e}\n{}", game.rules(), String::from_utf8_lossy(text))),
            }
        }
    }
}

/// [`run_game`] with the panic caught.
pub fn no_panic_game(seed: &GameSeed, text: &[u8]) -> Result<(), String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_game(seed, text))) {
        Ok(r) => r,
        Err(payload) => Err(format!(
            "{}: {}",
            seed.game.rules(),
            payload.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| payload.downcast_ref::<String>().cloned()).unwrap_or_else(|| "a panic".into())
        )),
    }
}

/// Values a mutation puts into an order table: wrong types, extremes, odd text.
fn odd_value(dice: &mut dyn Dice, keys: &[String]) -> toml::Value {
    use toml::Value as V;
    match dice.below(12) {
        0 => V::Integer([0, -1, 1, 2, 7, 255, 256, 65_536, i32::MAX as i64, u32::MAX as i64, i64::MAX, i64::MIN][dice.below(12)]),
        1 => V::Integer(dice.next() as i64),
        2 => V::Float([0.0, -0.5, 1e300, f64::NAN, f64::INFINITY][dice.below(5)]),
        3 => V::Boolean(dice.below(2) == 0),
        4 => V::String(["", " ", "\u{e9}", "\u{1F600}", "York ", "-1", "999999999999999999999", "a.b", "\0", "[", "1,2"][dice.below(11)].into()),
        5 if !keys.is_empty() => V::String(keys[dice.below(keys.len())].clone()),
        6 if !keys.is_empty() => V::String(keys[dice.below(keys.len())].to_uppercase()),
        7 => V::Array(vec![]),
        8 => V::Table(toml::Table::new()),
        9 => V::Array((0..dice.below(40)).map(|i| V::Integer(i as i64)).collect()),
        _ => V::String(String::from_utf8_lossy(&dice.next().to_le_bytes()).into_owned()),
    }
}

/// Changes one value somewhere in `v` (or adds, removes or repeats an entry).
fn mutate_value(v: &mut toml::Value, dice: &mut dyn Dice, keys: &[String], depth: usize) {
    use toml::Value as V;
    let dive = depth < 6 && dice.below(3) != 0;
    match v {
        V::Table(t) if dive && !t.is_empty() => match dice.below(6) {
            0 => {
                let k = t.keys().nth(dice.below(t.len())).cloned().unwrap();
                t.remove(&k);
            }
            1 => {
                let k = if keys.is_empty() || dice.below(3) == 0 { "extra".to_string() } else { keys[dice.below(keys.len())].clone() };
                t.insert(k, odd_value(dice, keys));
            }
            _ => {
                let i = dice.below(t.len());
                let (_, x) = t.iter_mut().nth(i).unwrap();
                mutate_value(x, dice, keys, depth + 1);
            }
        },
        V::Array(a) if dive && !a.is_empty() => match dice.below(5) {
            0 => {
                a.remove(dice.below(a.len()));
            }
            1 => {
                let x = a[dice.below(a.len())].clone();
                a.push(x);
            }
            _ => {
                let i = dice.below(a.len());
                mutate_value(&mut a[i], dice, keys, depth + 1);
            }
        },
        _ => *v = odd_value(dice, keys),
    }
}

/// Every key and string value in `v` (what a mutation may put elsewhere: a town's name where a
/// card's is expected, a corps twice).
fn words(v: &toml::Value, out: &mut Vec<String>) {
    match v {
        toml::Value::Table(t) => t.iter().for_each(|(k, x)| {
            out.push(k.clone());
            words(x, out);
        }),
        toml::Value::Array(a) => a.iter().for_each(|x| words(x, out)),
        toml::Value::String(s) => out.push(s.clone()),
        _ => {}
    }
}

/// The seed's orders with `count` value-level mutations, as TOML text (for [`run_game`]).
pub fn mutate_orders(seed: &GameSeed, count: usize, dice: &mut dyn Dice) -> Vec<u8> {
    let mut table: toml::Table = String::from_utf8_lossy(&seed.text).parse().unwrap();
    let mut keys = Vec::new();
    words(&toml::Value::Table(table.clone()), &mut keys);
    let orders = table.get_mut("orders").unwrap();
    for _ in 0..count {
        mutate_value(orders, dice, &keys, 0);
    }
    if !orders.is_table() {
        *orders = toml::Value::Table(toml::Table::new());
    }
    // NaN and other values TOML cannot write are skipped by writing what it can.
    toml::to_string(&table).unwrap_or_default().into_bytes()
}
