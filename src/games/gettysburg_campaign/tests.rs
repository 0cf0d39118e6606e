//! Tests of the Gettysburg Campaign rules (one or more per rulebook paragraph, named for it), the
//! rulebook's examples, and generic random play (legality, determinism, round trips, secrecy).

use std::collections::BTreeMap;

use super::engine::{self, CombatOutcome, Direct};
use super::rules::{self, FirePlan};
use super::side::Side;
use super::state::{Combat, CombatResult, Location, Question, Stage, State};
use super::*;
use crate::game::{Game, Pending, Publication, check_all, resolve_orders};

// ---------------------------------------------------------------------------------------------
// Helpers

/// What a step run on a [`Ctx::scripted`] logged (rule tests decide every roll): the public
/// events and each side's own, their wrapped lines joined again.
struct Log {
    public: Vec<String>,
    private: Vec<(Side, String)>,
}

impl Log {
    fn of(ctx: Ctx) -> Log {
        let mut log = Log { public: Vec::new(), private: Vec::new() };
        for e in ctx.into_events() {
            let text = e.text.replace('\n', " ");
            match e.to.first().and_then(|r| Side::from_role(r)) {
                Some(side) => log.private.push((side, text)),
                None => log.public.push(text),
            }
        }
        log
    }
    fn said(&self, part: &str) -> bool {
        self.public.iter().any(|e| e.contains(part))
    }
}

fn scenario() -> scenario::Scenario {
    scenario::Scenario::parse(DEFAULT_SCENARIO).expect("shipped scenario parses")
}

fn fresh() -> State {
    initial_state(scenario(), false)
}

fn idx(s: &State, side: Side, id: &str) -> usize {
    s.corps_named(side, id).unwrap_or_else(|| panic!("no {side:?} corps {id}"))
}

fn town(t: &str) -> Location {
    Location::Town { town: t.into() }
}

/// A position: the listed corps in their towns, every other corps eliminated, at the start of a
/// command phase (turn 1, round 1).
fn board(confederate: &[(&str, &str)], union: &[(&str, &str)]) -> State {
    let mut s = fresh();
    for c in &mut s.corps {
        c.at = Location::Eliminated;
    }
    for (side, list) in [(Side::Confederate, confederate), (Side::Union, union)] {
        for (id, t) in list {
            let c = idx(&s, side, id);
            s.corps[c].at = town(t);
        }
    }
    restart(&mut s, Stage::Command);
    s
}

/// Puts a corps on the road, advancing on `to`.
fn advancing(s: &mut State, side: Side, id: &str, from: &str, to: &str) {
    let c = idx(s, side, id);
    s.corps[c].at = Location::Advancing { from: from.into(), to: to.into() };
}

/// Restarts the sequence at `stage` (dice must not be needed to reach the first question).
fn restart(s: &mut State, stage: Stage) {
    s.stage = stage;
    s.question = None;
    engine::run(s, &mut Ctx::scripted(&[]), None);
}

/// Runs the combat phase from its start with scripted dice.
fn combat(s: &mut State, rolls: &[u32]) -> Log {
    s.stage = Stage::Combat(Combat::default());
    s.question = None;
    let mut d = Ctx::scripted(rolls);
    engine::run(s, &mut d, None);
    Log::of(d)
}

fn ord(text: &str) -> crate::game::Orders {
    toml::from_str(text).unwrap_or_else(|e| panic!("test orders parse: {e}"))
}

/// Resolves the pending step with the given orders (TOML text of `[orders]`) and scripted dice;
/// every scripted die must be used.
fn step(s: &State, orders: &[(&str, &str)], rolls: &[u32]) -> (State, Log) {
    let g = GettysburgCampaign;
    let mut map = BTreeMap::new();
    for (role, text) in orders {
        let o = ord(text);
        if let Err(p) = g.check_order(s, role, &o) {
            panic!("orders of {role} rejected: {p:?}");
        }
        map.insert(role.to_string(), o);
    }
    let mut d = Ctx::scripted(rolls);
    let next = resolve_with(s, check_all(&g, s, &map).expect("checks"), &mut d).expect("resolves");
    assert!(d.script_left().is_empty(), "unused scripted dice: {:?}", d.script_left());
    let back: State = serde_json::from_str(&crate::game::canonical(&next)).expect("state parses");
    assert_eq!(back, next, "state round-trips through JSON");
    (next, Log::of(d))
}

fn problems(s: &State, role: &str, text: &str) -> Vec<crate::game::OrderProblem> {
    GettysburgCampaign.check_order(s, role, &ord(text)).err().unwrap_or_default()
}

fn has_problem(s: &State, role: &str, text: &str, field: &str) -> bool {
    problems(s, role, text).iter().any(|p| p.field == field)
}

fn kind(s: &State) -> &'static str {
    s.question.as_ref().map_or("over", |q| q.kind())
}

// ---------------------------------------------------------------------------------------------
// §3 setup, scenario, options

#[test]
fn s3_setup_puts_every_corps_at_its_start_and_asks_both_for_commands() {
    let g = GettysburgCampaign;
    let s = g.setup(g.default_scenario(), &BTreeMap::new()).unwrap();
    assert_eq!(s.turn, 1);
    assert_eq!(s.round, 1);
    for c in &s.corps {
        let start = if c.side == Side::Confederate { "Fredericksburg" } else { "Washington" };
        assert_eq!(c.at, town(start));
    }
    assert_eq!(s.corps_of(Side::Confederate).len(), 3);
    assert_eq!(s.corps_of(Side::Union).len(), 7);
    assert_eq!(s.strength(&s.corps_of(Side::Confederate)), 13, "§9 example: the three Confederate corps total 13");
    assert_eq!(s.scenario.confederate.cards.len(), 2);
    assert_eq!(s.scenario.union.cards.len(), 4);
    match g.pending(&s) {
        Pending::Orders(asks) => {
            assert_eq!(asks.iter().map(|a| a.role.as_str()).collect::<Vec<_>>(), ["confederate", "union"]);
            assert!(asks.iter().all(|a| a.kind == "command"));
        }
        Pending::Over(_) => panic!("not over"),
    }
}

#[test]
fn scenario_errors_name_the_field() {
    let bad_road = DEFAULT_SCENARIO.replacen("[\"Fredericksburg\", \"Culpeper\"]", "[\"Fredericksburg\", \"Culpepper\"]", 1);
    let e = scenario::Scenario::parse(&bad_road).unwrap_err().to_string();
    assert!(e.contains("map.roads[0]") && e.contains("Culpepper"), "{e}");
    let bad_card = DEFAULT_SCENARIO.replacen("lower = \"Howard\"", "lower = \"Hooker\"", 1);
    let e = scenario::Scenario::parse(&bad_card).unwrap_err().to_string();
    assert!(e.contains("union.cards[0].lower") && e.contains("Hooker"), "{e}");
    let bad_start = DEFAULT_SCENARIO.replacen("start = \"Washington\"", "start = \"Richmond\"", 1);
    let e = scenario::Scenario::parse(&bad_start).unwrap_err().to_string();
    assert!(e.contains("union.start"), "{e}");
    let unknown = DEFAULT_SCENARIO.replacen("victory_points = 6", "victory_points = 6\nvictory_point = 6", 1);
    let e = scenario::Scenario::parse(&unknown).unwrap_err().to_string();
    assert!(e.contains("victory_point"), "{e}");
    let zero = DEFAULT_SCENARIO.replacen("attack_divisors = [5, 4, 3]", "attack_divisors = [5, 0, 3]", 1);
    let e = scenario::Scenario::parse(&zero).unwrap_err().to_string();
    assert!(e.contains("rules.attack_divisors[1]"), "{e}");
    // A mistyped strength made `pbem simulate` abort asking for 800 TB (the look-ahead's table of
    // attack chances by pairs of strengths).
    let huge = DEFAULT_SCENARIO.replacen("strength = 5 ", "strength = 5000000 ", 1);
    let e = scenario::Scenario::parse(&huge).unwrap_err().to_string();
    assert!(e.contains("confederate.corps[0].strength") && e.contains("between 1 and 99"), "{e}");
}

#[test]
fn options_only_optional_fire_is_known() {
    let g = GettysburgCampaign;
    let mut o = BTreeMap::new();
    o.insert("optional-fire".to_string(), "true".to_string());
    assert!(g.setup(g.default_scenario(), &o).unwrap().optional_fire);
    o.insert("optional-fire".to_string(), "yes".to_string());
    assert!(matches!(g.setup(g.default_scenario(), &o), Err(GameError::Option { .. })));
    let mut o = BTreeMap::new();
    o.insert("fog-of-war".to_string(), "true".to_string());
    assert!(matches!(g.setup(g.default_scenario(), &o), Err(GameError::Option { key, .. }) if key == "fog-of-war"));
}

// ---------------------------------------------------------------------------------------------
// §4 victory and points

#[test]
fn s4_points_are_scored_once_on_first_entry_and_never_lost() {
    let s = board(&[("I", "Leesburg")], &[("XII", "Baltimore")]);
    let (s, _) = step(&s, &[("confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"Frederick\" }"), ("union", "cards = [\"Slocum\"]\nmoves = { XII = \"stay\" }")], &[4, 2]);
    assert_eq!(s.points(), 1);
    assert_eq!(s.scored, ["Frederick"]);
    // Leave and come back: no second scoring.
    let (s, _) = step(&s, &[("confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"Leesburg\" }"), ("union", "cards = [\"Slocum\"]\nmoves = { XII = \"stay\" }")], &[4, 2]);
    let (s, d) = step(&s, &[("confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"Frederick\" }"), ("union", "cards = [\"Slocum\"]\nmoves = { XII = \"stay\" }")], &[4, 2]);
    assert_eq!(s.points(), 1);
    assert!(!d.said("score"));
    // A Union corps retaking the town does not take the points away.
    let mut s = s;
    let c = idx(&s, Side::Confederate, "I");
    s.corps[c].at = town("Leesburg");
    let u = idx(&s, Side::Union, "XII");
    s.corps[u].at = town("Frederick");
    assert_eq!(s.points(), 1);
}

#[test]
fn s4_advancing_on_a_town_scores_nothing_but_winning_the_attack_does() {
    let s = board(&[("I", "Leesburg")], &[("XI", "Frederick"), ("XII", "Baltimore")]);
    let (s, _) = step(
        &s,
        &[("confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"Frederick\" }"), ("union", "cards = [\"Howard\", \"Slocum\"]\nmoves = { XI = \"stay\", XII = \"stay\" }\n[standing]\ndefend = [\"Frederick\"]")],
        &[5, 1],
    );
    assert_eq!(s.corps[idx(&s, Side::Confederate, "I")].at, Location::Advancing { from: "Leesburg".into(), to: "Frederick".into() });
    assert_eq!(s.points(), 0);
    // Round 2: the Confederate corps is engaged, the Union XI too; XII stays: no moves -> combat.
    // Defender XI (2): 0 automatic + 2 dice; attacker I (5): 1 automatic, 0 dice. Diff 1: retreat.
    let (s, d) = step(&s, &[("union", "cards = [\"Slocum\"]\nmoves = { XII = \"stay\" }")], &[2, 5, 1, 1]);
    assert!(d.said("the defenders retreat"));
    assert_eq!(kind(&s), "retreat");
    let (s, _) = step(&s, &[("confederate", "retreat_to = \"Washington\"")], &[]);
    assert_eq!(s.corps[idx(&s, Side::Confederate, "I")].at, town("Frederick"));
    assert_eq!(s.points(), 1);
}

#[test]
fn s4_confederates_win_with_six_points() {
    let mut s = board(&[("I", "Leesburg")], &[("XII", "Baltimore")]);
    s.scored = vec!["Washington".into(), "Baltimore".into()]; // 5 points
    let (s, _) = step(&s, &[("confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"Frederick\" }"), ("union", "cards = [\"Slocum\"]\nmoves = { XII = \"stay\" }")], &[4, 2]);
    assert_eq!(s.points(), 6);
    // The game ends at the end of the turn in which the points are reached.
    let (s, _) = step(&s, &[("confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"stay\" }"), ("union", "cards = [\"Slocum\"]\nmoves = { XII = \"stay\" }")], &[4, 2]);
    match GettysburgCampaign.pending(&s) {
        Pending::Over(o) => assert_eq!(o.winner.as_deref(), Some("confederate")),
        p => panic!("expected game over, got {p:?}"),
    }
}

#[test]
fn s4_eliminating_a_corps_gives_no_points() {
    // Harrisburg: roads to Carlisle (the attacker's road) and York (Confederate): XI cannot
    // retreat and is eliminated. Harrisburg was scored before: the elimination adds nothing.
    let mut s = board(&[("I", "Carlisle"), ("II", "York")], &[("XI", "Harrisburg")]);
    advancing(&mut s, Side::Confederate, "I", "Carlisle", "Harrisburg");
    s.scored = vec!["Harrisburg".into()];
    let d = combat(&mut s, &[1, 1]);
    assert!(d.said("eliminated"));
    assert_eq!(s.points(), 2);
}

// ---------------------------------------------------------------------------------------------
// §5 turn structure

#[test]
fn s5_a_round_without_moves_ends_the_rounds_and_the_turn() {
    let s = fresh();
    let (s, d) = step(&s, &[("confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"stay\" }"), ("union", "cards = [\"Reynolds\", \"Hancock\"]\nmoves = { I = \"stay\", II = \"stay\" }")], &[3, 4]);
    assert!(d.said("No corps moved this round"));
    assert_eq!((s.turn, s.round, kind(&s)), (2, 1, "command"));
}

#[test]
fn s5_a_round_with_a_move_is_followed_by_another_round() {
    let s = fresh();
    let (s, _) = step(&s, &[("confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"Culpeper\" }"), ("union", "cards = [\"Reynolds\", \"Hancock\"]\nmoves = { I = \"stay\", II = \"stay\" }")], &[3, 4]);
    assert_eq!((s.turn, s.round, kind(&s)), (1, 2, "command"));
}

#[test]
fn s5_s6_no_corps_able_to_take_a_command_means_combat_without_initiative() {
    let mut s = board(&[("I", "Gettysburg")], &[("III", "Westminster")]);
    advancing(&mut s, Side::Union, "III", "Westminster", "Gettysburg");
    s.stage = Stage::Command;
    s.question = None;
    // Only combat dice: defender I (5): 1 automatic, 0 dice; attacker III (3): 3 dice.
    let mut d = Ctx::scripted(&[1, 1, 1]);
    engine::run(&mut s, &mut d, None);
    let d = Log::of(d);
    assert!(d.said("neither side has a corps that can take a command"));
    assert!(!d.said("initiative"));
    assert!(d.said("the attack fails"));
    assert_eq!(s.turn, 2);
}

// ---------------------------------------------------------------------------------------------
// §6 commands

#[test]
fn s6_union_plays_two_cards_confederates_one() {
    let s = fresh();
    assert!(has_problem(&s, "union", "cards = [\"Reynolds\"]", "cards"));
    assert!(has_problem(&s, "union", "cards = [\"Reynolds\", \"Hancock\", \"Sickles\"]", "cards"));
    assert!(problems(&s, "union", "cards = [\"Reynolds\", \"Hancock\"]").is_empty());
    assert!(has_problem(&s, "confederate", "cards = [\"Longstreet\", \"A.P. Hill\"]", "cards"));
    assert!(problems(&s, "confederate", "cards = [\"ewell\"]").is_empty(), "names ignore case");
}

#[test]
fn s6_the_upper_half_names_the_commanded_corps() {
    let s = fresh();
    let (s, d) = step(&s, &[("confederate", "cards = [\"Ewell\"]\nmoves = { II = \"Culpeper\" }"), ("union", "cards = [\"Howard\", \"Slocum\"]\nmoves = { XI = \"stay\", XII = \"stay\" }")], &[6, 1]);
    assert!(d.said("Ewell commands II Corps"));
    assert!(d.said("Howard commands XI Corps"));
    assert_eq!(s.corps[idx(&s, Side::Confederate, "II")].at, town("Culpeper"));
    // Both halves of one card cannot be played.
    let s = fresh();
    assert!(has_problem(&s, "union", "cards = [\"Reynolds\", \"Howard\"]", "cards"));
    assert!(has_problem(&s, "union", "cards = [\"Reynolds\", \"Hooker\"]", "cards"));
}

#[test]
fn s6_a_corps_advancing_or_in_an_approached_town_cannot_take_a_command() {
    let mut s = board(&[("I", "Hagerstown"), ("II", "Chambersburg")], &[("III", "Gettysburg"), ("XI", "Washington"), ("XII", "Baltimore")]);
    advancing(&mut s, Side::Confederate, "I", "Hagerstown", "Gettysburg");
    restart(&mut s, Stage::Command);
    let i = idx(&s, Side::Confederate, "I");
    let iii = idx(&s, Side::Union, "III");
    assert!(rules::command_block(&s, i).unwrap().contains("advancing"));
    assert!(rules::command_block(&s, iii).unwrap().contains("advancing on its town"));
    assert!(has_problem(&s, "confederate", "cards = [\"Longstreet\"]", "cards"));
    assert!(has_problem(&s, "union", "cards = [\"Sickles\", \"Howard\"]", "cards"));
    assert!(problems(&s, "union", "cards = [\"Howard\", \"Slocum\"]").is_empty());
    let help = GettysburgCampaign.form_help(&s, "union", crate::report::WORDING).join("\n");
    assert!(help.contains("Sickles: not playable"), "{help}");
}

#[test]
fn s6_commands_are_compulsory_up_to_the_playable_cards() {
    // Only XI can take a command: one card (Howard, or Meade for XI) must be played, not two.
    let s = board(&[("I", "Fredericksburg")], &[("XI", "Washington")]);
    assert_eq!(rules::required_cards(&s, Side::Union), 1);
    assert!(problems(&s, "union", "cards = [\"Howard\"]").is_empty());
    assert!(problems(&s, "union", "cards = [\"Meade\"]\nmeade = \"XI\"").is_empty());
    assert!(has_problem(&s, "union", "cards = [\"Howard\", \"Meade\"]\nmeade = \"XI\"", "cards"), "two cards may not command one corps");
    assert!(has_problem(&s, "union", "cards = []", "cards"));
    // With nothing to command, a side is not asked at all.
    let mut s = board(&[("I", "Hagerstown")], &[("XI", "Washington"), ("III", "Gettysburg")]);
    advancing(&mut s, Side::Confederate, "I", "Hagerstown", "Gettysburg");
    restart(&mut s, Stage::Command);
    assert_eq!(s.question, Some(Question::Command { sides: vec![Side::Union] }));
}

#[test]
fn s6_army_commander_commands_any_corps_once_per_game() {
    let s = fresh();
    assert!(has_problem(&s, "union", "cards = [\"Meade\", \"Reynolds\"]", "meade"), "Meade needs a corps");
    assert!(has_problem(&s, "union", "cards = [\"Meade\", \"Reynolds\"]\nmeade = \"I\"", "cards"), "same corps twice");
    assert!(has_problem(&s, "union", "cards = [\"Reynolds\", \"Hancock\"]\nmeade = \"VI\"", "meade"), "Meade not played");
    let (s, _) = step(&s, &[("confederate", "cards = [\"Lee\"]\nlee = \"III\"\nmoves = { III = \"stay\" }"), ("union", "cards = [\"Meade\", \"Reynolds\"]\nmeade = \"VI\"\nmoves = { VI = \"stay\", I = \"stay\" }")], &[2, 5]);
    assert!(s.army_used.confederate && s.army_used.union, "used up even though the corps stayed (§8)");
    assert!(has_problem(&s, "union", "cards = [\"Meade\", \"Reynolds\"]\nmeade = \"VI\"", "cards"));
    assert!(problems(&s, "union", "cards = [\"Sedgwick\", \"Reynolds\"]").is_empty(), "the card's other half stays usable");
    assert!(problems(&s, "confederate", "cards = [\"A.P. Hill\"]").is_empty());
}

#[test]
fn s6_unknown_order_fields_are_rejected() {
    let s = fresh();
    assert!(has_problem(&s, "union", "cards = [\"Reynolds\", \"Hancock\"]\ncard = 1", "card"));
    assert!(has_problem(&s, "union", "cards = [\"Reynolds\", \"Hancock\"]\n[standing]\ndefned = [\"Washington\"]", "standing.defned"));
    assert!(has_problem(&s, "union", "cards = [\"Reynolds\", \"Hancock\"]\nmoves = { I = \"Gettysburg\" }", "moves.I"), "no road");
    assert!(has_problem(&s, "union", "cards = [\"Reynolds\", \"Hancock\"]\nmoves = { III = \"Baltimore\" }", "moves.III"), "not commanded");
    assert!(has_problem(&s, "union", "cards = [\"Reynolds\", \"Hancock\"]\n[standing]\ncombat_order = [\"Gettysburg\"]", "standing.combat_order"));
    assert!(has_problem(&s, "union", "cards = [\"Reynolds\", \"Hancock\"]\n[standing]\noptional_fire = \"always\"", "standing.optional_fire"));
}

#[test]
fn standing_orders_are_replaced_key_by_key_and_defend_overrides_vacate() {
    let s = fresh();
    let (s, _) = step(&s, &[("confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"stay\" }"), ("union", "cards = [\"Reynolds\", \"Hancock\"]\nmoves = { I = \"stay\", II = \"stay\" }\n[standing]\nvacate = { Frederick = \"Westminster\", Baltimore = [\"York\"] }\ncasualties = [\"XI\"]")], &[1, 2]);
    assert_eq!(s.standing.union.vacate.len(), 2);
    let (s, _) = step(&s, &[("confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"stay\" }"), ("union", "cards = [\"Reynolds\", \"Hancock\"]\nmoves = { I = \"stay\", II = \"stay\" }\n[standing]\ndefend = [\"Frederick\"]")], &[1, 2]);
    assert_eq!(s.standing.union.defend, ["Frederick"]);
    assert_eq!(s.standing.union.vacate.keys().collect::<Vec<_>>(), ["Baltimore"], "Frederick left the vacate table");
    assert_eq!(s.standing.union.casualties, ["XI"], "keys not given are kept");
    assert!(s.standing.confederate.defend.is_empty(), "each side has its own");
    assert!(has_problem(&s, "union", "cards = [\"Reynolds\", \"Hancock\"]\n[standing]\ndefend = [\"York\"]\nvacate = { York = \"Baltimore\" }", "standing.defend"));
    assert!(has_problem(&s, "union", "cards = [\"Reynolds\", \"Hancock\"]\n[standing]\nvacate = { York = \"Washington\" }", "standing.vacate.York"), "no road");
}

#[test]
fn standing_tables_merge_per_town_and_an_empty_table_clears_them() {
    // Issue 10: adding one town's retreat deleted every other one.
    let s = fresh();
    let stay = "cards = [\"Reynolds\", \"Hancock\"]\nmoves = { I = \"stay\", II = \"stay\" }\n[standing]\n";
    let conf = ("confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"stay\" }");
    let (s, _) = step(&s, &[conf, ("union", &format!("{stay}retreat = {{ Frederick = [\"Westminster\"] }}\nvacate = {{ York = \"Baltimore\" }}"))], &[1, 2]);
    let (s, _) = step(&s, &[conf, ("union", &format!("{stay}retreat = {{ Washington = [\"Baltimore\"] }}\nvacate = {{ Frederick = \"Westminster\" }}"))], &[1, 2]);
    assert_eq!(s.standing.union.retreat.keys().collect::<Vec<_>>(), ["Frederick", "Washington"]);
    assert_eq!(s.standing.union.vacate.keys().collect::<Vec<_>>(), ["Frederick", "York"]);
    let (s, _) = step(&s, &[conf, ("union", &format!("{stay}retreat = {{}}\nvacate = {{ York = [] }}"))], &[1, 2]);
    assert!(s.standing.union.retreat.is_empty(), "{{}} clears the table");
    assert_eq!(s.standing.union.vacate.keys().collect::<Vec<_>>(), ["Frederick"], "York = [] deletes York only");
    assert!(!has_problem(&s, "union", &format!("{stay}defend = [\"York\"]\nvacate = {{ York = [] }}"), "standing.defend"), "deleting is no conflict");
}

#[test]
fn standing_lists_reject_duplicates_naming_them() {
    let s = fresh();
    let cards = "cards = [\"Reynolds\", \"Hancock\"]\n[standing]\n";
    let dup = |role: &str, text: &str, field: &str, name: &str| {
        let p = problems(&s, role, &format!("{}{text}", if role == "union" { cards } else { "cards = [\"Ewell\"]\n[standing]\n" }));
        assert!(p.iter().any(|x| x.field == field && x.message.contains(&format!("{name} is listed twice"))), "{text}: {p:?}");
    };
    dup("union", "casualties = [\"I\", \"I\", \"XI\"]", "standing.casualties", "I");
    dup("union", "casualties = [\"xi\", \"XI\"]", "standing.casualties", "XI");
    dup("union", "defend = [\"York\", \"york\"]", "standing.defend", "York");
    dup("union", "vacate = { Frederick = [\"Westminster\", \"Westminster\"] }", "standing.vacate.Frederick", "Westminster");
    dup("union", "vacate = { Frederick = \"Westminster\", frederick = \"Washington\" }", "standing.vacate", "Frederick");
    dup("union", "retreat = { Gettysburg = [\"York\", \"Carlisle\", \"York\"] }", "standing.retreat.Gettysburg", "York");
    dup("confederate", "combat_order = [\"Gettysburg\", \"Gettysburg\"]", "standing.combat_order", "Gettysburg");
    assert!(problems(&s, "union", &format!("{cards}casualties = [\"I\", \"XI\"]")).is_empty());
    let p = problems(&s, "union", &format!("{cards}casualties = [\"I\", \"I\", \"I\"]"));
    assert_eq!(p.len(), 1, "one message per duplicate: {p:?}");
    // Corps ids ignore case, so a table can name one corps twice.
    let p = problems(&s, "union", "cards = [\"Reynolds\", \"Hancock\"]\nmoves = { I = \"stay\", i = \"Frederick\" }");
    assert!(p.iter().any(|x| x.field == "moves" && x.message.contains("I is listed twice")), "{p:?}");
}

// ---------------------------------------------------------------------------------------------
// §7 initiative

#[test]
fn s7_the_higher_die_moves_first() {
    let s = board(&[("I", "Leesburg")], &[("XI", "Washington")]);
    // Union wins the initiative and moves XI to Frederick first; then the Confederate I Corps
    // moves in and the Union decides (standing: defend).
    let (s, d) = step(&s, &[("confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"Frederick\" }"), ("union", "cards = [\"Howard\"]\nmoves = { XI = \"Frederick\" }\n[standing]\ndefend = [\"Frederick\"]")], &[2, 5, 1, 1]);
    assert!(d.said("The Union player has the initiative"));
    let xi = d.public.iter().position(|e| e.contains("XI Corps (Howard) moves")).unwrap();
    let i = d.public.iter().position(|e| e.contains("I Corps (Longstreet) moves")).unwrap();
    assert!(xi < i);
    assert!(d.said("The Union army defends Frederick"), "a singular subject and verb (issue 10)");
    assert_eq!(s.last_initiative.as_ref().unwrap().winner, Some(Side::Union));
}

#[test]
fn s7_a_tie_ends_the_round_and_lee_returns_unrevealed() {
    let s = fresh();
    let (s, d) = step(&s, &[("confederate", "cards = [\"Lee\"]\nlee = \"I\"\nmoves = { I = [\"Manassas\", \"Leesburg\"] }"), ("union", "cards = [\"Reynolds\", \"Hancock\"]")], &[4, 4]);
    assert!(d.said("Initiative tie"));
    assert!(!s.army_used.confederate, "Lee returns to the hand");
    assert!(s.corps.iter().all(|c| matches!(&c.at, Location::Town { town } if town == "Fredericksburg" || town == "Washington")));
    assert!(!d.public.iter().any(|e| e.contains("Lee") || e.contains("Reynolds")), "no card is revealed on a tie: {:?}", d.public);
    assert!(d.private.iter().any(|(side, e)| *side == Side::Confederate && e.contains("Lee returns")));
    assert!(!d.private.iter().any(|(side, e)| *side == Side::Union && e.contains("Lee")));
    assert_eq!((s.turn, kind(&s)), (2, "command"), "a tie goes to the combat phase and ends the turn");
    let v = GettysburgCampaign.view(&s, "union");
    assert_eq!(v["opponent"]["army_commander_used"], false);
}

#[test]
fn s7_the_commands_of_a_tie_are_never_shown_before_the_game_ends() {
    // §7: "it is not necessary to tell the identity of unused cards to the opponent": the orders
    // of a command step whose initiative tied stay out of the public record until the game ends.
    let g = GettysburgCampaign;
    let before = fresh();
    let (after, _) = step(&before, &[("confederate", "cards = [\"Lee\"]\nlee = \"I\"\nmoves = { I = [\"Manassas\", \"Leesburg\"] }"), ("union", "cards = [\"Reynolds\", \"Hancock\"]")], &[5, 5]);
    assert!(initiative_tied(&before, &after));
    assert_eq!(g.publication(&before, &after), Publication::AfterGame);
    // The tie of an earlier round says nothing about a later command step that was won.
    let (next, _) = step(&after, &[("confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"stay\" }"), ("union", "cards = [\"Reynolds\", \"Hancock\"]\nmoves = { I = \"stay\", II = \"stay\" }")], &[3, 4]);
    assert!(!initiative_tied(&after, &next));
    assert_eq!(g.publication(&after, &next), Publication::Now);
}

/// Everything an order form for `role` carries into the signed (and later published) text: the
/// prompt, the help lines and the prefilled `[orders]`.
fn form_text(s: &State, role: &str) -> String {
    let g = GettysburgCampaign;
    let prompt = match g.pending(s) {
        Pending::Orders(asks) => asks.into_iter().filter(|a| a.role == role).map(|a| a.prompt).collect::<Vec<_>>().join("\n"),
        Pending::Over(_) => String::new(),
    };
    let body = toml::to_string(&g.default_order(s, role)).expect("default order as TOML");
    format!("{prompt}\n{}\n{body}", g.form_help(s, role, crate::report::WORDING).join("\n"))
}

#[test]
fn s7_standing_orders_of_a_tied_command_step_are_not_in_the_next_form() {
    // §7: a command step whose initiative tied is withheld until the game ends, standing orders
    // and all. The next step's form is signed unedited and published with that step, so it must
    // not list the standing orders (the report does, to the side alone).
    let before = fresh();
    let union = "cards = [\"Reynolds\", \"Hancock\"]\n[standing]\ndefend = [\"Frederick\"]\n\
                 vacate = { Baltimore = [\"York\"] }\ncasualties = [\"XI\", \"XII\"]";
    let confederate = "cards = [\"Longstreet\"]\nmoves = { I = \"stay\" }\n[standing]\ndefend = [\"Culpeper\"]\n\
                       retreat = { Gettysburg = [\"York\"] }";
    let (after, _) = step(&before, &[("confederate", confederate), ("union", union)], &[3, 3]);
    assert_eq!(GettysburgCampaign.publication(&before, &after), Publication::AfterGame);
    assert_eq!(kind(&after), "command");
    for (side, secret) in [
        (Side::Union, ["defend Frederick", "vacate Baltimore to York", "casualties XI, XII"].as_slice()),
        (Side::Confederate, ["defend Culpeper", "retreat from Gettysburg to York"].as_slice()),
    ] {
        let role = side.role();
        let listed = forms::standing_list(after.standing.get(side));
        for line in secret {
            assert!(listed.iter().any(|l| l == line), "{role} set {line}: {listed:?}");
        }
        let form = form_text(&after, role);
        for line in secret {
            assert!(!form.contains(line), "{role}'s form shows its standing order {line}:\n{form}");
        }
        assert!(form.contains("Your standing orders are listed in your report"), "{form}");
        let v = GettysburgCampaign.view(&after, role);
        assert!(secret.iter().all(|l| v["standing"].as_array().unwrap().iter().any(|x| x == l)), "the report still lists them: {v}");
    }
}

#[test]
fn move_and_combat_forms_list_no_standing_orders() {
    // §8 and §9 asks: their forms carry no standing order either.
    let secret = ["defend Washington", "casualties III, II", "retreat from Frederick to Leesburg"];
    let set = |s: &mut State| {
        std::sync::Arc::make_mut(&mut s.standing.union).defend = vec!["Washington".into()];
        std::sync::Arc::make_mut(&mut s.standing.confederate).casualties = vec!["III".into(), "II".into()];
        std::sync::Arc::make_mut(&mut s.standing.confederate).retreat.insert("Frederick".into(), vec!["Leesburg".into()]);
    };
    let mut s = fresh();
    set(&mut s);
    let (moving, _) = step(&s, &[("confederate", "cards = [\"Longstreet\"]"), ("union", "cards = [\"Reynolds\", \"Hancock\"]\nmoves = { I = \"stay\", II = \"stay\" }")], &[6, 1]);
    assert_eq!(kind(&moving), "move");
    let mut fighting = board(&[("I", "Carlisle"), ("III", "Hagerstown")], &[("XI", "Harrisburg"), ("VI", "Gettysburg")]);
    advancing(&mut fighting, Side::Confederate, "I", "Carlisle", "Harrisburg");
    advancing(&mut fighting, Side::Confederate, "III", "Hagerstown", "Gettysburg");
    set(&mut fighting);
    restart(&mut fighting, Stage::Combat(Combat::default()));
    assert_eq!(kind(&fighting), "combat-order");
    for s in [&moving, &fighting] {
        let form = form_text(s, "confederate");
        for line in secret {
            assert!(!form.contains(line), "the form shows {line}:\n{form}");
        }
        assert!(form.contains("Your standing orders are listed in your report"), "{form}");
    }
}

#[test]
fn s7_s8_won_commands_are_shown_when_the_round_ends() {
    let g = GettysburgCampaign;
    // §8: the cards are opened in the movement phase; a round that runs to its end publishes them.
    let before = fresh();
    let (after, _) = step(&before, &[("confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"stay\" }"), ("union", "cards = [\"Reynolds\", \"Hancock\"]\nmoves = { I = \"stay\", II = \"stay\" }")], &[3, 4]);
    assert_eq!(kind(&after), "command");
    assert_eq!(g.publication(&before, &after), Publication::Now);
    // A round paused for a question keeps the plans of corps yet to move secret until it ends.
    let (paused, _) = step(&before, &[("confederate", "cards = [\"Longstreet\"]"), ("union", "cards = [\"Reynolds\", \"Hancock\"]\nmoves = { I = \"stay\", II = \"stay\" }")], &[6, 1]);
    assert_eq!(kind(&paused), "move");
    assert_eq!(g.publication(&before, &paused), Publication::AfterRound);
    let (ended, _) = step(&paused, &[("confederate", "moves = { I = \"Culpeper\" }")], &[]);
    assert_eq!(kind(&ended), "command");
    assert_eq!(g.publication(&paused, &ended), Publication::Now);
}

// ---------------------------------------------------------------------------------------------
// §8 movement

/// The rulebook's example of movement (§8): First Corps moves from Hagerstown into Gettysburg, the
/// Union III Corps defends, the Union I Corps joins it; next round a tie leads to combat, First
/// Corps attacking I and III Corps.
#[test]
fn s8_example_of_movement() {
    let s = board(&[("I", "Hagerstown"), ("II", "Winchester")], &[("III", "Gettysburg"), ("I", "Westminster"), ("XII", "Baltimore")]);
    let (s, _) = step(
        &s,
        &[
            ("confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"Gettysburg\" }"),
            ("union", "cards = [\"Reynolds\", \"Sickles\"]\nmoves = { I = \"Gettysburg\", III = \"York\" }"),
        ],
        &[5, 2],
    );
    let Some(Question::VacateOrDefend { side, town: t, options, .. }) = s.question.clone() else { panic!("expected vacate-or-defend, got {:?}", s.question) };
    assert_eq!((side, t.as_str()), (Side::Union, "Gettysburg"));
    assert!(!options.contains(&"Hagerstown".to_string()), "not where the enemy came from");
    assert!(options.contains(&"Westminster".to_string()));
    assert!(has_problem(&s, "union", "decision = \"defend\"\nmoves = { III = \"York\" }", "moves.III"), "III will not move this round");
    let (s, d) = step(&s, &[("union", "decision = \"defend\"")], &[]);
    let first = idx(&s, Side::Confederate, "I");
    assert_eq!(s.corps[first].at, Location::Advancing { from: "Hagerstown".into(), to: "Gettysburg".into() });
    assert_eq!(s.corps[idx(&s, Side::Union, "I")].at, town("Gettysburg"), "I Corps joins in the Union movement phase");
    assert_eq!(s.corps[idx(&s, Side::Union, "III")].at, town("Gettysburg"), "III Corps defended and cannot move");
    assert!(d.private.iter().any(|(_, e)| e.contains("III Corps (Sickles) vacated or defended")));
    assert_eq!((s.round, kind(&s)), (2, "command"));
    // Neither First Corps nor III Corps can take a command now.
    assert!(has_problem(&s, "confederate", "cards = [\"Longstreet\"]", "cards"));
    assert!(has_problem(&s, "union", "cards = [\"Sickles\"]", "cards"));
    // Next round: a tie, then combat. Defender I + III (6): 1 automatic + 1 die (a 2);
    // attacker First Corps (5) along one road: 1 automatic. 1 to 1: the attack fails.
    let (s, d) = step(&s, &[("confederate", "cards = [\"Ewell\"]\nmoves = { II = \"Hagerstown\" }"), ("union", "cards = [\"Slocum\"]\nmoves = { XII = \"York\" }")], &[3, 3, 2]);
    assert!(d.said("Initiative tie"));
    assert!(d.said("Combat at Gettysburg: Confederate I Corps (strength 5, along 1 road) attacks Union I, III Corps (strength 6)"));
    assert!(d.said("the attack fails"));
    assert_eq!(s.corps[first].at, town("Hagerstown"));
    assert_eq!(s.corps[idx(&s, Side::Confederate, "II")].at, town("Winchester"), "no command is carried out on a tie");
    assert_eq!(s.turn, 2);
}

#[test]
fn s8_army_commanders_corps_moves_twice_others_once() {
    let s = fresh();
    assert!(has_problem(&s, "confederate", "cards = [\"Longstreet\"]\nmoves = { I = [\"Manassas\", \"Leesburg\"] }", "moves.I"));
    let (s, _) = step(&s, &[("confederate", "cards = [\"Lee\"]\nlee = \"II\"\nmoves = { II = [\"Manassas\", \"Leesburg\"] }"), ("union", "cards = [\"Reynolds\", \"Hancock\"]\nmoves = { I = \"stay\", II = \"stay\" }")], &[6, 1]);
    assert_eq!(s.corps[idx(&s, Side::Confederate, "II")].at, town("Leesburg"));
}

#[test]
fn s8_a_commanded_corps_without_a_plan_is_asked_and_stay_is_not() {
    let s = fresh();
    let (s, _) = step(&s, &[("confederate", "cards = [\"Longstreet\"]"), ("union", "cards = [\"Reynolds\", \"Hancock\"]\nmoves = { I = \"stay\", II = \"stay\" }")], &[6, 1]);
    assert_eq!(s.question, Some(Question::Move { side: Side::Confederate, corps: idx(&s, Side::Confederate, "I") }));
    assert_eq!(GettysburgCampaign.default_order(&s, "confederate"), ord("moves = { I = \"stay\" }"));
    assert!(has_problem(&s, "confederate", "", "moves.I"));
    let (s, _) = step(&s, &[("confederate", "moves = { I = \"Culpeper\" }")], &[]);
    assert_eq!(s.corps[idx(&s, Side::Confederate, "I")].at, town("Culpeper"));
    assert_eq!(kind(&s), "command");
}

#[test]
fn s8_stay_for_a_corps_without_a_move_is_a_harmless_no_op() {
    // The prefilled form plans `I = "stay"`; a player who changes the cards but keeps that line
    // must not be rejected.
    let s = fresh();
    assert!(problems(&s, "union", "cards = [\"Hancock\", \"Sickles\"]\nmoves = { I = \"stay\", II = \"stay\" }").is_empty());
    let (s2, _) = step(&s, &[("confederate", "cards = [\"Ewell\"]\nmoves = { I = \"stay\", II = \"stay\" }"), ("union", "cards = [\"Hancock\", \"Sickles\"]\nmoves = { I = \"stay\", II = \"stay\", III = \"stay\" }")], &[6, 1]);
    assert!(!s2.this_round.plans.union.contains_key(&idx(&s2, Side::Union, "I")), "nothing is stored for I Corps");
    // Moving a corps without a command is still an error, with the clear message.
    let p = problems(&s, "union", "cards = [\"Hancock\", \"Sickles\"]\nmoves = { I = \"Frederick\" }");
    assert!(p.iter().any(|x| x.field == "moves.I" && x.message.contains("has no move to make now")), "{p:?}");
    // During movement, "stay" for a corps that already moved (or has no command) is ignored too.
    let s = fresh();
    let (s, _) = step(&s, &[("confederate", "cards = [\"Longstreet\"]"), ("union", "cards = [\"Reynolds\", \"Hancock\"]\nmoves = { I = \"stay\", II = \"stay\" }")], &[6, 1]);
    assert_eq!(kind(&s), "move");
    assert!(problems(&s, "confederate", "moves = { I = \"Culpeper\", II = \"stay\" }").is_empty());
    assert!(has_problem(&s, "confederate", "moves = { I = \"Culpeper\", II = \"Culpeper\" }", "moves.II"));
    let help = GettysburgCampaign.form_help(&fresh(), "union", crate::report::WORDING).join("\n");
    assert!(help.contains("\"stay\" for a corps without a command is ignored"), "{help}");
}

#[test]
fn s8_vacating_avoids_enemy_towns_and_the_movers_origin() {
    // The rule by itself: not the town the enemy came from (even if empty), not an enemy town.
    let s = board(&[("II", "Westminster")], &[("XI", "Frederick")]);
    assert_eq!(rules::vacate_options(&s, "Frederick", Side::Union, "Leesburg"), ["Washington", "Hagerstown", "Gettysburg"]);
    assert_eq!(rules::vacate_options(&s, "Frederick", Side::Union, "Hagerstown"), ["Leesburg", "Washington", "Gettysburg"]);
    let s = board(&[("I", "Leesburg"), ("II", "Westminster")], &[("XI", "Frederick")]);
    // Standing vacate to an illegal town (Westminster, Confederate) is not used: the player is asked.
    let (s2, _) = step(&s, &[("confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"Frederick\" }"), ("union", "cards = [\"Howard\"]\nmoves = { XI = \"stay\" }\n[standing]\nvacate = { Frederick = [\"Westminster\"] }")], &[6, 1]);
    assert_eq!(kind(&s2), "vacate-or-defend");
    assert!(has_problem(&s2, "union", "decision = \"vacate\"\nvacate_to = \"Leesburg\"", "vacate_to"));
    assert!(has_problem(&s2, "union", "decision = \"vacate\"", "vacate_to"));
    let (s3, d) = step(&s2, &[("union", "decision = \"vacate\"\nvacate_to = \"Hagerstown\"")], &[]);
    assert!(d.said("vacates Frederick for Hagerstown"));
    assert_eq!(s3.corps[idx(&s3, Side::Confederate, "I")].at, town("Frederick"));
    assert_eq!(s3.points(), 1, "entering after a vacate scores");
    // A legal standing vacate answers without asking.
    let (s4, _) = step(&s, &[("confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"Frederick\" }"), ("union", "cards = [\"Howard\"]\nmoves = { XI = \"stay\" }\n[standing]\nvacate = { Frederick = [\"Westminster\", \"Gettysburg\"] }")], &[6, 1]);
    assert_eq!(s4.corps[idx(&s4, Side::Union, "XI")].at, town("Gettysburg"));
    assert_eq!(kind(&s4), "command");
}

#[test]
fn s8_with_nowhere_to_vacate_the_town_is_defended() {
    // Harrisburg's roads lead to Carlisle (mover's origin) and York (Confederate).
    let s = board(&[("I", "Carlisle"), ("II", "York")], &[("XI", "Harrisburg"), ("XII", "Baltimore")]);
    let (s, d) = step(&s, &[("confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"Harrisburg\" }"), ("union", "cards = [\"Howard\", \"Slocum\"]\nmoves = { XI = \"stay\", XII = \"stay\" }\n[standing]\nvacate = { Harrisburg = [\"York\"] }")], &[6, 1]);
    assert!(d.said("no town to vacate to and must defend"));
    assert!(matches!(s.corps[idx(&s, Side::Confederate, "I")].at, Location::Advancing { .. }));
}

#[test]
fn s8_the_defence_decision_is_final_for_later_movers() {
    let s = board(&[("I", "Hagerstown"), ("III", "Chambersburg")], &[("XI", "Gettysburg"), ("XII", "Baltimore")]);
    let (s, _) = step(&s, &[("confederate", "cards = [\"Lee\"]\nlee = \"I\"\nmoves = { I = [\"Gettysburg\", \"York\"] }"), ("union", "cards = [\"Howard\", \"Slocum\"]\nmoves = { XI = \"stay\", XII = \"stay\" }\n[standing]\ndefend = [\"Gettysburg\"]")], &[6, 1]);
    let i = idx(&s, Side::Confederate, "I");
    assert_eq!(s.corps[i].at, Location::Advancing { from: "Hagerstown".into(), to: "Gettysburg".into() }, "defence stops Lee's second move");
    // Next round the Union would now vacate, but the decision stands: III Corps joins the attack.
    let (s, d) = step(&s, &[("confederate", "cards = [\"A.P. Hill\"]\nmoves = { III = \"Gettysburg\" }"), ("union", "cards = [\"Slocum\"]\nmoves = { XII = \"stay\" }\n[standing]\nvacate = { Gettysburg = [\"York\"] }")], &[6, 1]);
    assert!(d.said("already defend"));
    assert_eq!(s.corps[idx(&s, Side::Confederate, "III")].at, Location::Advancing { from: "Chambersburg".into(), to: "Gettysburg".into() });
    assert_eq!(rules::roads_used(&s, &s.advancing_on("Gettysburg")), 2);
}

#[test]
fn s8_non_initiative_corps_that_vacated_cannot_move() {
    let s = board(&[("I", "Leesburg")], &[("XI", "Frederick")]);
    let (s, d) = step(&s, &[("confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"Frederick\" }"), ("union", "cards = [\"Howard\"]\nmoves = { XI = \"Gettysburg\" }\n[standing]\nvacate = { Frederick = [\"Westminster\"] }")], &[6, 1]);
    assert_eq!(s.corps[idx(&s, Side::Union, "XI")].at, town("Westminster"));
    assert!(d.private.iter().any(|(side, e)| *side == Side::Union && e.contains("cannot move")));
}

#[test]
fn s8_planned_moves_must_follow_roads() {
    let s = fresh();
    let p = problems(&s, "confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"Harrisburg\" }");
    assert!(p.iter().any(|x| x.field == "moves.I" && x.message.contains("Culpeper")), "{p:?}");
    assert!(has_problem(&s, "confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"Atlanta\" }", "moves.I"));
    assert!(has_problem(&s, "confederate", "cards = [\"Longstreet\"]\nmoves = { IV = \"Culpeper\" }", "moves.IV"));
}

// ---------------------------------------------------------------------------------------------
// §9 combat: firing

#[test]
fn s9_defender_fire_example_strength_7_is_one_hit_and_two_dice() {
    assert_eq!(rules::fire_options(7, 5, false, 5), [FirePlan { automatic: 1, dice: 2 }]);
}

#[test]
fn s9_attacker_fire_example_13_along_three_roads_is_four_hits_and_one_die() {
    let s = fresh();
    assert_eq!(rules::fire_options(13, s.scenario.attack_divisor(3), false, 5), [FirePlan { automatic: 4, dice: 1 }]);
}

#[test]
fn s9_attacker_fire_example_13_along_one_road_is_two_hits_and_three_dice() {
    let s = fresh();
    assert_eq!(rules::fire_options(13, s.scenario.attack_divisor(1), false, 5), [FirePlan { automatic: 2, dice: 3 }]);
}

#[test]
fn s9_attack_divisor_by_roads_with_three_as_the_floor() {
    let s = fresh();
    assert_eq!((1..=5).map(|r| s.scenario.attack_divisor(r)).collect::<Vec<_>>(), [5, 4, 3, 3, 3]);
}

#[test]
fn s9_each_six_is_one_more_hit() {
    assert_eq!(rules::hits(FirePlan { automatic: 1, dice: 3 }, &[6, 5, 6]), 3);
    assert_eq!(rules::hits(FirePlan { automatic: 0, dice: 2 }, &[1, 5]), 0);
}

#[test]
fn s9_comparing_hits() {
    use CombatResult::*;
    assert_eq!(rules::compare(2, 2), AttackFails);
    assert_eq!(rules::compare(1, 2), AttackFails);
    assert_eq!(rules::compare(0, 2), AttackRepulsed);
    assert_eq!(rules::compare(0, 5), AttackRepulsed);
    assert_eq!(rules::compare(3, 2), DefenderRetreats);
    assert_eq!(rules::compare(4, 2), DefenderRouted);
}

#[test]
fn s9_optional_fire_example_strength_7() {
    let got = rules::fire_options(7, 5, true, 5);
    assert_eq!(got, [FirePlan { automatic: 1, dice: 2 }, FirePlan { automatic: 0, dice: 5 }]);
}

#[test]
fn s9_optional_fire_example_13_along_three_roads() {
    let got = rules::fire_options(13, 3, true, 5);
    assert_eq!(got, [FirePlan { automatic: 4, dice: 1 }, FirePlan { automatic: 3, dice: 4 }, FirePlan { automatic: 2, dice: 5 }]);
}

#[test]
fn s9_optional_fire_example_13_along_one_road() {
    let got = rules::fire_options(13, 5, true, 5);
    assert_eq!(got, [FirePlan { automatic: 2, dice: 3 }, FirePlan { automatic: 1, dice: 5 }]);
}

#[test]
fn s9_optional_fire_without_automatic_hits_has_one_way() {
    assert_eq!(rules::fire_options(4, 5, true, 5), [FirePlan { automatic: 0, dice: 4 }]);
}

/// §9 example: the three Confederate corps (13) attack Gettysburg from Carlisle, Chambersburg and
/// Hagerstown: four automatic hits and one die.
#[test]
fn s9_attack_along_three_roads_fires_four_hits_and_one_die() {
    let mut s = board(&[("I", "Carlisle"), ("II", "Chambersburg"), ("III", "Hagerstown")], &[("XI", "Gettysburg"), ("XII", "Gettysburg")]);
    advancing(&mut s, Side::Confederate, "I", "Carlisle", "Gettysburg");
    advancing(&mut s, Side::Confederate, "II", "Chambersburg", "Gettysburg");
    advancing(&mut s, Side::Confederate, "III", "Hagerstown", "Gettysburg");
    // Defender XI + XII (4): 4 dice; attacker: 4 automatic + 1 die. The Union loses by 4:
    // it removes a corps (standing list), the other retreats; every road but York's and
    // Westminster's and Frederick's carries an attacker.
    std::sync::Arc::make_mut(&mut s.standing.union).casualties = vec!["XII".into()];
    std::sync::Arc::make_mut(&mut s.standing.confederate).retreat.insert("Gettysburg".into(), vec!["York".into()]);
    let d = combat(&mut s, &[1, 1, 1, 1, 1]);
    assert!(d.said("4 automatic hits and 1 die -> 4 hits"));
    assert_eq!(s.corps[idx(&s, Side::Union, "XII")].at, Location::Eliminated);
    assert_eq!(s.corps[idx(&s, Side::Union, "XI")].at, town("York"));
    for id in ["I", "II", "III"] {
        assert_eq!(s.corps[idx(&s, Side::Confederate, id)].at, town("Gettysburg"));
    }
    assert!(s.scored.contains(&"Gettysburg".to_string()));
}

// ---------------------------------------------------------------------------------------------
// §9 combat: results

#[test]
fn s9_a_failed_attack_returns_the_attackers() {
    let mut s = board(&[("I", "Hagerstown")], &[("VI", "Gettysburg")]);
    advancing(&mut s, Side::Confederate, "I", "Hagerstown", "Gettysburg");
    // Defender VI (4): 4 dice, one 6 -> 1 hit; attacker I (5): 1 hit. Tie.
    let d = combat(&mut s, &[6, 1, 1, 1]);
    assert!(d.said("the attack fails"));
    assert_eq!(s.corps[idx(&s, Side::Confederate, "I")].at, town("Hagerstown"));
}

/// No count is followed by a plural after 1 (or a singular after another number).
fn assert_counts_agree(text: &str) {
    for (one, many) in [("hit", "hits"), ("die", "dice"), ("point", "points"), ("card", "cards"), ("road", "roads"), ("time", "times")] {
        for w in text.split(|c: char| !c.is_alphanumeric() && c != '\'').collect::<Vec<_>>().windows(2) {
            if let Ok(n) = w[0].parse::<u32>() {
                assert!(!(n == 1 && w[1] == many), "\"1 {many}\" in: {text}");
                assert!(!(n != 1 && w[1] == one), "\"{n} {one}\" in: {text}");
            }
        }
    }
}

#[test]
fn messages_agree_in_number() {
    // Attack with one corps, one hit each: "attacks", "1 hit".
    let mut s = board(&[("I", "Hagerstown")], &[("VI", "Gettysburg")]);
    advancing(&mut s, Side::Confederate, "I", "Hagerstown", "Gettysburg");
    let d = combat(&mut s, &[6, 1, 1, 1]);
    assert!(d.said("Confederate I Corps (strength 5, along 1 road) attacks Union VI Corps"), "{:?}", d.public);
    assert!(d.said("attacker 1 hit, defender 1 hit"), "{:?}", d.public);
    d.public.iter().for_each(|e| assert_counts_agree(e));
    // One Union corps retreating: "retreats", nothing about splitting.
    let mut s = board(&[("I", "Hagerstown")], &[("XI", "Gettysburg")]);
    advancing(&mut s, Side::Confederate, "I", "Hagerstown", "Gettysburg");
    let _ = combat(&mut s, &[1, 1]);
    let Pending::Orders(asks) = GettysburgCampaign.pending(&s) else { panic!() };
    assert!(asks[0].prompt.contains("the Union XI Corps retreats,") && !asks[0].prompt.contains("split"), "{}", asks[0].prompt);
    // One holder with nowhere to vacate to: "has".
    let s = board(&[("I", "Carlisle"), ("II", "York")], &[("XI", "Harrisburg"), ("XII", "Baltimore")]);
    let (_, d) = step(&s, &[("confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"Harrisburg\" }"), ("union", "cards = [\"Howard\", \"Slocum\"]\nmoves = { XI = \"stay\", XII = \"stay\" }")], &[6, 1]);
    assert!(d.said("The Union XI Corps in Harrisburg has no town to vacate to"), "{:?}", d.public);
    assert!(d.said("Confederate card revealed: Longstreet"), "{:?}", d.public);
    assert!(d.said("Union cards revealed: Howard"), "{:?}", d.public);
    // The Confederate plays one card: the form speaks of one card.
    let s = fresh();
    let help = GettysburgCampaign.form_help(&s, "confederate", crate::report::WORDING).join("\n");
    let Pending::Orders(asks) = GettysburgCampaign.pending(&s) else { panic!() };
    let prompt = &asks.iter().find(|a| a.role == "confederate").unwrap().prompt;
    for text in [&help, prompt] {
        assert_counts_agree(text);
        assert!(!text.contains("each turned") && !text.contains("each named") && !text.contains("Two cards"), "{text}");
    }
    assert!(help.contains("play exactly 1 card"), "{help}");
}

#[test]
fn s9_a_failed_attacker_whose_start_town_is_enemy_held_is_removed() {
    let mut s = board(&[("I", "Hagerstown")], &[("VI", "Gettysburg"), ("XII", "Hagerstown")]);
    advancing(&mut s, Side::Confederate, "I", "Hagerstown", "Gettysburg");
    let d = combat(&mut s, &[6, 1, 1, 1]);
    assert!(d.said("cannot return to Hagerstown"));
    assert_eq!(s.corps[idx(&s, Side::Confederate, "I")].at, Location::Eliminated);
}

#[test]
fn s9_a_repulsed_attacker_chooses_its_casualty_and_the_rest_return() {
    let mut s = board(
        &[("II", "Hagerstown"), ("III", "Hagerstown")],
        &[("VI", "Gettysburg"), ("V", "Gettysburg"), ("I", "Gettysburg"), ("II", "Gettysburg")],
    );
    advancing(&mut s, Side::Confederate, "II", "Hagerstown", "Gettysburg");
    advancing(&mut s, Side::Confederate, "III", "Hagerstown", "Gettysburg");
    // Defender 13: 2 automatic + 3 dice (6, 1, 1) -> 3 hits. Attacker 8 along one road:
    // 1 automatic + 3 dice (1, 1, 1) -> 1 hit. Behind by 2: repulsed.
    let d = combat(&mut s, &[6, 1, 1, 1, 1, 1]);
    assert!(d.said("the attack is repulsed"));
    let Some(Question::Casualty { side, candidates, .. }) = s.question.clone() else { panic!("expected casualty, got {:?}", s.question) };
    assert_eq!(side, Side::Confederate);
    assert_eq!(candidates.len(), 2);
    assert_eq!(GettysburgCampaign.default_order(&s, "confederate"), ord("remove = \"II\""), "weakest, first in order on a tie");
    assert!(has_problem(&s, "confederate", "remove = \"I\"", "remove"));
    let (s, _) = step(&s, &[("confederate", "remove = \"III\"")], &[]);
    assert_eq!(s.corps[idx(&s, Side::Confederate, "III")].at, Location::Eliminated);
    assert_eq!(s.corps[idx(&s, Side::Confederate, "II")].at, town("Hagerstown"));
}

#[test]
fn s9_retreat_routes_are_chosen_by_the_attacker_and_may_split() {
    let mut s = board(&[("I", "Hagerstown")], &[("XI", "Gettysburg"), ("XII", "Gettysburg")]);
    advancing(&mut s, Side::Confederate, "I", "Hagerstown", "Gettysburg");
    // Defender 4: 4 dice, none; attacker 5: 1 hit. Diff 1: the defenders retreat.
    let d = combat(&mut s, &[1, 1, 1, 1]);
    assert!(d.said("the defenders retreat"));
    let Some(Question::Retreat { side, options, corps, .. }) = s.question.clone() else { panic!("expected retreat, got {:?}", s.question) };
    assert_eq!(side, Side::Confederate);
    assert_eq!(corps.len(), 2);
    assert!(!options.contains(&"Hagerstown".to_string()), "not along the attacker's road");
    assert!(has_problem(&s, "confederate", "retreat_to = \"Hagerstown\"", "retreat_to"));
    assert!(has_problem(&s, "confederate", "retreat_to = { XI = \"York\" }", "retreat_to"), "every corps needs a town");
    assert!(has_problem(&s, "confederate", "retreat_to = { XI = \"York\", xi = \"Westminster\" }", "retreat_to"), "XI twice, XII missing");
    let (s, _) = step(&s, &[("confederate", "retreat_to = { XI = \"York\", XII = \"Westminster\" }")], &[]);
    assert_eq!(s.corps[idx(&s, Side::Union, "XI")].at, town("York"));
    assert_eq!(s.corps[idx(&s, Side::Union, "XII")].at, town("Westminster"));
    assert_eq!(s.corps[idx(&s, Side::Confederate, "I")].at, town("Gettysburg"), "the attacker enters the town");
}

#[test]
fn s9_retreat_avoids_enemy_towns_and_roads_with_enemy_corps() {
    // Confederate II holds York; I attacks from Hagerstown; III left Gettysburg earlier and is
    // advancing on the Union VI Corps in Westminster, so it stands on the Gettysburg-Westminster road.
    let mut s = board(&[("I", "Hagerstown"), ("II", "York"), ("III", "Gettysburg")], &[("XI", "Gettysburg"), ("VI", "Westminster")]);
    advancing(&mut s, Side::Confederate, "I", "Hagerstown", "Gettysburg");
    advancing(&mut s, Side::Confederate, "III", "Gettysburg", "Westminster");
    assert_eq!(rules::retreat_options(&s, "Gettysburg", Side::Union), ["Frederick", "Chambersburg", "Carlisle"]);
}

#[test]
fn s9_a_defender_that_cannot_retreat_is_removed() {
    // Harrisburg: roads to Carlisle (attacker's road) and York (Confederate).
    let mut s = board(&[("I", "Carlisle"), ("II", "York")], &[("XI", "Harrisburg")]);
    advancing(&mut s, Side::Confederate, "I", "Carlisle", "Harrisburg");
    let d = combat(&mut s, &[1, 1]);
    assert!(d.said("cannot retreat from Harrisburg"));
    assert_eq!(s.corps[idx(&s, Side::Union, "XI")].at, Location::Eliminated);
    assert_eq!(s.corps[idx(&s, Side::Confederate, "I")].at, town("Harrisburg"));
    assert_eq!(s.points(), 2);
}

#[test]
fn s9_a_routed_defender_removes_a_corps_of_its_choice_then_retreats() {
    let mut s = board(&[("I", "Carlisle"), ("II", "Chambersburg")], &[("XI", "Gettysburg"), ("XII", "Gettysburg")]);
    advancing(&mut s, Side::Confederate, "I", "Carlisle", "Gettysburg");
    advancing(&mut s, Side::Confederate, "II", "Chambersburg", "Gettysburg");
    // Defender 4: 4 dice, none. Attacker 9 along 2 roads: 2 automatic + 1 die (none). Diff 2.
    let d = combat(&mut s, &[1, 1, 1, 1, 1]);
    assert!(d.said("the defenders are routed"));
    assert_eq!(s.question.as_ref().map(|q| q.sides()), Some(vec![Side::Union]));
    assert_eq!(kind(&s), "casualty");
    let (s, _) = step(&s, &[("union", "remove = \"XI\"\n[standing]\ncasualties = [\"XII\"]")], &[]);
    assert_eq!(s.corps[idx(&s, Side::Union, "XI")].at, Location::Eliminated);
    assert_eq!(kind(&s), "retreat");
    assert_eq!(s.standing.union.casualties, ["XII"], "a standing order given with an answer is stored");
}

#[test]
fn s9_the_confederate_player_orders_several_combats() {
    let mut s = board(&[("I", "Carlisle"), ("II", "Leesburg")], &[("XI", "Gettysburg"), ("XII", "Frederick")]);
    advancing(&mut s, Side::Confederate, "I", "Carlisle", "Gettysburg");
    advancing(&mut s, Side::Confederate, "II", "Leesburg", "Frederick");
    let _ = combat(&mut s, &[]);
    assert_eq!(s.question, Some(Question::CombatOrder { towns: vec!["Frederick".into(), "Gettysburg".into()] }));
    assert!(has_problem(&s, "confederate", "combat_order = [\"Gettysburg\"]", "combat_order"));
    // Gettysburg first: defender XI 2 dice (1, 1); attacker I 1 hit -> retreat (XI has options).
    let (s2, d) = step(&s, &[("confederate", "combat_order = [\"Gettysburg\", \"Frederick\"]\n[standing]\nretreat = { Gettysburg = [\"York\"] }")], &[1, 1, 1, 1, 1, 1, 1, 1]);
    let g = d.public.iter().position(|e| e.contains("Combat at Gettysburg")).unwrap();
    let f = d.public.iter().position(|e| e.contains("Combat at Frederick")).unwrap();
    assert!(g < f);
    assert_eq!(s2.corps[idx(&s2, Side::Union, "XI")].at, town("York"));
    assert_eq!(s2.corps[idx(&s2, Side::Confederate, "II")].at, town("Leesburg"));
    // A standing list that names all but one town decides without asking.
    let mut s3 = s.clone();
    std::sync::Arc::make_mut(&mut s3.standing.confederate).combat_order = vec!["Gettysburg".into()];
    let d = combat(&mut s3, &[1, 1, 1, 1, 1, 1, 1, 1]);
    assert!(d.said("in this order: Gettysburg, Frederick"));
}

// ---------------------------------------------------------------------------------------------
// §9 combat: the typed decisions, made before anything is said or moved

/// §9: "A Corps advancing on a town is called attacker, a Corps in the town defender"; §9 2:
/// corps from Carlisle, Chambersburg and Hagerstown attack along three roads, two from one town
/// along one.
#[test]
fn s9_battle_names_attackers_defenders_and_roads() {
    let mut s = board(&[("I", "Carlisle"), ("II", "Chambersburg"), ("III", "Carlisle")], &[("XI", "Gettysburg"), ("XII", "Gettysburg")]);
    assert_eq!(engine::battle(&s, "Gettysburg"), None, "no corps advances on it");
    advancing(&mut s, Side::Confederate, "I", "Carlisle", "Gettysburg");
    advancing(&mut s, Side::Confederate, "III", "Carlisle", "Gettysburg");
    let b = engine::battle(&s, "Gettysburg").expect("a combat");
    let (c1, c3) = (idx(&s, Side::Confederate, "I"), idx(&s, Side::Confederate, "III"));
    assert_eq!((b.attacker, b.defender(), b.roads), (Side::Confederate, Side::Union, 1));
    assert_eq!(b.attackers, [c1, c3]);
    assert_eq!(b.defenders, [idx(&s, Side::Union, "XI"), idx(&s, Side::Union, "XII")]);
    assert_eq!(
        engine::narrate(&s, &CombatOutcome::Engaged(b)),
        "Combat at Gettysburg: Confederate I, III Corps (strength 9, along 1 road) attack Union XI, XII Corps (strength 4)."
    );
    advancing(&mut s, Side::Confederate, "II", "Chambersburg", "Gettysburg");
    assert_eq!(engine::battle(&s, "Gettysburg").map(|b| b.roads), Some(2));
    // The defenders gone, the attackers still advance: a battle without defenders.
    for c in [idx(&s, Side::Union, "XI"), idx(&s, Side::Union, "XII")] {
        s.corps[c].at = Location::Eliminated;
    }
    assert_eq!(engine::battle(&s, "Gettysburg").map(|b| b.defenders), Some(vec![]));
}

/// §9 1: "if the sum total of Combat Strength is 7, the defender gives the attacker one hit, rolls
/// two dice and gives one more hit each time rolling a 6."
#[test]
fn s9_a_fire_result_is_its_automatic_hits_and_one_per_six() {
    let plan = rules::fire_options(7, 5, false, 5)[0];
    let f = engine::FireResult::new(Side::Union, false, "Gettysburg", plan, vec![6, 3]);
    assert_eq!(f.hits, 2);
    assert_eq!(engine::FireResult::new(Side::Union, false, "Gettysburg", plan, vec![6, 6]).hits, 3);
    assert_eq!(engine::FireResult::new(Side::Union, false, "Gettysburg", plan, vec![5, 1]).hits, 1);
    let s = fresh();
    assert_eq!(engine::narrate(&s, &CombatOutcome::Fired(f)), "Union defender's fire at Gettysburg: 1 automatic hit and 2 dice -> 2 hits.");
}

/// §9 3: "In case giving two or more hits than the enemy, remove one enemy Corps [...] A player who
/// took the hit decides which unit is removed."
#[test]
fn s9_the_side_two_hits_behind_removes_a_corps_it_chooses() {
    let mut s = board(&[("II", "Hagerstown"), ("III", "Hagerstown")], &[("VI", "Gettysburg"), ("V", "Gettysburg")]);
    advancing(&mut s, Side::Confederate, "II", "Hagerstown", "Gettysburg");
    advancing(&mut s, Side::Confederate, "III", "Hagerstown", "Gettysburg");
    let b = engine::battle(&s, "Gettysburg").expect("a combat");
    let (ii, iii) = (idx(&s, Side::Confederate, "II"), idx(&s, Side::Confederate, "III"));
    let (vi, v) = (idx(&s, Side::Union, "VI"), idx(&s, Side::Union, "V"));
    assert!(engine::costs_a_corps(CombatResult::AttackRepulsed) && engine::costs_a_corps(CombatResult::DefenderRouted));
    assert!(!engine::costs_a_corps(CombatResult::AttackFails) && !engine::costs_a_corps(CombatResult::DefenderRetreats));
    let repulsed = |s: &State, mut direct: Option<Direct>| engine::casualty(s, &b, CombatResult::AttackRepulsed, &mut direct);
    assert_eq!(
        repulsed(&s, None),
        Err(Question::Casualty { side: Side::Confederate, town: "Gettysburg".into(), candidates: vec![ii, iii] }),
        "neither an answer nor a standing list: the attacker is asked"
    );
    let removed = |corps, loser| Ok(CombatOutcome::Casualty { corps, loser, town: "Gettysburg".into() });
    assert_eq!(repulsed(&s, Some(Direct::Casualty(iii))), removed(iii, Side::Confederate));
    std::sync::Arc::make_mut(&mut s.standing.confederate).casualties = vec!["VI".into(), "II".into()];
    assert_eq!(repulsed(&s, Some(Direct::Casualty(vi))), removed(ii, Side::Confederate), "not a candidate: the standing list");
    assert_eq!(engine::casualty(&s, &b, CombatResult::DefenderRouted, &mut None), Err(Question::Casualty {
        side: Side::Union,
        town: "Gettysburg".into(),
        candidates: vec![v, vi]
    }));
    std::sync::Arc::make_mut(&mut s.standing.union).casualties = vec!["V".into()];
    assert_eq!(engine::casualty(&s, &b, CombatResult::DefenderRouted, &mut None), removed(v, Side::Union));
    s.corps[v].at = Location::Eliminated;
    let b = engine::battle(&s, "Gettysburg").expect("a combat");
    assert_eq!(engine::casualty(&s, &b, CombatResult::DefenderRouted, &mut None), removed(vi, Side::Union), "the only candidate");
}

/// §9 3: "the attack fails and the attacker must return to the town of the starting point. If
/// there is an enemy unit in the town of the starting point, the attacker cannot retreat and the
/// unit is removed."
#[test]
fn s9_failed_attackers_return_or_are_removed() {
    let mut s = board(&[("I", "Hagerstown"), ("II", "Carlisle")], &[("VI", "Gettysburg"), ("XII", "Carlisle")]);
    advancing(&mut s, Side::Confederate, "I", "Hagerstown", "Gettysburg");
    advancing(&mut s, Side::Confederate, "II", "Carlisle", "Gettysburg");
    let b = engine::battle(&s, "Gettysburg").expect("a combat");
    let (i, ii) = (idx(&s, Side::Confederate, "I"), idx(&s, Side::Confederate, "II"));
    let out = engine::aftermath(&s, &b, CombatResult::AttackFails, &mut None).expect("no question");
    assert_eq!(out, [CombatOutcome::Returns { corps: i, to: "Hagerstown".into() }, CombatOutcome::CannotReturn { corps: ii, from: "Carlisle".into() }]);
    assert_eq!(engine::narrate(&s, &out[0]), "Confederate I Corps (Longstreet) returns to Hagerstown (§9 3).");
    assert_eq!(
        engine::narrate(&s, &out[1]),
        "Confederate II Corps (Ewell) is eliminated: it cannot return to Carlisle, which the enemy holds (§9 3)."
    );
}

/// §9 3: "The defender retreats into an adjacent town. Retreating into a town containing an enemy
/// unit is not allowed. In addition, retreating via a road containing an attacker's Corps is not
/// allowed either. A unit which cannot retreat is removed. If there are multiple ways of retreat,
/// the attacker may choose the way of retreat."
#[test]
fn s9_beaten_defenders_retreat_where_the_attacker_says_and_the_attackers_enter() {
    // Harrisburg: roads to Carlisle (the attacker's) and York. York empty: the one way, no question.
    let mut s = board(&[("I", "Carlisle")], &[("XI", "Harrisburg"), ("XII", "Harrisburg")]);
    advancing(&mut s, Side::Confederate, "I", "Carlisle", "Harrisburg");
    let (i, xi, xii) = (idx(&s, Side::Confederate, "I"), idx(&s, Side::Union, "XI"), idx(&s, Side::Union, "XII"));
    let b = engine::battle(&s, "Harrisburg").expect("a combat");
    let to_york = vec![(xi, Some("York".to_string())), (xii, Some("York".to_string()))];
    assert_eq!(engine::retreats(&s, &b, &mut None), Ok(to_york));
    // York Confederate: nowhere to go, both removed, and the attacker enters.
    let ii = idx(&s, Side::Confederate, "II");
    s.corps[ii].at = town("York");
    let town_h = || "Harrisburg".to_string();
    assert_eq!(engine::aftermath(&s, &b, CombatResult::DefenderRetreats, &mut None), Ok(vec![
        CombatOutcome::CannotRetreat { corps: xi, town: town_h() },
        CombatOutcome::CannotRetreat { corps: xii, town: town_h() },
        CombatOutcome::Enters { corps: i, town: town_h() },
    ]));
    // Gettysburg has several ways: the attacker's answer, else its standing list, else a question.
    let mut s = board(&[("I", "Hagerstown")], &[("XI", "Gettysburg"), ("XII", "Gettysburg")]);
    advancing(&mut s, Side::Confederate, "I", "Hagerstown", "Gettysburg");
    let b = engine::battle(&s, "Gettysburg").expect("a combat");
    let Err(Question::Retreat { side, corps, options, .. }) = engine::retreats(&s, &b, &mut None) else { panic!("expected a question") };
    assert_eq!((side, corps), (Side::Confederate, vec![xi, xii]));
    assert!(options.contains(&"York".to_string()) && !options.contains(&"Hagerstown".to_string()));
    let answer = Direct::Retreat(vec![(xi, "York".into()), (xii, "Hagerstown".into())]);
    assert!(engine::retreats(&s, &b, &mut Some(answer.clone())).is_err(), "Hagerstown is along the attacker's road");
    std::sync::Arc::make_mut(&mut s.standing.confederate).retreat.insert("Gettysburg".into(), vec!["Westminster".into()]);
    assert_eq!(engine::retreats(&s, &b, &mut Some(answer)), Ok(vec![(xi, Some("York".into())), (xii, Some("Westminster".into()))]));
}

// ---------------------------------------------------------------------------------------------
// §9 optional firing rule

#[test]
fn s9_optional_fire_defender_chooses_first_and_attacker_sees_its_result() {
    let mut s = board(&[("I", "Hagerstown"), ("II", "Chambersburg")], &[("VI", "Gettysburg"), ("XI", "Gettysburg")]);
    s.optional_fire = true;
    advancing(&mut s, Side::Confederate, "I", "Hagerstown", "Gettysburg");
    advancing(&mut s, Side::Confederate, "II", "Chambersburg", "Gettysburg");
    let _ = combat(&mut s, &[]);
    assert!(matches!(&s.question, Some(Question::FireOption { side: Side::Union, attacking: false, strength: 6, .. })));
    assert!(has_problem(&s, "union", "automatic_hits = 3", "automatic_hits"));
    // The defender rolls five dice (two 6s) instead of 1 hit + 1 die.
    let (s, _) = step(&s, &[("union", "automatic_hits = 0")], &[6, 6, 1, 1, 1]);
    let Some(Question::FireOption { side, attacking, defender_hits, strength, divisor, .. }) = s.question.clone() else { panic!("{:?}", s.question) };
    assert_eq!((side, attacking, defender_hits, strength, divisor), (Side::Confederate, true, Some(2), 9, 4));
    // Attacker 9 along 2 roads: 2 + 1 die, or 1 + 5 dice.
    let (s, d) = step(&s, &[("confederate", "automatic_hits = 1\n[standing]\noptional_fire = \"never\"")], &[6, 6, 1, 1, 1]);
    assert!(d.said("1 automatic hit and 5 dice -> 3 hits"));
    assert_eq!(kind(&s), "retreat");
}

#[test]
fn s9_optional_fire_standing_policies_answer() {
    let mut s = board(&[("I", "Hagerstown")], &[("VI", "Gettysburg"), ("XI", "Gettysburg")]);
    s.optional_fire = true;
    std::sync::Arc::make_mut(&mut s.standing.union).optional_fire = Some(state::FirePolicy::Always);
    std::sync::Arc::make_mut(&mut s.standing.confederate).optional_fire = Some(state::FirePolicy::Never);
    advancing(&mut s, Side::Confederate, "I", "Hagerstown", "Gettysburg");
    // Union 6 -> 5 dice; Confederate 5 along 1 road -> 1 automatic.
    let d = combat(&mut s, &[1, 1, 1, 1, 1]);
    assert!(d.said("Union defender's fire at Gettysburg: 0 automatic hits and 5 dice"));
    assert!(d.said("Confederate attacker's fire at Gettysburg: 1 automatic hit and 0 dice"));
}

// ---------------------------------------------------------------------------------------------
// §10 end of the game

#[test]
fn s10_the_game_ends_after_the_last_turn_and_the_union_wins_short_of_six() {
    let mut s = fresh();
    s.turn = 9;
    s.scored = vec!["Baltimore".into()];
    let (s, d) = step(&s, &[("confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"stay\" }"), ("union", "cards = [\"Reynolds\", \"Hancock\"]\nmoves = { I = \"stay\", II = \"stay\" }")], &[1, 2]);
    assert!(d.said("Game over"));
    match GettysburgCampaign.pending(&s) {
        Pending::Over(o) => {
            assert_eq!(o.winner.as_deref(), Some("union"));
            assert!(o.summary.contains("2 of the 6"), "{}", o.summary);
        }
        p => panic!("{p:?}"),
    }
    assert!(GettysburgCampaign.view(&s, "confederate")["game_over"]["summary"].is_string());
}

// ---------------------------------------------------------------------------------------------
// Views and secrecy

#[test]
fn view_hides_the_opponents_plans_and_standing_orders() {
    let s = board(&[("I", "Leesburg")], &[("XI", "Frederick"), ("XII", "Baltimore")]);
    let (s, _) = step(&s, &[("confederate", "cards = [\"Longstreet\"]\nmoves = { I = \"Frederick\" }"), ("union", "cards = [\"Howard\", \"Slocum\"]\nmoves = { XI = \"Westminster\", XII = \"York\" }")], &[5, 1]);
    assert_eq!(kind(&s), "vacate-or-defend");
    let g = GettysburgCampaign;
    let before = g.view(&s, "confederate");
    let mut other = s.clone();
    other.this_round.plans.union.clear();
    std::sync::Arc::make_mut(&mut other.standing.union).defend = vec!["Washington".into()];
    std::sync::Arc::make_mut(&mut other.standing.union).casualties = vec!["XI".into()];
    assert_eq!(g.view(&other, "confederate"), before);
    assert_ne!(g.view(&other, "union"), g.view(&s, "union"), "the union sees its own");
    assert!(before["question"].is_null());
    assert_eq!(before["waiting_for"][0]["role"], "union");
    assert_eq!(before["opponent"]["hand_size"], 4);
}

// ---------------------------------------------------------------------------------------------
// Generic random play (OpenSpiel style)

/// Plays one game with the bots; at every step checks that default and bot orders pass the check,
/// that resolution is deterministic, that the state survives its JSON text, that views and the
/// report template work, and that the game ends by its last turn within a bounded number of steps.
fn random_game(seed: u8, optional: bool, nmr: bool) -> (State, usize) {
    random_game_of(seed, optional, nmr, "sensible")
}

/// [`random_game`] with the built-in players of `policy`.
fn random_game_of(seed: u8, optional: bool, nmr: bool, policy: &str) -> (State, usize) {
    let g = GettysburgCampaign;
    let mut options = BTreeMap::new();
    options.insert("optional-fire".to_string(), optional.to_string());
    let mut s = g.setup(g.default_scenario(), &options).unwrap();
    let mut bots = Ctx::new([seed; 32]);
    let env = crate::report::environment(None).expect("templates");
    let tmpl = env.get_template("games/gettysburg-campaign.txt").expect("template exists");
    for steps in 0..400usize {
        for role in ["confederate", "union"] {
            let v = g.view(&s, role);
            // The report's view, made without the JSON, is the JSON view made a template value.
            let direct = g.report_view(&s, role).expect("a template value");
            let through_json = minijinja::Value::from(minijinja::value::Serde(&v));
            assert_eq!((format!("{direct:?}"), &direct), (format!("{through_json:?}"), &through_json), "seed {seed}, {role}");
            let report = tmpl
                .render(minijinja::context! { view => direct, wording => crate::report::WORDING, outcome => () })
                .unwrap_or_else(|e| panic!("template: {e:#}"));
            let help = g.form_help(&s, role, crate::report::WORDING);
            assert!(!help.is_empty());
            // Reports and forms go by email: keep their lines short (help lines get "# " in front).
            for l in report.lines().chain(help.iter().map(|h| format!("# {h}")).collect::<Vec<_>>().iter().map(String::as_str)) {
                assert!(l.chars().count() <= 100, "seed {seed}: line of {} characters:\n{l}", l.chars().count());
            }
            assert_counts_agree(&report);
            assert_counts_agree(&help.join("\n"));
        }
        let text = crate::game::canonical(&s);
        let back: State = serde_json::from_str(&text).expect("state parses");
        assert_eq!(back, s, "state round-trips through JSON");
        let asks = match g.pending(&s) {
            Pending::Over(_) => {
                assert!(s.turn <= s.scenario.rules.last_turn);
                return (s, steps);
            }
            Pending::Orders(a) => a,
        };
        assert!(!asks.is_empty());
        let mut orders = BTreeMap::new();
        for a in &asks {
            let d = g.default_order(&s, &a.role);
            if let Err(p) = g.check_order(&s, &a.role, &d) {
                panic!("seed {seed}: default order for {} ({}) rejected: {p:?}\n{d}", a.role, a.kind);
            }
            let o = if nmr { d } else { g.policy_order(&s, &a.role, policy, &mut bots) };
            if let Err(p) = g.check_order(&s, &a.role, &o) {
                panic!("seed {seed}: bot order for {} ({}) rejected: {p:?}\n{o}", a.role, a.kind);
            }
            orders.insert(a.role.clone(), o);
        }
        let seed32 = [seed ^ (steps as u8), steps as u8, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7];
        let mut c1 = Ctx::new(seed32);
        let mut c2 = Ctx::new(seed32);
        let n1 = resolve_orders(&g, &s, &orders, &mut c1).expect("resolves");
        let n2 = resolve_orders(&g, &s, &orders, &mut c2).expect("resolves");
        assert_eq!(n1, n2, "deterministic state");
        assert_eq!(c1.events(), c2.events(), "deterministic events");
        c1.events().iter().for_each(|e| assert_counts_agree(&e.text));
        assert!(n1.turn >= s.turn);
        s = n1;
    }
    panic!("seed {seed}: the game did not end within 400 steps");
}

#[test]
fn the_report_shows_roads_one_corps_a_line_and_the_turn_once() {
    let g = GettysburgCampaign;
    let env = crate::report::environment(None).expect("templates");
    let tmpl = env.get_template("games/gettysburg-campaign.txt").expect("template exists");
    let v = g.view(&fresh(), "confederate");
    let text = tmpl.render(minijinja::context! { view => minijinja::Value::from(minijinja::value::Serde(&v)), wording => crate::report::WORDING, outcome => () }).unwrap();
    assert!(text.starts_with("Turn 1 of 9, round 1: command phase. You play the Confederate side."), "{text}");
    assert!(text.contains("  Washington [3] roads to Fredericksburg, Manassas, Leesburg, Frederick, Baltimore\n    Union I Corps"), "{text}");
    assert!(text.contains("each round you play 1 card face down"), "{text}");
    assert!(!text.contains("WAITING FOR"), "the core report says whom it awaits: {text}");
}

#[test]
fn random_play_with_bots_is_legal_deterministic_and_ends() {
    let mut wins = [0, 0];
    for seed in 0..40u8 {
        let (s, _) = random_game(seed, false, false);
        match s.outcome.as_ref().and_then(|o| o.winner.as_deref()) {
            Some("confederate") => wins[0] += 1,
            Some("union") => wins[1] += 1,
            w => panic!("unexpected winner {w:?}"),
        }
    }
    assert!(wins[0] > 0 && wins[1] > 0, "both sides win some games: {wins:?}");
}

#[test]
fn random_play_with_optional_fire() {
    for seed in 0..25u8 {
        random_game(seed, true, false);
    }
}

#[test]
fn the_naive_policy_stays_legal() {
    for seed in 0..10u8 {
        random_game_of(seed, seed % 2 == 0, false, "naive");
    }
}

#[test]
fn nmr_default_orders_play_a_whole_game() {
    let (s, steps) = random_game(1, false, true);
    assert_eq!(s.turn, 9);
    assert_eq!(steps, 9, "with every commanded corps staying, each turn is one command step");
}

#[test]
fn opponent_secrets_do_not_change_a_view_during_random_play() {
    let g = GettysburgCampaign;
    let mut s = g.setup(g.default_scenario(), &BTreeMap::new()).unwrap();
    let mut bots = Ctx::new([9; 32]);
    for steps in 0..200u8 {
        for side in Side::ALL {
            let mut other = s.clone();
            *other.standing.get_mut(side.other()) = Default::default();
            other.this_round.plans.get_mut(side.other()).clear();
            assert_eq!(g.view(&other, side.role()), g.view(&s, side.role()));
        }
        let Pending::Orders(asks) = g.pending(&s) else { return };
        let orders = asks.iter().map(|a| (a.role.clone(), g.bot_order(&s, &a.role, &mut bots))).collect();
        s = resolve_orders(&g, &s, &orders, &mut Ctx::new([steps; 32])).unwrap();
    }
}


/// The naive player's order for `role`, with standing orders that answer nothing (so that it is
/// asked the questions they would answer).
fn answering_nothing(g: &GettysburgCampaign, s: &State, role: &str, ctx: &mut Ctx) -> crate::game::Orders {
    let mut o = g.policy_order(s, role, "naive", ctx);
    let mut text = String::from("defend = []\nvacate = {}\nretreat = {}\ncasualties = []\n");
    if role == "confederate" {
        text.push_str("combat_order = []\n");
    }
    if s.optional_fire {
        text.push_str("optional_fire = \"ask\"\n");
    }
    o.insert("standing".into(), toml::Value::Table(text.parse().unwrap()));
    o
}

/// `policy_checked` of `role` at `s`, checked to be what checking the written order (drawing
/// from the same stream, seeded by `seed` and `step`) gives, drawing as many choices.
fn built_as_written(s: &State, role: &str, policy: &str, seed: u8, step: u32) -> orders::Parsed {
    let g = GettysburgCampaign;
    let bots = || Ctx::quiet(crate::commit::step_seed(role, step as u64, &[seed; 32], std::iter::empty()));
    let (mut written, mut built) = (bots(), bots());
    let o = g.policy_order(s, role, policy, &mut written);
    let checked = g.check_order(s, role, &o).unwrap_or_else(|p| panic!("seed {seed} step {step}: {p:?}\n{o}"));
    let direct = g.policy_checked(s, role, policy, &mut built).unwrap_or_else(|p| panic!("seed {seed} step {step}: {p:?}"));
    assert_eq!(direct, checked, "seed {seed} step {step} {role}: built differs from written\n{o}");
    assert_eq!(built.below(1 << 30), written.below(1 << 30), "seed {seed} step {step} {role}: as many choices drawn");
    checked
}

/// `policy_checked` hands back exactly what checking the written order gives, drawing the same
/// choices, at every step of played games (both policies, with and without the optional rule).
/// In some games one side plays the naive player's moves and standing orders that answer nothing:
/// then the questions those would answer are asked too.
#[test]
fn the_built_in_order_built_checked_is_the_written_order_checked() {
    let g = GettysburgCampaign;
    let (mut asked, mut standing_given) = (BTreeMap::<&str, usize>::new(), 0);
    for seed in 0..48u8 {
        let (optional, nmr) = (seed % 2 == 1, ["", "union", "confederate"][seed as usize % 3]);
        let policy = if seed % 8 == 7 { "naive" } else { "sensible" };
        let mut options = BTreeMap::new();
        options.insert("optional-fire".to_string(), optional.to_string());
        let mut s = g.setup(g.default_scenario(), &options).unwrap();
        for step in 0..400u32 {
            let Ok(roles) = g.pending(&s).roles() else { break };
            let mut orders = BTreeMap::new();
            for role in roles {
                let checked = built_as_written(&s, &role, policy, seed, step);
                *asked.entry(kind(&s)).or_default() += 1;
                standing_given += checked.standing_given as usize;
                let mut bots = Ctx::quiet([seed ^ 0x55; 32]);
                let play = if role == nmr { g.check_order(&s, &role, &answering_nothing(&g, &s, &role, &mut bots)).unwrap() } else { checked };
                orders.insert(role, play);
            }
            s = g.resolve(&s, orders, &mut Ctx::quiet([step as u8 ^ seed; 32])).unwrap();
        }
        assert!(g.pending(&s).roles().is_err(), "seed {seed}: the game ends");
    }
    // Standing orders were given as well as not, and most kinds of question came up (the others
    // are in the test below).
    assert!(asked.len() >= 5 && standing_given > 0, "{asked:?}, standing given {standing_given}");
}

/// As above, for the questions random play seldom asks: a move (a commanded corps without a
/// plan) and a casualty of either side.
#[test]
fn the_built_in_order_built_checked_answers_moves_and_casualties_as_written() {
    let s = fresh();
    let (s, _) = step(&s, &[("confederate", "cards = [\"Longstreet\"]"), ("union", "cards = [\"Reynolds\", \"Hancock\"]\nmoves = { I = \"stay\", II = \"stay\" }")], &[6, 1]);
    assert_eq!(kind(&s), "move");
    for policy in ["sensible", "naive"] {
        assert!(!built_as_written(&s, "confederate", policy, 1, 0).plans.is_empty());
    }
    let mut s = board(&[("II", "Hagerstown"), ("III", "Hagerstown")], &[("VI", "Gettysburg"), ("V", "Gettysburg"), ("I", "Gettysburg"), ("II", "Gettysburg")]);
    advancing(&mut s, Side::Confederate, "II", "Hagerstown", "Gettysburg");
    advancing(&mut s, Side::Confederate, "III", "Hagerstown", "Gettysburg");
    combat(&mut s, &[6, 1, 1, 1, 1, 1]);
    assert_eq!(kind(&s), "casualty");
    built_as_written(&s, "confederate", "sensible", 2, 0);
    let mut s = board(&[("I", "Carlisle"), ("II", "Chambersburg")], &[("XI", "Gettysburg"), ("XII", "Gettysburg")]);
    advancing(&mut s, Side::Confederate, "I", "Carlisle", "Gettysburg");
    advancing(&mut s, Side::Confederate, "II", "Chambersburg", "Gettysburg");
    combat(&mut s, &[1, 1, 1, 1, 1]);
    assert_eq!(kind(&s), "casualty");
    built_as_written(&s, "union", "sensible", 3, 0);
}

/// Resolving a state given up (`resolve_owned`, what `pbem simulate` does: in place) gives the
/// same state as resolving from a copy (`resolve`), step after step of played games.
#[test]
fn a_state_resolved_in_place_is_the_state_resolved_from_a_copy() {
    let g = GettysburgCampaign;
    for seed in 0..8u8 {
        let mut options = BTreeMap::new();
        options.insert("optional-fire".to_string(), (seed % 2 == 1).to_string());
        let mut s = g.setup(g.default_scenario(), &options).unwrap();
        for step in 0..400u32 {
            let Ok(roles) = g.pending(&s).roles() else { break };
            let orders = || roles.iter().map(|r| (r.clone(), g.policy_checked(&s, r, "sensible", &mut Ctx::quiet([seed; 32])).unwrap())).collect::<BTreeMap<_, _>>();
            let dice = || Ctx::quiet([step as u8 ^ seed; 32]);
            let copied = g.resolve(&s, orders(), &mut dice()).unwrap();
            s = g.resolve_owned(s.clone(), orders(), &mut dice()).unwrap();
            assert_eq!(s, copied, "seed {seed} step {step}");
        }
        assert!(g.pending(&s).roles().is_err(), "seed {seed}: the game ends");
    }
}

/// `role`'s report after a record with no opening, on the state `s`, in a game of report wording
/// `wording` (`game.toml`'s `wording`, [`crate::report::WORDING`]).
fn report_in_wording(s: &State, role: &str, wording: u32) -> String {
    let gf: crate::model::GameFile = toml::from_str(&format!(
        "pbem = \"0\"\nwording = {wording}\nid = \"g\"\nrules = \"gettysburg-campaign\"\nhost_key = \"k\"\n\
         [[seat]]\nrole = \"confederate\"\nemail = \"c@x\"\nkey = \"k\"\n[[seat]]\nrole = \"union\"\nemail = \"u@x\"\nkey = \"k\"\n"
    ))
    .expect("game file");
    let rec: crate::model::Record = serde_json::from_str(r#"{"game": "g", "index": 1, "prev": null, "resolution": null, "state": "0", "opening": null, "outcome": null}"#).expect("record");
    let env = crate::report::environment(None).expect("templates");
    crate::report::render(&env, &GettysburgCampaign, &gf, &rec, &[], &crate::game::canonical(s), role).expect("report")
}

#[test]
fn s8_a_report_of_wording_1_says_moved_for_a_corps_whose_planned_moves_are_done() {
    // tester16 T16b-1: at the vacate-or-defend pause the mover's report listed its corps as
    // planned to "stay". Games of wording 0 keep that text (their reports are replayed).
    let paused = |moves: &str| {
        let s = board(&[("I", "Leesburg"), ("II", "Culpeper")], &[("XI", "Frederick")]);
        let orders = [("confederate", format!("cards = [\"Lee\"]\nlee = \"I\"\nmoves = {{ I = {moves} }}")), ("union", "cards = [\"Howard\"]\nmoves = { XI = \"stay\" }".to_string())];
        let (s, _) = step(&s, &[(orders[0].0, orders[0].1.as_str()), (orders[1].0, orders[1].1.as_str())], &[6, 1]);
        assert_eq!(kind(&s), "vacate-or-defend");
        (report_in_wording(&s, "confederate", 1), report_in_wording(&s, "confederate", 0))
    };
    for (moves, now_says, before_says) in [("\"Frederick\"", "moved", "stay"), ("[\"Frederick\", \"Hagerstown\"]", "moved, then Hagerstown", "Hagerstown")] {
        let (now, before) = paused(moves);
        assert!(now.contains(&format!("YOUR PLANNED MOVES THIS ROUND\n  I Corps (Longstreet): {now_says}\n\n")), "{now}");
        assert!(before.contains(&format!("YOUR PLANNED MOVES THIS ROUND\n  I Corps (Longstreet): {before_says}\n\n")), "{before}");
        assert_eq!(now.replace(now_says, before_says), before, "nothing else differs");
    }
}

/// §8 (tester t17b-1): while the enemy decides to vacate or defend the town a corps moves into,
/// the corps has not left its own town: reports of wording 3 say it is "moving into" the town
/// (those of wording 1 and 2 keep "moved": they are replayed), and both sides' pictures draw it on
/// its road, advancing on the town, not standing at home.
#[test]
fn s8_a_corps_whose_entry_waits_for_the_enemys_decision_is_moving_into_the_town() {
    let g = GettysburgCampaign;
    let s = board(&[("I", "Leesburg"), ("II", "Culpeper")], &[("XI", "Frederick")]);
    let orders = [("confederate", "cards = [\"Lee\"]\nlee = \"I\"\nmoves = { I = [\"Frederick\", \"Hagerstown\"] }"), ("union", "cards = [\"Howard\"]\nmoves = { XI = \"stay\" }")];
    let (s, _) = step(&s, &orders, &[6, 1]);
    assert_eq!(kind(&s), "vacate-or-defend");
    assert_eq!(s.corps[idx(&s, Side::Confederate, "I")].at, town("Leesburg"), "still at home while the Union decides");
    let line = |w: u32| report_in_wording(&s, "confederate", w).lines().skip_while(|l| *l != "YOUR PLANNED MOVES THIS ROUND").nth(1).map(str::to_string);
    assert_eq!(line(3).as_deref(), Some("  I Corps (Longstreet): moving into Frederick (the Union player decides: vacate or defend), then Hagerstown"));
    assert_eq!(line(2).as_deref(), Some("  I Corps (Longstreet): moved, then Hagerstown"));
    for seat in ["confederate", "union"] {
        let svg = g.picture(&s, Some(seat), false).expect("a picture");
        let mut v = crate::picture::view_for(&g, &s, Some(seat), false).expect("a view");
        view::show_entering(&mut v, &s);
        v["planned_moves"] = serde_json::json!(view::plan_lines_now(&s, side_of(seat).unwrap()));
        let i = idx(&s, Side::Confederate, "I");
        assert_eq!((v["corps"][i]["town"].clone(), v["corps"][i]["advancing"].clone()), (serde_json::Value::Null, serde_json::json!({ "from": "Leesburg", "to": "Frederick" })), "{seat}");
        assert!(svg == picture::draw(&v), "{seat}: the picture draws that view");
    }
    assert!(g.picture(&s, Some("confederate"), false).unwrap().contains(">I Corps (Longstreet): moving into Frederick (the Union player decides: vacate or defend), then Hagerstown</text>"));
}

/// tester16 T16c-12: in a round paused after the Union corps moved (the Confederate player is
/// asked where his corps goes), the Union picture says the corps "moved", not "stay"; once the
/// game is over it lists no planned moves.
#[test]
fn the_picture_says_moved_for_a_corps_that_carried_out_its_plan() {
    let g = GettysburgCampaign;
    let s = board(&[("I", "Hagerstown")], &[("I", "Westminster")]);
    let (paused, _) = step(&s, &[("confederate", "cards = [\"Longstreet\"]"), ("union", "cards = [\"Reynolds\"]\nmoves = { I = \"Frederick\" }")], &[1, 6]);
    assert_eq!(kind(&paused), "move");
    assert_eq!(paused.corps[idx(&paused, Side::Union, "I")].at, town("Frederick"));
    assert_eq!(view::plan_lines(&paused, Side::Union), vec!["I Corps (Reynolds): moved".to_string()]);
    let svg = g.picture(&paused, Some("union"), false).expect("a picture");
    assert!(svg.contains(">I Corps (Reynolds): moved</text>") && !svg.contains(": stay<"), "{svg}");
    let mut over = paused.clone();
    over.outcome = Some(crate::game::Outcome { winner: None, summary: "drawn".into() });
    assert!(view::plan_lines(&over, Side::Union).is_empty());
    assert!(!g.picture(&over, Some("union"), false).expect("a picture").contains("planned moves"));
    // A game its players or the host ended (its record, not its state, says so): the picture is
    // headed as over and shows no plans (tester21 T21a-2).
    let ended = g.picture(&paused, Some("union"), true).expect("a picture");
    assert!(ended.contains(">The game is over") && !ended.contains("movement phase") && !ended.contains("planned moves"), "{ended}");
}

/// tester t17b-4: labels and counters keep off the roads where they can, so that the map shows
/// which towns a road joins: on the opening map (seven Union corps at Washington, three
/// Confederate ones at Fredericksburg) under 40 pixels of road in all lie under a label or a
/// counter (113 with roads weighing nothing: the rows of counters lay along whole roads).
#[test]
fn counters_and_labels_keep_off_the_roads() {
    let g = GettysburgCampaign;
    let num = |tag: &str, k: &str| -> f64 {
        let at = tag.find(&format!(" {k}=\"")).expect(k) + k.len() + 3;
        tag[at..].split('"').next().unwrap().parse().unwrap()
    };
    let covered = |s: &State| -> usize {
        let svg = g.picture(s, Some("union"), false).unwrap();
        let tags: Vec<&str> = svg.split('<').collect();
        let boxes: Vec<(f64, f64, f64, f64)> = tags.iter().filter(|t| t.starts_with("rect ") && !t.contains("width=\"1")).map(|t| (num(t, "x"), num(t, "y"), num(t, "width"), num(t, "height"))).collect();
        let roads: Vec<(f64, f64, f64, f64)> = tags.iter().filter(|t| t.starts_with("line ") && t.contains("stroke-width=\"3\"")).map(|t| (num(t, "x1"), num(t, "y1"), num(t, "x2"), num(t, "y2"))).collect();
        let mut n = 0;
        for (x1, y1, x2, y2) in roads {
            let len = (x2 - x1).hypot(y2 - y1) as usize;
            // Past the towns' circles (a box never lies on a town).
            n += (12..len.saturating_sub(12)).filter(|&i| {
                let f = i as f64 / len as f64;
                let (x, y) = (x1 + (x2 - x1) * f, y1 + (y2 - y1) * f);
                boxes.iter().any(|&(bx, by, bw, bh)| bw < 600.0 && x > bx && x < bx + bw && y > by && y < by + bh)
            }).count();
        }
        n
    };
    let opening = covered(&fresh());
    assert!(opening < 40, "{opening} pixels of road under labels and counters");
}
