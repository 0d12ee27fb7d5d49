//! Keep the smallest `cap` items by key while counting everything offered.
//!
//! Bounds apply at the source: memory stays `O(cap)` however many items a walk produces, and
//! the result is deterministic (the first `cap` in key order), not "whichever thread won".

use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct ByKey<K, V>(K, V);

impl<K: Ord, V> PartialEq for ByKey<K, V> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl<K: Ord, V> Eq for ByKey<K, V> {}
impl<K: Ord, V> PartialOrd for ByKey<K, V> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<K: Ord, V> Ord for ByKey<K, V> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.cmp(&other.0)
    }
}

pub struct BoundedSmallest<K: Ord, V> {
    cap: usize,
    heap: BinaryHeap<ByKey<K, V>>,
    offered: u64,
}

impl<K: Ord, V> BoundedSmallest<K, V> {
    pub fn new(cap: usize) -> Self {
        BoundedSmallest {
            cap,
            heap: BinaryHeap::with_capacity(cap.min(4096)),
            offered: 0,
        }
    }

    /// Would an item with this key be kept right now?
    pub fn would_keep(&self, key: &K) -> bool {
        self.heap.len() < self.cap || self.heap.peek().is_some_and(|max| *key < max.0)
    }

    pub fn is_full(&self) -> bool {
        self.heap.len() >= self.cap
    }

    /// The largest key kept, once full.
    pub fn max_key(&self) -> Option<&K> {
        self.heap.peek().map(|m| &m.0)
    }

    pub fn offer(&mut self, key: K, value: V) {
        self.offered += 1;
        if self.heap.len() < self.cap {
            self.heap.push(ByKey(key, value));
        } else if self.heap.peek().is_some_and(|max| key < max.0) {
            self.heap.pop();
            self.heap.push(ByKey(key, value));
        }
    }

    /// Count items that were seen but are known not to be kept (cheap path).
    pub fn count_unkept(&mut self, n: u64) {
        self.offered += n;
    }

    pub fn offered(&self) -> u64 {
        self.offered
    }

    /// Kept items in key order, and how many offered items were left out.
    pub fn finish(self) -> (Vec<V>, u64) {
        let kept = self.heap.into_sorted_vec();
        let omitted = self.offered - kept.len() as u64;
        (kept.into_iter().map(|ByKey(_, v)| v).collect(), omitted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_first_cap_in_key_order_and_counts_the_rest() {
        let mut b = BoundedSmallest::new(3);
        for k in [9, 2, 7, 1, 8, 3, 5] {
            b.offer(k, k * 10);
        }
        assert!(!b.would_keep(&4));
        assert!(b.would_keep(&0));
        b.count_unkept(10);
        assert_eq!(b.finish(), (vec![10, 20, 30], 14));
    }

    #[test]
    fn zero_cap_keeps_nothing() {
        let mut b = BoundedSmallest::new(0);
        b.offer(1, ());
        assert_eq!(b.finish().1, 1);
    }
}
