//! Where a Confederate corps can reach on one-word town sets, worked out once per search for
//! each town it stands in and each set of towns free of Union corps ([`Reach`]): the boards of
//! one Union search differ in a few towns, so most of their threats meet the same searches.

/// The breadth-first searches of one Union search: by the town a corps stands in and the towns
/// it may pass (free of Union corps), the towns worth points it first sees at each road
/// distance. Keys are found by an open-addressing table of where their levels are kept, so a new
/// search costs no allocation of its own. Only looked up, never listed.
#[derive(Default)]
pub(super) struct Reach {
    /// The searches kept, by key; a power of two long (empty: none kept yet).
    slots: Vec<Slot>,
    /// Searches kept.
    used: usize,
    /// Each search's levels end to end: the towns worth points first seen at road distance 1,
    /// 2, ... (the last level is where every such town had been seen, or the last town reached).
    levels: Vec<u64>,
}

/// One kept search: from town `at` through the towns `open`, its levels in `start..end`
/// (`at == u32::MAX`: the slot is empty).
#[derive(Clone, Copy)]
struct Slot {
    open: u64,
    at: u32,
    start: u32,
    end: u32,
}

const EMPTY: Slot = Slot { open: 0, at: u32::MAX, start: 0, end: 0 };

impl Reach {
    /// The levels of the search from town `at` through the towns `open` (which holds `at`) on the
    /// map of town sets `adj` (each town's neighbours), for the towns worth points `scoring`:
    /// kept, or worked out now and kept. `adj` and `scoring` are the same for every search of
    /// one `Reach`.
    pub(super) fn levels(&mut self, adj: &[u64], scoring: u64, at: usize, open: u64) -> &[u64] {
        if self.slots.is_empty() {
            self.slots = vec![EMPTY; 64];
        }
        let i = self.slot(at, open);
        let Slot { start, end, .. } = if self.slots[i].at != u32::MAX {
            self.slots[i]
        } else {
            let start = self.levels.len() as u32;
            search(adj, scoring, at, open, &mut self.levels);
            let kept = Slot { open, at: at as u32, start, end: self.levels.len() as u32 };
            self.slots[i] = kept;
            self.used += 1;
            if self.used * 2 > self.slots.len() {
                self.grow();
            }
            kept
        };
        &self.levels[start as usize..end as usize]
    }

    /// The slot of the search from `at` through `open`: where it is kept, or the empty slot where
    /// it belongs.
    fn slot(&self, at: usize, open: u64) -> usize {
        let mask = self.slots.len() - 1;
        let h = (open ^ (at as u64).rotate_right(7)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut i = (h >> 40) as usize & mask;
        loop {
            let s = &self.slots[i];
            if s.at == u32::MAX || (s.open == open && s.at as usize == at) {
                return i;
            }
            i = (i + 1) & mask;
        }
    }

    /// Twice the slots, every search placed again.
    fn grow(&mut self) {
        let twice = vec![EMPTY; self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, twice);
        for s in old.into_iter().filter(|s| s.at != u32::MAX) {
            let i = self.slot(s.at as usize, s.open);
            self.slots[i] = s;
        }
    }
}

/// Breadth first from `at`, a whole road distance at a time, through the towns `open`: appends
/// to `levels` the towns of `scoring` first seen at each distance, up to the distance where every
/// town of `scoring` has been seen (no later distance changes a chance) or the last town reached.
fn search(adj: &[u64], scoring: u64, at: usize, open: u64, levels: &mut Vec<u64>) {
    let (mut seen, mut frontier) = (1u64 << at, 1u64 << at);
    loop {
        let mut next = 0;
        let mut f = frontier & open;
        while f != 0 {
            next |= adj[f.trailing_zeros() as usize];
            f &= f - 1;
        }
        next &= !seen;
        if next == 0 {
            return;
        }
        seen |= next;
        levels.push(next & scoring);
        if scoring & !seen == 0 {
            return;
        }
        frontier = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Kept searches are those worked out afresh, on a small map, for many towns and open sets
    /// (the table grown on the way), and a search stops once every town worth points is seen.
    #[test]
    fn kept_searches_are_fresh_ones() {
        // A ring of 10 towns with a chord 0-5.
        let n = 10;
        let mut adj = vec![0u64; n];
        let mut road = |a: usize, b: usize| {
            adj[a] |= 1 << b;
            adj[b] |= 1 << a;
        };
        (0..n).for_each(|i| road(i, (i + 1) % n));
        road(0, 5);
        let scoring = 0b10_1100_1010;
        let mut reach = Reach::default();
        for round in 0..3 {
            for at in 0..n {
                for open in (0..1u64 << n).step_by(7 + round) {
                    let open = open | 1 << at;
                    let mut fresh = Vec::new();
                    search(&adj, scoring, at, open, &mut fresh);
                    assert_eq!(reach.levels(&adj, scoring, at, open), &fresh[..], "{at} {open:b}");
                }
            }
        }
        // From town 0 with every town open: distance 1 sees 1, 9 and 5; 2 sees 2, 8, 4 and 6;
        // 3 sees 3 and 7, where every town worth points (1, 3, 6, 7, 9) has been seen.
        let mut levels = Vec::new();
        search(&adj, scoring, 0, (1 << n) - 1, &mut levels);
        assert_eq!(levels, vec![0b10_0000_0010, 0b00_0100_0000, 0b00_1000_1000]);
        levels.clear();
        search(&adj, 0b10, 0, (1 << n) - 1, &mut levels);
        assert_eq!(levels, vec![0b10]);
    }
}
