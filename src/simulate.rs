//! `pbem simulate`: plays many whole games in memory with the built-in players and reports, per
//! side, the win rate, the mean length (turns or rounds) and the mean steps (mail round trips), for
//! balancing a scenario reconstruction. Works for any game through the [`crate::game::Game`] trait.

use std::collections::BTreeMap;

use crate::commit;
use crate::error::{Error, Result, Setting};
use crate::game::DynGame;
pub use crate::game::{Played, play_out};

/// One line of the table: the games a side won (or all games, or those nobody won).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The side, `no winner` or `all games`.
    pub label: String,
    /// Games in this line.
    pub games: u32,
    /// Mean turns or rounds of those games (`None` when there are none).
    pub mean_length: Option<f64>,
    /// Mean steps (mail round trips) of those games.
    pub mean_steps: Option<f64>,
}

/// The figures of a simulation.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Games played.
    pub games: u32,
    /// What the lengths count (`turns`, `rounds`).
    pub unit: &'static str,
    /// One row per side in the game's order, then `no winner`, then `all games`.
    pub rows: Vec<Row>,
    /// The game's own figures, mean per game, e.g. ("Str lost", 11.8).
    pub figures: Vec<(&'static str, f64)>,
    /// The built-in policy played (set by [`run`]; empty from [`Summary::of`]).
    pub policy: &'static str,
}

fn row(label: &str, games: &[&Played]) -> Row {
    let n = games.len() as f64;
    let mean = |f: &dyn Fn(&Played) -> u32| (!games.is_empty()).then(|| games.iter().map(|p| f(p) as f64).sum::<f64>() / n);
    Row { label: label.to_string(), games: games.len() as u32, mean_length: mean(&|p| p.length), mean_steps: mean(&|p| p.steps) }
}

impl Summary {
    /// Sums up `played` for `sides` (the sides a winner may name).
    pub fn of(sides: &[String], played: &[Played]) -> Summary {
        let mut rows: Vec<Row> = Vec::new();
        for side in sides {
            rows.push(row(side, &played.iter().filter(|p| p.winner.as_ref() == Some(side)).collect::<Vec<_>>()));
        }
        let none = played.iter().filter(|p| p.winner.as_ref().is_none_or(|w| !sides.contains(w))).collect::<Vec<_>>();
        rows.push(row("no winner", &none));
        rows.push(row("all games", &played.iter().collect::<Vec<_>>()));
        let n = played.len().max(1) as f64;
        let mut figures: Vec<(&'static str, f64)> = Vec::new();
        for p in played {
            for (i, (name, v)) in p.figures.iter().enumerate() {
                match figures.get_mut(i) {
                    Some(f) => f.1 += v / n,
                    None => figures.push((name, v / n)),
                }
            }
        }
        Summary { games: played.len() as u32, unit: played.first().map_or("turns", |p| p.unit), rows, figures, policy: "" }
    }

    /// The figures as a Markdown table (one row per side, then draws or losses, then all games),
    /// followed by the game's own figures, one line each.
    pub fn describe(&self) -> String {
        let mut out = format!("| side | wins | win rate | mean {} | mean steps |\n|---|---:|---:|---:|---:|\n", self.unit);
        let num = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
        for r in &self.rows {
            let rate = 100.0 * r.games as f64 / self.games.max(1) as f64;
            out += &format!("| {} | {} | {rate:.1}% | {} | {} |\n", r.label, r.games, num(r.mean_length), num(r.mean_steps));
        }
        for (name, v) in &self.figures {
            out += &format!("mean {name} per game: {v:.2}\n");
        }
        out
    }
}

/// Plays `games` games of `rules`, game k seeded from `seed` and k, and sums them up in game
/// order, so the table is the same whatever `jobs` (the threads; 0: one per core).
/// `scenario` is a shipped scenario's name or the path of a scenario file (a reconstruction being
/// balanced; `None`: the game's default); `options` are the game's `--option` values; `policy` is
/// one of the game's built-in policies (`None`: its default). Draws a progress bar on standard
/// error when it is a terminal and `progress` is set.
///
/// Errors: [`Error::Setting`] for an unknown game, policy or scenario, no games, or a scenario
/// the game refuses; [`Error::Game`] for options it refuses; [`Error::Simulation`] for a game that
/// goes wrong, naming its number.
#[allow(clippy::too_many_arguments)]
pub fn run(
    rules: &str,
    scenario: Option<&str>,
    options: &BTreeMap<String, String>,
    games: u32,
    policy: Option<&str>,
    seed: [u8; 32],
    jobs: usize,
    progress: bool,
) -> Result<Summary> {
    let g = crate::games::by_rules(rules)
        .ok_or_else(|| Error::setting(Setting::Rules(rules.to_string()), format!("one of {}", crate::games::rules_ids().join(", "))))?;
    let policy = match policy {
        None => g.policies()[0],
        Some(p) => g.policies().iter().copied().find(|q| *q == p).ok_or_else(|| Error::setting(Setting::Policy(p.to_string()), no_policy(g, p)))?,
    };
    if games == 0 {
        return Err(Error::setting(Setting::Games(0), "play at least one game"));
    }
    let text = scenario_text(g, scenario)?;
    let start = g.check_new_scenario(&text).and_then(|()| g.setup(&text, options)).map_err(|e| match scenario {
        Some(sc) => Error::setting(Setting::Scenario(sc.to_string()), e.to_string()),
        None => Error::Game(e),
    })?;
    let sides = g.sides(&start)?;
    let played = play_many(g, &start, policy, games, seed, jobs, progress).map_err(Error::Simulation)?;
    Ok(Summary { policy, ..Summary::of(&sides, &played) })
}

/// Why `p` is not a policy of `g`, as a sentence naming its policies (the first the default).
fn no_policy(g: &dyn DynGame, p: &str) -> String {
    match g.policies() {
        [one] => format!("{} has no policy {p:?}; its only policy is {one} (the default)", g.title()),
        [first, rest @ ..] => format!("{} has no policy {p:?}; its policies are {first} (the default), {}", g.title(), rest.join(", ")),
        [] => format!("{} has no policy {p:?}", g.title()),
    }
}

/// The scenario's text: a shipped name first, then a file; `None` is the game's default.
fn scenario_text(g: &dyn DynGame, scenario: Option<&str>) -> Result<String> {
    let Some(name) = scenario else { return Ok(g.default_scenario().to_string()) };
    if let Some((_, t)) = g.scenarios().iter().find(|(n, _)| *n == name.trim()) {
        return Ok(t.to_string());
    }
    if std::path::Path::new(name).exists() {
        // A regular file's text; a FIFO, a device or a folder refused, saying what it is.
        return crate::store::read_text(std::path::Path::new(name)).map_err(|e| Error::setting(Setting::Scenario(name.to_string()), e.to_string()));
    }
    let names: Vec<&str> = g.scenarios().iter().map(|(n, _)| *n).collect();
    let message = format!("no such file, nor a scenario shipped with {}: {}", g.title(), names.join(", "));
    Err(Error::setting(Setting::Scenario(name.to_string()), message))
}

/// The threads `--jobs 0` means: one per core ([`crate::par::workers`], cores counted once).
pub fn default_jobs() -> usize {
    crate::par::workers(usize::MAX)
}

/// Plays the games on `jobs` threads (0: one per core), each taking the next game not yet
/// started; the result is in game order whatever the threads.
fn play_many(g: &dyn DynGame, start: &str, policy: &str, games: u32, seed: [u8; 32], jobs: usize, progress: bool) -> Result<Vec<Played>, String> {
    let jobs = if jobs == 0 { default_jobs() } else { jobs }.clamp(1, games as usize);
    let next = std::sync::atomic::AtomicU32::new(0);
    let bar = crate::progress::bar(u64::from(games), "games", progress);
    let one = |k: u32| {
        let s = commit::step_seed("pbem-simulate", k as u64, &seed, std::iter::empty());
        g.play_out(start, policy, s).map_err(|e| format!("game {}: {e}", k + 1))
    };
    // A failed game does not stop the others, so the error reported is the first game's to fail.
    let worker = || {
        let mut out = Vec::new();
        loop {
            let k = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if k >= games {
                return out;
            }
            out.push((k, one(k)));
            bar.inc(1);
        }
    };
    let mut all: Vec<(u32, Result<Played, String>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..jobs).map(|_| scope.spawn(worker)).collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_else(|_| vec![(0, Err("a simulation thread panicked".to_string()))])).collect()
    });
    bar.finish_and_clear();
    all.sort_by_key(|(k, _)| *k);
    all.into_iter().map(|(_, p)| p).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none() -> BTreeMap<String, String> {
        BTreeMap::new()
    }

    /// The setting an [`Error::Setting`] refuses and why; panics on any other error.
    fn refused(e: Error) -> (Setting, String) {
        match e {
            Error::Setting { setting, message } => (setting, message),
            e => panic!("not a refused setting: {e:?}"),
        }
    }

    #[test]
    fn simulation_is_reproducible_and_checks_its_arguments() {
        let a = run("throw-down-that-flag", Some("july-3"), &none(), 6, Some("naive"), [1; 32], 0, false).unwrap();
        let b = run("throw-down-that-flag", Some("july-3"), &none(), 6, Some("naive"), [1; 32], 0, false).unwrap();
        assert_eq!(a, b);
        for jobs in [1, 4] {
            assert_eq!(a, run("throw-down-that-flag", Some("july-3"), &none(), 6, Some("naive"), [1; 32], jobs, false).unwrap(), "--jobs {jobs}");
        }
        assert_eq!(a.games, 6);
        assert!(a.describe().contains("| union |"), "{}", a.describe());
        let e = run("throw-down-that-flag", Some("july-3"), &none(), 1, Some("reckless"), [1; 32], 0, false).unwrap_err();
        assert_eq!(refused(e), (Setting::Policy("reckless".into()), "Throw Down That Flag has no policy \"reckless\"; its policies are sensible (the default), naive".into()));
        let e = run("gettysburg-campaign", None, &none(), 1, Some("reckless"), [1; 32], 0, false).unwrap_err();
        assert_eq!(refused(e), (Setting::Policy("reckless".into()), "Gettysburg Campaign has no policy \"reckless\"; its policies are sensible (the default), naive".into()));
        let (setting, message) = refused(run("chess", None, &none(), 1, None, [1; 32], 0, false).unwrap_err());
        assert_eq!(setting, Setting::Rules("chess".into()));
        assert!(message.starts_with("one of "), "{message}");
    }

    /// Every game of a few runs, one line each, hashed: pinned so that a speed-up cannot change a
    /// single game's result (the values were taken before the in-memory work of issue 11).
    fn fingerprint(rules: &str, scenario: Option<&str>, opts: &[(&str, &str)], policy: &str, games: u32) -> String {
        use sha2::Digest;
        let g = crate::games::by_rules(rules).unwrap();
        let opts: BTreeMap<String, String> = opts.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let start = g.setup(&scenario_text(g, scenario).unwrap(), &opts).unwrap();
        let mut h = sha2::Sha256::new();
        for k in 0..games {
            let s = commit::step_seed("pbem-simulate", k as u64, &[7; 32], std::iter::empty());
            h.update(format!("{:?}\n", g.play_out(&start, policy, s).unwrap()));
        }
        hex::encode(&h.finalize()[..8])
    }

    #[test]
    fn every_game_plays_exactly_as_before() {
        let got = [
            fingerprint("throw-down-that-flag", Some("july-3"), &[], "sensible", 30),
            fingerprint("throw-down-that-flag", Some("july-2"), &[("campaign", "true")], "naive", 30),
            fingerprint("throw-down-that-flag", Some("july-2"), &[], "sensible", 20),
            fingerprint("gettysburg-campaign", None, &[], "sensible", 6),
            fingerprint("gettysburg-campaign", None, &[("optional-fire", "true")], "sensible", 4),
            fingerprint("gettysburg-campaign", None, &[], "naive", 6),
            fingerprint("flag-dash", None, &[], "built-in", 10),
            fingerprint("flag-dash", Some("alternate"), &[("players", "4"), ("abilities", "true")], "built-in", 6),
        ];
        let want = [
            "a4d6064412ddbb54",
            "4d8d38b472570d36",
            "a7c7a30389e4f443",
            "45929296abebc39c",
            "ce0539a0920270b2",
            "20832415d0ee59ca",
            "fe46d5c6ce55b679",
            "1c87099c21e6e4c1",
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn simulation_refuses_zero_games() {
        let e = run("throw-down-that-flag", Some("july-2"), &none(), 0, None, [1; 32], 0, false).unwrap_err();
        assert_eq!(refused(e), (Setting::Games(0), "play at least one game".into()));
    }

    #[test]
    fn simulation_names_the_scenario_and_the_shipped_names() {
        let e = run("throw-down-that-flag", Some("bogus"), &none(), 1, None, [1; 32], 0, false).unwrap_err();
        let shipped = "no such file, nor a scenario shipped with Throw Down That Flag: july-2, july-3";
        assert_eq!(refused(e), (Setting::Scenario("bogus".into()), shipped.into()));
        let bad = BTreeMap::from([("players".to_string(), "5".to_string())]);
        let e = run("flag-dash", None, &bad, 1, None, [1; 32], 0, false).unwrap_err();
        assert!(matches!(e, Error::Game(crate::game::GameError::Option { ref key, .. }) if key == "players"), "{e:?}");
        assert_eq!(e.to_string(), "option players: 2, 3 or 4");
    }

    #[test]
    fn a_scenario_file_being_balanced_is_simulated_as_given() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("july-3-mine.toml");
        std::fs::write(&path, crate::games::throw_down_that_flag::JULY_3).unwrap();
        let p = path.to_str().unwrap();
        let from_file = run("throw-down-that-flag", Some(p), &none(), 4, Some("sensible"), [2; 32], 0, false).unwrap();
        assert_eq!(from_file, run("throw-down-that-flag", Some("july-3"), &none(), 4, None, [2; 32], 0, false).unwrap());
        std::fs::write(&path, "title = \"broken\"\n").unwrap();
        let e = run("throw-down-that-flag", Some(p), &none(), 1, None, [1; 32], 0, false).unwrap_err();
        assert_eq!(refused(e).0, Setting::Scenario(p.to_string()));
    }

    #[test]
    fn a_campaign_adds_up_the_rounds_of_both_days() {
        let opts = BTreeMap::from([("campaign".to_string(), "true".to_string())]);
        let s = run("throw-down-that-flag", Some("july-2"), &opts, 20, None, [3; 32], 0, false).unwrap();
        let all = s.rows.last().unwrap();
        // A day has at most 4 rounds (July 2) or 3 (July 3), and the campaign often reaches July 3.
        assert!(all.mean_length.unwrap() > 4.0 && all.mean_length.unwrap() <= 7.0, "{s:?}");
    }

    #[test]
    fn the_table_has_a_row_per_side_then_no_winner_then_all_games() {
        let p = |w: Option<&str>, length, steps| Played { winner: w.map(str::to_string), length, unit: "rounds", steps, figures: vec![("x", 2.0)] };
        let sides = vec!["white".to_string(), "red".to_string()];
        let s = Summary::of(&sides, &[p(Some("white"), 4, 5), p(Some("white"), 6, 7), p(None, 10, 12)]);
        assert_eq!(
            s.describe(),
            "| side | wins | win rate | mean rounds | mean steps |\n|---|---:|---:|---:|---:|\n\
             | white | 2 | 66.7% | 5.0 | 6.0 |\n| red | 0 | 0.0% | - | - |\n\
             | no winner | 1 | 33.3% | 10.0 | 12.0 |\n| all games | 3 | 100.0% | 6.7 | 8.0 |\nmean x per game: 2.00\n"
        );
    }
}
