//! Rule tests for Throw Down That Flag, one or more per rule (named for the rulebook section),
//! with scripted draws so every pull is decided by the test.

use std::collections::BTreeMap;

use super::engine::{self, Attack, AttackKind, Plan, Tally};
use super::hex::Space;
use super::state::{Side, State, Token};
use super::*;
use crate::game::{Game, Pending, resolve_orders};

/// The texts a [`Ctx::scripted`] logged (rule tests script every draw), in order.
fn texts(c: &Ctx) -> Vec<String> {
    c.events().iter().map(|e| e.text.clone()).collect()
}

/// True when some text `c` logged contains `part`.
fn said(c: &Ctx, part: &str) -> bool {
    c.events().iter().any(|e| e.text.contains(part))
}

fn sp(n: &str) -> Space {
    Space::parse(n).unwrap()
}

fn july2() -> State {
    initial_state(Scenario::parse(JULY_2).unwrap(), None)
}

/// A position on the July 2 map: only the listed companies on the map (letter, space, Str).
fn board(union: &[(&str, &str, u32)], confederate: &[(&str, &str, u32)]) -> State {
    let mut s = july2();
    for c in &mut s.companies {
        c.at = None;
        c.colors = false;
    }
    for (side, list) in [(Side::Union, union), (Side::Confederate, confederate)] {
        for (k, (l, at, str)) in list.iter().enumerate() {
            let i = s.companies.iter().position(|c| c.side == side && c.letter == *l).unwrap();
            s.companies[i].at = Some(sp(at));
            s.companies[i].str = *str;
            s.companies[i].start_str = *str;
            s.companies[i].colors = k == 0;
        }
    }
    s
}

fn idx(s: &State, side: Side, l: &str) -> usize {
    s.companies.iter().position(|c| c.side == side && c.letter == l).unwrap()
}

fn tally(us: u32, uf: u32, cs: u32, cf: u32) -> Tally {
    Tally { union_success: us, union_flame: uf, confederate_success: cs, confederate_flame: cf }
}

fn orders(text: &str) -> BTreeMap<String, Orders> {
    let t: Orders = toml::from_str(text).unwrap();
    BTreeMap::from([("union".to_string(), t)])
}

// ---------------------------------------------------------------------------------------------
// Player Activations: Shoot

#[test]
fn shoot_hits_when_successes_equal_the_distance() {
    let mut s = board(&[("A", "E2", 3)], &[("B", "E4", 3)]);
    let (a, b) = (idx(&s, Side::Union, "A"), idx(&s, Side::Confederate, "B"));
    assert_eq!(sp("E2").distance(sp("E4")), 2);
    let mut t = Ctx::scripted(&[]);
    engine::apply_shot(&mut s, &mut t, a, b, 2, tally(2, 0, 1, 0));
    assert_eq!(s.companies[b].str, 2, "two successes at distance 2 hit");
    assert_eq!(s.companies[a].str, 3, "one Confederate success at distance 2 does not");
    engine::apply_shot(&mut s, &mut t, a, b, 2, tally(1, 0, 2, 0));
    assert_eq!(s.companies[b].str, 2, "one success at distance 2 misses");
    assert_eq!(s.companies[a].str, 2, "return fire hits with successes equal to the distance");
}

#[test]
fn shoot_both_sides_overheat_in_one_pull_hit_or_not() {
    let mut s = board(&[("A", "E2", 3)], &[("B", "E5", 3)]);
    let (a, b) = (idx(&s, Side::Union, "A"), idx(&s, Side::Confederate, "B"));
    let mut t = Ctx::scripted(&[]);
    engine::apply_shot(&mut s, &mut t, a, b, 3, tally(0, 2, 0, 3));
    assert!(!s.companies[a].gun && !s.companies[b].gun);
    assert_eq!((s.companies[a].str, s.companies[b].str), (3, 3), "neither shot hit");
    // Without a gun marker the company cannot shoot for the rest of the day.
    assert!(engine::check_shoot(&s, a, sp("E2"), b).is_err());
}

#[test]
fn shoot_a_company_without_gun_marker_ignores_confederate_results() {
    let mut s = board(&[("A", "E2", 3)], &[("B", "E4", 3)]);
    let (a, b) = (idx(&s, Side::Union, "A"), idx(&s, Side::Confederate, "B"));
    s.companies[b].gun = false;
    let mut t = Ctx::scripted(&[]);
    engine::apply_shot(&mut s, &mut t, a, b, 2, tally(0, 0, 5, 4));
    assert_eq!(s.companies[a].str, 3, "no return fire");
    assert!(s.companies[a].gun, "a Confederate flame cannot overheat the shooter's gun");
    assert!(said(&t, "no gun marker"));
}

#[test]
fn shoot_is_forbidden_next_to_an_enemy_and_with_no_gun() {
    let s = board(&[("A", "E2", 3)], &[("B", "E3", 3), ("C", "E6", 3)]);
    let (a, c) = (idx(&s, Side::Union, "A"), idx(&s, Side::Confederate, "C"));
    let plan = Plan { attack: Some(Attack { kind: AttackKind::Shoot, target: c, tokens: 5 }), ..Plan::default() };
    assert!(engine::check_plan(&s, a, &plan).is_err(), "in melee a company cannot shoot at anyone");
}

// ---------------------------------------------------------------------------------------------
// Player Activations: Melee

#[test]
fn melee_against_str_2_needs_two_successes() {
    let mut s = board(&[("A", "E2", 3)], &[("B", "E3", 2)]);
    let (a, b) = (idx(&s, Side::Union, "A"), idx(&s, Side::Confederate, "B"));
    let mut t = Ctx::scripted(&[]);
    engine::apply_melee(&mut s, &mut t, a, b, tally(1, 3, 2, 3));
    assert_eq!(s.companies[b].str, 2, "one success does not hit Str 2");
    assert_eq!(s.companies[a].str, 3, "two Confederate successes do not hit Str 3");
    assert!(s.companies[a].gun && s.companies[b].gun, "flames mean nothing in melee (interpretation)");
    engine::apply_melee(&mut s, &mut t, a, b, tally(2, 0, 3, 0));
    assert_eq!(s.companies[b].str, 1, "two successes hit Str 2");
    assert_eq!(s.companies[a].str, 2, "three Confederate successes counter-hit Str 3");
}

#[test]
fn melee_taking_the_colors_company_captures_the_colors() {
    let mut s = board(&[("A", "E2", 3)], &[("B", "E3", 1), ("C", "G6", 2)]);
    let (a, b) = (idx(&s, Side::Union, "A"), idx(&s, Side::Confederate, "B"));
    assert!(s.companies[b].colors);
    engine::apply_melee(&mut s, &mut Ctx::scripted(&[]), a, b, tally(1, 0, 0, 0));
    assert!(s.colors_taken);
    assert_eq!(s.companies[b].at, None);
    assert_eq!(s.colors_of(Side::Confederate), None, "taken colors do not pass on");
}

#[test]
fn colors_lost_to_fire_pass_to_the_nearest_company() {
    let mut s = board(&[("A", "E2", 3)], &[("B", "E4", 1), ("C", "G6", 2), ("D", "F5", 2)]);
    let (a, b) = (idx(&s, Side::Union, "A"), idx(&s, Side::Confederate, "B"));
    engine::apply_shot(&mut s, &mut Ctx::scripted(&[]), a, b, 2, tally(2, 0, 0, 0));
    assert!(!s.colors_taken);
    assert_eq!(s.colors_of(Side::Confederate), Some(idx(&s, Side::Confederate, "D")));
}

// ---------------------------------------------------------------------------------------------
// Player Activations: Move

#[test]
fn move_passes_through_friends_but_not_enemies_and_never_ends_on_a_company() {
    let s = board(&[("A", "E2", 3), ("B", "E3", 3)], &[("C", "F2", 3)]);
    let a = idx(&s, Side::Union, "A");
    // E2 -> E3 (friend) -> E4: legal.
    assert!(engine::check_path(&s, a, sp("E2"), &[sp("E3"), sp("E4")]).is_ok());
    assert!(engine::check_path(&s, a, sp("E2"), &[sp("E3")]).is_err(), "ends on a friend");
    assert!(engine::check_path(&s, a, sp("E2"), &[sp("F2"), sp("G2")]).is_err(), "through an enemy");
    assert!(engine::check_path(&s, a, sp("E2"), &[sp("E4")]).is_err(), "not adjacent");
}

/// Player Activations, Move: a company "may move through a friendly company". The engine takes such
/// a path all along; the form of report wording 4 lists the spaces it can move through, those of
/// earlier wordings (replayed in their reports) only the free spaces, as if a friend blocked.
#[test]
fn the_activation_form_lists_moves_through_a_friend_from_wording_4() {
    let mut s = board(&[("A", "E2", 3), ("B", "E3", 3)], &[("C", "G6", 3)]);
    let a = idx(&s, Side::Union, "A");
    s.asking = Some(a);
    assert!(engine::check_path(&s, a, sp("E2"), &[sp("E3"), sp("E4")]).is_ok());
    let (now, before) = (forms::help(&s, 4), forms::help(&s, 3));
    let first = |h: &[String]| h.iter().find(|l| l.starts_with("Spaces it can move to first: ")).cloned();
    assert!(first(&now).is_some_and(|l| !l.contains("E3")) && first(&now) == first(&before), "{now:?}");
    assert!(now.contains(&"Through a company of yours (a move of two spaces, not ending there): E3".to_string()), "{now:?}");
    assert!(!before.iter().any(|l| l.starts_with("Through")), "{before:?}");
}

#[test]
fn move_that_ends_back_on_its_starting_space_is_a_pass() {
    let s = board(&[("A", "E2", 3), ("B", "E3", 3)], &[("C", "G6", 3)]);
    let a = idx(&s, Side::Union, "A");
    let e = engine::check_path(&s, a, sp("E2"), &[sp("E3"), sp("E2")]).unwrap_err();
    assert!(e.contains("pass"), "{e}");
    // A path naming the starting space itself is told plainly (not "E2 is not next to E2").
    let e = engine::check_path(&s, a, sp("E2"), &[sp("E2")]).unwrap_err();
    assert!(e.contains("stays on E2"), "{e}");
}

#[test]
fn colors_passing_name_the_side_of_the_heir() {
    let mut s = board(&[("A", "E2", 3)], &[("B", "E4", 1), ("C", "G6", 2), ("D", "F5", 2)]);
    let (a, b) = (idx(&s, Side::Union, "A"), idx(&s, Side::Confederate, "B"));
    let mut t = Ctx::scripted(&[]);
    engine::apply_shot(&mut s, &mut t, a, b, 2, tally(2, 0, 0, 0));
    assert!(said(&t, "The Confederate colors pass to Confederate company D."), "{:?}", texts(&t));
}

#[test]
fn one_breakthrough_is_told_in_the_singular() {
    let mut s = board(&[("A", "A5", 3)], &[("C", "E3", 3)]);
    std::sync::Arc::make_mut(&mut s.scenario).rules.breakthrough = 1;
    let c = idx(&s, Side::Confederate, "C");
    engine::confederate_activation(&mut s, &mut Ctx::scripted(&[]), c);
    let (won, text) = engine::day_over(&s).expect("over");
    assert!(!won);
    assert!(text.contains("1 Confederate company broke through"), "{text}");
}

// ---------------------------------------------------------------------------------------------
// Round Structure

#[test]
fn round_letter_with_no_company_on_one_side_skips_that_side() {
    // Letter C: the 11th Alabama has a company C, the First Minnesota has none on July 2.
    let mut s = july2();
    s.standing.insert("all".into(), state::Standing { movement: Some(state::MoveRule::Hold), ..Default::default() });
    let c = s.bag.iter().position(|t| *t == Token::Letter("C".into())).unwrap() as u32;
    // Pull letter C, First Minnesota face (0) first; then stop on an unscripted draw.
    let mut t = Ctx::scripted(&[c, 0]);
    let before = s.companies[idx(&s, Side::Confederate, "C")].at;
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| engine::run(&mut s, &mut t, None)));
    assert!(r.is_err(), "ran out of scripted draws at the next pull");
    assert!(said(&t, "The First Minnesota side has no company for the letter C token"));
    assert_ne!(s.companies[idx(&s, Side::Confederate, "C")].at, before, "the Confederate company C advanced");
}

#[test]
fn round_token_removed_when_neither_side_has_the_letter() {
    let mut s = july2();
    s.standing.insert("all".into(), state::Standing { movement: Some(state::MoveRule::Hold), ..Default::default() });
    let c = idx(&s, Side::Confederate, "C");
    s.companies[c].at = None; // company C of the 11th Alabama is gone; the First Minnesota has none
    let k = s.bag.iter().position(|t| *t == Token::Letter("C".into())).unwrap() as u32;
    let mut t = Ctx::scripted(&[k, 1]);
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| engine::run(&mut s, &mut t, None)));
    assert_eq!(s.removed, vec![Token::Letter("C".into())]);
    assert!(!s.letters_row.contains(&"C".to_string()));
    assert!(!s.bag.contains(&Token::Letter("C".into())));
}

#[test]
fn round_colors_activate_three_times_then_the_bag_resets() {
    let mut s = july2();
    s.standing.insert("all".into(), state::Standing { movement: Some(state::MoveRule::Hold), ..Default::default() });
    let n = s.bag.len() as u32;
    // The colors tokens sit at the end of the sorted bag: pull the last token three times.
    let mut t = Ctx::scripted(&[n - 1, 1, n - 2, 1, n - 3, 1]);
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| engine::run(&mut s, &mut t, None)));
    let colors_moves = texts(&t).iter().filter(|e| e.contains("Confederate company C advances")).count();
    assert_eq!(colors_moves, 3, "the Confederate colors company activated three times: {:?}", texts(&t));
    assert_eq!(texts(&t).iter().filter(|e| e.contains("First Minnesota company H passes")).count(), 3);
    assert!(said(&t, "the bag is reset"));
    assert_eq!(s.round, 2);
    assert_eq!(s.bag.len() as u32, n, "every token is back");
    assert_eq!(s.colors_row, 0);
}

#[test]
fn round_face_decides_who_activates_first() {
    let mut s = july2();
    s.standing.insert("all".into(), state::Standing { movement: Some(state::MoveRule::Hold), ..Default::default() });
    let a = s.bag.iter().position(|t| *t == Token::Letter("A".into())).unwrap() as u32;
    let mut t = Ctx::scripted(&[a, 1]);
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| engine::run(&mut s, &mut t, None)));
    let conf = texts(&t).iter().position(|e| e.contains("Confederate company A advances")).unwrap();
    let union = texts(&t).iter().position(|e| e.contains("First Minnesota company A passes")).unwrap();
    assert!(conf < union);
    assert_eq!(s.letters_row, vec!["A".to_string()]);
}

// ---------------------------------------------------------------------------------------------
// Confederate Activations

#[test]
fn confederate_paths_around_a_first_minnesota_company() {
    // A Confederate company at E4 heading for row 1; First Minnesota companies wall off E3 and D3
    // (the spaces toward the ridge), so it must step around: it never enters or passes them.
    let s = board(&[("A", "D3", 3), ("B", "E3", 3)], &[("C", "E4", 3)]);
    let c = idx(&s, Side::Confederate, "C");
    let to = engine::confederate_destination(&s, c).unwrap();
    assert!(to != sp("D3") && to != sp("E3"));
    assert_eq!(to, sp("E2"), "the shortest way round, through the open F3: {}", to.name());
    // Cut off on every side toward the ridge, it holds rather than step back.
    let s = board(&[("A", "E3", 3), ("B", "F3", 3), ("D", "D4", 3), ("E", "F4", 3), ("G", "E5", 3), ("H", "F5", 3)], &[("C", "E4", 3)]);
    let c = idx(&s, Side::Confederate, "C");
    assert_eq!(engine::confederate_destination(&s, c).unwrap(), sp("E4"));
}

#[test]
fn confederate_passes_through_but_does_not_end_on_a_confederate() {
    let s = board(&[("A", "A2", 3)], &[("C", "E4", 3), ("B", "E3", 3)]);
    let c = idx(&s, Side::Confederate, "C");
    let to = engine::confederate_destination(&s, c).unwrap();
    assert_ne!(to, sp("E3"));
    assert_eq!(to.row, 1, "two spaces forward, through its friend: {}", to.name());
}

#[test]
fn confederate_breaks_through_on_the_objective() {
    let mut s = board(&[("A", "A5", 3)], &[("C", "E3", 3)]);
    let c = idx(&s, Side::Confederate, "C");
    let mut t = Ctx::scripted(&[]);
    engine::confederate_activation(&mut s, &mut t, c);
    assert!(s.companies[c].broke_through && s.companies[c].at.is_none());
    assert_eq!(s.breakthroughs(), 1);
}

#[test]
fn the_report_follows_the_confederate_colors_off_the_field() {
    // C holds the colors (the first listed); once it breaks through, they cannot be taken.
    let mut s = board(&[("A", "A5", 3)], &[("C", "E3", 3), ("B", "G6", 2)]);
    assert_eq!(super::view::view(&s)["enemy_colors"], "company C at E3");
    let c = idx(&s, Side::Confederate, "C");
    let mut t = Ctx::scripted(&[]);
    engine::confederate_activation(&mut s, &mut t, c);
    assert!(s.companies[c].broke_through);
    assert!(super::view::view(&s)["enemy_colors"].is_null());
}

// ---------------------------------------------------------------------------------------------
// Orders by mail: standing orders and the ask-when-unanswered loop

#[test]
fn standing_orders_answer_and_the_engine_asks_only_when_they_do_not() {
    let g = ThrowDownThatFlag;
    let s = july2();
    assert!(matches!(g.pending(&s), Pending::Orders(a) if a[0].kind == "standing"));
    // Standing orders for every company except H: H is asked the first time it activates.
    let mut text = String::new();
    for l in ["A", "B", "D", "E", "G", "I", "K"] {
        text.push_str(&format!("[standing.{l}]\nmove = \"hold\"\n"));
    }
    let o = orders(&text);
    let mut ctx = Ctx::new([3; 32]);
    let s1 = resolve_orders(&g, &s, &o, &mut ctx).unwrap();
    let Pending::Orders(asks) = g.pending(&s1) else { panic!("over") };
    assert_eq!(asks[0].kind, "activation");
    assert_eq!(s1.companies[s1.asking.unwrap()].letter, "H", "only H lacks an order that answers");
    // A direct answer is used for H, and play runs on.
    let s2 = resolve_orders(&g, &s1, &orders("action = \"move\"\npath = [\"F3\"]"), &mut ctx).unwrap();
    assert!(s2.companies[idx(&s2, Side::Union, "H")].at.is_some());
    assert!(ctx.events().iter().any(|e| e.text.contains("First Minnesota company H moves from F2 to F3")));
}

#[test]
fn standing_order_ask_leaves_one_company_out_of_all() {
    let g = ThrowDownThatFlag;
    let o = orders("[standing.all]\nmove = \"hold\"\n[standing.H]\nmove = \"ask\"\n");
    let s1 = resolve_orders(&g, &july2(), &o, &mut Ctx::new([3; 32])).unwrap();
    assert_eq!(s1.companies[s1.asking.expect("asked")].letter, "H");
    // An order that gives no action while H's standing order asks is refused, naming `action`.
    let probs = g.check_order(&s1, "union", &Orders::new()).unwrap_err();
    assert_eq!(probs[0].field, "action");
}

#[test]
fn activation_form_does_not_copy_the_standing_orders() {
    // The signed form is published with the order: it points to the report for the standing
    // orders instead of copying the player's state into the signed text.
    let g = ThrowDownThatFlag;
    let o = orders("[standing.all]\nmove = \"hold\"\nshoot = 5\n[standing.H]\nmove = \"ask\"\n");
    let s1 = resolve_orders(&g, &july2(), &o, &mut Ctx::new([3; 32])).unwrap();
    assert!(s1.asking.is_some());
    let Pending::Orders(asks) = g.pending(&s1) else { panic!("over") };
    let body = toml::to_string(&g.default_order(&s1, "union")).unwrap();
    let form = format!("{}\n{}\n{body}", asks[0].prompt, g.form_help(&s1, "union", crate::report::WORDING).join("\n"));
    for st in s1.standing.values() {
        let text = orders::standing_text(st);
        assert!(!form.contains(&text), "the form copies the standing order \"{text}\":\n{form}");
    }
    assert!(form.contains("Your standing orders are listed in your report"), "{form}");
}

#[test]
fn standing_orders_letters_are_case_insensitive_and_not_given_twice() {
    let g = ThrowDownThatFlag;
    let probs = g.check_order(&july2(), "union", &toml::from_str("standing = {A = {move = \"hold\"}, a = {move = \"ask\"}}").unwrap()).unwrap_err();
    assert!(probs.iter().any(|p| p.message.contains("twice")), "{probs:?}");
    let o = orders("[standing.ALL]\nmove = \"hold\"\n");
    let s1 = resolve_orders(&g, &july2(), &o, &mut Ctx::new([3; 32])).unwrap();
    assert!(s1.standing.contains_key("all"), "{:?}", s1.standing.keys().collect::<Vec<_>>());
}

#[test]
fn standing_order_melee_and_shoot_combinations() {
    let mut s = board(&[("A", "E2", 3)], &[("B", "E4", 3)]);
    s.standing.insert("all".into(), state::Standing { melee: Some(8), shoot: Some(6), range: Some(2), movement: Some(state::MoveRule::Nearest) });
    let a = idx(&s, Side::Union, "A");
    let p = orders::standing_plan(&s, a).unwrap();
    assert_eq!(p.action(), "shoot", "distance 2 is within range");
    s.standing.get_mut("all").unwrap().range = Some(1);
    let p = orders::standing_plan(&s, a).unwrap();
    assert_eq!(p.action(), "move-melee", "one step puts it next to B: {p:?}");
    assert_eq!(p.attack.unwrap().tokens, 8);
}

#[test]
fn orders_are_checked_with_fields_named() {
    let g = ThrowDownThatFlag;
    let mut s = board(&[("A", "E2", 3)], &[("B", "E4", 3)]);
    s.asking = Some(idx(&s, Side::Union, "A"));
    let bad = |text: &str| g.check_order(&s, "union", &toml::from_str(text).unwrap()).unwrap_err()[0].field.clone();
    assert_eq!(bad("action = \"fly\""), "action");
    assert_eq!(bad("action = \"move\"\npath = [\"E4\"]"), "path");
    assert_eq!(bad("action = \"shoot\"\ntarget = \"B\"\ntokens = 11"), "tokens");
    assert_eq!(bad("action = \"melee\"\ntarget = \"B\"\ntokens = 5"), "target");
    assert_eq!(bad("colour = 1"), "colour");
    assert!(g.check_order(&s, "union", &toml::from_str("action = \"shoot-move\"\ntarget = \"b\"\ntokens = 4\npath = [\"D2\"]").unwrap()).is_ok());
    assert!(g.check_order(&s, "union", &g.default_order(&s, "union")).is_ok());
}

/// A wrong or missing target or tokens lists the choices, and a missing one says so; an unknown
/// standing letter lists the companies (tester16 T16c-7).
#[test]
fn order_problems_list_the_choices_and_say_what_is_missing() {
    let g = ThrowDownThatFlag;
    let mut s = board(&[("A", "E2", 3), ("D", "A1", 3)], &[("B", "E4", 3), ("D", "A6", 3)]);
    s.asking = Some(idx(&s, Side::Union, "A"));
    let said = |text: &str| {
        let p = &g.check_order(&s, "union", &toml::from_str(text).unwrap()).unwrap_err()[0];
        format!("{}: {}", p.field, p.message)
    };
    assert_eq!(said("action = \"shoot\"\ntarget = \"Z\"\ntokens = 4"), "target: the letter of a Confederate company on the map: B, D");
    assert_eq!(said("action = \"shoot\"\ntokens = 4"), "target: missing: the letter of a Confederate company on the map: B, D");
    assert_eq!(said("action = \"shoot\"\ntarget = \"B\""), "tokens: missing: tokens to pull, a whole number 1 to 10");
    assert_eq!(said("action = \"shoot\"\ntarget = \"B\"\ntokens = 0"), "tokens: tokens to pull, a whole number 1 to 10");
    assert_eq!(said("[standing.Z]\nmelee = 3"), "standing.Z: not a First Minnesota company letter (or `all`): A, B, D, E, G, H, I, K");
}

// ---------------------------------------------------------------------------------------------
// Scenarios and options

#[test]
fn scenario_option_and_campaign_carry_the_survivors() {
    let g = ThrowDownThatFlag;
    let opt = |k: &str, v: &str| BTreeMap::from([(k.to_string(), v.to_string())]);
    assert_eq!(g.setup(JULY_2, &BTreeMap::new()).unwrap().scenario.name, "july-2");
    assert_eq!(g.setup(JULY_3, &opt("scenario", "july-3")).unwrap().scenario.name, "july-3");
    assert!(g.setup(JULY_2, &opt("scenario", "july-3")).is_err(), "the day comes from the scenario, not the option");
    assert!(g.setup(JULY_2, &opt("scenario", "july-4")).is_err());
    assert!(g.setup(JULY_3, &opt("scenario", "july-2")).is_err(), "a --scenario file must match the option");
    let mut s = g.setup(JULY_2, &opt("campaign", "true")).unwrap();
    assert!(s.next.is_some());
    // End July 2 with company A at Str 1 and company B lost; July 3 starts with the survivors.
    let a = idx(&s, Side::Union, "A");
    s.companies[a].str = 1;
    let b = idx(&s, Side::Union, "B");
    s.companies[b].str = 0;
    s.companies[b].at = None;
    s.round = 5;
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| engine::run(&mut s, &mut Ctx::scripted(&[]), None)));
    assert_eq!(s.scenario.name, "july-3");
    assert_eq!(s.days.len(), 1);
    assert!(s.days[0].won);
    assert_eq!(s.companies[idx(&s, Side::Union, "A")].str, 1);
    assert!(!s.companies.iter().any(|c| c.side == Side::Union && c.letter == "B"), "B fell on July 2");
    assert_eq!(s.companies[idx(&s, Side::Union, "C")].str, 3, "company C joins fresh");
    // An unhurt July 2 company keeps its full Str (the July 3 file's Str 1 is for July 3 alone).
    assert_eq!(s.companies[idx(&s, Side::Union, "G")].str, 3, "G was not hurt on July 2");
}

#[test]
fn shipped_scenarios_parse() {
    for t in [JULY_2, JULY_3] {
        let s = Scenario::parse(t).unwrap();
        assert!(s.success_bag.total() >= s.rules.max_tokens);
    }
}

#[test]
fn bots_play_both_days_to_the_end() {
    for (name, text) in [("july-2", JULY_2), ("july-3", JULY_3)] {
        for policy in bot::POLICIES {
            for k in 0..3u8 {
                let s = initial_state(Scenario::parse(text).unwrap(), None);
                let p = crate::simulate::play_out(&ThrowDownThatFlag, s, policy, [k; 32]).unwrap();
                assert!(p.steps >= 1 && p.length >= 1, "{name} {policy}");
            }
        }
    }
}

#[test]
fn campaign_plays_july_2_then_july_3_in_one_game() {
    let g = ThrowDownThatFlag;
    let opts = BTreeMap::from([("campaign".to_string(), "true".to_string())]);
    for policy in bot::POLICIES {
        let s = g.setup(JULY_2, &opts).unwrap();
        let mut days = 0;
        for k in 0..2u8 {
            let p = crate::simulate::play_out(&g, s.clone(), policy, [k + 40; 32]).unwrap();
            assert!(p.steps >= 1);
            days += 1;
        }
        assert_eq!(days, 2);
    }
    // Whole-campaign outcome names both days when the regiment survives July 2.
    let mut s = g.setup(JULY_2, &opts).unwrap();
    s.round = 5;
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| engine::run(&mut s, &mut Ctx::scripted(&[]), None)));
    s.round = 5;
    engine::run(&mut s, &mut Ctx::scripted(&[]), None);
    let o = s.outcome.expect("over");
    assert!(o.summary.contains("july-2 won, july-3 won"), "{}", o.summary);
    assert_eq!(o.winner.as_deref(), Some("union"));
}

#[test]
fn a_scenario_file_of_ones_own_is_used_as_given() {
    let g = ThrowDownThatFlag;
    let mine = JULY_2.replace("rounds = 4 ", "rounds = 3 ");
    assert_ne!(mine, JULY_2);
    let s = g.setup(&mine, &BTreeMap::new()).unwrap();
    assert_eq!(s.scenario.rules.rounds, 3);
    let bad = JULY_2.replace("at = \"B2\"", "at = \"Z2\"");
    let e = g.setup(&bad, &BTreeMap::new()).unwrap_err().to_string();
    assert!(e.contains("union[0].at"), "{e}");
}

/// Standing orders merge entry by entry: a company's table overrides `all` field by field, a sent
/// table changes only the fields it gives, `"delete"` removes one field or a whole entry, `"off"`
/// switches an attack of `all` off for one company, and the report says exactly what changed.
#[test]
fn standing_orders_merge_field_by_field_and_say_what_changed() {
    let g = ThrowDownThatFlag;
    let mut s = july2();
    let run = |s: &State, text: &str| {
        let mut t = Ctx::scripted(&[]);
        let p = check(s, &orders(text)["union"]).unwrap();
        let mut after = s.clone();
        after.standing = p.standing;
        for l in p.changes {
            t.say(l);
        }
        (after, texts(&t))
    };
    let (s1, said) = run(&s, "[standing.all]\nmelee = 8\nshoot = 6\nmove = \"nearest\"\n");
    assert_eq!(said, ["Standing orders, all companies: new: melee 8 tokens, shoot 6 tokens, move nearest."]);
    // Company H's own table keeps all's melee and shoot: only its move differs.
    let (s2, said) = run(&s1, "[standing.H]\nmove = \"hold\"\n");
    assert_eq!(said, ["Standing orders, company H: new: move hold."]);
    let h = idx(&s2, Side::Union, "H");
    let eff = s2.standing_for(h).unwrap();
    assert_eq!((eff.melee, eff.shoot, eff.movement.clone()), (Some(8), Some(6), Some(state::MoveRule::Hold)));
    // A sent `all` changes only its shoot; a field deleted; an attack switched off for H.
    let (s3, said) = run(&s2, "[standing.all]\nshoot = 4\nmove = \"delete\"\n[standing.H]\nmelee = \"off\"\nrange = 3\n");
    assert_eq!(
        said,
        [
            "Standing orders, all companies: shoot 6 tokens -> 4 tokens, move deleted (it was nearest).",
            "Standing orders, company H: melee set to off, range set to 3."
        ]
    );
    assert_eq!(s3.standing["all"].melee, Some(8));
    let eff = s3.standing_for(h).unwrap();
    assert_eq!((eff.melee, eff.shoot, eff.range), (None, Some(4), Some(3)));
    // A whole entry deleted; a no-op said as such.
    let (s4, said) = run(&s3, "[standing]\nH = \"delete\"\n");
    assert_eq!(said, ["Standing orders, company H: deleted (it was melee off, range 3, move hold)."]);
    assert_eq!(s4.standing_for(h).unwrap().melee, Some(8));
    assert_eq!(run(&s4, "[standing.all]\nmelee = 8\n").1, ["Standing orders: no change."]);
    // An empty table would change nothing: refused, naming the way to delete.
    s = s4;
    let probs = g.check_order(&s, "union", &orders("[standing.all]\n")["union"]).unwrap_err();
    assert_eq!(probs[0].field, "standing.all");
    assert!(probs[0].message.contains("all = \"delete\""), "{probs:?}");
    // The report lists the company's order in force and which fields are its own.
    let (s5, _) = run(&s, "[standing.D]\nmove = \"E4\"\n");
    let lines = view::standing_lines(&s5).join("\n").replace('\n', " ");
    assert!(lines.contains("D: melee when adjacent with 8 tokens; shoot the nearest within 2 with 4 tokens; otherwise move to E4 (its own: move E4; the rest from all)"), "{lines}");
}

/// Player Activations, Shoot: a company next to an enemy company cannot shoot, so a standing shot
/// with `range = 1` could never be taken: it is refused, naming the field.
#[test]
fn a_standing_range_of_one_is_refused() {
    let probs = check(&july2(), &orders("[standing.A]\nshoot = 6\nrange = 1\n")["union"]).unwrap_err();
    assert_eq!(probs[0].field, "standing.A.range");
    assert!(probs[0].message.contains("1 can never shoot"), "{probs:?}");
    assert!(check(&july2(), &orders("[standing.A]\nshoot = 6\nrange = 2\n")["union"]).is_ok());
}

/// The short account of an activation: who acted on whose order, the pull (First
/// Minnesota:Confederate) and what came of it; the draws themselves read as sentences.
#[test]
fn an_activation_is_told_in_one_short_line() {
    let mut s = board(&[("A", "E2", 3)], &[("B", "E4", 3)]);
    let (a, b) = (idx(&s, Side::Union, "A"), idx(&s, Side::Confederate, "B"));
    let plan = Plan { attack: Some(Attack { kind: AttackKind::Shoot, target: b, tokens: 2 }), ..Plan::default() };
    let before = summary::Before::of(&s);
    // The bag's first tokens are First Minnesota successes.
    let mut t = Ctx::scripted(&[0, 0]);
    let tally = engine::execute(&mut s, &mut t, a, &plan);
    assert_eq!(
        summary::union(&before, &s, a, &plan, tally, "standing order", 3),
        "your A (standing order) shoots at Confederate B (distance 2), 2 tokens: successes 2:0, flames 0:0, a hit \
         (Confederate B down to Str 2)"
    );
    assert!(texts(&t).contains(&"Success bag, company A's shot, token 1 of 2: a First Minnesota success.".to_string()), "{:?}", texts(&t));
}

/// Player Activations, shoot then move: the short account's line of wording 4 says what the shot
/// did right after it, the target's loss before its colors passing, then the move (a tester read
/// "a hit, then moves to D2 (...)" as the move's doing, and "the colors pass to ..., B out of the
/// fight" backwards); wording 3 keeps its line (replayed).
#[test]
fn an_activation_line_tells_cause_before_effect_from_wording_4() {
    let line = |wording: u32| {
        let mut s = board(&[("A", "E2", 3)], &[("B", "E4", 1), ("C", "G6", 2), ("D", "F5", 2)]);
        let (a, b) = (idx(&s, Side::Union, "A"), idx(&s, Side::Confederate, "B"));
        let plan = Plan { attack: Some(Attack { kind: AttackKind::Shoot, target: b, tokens: 2 }), after: vec![sp("D2")], ..Plan::default() };
        let before = summary::Before::of(&s);
        let tally = engine::execute(&mut s, &mut Ctx::scripted(&[0, 0]), a, &plan);
        summary::union(&before, &s, a, &plan, tally, "your order", wording)
    };
    assert_eq!(
        line(4),
        "your A (your order) shoots at Confederate B (distance 2), 2 tokens: successes 2:0, flames 0:0, a hit \
         (Confederate B out of the fight, the Confederate colors pass to Confederate D), then moves to D2"
    );
    assert_eq!(
        line(3),
        "your A (your order) shoots at Confederate B (distance 2), 2 tokens: successes 2:0, flames 0:0, a hit, \
         then moves to D2 (Confederate B out of the fight, the Confederate colors pass to Confederate D)"
    );
}

/// Player Activations, a shot that misses: wording 4 says "a miss" (a tester read "no hit (your
/// H down to Str 2)" as the whole exchange's result), wording 3 keeps "no hit" (replayed).
#[test]
fn an_attack_that_misses_is_a_miss_from_wording_4() {
    let line = |script: &[u32], wording: u32| {
        let mut s = board(&[("A", "E2", 3)], &[("B", "E4", 2), ("C", "G6", 2)]);
        let (a, b) = (idx(&s, Side::Union, "A"), idx(&s, Side::Confederate, "B"));
        let plan = Plan { attack: Some(Attack { kind: AttackKind::Shoot, target: b, tokens: 2 }), ..Plan::default() };
        let before = summary::Before::of(&s);
        let tally = engine::execute(&mut s, &mut Ctx::scripted(script), a, &plan);
        summary::union(&before, &s, a, &plan, tally, "your order", wording)
    };
    // The first pull of two tokens (from the scripted draws) that does not hit.
    let miss = (0..8u32).flat_map(|x| (0..8u32).map(move |y| [x, y])).find(|d| line(d, 3).contains(", no hit")).expect("a pull that misses");
    let (now, then) = (line(&miss, 4), line(&miss, 3));
    assert!(now.contains(", a miss") && !now.contains("no hit"), "{now}");
    assert_eq!(now.replace(", a miss", ", no hit"), then, "only the word differs");
}

/// Campaign (pbem's, README "Throw Down That Flag orders"): from report wording 4 the short
/// account has a line of its own where July 3 begins (its rounds count from 1 again); wording 3
/// goes from July 2's result straight to July 3's round 1.
#[test]
fn the_short_account_marks_where_july_3_begins_from_wording_4() {
    let opts = BTreeMap::from([("campaign".to_string(), "true".to_string())]);
    let standing = "[standing.all]\nmove = \"hold\"\n";
    let lines = |wording: u32| {
        let mut s = ThrowDownThatFlag.setup(JULY_2, &opts).unwrap();
        s.round = 4;
        s.colors_row = 3;
        let step = resolve_orders(&ThrowDownThatFlag, &s, &orders(standing), &mut Ctx::new([7; 32]).worded(wording)).unwrap();
        step.summary
    };
    let begins = "The campaign's next day begins: July 3, 1863: Pickett's Charge and the colors of the 28th Virginia.";
    for (wording, marked) in [(4, true), (3, false)] {
        let l = lines(wording);
        let day = l.iter().position(|x| x.starts_with("july-2: ")).unwrap_or_else(|| panic!("{l:?}"));
        assert_eq!(l.get(day + 1).map(String::as_str) == Some(begins), marked, "wording {wording}: {l:?}");
        assert!(l[day + 1 + usize::from(marked)].starts_with("Round 1, "), "wording {wording}: {l:?}");
    }
}

#[test]
fn the_core_checks_the_asked_roles_and_their_orders_once_before_resolving() {
    use crate::game::{GameError, Outcome, check_all};
    let (g, s) = (ThrowDownThatFlag, july2());
    let ok = orders("");
    assert_eq!(check_all(&g, &s, &ok).map(|c| c.into_keys().collect::<Vec<_>>()), Ok(vec!["union".to_string()]));
    assert_eq!(check_all(&g, &s, &BTreeMap::new()).unwrap_err(), GameError::Missing { role: "union".into() });
    let mut extra = ok.clone();
    extra.insert("confederate".into(), Orders::new());
    assert_eq!(check_all(&g, &s, &extra).unwrap_err(), GameError::NotAsked { role: "confederate".into() });
    let e = check_all(&g, &s, &orders("action = \"pass\"")).unwrap_err();
    assert!(matches!(&e, GameError::Orders { role, field, .. } if role == "union" && field == "action"), "{e}");
    let mut over = s.clone();
    over.outcome = Some(Outcome { winner: None, summary: "over".into() });
    assert_eq!(check_all(&g, &over, &ok).unwrap_err(), GameError::Over);
    assert_eq!(GameError::Over.to_string(), "the game is over; nothing to resolve");
}

/// tester t17b-12: in the text map of reports of wording 3 every company's letter stands under
/// its column's letter, as an empty space's dot does, and a company with a gun marker and the
/// colors is one mark, `*`, so cells never run together (wording 0 to 2 keep their map).
#[test]
fn the_aligned_text_map_puts_each_letter_under_its_column() {
    let mut s = board(&[("H", "F2", 3), ("I", "G2", 3)], &[("C", "F8", 2)]);
    let i = idx(&s, Side::Union, "I");
    s.companies[i].gun = true;
    let rows = view::map_rows_aligned(&s);
    let column = |row: &str, at: usize| row.chars().nth(at);
    let head = &rows[0];
    for (letter, row, want) in [('F', 2, 'H'), ('G', 2, 'I'), ('F', 8, 'c'), ('A', 8, '.')] {
        let at = head.find(letter).unwrap();
        // Even rows (2, 8) are set in by half a cell.
        assert_eq!(column(&rows[row], at + 2), Some(want), "{letter}{row}: {rows:#?}");
    }
    assert!(rows[2].contains(" H3* I3+ "), "{}", rows[2]);
    assert!(view::map_rows(&s)[2].contains("H3+^I3+"), "the earlier wording's map is kept");
}

/// tester t17b-10: the picture says where the round's activation tokens stand and rings the
/// company asked to act.
#[test]
fn the_picture_tells_the_tokens_and_rings_the_company_asked() {
    let mut s = board(&[("H", "F2", 3)], &[("C", "F8", 2)]);
    s.letters_row = vec!["B".into(), "H".into()];
    s.asking = Some(idx(&s, Side::Union, "H"));
    let svg = ThrowDownThatFlag.picture(&s, Some("union"), false).unwrap();
    assert!(svg.contains(">Activation tokens drawn this round: B, H; colors 0 of 3;"), "{svg}");
    assert!(svg.contains("Company H is asked to act (ringed).<"));
    assert_eq!(svg.matches(&format!("stroke=\"{}\" stroke-width=\"4\"", crate::picture::colour::VERMILLION)).count(), 2, "the ring, and the break-through line");
    s.asking = None;
    let svg = ThrowDownThatFlag.picture(&s, Some("union"), false).unwrap();
    assert!(!svg.contains("is asked to act") && svg.contains(">Activation tokens drawn this round: B, H;"));
}
