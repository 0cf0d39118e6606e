//! The options of a game file the judge reads itself, not the game's rules (`press`): taken out
//! of the options before every `Game::setup` (create and audit).

use std::collections::BTreeMap;

use crate::error::{Error, Result, Setting};
use crate::model::GameFile;

/// The options the judge reads itself, not the game's rules (taken out before `Game::setup`).
pub const JUDGE_OPTIONS: &[&str] = &["press"];

/// The game's own options: `options` without [`JUDGE_OPTIONS`].
pub fn rules_options(options: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    options.iter().filter(|(k, _)| !JUDGE_OPTIONS.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Who a player may send press to (njudge's press), set per game by the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Press {
    /// No press at all.
    None,
    /// Only to one's own team (a teammate or the whole team).
    Team,
    /// To any seat, one's team, or everybody.
    All,
}

impl Press {
    /// The game's setting: `press` in its options, else team for Flag Dash and all otherwise.
    pub fn of(gf: &GameFile) -> Result<Press> {
        match gf.options.get("press") {
            Some(v) => Press::parse(v),
            None if gf.rules == "flag-dash" => Ok(Press::Team),
            None => Ok(Press::All),
        }
    }
    /// `none`, `team` or `all`; else [`Error::Setting`] for the option `press`.
    pub fn parse(v: &str) -> Result<Press> {
        match v {
            "none" => Ok(Press::None),
            "team" => Ok(Press::Team),
            "all" => Ok(Press::All),
            other => Err(Error::setting(Setting::Option { key: "press".into(), value: other.into() }, "want press=none, press=team or press=all")),
        }
    }
    /// The word the host wrote.
    pub fn word(self) -> &'static str {
        match self {
            Press::None => "none",
            Press::Team => "team",
            Press::All => "all",
        }
    }
}

/// Checks the judge's own options given to `pbem new` (the game checks the rest).
pub fn check_options(options: &BTreeMap<String, String>) -> Result<()> {
    if let Some(v) = options.get("press") {
        Press::parse(v)?;
    }
    Ok(())
}
