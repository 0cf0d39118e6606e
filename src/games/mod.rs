//! The registry of games: adding a game is one folder here and one line in [`ALL`].

use crate::game::DynGame;

pub mod flag_dash;
pub mod gettysburg_campaign;
pub mod throw_down_that_flag;

/// Every game this build plays, by rules id.
pub static ALL: &[&dyn DynGame] = &[&gettysburg_campaign::GettysburgCampaign, &throw_down_that_flag::ThrowDownThatFlag, &flag_dash::FlagDash];

/// The game with rules id `rules`, or `None`.
pub fn by_rules(rules: &str) -> Option<&'static dyn DynGame> {
    ALL.iter().copied().find(|g| g.rules() == rules)
}

/// The rules ids this build knows, for error messages and `--help`.
pub fn rules_ids() -> Vec<&'static str> {
    ALL.iter().map(|g| g.rules()).collect()
}
