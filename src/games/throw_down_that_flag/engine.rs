//! The round structure as a resumable procedure: pull a token, activate both sides in the order its
//! face says, reset the bag after the third colors token, check the day's conditions; it runs from
//! where the state stands until a First Minnesota activation needs an answer that neither this
//! step's order nor a standing order gives, or the game ends.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use super::hex::Space;
pub use super::rules::{ACTIONS, Attack, AttackKind, Plan, Tally, check_melee, check_path, check_plan, check_shoot, cols_rows, enemy_next_to};
use super::scenario::Scenario;
use super::state::{Activation, Company, DayResult, Side, State, Token};
use crate::dice::Ctx;
use crate::game::Outcome;

/// [`Ctx::say`] with the text as `format!` writes it, formatted only when the context keeps
/// events (not for a quiet one: `pbem simulate` reads none).
macro_rules! say {
    ($ctx:expr, $($arg:tt)*) => {
        if !$ctx.is_quiet() {
            $ctx.say(format!($($arg)*));
        }
    };
}

/// Symbols on success-bag tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Symbol {
    /// First Minnesota success.
    UnionSuccess,
    /// First Minnesota flame.
    UnionFlame,
    /// Confederate success.
    ConfederateSuccess,
    /// Confederate flame.
    ConfederateFlame,
    /// Nothing.
    Blank,
}

impl Symbol {
    fn name(self) -> &'static str {
        match self {
            Symbol::UnionSuccess => "a First Minnesota success",
            Symbol::UnionFlame => "a First Minnesota flame",
            Symbol::ConfederateSuccess => "a Confederate success",
            Symbol::ConfederateFlame => "a Confederate flame",
            Symbol::Blank => "a blank",
        }
    }
}

/// The success bag's tokens in their fixed order (the order draws index into).
pub fn success_tokens(sc: &Scenario) -> Vec<Symbol> {
    let b = &sc.success_bag;
    let mut v = Vec::new();
    for (sym, n) in [
        (Symbol::UnionSuccess, b.union_success),
        (Symbol::UnionFlame, b.union_flame),
        (Symbol::ConfederateSuccess, b.confederate_success),
        (Symbol::ConfederateFlame, b.confederate_flame),
        (Symbol::Blank, b.blank),
    ] {
        v.extend(std::iter::repeat_n(sym, n as usize));
    }
    v
}

/// Pulls `n` tokens without replacement from the full success bag (tokens go back after every
/// attack, Player Activations: Shoot and Melee), each pull a logged draw.
pub fn pull(sc: &Scenario, ctx: &mut Ctx, n: u32, why: &str) -> Tally {
    let mut left = success_tokens(sc);
    let mut tally = Tally::default();
    for k in 0..n.min(left.len() as u32) {
        let i = ctx.draw_told(left.len() as u32, |i| format!("{why}, token {} of {n}: {}.", k + 1, left[i as usize].name())) as usize;
        match left.remove(i) {
            Symbol::UnionSuccess => tally.union_success += 1,
            Symbol::UnionFlame => tally.union_flame += 1,
            Symbol::ConfederateSuccess => tally.confederate_success += 1,
            Symbol::ConfederateFlame => tally.confederate_flame += 1,
            Symbol::Blank => {}
        }
    }
    tally
}

// ---------------------------------------------------------------------------------------------
// Movement

fn move_company(s: &mut State, ctx: &mut Ctx, i: usize, path: &[Space]) {
    if let Some(&end) = path.last() {
        let from = s.companies[i].at.replace(end);
        say!(ctx, "{} moves from {} to {}.", s.label(i), from.map(|p| p.name()).unwrap_or_default(), path.iter().map(|p| p.name()).collect::<Vec<_>>().join(" then "));
    }
}

/// Carries out a checked plan (Player Activations). A company removed by return fire or a
/// counter-hit makes no move after its attack.
/// Returns what the attack's pull showed, if there was one.
pub fn execute(s: &mut State, ctx: &mut Ctx, i: usize, plan: &Plan) -> Option<Tally> {
    if plan.action() == "pass" {
        say!(ctx, "{} passes.", s.label(i));
        return None;
    }
    move_company(s, ctx, i, &plan.before);
    let tally = plan.attack.and_then(|a| attack(s, ctx, i, a));
    if s.companies[i].at.is_some() {
        move_company(s, ctx, i, &plan.after);
    }
    tally
}

// ---------------------------------------------------------------------------------------------
// Attacks

/// Pulls the tokens of an attack and applies the result; returns what the pull showed.
pub fn attack(s: &mut State, ctx: &mut Ctx, i: usize, a: Attack) -> Option<Tally> {
    let d = match (s.companies[i].at, s.companies[a.target].at) {
        (Some(p), Some(q)) => p.distance(q),
        _ => return None,
    };
    let n = a.tokens;
    match a.kind {
        AttackKind::Shoot => say!(ctx, "{} shoots at {} at distance {d}, pulling {n} tokens.", s.label(i), s.label(a.target)),
        AttackKind::Melee => say!(ctx, "{} melees {}, pulling {n} tokens.", s.label(i), s.label(a.target)),
    }
    let why = if ctx.is_quiet() {
        String::new()
    } else {
        format!("Success bag, company {}'s {}", s.companies[i].letter, if a.kind == AttackKind::Shoot { "shot" } else { "melee" })
    };
    let tally = pull(&s.scenario, ctx, a.tokens, &why);
    say!(
        ctx,
        "Pulled: successes {} First Minnesota, {} Confederate; flames {} First Minnesota, {} Confederate.",
        tally.union_success,
        tally.confederate_success,
        tally.union_flame,
        tally.confederate_flame
    );
    match a.kind {
        AttackKind::Shoot => apply_shot(s, ctx, i, a.target, d, tally),
        AttackKind::Melee => apply_melee(s, ctx, i, a.target, tally),
    }
    Some(tally)
}

/// The result of a shot at distance `d` (Player Activations: Shoot): the shot hits when First
/// Minnesota successes are at least `d`; a target with a gun marker returns fire, hitting when
/// Confederate successes are at least `d`; two or more flames of a side overheat its gun marker,
/// hit or not. Against a target without a gun marker every Confederate symbol is ignored.
/// Both hits land together (interpretation: the return fire is not prevented by the shot).
pub fn apply_shot(s: &mut State, ctx: &mut Ctx, i: usize, target: usize, d: u32, tally: Tally) {
    let armed = s.companies[target].gun;
    let hit = tally.union_success >= d;
    let back = armed && tally.confederate_success >= d;
    if tally.union_flame >= 2 && s.companies[i].gun {
        s.companies[i].gun = false;
        say!(ctx, "Two or more First Minnesota flames: company {}'s gun marker overheats and is removed.", s.companies[i].letter);
    }
    if armed && tally.confederate_flame >= 2 {
        s.companies[target].gun = false;
        say!(ctx, "Two or more Confederate flames: {}'s gun marker overheats and is removed.", s.label(target));
    }
    if !armed {
        say!(ctx, "{} has no gun marker: the Confederate results are ignored.", s.label(target));
    }
    if hit {
        say!(ctx, "The shot hits {}.", s.label(target));
    } else {
        ctx.say("The shot misses.");
    }
    if back {
        say!(ctx, "Return fire hits {}.", s.label(i));
    }
    if hit {
        damage(s, ctx, target, false);
    }
    if back {
        damage(s, ctx, i, false);
    }
}

/// The result of a melee (Player Activations: Melee): it hits when First Minnesota successes are at
/// least the target's Str; the counter-attack hits when Confederate successes are at least the
/// attacker's own Str. Interpretation: flames mean nothing in melee (no shot is fired), and both
/// results are judged on the Str before either hit.
pub fn apply_melee(s: &mut State, ctx: &mut Ctx, i: usize, target: usize, tally: Tally) {
    let hit = tally.union_success >= s.companies[target].str;
    let back = tally.confederate_success >= s.companies[i].str;
    if hit {
        say!(ctx, "The charge hits {}.", s.label(target));
    } else {
        ctx.say("The charge fails to hit.");
    }
    if back {
        say!(ctx, "The counter-attack hits {}.", s.label(i));
    }
    if hit {
        damage(s, ctx, target, true);
    }
    if back {
        damage(s, ctx, i, false);
    }
}

/// Reduces Str by one; at Str 0 the company leaves the map. Interpretation (the rulebook is
/// silent): colors whose company falls pass to the nearest company of the same side (ties by
/// letter), except that a Confederate colors company falling to a First Minnesota melee loses its
/// colors to the First Minnesota (they are taken).
pub fn damage(s: &mut State, ctx: &mut Ctx, i: usize, melee: bool) {
    let c = &mut s.companies[i];
    c.str = c.str.saturating_sub(1);
    if c.str > 0 {
        say!(ctx, "{} is down to Str {}.", s.label(i), s.companies[i].str);
        return;
    }
    let fell = c.at.take();
    say!(ctx, "{} is out of the fight (Str 0) and leaves the map.", s.label(i));
    if !s.companies[i].colors {
        return;
    }
    s.companies[i].colors = false;
    let side = s.companies[i].side;
    if side == Side::Confederate && melee {
        s.colors_taken = true;
        ctx.say("The Confederate colors are taken: \"Throw down that flag, or I'll run you through.\"");
        return;
    }
    let Some(p) = fell else { return };
    let heir = s.active(side).into_iter().min_by_key(|&j| (s.companies[j].at.map_or(u32::MAX, |q| q.distance(p)), s.companies[j].letter.as_str()));
    if let Some(j) = heir {
        s.companies[j].colors = true;
        say!(ctx, "The {} colors pass to {}.", side.name(), s.label(j));
    }
}

// ---------------------------------------------------------------------------------------------
// Confederate activations

/// The company on every space (row by row, `columns` a row), as [`State::at`] finds it: one look-up
/// a space for the path searches below instead of a pass over the companies.
pub fn occupancy(s: &State) -> Vec<Option<usize>> {
    let (c, r) = cols_rows(s);
    let mut grid = vec![None; (c * r) as usize];
    for (j, company) in s.companies.iter().enumerate().rev() {
        if let Some(p) = company.at.filter(|p| p.col < c && p.row < r) {
            grid[(p.row * c + p.col) as usize] = Some(j);
        }
    }
    grid
}

/// Steps to the nearest objective space for every space, moving through Confederate companies but
/// never through a First Minnesota company (`u32::MAX` when cut off).
pub fn objective_field(s: &State) -> Rc<Vec<u32>> {
    objective_field_with(s, &occupancy(s))
}

/// What an [`objective_field`] is a function of: the map's size, the objective spaces and the
/// spaces a First Minnesota company blocks. The objective spaces are those of the scenario's
/// objective names on a map of that size, so the names stand for them when inputs are compared.
struct FieldInputs {
    columns: u32,
    rows: u32,
    names: Vec<String>,
    objective: Vec<Space>,
    blocked: Vec<bool>,
}

impl FieldInputs {
    /// Whether these are the inputs of `s` with `occ` its [`occupancy`] (nothing made to compare).
    fn are_of(&self, s: &State, occ: &[Option<usize>]) -> bool {
        (self.columns, self.rows) == cols_rows(s)
            && self.names == s.scenario.map.objective
            && self.blocked.len() == occ.len()
            && self.blocked.iter().zip(occ).all(|(&b, o)| b == blocks(s, *o))
    }
}

/// Whether the company on a space (if any) blocks Confederate movement: a First Minnesota one.
fn blocks(s: &State, occupant: Option<usize>) -> bool {
    occupant.is_some_and(|j| s.companies[j].side == Side::Union)
}

/// The inputs of an [`objective_field`], the field, and the spaces it was worked out over.
type LastField = (FieldInputs, Rc<Vec<u32>>, Rc<[Space]>);

thread_local! {
    /// The last [`objective_field`] worked out on this thread, with its inputs: the field changes
    /// only when a First Minnesota company moves or falls, and is asked for at every Confederate
    /// activation and every plan of the built-in player.
    static LAST_FIELD: RefCell<Option<LastField>> = const { RefCell::new(None) };
}

/// [`objective_field`] with the board's [`occupancy`] at hand (the last one kept, see [`LAST_FIELD`]).
fn objective_field_with(s: &State, occ: &[Option<usize>]) -> Rc<Vec<u32>> {
    field_and_objective(s, occ).0
}

/// [`objective_field_with`] and the objective spaces ([`Scenario::objective`], kept with it).
fn field_and_objective(s: &State, occ: &[Option<usize>]) -> (Rc<Vec<u32>>, Rc<[Space]>) {
    let hit = LAST_FIELD.with_borrow(|last| last.as_ref().filter(|(k, ..)| k.are_of(s, occ)).map(|(_, f, o)| (f.clone(), o.clone())));
    if let Some(found) = hit {
        return found;
    }
    let (columns, rows) = cols_rows(s);
    let blocked = occ.iter().map(|&o| blocks(s, o)).collect();
    let inputs = FieldInputs { columns, rows, names: s.scenario.map.objective.clone(), objective: s.scenario.objective(), blocked };
    let field = Rc::new(search_objective_field(&inputs));
    let objective: Rc<[Space]> = inputs.objective.as_slice().into();
    LAST_FIELD.set(Some((inputs, field.clone(), objective.clone())));
    (field, objective)
}

/// The breadth-first search of [`objective_field`].
fn search_objective_field(f: &FieldInputs) -> Vec<u32> {
    let (c, r) = (f.columns, f.rows);
    let idx = |p: Space| (p.row * c + p.col) as usize;
    let blocked = |p: Space| f.blocked[idx(p)];
    let mut d = vec![u32::MAX; (c * r) as usize];
    let mut q = VecDeque::with_capacity((c * r) as usize);
    for &o in &f.objective {
        if o.col < c && o.row < r && !blocked(o) && d[idx(o)] == u32::MAX {
            d[idx(o)] = 0;
            q.push_back(o);
        }
    }
    while let Some(p) = q.pop_front() {
        for n in p.neighbors_iter(c, r) {
            if d[idx(n)] == u32::MAX && !blocked(n) {
                d[idx(n)] = d[idx(p)] + 1;
                q.push_back(n);
            }
        }
    }
    d
}

/// Where Confederate company `i` ends its activation (Confederate Activations), written down since
/// the rulebook gives only its aim. It considers every space it can reach in up to
/// `confederate_move` steps, passing through Confederate companies but never through or onto a
/// First Minnesota company, and ending on an empty space (or staying). It picks the space with the
/// lowest key: (steps to the objective around First Minnesota companies, or "cut off"; plain
/// distance to the nearest objective space; steps used; columns moved sideways; column). So it
/// marches straight at the objective, goes around a First Minnesota company by the shortest way,
/// and, when every way is cut off, closes in as far as it can. No die is rolled: given the
/// position, the choice is fixed.
pub fn confederate_destination(s: &State, i: usize) -> Option<Space> {
    let from = s.companies[i].at?;
    let (c, r) = cols_rows(s);
    let occ = occupancy(s);
    let (field, obj) = field_and_objective(s, &occ);
    let idx = |p: Space| (p.row * c + p.col) as usize;
    let geo = |p: Space| obj.iter().map(|&o| o.distance(p)).min().unwrap_or(u32::MAX);
    let key = |p: Space, steps: u32| (field[idx(p)], geo(p), steps, p.col.abs_diff(from.col), p.col);
    let mut best = (key(from, 0), from);
    let mut seen = vec![u32::MAX; (c * r) as usize];
    seen[idx(from)] = 0;
    let mut q = VecDeque::from([from]);
    while let Some(p) = q.pop_front() {
        let steps = seen[idx(p)];
        if steps >= s.scenario.rules.confederate_move {
            continue;
        }
        for n in p.neighbors_iter(c, r) {
            if seen[idx(n)] != u32::MAX {
                continue;
            }
            let occupant = occ[idx(n)];
            if occupant.is_some_and(|j| s.companies[j].side == Side::Union) {
                continue;
            }
            seen[idx(n)] = steps + 1;
            q.push_back(n);
            if occupant.is_none() {
                let k = key(n, steps + 1);
                if k < best.0 {
                    best = (k, n);
                }
            }
        }
    }
    Some(best.1)
}

/// A Confederate company's activation: it moves as [`confederate_destination`] says; entering an
/// objective space it breaks through and leaves the map. It never attacks.
pub fn confederate_activation(s: &mut State, ctx: &mut Ctx, i: usize) {
    let Some(to) = confederate_destination(s, i) else { return };
    let from = s.companies[i].at.expect("on the map");
    if to == from {
        say!(ctx, "{} holds at {} (no way forward).", s.label(i), from.name());
        return;
    }
    s.companies[i].at = Some(to);
    say!(ctx, "{} advances from {} to {}.", s.label(i), from.name(), to.name());
    if s.scenario.objective().contains(&to) {
        s.companies[i].at = None;
        s.companies[i].broke_through = true;
        say!(ctx, "{} breaks through the line at {} ({} of {}).", s.label(i), to.name(), s.breakthroughs(), s.scenario.rules.breakthrough);
    }
}

// ---------------------------------------------------------------------------------------------
// Rounds

/// All activation tokens of a day: one letter per letter used by either side, then three colors.
pub fn all_tokens(companies: &[Company]) -> Vec<Token> {
    let mut letters: Vec<String> = companies.iter().map(|c| c.letter.clone()).collect();
    letters.sort();
    letters.dedup();
    let mut v: Vec<Token> = letters.into_iter().map(Token::Letter).collect();
    v.extend([Token::Colors, Token::Colors, Token::Colors]);
    v
}

/// The company of `side` a token activates: the letter's company, or the colors holder.
pub fn activated(s: &State, token: &Token, side: Side) -> Option<usize> {
    match token {
        Token::Letter(l) => s.by_letter(side, l),
        Token::Colors => s.colors_of(side),
    }
}

/// Round Structure 1: pulls a token and its face. A letter neither side still has is removed from
/// the game; otherwise a letter goes to the top row, a colors token to the bottom row. A colors
/// token is never removed, even when neither side holds colors (interpretation: the three colors
/// tokens are what ends a round, so a round always ends).
fn pull_token(s: &mut State, ctx: &mut Ctx) {
    let (round, n, bag) = (s.round, s.bag.len(), &s.bag);
    let i = ctx.draw_told(n as u32, |i| format!("Round {round}: the {} token is pulled from the activation bag ({n} in it).", bag[i as usize].name())) as usize;
    let token = s.bag.remove(i);
    let f = ctx.draw_told(2, |i| {
        if i == 0 {
            "It lies First Minnesota side up: the First Minnesota activates first.".into()
        } else {
            "It lies Confederate side up: the Confederates activate first.".into()
        }
    });
    let first = if f == 0 { Side::Union } else { Side::Confederate };
    match &token {
        Token::Letter(l) => {
            if activated(s, &token, Side::Union).is_none() && activated(s, &token, Side::Confederate).is_none() {
                say!(ctx, "Neither side has a company {l} any more: the token is removed from the game.");
                if !ctx.is_quiet() {
                    super::summary::line(s, format!("Round {}: the letter {l} token is removed from the game (no company {l} left).", s.round));
                }
                s.removed.push(token);
                return;
            }
            s.letters_row.push(l.clone());
        }
        Token::Colors => s.colors_row += 1,
    }
    s.current = Some(Activation { token, first, done: Vec::new() });
    if !ctx.is_quiet() {
        super::summary::open_token(s);
    }
}

/// Round Structure 3: every token not removed goes back into the bag.
fn reset_bag(s: &mut State, ctx: &mut Ctx) {
    let mut bag = all_tokens(&s.companies);
    for r in &s.removed {
        if let Some(k) = bag.iter().position(|x| x == r) {
            bag.remove(k);
        }
    }
    s.bag = bag;
    s.letters_row.clear();
    s.colors_row = 0;
    say!(ctx, "The third colors token is resolved: round {} ends and the bag is reset.", s.round);
    if !ctx.is_quiet() {
        super::summary::line(s, format!("Round {} ends: the bag is reset.", s.round));
    }
    s.round += 1;
}

/// The day's end, if reached: (won, summary).
pub(super) fn day_over(s: &State) -> Option<(bool, String)> {
    let r = &s.scenario.rules;
    let none_left = |side: Side| !s.companies.iter().any(|c| c.side == side && c.at.is_some());
    let n = s.breakthroughs();
    let (won, why) = if n >= r.breakthrough {
        let companies = if n == 1 { "company" } else { "companies" };
        (false, format!("defeat, {n} Confederate {companies} broke through"))
    } else if none_left(Side::Union) {
        (false, "defeat, the First Minnesota is shattered".to_string())
    } else if s.colors_taken && r.colors_win {
        (true, "victory, the Confederate colors are taken".to_string())
    } else if none_left(Side::Confederate) {
        (true, "victory, no Confederate company is left on the field".to_string())
    } else if s.round > r.rounds {
        (true, format!("victory, the line held for {} rounds", r.rounds))
    } else {
        return None;
    };
    let lost = s.str_lost();
    let men = lost * r.men_per_str;
    Some((won, format!("{}: {why}; casualties {lost} Str (about {men} men)", s.scenario.name)))
}

/// The state of a new day: companies, a full bag, round 1.
pub fn start_day(scenario: &Scenario, carried: Option<&[Company]>) -> (Vec<Company>, Vec<Token>) {
    let mut companies = Vec::new();
    for (side, list) in [(Side::Union, &scenario.union), (Side::Confederate, &scenario.confederate)] {
        for c in list {
            let mut str = c.str;
            // Campaign (interpretation): a company that fought on July 2 starts July 3 with the Str
            // it ended July 2 with, its losses kept and no more (the July 3 file's own Str, the
            // historical remnant, is for July 3 played alone); one lost on July 2 (Str 0) is
            // absent; a company that was not there on July 2 (reinforcements) has the file's Str.
            // Its gun marker is back after the night.
            if side == Side::Union
                && let Some(prev) = carried.and_then(|v| v.iter().find(|p| p.side == Side::Union && p.letter == c.letter))
            {
                str = prev.str;
            }
            if str == 0 {
                continue;
            }
            companies.push(Company {
                side,
                letter: c.letter.clone(),
                str,
                start_str: str,
                at: scenario.space(&c.at),
                gun: c.gun,
                colors: c.colors,
                broke_through: false,
            });
        }
    }
    for side in [Side::Union, Side::Confederate] {
        let holder = companies.iter().any(|c| c.side == side && c.colors);
        if !holder && let Some(c) = companies.iter_mut().find(|c| c.side == side) {
            c.colors = true;
        }
    }
    let bag = all_tokens(&companies);
    (companies, bag)
}

fn finish_day(s: &mut State, ctx: &mut Ctx, won: bool, summary: String) {
    if !ctx.is_quiet() {
        ctx.say(summary.clone());
        super::summary::line(s, summary.clone());
    }
    let lost = s.str_lost();
    s.days.push(DayResult { name: s.scenario.name.clone(), won, summary, str_lost: lost, men_lost: lost * s.scenario.rules.men_per_str });
    s.current = None;
    s.asking = None;
    if let Some(next) = s.next.take()
        && !s.active(Side::Union).is_empty()
    {
            let (companies, bag) = start_day(&next, Some(&s.companies));
            s.scenario = next;
            s.companies = companies;
            s.bag = bag;
            s.removed.clear();
            s.letters_row.clear();
            s.colors_row = 0;
            s.round = 1;
            s.colors_taken = false;
        say!(ctx, "The campaign goes on: {}.", s.scenario.title);
        if ctx.wording() >= 4 && !ctx.is_quiet() {
            // The short account marks where the new day starts (report wording 4): its rounds
            // count from 1 again, and read as July 2's without it.
            super::summary::line(s, format!("The campaign's next day begins: {}.", s.scenario.title));
        }
        return;
    }
    let all_won = s.days.iter().all(|d| d.won);
    let text = if s.days.len() == 1 {
        s.days[0].summary.clone()
    } else {
        let men: u32 = s.days.iter().map(|d| d.men_lost).sum();
        let str_lost: u32 = s.days.iter().map(|d| d.str_lost).sum();
        format!(
            "Campaign {}: {}; casualties {str_lost} Str (about {men} men)",
            if all_won { "won" } else { "lost" },
            s.days.iter().map(|d| format!("{} {}", d.name, if d.won { "won" } else { "lost" })).collect::<Vec<_>>().join(", ")
        )
    };
    s.outcome = Some(Outcome { winner: all_won.then(|| super::state::ROLE.to_string()), summary: text });
}

/// Runs rounds from where the state stands, using `direct` for the company being asked, until a
/// First Minnesota activation has no answer (`s.asking` is set) or the game is over. A quiet
/// context (`pbem simulate`) keeps no short account (`s.summary` stays empty): nothing reads it.
pub fn run(s: &mut State, ctx: &mut Ctx, mut direct: Option<Plan>) {
    let told = !ctx.is_quiet();
    loop {
        if s.outcome.is_some() {
            return;
        }
        if let Some((won, summary)) = day_over(s) {
            finish_day(s, ctx, won, summary);
            continue;
        }
        let Some(act) = s.current.clone() else {
            pull_token(s, ctx);
            continue;
        };
        let next = [act.first, act.first.other()].into_iter().find(|x| !act.done.contains(x));
        let Some(side) = next else {
            s.current = None;
            if act.token == Token::Colors && s.colors_row >= 3 {
                reset_bag(s, ctx);
            }
            continue;
        };
        let mark = |s: &mut State| {
            if let Some(a) = s.current.as_mut() {
                a.done.push(side);
            }
        };
        let Some(i) = activated(s, &act.token, side) else {
            say!(ctx, "The {} side has no company for the {} token and does not activate.", side.name(), act.token.name());
            if told {
                super::summary::part(s, format!("no {} company", side.name()));
            }
            mark(s);
            continue;
        };
        if side == Side::Confederate {
            let before = told.then(|| super::summary::Before::of(s));
            confederate_activation(s, ctx, i);
            if let Some(before) = before {
                let text = super::summary::confederate(&before, s, i);
                super::summary::part(s, text);
            }
            mark(s);
            continue;
        }
        let (plan, source) = match direct.take() {
            Some(p) if s.asking == Some(i) => (Some(p), "your order"),
            _ => (super::orders::standing_plan(s, i), "standing order"),
        };
        let Some(plan) = plan.filter(|p| check_plan(s, i, p).is_ok()) else {
            s.asking = Some(i);
            if told {
                let text = format!("your {} is asked what to do", s.companies[i].letter);
                super::summary::part(s, text);
            }
            return;
        };
        s.asking = None;
        let before = told.then(|| super::summary::Before::of(s));
        let tally = execute(s, ctx, i, &plan);
        if let Some(before) = before {
            let text = super::summary::union(&before, s, i, &plan, tally, source, ctx.wording());
            super::summary::part(s, text);
        }
        mark(s);
    }
}
