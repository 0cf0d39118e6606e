//! The two sides (roles) of the game, and a pair of values, one per side.

use serde::{Deserialize, Serialize};

/// A side; its role name is `"confederate"` or `"union"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The Army of Northern Virginia.
    Confederate,
    /// The Army of the Potomac.
    Union,
}

impl Side {
    /// Both sides, in role order.
    pub const ALL: [Side; 2] = [Side::Confederate, Side::Union];

    /// The role name used by the core: `"confederate"` / `"union"`.
    pub fn role(self) -> &'static str {
        match self {
            Side::Confederate => "confederate",
            Side::Union => "union",
        }
    }

    /// The name for sentences: `"Confederate"` / `"Union"`.
    pub fn name(self) -> &'static str {
        match self {
            Side::Confederate => "Confederate",
            Side::Union => "Union",
        }
    }

    /// The side as the subject of a sentence, singular: "the Confederate army defends".
    pub fn army(self) -> &'static str {
        match self {
            Side::Confederate => "Confederate army",
            Side::Union => "Union army",
        }
    }

    /// The other side.
    pub fn other(self) -> Side {
        match self {
            Side::Confederate => Side::Union,
            Side::Union => Side::Confederate,
        }
    }

    /// The side of a role name, if it is one.
    pub fn from_role(role: &str) -> Option<Side> {
        Side::ALL.into_iter().find(|s| s.role() == role)
    }
}

/// One value per side.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sides<T> {
    /// The Confederate value.
    pub confederate: T,
    /// The Union value.
    pub union: T,
}

impl<T> Sides<T> {
    /// The value of `side`.
    pub fn get(&self, side: Side) -> &T {
        match side {
            Side::Confederate => &self.confederate,
            Side::Union => &self.union,
        }
    }

    /// The value of `side`, mutably.
    pub fn get_mut(&mut self, side: Side) -> &mut T {
        match side {
            Side::Confederate => &mut self.confederate,
            Side::Union => &mut self.union,
        }
    }
}
