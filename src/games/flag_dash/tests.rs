//! Flag Dash rule cases: the rulebook's examples and one test per rule, each naming its section.

use std::collections::BTreeMap;

use super::layout::{Sq, Team};
use super::orders::parse_try;
use super::state::{Card, FlagAt, Mode, MovePlan, Plan, Stage, State, Token};
use super::*;
use crate::game::{Game, OrderProblem, resolve_orders};

/// [`Game::check_order`] without the checked orders: whether `o` passes.
fn check_order(s: &State, role: &str, o: &Orders) -> Result<(), Vec<OrderProblem>> {
    FlagDash.check_order(s, role, o).map(|_| ())
}

fn opts(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
    kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn new_game(kv: &[(&str, &str)]) -> State {
    FlagDash.setup(DEFAULT_LAYOUT, &opts(kv)).unwrap()
}

fn sq(x: &str) -> Sq {
    x.parse().unwrap()
}

fn ch(s: &State, name: &str) -> usize {
    s.char_named(name).unwrap()
}

/// Puts character `name` on `at`.
fn put(s: &mut State, name: &str, at: &str) {
    let i = ch(s, name);
    s.chars[i].at = sq(at);
}

/// Parks every character on the edge squares far from the action (a1.., i10..), so a test places
/// only the ones it needs.
fn cleared(kv: &[(&str, &str)]) -> State {
    let mut s = new_game(kv);
    let park = ["a1", "b1", "c1", "g10", "h10", "i10"];
    for (i, p) in park.iter().enumerate() {
        s.chars[i].at = sq(p);
    }
    s
}

fn mp(card: Card, token: u8, combo: Option<Card>, copy: Option<Card>, tries: &[&str]) -> MovePlan {
    MovePlan { card, token: Token::N(token), combo, copy, tries: tries.iter().map(|t| t.to_string()).collect(), spy_on: None }
}

/// Reveals and resolves one move of `role` on its own; returns the account.
fn one_move(s: &mut State, role: &str, m: MovePlan) -> Vec<String> {
    s.plans.insert(role.into(), Plan { moves: vec![m], tie_first: None, secret_tunnel: false });
    s.log.clear();
    let mut ctx = Ctx::new([0; 32]);
    engine::resolve_move(s, &mut ctx, role, 1);
    s.log.clone()
}

fn orders(text: &str) -> Orders {
    toml::from_str(text).unwrap()
}

/// A plan that does nothing on a cleared board (Flag and Push with no one adjacent).
fn idle(t1: u8, t2: u8) -> String {
    format!(
        "move1 = {{ card = \"flag\", token = {t1}, try = [\"runner\"] }}\nmove2 = {{ card = \"push\", token = {t2}, try = [\"runner\"] }}\n"
    )
}

fn resolve(s: &State, o: &[(&str, String)]) -> State {
    let map: BTreeMap<String, Orders> = o.iter().map(|(r, t)| (r.to_string(), orders(t))).collect();
    for (r, x) in &map {
        assert_eq!(check_order(s, r, x), Ok(()), "{r}: {x:?}");
    }
    let mut s = resolve_orders(&FlagDash, s, &map, &mut Ctx::new([0; 32])).unwrap();
    // Same-team ties of the idle plans: answered with the default (the team's first seat first).
    while let Stage::Move { .. } = s.stage {
        let Pending::Orders(asks) = FlagDash.pending(&s) else { break };
        let map: BTreeMap<String, Orders> = asks.iter().map(|a| (a.role.clone(), FlagDash.default_order(&s, &a.role))).collect();
        s = resolve_orders(&FlagDash, &s, &map, &mut Ctx::new([0; 32])).unwrap();
    }
    s
}

/// True when the account contains `needle` (long lines are wrapped, so whitespace is collapsed).
fn has(log: &[String], needle: &str) -> bool {
    let flat = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
    flat(&log.join(" ")).contains(&flat(needle))
}

// ---- the rulebook's examples ----

/// Example C (Using Tunnels): Orange blocks a tunnel; Blue uses a tunnel, bumps Orange one space
/// and takes the tunnel Orange was on.
#[test]
fn example_c_tunnel_bumps_the_blocking_character() {
    let mut s = cleared(&[]);
    put(&mut s, "Blue", "c9");
    put(&mut s, "Orange", "g3");
    let log = one_move(&mut s, "red-2", mp(Card::Forward, 1, None, None, &["runner: card, tunnel g3 bump e"]));
    assert_eq!(s.chars[ch(&s, "Orange")].at, sq("h3"), "{log:#?}");
    assert_eq!(s.chars[ch(&s, "Blue")].at, sq("g3"));
    assert!(has(&log, "Orange is bumped off the tunnel at g3 to h3"));
}

/// Example D (Flag): Purple (Red runner) holds the White flag and may give it to Yellow (Red
/// defender) next to it, or drop it on an adjacent space.
#[test]
fn example_d_give_or_drop_the_carried_flag() {
    let mut base = cleared(&[]);
    put(&mut base, "Purple", "d3");
    put(&mut base, "Yellow", "d4");
    base.flags.white = FlagAt::Carried("Purple".into());
    let mut s = base.clone();
    one_move(&mut s, "red-1", mp(Card::Flag, 1, None, None, &["runner: card give Yellow"]));
    assert_eq!(s.flags.white, FlagAt::Carried("Yellow".into()));
    let mut s = base.clone();
    one_move(&mut s, "red-1", mp(Card::Flag, 1, None, None, &["runner: card drop d4", "runner: card drop c3"]));
    assert_eq!(s.flags.white, FlagAt::Space(sq("c3")), "d4 holds Yellow, so the fallback is used");
    // The defender cannot play the flag actions (they are the runner's).
    let mut s = base.clone();
    put(&mut s, "Purple", "a5");
    s.flags.white = FlagAt::Carried("Yellow".into());
    let log = one_move(&mut s, "red-1", mp(Card::Flag, 1, None, None, &["defender: card drop d5"]));
    assert!(has(&log, "defender"), "{log:#?}");
    assert_eq!(s.flags.white, FlagAt::Carried("Yellow".into()));
}

/// Example E (Custom Layout, back-row cones): Blue (Team Red) must bring the White flag to one of
/// the three back-row spaces between the cones.
#[test]
fn example_e_back_row_cones() {
    let layout = include_str!("../../../scenarios/flag-dash-cones.toml");
    let mut s = FlagDash.setup(layout, &BTreeMap::new()).unwrap();
    for (i, p) in ["a1", "b1", "c1", "g9", "h9", "i9"].iter().enumerate() {
        s.chars[i].at = sq(p);
    }
    put(&mut s, "Blue", "c8");
    s.flags.white = FlagAt::Carried("Blue".into());
    let mut outside = s.clone();
    one_move(&mut outside, "red-2", mp(Card::Back, 4, None, None, &["runner"]));
    assert_eq!(outside.chars[ch(&outside, "Blue")].at, sq("c10"));
    assert!(outside.outcome.is_none(), "c10 is outside the cones");
    put(&mut s, "Blue", "d8");
    one_move(&mut s, "red-2", mp(Card::Back, 4, None, None, &["runner"]));
    assert_eq!(s.chars[ch(&s, "Blue")].at, sq("d10"));
    assert_eq!(s.outcome.as_ref().unwrap().winner.as_deref(), Some("red"));
}

// ---- movement ----

/// Movement Rules: a team flag in the way is passed over (one space) and the character may land on
/// a tunnel there and use it in the same move (Using Tunnels: during or after the move).
#[test]
fn moving_through_a_flag_onto_a_tunnel() {
    let mut s = cleared(&[]);
    put(&mut s, "Green", "c6");
    s.flags.red = FlagAt::Space(sq("c7"));
    let log = one_move(&mut s, "white-1", mp(Card::Forward, 1, None, None, &["runner: card, tunnel g3"]));
    assert!(has(&log, "Green c6 -> c8 over the Red flag"), "{log:#?}");
    assert_eq!(s.chars[ch(&s, "Green")].at, sq("g3"));
}

/// Movement Rules: no moving through walls, onto characters, or over a flag into a blocked space.
#[test]
fn walls_characters_and_blocked_flags_stop_movement() {
    let mut s = cleared(&[]);
    put(&mut s, "Green", "b5");
    let log = one_move(&mut s, "white-1", mp(Card::Forward, 1, None, None, &["runner"]));
    assert!(has(&log, "a wall lies between b5 and b6"), "{log:#?}");
    assert_eq!(s.chars[ch(&s, "Green")].at, sq("b5"));
    put(&mut s, "Green", "d4");
    put(&mut s, "Blue", "d6");
    s.flags.red = FlagAt::Space(sq("d5"));
    let log = one_move(&mut s, "white-1", mp(Card::Forward, 1, None, None, &["runner"]));
    assert!(has(&log, "cannot pass over the Red flag on d5: Blue stands on d6"), "{log:#?}");
}

/// Using Boosts: "fully or not at all": #5 moves three spaces or not at all.
#[test]
fn a_multiplier_is_carried_out_fully_or_not_at_all() {
    let mut s = cleared(&[]);
    put(&mut s, "Green", "d2");
    one_move(&mut s, "white-1", mp(Card::Forward, 5, None, None, &["runner"]));
    assert_eq!(s.chars[ch(&s, "Green")].at, sq("d5"));
    put(&mut s, "Green", "c3");
    put(&mut s, "Black", "d1");
    let log = one_move(&mut s, "white-1", mp(Card::Forward, 5, None, None, &["runner", "defender"]));
    assert_eq!(s.chars[ch(&s, "Green")].at, sq("c3"), "blocked by the wall at c5|c6 after two spaces");
    assert!(has(&log, "alternative 1 \"runner\" cannot be carried out fully"));
    assert_eq!(s.chars[ch(&s, "Black")].at, sq("d4"), "the defender was the fallback: d1 -> d4");
    // The account names the failing later space, and says the character stayed put.
    assert!(
        has(&log, "Green cannot move n from c5: a wall lies between c5 and c6"),
        "{log:#?}"
    );
}

/// Movement Rules: a move off the edge is told plainly; a character cannot push itself (no
/// "Green is not next to Green").
#[test]
fn failed_moves_are_worded_plainly() {
    let mut s = cleared(&[]);
    put(&mut s, "Green", "a7");
    let log = one_move(&mut s, "white-1", mp(Card::Left, 1, None, None, &["runner"]));
    assert!(has(&log, "Green cannot move w from a7: a7 is on the edge of the board"), "{log:#?}");
    assert!(!has(&log, "(off the board)"), "{log:#?}");
    let log = one_move(&mut s, "white-1", mp(Card::Push, 1, None, None, &["runner: card Green n"]));
    assert!(has(&log, "Green cannot push itself"), "{log:#?}");
}

// ---- cards ----

/// Push: up to two spaces by the movement rules; a push into a wall is not carried out and the
/// next alternative is tried.
#[test]
fn push_into_a_wall_falls_back_to_the_next_alternative() {
    let mut s = cleared(&[]);
    put(&mut s, "Green", "b4");
    put(&mut s, "Blue", "b5");
    let log = one_move(&mut s, "white-1", mp(Card::Push, 1, None, None, &["runner: card Blue n", "runner: card Blue e e"]));
    assert!(has(&log, "a wall lies between b5 and b6"), "{log:#?}");
    assert_eq!(s.chars[ch(&s, "Blue")].at, sq("d5"));
}

/// Push: a pushed opponent carrying the pusher's team flag drops it where it was pushed from.
#[test]
fn push_makes_the_carrier_drop_the_flag() {
    let mut s = cleared(&[]);
    put(&mut s, "Black", "d3");
    put(&mut s, "Blue", "d4");
    s.flags.white = FlagAt::Carried("Blue".into());
    one_move(&mut s, "white-1", mp(Card::Push, 1, None, None, &["defender: card Blue n n"]));
    assert_eq!(s.chars[ch(&s, "Blue")].at, sq("d6"));
    assert_eq!(s.flags.white, FlagAt::Space(sq("d4")));
}

/// Push: not across a wall.
#[test]
fn push_not_across_a_wall() {
    let mut s = cleared(&[]);
    put(&mut s, "Green", "b5");
    put(&mut s, "Blue", "b6");
    let log = one_move(&mut s, "white-1", mp(Card::Push, 1, None, None, &["runner: card Blue n"]));
    assert!(has(&log, "without a wall between"), "{log:#?}");
}

/// Flag: take the opposing flag when adjacent even across a wall, also from a teammate; never the
/// own flag; collect a character flag only without a wall between, once per opposing character.
#[test]
fn flag_take_across_wall_from_teammate_and_collect_rules() {
    let mut s = cleared(&[]);
    put(&mut s, "Green", "b5");
    s.flags.red = FlagAt::Space(sq("b6"));
    one_move(&mut s, "white-1", mp(Card::Flag, 1, None, None, &["runner: card take"]));
    assert_eq!(s.flags.red, FlagAt::Carried("Green".into()), "taken across the wall");
    put(&mut s, "Orange", "a5");
    one_move(&mut s, "white-2", mp(Card::Flag, 1, None, None, &["runner: card take"]));
    assert_eq!(s.flags.red, FlagAt::Carried("Orange".into()), "taken from a teammate");
    // The own flag is never taken.
    s.flags.white = FlagAt::Space(sq("a4"));
    put(&mut s, "Orange", "b4");
    s.flags.red = FlagAt::Space(sq("h8"));
    let log = one_move(&mut s, "white-2", mp(Card::Flag, 1, None, None, &["runner: card take"]));
    assert_eq!(s.flags.white, FlagAt::Space(sq("a4")), "{log:#?}");
    // Collect: not across a wall, not twice from the same character.
    put(&mut s, "Blue", "b6");
    put(&mut s, "Green", "b5");
    let log = one_move(&mut s, "white-1", mp(Card::Flag, 1, None, None, &["runner: card collect Blue"]));
    assert!(has(&log, "without a wall between"), "{log:#?}");
    put(&mut s, "Green", "c6");
    one_move(&mut s, "white-1", mp(Card::Flag, 1, None, None, &["runner: card collect Blue"]));
    assert_eq!(s.chars[ch(&s, "Green")].holds, ["Blue"]);
    assert_eq!(s.chars[ch(&s, "Blue")].flags_left, 1);
    let log = one_move(&mut s, "white-1", mp(Card::Flag, 1, None, None, &["runner: card collect Blue"]));
    assert!(has(&log, "already holds a character flag of Blue"), "{log:#?}");
    // Nothing happens when both of a character's flags are taken.
    put(&mut s, "Orange", "b7");
    let i = ch(&s, "Blue");
    s.chars[i].flags_left = 0;
    let log = one_move(&mut s, "white-2", mp(Card::Flag, 1, None, None, &["runner: card collect Blue"]));
    assert!(has(&log, "both of Blue's character flags are already taken"), "{log:#?}");
}

/// Copy: resolves a card already played this round, also one played as the combo card; a card not
/// yet played cannot be copied.
#[test]
fn copy_of_a_combo_card() {
    let mut s = cleared(&[]);
    put(&mut s, "Green", "d2");
    let plan = "move1 = { card = \"forward\", token = 3, combo = \"right\", try = [\"runner\"] }\n\
                move2 = { card = \"copy\", token = 1, copy = \"right\", try = [\"runner\"] }";
    let s2 = resolve(&s, &[("white-1", plan.into()), ("white-2", idle(2, 4)), ("red-1", idle(2, 4)), ("red-2", idle(2, 4))]);
    assert_eq!(s2.chars[ch(&s2, "Green")].at, sq("f3"), "{:#?}", s2.log);
    assert!(has(&s2.log, "Copy (as Run right) with #1"));
    // Copying a card not played this round does nothing.
    s.played.clear();
    let log = one_move(&mut s, "white-1", mp(Card::Copy, 1, None, Some(Card::Left), &["runner"]));
    assert!(has(&log, "Run left has not been played this round"), "{log:#?}");
}

/// Copy: "any other action card you have already played this round" -- in move 1 no card of
/// this seat is played yet (except the other card of a combo), so copying move 2's card is refused.
#[test]
fn copy_in_move_1_of_a_later_card_is_refused() {
    let s = cleared(&[]);
    let plan = "move1 = { card = \"copy\", token = 1, copy = \"forward\", try = [\"runner\"] }\n\
                move2 = { card = \"forward\", token = 2, try = [\"runner\"] }";
    let e = check_order(&s, "white-1", &orders(plan)).unwrap_err();
    assert_eq!(e[0].field, "move1.copy", "{e:?}");
    assert!(e[0].message.contains("already played this round"), "{e:?}");
    // Copy in move 2 of move 1's card, and Copy as the combo card of its own move, are fine.
    let ok = "move1 = { card = \"forward\", token = 2, try = [\"runner\"] }\n\
              move2 = { card = \"copy\", token = 1, copy = \"forward\", try = [\"runner\"] }";
    assert_eq!(check_order(&s, "white-1", &orders(ok)), Ok(()));
    let combo = "move1 = { card = \"forward\", token = 3, combo = \"copy\", copy = \"forward\", try = [\"runner\"] }\n\
                 move2 = { card = \"flag\", token = 1, try = [\"runner\"] }";
    assert_eq!(check_order(&s, "white-1", &orders(combo)), Ok(()));
}

// ---- tokens ----

/// Reset (#7): discarded tokens return, itself included; played as the first move, the token of
/// the second move is not returned (it is discarded after that move).
#[test]
fn reset_returns_tokens_with_its_exception() {
    let mut s = cleared(&[]);
    s.seats[0].tokens = vec![Token::N(5), Token::N(6), Token::N(7)];
    s.seats[0].discarded = vec![Token::N(1), Token::N(2), Token::N(3), Token::N(4)];
    let plan = "move1 = { card = \"flag\", token = 7, try = [\"runner\"] }\nmove2 = { card = \"push\", token = 5, try = [\"runner\"] }";
    let s1 = resolve(&s, &[("white-1", plan.into()), ("white-2", idle(2, 4)), ("red-1", idle(2, 4)), ("red-2", idle(2, 4))]);
    let w1 = &s1.seats[0];
    assert_eq!(w1.tokens, [1, 2, 3, 4, 6, 7].map(Token::N));
    assert_eq!(w1.discarded, [Token::N(5)]);
    // Played second, it returns the first move's token too.
    let plan = "move1 = { card = \"flag\", token = 5, try = [\"runner\"] }\nmove2 = { card = \"push\", token = 7, try = [\"runner\"] }";
    let s2 = resolve(&s, &[("white-1", plan.into()), ("white-2", idle(2, 4)), ("red-1", idle(2, 4)), ("red-2", idle(2, 4))]);
    assert_eq!(s2.seats[0].tokens, [1, 2, 3, 4, 5, 6, 7].map(Token::N));
    assert!(s2.seats[0].discarded.is_empty());
}

/// Reset note: with only the reset token left, only the first move is planned.
#[test]
fn reset_only_plans_one_move() {
    let mut s = cleared(&[]);
    s.seats[0].tokens = vec![Token::N(7)];
    let two = orders(&idle(7, 7));
    assert_eq!(check_order(&s, "white-1", &two).unwrap_err()[0].field, "move2");
    let one = orders("move1 = { card = \"flag\", token = 7, try = [\"runner\"] }");
    assert_eq!(check_order(&s, "white-1", &one), Ok(()));
    assert_eq!(check_order(&s, "white-1", &FlagDash.default_order(&s, "white-1")), Ok(()));
    let s1 = resolve(&s, &[("white-1", "move1 = { card = \"flag\", token = 7, try = [\"runner\"] }".into()), ("white-2", idle(2, 4)), ("red-1", idle(2, 4)), ("red-2", idle(2, 4))]);
    assert!(has(&s1.log, "white-1 none (reset token only)"));
}

/// Reset note, pbem's reading (README "Flag Dash orders", tester t18d-1): spy tokens count for no
/// token of their own (each must be replaced by another when revealed: Character Abilities, Spy),
/// so a seat holding only spy tokens and the reset token plans only its first move.
#[test]
fn spy_tokens_beside_the_reset_token_still_plan_one_move() {
    let mut s = new_game(&[("abilities", "true")]);
    s.seats[1].tokens = vec![Token::Spy, Token::Spy, Token::N(7)];
    let two = orders("move1 = { card = \"forward\", token = 7, try = [\"runner\"] }\nmove2 = { card = \"flag\", token = \"spy\", try = [\"runner\"] }");
    let e = check_order(&s, "white-2", &two).unwrap_err();
    assert_eq!(e[0].field, "move2");
    assert!(e[0].message.contains("a spy token counts for none"), "{e:?}");
    assert_eq!(check_order(&s, "white-2", &FlagDash.default_order(&s, "white-2")), Ok(()));
}

/// Phase 1: cards from hand, tokens not discarded, two different tokens and cards.
#[test]
fn plans_are_checked() {
    let mut s = cleared(&[]);
    s.seats[0].tokens.retain(|t| *t != Token::N(1));
    s.seats[0].discarded.push(Token::N(1));
    let bad = |o: &str| check_order(&s, "white-1", &orders(o)).unwrap_err()[0].field.clone();
    assert_eq!(bad(&idle(1, 2)), "move1.token");
    assert_eq!(bad(&idle(2, 2)), "move2.token");
    assert_eq!(bad("move1 = { card = \"flag\", token = 2, try = [\"runner\"] }\nmove2 = { card = \"flag\", token = 4, try = [\"runner\"] }"), "move2.card");
    assert_eq!(bad("move1 = { card = \"jump\", token = 2, try = [\"runner\"] }\nmove2 = { card = \"flag\", token = 4, try = [\"runner\"] }"), "move1.card");
    assert_eq!(bad("move1 = { card = \"flag\", token = 2, try = [\"Purple\"] }\nmove2 = { card = \"push\", token = 4, try = [\"runner\"] }"), "move1.try");
    assert_eq!(bad("move1 = { card = \"forward\", token = 4, try = [\"runner: card, boost n, card\"] }\nmove2 = { card = \"push\", token = 2, try = [\"runner\"] }"), "move1.try");
    assert_eq!(bad(&format!("{}tie_first = \"red-1\"", idle(2, 3).replace("token = 3", "token = 3, combo = \"left\""))), "tie_first");
}

/// Phase 1 (Combo, #3 and #6: "two different action cards"): a combo card already used by the other
/// move is reported on the `combo` field, not on `card`.
#[test]
fn a_used_combo_card_names_the_combo_field() {
    let s = cleared(&[]);
    let o = "move1 = { card = \"forward\", token = 1, try = [\"runner\"] }\n\
             move2 = { card = \"right\", token = 3, combo = \"forward\", try = [\"runner\"] }";
    let probs = check_order(&s, "white-1", &orders(o)).unwrap_err();
    assert_eq!(probs.len(), 1, "{probs:?}");
    assert_eq!(probs[0].field, "move2.combo");
    assert!(probs[0].message.contains("Run forward is already used"), "{}", probs[0].message);
    // Too many `card` steps: said in words, not "time(s)".
    let o = "move1 = { card = \"forward\", token = 1, try = [\"runner: card, card\"] }\n\
             move2 = { card = \"push\", token = 2, try = [\"runner\"] }";
    let probs = check_order(&s, "white-1", &orders(o)).unwrap_err();
    assert!(probs[0].message.ends_with("2 `card` steps but the token resolves the card once"), "{}", probs[0].message);
}

/// Using Boosts: #2 and #4 give the selected character a boost (two at most), usable only from a
/// later move, in any direction, before or after the card.
#[test]
fn boosts_from_earlier_moves_only_and_at_most_two() {
    let mut s = cleared(&[]);
    put(&mut s, "Green", "d2");
    let log = one_move(&mut s, "white-1", mp(Card::Forward, 2, None, None, &["runner: boost e, card", "runner"]));
    assert!(has(&log, "Green has no boost"), "{log:#?}");
    assert_eq!(s.chars[ch(&s, "Green")].at, sq("d3"));
    assert_eq!(s.chars[ch(&s, "Green")].boosts, 1);
    one_move(&mut s, "white-1", mp(Card::Forward, 4, None, None, &["runner"]));
    one_move(&mut s, "white-1", mp(Card::Back, 4, None, None, &["runner"]));
    assert_eq!(s.chars[ch(&s, "Green")].boosts, 2, "at most two");
    one_move(&mut s, "white-1", mp(Card::Forward, 1, None, None, &["runner: boost w, card, boost w"]));
    assert_eq!(s.chars[ch(&s, "Green")].at, sq("b4"));
    assert_eq!(s.chars[ch(&s, "Green")].boosts, 0);
}

// ---- tunnels ----

/// Using Tunnels: not while holding a team flag; once per move per character.
#[test]
fn tunnel_limits() {
    let mut s = cleared(&[]);
    put(&mut s, "Green", "c3");
    s.flags.red = FlagAt::Carried("Green".into());
    let log = one_move(&mut s, "white-1", mp(Card::Forward, 1, None, None, &["runner: tunnel g3"]));
    assert!(has(&log, "may not use tunnels"), "{log:#?}");
    s.flags.red = FlagAt::Space(sq("e10"));
    put(&mut s, "Green", "c2");
    let log = one_move(&mut s, "white-1", mp(Card::Forward, 1, None, None, &["runner: card, tunnel g8, tunnel c8"]));
    assert!(has(&log, "already used a tunnel"), "{log:#?}");
}

// ---- move order, cleanup, game end ----

/// Determine Move Order: lowest first; between teams the tiebreak marker; between teammates the
/// stated order, else the team's first seat is asked. Cleanup: the marker goes to the team that
/// moved last.
#[test]
fn move_order_ties_and_the_tiebreak_marker() {
    let s = cleared(&[("tiebreak", "red")]);
    let map = |w2: &str| -> BTreeMap<String, Orders> {
        [("white-1", idle(1, 2)), ("white-2", w2.to_string()), ("red-1", idle(1, 3).replace("token = 3", "token = 5")), ("red-2", idle(2, 4))]
            .into_iter()
            .map(|(r, t)| (r.to_string(), orders(&t)))
            .collect()
    };
    let stated = format!("{}tie_first = \"white-2\"", idle(1, 4));
    let s1 = resolve_orders(&FlagDash, &s, &map(&stated), &mut Ctx::new([0; 32])).unwrap();
    assert!(has(&s1.log, "Move 1 order: red-1, white-2, white-1, red-2"), "{:#?}", s1.log);
    assert!(has(&s1.log, "Move 2 order: white-1, red-2, white-2, red-1"));
    assert_eq!(s1.tiebreak, Team::Red, "red-1 moved last");
    // No stated order: white-1 is asked.
    let s2 = resolve_orders(&FlagDash, &s, &map(&idle(1, 4)), &mut Ctx::new([0; 32])).unwrap();
    match FlagDash.pending(&s2) {
        Pending::Orders(a) => assert_eq!((a[0].role.as_str(), a[0].kind.as_str(), a.len()), ("white-1", "tie-order", 1)),
        p => panic!("{p:?}"),
    }
    assert!(FlagDash.view(&s2, "white-1")["question"].is_string());
    // Paused in move 1, the view does not tell which token a seat put on move 2.
    let seats = &FlagDash.view(&s2, "white-1")["seats"];
    assert_eq!(seats[2]["role"], "red-1");
    assert_eq!(seats[2]["tokens"], "#2 #3 #4 #5 #6 #7", "move 1 used #1; #5 on move 2 stays hidden among them");
    let ans: BTreeMap<String, Orders> = [("white-1".to_string(), orders("first = \"white-2\""))].into();
    assert!(check_order(&s2, "white-2", &ans["white-1"]).is_err());
    let s3 = resolve_orders(&FlagDash, &s2, &ans, &mut Ctx::new([0; 32])).unwrap();
    assert!(has(&s3.log, "Move 1 order: red-1, white-2, white-1, red-2"), "{:#?}", s3.log);
    assert_eq!(s3.stage, Stage::Plan);
}

/// Game End: checked the moment it happens: a carrier entering its own territory wins at once and
/// later moves are not resolved.
#[test]
fn game_ends_the_moment_a_flag_enters_the_territory() {
    let mut s = cleared(&[]);
    put(&mut s, "Purple", "d5");
    s.flags.white = FlagAt::Carried("Purple".into());
    let red1 = "move1 = { card = \"back\", token = 1, try = [\"runner\"] }\nmove2 = { card = \"push\", token = 2, try = [\"runner\"] }";
    let s1 = resolve(&s, &[("white-1", idle(2, 4)), ("white-2", idle(2, 4)), ("red-1", red1.into()), ("red-2", idle(2, 4))]);
    let o = s1.outcome.clone().unwrap();
    assert_eq!(o.winner.as_deref(), Some("red"));
    assert!(matches!(FlagDash.pending(&s1), Pending::Over(_)));
    assert!(!has(&s1.log, "white-1 reveals"), "{:#?}", s1.log);
}

/// Game End: a runner holding a character flag of each opposing character wins.
#[test]
fn three_character_flags_win() {
    let mut s = cleared(&[]);
    put(&mut s, "Orange", "d5");
    put(&mut s, "Yellow", "d6");
    let i = ch(&s, "Orange");
    s.chars[i].holds = vec!["Purple".into(), "Blue".into()];
    one_move(&mut s, "white-2", mp(Card::Flag, 1, None, None, &["runner: card collect Yellow"]));
    assert_eq!(s.outcome.unwrap().winner.as_deref(), Some("white"));
}

/// Our addition: the layout's round limit ends the game as a draw.
#[test]
fn round_limit_is_a_draw() {
    let mut s = cleared(&[]);
    std::sync::Arc::make_mut(&mut s.layout).round_limit = 1;
    let s1 = resolve(&s, &[("white-1", idle(1, 2)), ("white-2", idle(1, 2)), ("red-1", idle(1, 2)), ("red-2", idle(3, 2).replace("token = 3", "token = 4"))]);
    let o = s1.outcome.unwrap();
    assert_eq!(o.winner, None);
    assert!(o.summary.contains("draw"));
}

// ---- players ----

/// 2-Player Rules, Basic: seats white and red, one set each, any character, outer columns out of
/// play, runners one space inward, character flags passed between adjacent runners.
#[test]
fn two_player_basic_game() {
    let mut s = new_game(&[("players", "2")]);
    assert_eq!(s.mode, Mode::TwoBasic);
    assert_eq!(FlagDash.roles(&s), ["white", "red"]);
    assert_eq!(s.chars[ch(&s, "Green")].at, sq("b3"));
    assert_eq!(s.chars[ch(&s, "Purple")].at, sq("h8"));
    assert!(!s.in_play(sq("a5")) && !s.in_play(sq("i5")));
    let log = one_move(&mut s, "white", mp(Card::Left, 1, None, None, &["Green"]));
    assert!(has(&log, "out of play"), "{log:#?}");
    one_move(&mut s, "white", mp(Card::Forward, 1, None, None, &["Black"]));
    assert_eq!(s.chars[ch(&s, "Black")].at, sq("e3"));
    put(&mut s, "Orange", "c3");
    let i = ch(&s, "Green");
    s.chars[i].holds = vec!["Blue".into()];
    one_move(&mut s, "white", mp(Card::Flag, 1, None, None, &["Green: card pass Orange"]));
    assert_eq!(s.chars[ch(&s, "Orange")].holds, ["Blue"]);
    assert!(s.chars[ch(&s, "Green")].holds.is_empty());
    let e = check_order(&s, "white", &orders(&idle(2, 3))).unwrap_err();
    assert!(e[0].message.contains("2-player basic") || e.iter().any(|p| p.field == "move1.try"), "{e:?}");
}

/// 2-Player Rules (basic): the form's example alternative works there, tie_first (no teammate) is
/// refused and the prompt does not speak of a teammate; in the 4-player game it says when a
/// teammate sees the plan.
#[test]
fn two_player_basic_form_fits_the_mode() {
    let s = new_game(&[("players", "2")]);
    let help = forms::help(&s, "white");
    let line = help.iter().find(|l| l.contains("Example: ")).expect("an example");
    let example = line.split("Example: ").nth(1).unwrap().trim().trim_matches('"').to_string();
    let plan = format!(
        "move1 = {{ card = \"forward\", token = 2, try = [\"{example}\"] }}\nmove2 = {{ card = \"flag\", token = 4, try = [\"{example}\"] }}"
    );
    assert_eq!(check_order(&s, "white", &orders(&plan)), Ok(()), "{example}");
    assert!(!help.iter().any(|l| l.contains("tie_first")));
    let e = check_order(&s, "white", &orders(&format!("{}tie_first = \"white\"", idle(2, 4).replace("runner", "Green")))).unwrap_err();
    assert_eq!(e[0].field, "tie_first", "{e:?}");
    assert!(!forms::prompt(&s, "white").contains("teammate"));
    let four = new_game(&[]);
    let p = forms::prompt(&four, "white-1").replace('\n', " ");
    assert!(p.contains("your teammate sees yours in the reports written after yours is in"), "{p}");
}

/// 3-Player Rules and the advanced 2-player game: the same four seats as the 4-player game.
#[test]
fn three_and_two_advanced_use_four_seats() {
    for kv in [vec![("players", "3")], vec![("players", "2"), ("mode", "advanced")], vec![]] {
        let s = new_game(&kv);
        assert_eq!(FlagDash.roles(&s), ["white-1", "white-2", "red-1", "red-2"]);
        assert_eq!(s.chars[ch(&s, "Green")].at, sq("a3"));
    }
    assert!(FlagDash.setup(DEFAULT_LAYOUT, &opts(&[("players", "4"), ("mode", "basic")])).is_err());
    assert!(FlagDash.setup(DEFAULT_LAYOUT, &opts(&[("players", "5")])).is_err());
}

/// A whole game by the built-in players in each seating, every order legal, every view rendered.
#[test]
fn bots_play_whole_games_in_every_mode() {
    let modes = [
        vec![],
        vec![("players", "3")],
        vec![("players", "2")],
        vec![("players", "2"), ("mode", "advanced")],
        vec![("abilities", "true")],
        vec![("abilities", "true"), ("tiebreak", "red")],
        vec![("abilities", "true"), ("players", "2"), ("mode", "advanced")],
        vec![("abilities", "true"), ("players", "2")],
        vec![("layout", "secret")],
        vec![("layout", "secret"), ("players", "2")],
    ];
    let alternate = include_str!("../../../scenarios/flag-dash-alternate.toml");
    let cones = include_str!("../../../scenarios/flag-dash-cones.toml");
    let games = modes
        .into_iter()
        .map(|kv| new_game(&kv))
        .chain([FlagDash.setup(alternate, &BTreeMap::new()).unwrap(), FlagDash.setup(cones, &opts(&[("players", "2")])).unwrap()]);
    for (k, s) in games.enumerate() {
        let mut s = s;
        let mut players = Ctx::new([7 + k as u8; 32]);
        let mut steps = 0;
        while let Pending::Orders(asks) = FlagDash.pending(&s) {
            let mut o = BTreeMap::new();
            for a in asks {
                let x = FlagDash.bot_order(&s, &a.role, &mut players);
                assert_eq!(check_order(&s, &a.role, &x), Ok(()), "{x:?}");
                o.insert(a.role, x);
            }
            s = resolve_orders(&FlagDash, &s, &o, &mut Ctx::new([0; 32])).unwrap();
            for r in FlagDash.roles(&s) {
                assert!(FlagDash.view(&s, &r).is_object());
            }
            steps += 1;
            assert!(steps < 500);
        }
        assert!(s.outcome.is_some());
    }
}

/// Alternatives that name a character the seat may not move are rejected at intake.
#[test]
fn try_names_only_movable_characters() {
    let s = new_game(&[]);
    let m = mp(Card::Forward, 1, None, None, &["Orange"]);
    assert!(parse_try(&s, "white-1", &m, "Orange").is_err());
    assert!(parse_try(&s, "white-1", &m, "Black").is_ok());
    assert!(parse_try(&s, "white-2", &m, "defender").is_ok(), "the defender is the team's, jointly");
    assert!(parse_try(&s, "red-1", &m, "Black").is_err());
    assert!(parse_try(&s, "white-1", &m, "runner: boost q").is_err());
}

// ---- character abilities (option abilities=true) ----

/// Gives runner `name` the ability `a` (the layout fixes which pawn has which card; tests need
/// every ability on a runner), with the matching card or tokens for its seat.
fn with_ability(s: &mut State, name: &str, a: super::layout::Ability) {
    use super::layout::Ability;
    let i = ch(s, name);
    s.chars[i].ability = Some(a);
    s.chars[i].supply = if matches!(a, Ability::Trap | Ability::Dig) { 2 } else { 0 };
    let (team, n) = (s.chars[i].team, s.chars[i].seat.unwrap());
    let seat = s.seats.iter_mut().find(|x| x.team == team && x.number == n).unwrap();
    seat.cards.extend(Card::of_ability(a));
}

fn abilities() -> State {
    let mut s = cleared(&[("abilities", "true")]);
    for c in s.chars.iter_mut() {
        c.ability = None;
    }
    s
}

/// Jump: over an adjacent wall or character, not when a second wall or character is right beyond;
/// runners only.
#[test]
fn ability_jump() {
    use super::layout::Ability;
    let mut s = abilities();
    with_ability(&mut s, "Green", Ability::Jump);
    put(&mut s, "Green", "b5");
    one_move(&mut s, "white-1", mp(Card::Jump, 1, None, None, &["runner: card n"]));
    assert_eq!(s.chars[ch(&s, "Green")].at, sq("b6"), "over the wall");
    put(&mut s, "Green", "d4");
    put(&mut s, "Blue", "d5");
    one_move(&mut s, "white-1", mp(Card::Jump, 1, None, None, &["runner: card n"]));
    assert_eq!(s.chars[ch(&s, "Green")].at, sq("d6"), "over Blue");
    put(&mut s, "Green", "d4");
    put(&mut s, "Purple", "d6");
    let log = one_move(&mut s, "white-1", mp(Card::Jump, 1, None, None, &["runner: card n"]));
    assert!(has(&log, "not free"), "{log:#?}");
    let log = one_move(&mut s, "white-1", mp(Card::Jump, 1, None, None, &["defender: card n"]));
    assert!(has(&log, "abilities are the runners' only"), "{log:#?}");
    assert!(check_order(&cleared(&[]), "white-1", &orders(&idle(1, 2).replace("\"flag\"", "\"jump\""))).is_err());
}

/// Trap: placed up to two spaces away, not on a character or flag; a character moving onto it is
/// trapped until a reset token selects it (then the trap returns); the Tech Nerd picks up its own.
#[test]
fn ability_trap_catches_and_reset_frees() {
    use super::layout::Ability;
    let mut s = abilities();
    with_ability(&mut s, "Green", Ability::Trap);
    put(&mut s, "Green", "d4");
    let log = one_move(&mut s, "white-1", mp(Card::Trap, 1, None, None, &["runner: card d7", "runner: card d6"]));
    assert!(has(&log, "no free space up to two spaces"), "{log:#?}");
    assert_eq!(s.traps, [(sq("d6"), "Green".to_string())]);
    assert_eq!(s.chars[ch(&s, "Green")].supply, 1);
    put(&mut s, "Blue", "d8");
    one_move(&mut s, "red-2", mp(Card::Forward, 4, None, None, &["runner"]));
    assert_eq!(s.chars[ch(&s, "Blue")].at, sq("d6"));
    assert!(s.chars[ch(&s, "Blue")].trapped, "the second space was not moved");
    let log = one_move(&mut s, "red-2", mp(Card::Left, 1, None, None, &["runner"]));
    assert!(has(&log, "trapped"), "{log:#?}");
    one_move(&mut s, "red-2", mp(Card::Left, 7, None, None, &["runner"]));
    assert_eq!(s.chars[ch(&s, "Blue")].at, sq("e6"), "escaped and moved on");
    assert!(s.traps.is_empty());
    assert_eq!(s.chars[ch(&s, "Green")].supply, 2);
}

/// Character Abilities, Trap: "trapped there until a player plays their reset priority token and
/// selects the trapped character in Phase 2. Then, the trapped character escapes and proceeds with
/// the Move Characters step." Selecting it with #7 frees it even when the card it then plays
/// cannot be carried out (fully or not at all): it stays on its space, free, the trap returns.
#[test]
fn ability_trap_reset_frees_even_when_the_card_cannot_be_carried_out() {
    let mut s = abilities();
    put(&mut s, "Blue", "a5");
    s.traps.push((sq("a5"), "Green".into()));
    let blue = ch(&s, "Blue");
    s.chars[blue].trapped = true;
    let green = ch(&s, "Green");
    s.chars[green].supply = 1;
    let seat = s.seats.iter_mut().find(|x| x.role == "red-2").unwrap();
    seat.tokens.retain(|t| *t != Token::N(1));
    seat.discarded = vec![Token::N(1)];
    let log = one_move(&mut s, "red-2", mp(Card::Right, 7, None, None, &["runner"]));
    assert!(has(&log, "none of it is (fully or not at all)"), "the card fails: {log:#?}");
    assert_eq!(s.chars[blue].at, sq("a5"));
    assert!(!s.chars[blue].trapped, "selected with #7, Blue escapes: {log:#?}");
    assert!(has(&log, "Blue escapes the trap on a5 all the same"), "{log:#?}");
    assert!(s.traps.is_empty());
    assert_eq!(s.chars[green].supply, 2, "the trap returns to its owner");
    let seat = s.seats.iter().find(|x| x.role == "red-2").unwrap();
    assert!(seat.discarded.is_empty() && seat.tokens.contains(&Token::N(1)) && seat.tokens.contains(&Token::N(7)));
}

/// Character Abilities, Trap (only a reset token selects a trapped character) and Priority Tokens
/// ("the character you selected to move also gains a boost"): a #2 or #4 whose alternative names a
/// trapped character selects no one there, so the trapped character gains no boost; the boost goes
/// to the character a later alternative selects.
#[test]
fn ability_trap_a_token_that_cannot_select_the_trapped_character_gives_it_no_boost() {
    let mut s = abilities();
    put(&mut s, "Blue", "e5");
    s.traps.push((sq("e5"), "Green".into()));
    let blue = ch(&s, "Blue");
    s.chars[blue].trapped = true;
    for token in [2, 4] {
        let log = one_move(&mut s, "red-2", mp(Card::Left, token, None, None, &["runner"]));
        assert!(has(&log, "only a reset token (#7) can select it"), "{log:#?}");
        assert!(!has(&log, "gains a boost"), "#{token}: {log:#?}");
        assert_eq!(s.chars[blue].boosts, 0, "#{token}");
        assert!(s.chars[blue].trapped);
    }
    let log = one_move(&mut s, "red-2", mp(Card::Left, 2, None, None, &["runner", "defender"]));
    let defender = (0..s.chars.len()).find(|&i| s.chars[i].team == s.chars[blue].team && !s.chars[i].is_runner()).unwrap();
    assert_eq!((s.chars[blue].boosts, s.chars[defender].boosts), (0, 1), "{log:#?}");
}

/// Trap: a flag bearer entering its own territory onto a trap still wins.
#[test]
fn ability_trap_on_a_winning_move_still_wins() {
    let mut s = abilities();
    s.traps.push((sq("d6"), "Black".into()));
    put(&mut s, "Purple", "d5");
    s.flags.white = FlagAt::Carried("Purple".into());
    one_move(&mut s, "red-1", mp(Card::Back, 1, None, None, &["runner"]));
    assert!(s.chars[ch(&s, "Purple")].trapped);
    assert_eq!(s.outcome.unwrap().winner.as_deref(), Some("red"));
}

/// Lasso: a character in the runner's row or column is pulled one space toward it.
#[test]
fn ability_lasso() {
    use super::layout::Ability;
    let mut s = abilities();
    with_ability(&mut s, "Purple", Ability::Lasso);
    put(&mut s, "Purple", "i8");
    put(&mut s, "Green", "i4");
    one_move(&mut s, "red-1", mp(Card::Lasso, 1, None, None, &["runner: card Green"]));
    assert_eq!(s.chars[ch(&s, "Green")].at, sq("i5"));
    let log = one_move(&mut s, "red-1", mp(Card::Lasso, 1, None, None, &["runner: card Black"]));
    assert!(has(&log, "not in Purple's row or column"), "{log:#?}");
}

/// Cats: with the #3 cat token the two closest characters are chased one space away first, then
/// the card resolves once; with #5 the card first.
#[test]
fn ability_cats() {
    use super::layout::Ability;
    let mut s = abilities();
    with_ability(&mut s, "Blue", Ability::Cats);
    put(&mut s, "Blue", "e5");
    put(&mut s, "Green", "e4");
    put(&mut s, "Orange", "d5");
    put(&mut s, "Black", "e2");
    let m = MovePlan { card: Card::Forward, token: Token::Cat3, combo: None, copy: None, tries: vec!["runner".into()], spy_on: None };
    let log = one_move(&mut s, "red-2", m);
    assert_eq!(s.chars[ch(&s, "Orange")].at, sq("c5"), "{log:#?}");
    assert_eq!(s.chars[ch(&s, "Green")].at, sq("e3"));
    assert_eq!(s.chars[ch(&s, "Black")].at, sq("e2"), "only the two closest");
    assert_eq!(s.chars[ch(&s, "Blue")].at, sq("e4"), "then Run forward once (south for Red)");
    // The #5 cat token: the card first, then the cats, in the directions the plan gives.
    put(&mut s, "Blue", "e6");
    put(&mut s, "Green", "e4");
    put(&mut s, "Orange", "d5");
    let m = MovePlan { card: Card::Forward, token: Token::Cat5, combo: None, copy: None, tries: vec!["runner: cats e w".into()], spy_on: None };
    let log = one_move(&mut s, "red-2", m);
    assert_eq!(s.chars[ch(&s, "Blue")].at, sq("e5"), "{log:#?}");
    assert_eq!(s.chars[ch(&s, "Green")].at, sq("f4"), "sent east as asked");
    assert_eq!(s.chars[ch(&s, "Orange")].at, sq("c5"), "sent west as asked");
    assert!(has(&log, "Cats chase Orange d5 -> c5"));
}

/// Cats: a direction of the plan that does not move the chased character away is replaced, and
/// the account says so.
#[test]
fn cats_fallback_direction_is_told() {
    use super::layout::Ability;
    let mut s = abilities();
    with_ability(&mut s, "Blue", Ability::Cats);
    put(&mut s, "Blue", "e6");
    put(&mut s, "Green", "e4");
    put(&mut s, "Orange", "d5");
    // Green is two south of Blue after the card (Blue e5, Green e4): `n` would bring it closer.
    let m = MovePlan { card: Card::Forward, token: Token::Cat5, combo: None, copy: None, tries: vec!["runner: cats n w".into()], spy_on: None };
    let log = one_move(&mut s, "red-2", m);
    assert!(log.iter().any(|l| l.contains("Cats chase Green") && l.contains("instead of the plan's n")), "{log:#?}");
}

/// Dig: place a tunnel token next to the runner (also across a wall), or remove an adjacent tunnel.
#[test]
fn ability_dig() {
    use super::layout::Ability;
    let mut s = abilities();
    with_ability(&mut s, "Green", Ability::Dig);
    put(&mut s, "Green", "c5");
    one_move(&mut s, "white-1", mp(Card::Dig, 1, None, None, &["runner: card place c6"]));
    assert!(s.tunnels.contains(&sq("c6")), "across the wall");
    put(&mut s, "Green", "c4");
    one_move(&mut s, "white-1", mp(Card::Dig, 1, None, None, &["runner: card remove c3"]));
    assert!(!s.tunnels.contains(&sq("c3")));
    assert_eq!(s.chars[ch(&s, "Green")].supply, 1);
}

/// Spy: after the tokens are revealed the spy's seat alone is asked (a real step); the chosen
/// opponent's card is revealed (face up: to all), the spy replaces its token and may change its
/// card face down.
#[test]
fn ability_spy_is_a_step_of_the_spy_seat() {
    let s = new_game(&[("abilities", "true")]);
    let w2 = &s.seats[1];
    assert_eq!(w2.tokens.iter().filter(|t| **t == Token::Spy).count(), 2, "Orange is the spy");
    let spy_plan = "move1 = { card = \"forward\", token = \"spy\", try = [\"runner\"] }\n\
                    move2 = { card = \"flag\", token = 2, try = [\"runner\"] }";
    let red1 = "move1 = { card = \"push\", token = 1, try = [\"runner\"] }\nmove2 = { card = \"flag\", token = 2, try = [\"runner\"] }";
    let map: BTreeMap<String, Orders> = [
        ("white-1", idle(1, 2)),
        ("white-2", spy_plan.to_string()),
        ("red-1", red1.to_string()),
        ("red-2", idle(3, 2).replace("token = 3", "token = 4")),
    ]
    .into_iter()
    .map(|(r, t)| (r.to_string(), orders(&t)))
    .collect();
    let s0 = resolve_orders(&FlagDash, &s, &map, &mut Ctx::new([0; 32])).unwrap();
    match FlagDash.pending(&s0) {
        Pending::Orders(a) => assert_eq!((a.len(), a[0].role.as_str(), a[0].kind.as_str()), (1, "white-2", "spy")),
        p => panic!("{p:?}"),
    }
    // "after each player reveals their priority token ..., force one opponent to reveal": the
    // tokens are revealed, no card yet; the spy now names the opponent.
    assert!(has(&s0.log, "Move 1: tokens revealed") && !has(&s0.log, "reveals its card"), "{:#?}", s0.log);
    assert!(engine::spy_target_asked(&s0, "white-2"));
    assert_eq!(FlagDash.default_order(&s0, "white-2"), orders("spy_on = \"red-1\""));
    assert_eq!(check_order(&s0, "white-2", &orders("spy_on = \"white-1\"")).unwrap_err()[0].field, "spy_on");
    assert_eq!(check_order(&s0, "white-2", &orders("token = 5")).unwrap_err()[0].field, "token");
    let mut ctx = Ctx::new([0; 32]);
    let s1 = resolve_orders(&FlagDash, &s0, &[("white-2".to_string(), orders("spy_on = \"red-1\""))].into(), &mut ctx).unwrap();
    match FlagDash.pending(&s1) {
        Pending::Orders(a) => assert_eq!((a.len(), a[0].role.as_str(), a[0].kind.as_str()), (1, "white-2", "spy")),
        p => panic!("{p:?}"),
    }
    let seen = ctx.events().iter().find(|e| e.text.contains("Spy (white-2)")).unwrap();
    assert!(seen.text.contains("red-1 reveals its card for move 1: Push"), "{}", seen.text);
    assert!(FlagDash.view(&s1, "red-2")["spied"][0].as_str().unwrap().contains("Push"));
    assert!(FlagDash.view(&s1, "white-2")["question"].is_string());
    assert!(FlagDash.view(&s1, "white-1")["question"].is_null());
    assert!(check_order(&s1, "white-2", &orders("token = 2")).is_err(), "2 is planned for move 2");
    assert!(check_order(&s1, "white-2", &orders("token = \"spy\"")).is_err());
    assert_eq!(check_order(&s1, "white-2", &FlagDash.default_order(&s1, "white-2")), Ok(()));
    let ans: BTreeMap<String, Orders> = [("white-2".to_string(), orders("token = 5\ncard = \"back\""))].into();
    let s2 = resolve_orders(&FlagDash, &s1, &ans, &mut Ctx::new([0; 32])).unwrap();
    assert!(has(&s2.log, "white-2 discards the spy token for good, replaces it with #5 and changes its card"), "{:#?}", s2.log);
    assert!(has(&s2.log, "white-2 reveals Run back with #5"));
    assert_eq!(s2.seats[1].tokens.iter().filter(|t| **t == Token::Spy).count(), 1);
}

/// Spy (Character Abilities, "replace with another one of your priority tokens"; spy tokens "may be
/// used only once each"): the unedited spy form, which is also the NMR answer (both are
/// `default_order`), is legal even when the lowest token left is a combo token; `card` is optional
/// (combo and try without it keep the planned card); the form and the error list the same tokens.
#[test]
fn ability_spy_default_answer_is_legal_and_card_is_optional() {
    let mut s = new_game(&[("abilities", "true")]);
    let w2 = s.seats.iter_mut().find(|x| x.role == "white-2").unwrap();
    w2.tokens.retain(|t| !matches!(t, Token::N(2) | Token::N(5)));
    w2.discarded = vec![Token::N(2), Token::N(5)];
    let spy_plan = "move1 = { card = \"forward\", token = \"spy\", try = [\"runner\"] }\n\
                    move2 = { card = \"flag\", token = 1, try = [\"runner\"] }";
    let map: BTreeMap<String, Orders> =
        [("white-1", idle(1, 2)), ("white-2", spy_plan.to_string()), ("red-1", idle(1, 2)), ("red-2", idle(4, 2))]
            .into_iter()
            .map(|(r, t)| (r.to_string(), orders(&t)))
            .collect();
    let s1 = spy_target(&resolve_orders(&FlagDash, &s, &map, &mut Ctx::new([0; 32])).unwrap());
    assert_eq!(engine::spy_asked(&s1).as_deref(), Some("white-2"));
    // Tokens left: 3, 4, 6, 7 and a spy token. The default keeps the card and takes #4 (no combo
    // card needed); it is legal.
    let d = FlagDash.default_order(&s1, "white-2");
    assert_eq!(d, orders("token = 4"));
    assert_eq!(check_order(&s1, "white-2", &d), Ok(()));
    let s2 = resolve_orders(&FlagDash, &s1, &[("white-2".to_string(), d)].into(), &mut Ctx::new([0; 32])).unwrap();
    assert!(has(&s2.log, "white-2 discards the spy token for good, replaces it with #4."), "{:#?}", s2.log);
    // The form's help and the error list the same tokens (no spy token).
    let help = FlagDash.form_help(&s1, "white-2", crate::report::WORDING).join("\n");
    assert!(help.contains("token = one of: 3, 4, 6, 7 "), "{help}");
    let err = check_order(&s1, "white-2", &orders("token = \"spy\"")).unwrap_err();
    assert_eq!(err[0].field, "token");
    assert!(err[0].message.contains("one of: 3, 4, 6, 7 ") && !err[0].message.contains("spy, "), "{}", err[0].message);
    // `card` is optional: a combo token with combo and try keeps the planned card.
    let o = orders("token = 3\ncombo = \"left\"\ntry = [\"runner\"]");
    assert_eq!(check_order(&s1, "white-2", &o), Ok(()));
    let s3 = resolve_orders(&FlagDash, &s1, &[("white-2".to_string(), o)].into(), &mut Ctx::new([0; 32])).unwrap();
    let m = &s3.plans["white-2"].moves[0];
    assert_eq!((m.card, m.token, m.combo), (Card::Forward, Token::N(3), Some(Card::Left)));
    // A combo token without a combo card is refused on the combo field.
    assert_eq!(check_order(&s1, "white-2", &orders("token = 3")).unwrap_err()[0].field, "combo");
    // With only combo tokens left, the default adds a free combo card (not the other move's Flag).
    let mut s4 = s1.clone();
    s4.seats[1].tokens = vec![Token::N(3), Token::N(6), Token::Spy];
    let d = FlagDash.default_order(&s4, "white-2");
    assert_eq!(d, orders("token = 3\ncombo = \"back\""));
    assert_eq!(check_order(&s4, "white-2", &d), Ok(()));
}

/// Answers the spy's question of the opponent with the default (the other team's first seat).
fn spy_target(s: &State) -> State {
    let role = engine::spy_asked(s).unwrap();
    assert!(engine::spy_target_asked(s, &role));
    let o = FlagDash.default_order(s, &role);
    assert_eq!(check_order(s, &role, &o), Ok(()));
    resolve_orders(&FlagDash, s, &[(role, o)].into(), &mut Ctx::new([0; 32])).unwrap()
}

/// Everything an order form for `role` carries into the signed text, which is published with the
/// order: the prompt, the help lines and the prefilled `[orders]`.
fn form_text(s: &State, role: &str) -> String {
    let prompt = match FlagDash.pending(s) {
        Pending::Orders(asks) => asks.into_iter().filter(|a| a.role == role).map(|a| a.prompt).collect::<Vec<_>>().join("\n"),
        Pending::Over(_) => String::new(),
    };
    let body = toml::to_string(&FlagDash.default_order(s, role)).unwrap();
    format!("{prompt}\n{}\n{body}", FlagDash.form_help(s, role, crate::report::WORDING).join("\n"))
}

/// Phase 1 ("secretly plans"; teammates may look at each other's plans): the spy's form, asked in
/// the middle of Phase 2, holds nothing of the plans still face down: neither the opponents' nor the
/// teammate's second moves change a byte of it. (Its order is published after the round, when every
/// plan has been revealed; the form must not publish what a teammate showed only to the team.)
#[test]
fn the_spy_form_holds_no_plan_still_face_down() {
    let s = new_game(&[("abilities", "true")]);
    let spy_plan = "move1 = { card = \"forward\", token = \"spy\", try = [\"runner\"] }\n\
                    move2 = { card = \"flag\", token = 1, try = [\"runner\"] }";
    let others = |second: &str| -> BTreeMap<String, Orders> {
        [
            ("white-1", format!("move1 = {{ card = \"flag\", token = 1, try = [\"runner\"] }}\n{second}")),
            ("white-2", spy_plan.to_string()),
            ("red-1", format!("move1 = {{ card = \"push\", token = 1, try = [\"runner\"] }}\n{second}")),
            ("red-2", format!("move1 = {{ card = \"flag\", token = 4, try = [\"runner\"] }}\n{second}")),
        ]
        .into_iter()
        .map(|(r, t)| (r.to_string(), orders(&t)))
        .collect()
    };
    let a = resolve_orders(&FlagDash, &s, &others("move2 = { card = \"left\", token = 2, try = [\"runner\"] }"), &mut Ctx::new([0; 32])).unwrap();
    let b = resolve_orders(&FlagDash, &s, &others("move2 = { card = \"back\", token = 5, try = [\"defender\", \"runner\"] }"), &mut Ctx::new([0; 32])).unwrap();
    assert_eq!(form_text(&a, "white-2"), form_text(&b, "white-2"), "the spy's question of the opponent");
    let (a, b) = (spy_target(&a), spy_target(&b));
    assert_eq!(engine::spy_asked(&a).as_deref(), Some("white-2"));
    assert_eq!(engine::spy_asked(&b).as_deref(), Some("white-2"));
    assert_ne!(a.plans, b.plans);
    assert_eq!(form_text(&a, "white-2"), form_text(&b, "white-2"));
}

/// The game's report section for `role`, rendered from the view as in a real report.
fn section(s: &State, role: &str) -> String {
    let env = crate::report::environment(None).unwrap();
    env.get_template("games/flag-dash.txt").unwrap().render(minijinja::context! { view => minijinja::Value::from(minijinja::value::Serde(FlagDash.view(s, role))), wording => crate::report::WORDING, outcome => () }).unwrap()
}

/// Spy (Character Abilities): a round paused for the spy's question says so in the report, not
/// "a tie"; a round paused for a same-team tie (Determine Move Order) still says tie.
#[test]
fn a_spy_pause_is_reported_as_the_spy_question() {
    let s = new_game(&[("abilities", "true")]);
    let spy_plan = "move1 = { card = \"forward\", token = \"spy\", try = [\"runner\"] }\n\
                    move2 = { card = \"flag\", token = 1, try = [\"runner\"] }";
    let map: BTreeMap<String, Orders> =
        [("white-1", idle(1, 2)), ("white-2", spy_plan.to_string()), ("red-1", idle(1, 2)), ("red-2", idle(4, 2))]
            .into_iter()
            .map(|(r, t)| (r.to_string(), orders(&t)))
            .collect();
    let s1 = resolve_orders(&FlagDash, &s, &map, &mut Ctx::new([0; 32])).unwrap();
    let text = section(&s1, "white-2");
    assert!(text.contains("Phase 2, move 1 (the spy's question)"), "{text}");
    let s1 = spy_target(&s1);
    let text = section(&s1, "white-2");
    assert!(text.contains("Phase 2, move 1 (the spy's question)"), "{text}");
    assert!(text.contains("THE ROUND SO FAR (it stopped for the spy's question)"), "{text}");
    assert!(!text.contains("a tie"), "{text}");
    // A round stopped for a same-team tie (white-1 and white-2 both #1, no tie_first) says tie.
    let s2 = resolve_orders(
        &FlagDash,
        &new_game(&[]), &[("white-1", idle(1, 2)), ("white-2", idle(1, 4)), ("red-1", idle(1, 2)), ("red-2", idle(4, 2))]
            .into_iter()
            .map(|(r, t)| (r.to_string(), orders(&t)))
            .collect(), &mut Ctx::new([0; 32]))
        .unwrap();
    assert_eq!(engine::tie_asked(&s2).as_deref(), Some("white-1"));
    let text = section(&s2, "white-1");
    assert!(text.contains("Phase 2, move 1 (a tie question)") && text.contains("(it stopped for a tie question)"), "{text}");
}

/// Determine Move Order: a same-team tie's answer the asked seat did not send (its NMR) is told
/// as the default, or the built-in player's, in games of report wording 4 (a tester read
/// "white-1 answers the tie" as sent); earlier wordings, and answers sent, keep the old line.
#[test]
fn an_unsent_tie_answer_is_told_as_the_default_from_wording_4() {
    let plans = [("white-1", idle(1, 2)), ("white-2", idle(1, 4)), ("red-1", idle(1, 2)), ("red-2", idle(4, 2))];
    let map = plans.into_iter().map(|(r, t)| (r.to_string(), orders(&t))).collect();
    let tied = resolve_orders(&FlagDash, &new_game(&[]), &map, &mut Ctx::new([0; 32])).unwrap();
    assert_eq!(engine::tie_asked(&tied).as_deref(), Some("white-1"));
    let answer = BTreeMap::from([("white-1".to_string(), FlagDash.default_order(&tied, "white-1"))]);
    let told = |wording: u32, unsent: &[(&str, &str)]| {
        let unsent = unsent.iter().map(|(r, k)| (r.to_string(), k.to_string())).collect();
        let mut ctx = Ctx::new([0; 32]).worded(wording).unsent(unsent);
        let s = resolve_orders(&FlagDash, &tied, &answer, &mut ctx).unwrap();
        let first = ctx.into_events().into_iter().next().map(|e| e.text).unwrap_or_default();
        assert!(s.log.contains(&first), "the round's log says the same: {:?}", s.log);
        first
    };
    assert_eq!(told(4, &[("white-1", "default")]), "white-1 did not answer the tie: by default, white-1 (the team's first seat) moves first.");
    assert_eq!(told(4, &[("white-1", "bot")]), "white-1 did not answer the tie: the built-in player answered, white-1 moves first.");
    assert_eq!(told(4, &[("red-1", "default")]), "white-1 answers the tie: white-1 moves first.");
    assert_eq!(told(3, &[("white-1", "default")]), "white-1 answers the tie: white-1 moves first.");
}

// ---- the alternate board ----

/// Example F (Alternate Board Setup): a character on the centre entrance at the end of Phase 2
/// takes the secret tunnel to its exit behind the corner walls, and from behind may cross those
/// walls; from outside they block. An occupied exit cannot be used.
#[test]
fn example_f_secret_tunnel_and_walls_from_behind() {
    let layout = include_str!("../../../scenarios/flag-dash-alternate.toml");
    let mut s = FlagDash.setup(layout, &BTreeMap::new()).unwrap();
    for (i, p) in ["a1", "b1", "c1", "i11", "j11", "k11"].iter().enumerate() {
        s.chars[i].at = sq(p);
    }
    put(&mut s, "Purple", "f7");
    let red1 = "move1 = { card = \"forward\", token = 1, try = [\"runner\"] }\n\
                move2 = { card = \"push\", token = 2, try = [\"runner\"] }\nsecret_tunnel = true";
    assert!(check_order(&new_game(&[]), "red-1", &orders(red1)).is_err(), "no secret tunnel on the basic board");
    let s1 = resolve(&s, &[("white-1", idle(1, 2)), ("white-2", idle(1, 2)), ("red-1", red1.into()), ("red-2", idle(3, 4).replace("token = 3", "token = 5"))]);
    assert_eq!(s1.chars[ch(&s1, "Purple")].at, sq("j2"), "{:#?}", s1.log);
    assert!(has(&s1.log, "Purple takes the secret tunnel f6 -> j2"));
    // From behind (inside the h1-k4 corner) the wall is crossed; from outside it blocks.
    let mut s2 = s1.clone();
    put(&mut s2, "Purple", "h2");
    one_move(&mut s2, "red-1", mp(Card::Right, 1, None, None, &["runner"]));
    assert_eq!(s2.chars[ch(&s2, "Purple")].at, sq("g2"), "Red's right is west");
    let log = one_move(&mut s2, "red-1", mp(Card::Left, 1, None, None, &["runner"]));
    assert!(has(&log, "a wall lies between g2 and h2"), "{log:#?}");
    // An occupied exit cannot be used.
    let mut s3 = s.clone();
    put(&mut s3, "Black", "j2");
    let s3 = resolve(&s3, &[("white-1", idle(1, 2)), ("white-2", idle(1, 2)), ("red-1", red1.into()), ("red-2", idle(3, 4).replace("token = 3", "token = 5"))]);
    assert_eq!(s3.chars[ch(&s3, "Purple")].at, sq("f6"));
    assert!(has(&s3.log, "its exit j2 is occupied"));
    // Character Abilities, Trap: a trapped character on the entrance stays there.
    let mut s4 = s.clone();
    put(&mut s4, "Purple", "f6");
    let purple = ch(&s4, "Purple");
    s4.chars[purple].trapped = true;
    s4.traps.push((sq("f6"), "Black".into()));
    let s4 = resolve(&s4, &[("white-1", idle(1, 2)), ("white-2", idle(1, 2)), ("red-1", red1.into()), ("red-2", idle(3, 4).replace("token = 3", "token = 5"))]);
    assert_eq!(s4.chars[purple].at, sq("f6"), "{:#?}", s4.log);
    assert!(has(&s4.log, "Purple is trapped and cannot take the secret tunnel"), "{:#?}", s4.log);
}

/// Alternate Board Setup: the report shows the secret tunnel's entrance (s) and exits (x) in the
/// grid, under a character too, and names them under the board.
#[test]
fn the_secret_tunnel_is_shown_on_the_alternate_board() {
    let layout = include_str!("../../../scenarios/flag-dash-alternate.toml");
    let mut s = FlagDash.setup(layout, &BTreeMap::new()).unwrap();
    let text = section(&s, "white-1");
    let row = |text: &str, r: &str| text.lines().find(|l| l.trim_start().starts_with(&format!("{r} "))).unwrap().to_string();
    // Columns a.. at 3 characters each from the fifth: f is the sixth column.
    let cell = |line: &str, col: usize| line[5 + 3 * col..5 + 3 * col + 2].to_string();
    assert_eq!(cell(&row(&text, "6"), 5), "s ", "{text}");
    assert_eq!(cell(&row(&text, "10"), 1), "x ", "{text}");
    assert_eq!(cell(&row(&text, "2"), 9), "x ", "{text}");
    assert!(text.contains("Secret tunnel: s entrance f6, x exits (White's b10, Red's j2)"), "{text}");
    put(&mut s, "Purple", "f6");
    let text = section(&s, "white-1");
    assert_eq!(cell(&row(&text, "6"), 5), "Ps", "{text}");
    // The basic board has no secret tunnel and says nothing of one.
    assert!(!section(&new_game(&[]), "white-1").contains("Secret tunnel"));
}

// ---- the secret custom layout ----

/// Custom Layout (secret): before round 1 each team's first seat sets up the team's half (flag,
/// characters, tunnels); the core seals both orders until both are in, then both are revealed.
#[test]
fn secret_layout_is_a_sealed_step_of_both_teams() {
    let s = new_game(&[("layout", "secret")]);
    match FlagDash.pending(&s) {
        Pending::Orders(a) => {
            let v: Vec<(&str, &str)> = a.iter().map(|x| (x.role.as_str(), x.kind.as_str())).collect();
            assert_eq!(v, [("red-1", "layout"), ("white-1", "layout")]);
        }
        p => panic!("{p:?}"),
    }
    assert_eq!(check_order(&s, "white-1", &FlagDash.default_order(&s, "white-1")), Ok(()));
    assert!(check_order(&s, "white-2", &FlagDash.default_order(&s, "white-1")).is_err(), "only the first seat");
    let bad = |o: &str| check_order(&s, "white-1", &orders(o)).unwrap_err()[0].field.clone();
    let ok = "flag = \"b1\"\ncharacters = { Green = \"a5\", Orange = \"i5\", Black = \"b2\" }\ntunnels = [\"b1\", \"h4\"]";
    assert_eq!(check_order(&s, "white-1", &orders(ok)), Ok(()));
    assert_eq!(bad(&ok.replace("a5", "a6")), "characters.Green", "row 6 is Red's half");
    assert_eq!(bad(&ok.replace("Orange = \"i5\", ", "")), "characters");
    assert_eq!(bad(&ok.replace("b2", "a5")), "characters");
    assert_eq!(bad(&ok.replace("\"h4\"]", "\"h4\", \"h3\"]")), "tunnels");
    let map: BTreeMap<String, Orders> = [("white-1".to_string(), orders(ok)), ("red-1".to_string(), FlagDash.default_order(&s, "red-1"))].into();
    let s1 = resolve_orders(&FlagDash, &s, &map, &mut Ctx::new([0; 32])).unwrap();
    assert_eq!(s1.stage, Stage::Plan);
    assert_eq!(s1.flags.white, FlagAt::Space(sq("b1")));
    assert_eq!(s1.chars[ch(&s1, "Orange")].at, sq("i5"));
    let mut t = s1.tunnels.clone();
    t.sort();
    assert_eq!(t, [sq("b1"), sq("c8"), sq("g8"), sq("h4")]);
    assert!(has(&s1.log, "Team White reveals its half: flag b1"));
}

/// Reports are emailed: every text the view gives the template stays well under 100 characters,
/// on the widest board with abilities on, through a whole bot game.
#[test]
fn view_texts_are_short_on_the_alternate_board() {
    fn walk(v: &serde_json::Value) {
        match v {
            serde_json::Value::String(t) => {
                for l in t.lines() {
                    assert!(l.chars().count() <= 94, "too long: {l}");
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(walk),
            serde_json::Value::Object(o) => o.values().for_each(walk),
            _ => {}
        }
    }
    let layout = include_str!("../../../scenarios/flag-dash-alternate.toml");
    let mut s = FlagDash.setup(layout, &opts(&[("abilities", "true")])).unwrap();
    let mut players = Ctx::new([3; 32]);
    while let Pending::Orders(asks) = FlagDash.pending(&s) {
        let o: BTreeMap<String, Orders> = asks.iter().map(|a| (a.role.clone(), FlagDash.bot_order(&s, &a.role, &mut players))).collect();
        s = resolve_orders(&FlagDash, &s, &o, &mut Ctx::new([1; 32])).unwrap();
        for r in FlagDash.roles(&s) {
            walk(&FlagDash.view(&s, &r));
        }
    }
}

/// Setup: "Players each select one character that only they control (their runner)": any
/// character may be the defender, chosen with `white-defender` / `red-defender`.
#[test]
fn setup_players_choose_their_runners() {
    let s = new_game(&[("abilities", "true"), ("white-defender", "Green"), ("red-defender", "purple")]);
    let (green, black) = (ch(&s, "Green"), ch(&s, "Black"));
    assert!(!s.chars[green].is_runner() && s.chars[green].at == sq("e2"), "Green takes the defender's place");
    assert_eq!(s.chars[black].seat, Some(1));
    assert_eq!(s.chars[black].at, sq("a3"), "Black takes Green's runner place");
    // The Tech Nerd is now a runner, so its trap cards are in white-1's hand; Green's jump is not.
    let white1 = s.seats.iter().find(|x| x.role == "white-1").unwrap();
    assert!(white1.cards.contains(&Card::Trap) && !white1.cards.contains(&Card::Jump), "{:?}", white1.cards);
    assert!(!s.chars[ch(&s, "Purple")].is_runner() && s.chars[ch(&s, "Yellow")].seat == Some(1));
    let e = FlagDash.setup(DEFAULT_LAYOUT, &opts(&[("white-defender", "Purple")])).unwrap_err();
    assert!(e.to_string().contains("not a character of team white"), "{e}");
}

/// Character Abilities, Trap: "trapped there until a player plays their reset priority token and
/// selects the trapped character". Nothing else moves it: a tunnel use cannot bump it off its
/// tunnel, which is then not a destination (the other tunnels: tests/rules/flag-dash.toml).
#[test]
fn ability_trap_holds_against_a_tunnel_bump() {
    let mut s = abilities();
    s.tunnels = vec![sq("c8"), sq("g3")];
    put(&mut s, "Blue", "c8");
    put(&mut s, "Orange", "g3");
    s.traps.push((sq("c8"), "Green".into()));
    let blue = ch(&s, "Blue");
    s.chars[blue].trapped = true;
    let orange = ch(&s, "Orange");
    let log = one_move(&mut s, "white-2", mp(Card::Forward, 1, None, None, &["runner: tunnel c8, card"]));
    assert!(has(&log, "is trapped and cannot be bumped"), "{log:#?}");
    assert_eq!(s.chars[blue].at, sq("c8"));
    assert!(s.chars[blue].trapped);
    assert_ne!(s.chars[orange].at, sq("c8"));
}

/// Action Cards, Run ("When grass is facing you, the card is oriented correctly"): the form tells
/// each team which way each Run card moves its characters on the printed board, and the engine
/// moves them exactly that way (Team Red's forward is down the printed board).
#[test]
fn the_form_says_where_each_run_card_goes_for_the_team() {
    for role in ["white-1", "red-1"] {
        let s = cleared(&[]);
        let help = forms::help(&s, role).join("\n");
        for line in forms::help(&s, role) {
            assert!(line.chars().count() < 98, "{line}");
        }
        for card in [Card::Forward, Card::Back, Card::Left, Card::Right] {
            let said = help.split(&format!("{} = ", card.key())).nth(1).unwrap_or_else(|| panic!("{role}: {card:?} in\n{help}"));
            let dir = layout::Dir::parse(&said[..1]).unwrap();
            let mut t = s.clone();
            let runner = t.runner_of(role).unwrap();
            t.chars[runner].at = sq("e5");
            one_move(&mut t, role, mp(card, 1, None, None, &["runner"]));
            let (dc, dr) = dir.delta();
            let want = Sq { c: 4 + dc, r: 4 + dr };
            assert_eq!(t.chars[runner].at, want, "{role} {card:?}: the form says {}", dir.key());
        }
    }
    let red = forms::help(&cleared(&[]), "red-2").join("\n");
    assert!(red.contains("forward = s, back = n, left = e, right = w"), "{red}");
    assert_eq!(view::view(&cleared(&[]), "red-2")["run_cards"], "forward s, back n, left e, right w");
}

/// The grammar the form states: a bare WHO is "WHO: card", and every alternative plays the card as
/// often as the token says (the combo card after it) unless it says "no card".
#[test]
fn a_bare_who_is_who_card_as_the_form_says() {
    let s = cleared(&[]);
    let help = forms::help(&s, "red-1").join("\n");
    assert!(help.contains("A bare \"runner\" is \"runner: card\""), "{help}");
    assert!(help.contains("\"runner\" is your own runner (Purple)"), "{help}");
    let m = mp(Card::Forward, 3, Some(Card::Left), None, &["runner"]);
    assert_eq!(parse_try(&s, "red-1", &m, "runner"), parse_try(&s, "red-1", &m, "runner: card"));
    assert_eq!(parse_try(&s, "red-1", &m, "runner"), parse_try(&s, "red-1", &m, "runner: card, combo"));
    let m4 = mp(Card::Forward, 4, None, None, &["runner"]);
    assert_eq!(parse_try(&s, "red-1", &m4, "runner: boost e"), parse_try(&s, "red-1", &m4, "runner: boost e, card, card"));
}

/// `plan` changed in one way each: what a player could get wrong in a plan (a card or token not in
/// hand, a combo or copy card missing, wrong or extra, a move too many or too few, `spy_on`, an
/// empty or unreadable `try`, `tie_first`, `secret_tunnel`).
fn plan_mutations(plan: &Plan) -> Vec<Plan> {
    let mut out = Vec::new();
    let mut with = |f: &dyn Fn(&mut Plan)| {
        let mut p = plan.clone();
        f(&mut p);
        out.push(p);
    };
    for k in 0..plan.moves.len() {
        for c in Card::BASIC.into_iter().chain([Card::Jump, Card::Dig]) {
            with(&|p| p.moves[k].card = c);
            with(&|p| p.moves[k].combo = Some(c));
            with(&|p| p.moves[k].copy = Some(c));
        }
        for t in [Token::N(1), Token::N(3), Token::N(5), Token::N(7), Token::Cat3, Token::Spy] {
            with(&|p| p.moves[k].token = t);
        }
        with(&|p| p.moves[k].combo = None);
        with(&|p| p.moves[k].copy = None);
        with(&|p| p.moves[k].spy_on = Some("red-1".into()));
        with(&|p| p.moves[k].tries.clear());
        with(&|p| p.moves[k].tries.push("nobody".into()));
        with(&|p| p.moves[k].tries = vec!["runner: card, card, card, card".into()]);
    }
    with(&|p| p.moves.truncate(1));
    with(&|p| p.moves.push(p.moves[0].clone()));
    for r in [None, Some("white"), Some("white-1"), Some("white-2"), Some("red-1")] {
        with(&|p| p.tie_first = r.map(str::to_string));
    }
    with(&|p| p.secret_tunnel = !p.secret_tunnel);
    out
}

/// The built-in player's order checked as typed (`Game::policy_checked`) is exactly what
/// `check_order` makes of its order as TOML (`policy_order`), drawing the same choices, at every
/// step of whole games in every mode; and `plan_passes` agrees with `parse_plan` on its plans
/// changed in every way a plan can go wrong.
#[test]
fn the_typed_built_in_order_is_the_checked_toml_order() {
    let modes: [&[(&str, &str)]; 8] = [
        &[],
        &[("players", "3")],
        &[("players", "2")],
        &[("players", "2"), ("mode", "advanced")],
        &[("abilities", "true")],
        &[("abilities", "true"), ("players", "2")],
        &[("abilities", "true"), ("players", "3"), ("layout", "secret")],
        &[("abilities", "true"), ("players", "2"), ("mode", "advanced")],
    ];
    let alternate = include_str!("../../../scenarios/flag-dash-alternate.toml");
    let (mut plans, mut refused) = (0, 0);
    for (k, kv) in modes.iter().enumerate() {
        for (g, layout) in [DEFAULT_LAYOUT, alternate].into_iter().enumerate() {
            let mut s = FlagDash.setup(layout, &opts(kv)).unwrap();
            let seed = [(10 * k + g) as u8; 32];
            let (mut typed, mut toml) = (Ctx::quiet(seed), Ctx::quiet(seed));
            while let Pending::Orders(asks) = FlagDash.pending(&s) {
                let mut o = BTreeMap::new();
                for a in asks {
                    let c = FlagDash.policy_checked(&s, &a.role, "built-in", &mut typed);
                    let x = FlagDash.policy_order(&s, &a.role, "built-in", &mut toml);
                    assert_eq!(c, FlagDash.check_order(&s, &a.role, &x), "{kv:?} {}: {x:?}", a.role);
                    assert_eq!(typed.next_u32(), toml.next_u32(), "the same choices drawn");
                    if let Ok(orders::Parsed::Plan(p)) = &c {
                        plans += 1;
                        for m in plan_mutations(p) {
                            let read = orders::parse(&s, &a.role, &orders::plan_orders(&m));
                            let passes = orders::plan_passes(&s, &a.role, &m);
                            assert_eq!(passes, read == Ok(orders::Parsed::Plan(m.clone())), "{kv:?} {}: {m:?} read as {read:?}", a.role);
                            refused += usize::from(!passes);
                        }
                    }
                    o.insert(a.role, x);
                }
                s = resolve_orders(&FlagDash, &s, &o, &mut Ctx::quiet([1; 32])).unwrap();
            }
        }
    }
    assert!(plans > 100 && refused > 1000, "{plans} plans, {refused} refused changes");
}

/// The built-in player's plan passes the order check as it is planned, in every seating: in the
/// basic 2-player game it names no seat to move first on a tie (2-Player Rules, Basic: no
/// teammate; the check refuses any), where it once named its own and fell back to the default plan.
#[test]
fn built_in_plans_pass_the_check_in_every_seating() {
    let modes: [&[(&str, &str)]; 4] = [&[], &[("players", "3")], &[("players", "2")], &[("players", "2"), ("abilities", "true")]];
    for kv in modes {
        let s = FlagDash.setup(DEFAULT_LAYOUT, &opts(kv)).unwrap();
        let mut x: u32 = 12345;
        let mut rng = |n: u32| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (x >> 8) % n
        };
        for _ in 0..30 {
            for role in FlagDash.roles(&s) {
                let p = super::bot::plan(&s, &role, &mut rng);
                assert!(orders::plan_passes(&s, &role, &p), "{kv:?} {role}: {p:?}");
            }
        }
    }
}

/// tester t17b-2, -3, -14: a tunnel under a pawn is shown at the square's corner; a path over a
/// step another path (or its own) took before is drawn beside it, each character's path ending
/// in one arrow head; Black's path is outlined in white, so that its black dashes show.
#[test]
fn the_picture_keeps_tunnels_under_pawns_and_paths_over_one_step_in_sight() {
    let step = |n: &str, a: &str, b: &str| serde_json::json!({ "name": n, "from": a, "to": b });
    let v = serde_json::json!({
        "phase_text": "Round 2", "tiebreak": "White",
        "board_data": { "columns": 9, "rows": 10, "out_columns": [], "walls": [], "tunnels": ["c3"], "traps": [],
            "paths": [step("Green", "a3", "a4"), step("Black", "b2", "a2"), step("Black", "a2", "a3"), step("Black", "a3", "a2"), step("Black", "a2", "b2")] },
        "characters": [
            { "name": "Green", "mark": "G", "team": "White", "role": "runner", "at": "a4" },
            { "name": "Black", "mark": "B", "team": "White", "role": "defender", "at": "b2" },
            { "name": "Purple", "mark": "P", "team": "Red", "role": "runner", "at": "c3" },
        ],
    });
    let svg = super::picture::draw(&v);
    // The tunnel on c3 (centre 160,440): its ring, and its badge at the corner over Purple.
    assert!(svg.contains("<circle cx=\"160\" cy=\"440\" r=\"16\""), "the tunnel: {svg}");
    assert!(svg.contains("<circle cx=\"145\" cy=\"425\" r=\"8.5\""), "the badge: {svg}");
    // Three runs: Green's; Black's way out (b2-a2-a3); its way back over the same steps, 11 pixels
    // apart (a3's centre is 64,440), to b2.
    assert_eq!(svg.matches("<polyline").count(), 6, "{svg}");
    assert!(svg.contains("points=\"75,451 75,499 "), "Black's way back beside its way out: {svg}");
    assert_eq!(svg.matches("<polygon").count(), 2, "one arrow head a character: {svg}");
    assert!(svg.contains("stroke=\"#FFFFFF\" stroke-width=\"7\""), "Black's path outlined in white");
}
