//! Which branches hold a commit, without a list of commits per branch: lanes.
//!
//! Every indexed commit has a place `(lane, height)`. Its height is its distance from the root
//! along first parents; a lane is a run of commits each the first child of the one before,
//! continuing from a base (the first parent of its lowest commit, on another lane). A commit
//! whose first parent is the newest of its lane extends that lane; any other starts a new one.
//! So a fork costs one lane, and an agent appending to its branch stays on one.
//!
//! A branch's history is then a few `(lane, height)` bounds: its tip's lane up to the tip, the
//! base lane up to the base, and so on down to a root, plus the same for the second parent of
//! each merge on the way. A commit `(l, h)` is in the history when the bound for `l` is at
//! least `h`. A fork shares every commit of its source without a row for any of them.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// A commit's place: its lane and its height.
pub(crate) type Place = (u32, u32);

/// The lanes' bookkeeping.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub(crate) struct Lanes {
    lanes: Vec<Lane>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
struct Lane {
    /// The place of the first parent of its lowest commit (`None`: it starts at a root).
    base: Option<Place>,
    /// The height of its newest commit.
    top: u32,
    /// Its newest commit, which a child may extend the lane from.
    top_commit: [u8; 32],
    /// Merges on this lane: the merge's height and its second parent's place.
    merges: Vec<(u32, Place)>,
}

/// The bounds of a branch's history: the highest height it reaches on each lane.
pub(crate) type Reach = HashMap<u32, u32>;

/// A place as one number (for a fast field): the lane in the high half.
pub(crate) fn pack(p: Place) -> u64 {
    (u64::from(p.0) << 32) | u64::from(p.1)
}

/// [`pack`] undone.
pub(crate) fn unpack(v: u64) -> Place {
    ((v >> 32) as u32, v as u32)
}

/// Whether `bounds` ([`Lanes::bounds`]) holds the place packed in `v`.
pub(crate) fn within(bounds: &[u32], v: u64) -> bool {
    let (lane, height) = unpack(v);
    bounds.get(lane as usize).is_some_and(|&b| b > height)
}

impl Lanes {
    /// A reach's bounds as a list by lane (lanes are numbered densely): each lane's highest
    /// height reached plus one, 0 for a lane not reached.
    pub(crate) fn bounds(&self, reach: &Reach) -> Vec<u32> {
        let mut out = vec![0u32; self.count()];
        for (&lane, &height) in reach {
            if let Some(b) = out.get_mut(lane as usize) {
                *b = height.saturating_add(1);
            }
        }
        out
    }

    /// How many lanes there are (numbered from 0).
    pub(crate) fn count(&self) -> usize {
        self.lanes.len()
    }

    /// Whether `reach` holds every commit placed: each lane up to its newest.
    pub(crate) fn all_reached(&self, reach: &Reach) -> bool {
        self.lanes
            .iter()
            .enumerate()
            .all(|(i, l)| reach.get(&(i as u32)).is_some_and(|&h| h >= l.top))
    }

    /// The place of a commit that is the newest of its lane (most tips are).
    pub(crate) fn tops(&self) -> HashMap<[u8; 32], Place> {
        self.lanes
            .iter()
            .enumerate()
            .map(|(i, l)| (l.top_commit, (i as u32, l.top)))
            .collect()
    }

    /// Places a new commit `id` whose first parent is at `parent` (`None`: a root) and, for a
    /// merge, whose second parent is at `merged`.
    pub(crate) fn place(
        &mut self,
        id: [u8; 32],
        parent: Option<Place>,
        merged: Option<Place>,
    ) -> Place {
        let place = match parent {
            Some((lane, height))
                if self
                    .lanes
                    .get(lane as usize)
                    .is_some_and(|l| l.top == height) =>
            {
                let l = &mut self.lanes[lane as usize];
                l.top = height + 1;
                l.top_commit = id;
                (lane, height + 1)
            }
            _ => {
                let height = parent.map_or(0, |(_, h)| h + 1);
                self.lanes.push(Lane {
                    base: parent,
                    top: height,
                    top_commit: id,
                    merges: Vec::new(),
                });
                ((self.lanes.len() - 1) as u32, height)
            }
        };
        if let Some(m) = merged {
            self.lanes[place.0 as usize].merges.push((place.1, m));
        }
        place
    }

    /// The history of the commit at `tip`: the highest height reached on each lane.
    pub(crate) fn reach(&self, tip: Place) -> Reach {
        let mut reach = Reach::new();
        self.extend(&mut reach, tip);
        reach
    }

    /// Adds the history of the commit at `tip` to `reach`.
    pub(crate) fn extend(&self, reach: &mut Reach, tip: Place) {
        let mut todo = vec![tip];
        while let Some((lane, height)) = todo.pop() {
            let had = reach.get(&lane).copied();
            if had.is_some_and(|h| h >= height) {
                continue;
            }
            reach.insert(lane, height);
            let Some(l) = self.lanes.get(lane as usize) else {
                continue;
            };
            // Merges between what was reached before and `height` bring their branch.
            todo.extend(
                l.merges
                    .iter()
                    .filter(|(h, _)| *h <= height && had.is_none_or(|before| *h > before))
                    .map(|(_, m)| *m),
            );
            if had.is_none()
                && let Some(base) = l.base
            {
                todo.push(base);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `reach` holds the commit at `place`.
    fn holds(reach: &Reach, place: Place) -> bool {
        reach.get(&place.0).is_some_and(|&h| h >= place.1)
    }

    fn id(n: u8) -> [u8; 32] {
        [n; 32]
    }

    #[test]
    fn appends_stay_on_a_lane_and_forks_start_one() {
        let mut lanes = Lanes::default();
        let a = lanes.place(id(1), None, None);
        let b = lanes.place(id(2), Some(a), None);
        let c = lanes.place(id(3), Some(b), None);
        assert_eq!((a, b, c), ((0, 0), (0, 1), (0, 2)));
        // A second child of b: a fork.
        let f = lanes.place(id(4), Some(b), None);
        assert_eq!(f, (1, 2));
        let g = lanes.place(id(5), Some(f), None);
        assert_eq!(g, (1, 3));
        assert_eq!(lanes.count(), 2);
        assert_eq!(lanes.tops()[&id(5)], g);

        let main = lanes.reach(c);
        let fork = lanes.reach(g);
        for p in [a, b, c] {
            assert!(holds(&main, p));
        }
        assert!(!holds(&main, f) && !holds(&main, g));
        for p in [a, b, f, g] {
            assert!(holds(&fork, p));
        }
        assert!(
            !holds(&fork, c),
            "the fork does not hold what main wrote after it"
        );
        // Both branches reach every commit placed; one alone does not.
        let mut both = main.clone();
        lanes.extend(&mut both, g);
        assert!(lanes.all_reached(&both) && !lanes.all_reached(&main));
        // A branch reset to b holds neither later commit.
        let reset = lanes.reach(b);
        assert!(holds(&reset, a) && !holds(&reset, c) && !holds(&reset, f));
    }

    #[test]
    fn a_merge_brings_the_merged_history() {
        let mut lanes = Lanes::default();
        let root = lanes.place(id(1), None, None);
        let m1 = lanes.place(id(2), Some(root), None);
        let sub1 = lanes.place(id(3), Some(root), None);
        let sub2 = lanes.place(id(4), Some(sub1), None);
        let merge = lanes.place(id(5), Some(m1), Some(sub2));
        let after = lanes.place(id(6), Some(merge), None);
        let before_merge = lanes.reach(m1);
        assert!(!holds(&before_merge, sub1));
        let reach = lanes.reach(after);
        for p in [root, m1, sub1, sub2, merge, after] {
            assert!(holds(&reach, p), "{p:?}");
        }
        // Reached first below the merge, then above it: the merge is followed.
        let mut r = lanes.reach(m1);
        lanes.extend(&mut r, after);
        assert!(holds(&r, sub2));
    }

    #[test]
    fn places_pack_into_one_number() {
        for p in [(0, 0), (1, 2), (u32::MAX, u32::MAX), (7, 0)] {
            assert_eq!(unpack(pack(p)), p);
        }
        assert!(pack((1, 0)) > pack((0, u32::MAX)));
    }
}
