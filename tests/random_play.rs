//! Generic random-play tests run on every registered game through the type-erased interface
//! (OpenSpiel style): at every step default and built-in orders are legal, resolution is a pure
//! function of (state, orders, seed) and so is whether its orders may be published, every role's
//! view renders, and the game ends.

use std::collections::BTreeMap;

use pbem::dice::Ctx;
use pbem::game::{DynGame, Pending};

const MAX_STEPS: usize = 2_000;

/// Plays one game; `bots` picks built-in orders (else NMR defaults). Returns the number of steps.
fn play(game: &dyn DynGame, seed: u8, bots: bool) -> usize {
    let mut state = game.setup(game.default_scenario(), &BTreeMap::new()).unwrap();
    let roles = game.roles(&state).unwrap();
    let mut players = Ctx::new([seed ^ 0x5a; 32]);
    for step in 0..MAX_STEPS {
        for r in &roles {
            game.view(&state, r).unwrap();
        }
        let asks = match game.pending(&state).unwrap() {
            Pending::Over(o) => {
                assert!(!o.summary.is_empty());
                return step;
            }
            Pending::Orders(asks) => asks,
        };
        assert!(!asks.is_empty(), "{}: a pending step asks nobody", game.rules());
        let mut orders = BTreeMap::new();
        for a in &asks {
            assert!(roles.contains(&a.role));
            assert!(game.ask_kinds().contains(&a.kind.as_str()), "{}: ask kind {:?} missing from ask_kinds()", game.rules(), a.kind);
            let default = game.default_order(&state, &a.role).unwrap();
            assert_eq!(game.check_order(&state, &a.role, &default).unwrap(), Ok(()), "{}: default order illegal at step {step}", game.rules());
            let o = if bots { game.bot_order(&state, &a.role, &mut players).unwrap() } else { default };
            assert_eq!(game.check_order(&state, &a.role, &o).unwrap(), Ok(()), "{}: built-in order illegal at step {step}", game.rules());
            orders.insert(a.role.clone(), o);
        }
        let step_seed = [seed.wrapping_add(step as u8); 32];
        let mut c1 = Ctx::new(step_seed);
        let mut c2 = Ctx::new(step_seed);
        let s1 = game.resolve(&state, &orders, &mut c1).unwrap();
        let s2 = game.resolve(&state, &orders, &mut c2).unwrap();
        assert_eq!(s1, s2, "{}: resolve is not deterministic", game.rules());
        assert_eq!(c1.events(), c2.events());
        // Whether the step's orders may be published is a pure function of (before, after).
        assert_eq!(game.publication(&state, &s1).unwrap(), game.publication(&state, &s2).unwrap());
        state = s1;
    }
    panic!("{}: no end within {MAX_STEPS} steps", game.rules());
}

#[test]
fn every_game_plays_to_the_end_with_built_in_players() {
    for game in pbem::games::ALL {
        for seed in 0..12 {
            play(*game, seed, true);
        }
    }
}

#[test]
fn every_game_plays_to_the_end_on_nmr_defaults() {
    for game in pbem::games::ALL {
        for seed in 0..4 {
            play(*game, seed, false);
        }
    }
}

#[test]
fn every_shipped_scenario_sets_up() {
    for game in pbem::games::ALL {
        let named = game.scenarios();
        assert!(!named.is_empty(), "{}", game.rules());
        for (name, text) in named {
            let state = game.setup(text, &BTreeMap::new()).unwrap_or_else(|e| panic!("{} {name}: {e}", game.rules()));
            assert!(!game.roles(&state).unwrap().is_empty());
        }
    }
}
