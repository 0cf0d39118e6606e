//! Independent jobs (one game each) on every core: at most one worker thread per core, each
//! taking the next item; the results come back in the items' order, so output stays
//! deterministic whatever the timing.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many workers: the machine's cores (1 if unknown), never more than `jobs`. The cores are
/// counted once a process (the standard library reads the cgroup's quota files each time).
pub fn workers(jobs: usize) -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    cores.min(jobs).max(1)
}

/// `items.iter().map(f)`, run on [`workers`] threads; results in the order of `items`.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    map_on(items, 0, f)
}

/// [`map`] on at most `jobs` threads (0: one per core), this one among them; with one, on this
/// thread alone.
pub fn map_on<T: Sync, R: Send>(items: &[T], jobs: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let n = if jobs == 0 { workers(items.len()) } else { workers(items.len().min(jobs)) };
    if n <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            let r = f(item);
            *slots[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
        }
    };
    std::thread::scope(|s| {
        for _ in 1..n {
            s.spawn(work);
        }
        work();
    });
    slots.into_iter().map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()).expect("every item was run")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_the_items_order() {
        let items: Vec<u64> = (0..200).collect();
        let out = super::map(&items, |&i| {
            if i % 7 == 0 {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            i * 2
        });
        assert_eq!(out, items.iter().map(|i| i * 2).collect::<Vec<_>>());
        assert_eq!(super::map(&Vec::<u64>::new(), |&i| i), Vec::<u64>::new());
    }
}
