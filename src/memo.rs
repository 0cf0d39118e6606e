//! A bounded memo of a pure function, kept per thread by its user (`thread_local!`): the games'
//! hot paths in `pbem simulate` ask the same questions game after game (wrapped prompts, legal
//! card plays), and intake checks a mailed order's signature more than once (`sig`). Entries are
//! only looked up, never listed, so no output depends on the memo.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::Hash;

/// How many entries a memo holds before it is emptied and starts again.
const MAX_ENTRIES: usize = 4096;

/// Values of a pure function by their whole input `K`.
pub struct Memo<K, V>(RefCell<HashMap<K, V>>);

impl<K: Hash + Eq, V: Clone> Memo<K, V> {
    /// An empty memo.
    pub fn new() -> Self {
        Memo(RefCell::new(HashMap::new()))
    }

    /// The value for `key`: remembered, or made by `make` (which may use other memos, not this
    /// one) and remembered.
    pub fn get_or(&self, key: K, make: impl FnOnce(&K) -> V) -> V {
        if let Some(hit) = self.0.borrow().get(&key) {
            return hit.clone();
        }
        let value = make(&key);
        let mut m = self.0.borrow_mut();
        if m.len() >= MAX_ENTRIES {
            m.clear();
        }
        m.insert(key, value.clone());
        value
    }
}

impl<K: Hash + Eq, V: Clone> Default for Memo<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_value_is_made_once_and_the_memo_stays_bounded() {
        let memo = super::Memo::new();
        let mut made = 0;
        for _ in 0..3 {
            assert_eq!(memo.get_or(7u32, |k| { made += 1; k * 2 }), 14);
        }
        assert_eq!(made, 1);
        for k in 0..(super::MAX_ENTRIES as u32 + 10) {
            memo.get_or(k, |k| k * 2);
        }
        assert!(memo.0.borrow().len() <= super::MAX_ENTRIES);
    }
}
