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
        let help = roles.iter().map(|r| g.form_help(after, r, crate::report::WORDING).unwrap()).collect();
        (g.pending(after).unwrap(), g.publication(before, after).unwrap(), views, help)
    }

    /// A scenario past a limit only a new game keeps (added after games were made with such
    /// scenarios) still sets up, so an existing game's audit, adjudication and publication go on,
    /// while `check_new_scenario` (`pbem new`, `demo`, `simulate`) refuses it by its field
    /// (tester13 D2, D8).
    #[test]
    fn a_new_games_limits_do_not_stop_an_existing_games_setup() {
        let corps: String = (0..40).map(|i| format!("[[union.corps]]\nid = \"X{i}\"\ncommander = \"Extra{i}\"\nstrength = 1\n")).collect();
        let cases: &[(&str, &str, &str, &str)] = &[
            ("gettysburg-campaign", "\"York\"", &format!("\"{}\"", "N".repeat(63)), "map.towns[13].name: is 63 characters long; at most 30"),
            ("gettysburg-campaign", "x = 689 ", "x = 0 ", "map.towns[5].x: must be between 60 and 2000 pixels (the picture's canvas)"),
            ("gettysburg-campaign", "last_turn = 9 ", "last_turn = 4000000000 ", "rules.last_turn: must be between 1 and 100"),
            ("gettysburg-campaign", "\"Lee\"", "\"Resign\"",
                "confederate.army_commander: \"Resign\" is a key order files use (`resign = ...`); rename the commander"),
            ("gettysburg-campaign", "\"Reynolds\"", "\"\"", "union.corps[0].commander: must be non-empty, without leading or trailing spaces"),
            ("gettysburg-campaign", "\"York\"", "\"Yo\\u200Brk\"",
                "map.towns[13].name: holds the invisible format character '\\u{200b}'; give text without invisible or direction-changing characters"),
            ("gettysburg-campaign", "[[confederate.corps]]\nid = \"I\"", &format!("{corps}[[confederate.corps]]\nid = \"I\""), "union.corps: the side needs 1 to 20 corps"),
            ("throw-down-that-flag", "str = 3 ", "str = 100 ", "union[0].str: must be between 1 and 99"),
            ("throw-down-that-flag", "men_per_str = 11 ", "men_per_str = 2000 ", "rules.men_per_str: is 2000; at most 1000"),
            ("flag-dash", "name = \"Black\"", "name = \"Runner\"",
                "character[2].name: \"Runner\" is a word orders use (runner, defender, nobody, a direction or a space); rename the character"),
            ("flag-dash", "round_limit = 40", "round_limit = 4000000000", "round_limit: must be between 1 and 1000"),
            ("flag-dash", "white = \"e1\"", "white = \"e7\"",
                "flags.white: e7 is not in White's half of the board; each team sets up its flag in its own half, outside the opposing territory (Custom Layout; Game End)"),
        ];
        for (rules, from, to, want) in cases {
            let g = super::by_rules(rules).unwrap();
            assert!(g.default_scenario().contains(from), "{rules}: {from}");
            let text = g.default_scenario().replace(from, to);
            assert!(g.setup(&text, &BTreeMap::new()).is_ok(), "{rules}: {from} -> {to}: {:?}", g.setup(&text, &BTreeMap::new()));
            match g.check_new_scenario(&text) {
                // The line of the field comes first (tests/scenario_limits.rs checks it).
                Err(crate::game::GameError::Scenario(m)) => assert_eq!(m.split_once(": ").filter(|(l, _)| l.starts_with("line ")).map(|(_, m)| m), Some(*want), "{rules}: {from} -> {to}"),
                other => panic!("{rules}: {from} -> {to}: {other:?}"),
            }
        }
        for g in super::ALL {
            for (name, text) in g.scenarios() {
                assert!(g.check_new_scenario(text).is_ok(), "{}: {name}", g.rules());
            }
        }
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
