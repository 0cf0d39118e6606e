//! A bounded memo of a pure function, kept per thread by its user (`thread_local!`, [`Memo`]) or
//! shared by a process's threads ([`SharedMemo`]): the games' hot paths in `pbem simulate` ask
//! the same questions game after game (wrapped prompts, legal card plays), and intake checks a
//! mailed order's signature more than once, the first time on the thread that reads messages
//! ahead (`sig`). Entries are only looked up, never listed, so no output depends on a memo.

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

/// [`Memo`] for a `static`, shared by every thread: the value is made outside the lock (two
/// threads asking at once may both make it; either is the same value).
pub struct SharedMemo<K, V>(std::sync::Mutex<Option<HashMap<K, V>>>);

impl<K: Hash + Eq, V: Clone> SharedMemo<K, V> {
    /// An empty memo.
    pub const fn new() -> Self {
        SharedMemo(std::sync::Mutex::new(None))
    }

    /// The value for `key`: remembered, or made by `make` and remembered.
    pub fn get_or(&self, key: K, make: impl FnOnce(&K) -> V) -> V {
        if let Some(hit) = self.get(&key) {
            return hit;
        }
        let value = make(&key);
        self.put(key, value.clone());
        value
    }

    /// The value remembered for `key`, if any.
    pub fn get(&self, key: &K) -> Option<V> {
        self.map().as_ref().and_then(|m| m.get(key)).cloned()
    }

    /// Remembers `value` for `key` (for a function that fails for some inputs: only its values
    /// are kept, by [`SharedMemo::get`] and this, not its errors).
    pub fn put(&self, key: K, value: V) {
        let mut guard = self.map();
        let m = guard.get_or_insert_with(HashMap::new);
        if m.len() >= MAX_ENTRIES {
            m.clear();
        }
        m.insert(key, value);
    }

    fn map(&self) -> std::sync::MutexGuard<'_, Option<HashMap<K, V>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<K: Hash + Eq, V: Clone> Default for SharedMemo<K, V> {
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

    #[test]
    fn a_shared_value_is_made_once_for_every_thread_and_the_memo_stays_bounded() {
        static MEMO: super::SharedMemo<u32, u32> = super::SharedMemo::new();
        let made = std::sync::atomic::AtomicU32::new(0);
        std::thread::scope(|s| {
            s.spawn(|| assert_eq!(MEMO.get_or(7, |k| { made.fetch_add(1, std::sync::atomic::Ordering::Relaxed); k * 2 }), 14));
        });
        assert_eq!(MEMO.get_or(7, |_| unreachable!("made on the other thread")), 14);
        assert_eq!(made.into_inner(), 1);
        for k in 0..(super::MAX_ENTRIES as u32 + 10) {
            MEMO.get_or(k, |k| k * 2);
        }
        assert!(MEMO.map().as_ref().unwrap().len() <= super::MAX_ENTRIES);
    }
}
