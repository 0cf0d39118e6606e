//! `pbem simulate`: plays many whole games in memory with a built-in policy and reports the win
//! rate and mean casualties, for balancing a scenario reconstruction.
//!
//! Only games with named policies can be simulated; today that is Throw Down That Flag (the `Game`
//! trait has no notion of policies, so this module dispatches on the rules id).

use std::collections::BTreeMap;

use crate::commit;
use crate::game::Game;
use crate::games::throw_down_that_flag::{self as tdtf, ThrowDownThatFlag, bot};

/// The figures of a simulation.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Games played.
    pub games: u32,
    /// Games won by the player.
    pub wins: u32,
    /// Mean Str lost per game.
    pub mean_str_lost: f64,
    /// Mean men lost per game.
    pub mean_men_lost: f64,
    /// Mean steps (email round trips) per game.
    pub mean_steps: f64,
}

impl Summary {
    /// The figures as lines of text.
    pub fn describe(&self) -> String {
        format!(
            "games: {}\nwin rate: {:.1}% ({} of {})\nmean casualties: {:.2} Str (about {:.0} men)\nmean steps (email round trips) per game: {:.1}\n",
            self.games,
            100.0 * self.wins as f64 / self.games.max(1) as f64,
            self.wins,
            self.games,
            self.mean_str_lost,
            self.mean_men_lost,
            self.mean_steps
        )
    }
}

/// Plays `games` games of `rules` on `scenario` with `policy`, game k seeded from `seed` and k.
/// `scenario` is a shipped scenario's name (`july-2`, `july-3`), `campaign` (July 2, then
/// July 3 with the survivors), or the path of a scenario file (a reconstruction being balanced).
/// Draws a progress bar on standard error when it is a terminal and `progress` is set.
///
/// Errors: a message for an unknown game, policy or scenario, or a scenario file that does not
/// set up.
pub fn run(rules: &str, scenario: &str, games: u32, policy: &str, seed: [u8; 32], progress: bool) -> Result<Summary, String> {
    if rules != "throw-down-that-flag" {
        return Err(format!("{rules}: no built-in policies to simulate (only throw-down-that-flag has them)"));
    }
    if !bot::POLICIES.contains(&policy) {
        return Err(format!("--policy {policy}: one of {}", bot::POLICIES.join(", ")));
    }
    if games == 0 {
        return Err("--games 0: play at least one game".to_string());
    }
    let mut options = BTreeMap::new();
    let name = scenario.trim();
    let text = if name == "campaign" {
        options.insert("campaign".to_string(), "true".to_string());
        tdtf::JULY_2.to_string()
    } else if let Some(t) = tdtf::shipped(name) {
        t.to_string()
    } else if std::path::Path::new(scenario).is_file() {
        std::fs::read_to_string(scenario).map_err(|e| format!("--scenario {scenario}: {e}"))?
    } else {
        return Err(format!("--scenario {scenario}: july-2, july-3, campaign or a scenario file"));
    };
    let g = ThrowDownThatFlag;
    let start = g.setup(&text, &options).map_err(|e| format!("--scenario {scenario}: {e}"))?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8) as u32;
    let bar = crate::progress::bar(u64::from(games), "games", progress);
    let results: Vec<Result<Vec<tdtf::Played>, String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|w| {
                let start = start.clone();
                let bar = &bar;
                scope.spawn(move || {
                    let mut out = Vec::new();
                    for k in (w..games).step_by(threads as usize) {
                        let s = commit::step_seed("pbem-simulate", k as u64, &seed, std::iter::empty());
                        out.push(tdtf::play_out(start.clone(), policy, s).map_err(|e| e.to_string())?);
                        bar.inc(1);
                    }
                    Ok(out)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("simulation thread")).collect()
    });
    bar.finish_and_clear();
    let mut all = Vec::new();
    for r in results {
        all.extend(r?);
    }
    let n = all.len().max(1) as f64;
    Ok(Summary {
        games: all.len() as u32,
        wins: all.iter().filter(|r| r.0).count() as u32,
        mean_str_lost: all.iter().map(|r| r.1 as f64).sum::<f64>() / n,
        mean_men_lost: all.iter().map(|r| r.2 as f64).sum::<f64>() / n,
        mean_steps: all.iter().map(|r| r.3 as f64).sum::<f64>() / n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulation_is_reproducible_and_checks_its_arguments() {
        let a = run("throw-down-that-flag", "july-3", 6, "naive", [1; 32], false).unwrap();
        let b = run("throw-down-that-flag", "july-3", 6, "naive", [1; 32], false).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.games, 6);
        assert!(a.describe().contains("win rate"));
        assert!(run("gettysburg-campaign", "july-2", 1, "naive", [1; 32], false).is_err());
        assert!(run("throw-down-that-flag", "july-3", 1, "reckless", [1; 32], false).is_err());
    }

    #[test]
    fn simulation_refuses_zero_games() {
        let e = run("throw-down-that-flag", "july-2", 0, "naive", [1; 32], false).unwrap_err();
        assert!(e.contains("--games 0"), "{e}");
    }

    #[test]
    fn simulation_names_the_scenario_flag_and_campaign() {
        let e = run("throw-down-that-flag", "bogus", 1, "naive", [1; 32], false).unwrap_err();
        assert_eq!(e, "--scenario bogus: july-2, july-3, campaign or a scenario file");
    }

    #[test]
    fn a_scenario_file_being_balanced_is_simulated_as_given() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("july-3-mine.toml");
        std::fs::write(&path, tdtf::JULY_3).unwrap();
        let p = path.to_str().unwrap();
        let from_file = run("throw-down-that-flag", p, 4, "sensible", [2; 32], false).unwrap();
        assert_eq!(from_file, run("throw-down-that-flag", "july-3", 4, "sensible", [2; 32], false).unwrap());
        std::fs::write(&path, "title = \"broken\"\n").unwrap();
        let e = run("throw-down-that-flag", p, 1, "naive", [1; 32], false).unwrap_err();
        assert!(e.starts_with(&format!("--scenario {p}:")), "{e}");
    }
}
