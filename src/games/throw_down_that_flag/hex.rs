//! The hex geometry of the map: spaces, adjacency and distance.
//!
//! Interpretation (the rulebook shows the map but prints no grid): the ground is a grid of hexes in
//! rows, every other row shifted half a hex to the right ("odd-r" layout: rows 2, 4, ... are
//! shifted). A space is named by its column letter and row number, e.g. `E4`; row 1 is the Union
//! line. The distance between two spaces is the number of moves between them on an empty map;
//! adjacent spaces are at distance 1.

use serde::{Deserialize, Serialize};

/// One space, zero-based column and row (named `E4` for column 4, row 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Space {
    /// Column from 0 (letter A).
    pub col: u32,
    /// Row from 0 (number 1, the Union line).
    pub row: u32,
}

impl Space {
    /// Reads a name like `E4` (ignoring case and surrounding spaces).
    pub fn parse(name: &str) -> Option<Space> {
        let t = name.trim();
        let mut chars = t.chars();
        let c = chars.next()?.to_ascii_uppercase();
        if !c.is_ascii_uppercase() {
            return None;
        }
        let num: u32 = chars.as_str().parse().ok()?;
        if num == 0 || chars.as_str().starts_with('0') || chars.as_str().starts_with('+') {
            return None;
        }
        Some(Space { col: c as u32 - 'A' as u32, row: num - 1 })
    }

    /// The name, e.g. `E4`.
    pub fn name(self) -> String {
        format!("{}{}", (b'A' + self.col as u8) as char, self.row + 1)
    }

    fn cube(self) -> (i64, i64, i64) {
        let (c, r) = (self.col as i64, self.row as i64);
        let x = c - (r - (r & 1)) / 2;
        (x, r, -x - r)
    }

    /// Hex distance.
    pub fn distance(self, other: Space) -> u32 {
        let (a, b) = (self.cube(), other.cube());
        ((a.0 - b.0).abs()).max((a.1 - b.1).abs()).max((a.2 - b.2).abs()) as u32
    }

    /// The neighbours inside a `columns` x `rows` map, in a fixed order (left, right, then the row
    /// toward the Union line, then the row away from it, each left to right).
    pub fn neighbors(self, columns: u32, rows: u32) -> Vec<Space> {
        self.neighbors_iter(columns, rows).collect()
    }

    /// [`Space::neighbors`] one by one, with nothing allocated (the path searches).
    pub fn neighbors_iter(self, columns: u32, rows: u32) -> impl Iterator<Item = Space> {
        let (c, r) = (self.col as i64, self.row as i64);
        let shift = r & 1; // odd rows (zero-based) are shifted right
        let cand = [
            (c - 1, r),
            (c + 1, r),
            (c - 1 + shift, r - 1),
            (c + shift, r - 1),
            (c - 1 + shift, r + 1),
            (c + shift, r + 1),
        ];
        cand.into_iter()
            .filter(move |&(x, y)| x >= 0 && y >= 0 && x < columns as i64 && y < rows as i64)
            .map(|(x, y)| Space { col: x as u32, row: y as u32 })
    }

    /// True when the two spaces are next to each other.
    pub fn adjacent(self, other: Space) -> bool {
        self.distance(other) == 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_neighbors_are_at_distance_one() {
        let s = Space::parse("e4").unwrap();
        assert_eq!(s.name(), "E4");
        assert_eq!(Space::parse("E0"), None);
        assert_eq!(Space::parse("4E"), None);
        for col in 0..6 {
            for row in 0..6 {
                let p = Space { col, row };
                let n = p.neighbors(6, 6);
                assert!(n.len() <= 6);
                for q in n {
                    assert_eq!(p.distance(q), 1, "{} {}", p.name(), q.name());
                }
            }
        }
        assert_eq!(Space::parse("A1").unwrap().distance(Space::parse("A3").unwrap()), 2);
    }
}
