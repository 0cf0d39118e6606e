//! The Union's threat search for the `sensible` player: every combination of its corps' routes
//! for a play of cards, each scored by the Confederate threat it leaves ([`Threat::of`]), on town
//! sets as bit words (maps of up to 64 towns) so that one board costs a few hundred instructions
//! and no allocation.

use super::{Graph, DISTANCE_DISCOUNT};
use crate::games::gettysburg_campaign::rules;
use crate::games::gettysburg_campaign::side::Side;
use crate::games::gettysburg_campaign::state::{Command, Location, State};

/// The map as town sets of one 64-bit word (town `i` is bit `i`) when it has at most 64 towns,
/// with the discounts the threat needs, built once per scenario.
pub(super) struct Bits {
    /// Each town's neighbours as a set (empty: the map is too big for one word).
    adj: Vec<u64>,
    /// `DISTANCE_DISCOUNT` to the power of 0, 1, 2, ... (one per possible road distance).
    discount: Vec<f64>,
}

impl Bits {
    pub(super) fn new(adj: &[Vec<usize>]) -> Self {
        let n = adj.len();
        // black_box: the same run-time `powi` as a distance known only at run time.
        let discount = (0..n.max(1) as i32).map(|k| DISTANCE_DISCOUNT.powi(std::hint::black_box(k))).collect();
        if n > 64 {
            return Bits { adj: Vec::new(), discount };
        }
        let set = |v: &mut dyn Iterator<Item = usize>| v.fold(0u64, |w, i| w | 1 << i);
        Bits { adj: adj.iter().map(|ns| set(&mut ns.iter().copied())).collect(), discount }
    }

    /// True when the map fits one word.
    pub(super) fn fits(&self) -> bool {
        !self.adj.is_empty()
    }
}

/// The towns where `held` (Union strength by town) is 0, as a town set (0 when the map does not
/// fit one word).
fn open_towns(g: &Graph, held: &[u32]) -> u64 {
    if g.bits.adj.is_empty() { 0 } else { held.iter().enumerate().fold(0u64, |w, (i, &h)| w | u64::from(h == 0) << i) }
}

/// Room to work out threats in, reused from board to board.
pub(super) struct Threat {
    /// The Confederate corps that stand somewhere: (town, strength), in corps order.
    conf: Vec<(usize, u32)>,
    /// The best chance, discounted, of taking each town.
    best: Vec<f64>,
    /// Each town's points as a float (0 for towns worth none), for [`Threat::sum`].
    points: Vec<f64>,
    /// The threat of the corps worked out so far, kept as `best` grows (one-word town sets
    /// only): a running total, so it may differ from [`Threat::sum`] by rounding (see
    /// [`Threat::at_least`]).
    partial: f64,
    /// Road distances and a queue, for maps too big for [`Bits`].
    roads: Vec<u32>,
    queue: std::collections::VecDeque<usize>,
}

impl Threat {
    /// For boards where the Confederates stand at `pos` (see [`super::positions`]).
    pub(super) fn new(s: &State, g: &Graph, pos: &[Option<usize>]) -> Self {
        let conf = (0..s.corps.len()).filter(|&c| s.corps[c].side == Side::Confederate).filter_map(|c| Some((pos[c]?, s.corps[c].strength))).collect();
        let points = g.points.iter().map(|&p| f64::from(p)).collect();
        Threat { conf, best: vec![0.0; g.adj.len()], points, partial: 0.0, roads: Vec::new(), queue: Default::default() }
    }

    /// Puts the Confederate corps that threaten most alone with the Union strength by town
    /// `held` first, so that [`Threat::unless`] gives up sooner. The order changes no threat: each
    /// town's best chance is a maximum over the corps.
    pub(super) fn most_first(&mut self, s: &State, g: &Graph, held: &[u32]) {
        let open = open_towns(g, held);
        let mut alone: Vec<(f64, (usize, u32))> = Vec::with_capacity(self.conf.len());
        for k in 0..self.conf.len() {
            // What [`Threat::unless`] works out for this corps alone.
            self.best.fill(0.0);
            self.partial = 0.0;
            self.add_corps(s, g, held, open, self.conf[k]);
            alone.push((self.sum(), self.conf[k]));
        }
        alone.sort_by(|a, b| b.0.total_cmp(&a.0));
        self.conf.clear();
        self.conf.extend(alone.into_iter().map(|a| a.1));
    }

    /// How much the Confederates threaten with the Union strength by town `held`: for each
    /// unscored town, its points times the best chance a Confederate corps has to take it (1 if no
    /// Union corps holds it, else the odds of its attack), discounted per road; towns the Union
    /// holds block the roads through them.
    pub(super) fn of(&mut self, s: &State, g: &Graph, held: &[u32]) -> f64 {
        self.unless(s, g, held, None, |_| false).expect("never given up")
    }

    /// [`Threat::of`], or `None` as soon as the threat of some of the Confederate corps makes
    /// `hopeless` true. `hopeless` is given a figure never more than the whole threat (the threat
    /// of some corps is never more than that of all of them, to the bit: each town's best chance
    /// is a maximum over the corps, summed in the same order, and rounding keeps order; and
    /// [`Threat::at_least`] is below that), so it may rely on the whole threat being at least as
    /// big. `open`: the towns free of Union corps as a town set ([`open_towns`]), if known.
    pub(super) fn unless(&mut self, s: &State, g: &Graph, held: &[u32], open: Option<u64>, hopeless: impl Fn(f64) -> bool) -> Option<f64> {
        self.best.fill(0.0);
        self.partial = 0.0;
        let open = open.unwrap_or_else(|| open_towns(g, held));
        let n = self.conf.len();
        for k in 0..n {
            self.add_corps(s, g, held, open, self.conf[k]);
            if k + 1 < n && hopeless(self.at_least(g)) {
                return None;
            }
        }
        Some(self.sum())
    }

    /// Adds Confederate corps `c` (town, strength) to the best chances worked out so far: by
    /// one-word town sets when the map fits one (`open`: its towns free of Union corps), else by
    /// a queue.
    fn add_corps(&mut self, s: &State, g: &Graph, held: &[u32], open: u64, c: (usize, u32)) {
        if g.bits.adj.is_empty() {
            self.by_queue(s, g, held, c);
        } else {
            self.by_bits(s, g, held, open, c);
        }
    }

    /// The threat of the corps worked out so far: each town's points times its best chance, in
    /// town order (towns worth no points add `+0.0`, which changes no sum but at most the sign of
    /// a zero one, which no comparison sees).
    fn sum(&self) -> f64 {
        let mut t = 0.0;
        for (p, b) in self.points.iter().zip(&self.best) {
            t += p * b;
        }
        t
    }

    /// A figure never more than [`Threat::sum`] of the corps worked out so far, cheaper: the
    /// running total `partial` less a margin. Both add the same non-negative terms (`partial` in
    /// pieces), so each is within a relative `k` × 2⁻⁵³ of the exact figure for `k` additions;
    /// 10⁻⁹ covers a million of them (a 64-town map has 64 per corps).
    pub(super) fn at_least(&self, g: &Graph) -> f64 {
        if g.bits.adj.is_empty() {
            return self.sum();
        }
        self.partial * (1.0 - 1e-9)
    }

    /// [`Threat::of`] for one Confederate corps of `strength` at `at`: breadth first, a whole
    /// road distance at a time, on one-word town sets (`open`: the towns free of Union corps).
    fn by_bits(&mut self, s: &State, g: &Graph, held: &[u32], open: u64, (at, strength): (usize, u32)) {
        let b = &g.bits;
        // Only `at` and towns free of Union corps lead on.
        let open = open | 1 << at;
        let (mut seen, mut frontier) = (1u64 << at, 1u64 << at);
        for d in 0.. {
            let mut next = 0;
            let mut f = frontier & open;
            while f != 0 {
                next |= b.adj[f.trailing_zeros() as usize];
                f &= f - 1;
            }
            next &= !seen;
            if next == 0 {
                break;
            }
            seen |= next;
            let mut x = next & g.scoring;
            // Once every town worth points is seen, no later road distance changes a chance.
            let last = g.scoring & !seen == 0;
            while x != 0 {
                let i = x.trailing_zeros() as usize;
                x &= x - 1;
                let odds = if held[i] == 0 { 1.0 } else { g.attack_chance(s, strength, held[i]) };
                let (old, new) = (self.best[i], odds * b.discount[d]);
                if new > old {
                    self.best[i] = new;
                    self.partial += self.points[i] * (new - old);
                }
            }
            if last {
                break;
            }
            frontier = next;
        }
    }

    /// [`Threat::by_bits`] by road distances from a queue, for any map.
    fn by_queue(&mut self, s: &State, g: &Graph, held: &[u32], (at, strength): (usize, u32)) {
        g.distances_into(at, &|t| held[t] == 0, &mut self.roads, &mut self.queue);
        for (i, &d) in self.roads.iter().enumerate() {
            if d == u32::MAX || d == 0 || g.points[i] == 0 {
                continue;
            }
            let odds = if held[i] == 0 { 1.0 } else { g.attack_chance(s, strength, held[i]) };
            self.best[i] = self.best[i].max(odds * g.bits.discount[d as usize - 1]);
        }
    }
}

/// One way a Union corps may use its moves: the towns it passes (`len` of them, 0: it stays).
#[derive(Clone, Copy)]
struct Route {
    towns: [usize; 2],
    len: usize,
}

impl Route {
    fn end(&self) -> Option<usize> {
        self.len.checked_sub(1).map(|k| self.towns[k])
    }
}

/// The ways Union corps `c` may use `steps` moves: stay, or roads through towns free of
/// Confederate corps (`conf_free`), in map order of the first town, two moves before one.
/// Into `out`, emptied first.
fn union_routes(s: &State, g: &Graph, conf_free: &[bool], c: usize, steps: u32, out: &mut Vec<Route>) {
    out.clear();
    out.push(Route { towns: [0; 2], len: 0 });
    let Some(at) = s.town_of(c).map(|t| s.scenario.town_rank(t)) else { return };
    for &n in g.adj[at].iter().filter(|&&n| conf_free[n]) {
        if steps > 1 {
            for &m in g.adj[n].iter().filter(|&&m| conf_free[m] && m != at) {
                out.push(Route { towns: [n, m], len: 2 });
            }
        }
        out.push(Route { towns: [n, 0], len: 1 });
    }
}

/// `routes` without those that end where an earlier one does (all of them but the first when the
/// corps stands nowhere, `placed` false). Combinations whose corps end in the same towns make the
/// same board and the same number of moves, so the same gain, and the first of them in odometer
/// order (the one of each corps' first route to its end) is the only one that can be picked.
fn first_per_end(routes: &[Route], placed: bool) -> std::rc::Rc<[Route]> {
    let end = |r: &Route| if placed { r.end() } else { None };
    let mut out: Vec<Route> = Vec::with_capacity(routes.len());
    for r in routes {
        if !out.iter().any(|o| end(o) == end(r)) {
            out.push(*r);
        }
    }
    out.into()
}

/// What the threat of one board is known to be: exactly, or at least (its search gave up).
#[derive(Clone, Copy)]
enum Known {
    Exactly(f64),
    AtLeast(f64),
}

/// The threat of every board scored in one order's search, by the board (the Union strength in
/// each town): plays of cards that command some of the same corps score many of the same boards.
/// Each board has a key the caller sums from its routes' changes ([`town_weight`]): the board
/// itself packed a byte a town when it fits (`packed`: at most 16 towns, at most 255 Union
/// strength in all), so that equal keys are equal boards; else a hash, and the boards are kept end
/// to end in one list to compare. Keys are found by an open-addressing table of their positions,
/// so a new board costs no allocation of its own. Only looked up, never listed.
struct Boards {
    /// Towns a board has.
    width: usize,
    /// Whether a key is the board itself (nothing else is compared).
    packed: bool,
    /// Every board kept, `width` values each (none when `packed`).
    held: Vec<u32>,
    /// What is known of each board's threat, in the order kept.
    known: Vec<Known>,
    /// Each board's key, in the order kept.
    keys: Vec<u128>,
    /// Positions in `known` plus one (0: empty), by key; a power of two long.
    slots: Vec<u32>,
    /// Each board's slot, in the order kept (to empty `slots` without clearing all of it).
    at: Vec<u32>,
}

impl Boards {
    fn new(width: usize, packed: bool) -> Self {
        Boards { width, packed, held: Vec::new(), known: Vec::new(), keys: Vec::new(), slots: vec![0; 1024], at: Vec::new() }
    }

    /// No boards, of `width` towns (`packed`: see [`packs`]), the lists kept.
    fn clear(&mut self, width: usize, packed: bool) {
        (self.width, self.packed) = (width, packed);
        if self.at.len() * 8 > self.slots.len() {
            self.slots.fill(0);
        } else {
            self.at.iter().for_each(|&i| self.slots[i as usize] = 0);
        }
        self.held.clear();
        self.known.clear();
        self.keys.clear();
        self.at.clear();
    }

    /// The slot of `board` (keyed `key`): where it is kept, or the empty slot where it belongs.
    fn slot(&self, board: &[u32], key: u128) -> usize {
        let mask = self.slots.len() - 1;
        let h = (key as u64 ^ (key >> 64) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut i = (h >> 40) as usize & mask;
        loop {
            let at = self.slots[i] as usize;
            if at == 0 || (self.keys[at - 1] == key && (self.packed || self.held[(at - 1) * self.width..at * self.width] == *board)) {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    /// What is known of `board` (keyed `key`), and its slot for [`Boards::put`].
    fn get(&self, board: &[u32], key: u128) -> (Option<Known>, usize) {
        let i = self.slot(board, key);
        let at = self.slots[i] as usize;
        ((at > 0).then(|| self.known[at - 1]), i)
    }

    /// Keeps `known` for `board` (keyed `key`) in slot `i`, which [`Boards::get`] gave for it
    /// (nothing put in between).
    fn put(&mut self, board: &[u32], key: u128, i: usize, known: Known) {
        if self.slots[i] > 0 {
            self.known[self.slots[i] as usize - 1] = known;
            return;
        }
        if !self.packed {
            self.held.extend_from_slice(board);
        }
        self.known.push(known);
        self.slots[i] = self.known.len() as u32;
        self.keys.push(key);
        self.at.push(i as u32);
        if self.known.len() * 2 > self.slots.len() {
            self.grow();
        }
    }

    /// Twice the slots, every board placed again.
    fn grow(&mut self) {
        self.slots = vec![0; self.slots.len() * 2];
        for k in 0..self.known.len() {
            let board = if self.packed { &[][..] } else { &self.held[k * self.width..(k + 1) * self.width] };
            let i = self.slot(board, self.keys[k]);
            self.slots[i] = k as u32 + 1;
            self.at[k] = i as u32;
        }
    }
}

/// Whether boards of `towns` towns holding `union` Union strength in all pack into a key a byte a
/// town ([`Boards`]).
fn packs(towns: usize, union: u64) -> bool {
    towns <= 16 && union <= 255
}

/// Town `i`'s weight in a board's key: the key of a board is the sum of each town's Union
/// strength times its weight (wrapping), so moving a corps changes it by two products. `packed`
/// ([`packs`]): byte `i`, so the key is the board itself; else a hash.
fn town_weight(i: usize, packed: bool) -> u128 {
    if packed {
        return 1 << (8 * i);
    }
    // splitmix64 of the town's index.
    let mut z = (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    u128::from(z ^ (z >> 31))
}

/// The key of `board` ([`town_weight`]).
fn board_key(board: &[u32], weights: &[u128]) -> u128 {
    board.iter().zip(weights).fold(0u128, |h, (&x, &w)| h.wrapping_add(u128::from(x).wrapping_mul(w)))
}

/// One route of a commanded corps as a change of the board: `strength` leaves `from` for
/// `end`, the board's key changes by `dh` ([`town_weight`]); `moved` 0 (and nothing else) when
/// the route moves nothing (the corps stays or stands nowhere).
#[derive(Clone, Copy, Default)]
struct Move {
    from: usize,
    end: usize,
    strength: u32,
    moved: usize,
    dh: u128,
}

impl Move {
    /// Makes the move on `board`, or takes it back when not `forth`, keeping `open` (the board's
    /// towns free of Union corps, [`open_towns`]) when `bits` (the map fits one word): back and
    /// forth again gives the same board and towns.
    fn shift(&self, board: &mut [u32], open: &mut u64, bits: bool, forth: bool) {
        if self.moved == 0 {
            return;
        }
        let (out, into) = if forth { (self.from, self.end) } else { (self.end, self.from) };
        board[out] -= self.strength;
        board[into] += self.strength;
        if bits {
            for t in [self.from, self.end] {
                *open = *open & !(1 << t) | u64::from(board[t] == 0) << t;
            }
        }
    }
}

/// A corps' routes ([`first_per_end`]) and their [`Move`]s, in the same order.
type RoutesAndMoves = (std::rc::Rc<[Route]>, std::rc::Rc<[Move]>);

/// The Union's search for one order: what every play of cards shares (where the corps stand,
/// the Union strength by town, the threat now, the towns free of Confederate corps) and the
/// boards scored so far.
pub(super) struct Search<'a> {
    s: &'a State,
    g: &'a Graph,
    base: Vec<Option<usize>>,
    threat: Threat,
    held: Vec<u32>,
    now: f64,
    conf_free: Vec<bool>,
    /// Each corps' routes by its moves (1 or 2), as [`first_per_end`] keeps them, and their
    /// [`Move`]s, once found.
    routes: Vec<[Option<RoutesAndMoves>; 2]>,
    /// Each town's weight in a board's key ([`town_weight`]) and the key of `held`.
    weights: Vec<u128>,
    held_hash: u128,
    /// The towns free of Union corps as they stand ([`open_towns`]).
    held_open: u64,
    /// The threat of every board scored so far: plays of cards that command some of the same
    /// corps, and corps of one strength that stand together, make many of the same boards.
    boards: Boards,
    /// Room for [`Search::plans`], kept from play to play.
    room: Room,
}

/// Room for [`Search::plans`]: the board of the routes picked for all but the first commanded
/// corps and its towns free of Union corps, the routes picked and the best so far, each
/// commanded corps' routes and their [`Move`]s (those of corps `k` from `first[k]` to
/// `first[k + 1]`).
#[derive(Default)]
struct Room {
    board: Vec<u32>,
    open: u64,
    pick: Vec<usize>,
    best: Vec<usize>,
    routes: Vec<std::rc::Rc<[Route]>>,
    moves: Vec<Move>,
    first: Vec<usize>,
    /// Every route of one corps ([`union_routes`]), before [`first_per_end`].
    all_routes: Vec<Route>,
}

thread_local! {
    /// The boards and room of the last search that ended on this thread, for the next to reuse
    /// emptied ([`Search::new`]): their lists need not grow again from nothing each order.
    static SPARE: std::cell::Cell<Option<(Boards, Room)>> = const { std::cell::Cell::new(None) };
}

impl Drop for Search<'_> {
    fn drop(&mut self) {
        let boards = std::mem::replace(&mut self.boards, Boards { width: 0, packed: false, held: Vec::new(), known: Vec::new(), keys: Vec::new(), slots: Vec::new(), at: Vec::new() });
        let mut room = std::mem::take(&mut self.room);
        room.routes.clear();
        SPARE.set(Some((boards, room)));
    }
}

impl<'a> Search<'a> {
    pub(super) fn new(s: &'a State, g: &'a Graph) -> Self {
        let base = super::positions(s);
        let mut threat = Threat::new(s, g, &base);
        let mut held = vec![0u32; g.adj.len()];
        for (c, p) in base.iter().enumerate() {
            if let Some(i) = p && s.corps[c].side == Side::Union {
                held[*i] += s.corps[c].strength;
            }
        }
        threat.most_first(s, g, &held);
        let now = threat.of(s, g, &held);
        let mut conf_free = vec![true; g.adj.len()];
        for corps in s.corps.iter().filter(|x| x.side == Side::Confederate) {
            if let Location::Town { town } = &corps.at {
                conf_free[s.scenario.town_rank(town)] = false;
            }
        }
        let routes = vec![[None, None]; s.corps.len()];
        let union = s.corps.iter().filter(|x| x.side == Side::Union).map(|x| u64::from(x.strength)).sum();
        let packed = packs(held.len(), union);
        let weights: Vec<u128> = (0..held.len()).map(|i| town_weight(i, packed)).collect();
        let held_hash = board_key(&held, &weights);
        let (boards, room) = match SPARE.take() {
            Some((mut boards, room)) => {
                boards.clear(held.len(), packed);
                (boards, room)
            }
            None => (Boards::new(held.len(), packed), Room::default()),
        };
        let held_open = open_towns(g, &held);
        Search { s, g, base, threat, boards, held, now, conf_free, routes, weights, held_hash, held_open, room }
    }

    /// The routes of corps `c` with `steps` moves (1 or 2; [`union_routes`], [`first_per_end`])
    /// and their [`Move`]s, worked out once (`all`: room for the routes before they are sifted).
    fn routes(&mut self, c: usize, steps: u32, all: &mut Vec<Route>) -> RoutesAndMoves {
        let (s, g, weights) = (self.s, self.g, &self.weights);
        let (conf_free, base) = (&self.conf_free, self.base[c]);
        let cell = &mut self.routes[c][(steps.clamp(1, 2) - 1) as usize];
        let (routes, moves) = cell.get_or_insert_with(|| {
            union_routes(s, g, conf_free, c, steps, all);
            let routes = first_per_end(all, base.is_some());
            let strength = s.corps[c].strength;
            let moves = routes
                .iter()
                .map(|r| match (base, r.end()) {
                    (Some(from), Some(end)) => {
                        let dh = u128::from(strength).wrapping_mul(weights[end].wrapping_sub(weights[from]));
                        Move { from, end, strength, moved: 1, dh }
                    }
                    _ => Move::default(),
                })
                .collect();
            (routes, moves)
        });
        (routes.clone(), moves.clone())
    }

    /// The gain of a combination's board if it is more than `best_gain`: from the boards scored
    /// before, else scored now (given up as soon as it cannot be) and kept. The board is `board`
    /// (with its towns free of Union corps `open`) with `m` made, keyed `key`, `moved` corps
    /// moved; `m` is made only to score the board, or to compare it when keys are hashes (a
    /// packed key is the board: [`Boards`]), and taken back before this returns.
    fn gain_over(&mut self, board: &mut [u32], mut open: u64, m: &Move, (key, moved): (u128, usize), best_gain: f64) -> Option<f64> {
        let (s, g, now) = (self.s, self.g, self.now);
        // A board whose threat so far already leaves no gain over the best cannot be picked.
        let cost = 0.001 * moved as f64;
        let hopeless = |t: f64| now - t - cost <= best_gain + 1e-9;
        let (bits, packed) = (g.bits.fits(), self.boards.packed);
        if !packed {
            m.shift(board, &mut open, bits, true);
        }
        let (seen, slot) = self.boards.get(board, key);
        let t = match seen {
            Some(Known::Exactly(t)) => Some(t),
            Some(Known::AtLeast(t)) if hopeless(t) => None,
            _ => {
                if packed {
                    m.shift(board, &mut open, bits, true);
                }
                let t = self.threat.unless(s, g, board, bits.then_some(open), hopeless);
                let known = t.map_or_else(|| Known::AtLeast(self.threat.at_least(g)), Known::Exactly);
                self.boards.put(board, key, slot, known);
                if packed {
                    m.shift(board, &mut open, bits, false);
                }
                t
            }
        };
        if !packed {
            m.shift(board, &mut open, bits, false);
        }
        let gain = now - t? - cost;
        (gain > best_gain + 1e-9).then_some(gain)
    }

    /// `room` made ready for play `sel`: each commanded corps' routes and their moves.
    fn moves(&mut self, sel: &[Command], room: &mut Room) {
        let s = self.s;
        room.routes.clear();
        room.moves.clear();
        room.first.clear();
        for x in sel {
            let (routes, moves) = self.routes(x.corps, rules::allowed_steps(s, Side::Union, sel, x.corps), &mut room.all_routes);
            room.first.push(room.moves.len());
            room.moves.extend_from_slice(&moves);
            room.routes.push(routes);
        }
        room.first.push(room.moves.len());
    }

    /// The Union's best plans for play `sel`: every combination of its corps' routes, scored by
    /// how much it lowers the Confederate threat (a move that changes nothing is not made); the
    /// first best combination in odometer order wins. Gives the gain; [`Search::names`] gives the
    /// routes (so that the town names are copied only for plays that are kept).
    pub(super) fn plans(&mut self, sel: &[Command]) -> f64 {
        self.plans_from(sel, 0.0).0
    }

    /// [`Search::plans`] when only a gain over `floor` matters (the best of the plays before):
    /// None when no combination gains more than `floor` + 10⁻⁹, so that [`Search::plans`] would
    /// give no more than `floor` + 2·10⁻⁹; else what it gives, [`Search::names`] the same.
    ///
    /// Boards that cannot gain more than `floor` are given up as soon as that is seen. The plain
    /// search's best climbs from 0 and can stop only at a gain within 10⁻⁹ of a board given up
    /// here, so once a combination gains more than `floor` + 3·10⁻⁹ the plain search picks it too
    /// and both go on alike; a first pick between the two (never seen) is searched again plainly.
    pub(super) fn plans_over(&mut self, sel: &[Command], floor: f64) -> Option<f64> {
        if floor <= 0.0 {
            return Some(self.plans(sel));
        }
        match self.plans_from(sel, floor) {
            (_, None) => None,
            (gain, Some(first)) if first > floor + 3e-9 => Some(gain),
            _ => Some(self.plans(sel)),
        }
    }

    /// [`Search::plans`] with its best gain starting at `start` (0 in the plain search): that
    /// gain, and the first combination's gain to beat `start` (None: none did).
    fn plans_from(&mut self, sel: &[Command], start: f64) -> (f64, Option<f64>) {
        let mut room = std::mem::take(&mut self.room);
        self.moves(sel, &mut room);
        let Room { board, open, pick, best, moves, first, .. } = &mut room;
        let (n, bits) = (sel.len(), self.g.bits.fits());
        pick.clear();
        pick.resize(n, 0);
        best.clone_from(pick);
        let (mut best_gain, mut first_pick) = (start, None);
        // Odometer order, the first corps' route turning fastest: the other corps' routes fixed
        // (their board kept in `board` and `open` as they turn), the first corps' tried in turn.
        // A board's key is the sum of its routes' changes of it ([`town_weight`]).
        board.clone_from(&self.held);
        *open = self.held_open;
        for k in 1..n {
            moves[first[k]].shift(board, open, bits, true);
        }
        let stay = Move::default();
        loop {
            let (mut key, mut moved) = (self.held_hash, 0);
            for k in 1..n {
                let m = &moves[first[k] + pick[k]];
                (key, moved) = (key.wrapping_add(m.dh), moved + m.moved);
            }
            let firsts = if n == 0 { std::slice::from_ref(&stay) } else { &moves[..first[1]] };
            for (i, m) in firsts.iter().enumerate() {
                if let Some(p) = pick.first_mut() {
                    *p = i;
                }
                if let Some(gain) = self.gain_over(board, *open, m, (key.wrapping_add(m.dh), moved + m.moved), best_gain) {
                    best.copy_from_slice(pick);
                    best_gain = gain;
                    first_pick = first_pick.or(Some(gain));
                }
            }
            // The next routes of the other corps (odometer order).
            let Some(k) = (1..n).find(|&k| first[k] + pick[k] + 1 < first[k + 1]) else { break };
            for j in 1..=k {
                let next = if j == k { pick[j] + 1 } else { 0 };
                if next != pick[j] {
                    moves[first[j] + pick[j]].shift(board, open, bits, false);
                    moves[first[j] + next].shift(board, open, bits, true);
                    pick[j] = next;
                }
            }
        }
        self.room = room;
        (best_gain, first_pick)
    }

    /// The best routes [`Search::plans`] found last, by commanded corps: the towns each passes.
    pub(super) fn names(&self) -> Vec<Vec<String>> {
        let Room { best, routes, .. } = &self.room;
        let names = |r: &Route| r.towns[..r.len].iter().map(|&t| self.g.names[t].clone()).collect();
        best.iter().enumerate().map(|(k, &i)| names(&routes[k][i])).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::games::gettysburg_campaign::{initial_state, scenario::Scenario, DEFAULT_SCENARIO};

    /// Both ways of working out a threat (one-word town sets, a queue for big maps) give the same
    /// figure to the bit, on many boards of the shipped map; and a lone corps one road from an
    /// open town worth points threatens all of them.
    #[test]
    fn the_threat_is_the_same_by_town_sets_and_by_queue() {
        let s = initial_state(Scenario::parse(DEFAULT_SCENARIO).unwrap(), false);
        let g = Graph::new(&s);
        assert!(!g.bits.adj.is_empty());
        let n = g.adj.len();
        let mut t = Threat::new(&s, &g, &super::super::positions(&s));
        let mut x = 7u64;
        for _ in 0..2000 {
            let mut held = vec![0u32; n];
            for _ in 0..4 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                held[(x >> 33) as usize % n] += (x >> 20) as u32 % 5;
            }
            let by_bits = t.of(&s, &g, &held);
            t.best.fill(0.0);
            for k in 0..t.conf.len() {
                t.by_queue(&s, &g, &held, t.conf[k]);
            }
            let by_queue: f64 = g.points.iter().zip(&t.best).map(|(&p, &b)| p as f64 * b).sum();
            assert_eq!(by_bits.to_bits(), by_queue.to_bits(), "{held:?}");
        }
        let conf = t.conf[0];
        t.conf = vec![conf];
        let worth: f64 = g.adj[conf.0].iter().map(|&i| g.points[i] as f64).sum();
        assert!(t.of(&s, &g, &vec![0; n]) >= worth && worth > 0.0);
    }

    /// The figures [`Threat::unless`] hands `hopeless` (running totals) are never more than the
    /// whole threat, on many boards.
    #[test]
    fn running_totals_stay_below_the_threat() {
        let s = initial_state(Scenario::parse(DEFAULT_SCENARIO).unwrap(), false);
        let g = Graph::new(&s);
        let n = g.adj.len();
        let mut t = Threat::new(&s, &g, &super::super::positions(&s));
        let mut x = 11u64;
        let mut next = |m: usize| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) as usize % m
        };
        for _ in 0..500 {
            let mut held = vec![0u32; n];
            (0..4).for_each(|_| held[next(n)] += 2 + next(5) as u32);
            let whole = t.of(&s, &g, &held);
            let seen = std::cell::RefCell::new(Vec::new());
            t.unless(&s, &g, &held, None, |p| {
                seen.borrow_mut().push(p);
                false
            });
            assert!(seen.borrow().iter().all(|&p| p <= whole), "{held:?}");
        }
    }

    /// [`Search::plans`] picks, for every play of cards in turn, the routes and gain that a
    /// plain search does (every combination in odometer order, its board made afresh from the
    /// routes and its whole threat worked out, the first best kept), with the Union corps in many
    /// places; each board's summed key is its key worked out afresh, packed (every other search:
    /// the board itself, a byte a town) or hashed.
    #[test]
    fn plans_pick_what_a_plain_search_picks() {
        let start = initial_state(Scenario::parse(DEFAULT_SCENARIO).unwrap(), false);
        let names: Vec<String> = start.scenario.map.towns.iter().map(|t| t.name.clone()).collect();
        let n = names.len();
        let unpacked = |key: u128| (0..n).map(|i| (key >> (8 * i)) as u8 as u32).collect::<Vec<u32>>();
        let mut x = 13u64;
        let mut next = |m: usize| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) as usize % m
        };
        for round in 0..60 {
            let packed = round % 2 == 1;
            let mut s = start.clone();
            // Half the Union corps left together at their start, the others anywhere but the
            // Confederates' start (town 0).
            for c in 0..s.corps.len() {
                if s.corps[c].side == Side::Union && next(2) == 1 {
                    s.corps[c].at = Location::Town { town: names[1 + next(n - 1)].clone() };
                }
            }
            let g = Graph::new(&s);
            let mut search = Search::new(&s, &g);
            search.weights = (0..n).map(|i| town_weight(i, packed)).collect();
            search.held_hash = board_key(&search.held, &search.weights);
            search.boards.clear(n, packed);
            for sel in rules::legal_selections(&s, Side::Union).iter() {
                let gain = search.plans(sel);
                let picked = search.room.best.clone();
                let mut room = Room::default();
                search.moves(sel, &mut room);
                let (mut pick, mut best, mut best_gain) = (vec![0; sel.len()], vec![0; sel.len()], 0.0f64);
                loop {
                    let (mut fresh, mut key, mut moved) = (search.held.clone(), search.held_hash, 0);
                    for (k, &i) in pick.iter().enumerate() {
                        let m = room.moves[room.first[k] + i];
                        key = key.wrapping_add(m.dh);
                        if let (Some(from), Some(end)) = (search.base[sel[k].corps], room.routes[k][i].end()) {
                            fresh[from] -= m.strength;
                            fresh[end] += m.strength;
                            moved += 1;
                        }
                    }
                    assert_eq!(key, board_key(&fresh, &search.weights));
                    assert!(!packed || unpacked(key) == fresh, "{fresh:?}");
                    let gain = search.now - search.threat.of(&s, &g, &fresh) - 0.001 * moved as f64;
                    if gain > best_gain + 1e-9 {
                        (best, best_gain) = (pick.clone(), gain);
                    }
                    let Some(k) = (0..sel.len()).find(|&k| room.first[k] + pick[k] + 1 < room.first[k + 1]) else { break };
                    pick[k] += 1;
                    pick[..k].fill(0);
                }
                assert_eq!((gain.to_bits(), picked), (best_gain.to_bits(), best), "{sel:?}");
            }
        }
    }

    /// [`Search::plans_over`] gives what [`Search::plans`] gives (the gain to the bit, the same
    /// routes) or None only when that gain is no more than the floor + 2·10⁻⁹, for floors below,
    /// at and above the gain, with the Union corps in many places.
    #[test]
    fn plans_over_a_floor_are_the_plain_plans() {
        let start = initial_state(Scenario::parse(DEFAULT_SCENARIO).unwrap(), false);
        let names: Vec<String> = start.scenario.map.towns.iter().map(|t| t.name.clone()).collect();
        let mut x = 17u64;
        let mut next = |m: usize| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) as usize % m
        };
        let (mut kept, mut dropped) = (0, 0);
        for _ in 0..40 {
            let mut s = start.clone();
            for c in 0..s.corps.len() {
                if s.corps[c].side == Side::Union && next(2) == 1 {
                    s.corps[c].at = Location::Town { town: names[1 + next(names.len() - 1)].clone() };
                }
            }
            let g = Graph::new(&s);
            let (mut plain, mut floored) = (Search::new(&s, &g), Search::new(&s, &g));
            for sel in rules::legal_selections(&s, Side::Union).iter() {
                let gain = plain.plans(sel);
                for floor in [gain - 0.3, gain - 1e-7, gain - 2e-9, gain, gain + 1e-7, 0.2] {
                    match floored.plans_over(sel, floor) {
                        Some(got) => {
                            assert_eq!((got.to_bits(), &floored.room.best), (gain.to_bits(), &plain.room.best), "{sel:?} {floor}");
                            kept += 1;
                        }
                        None => {
                            assert!(gain <= floor + 2e-9, "{sel:?} {floor} {gain}");
                            dropped += 1;
                        }
                    }
                }
            }
        }
        assert!(kept > 0 && dropped > 0, "{kept} {dropped}");
    }

    /// A [`Boards`] emptied by [`Boards::clear`] after many boards (its slots grown) finds and
    /// misses exactly the boards a fresh one does, packed or hashed.
    #[test]
    fn cleared_boards_find_what_fresh_ones_find() {
        let n = 20;
        let mut x = 5u64;
        let mut next = |m: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((x >> 33) % m) as u32
        };
        let mut used = Boards::new(n, false);
        for round in 0..6 {
            let packed = round % 2 == 1;
            let width = if packed { 16 } else { n };
            let weights: Vec<u128> = (0..width).map(|i| town_weight(i, packed)).collect();
            used.clear(width, packed);
            let mut fresh = Boards::new(width, packed);
            let seen = |b: Option<Known>| b.map(|k| match k {
                Known::Exactly(t) => (0, t.to_bits()),
                Known::AtLeast(t) => (1, t.to_bits()),
            });
            // Few boards after many, and many after few: both ways of emptying the slots.
            for k in 0..[3000, 20, 3000, 5, 900, 40][round] {
                let board: Vec<u32> = (0..width).map(|_| if next(4) == 0 { next(6) } else { 0 }).collect();
                let key = board_key(&board, &weights);
                let (a, i) = fresh.get(&board, key);
                let (b, j) = used.get(&board, key);
                assert_eq!(seen(a), seen(b), "{board:?}");
                let known = if k % 3 == 0 { Known::AtLeast(k as f64) } else { Known::Exactly(k as f64) };
                fresh.put(&board, key, i, known);
                used.put(&board, key, j, known);
            }
        }
    }

    /// The attack chances kept per scenario on the thread ([`Graph::attack_chance`]) are those
    /// worked out afresh, for strengths within the table and beyond it, for the state that made
    /// the table and a later one of the same scenario.
    #[test]
    fn kept_attack_chances_are_those_worked_out_afresh() {
        let s = initial_state(Scenario::parse(DEFAULT_SCENARIO).unwrap(), false);
        let g = Graph::new(&s);
        let mut weak = s.clone();
        weak.corps.iter_mut().for_each(|c| c.strength = 1);
        let later = Graph::new(&weak);
        for att in 0..30 {
            for def in 0..40 {
                let fresh = super::super::attack_chance(&s, att, def).to_bits();
                assert_eq!(g.attack_chance(&s, att, def).to_bits(), fresh, "{att} {def}");
                assert_eq!(later.attack_chance(&weak, att, def).to_bits(), fresh, "{att} {def}");
            }
        }
    }
}
