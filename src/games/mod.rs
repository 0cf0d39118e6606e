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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use crate::dice::Ctx;
    use crate::game::{DynGame, Pending, Publication};

    /// What the core asks of a state after a step, as a thread answers it.
    type Answers = (Pending, Publication, Vec<serde_json::Value>, Vec<Vec<String>>);

    fn answers(g: &dyn DynGame, before: &str, after: &str) -> Answers {
        let roles = g.roles(after).unwrap();
        let views = roles.iter().map(|r| g.view(after, r).unwrap()).collect();
        let help = roles.iter().map(|r| g.form_help(after, r).unwrap()).collect();
        (g.pending(after).unwrap(), g.publication(before, after).unwrap(), views, help)
    }

    /// A resolution keeps the state it made as the parsed state of its text (no parse again):
    /// every answer about it is what a thread that parses the text gives, step by step through
    /// games of every game by its built-in players.
    #[test]
    fn the_state_a_step_made_answers_as_its_text_parsed_again() {
        for g in super::ALL.iter().copied() {
            let mut state = g.setup(g.default_scenario(), &BTreeMap::new()).unwrap();
            for step in 0..40u8 {
                let asks = match g.pending(&state).unwrap() {
                    Pending::Orders(asks) => asks,
                    Pending::Over(_) => break,
                };
                let orders = asks.iter().map(|a| (a.role.clone(), g.bot_order(&state, &a.role, &mut Ctx::new([step; 32])).unwrap())).collect();
                let after = g.resolve(&state, &orders, &mut Ctx::new([step ^ 0x5a; 32])).unwrap();
                let here = answers(g, &state, &after);
                let (before, text) = (state.clone(), after.clone());
                let parsed = std::thread::spawn(move || answers(g, &before, &text)).join().unwrap();
                assert!(here == parsed, "{}: step {step}: the state made and the state parsed answer differently", g.rules());
                state = after;
            }
        }
    }
}
