//! `pbem demo`: a whole game played by built-in players through the very same files and commands
//! a person uses: keys, forms, signatures, submit, adjudicate, reports, audit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};


use chrono::{DateTime, Utc};

use crate::commit;
use crate::dice::Ctx;
use crate::error::{Error, Result, Setting};
use crate::model::{Deadlines, Seat};
use crate::orderfile::{self, Header};
use crate::pipeline::{self, Entropy, NewGame};
use crate::sig;
use crate::store;

/// What a demo game did.
#[derive(Debug)]
pub struct DemoSummary {
    /// The game directory.
    pub game_dir: PathBuf,
    /// Steps (email round trips) the game took.
    pub steps: u64,
    /// Orders submitted by the built-in players.
    pub orders: u64,
    /// The outcome line.
    pub outcome: String,
    /// The audit's counts.
    pub audit: crate::audit::AuditSummary,
}

/// Derives a 32-byte sub-seed for `purpose` from the demo seed.
fn sub_seed(seed: &[u8; 32], purpose: &str) -> [u8; 32] {
    commit::step_seed("pbem-demo", 0, seed, std::iter::once((purpose, &[0u8; 32])))
}

/// Plays a whole game of `rules` in the game directory `out` (created; must not exist or be empty)
/// with built-in players; `out/players/ROLE/` holds each built-in player's key and signed orders.
/// With the same seed the whole folder is byte-identical (keys, host seeds, nonces and the clock
/// are derived from it; the clock starts at `start` and advances one hour per step).
pub fn run(rules: &str, out: &Path, seed: [u8; 32], options: BTreeMap<String, String>, start: DateTime<Utc>) -> Result<DemoSummary> {
    run_with_scenario(rules, out, seed, None, options, start, crate::report::WORDING)
}

/// [`run`] with a scenario file of one's own instead of the game's shipped one, for a game of
/// report wording `wording` (`game.toml`'s `wording`: [`crate::report::WORDING`], or an earlier
/// one, so that snapshots of a game made before a wording changed keep their texts and record
/// hashes).
pub fn run_with_scenario(
    rules: &str,
    out: &Path,
    seed: [u8; 32],
    scenario: Option<&Path>,
    options: BTreeMap<String, String>,
    start: DateTime<Utc>,
    wording: u32,
) -> Result<DemoSummary> {
    let game = pipeline::given_rules(rules)?;
    if out.exists() && std::fs::read_dir(out).map_err(|e| store::io(out, e))?.next().is_some() {
        return Err(Error::setting(Setting::DemoFolder(out.to_path_buf()), "already exists and is not empty"));
    }
    let text = pipeline::scenario_text(game, scenario)?;
    let setup = game.check_new_scenario(&text).and_then(|()| game.setup(&text, &options)).map_err(|e| match scenario {
        Some(p) => Error::input(p, e.to_string()),
        None => Error::Game(e),
    })?;
    let (keys, seats) = demo_seats(&game.roles(&setup)?, &seed)?;
    let dir = out.to_path_buf();
    let mut entropy = Entropy::seeded(sub_seed(&seed, "host"));
    let mut players = Players { dir: dir.join("players"), keys, bots: Ctx::new(sub_seed(&seed, "bots")), nonces: Entropy::seeded(sub_seed(&seed, "nonces")) };
    let mut now = start;
    let new = NewGame {
        id: Some(format!("demo-{}-{}", rules, &hex::encode(seed)[..8])),
        rules: rules.to_string(),
        scenario: scenario.map(Path::to_path_buf),
        options,
        seats,
        deadlines: Deadlines::default(),
        nmr: Default::default(),
        wording,
    };
    pipeline::create(&dir, new, now, &mut entropy)?;
    players.write_keys()?;
    let mut orders = 0u64;
    let max_steps: u32 = 10_000;
    loop {
        let g = pipeline::load(&dir)?;
        let Some(op) = g.record.opening.clone() else { break };
        if op.step > u64::from(max_steps) {
            return Err(Error::Game(crate::game::GameError::NoEnd { steps: max_steps }));
        }
        now += chrono::Duration::minutes(30);
        let files = players.sign_orders(&g, &op)?;
        for r in pipeline::submit(&dir, &files, now)? {
            r?;
            orders += 1;
        }
        now += chrono::Duration::minutes(30);
        pipeline::adjudicate(&dir, now, &mut entropy)?;
    }
    let g = pipeline::load(&dir)?;
    let audit = crate::audit::audit(&dir, crate::report::override_dir())?;
    Ok(DemoSummary {
        game_dir: dir,
        steps: g.record.index,
        orders,
        outcome: g.record.outcome.map(|o| o.summary).unwrap_or_default(),
        audit,
    })
}

/// Each role's demo key (derived from the demo `seed`) and its seat in the game file.
fn demo_seats(roles: &[String], seed: &[u8; 32]) -> Result<(BTreeMap<String, ssh_key::PrivateKey>, Vec<Seat>)> {
    let mut keys = BTreeMap::new();
    let mut seats = Vec::new();
    for role in roles {
        let key = pipeline::key_from_seed(&sub_seed(seed, &format!("key {role}")), &format!("{role}@demo"));
        seats.push(Seat {
            role: role.clone(),
            email: format!("{role}@example.org"),
            key: key.public_key().to_openssh().map_err(|e| Error::Key(e.to_string()))?,
            time_zone: None,
        });
        keys.insert(role.clone(), key);
    }
    Ok((keys, seats))
}

/// The built-in players' side: their keys and the order files they sign, in `dir` (the game's
/// `players/`), their choices and nonces drawn from the demo seed.
struct Players {
    dir: PathBuf,
    keys: BTreeMap<String, ssh_key::PrivateKey>,
    bots: Ctx,
    nonces: Entropy,
}

impl Players {
    /// Writes each player's private key as `players/ROLE/id_ed25519`.
    fn write_keys(&self) -> Result<()> {
        for (role, key) in &self.keys {
            let d = self.dir.join(role);
            std::fs::create_dir_all(&d).map_err(|e| store::io(&d, e))?;
            sig::write_private_key(&d.join("id_ed25519"), key)?;
        }
        Ok(())
    }

    /// The signed order file of each role the step `op` asks, as the built-in player fills in
    /// the form exactly as a person would: header from the step's opening, its own orders, a
    /// fresh nonce; then signs the file. Returns their paths, in the order of the asks.
    fn sign_orders(&mut self, g: &pipeline::Loaded, op: &crate::model::Opening) -> Result<Vec<PathBuf>> {
        let mut files = Vec::new();
        for (i, ask) in op.asks.iter().enumerate() {
            let role = &ask.role;
            let header = Header {
                game: g.gf.id.clone(),
                step: op.step,
                role: role.clone(),
                host_seed_commitment: op.host_seed_commitment.clone(),
                nonce: hex::encode(self.nonces.bytes32()),
            };
            let body = g.game.bot_order(&g.state, role, &mut self.bots)?;
            let text = orderfile::form_text(&header, &[format!("built-in player for {role}")], &body);
            let path = self.dir.join(role).join(format!("step-{:04}.toml", op.step));
            let armored = sig::sign(&self.keys[role], pipeline::NS_ORDERS, text.as_bytes())?;
            // Alternate the two accepted ways of carrying the signature: beside and appended.
            if (op.step + i as u64).is_multiple_of(2) {
                store::write_atomic(&path, text.as_bytes())?;
                store::write_atomic(&pipeline::sig_path(&path), armored.as_bytes())?;
            } else {
                store::write_atomic(&path, format!("{text}{armored}").as_bytes())?;
            }
            files.push(path);
        }
        Ok(files)
    }
}
