//! The board: size, territories, start spaces, walls and tunnels, read from a layout TOML file.
//!
//! The rulebook prints no board (Flag Dash, Setup and Custom Layout): the shipped
//! `scenarios/flag-dash.toml` is a reconstruction, and a custom layout is just another such file.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::game::GameError;

/// The two teams (Flag Dash, Setup).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Team {
    /// Team White, whose back row is row 1.
    White,
    /// Team Red, whose back row is the last row.
    Red,
}

impl Team {
    /// Both teams, White first.
    pub const ALL: [Team; 2] = [Team::White, Team::Red];

    /// `"white"` / `"red"`.
    pub fn key(self) -> &'static str {
        match self {
            Team::White => "white",
            Team::Red => "red",
        }
    }

    /// `"White"` / `"Red"`.
    pub fn name(self) -> &'static str {
        match self {
            Team::White => "White",
            Team::Red => "Red",
        }
    }

    /// The other team.
    pub fn other(self) -> Team {
        match self {
            Team::White => Team::Red,
            Team::Red => Team::White,
        }
    }

    /// Parses `white` / `red` (any case).
    pub fn parse(s: &str) -> Option<Team> {
        match s.trim().to_ascii_lowercase().as_str() {
            "white" => Some(Team::White),
            "red" => Some(Team::Red),
            _ => None,
        }
    }
}

/// One value per team.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Teams<T> {
    /// White's value.
    pub white: T,
    /// Red's value.
    pub red: T,
}

impl<T> Teams<T> {
    /// The value of `team`.
    pub fn get(&self, team: Team) -> &T {
        match team {
            Team::White => &self.white,
            Team::Red => &self.red,
        }
    }

    /// The value of `team`, mutable.
    pub fn get_mut(&mut self, team: Team) -> &mut T {
        match team {
            Team::White => &mut self.white,
            Team::Red => &mut self.red,
        }
    }
}

/// A space of the board: column (0 = `a`) and row (0 = row 1, White's back row).
#[derive(Debug, Clone, Copy, Eq, PartialOrd, Ord)]
pub struct Sq {
    /// Column, 0-based (`a` = 0).
    pub c: i32,
    /// Row, 0-based (row 1 = 0).
    pub r: i32,
}

/// Both coordinates compared without a branch between them (as the derived `==` means, which
/// branched after the column): the built-in player compares spaces at every step it tries.
impl PartialEq for Sq {
    fn eq(&self, o: &Sq) -> bool {
        (self.c == o.c) & (self.r == o.r)
    }
}

/// As derived: the column, then the row (agrees with `==`).
impl std::hash::Hash for Sq {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.c.hash(h);
        self.r.hash(h);
    }
}

impl Sq {
    /// The neighbouring space in direction `d` (may be off the board).
    pub fn step(self, d: Dir) -> Sq {
        let (dc, dr) = d.delta();
        Sq { c: self.c + dc, r: self.r + dr }
    }

    /// Orthogonal distance (rows plus columns).
    pub fn dist(self, o: Sq) -> i32 {
        (self.c - o.c).abs() + (self.r - o.r).abs()
    }

    /// The direction from `self` to an orthogonally adjacent `o`, if adjacent.
    pub fn dir_to(self, o: Sq) -> Option<Dir> {
        Dir::ALL.into_iter().find(|&d| self.step(d) == o)
    }
}

impl fmt::Display for Sq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !(0..26).contains(&self.c) || self.r < 0 {
            return write!(f, "(off the board)");
        }
        write!(f, "{}{}", (b'a' + self.c as u8) as char, self.r + 1)
    }
}

impl FromStr for Sq {
    type Err = String;
    fn from_str(s: &str) -> Result<Sq, String> {
        let t = s.trim().to_ascii_lowercase();
        let mut chars = t.chars();
        let col = chars.next().filter(|c| c.is_ascii_lowercase()).ok_or_else(|| format!("\"{s}\" is not a space (e.g. \"c4\")"))?;
        let row: i32 = chars.as_str().parse().map_err(|_| format!("\"{s}\" is not a space (e.g. \"c4\")"))?;
        if row < 1 {
            return Err(format!("\"{s}\": rows start at 1"));
        }
        Ok(Sq { c: (col as u8 - b'a') as i32, r: row - 1 })
    }
}

impl Serialize for Sq {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Sq {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Sq, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A direction on the printed board: north is toward Red's back row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    /// Toward the last row (Red's back row).
    N,
    /// Toward the last column.
    E,
    /// Toward row 1 (White's back row).
    S,
    /// Toward column a.
    W,
}

impl Dir {
    /// n, e, s, w: the order used wherever the rules leave a free choice to a default.
    pub const ALL: [Dir; 4] = [Dir::N, Dir::E, Dir::S, Dir::W];

    /// (column, row) change.
    pub fn delta(self) -> (i32, i32) {
        match self {
            Dir::N => (0, 1),
            Dir::E => (1, 0),
            Dir::S => (0, -1),
            Dir::W => (-1, 0),
        }
    }

    /// The opposite direction.
    pub fn back(self) -> Dir {
        match self {
            Dir::N => Dir::S,
            Dir::S => Dir::N,
            Dir::E => Dir::W,
            Dir::W => Dir::E,
        }
    }

    /// `"n"`, `"e"`, `"s"`, `"w"`.
    pub fn key(self) -> &'static str {
        match self {
            Dir::N => "n",
            Dir::E => "e",
            Dir::S => "s",
            Dir::W => "w",
        }
    }

    /// Parses `n`/`e`/`s`/`w` (or `north` ...), any case.
    pub fn parse(s: &str) -> Option<Dir> {
        match s.trim().to_ascii_lowercase().as_str() {
            "n" | "north" => Some(Dir::N),
            "e" | "east" => Some(Dir::E),
            "s" | "south" => Some(Dir::S),
            "w" | "west" => Some(Dir::W),
            _ => None,
        }
    }
}

/// A rectangle of spaces (inclusive), e.g. a territory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rect {
    /// First and last column.
    pub c: [i32; 2],
    /// First and last row.
    pub r: [i32; 2],
}

impl Rect {
    /// True when `q` lies inside (the four bounds compared without a branch each: the win check
    /// asks this after every step the built-in player tries).
    pub fn contains(&self, q: Sq) -> bool {
        (q.c >= self.c[0]) & (q.c <= self.c[1]) & (q.r >= self.r[0]) & (q.r <= self.r[1])
    }
}

/// The character abilities (Flag Dash, Character Abilities), one per character card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ability {
    /// Athletic Businessman: the jump card.
    Jump,
    /// Wannabe Ninja: two spy tokens.
    Spy,
    /// Tech Nerd: the trap card and two trap tokens.
    Trap,
    /// Modern Cowboy: the lasso card.
    Lasso,
    /// Crazy Cat Lady: the #3 and #5 cat tokens.
    Cats,
    /// Construction Worker: the dig card and two tunnel tokens.
    Dig,
}

/// One character of a layout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CharSpec {
    /// Pawn colour, e.g. `"Green"` (unique; orders name characters by it).
    pub name: String,
    /// Its team.
    pub team: Team,
    /// Seat number (1 or 2) whose runner it is, or `None` for the team's defender.
    pub seat: Option<u8>,
    /// Start space.
    pub start: Sq,
    /// Its ability (used only with the abilities option).
    pub ability: Option<Ability>,
}

/// A whole layout, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    /// Shown in reports.
    pub title: String,
    /// Number of columns.
    pub columns: i32,
    /// Number of rows.
    pub rows: i32,
    /// Rounds after which the game is a draw (our addition, see the layout file).
    pub round_limit: u32,
    /// Each team's territory (or scoring area between cones).
    pub territory: Teams<Rect>,
    /// Team flag start spaces.
    pub flags: Teams<Sq>,
    /// The characters, in layout order (White first is not required).
    pub characters: Vec<CharSpec>,
    /// Blocked sides: each pair is two adjacent spaces with a wall between them (sorted pair).
    pub walls: Vec<[Sq; 2]>,
    /// Tunnel spaces.
    pub tunnels: Vec<Sq>,
    /// Wall sides a character may cross in one direction: (from, to). The alternate board's corner
    /// walls can be jumped from behind (Alternate Board Setup, Example F).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open_from: Vec<(Sq, Sq)>,
    /// The alternate board's secret tunnel, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_tunnel: Option<SecretTunnel>,
    /// The walls by space, derived from `walls` and `open_from` on first use (never written).
    #[serde(skip)]
    sides: Sides,
}

/// For each space of a layout (row by row), its sides as bits, derived from the layout's walls
/// once, the first time a move asks (the built-in player asks thousands of times a step): bit `k`
/// when a character may leave this way, `Dir::ALL[k]` (the neighbour is on the board and no wall
/// blocks the step), bit `4 + k` when a wall lies on that side and blocks a character leaving this
/// way (not open from this side). Equal whatever it holds: the layout's fields decide it.
#[derive(Clone, Default)]
struct Sides(std::sync::OnceLock<Vec<u8>>);

impl PartialEq for Sides {
    fn eq(&self, _: &Sides) -> bool {
        true
    }
}

impl Eq for Sides {}

impl fmt::Debug for Sides {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sides")
    }
}

/// The alternate board's secret tunnel (Alternate Board Setup): the entrance in the centre and each
/// team's exit on the opponents' side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretTunnel {
    /// The entrance space.
    pub entrance: Sq,
    /// Where each team's characters come out.
    pub exits: Teams<Sq>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRect {
    columns: [String; 2],
    rows: [i32; 2],
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawChar {
    name: String,
    team: String,
    seat: Option<u8>,
    #[serde(default)]
    defender: bool,
    start: String,
    ability: Option<Ability>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWall {
    between: [String; 2],
    /// Optional: the side from which a character may cross (moving toward the wall from behind).
    open_from: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSecret {
    entrance: String,
    exits: Teams<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLayout {
    title: String,
    columns: i32,
    rows: i32,
    round_limit: u32,
    territory: Teams<RawRect>,
    flags: Teams<String>,
    character: Vec<RawChar>,
    #[serde(default)]
    wall: Vec<RawWall>,
    #[serde(default)]
    tunnels: Vec<String>,
    secret_tunnel: Option<RawSecret>,
}

fn bad(msg: impl Into<String>) -> GameError {
    GameError::Scenario(msg.into())
}

impl Layout {
    /// Reads and checks a layout file as any game's setup needs it (an existing game's too: the
    /// audit sets it up again).
    ///
    /// Errors: [`GameError::Scenario`] naming the field (syntax, a space off the board, a wall
    /// between spaces that are not adjacent, overlapping start spaces, not exactly one defender and
    /// runners 1 and 2 per team).
    pub fn parse(text: &str) -> Result<Layout, GameError> {
        Self::read(text, false)
    }

    /// Reads and checks a layout file for a new game: [`Layout::parse`]'s checks and the rules a
    /// new game keeps (round limit, title, character names, halves, secret tunnel, tunnels off the
    /// flags), which games made before a rule may break.
    ///
    /// Errors: as [`Layout::parse`].
    pub fn parse_new(text: &str) -> Result<Layout, GameError> {
        Self::read(text, true)
    }

    fn read(text: &str, new: bool) -> Result<Layout, GameError> {
        let raw: RawLayout = toml::from_str(text).map_err(|e| bad(e.to_string()))?;
        // Each bound at its own field, so that the error names its line (tester15 T15-6).
        if !(3..=26).contains(&raw.columns) {
            return Err(bad("columns: must be 3 to 26 (and rows 3 to 99)"));
        }
        if !(3..=99).contains(&raw.rows) {
            return Err(bad("rows: must be 3 to 99 (and columns 3 to 26)"));
        }
        if raw.round_limit == 0 || (new && raw.round_limit > MAX_ROUND_LIMIT) {
            return Err(bad(format!("round_limit: must be between 1 and {MAX_ROUND_LIMIT}")));
        }
        let g = Grid { columns: raw.columns, rows: raw.rows };
        let territory = Teams {
            white: g.rect("territory.white", &raw.territory.white)?,
            red: g.rect("territory.red", &raw.territory.red)?,
        };
        let flags = Teams { white: g.on("flags.white", &raw.flags.white)?, red: g.on("flags.red", &raw.flags.red)? };
        let characters = g.characters(&raw.character, new)?;
        check_starts(&characters, &flags)?;
        let (walls, open_from) = g.walls(&raw.wall)?;
        let tunnels = g.tunnels(&raw.tunnels)?;
        let secret_tunnel = match &raw.secret_tunnel {
            Some(t) => Some(SecretTunnel {
                entrance: g.on("secret_tunnel.entrance", &t.entrance)?,
                exits: Teams { white: g.on("secret_tunnel.exits.white", &t.exits.white)?, red: g.on("secret_tunnel.exits.red", &t.exits.red)? },
            }),
            None => None,
        };
        if new {
            crate::text::check_shown(&raw.title, MAX_TITLE).map_err(|m| bad(format!("title: {m}")))?;
        }
        let layout = Layout {
            title: raw.title,
            columns: raw.columns,
            rows: raw.rows,
            round_limit: raw.round_limit,
            territory,
            flags,
            characters,
            walls,
            tunnels,
            open_from,
            secret_tunnel,
            sides: Sides::default(),
        };
        if new {
            layout.check_placement()?;
        }
        Ok(layout)
    }

    /// A new game's placement rules: halves, the secret tunnel, tunnels off the flags.
    fn check_placement(&self) -> Result<(), GameError> {
        self.check_halves()?;
        self.check_secret_tunnel()?;
        if let Some(i) = self.tunnels.iter().position(|t| [self.flags.white, self.flags.red].contains(t)) {
            return Err(bad(format!("tunnels[{i}]: {} is a team flag's start space; a tunnel may not be placed on a flag (Character Abilities, Construction Worker)", self.tunnels[i])));
        }
        Ok(())
    }

    /// The team whose half of the board `q` lies in: White's the rows from 1 to half the board,
    /// Red's those from the other end (the middle row of an odd board is neither's).
    fn half(&self, q: Sq) -> Option<Team> {
        if q.r < self.rows / 2 {
            Some(Team::White)
        } else if q.r >= (self.rows + 1) / 2 {
            Some(Team::Red)
        } else {
            None
        }
    }

    /// Territories apart, and each team's flag and characters set up in its own half (Custom
    /// Layout: "have each team set up their territory as desired (e.g., placing their characters,
    /// team flag, tunnels)"; Game End: the game ends as soon as "one team flag enters the opposing
    /// team's territory", so a flag may not start there, nor a space be both teams' territory).
    fn check_halves(&self) -> Result<(), GameError> {
        let (w, r) = (&self.territory.white, &self.territory.red);
        if w.c[0] <= r.c[1] && r.c[0] <= w.c[1] && w.r[0] <= r.r[1] && r.r[0] <= w.r[1] {
            return Err(bad("territory.red: overlaps territory.white; a space can be only one team's territory (Game End)"));
        }
        for team in Team::ALL {
            let at = *self.flags.get(team);
            if self.territory.get(team.other()).contains(at) || self.half(at) != Some(team) {
                return Err(bad(format!("flags.{}: {at} is not in {}'s half of the board; each team sets up its flag in its own half, outside the opposing territory (Custom Layout; Game End)", team.key(), team.name())));
            }
        }
        for (i, c) in self.characters.iter().enumerate() {
            if self.half(c.start) != Some(c.team) || self.territory.get(c.team.other()).contains(c.start) {
                return Err(bad(format!("character[{i}].start: {} is not in {}'s half of the board; each team sets up its characters in its own half (Custom Layout)", c.start, c.team.name())));
            }
        }
        Ok(())
    }

    /// The secret tunnel: its entrance, and each team's exit on the opponents' side of the board,
    /// three different spaces without a team flag (Alternate Board Setup: "you may move your
    /// character to the secret tunnel exit on your opponent's side of the board").
    fn check_secret_tunnel(&self) -> Result<(), GameError> {
        let Some(t) = &self.secret_tunnel else { return Ok(()) };
        let flags = [self.flags.white, self.flags.red];
        if flags.contains(&t.entrance) {
            return Err(bad(format!("secret_tunnel.entrance: {} is a team flag's start space", t.entrance)));
        }
        for team in Team::ALL {
            let at = *t.exits.get(team);
            let f = format!("secret_tunnel.exits.{}", team.key());
            if at == t.entrance {
                return Err(bad(format!("{f}: {at} is the entrance; an exit is elsewhere (Alternate Board Setup)")));
            }
            if flags.contains(&at) {
                return Err(bad(format!("{f}: {at} is a team flag's start space")));
            }
            if self.half(at) != Some(team.other()) {
                return Err(bad(format!("{f}: {at} is not on the opponents' side of the board (Alternate Board Setup)")));
            }
        }
        Ok(())
    }

    /// True when a wall stops a character moving from `a` to the adjacent `b` (a wall between
    /// them that is not open from `a`'s side).
    pub fn wall_blocks(&self, a: Sq, b: Sq) -> bool {
        self.wall_listed(a, b) && !self.open_from.contains(&(a, b))
    }

    /// True when a wall lies between the adjacent spaces `a` and `b`.
    pub fn wall_between(&self, a: Sq, b: Sq) -> bool {
        self.wall_listed(a, b)
    }

    /// [`Layout::wall_blocks`] from `a` to its neighbour in direction `d`, looked up in the
    /// walls by space (see [`Sides`]; the built-in player asks this for every step it tries).
    pub fn blocks(&self, a: Sq, d: Dir) -> bool {
        if a.c < 0 || a.r < 0 || a.c >= self.columns || a.r >= self.rows {
            return self.wall_blocks(a, a.step(d));
        }
        let sides = self.sides.0.get_or_init(|| self.derive_sides());
        sides[(a.r * self.columns + a.c) as usize] & (1 << (4 + d as usize)) != 0
    }

    /// True when a character on `a` may step to its neighbour in direction `d` as far as the board
    /// goes: both on the board and no wall blocking the step (columns out of play and characters
    /// are the state's). False for `a` off the board. One look-up in the walls by space
    /// ([`Sides`]), for the step test of every move the built-in player tries.
    pub fn opens(&self, a: Sq, d: Dir) -> bool {
        if (a.c as u32) >= self.columns as u32 || (a.r as u32) >= self.rows as u32 {
            return false;
        }
        let sides = self.sides.0.get_or_init(|| self.derive_sides());
        sides[(a.r * self.columns + a.c) as usize] & (1 << d as usize) != 0
    }

    /// The wall pair `a`, `b` looked up in `walls` (what [`Sides`] is derived from).
    fn wall_listed(&self, a: Sq, b: Sq) -> bool {
        let k = if a < b { [a, b] } else { [b, a] };
        self.walls.binary_search(&k).is_ok()
    }

    /// Every space's side bits (see [`Sides`]), from `walls` and `open_from`.
    fn derive_sides(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity((self.rows * self.columns) as usize);
        for r in 0..self.rows {
            for c in 0..self.columns {
                let a = Sq { c, r };
                let mut bits = 0u8;
                for d in Dir::ALL {
                    let b = a.step(d);
                    let blocked = self.wall_listed(a, b) && !self.open_from.contains(&(a, b));
                    let on_board = b.c >= 0 && b.r >= 0 && b.c < self.columns && b.r < self.rows;
                    bits |= u8::from(blocked) << (4 + d as usize) | u8::from(on_board && !blocked) << d as usize;
                }
                v.push(bits);
            }
        }
        v
    }
}

/// The size of a layout being read: turns the file's spaces into checked [`Sq`]s.
struct Grid {
    columns: i32,
    rows: i32,
}

impl Grid {
    /// The space `s` of `field`, on the board.
    fn on(&self, field: &str, s: &str) -> Result<Sq, GameError> {
        let q: Sq = s.parse().map_err(|e| bad(format!("{field}: {e}")))?;
        if q.c >= self.columns || q.r >= self.rows {
            return Err(bad(format!("{field}: {s} is off the board")));
        }
        Ok(q)
    }

    /// A territory: its columns and rows, on the board.
    fn rect(&self, field: &str, r: &RawRect) -> Result<Rect, GameError> {
        let a = self.on(field, &format!("{}1", r.columns[0]))?;
        let b = self.on(field, &format!("{}1", r.columns[1]))?;
        let lo = self.on(field, &format!("a{}", r.rows[0]))?;
        let hi = self.on(field, &format!("a{}", r.rows[1]))?;
        Ok(Rect { c: [a.c.min(b.c), a.c.max(b.c)], r: [lo.r.min(hi.r), lo.r.max(hi.r)] })
    }

    /// The characters: names unique, each a runner of seat 1 or 2 or a defender, and per team
    /// exactly one of each.
    fn characters(&self, raw: &[RawChar], new: bool) -> Result<Vec<CharSpec>, GameError> {
        let mut characters = Vec::new();
        for (i, c) in raw.iter().enumerate() {
            let f = format!("character[{i}]");
            let team = Team::parse(&c.team).ok_or_else(|| bad(format!("{f}.team: white or red")))?;
            if c.defender == c.seat.is_some() {
                return Err(bad(format!("{f}: give either seat = 1 or 2 (a runner) or defender = true")));
            }
            if let Some(s) = c.seat
                && !(1..=2).contains(&s)
            {
                return Err(bad(format!("{f}.seat: 1 or 2")));
            }
            if c.name.trim().is_empty() || characters.iter().any(|x: &CharSpec| x.name.eq_ignore_ascii_case(&c.name)) {
                return Err(bad(format!("{f}.name: empty or used twice")));
            }
            if new {
                check_name(&c.name).map_err(|m| bad(format!("{f}.name: {m}")))?;
            }
            characters.push(CharSpec { name: c.name.clone(), team, seat: c.seat, start: self.on(&format!("{f}.start"), &c.start)?, ability: c.ability });
        }
        for team in Team::ALL {
            for seat in [Some(1), Some(2), None] {
                let n = characters.iter().filter(|c| c.team == team && c.seat == seat).count();
                if n != 1 {
                    // At the team's first character (a line to look at: tester15 T15-6), or at
                    // the characters when the team has none.
                    let f = characters.iter().position(|c| c.team == team).map_or("character".to_string(), |i| format!("character[{i}].team"));
                    return Err(bad(format!("{f}: team {} needs exactly one runner of seat 1, one of seat 2 and one defender", team.key())));
                }
            }
        }
        Ok(characters)
    }

    /// The walls (sorted pairs, sorted and deduplicated) and the sides they are open from.
    #[allow(clippy::type_complexity)]
    fn walls(&self, raw: &[RawWall]) -> Result<(Vec<[Sq; 2]>, Vec<(Sq, Sq)>), GameError> {
        let mut walls = Vec::new();
        let mut open_from = Vec::new();
        for (i, w) in raw.iter().enumerate() {
            let a = self.on(&format!("wall[{i}].between"), &w.between[0])?;
            let b = self.on(&format!("wall[{i}].between"), &w.between[1])?;
            if a.dist(b) != 1 {
                return Err(bad(format!("wall[{i}].between: {a} and {b} are not adjacent")));
            }
            walls.push(if a < b { [a, b] } else { [b, a] });
            if let Some(f) = &w.open_from {
                let f = self.on(&format!("wall[{i}].open_from"), f)?;
                if f != a && f != b {
                    return Err(bad(format!("wall[{i}].open_from: {f} is not one of the two spaces")));
                }
                open_from.push(if f == a { (a, b) } else { (b, a) });
            }
        }
        walls.sort();
        walls.dedup();
        open_from.sort();
        Ok((walls, open_from))
    }

    /// The tunnel spaces, each given once.
    fn tunnels(&self, raw: &[String]) -> Result<Vec<Sq>, GameError> {
        let mut tunnels = Vec::new();
        for (i, t) in raw.iter().enumerate() {
            let q = self.on(&format!("tunnels[{i}]"), t)?;
            if tunnels.contains(&q) {
                return Err(bad(format!("tunnels[{i}]: {q} given twice")));
            }
            tunnels.push(q);
        }
        Ok(tunnels)
    }
}

/// The most rounds a layout may allow before the game is a draw (the shipped boards: 40), so a
/// game always ends.
pub const MAX_ROUND_LIMIT: u32 = 1000;

/// The longest layout title and character name (characters).
const MAX_TITLE: usize = 100;
const MAX_NAME: usize = 20;

/// Words an order names a character by other than its name (Orders: `try = ["runner", ...]`).
const ORDER_WORDS: &[&str] = &["runner", "defender", "nobody"];

/// A character name orders can use: one word of letters, digits, `-` or `_`, not an order word, a
/// direction or a space (orders read names among those, ignoring case).
fn check_name(name: &str) -> Result<(), String> {
    crate::text::check_shown(name, MAX_NAME)?;
    if !name.chars().all(|c| c.is_alphanumeric() || c == '-' || c == '_') {
        return Err(format!("\"{name}\": one word of letters, digits, - or _ (orders name characters by it)"));
    }
    if ORDER_WORDS.iter().any(|w| w.eq_ignore_ascii_case(name)) || Dir::parse(name).is_some() || name.parse::<Sq>().is_ok() {
        return Err(format!("\"{name}\" is a word orders use (runner, defender, nobody, a direction or a space); rename the character"));
    }
    Ok(())
}

/// No two characters or flags start on the same space (the error names the later one's field
/// and the earlier one).
fn check_starts(characters: &[CharSpec], flags: &Teams<Sq>) -> Result<(), GameError> {
    let mut starts: Vec<(String, Sq)> = characters.iter().enumerate().map(|(i, c)| (format!("character[{i}].start"), c.start)).collect();
    starts.push(("flags.white".into(), flags.white));
    starts.push(("flags.red".into(), flags.red));
    for (k, (field, at)) in starts.iter().enumerate() {
        if let Some((earlier, _)) = starts[..k].iter().find(|(_, q)| q == at) {
            return Err(bad(format!("{field}: {at} is also {earlier}; two characters or flags start on the same space")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_layout_parses() {
        let l = Layout::parse(super::super::DEFAULT_LAYOUT).unwrap();
        assert_eq!((l.columns, l.rows), (9, 10));
        assert_eq!(l.tunnels.len(), 4);
        assert!(l.wall_between("b6".parse().unwrap(), "b5".parse().unwrap()));
        assert!(!l.wall_between("d6".parse().unwrap(), "d5".parse().unwrap()));
    }

    /// The walls by space ([`Layout::blocks`], [`Layout::opens`], derived once) say what the list
    /// of walls, the sides open from one side and the board's edge say, for every space of every shipped board (and a step from off
    /// it) and every direction, on a fresh layout and on one whose grid is already built.
    #[test]
    fn walls_by_space_agree_with_the_wall_list() {
        let boards = [super::super::DEFAULT_LAYOUT, include_str!("../../../scenarios/flag-dash-cones.toml"), include_str!("../../../scenarios/flag-dash-alternate.toml")];
        let mut blocked = 0;
        for text in boards {
            let l = Layout::parse(text).unwrap();
            for r in -1..=l.rows {
                for c in -1..=l.columns {
                    let a = Sq { c, r };
                    for d in Dir::ALL {
                        let b = a.step(d);
                        let listed = l.walls.contains(&if a < b { [a, b] } else { [b, a] }) && !l.open_from.contains(&(a, b));
                        assert_eq!(l.blocks(a, d), listed, "{a:?} {d:?}");
                        let on = |q: Sq| q.c >= 0 && q.r >= 0 && q.c < l.columns && q.r < l.rows;
                        assert_eq!(l.opens(a, d), on(a) && on(b) && !listed, "{a:?} {d:?}");
                        assert_eq!(l.wall_blocks(a, b), listed, "{a:?} {d:?}");
                        blocked += listed as usize;
                    }
                }
            }
            assert_eq!(l, Layout::parse(text).unwrap(), "the derived grid does not change what a layout equals");
        }
        assert!(blocked > 0, "the shipped boards have walls");
    }

    /// Each check of a layout file names its field (the shipped layout with one edit each).
    #[test]
    fn bad_layouts_name_the_field() {
        let cases = [
            ("columns = 9", "columns = 2", "columns: must be 3 to 26 (and rows 3 to 99)"),
            ("rows = 10", "rows = 100", "rows: must be 3 to 99 (and columns 3 to 26)"),
            ("round_limit = 40", "round_limit = 0", "round_limit: must be between 1 and 1000"),
            ("rows = [1, 5] ", "rows = [1, 11] ", "territory.white: a11 is off the board"),
            ("white = \"e1\"", "white = \"e11\"", "flags.white: e11 is off the board"),
            ("team = \"white\"\nseat = 1", "team = \"blue\"\nseat = 1", "character[0].team: white or red"),
            ("seat = 1                 # runner of white-1, on White's left", "seat = 3", "character[0].seat: 1 or 2"),
            ("defender = true\nstart = \"e2\"", "seat = 1\ndefender = true\nstart = \"e2\"", "character[2]: give either seat = 1 or 2 (a runner) or defender = true"),
            ("name = \"Orange\"", "name = \"green\"", "character[1].name: empty or used twice"),
            ("start = \"a3\"", "start = \"a30\"", "character[0].start: a30 is off the board"),
            ("seat = 2                 # runner of white-2, on White's right", "seat = 1", "character[0].team: team white needs exactly one runner of seat 1, one of seat 2 and one defender"),
            ("start = \"a3\"", "start = \"e1\"", "flags.white: e1 is also character[0].start; two characters or flags start on the same space"),
            ("between = [\"b5\", \"b6\"]", "between = [\"b5\", \"b7\"]", "wall[0].between: b5 and b7 are not adjacent"),
            ("between = [\"b5\", \"b6\"]", "between = [\"b5\", \"b6\"]\nopen_from = \"c5\"", "wall[0].open_from: c5 is not one of the two spaces"),
            ("\"g3\",", "\"c3\",", "tunnels[1]: c3 given twice"),
            ("\"g3\",", "\"e1\",", "tunnels[1]: e1 is a team flag's start space; a tunnel may not be placed on a flag (Character Abilities, Construction Worker)"),
            ("name = \"Orange\"", "name = \"North\"", "character[1].name: \"North\" is a word orders use (runner, defender, nobody, a direction or a space); rename the character"),
            ("name = \"Orange\"", "name = \"Or ange\"", "character[1].name: \"Or ange\": one word of letters, digits, - or _ (orders name characters by it)"),
            ("title = \"Flag Dash", "title = \"\\u0007Flag Dash", "title: holds the control character '\\u{7}'; give text on one line without control characters"),
        ];
        for (from, to, want) in cases {
            assert!(super::super::DEFAULT_LAYOUT.contains(from), "{from}");
            let text = super::super::DEFAULT_LAYOUT.replacen(from, to, 1);
            match Layout::parse_new(&text) {
                Err(GameError::Scenario(m)) => assert_eq!(m, want),
                other => panic!("{from} -> {to}: {other:?}"),
            }
        }
        let secret = format!("{}\n[secret_tunnel]\nentrance = \"e5\"\nexits = {{ white = \"e8\", red = \"e33\" }}\n", super::super::DEFAULT_LAYOUT);
        assert!(matches!(Layout::parse(&secret), Err(GameError::Scenario(m)) if m == "secret_tunnel.exits.red: e33 is off the board"));
        let own_side = secret.replace("e33", "d9");
        assert!(matches!(Layout::parse_new(&own_side), Err(GameError::Scenario(m)) if m == "secret_tunnel.exits.red: d9 is not on the opponents' side of the board (Alternate Board Setup)"));
    }

    #[test]
    fn spaces_round_trip() {
        let q: Sq = "c10".parse().unwrap();
        assert_eq!(q, Sq { c: 2, r: 9 });
        assert_eq!(q.to_string(), "c10");
        assert!("10".parse::<Sq>().is_err());
    }
}
