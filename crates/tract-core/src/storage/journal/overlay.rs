//! The effects of journal frames not yet folded into redb, in memory: what reads consult
//! before the redb snapshot.
//!
//! A [`Layer`] holds one segment's frames (or one open transaction's writes). Every value keeps
//! the frame that wrote it, so a reader that took the layer when it had `n` frames sees the
//! layer as it was then, while a writer adds frame `n + 1`: [`Layer::object`] and the other
//! reads take that cut-off. A value is `None` where the frame removed it, which hides what
//! layers below hold.

use crate::storage::backend::{Key, ObjectTable};
use crate::storage::journal::ops::Op;
use std::collections::BTreeMap;

/// The values one name or id took, oldest first: `(frame, order, value)`. `order` counts every
/// op the layer took, so a clear of the counts and a later set in one frame keep their order.
type Versions<T> = Vec<(u64, u64, T)>;

/// The value visible at cut-off `upto`: the last one written by frame `upto` or before.
fn at<T>(v: &Versions<T>, upto: u64) -> Option<(u64, &T)> {
    v.iter()
        .rev()
        .find(|(f, _, _)| *f <= upto)
        .map(|(_, o, t)| (*o, t))
}

/// A ref's reflog entries in a layer, by sequence number.
type Reflog = BTreeMap<u64, Versions<Option<Vec<u8>>>>;

/// What a layer says of one value at a cut-off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Hit<T> {
    /// The layer set it (`Some`) or removed it (`None`).
    Here(Option<T>),
    /// The layer did not touch it: ask the one below.
    Below,
}

/// The writes of a segment's frames, or of one transaction.
#[derive(Debug, Default)]
pub(crate) struct Layer {
    /// How many frames it holds.
    frames: u64,
    /// How many ops it took.
    ops: u64,
    /// Bytes of values it holds (to decide when to fold).
    bytes: u64,
    objects: [BTreeMap<Key, Versions<Option<Vec<u8>>>>; 3],
    meta: BTreeMap<String, Versions<Option<Vec<u8>>>>,
    tips: BTreeMap<String, Versions<Option<Key>>>,
    reflog: BTreeMap<String, Reflog>,
    stats: BTreeMap<String, Versions<Option<Vec<u8>>>>,
    /// `(frame, order)` of every clear of the counts.
    cleared: Vec<(u64, u64)>,
    /// Whether any reflog entry was removed (store-wide work; a reader of the newest entries
    /// then reads them all, since a removal may name any of them).
    reflog_removed: bool,
}

fn index(t: ObjectTable) -> usize {
    match t {
        ObjectTable::Commits => 0,
        ObjectTable::Blobs => 1,
        ObjectTable::Chunks => 2,
    }
}

impl Layer {
    /// How many frames it holds.
    pub(crate) fn frames(&self) -> u64 {
        self.frames
    }

    /// About how many bytes its values take.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Takes the ops of frame `frame` (the next one).
    pub(crate) fn apply(&mut self, frame: u64, ops: impl IntoIterator<Item = Op>) {
        self.frames = self.frames.max(frame);
        for op in ops {
            self.ops += 1;
            let o = self.ops;
            match op {
                Op::Put(t, k, v) => {
                    self.bytes += v.len() as u64 + 32;
                    self.objects[index(t)]
                        .entry(k)
                        .or_default()
                        .push((frame, o, Some(v)));
                }
                Op::Remove(t, k) => {
                    self.objects[index(t)]
                        .entry(k)
                        .or_default()
                        .push((frame, o, None));
                }
                Op::Meta(name, v) => {
                    self.bytes += v.as_ref().map_or(0, Vec::len) as u64;
                    self.meta.entry(name).or_default().push((frame, o, v));
                }
                Op::Tip(name, k) => self.tips.entry(name).or_default().push((frame, o, k)),
                Op::Reflog(name, n, entry) => {
                    self.bytes += entry.len() as u64;
                    self.reflog
                        .entry(name)
                        .or_default()
                        .entry(n)
                        .or_default()
                        .push((frame, o, Some(entry)));
                }
                Op::RemoveReflog(name, n) => {
                    self.reflog_removed = true;
                    self.reflog
                        .entry(name)
                        .or_default()
                        .entry(n)
                        .or_default()
                        .push((frame, o, None));
                }
                Op::Stats(name, v) => self.stats.entry(name).or_default().push((frame, o, v)),
                Op::ClearStats => self.cleared.push((frame, o)),
            }
        }
    }

    /// An object's record.
    pub(crate) fn object(&self, t: ObjectTable, k: &Key, upto: u64) -> Hit<Vec<u8>> {
        hit(self.objects[index(t)].get(k), upto)
    }

    /// The objects with ids from `low` to `high`, in id order, each as the layer has it.
    pub(crate) fn objects_in(
        &self,
        t: ObjectTable,
        low: &Key,
        high: &Key,
        upto: u64,
    ) -> impl Iterator<Item = (Key, Option<&[u8]>)> {
        self.objects[index(t)]
            .range(*low..=*high)
            .filter_map(move |(k, v)| at(v, upto).map(|(_, v)| (*k, v.as_deref())))
    }

    /// A metadata value.
    pub(crate) fn meta(&self, name: &str, upto: u64) -> Hit<Vec<u8>> {
        hit(self.meta.get(name), upto)
    }

    /// The metadata keys starting with `prefix` the layer set (`true`) or removed (`false`).
    pub(crate) fn meta_keys<'a>(
        &'a self,
        prefix: &'a str,
        upto: u64,
    ) -> impl Iterator<Item = (&'a str, bool)> + 'a {
        self.meta
            .range::<str, _>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            ))
            .take_while(move |(k, _)| k.starts_with(prefix))
            .filter_map(move |(k, v)| at(v, upto).map(|(_, v)| (k.as_str(), v.is_some())))
    }

    /// A branch's tip.
    pub(crate) fn tip(&self, name: &str, upto: u64) -> Hit<Key> {
        match self.tips.get(name).and_then(|v| at(v, upto)) {
            Some((_, k)) => Hit::Here(*k),
            None => Hit::Below,
        }
    }

    /// Every tip the layer set or removed.
    pub(crate) fn tips(&self, upto: u64) -> impl Iterator<Item = (&str, Option<Key>)> {
        self.tips
            .iter()
            .filter_map(move |(n, v)| at(v, upto).map(|(_, k)| (n.as_str(), *k)))
    }

    /// A ref's reflog entries the layer wrote or removed, by sequence number, newest first.
    pub(crate) fn reflog(
        &self,
        name: &str,
        upto: u64,
    ) -> impl Iterator<Item = (u64, Option<&[u8]>)> {
        self.reflog.get(name).into_iter().flat_map(move |m| {
            m.iter()
                .rev()
                .filter_map(move |(n, v)| at(v, upto).map(|(_, e)| (*n, e.as_deref())))
        })
    }

    /// Whether any reflog entry was removed.
    pub(crate) fn reflog_removed(&self) -> bool {
        self.reflog_removed
    }

    /// Every ref with reflog entries in the layer.
    pub(crate) fn reflog_names(&self) -> impl Iterator<Item = &str> {
        self.reflog.keys().map(String::as_str)
    }

    /// The last clear of the counts, `(frame, order)`, at the cut-off.
    fn last_clear(&self, upto: u64) -> Option<u64> {
        self.cleared
            .iter()
            .rev()
            .find(|(f, _)| *f <= upto)
            .map(|(_, o)| *o)
    }

    /// Whether the counts were cleared at the cut-off (so the layers below have none).
    pub(crate) fn stats_cleared(&self, upto: u64) -> bool {
        self.last_clear(upto).is_some()
    }

    /// A branch's row of counts.
    pub(crate) fn stats(&self, name: &str, upto: u64) -> Hit<Vec<u8>> {
        let clear = self.last_clear(upto);
        match (self.stats.get(name).and_then(|v| at(v, upto)), clear) {
            (Some((o, v)), c) if c.is_none_or(|c| o > c) => Hit::Here(v.clone()),
            (_, Some(_)) => Hit::Here(None),
            (_, None) => Hit::Below,
        }
    }

    /// Every row of counts the layer set or removed after its last clear.
    pub(crate) fn all_stats(&self, upto: u64) -> impl Iterator<Item = (&str, Option<&[u8]>)> {
        let clear = self.last_clear(upto);
        self.stats
            .iter()
            .filter_map(move |(n, v)| match at(v, upto) {
                Some((o, v)) if clear.is_none_or(|c| o > c) => Some((n.as_str(), v.as_deref())),
                _ => None,
            })
    }

    /// The layer's effect as ops, once each (the last value of every name and id): what a fold
    /// writes into redb. A clear of the counts comes first, and only counts set after it follow.
    pub(crate) fn net_ops(&self) -> Vec<Op> {
        let upto = u64::MAX;
        let mut out = Vec::new();
        if self.stats_cleared(upto) {
            out.push(Op::ClearStats);
        }
        for (i, t) in [
            ObjectTable::Commits,
            ObjectTable::Blobs,
            ObjectTable::Chunks,
        ]
        .into_iter()
        .enumerate()
        {
            for (k, v) in &self.objects[i] {
                if let Some((_, v)) = at(v, upto) {
                    out.push(match v {
                        Some(r) => Op::Put(t, *k, r.clone()),
                        None => Op::Remove(t, *k),
                    });
                }
            }
        }
        for (n, v) in &self.meta {
            if let Some((_, v)) = at(v, upto) {
                out.push(Op::Meta(n.clone(), v.clone()));
            }
        }
        for (n, k) in self.tips(upto) {
            out.push(Op::Tip(n.to_string(), k));
        }
        for (name, entries) in &self.reflog {
            for (n, v) in entries {
                if let Some((_, v)) = at(v, upto) {
                    out.push(match v {
                        Some(e) => Op::Reflog(name.clone(), *n, e.clone()),
                        None => Op::RemoveReflog(name.clone(), *n),
                    });
                }
            }
        }
        for (n, v) in self.all_stats(upto) {
            out.push(Op::Stats(n.to_string(), v.map(<[u8]>::to_vec)));
        }
        out
    }
}

fn hit(v: Option<&Versions<Option<Vec<u8>>>>, upto: u64) -> Hit<Vec<u8>> {
    match v.and_then(|v| at(v, upto)) {
        Some((_, v)) => Hit::Here(v.clone()),
        None => Hit::Below,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_sees_the_layer_as_it_was_at_its_cut_off() {
        let mut l = Layer::default();
        l.apply(1, [Op::Tip("main".into(), Some([1; 32]))]);
        l.apply(
            2,
            [
                Op::Tip("main".into(), Some([2; 32])),
                Op::Tip("x".into(), None),
            ],
        );
        assert_eq!(l.tip("main", 1), Hit::Here(Some([1; 32])));
        assert_eq!(l.tip("main", 2), Hit::Here(Some([2; 32])));
        assert_eq!(l.tip("x", 1), Hit::Below);
        assert_eq!(l.tip("x", 2), Hit::Here(None));
        assert_eq!(l.tip("y", 2), Hit::Below);
    }

    #[test]
    fn counts_set_after_a_clear_survive_it_and_the_net_ops_say_so() {
        let mut l = Layer::default();
        l.apply(
            1,
            [
                Op::Stats("a".into(), Some(vec![1])),
                Op::ClearStats,
                Op::Stats("b".into(), Some(vec![2])),
            ],
        );
        assert_eq!(l.stats("a", 1), Hit::Here(None));
        assert_eq!(l.stats("b", 1), Hit::Here(Some(vec![2])));
        assert_eq!(l.stats("c", 1), Hit::Here(None), "cleared: nothing below");
        assert_eq!(
            l.net_ops(),
            [Op::ClearStats, Op::Stats("b".into(), Some(vec![2]))]
        );
    }
}
