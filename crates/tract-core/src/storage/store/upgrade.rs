//! The store format's versions, and the steps that bring an older store to the newest: each
//! step changes what format `from` lacks, and every step a store needs runs in one write
//! transaction with the new version, so a store is at one version or the next, never between.
//! Every later change of the format (the journal, view checkpoints, a search index) is one
//! more step here.

use crate::error::{Error, Result};
use crate::storage::backend::{ReadTx, WriteTx};
use crate::storage::store::meta::{META_FORMAT, META_STORE_ID};

/// The store format written by this build (tables and record layout).
pub const FORMAT_VERSION: u32 = 5;

/// One step of the format: what turns a store at version `from` into one at `from + 1`.
struct FormatStep {
    from: u32,
    what: &'static str,
    run: fn(&mut dyn WriteTx) -> Result<()>,
}

/// Every step, oldest first.
const STEPS: &[FormatStep] = &[
    FormatStep {
        from: 1,
        what: "a store id (16 random bytes), which the store's other files will name",
        run: add_store_id,
    },
    FormatStep {
        from: 2,
        what: "a journal beside a store file (<file>-journal/): a durable write is one frame \
               in it, folded into the file in batches",
        // The journal's files are made by the backend before the transaction commits
        // (`upgrade_then`); a database store has none.
        run: |_| Ok(()),
    },
    FormatStep {
        from: 3,
        what: "journal frames made durable after the writer lock is let go, so several \
               processes' frames share one fdatasync (journal format 2, from a new segment)",
        // The backend starts the journal's next segment before the transaction commits.
        run: |_| Ok(()),
    },
    FormatStep {
        from: 4,
        what: "a store file's objects in packs beside it (<file>-journal/pack-*): compressed \
               with a dictionary trained on the store's own records, each pack indexed once, \
               written whole by each fold (journal format 3, from a new segment)",
        // A store file's backend moves its objects into a pack and starts the journal's next
        // segment before the transaction commits; a database or memory store keeps its tables.
        run: |_| Ok(()),
    },
];

/// What [`crate::upgrade`] did: the version the store was at, the version it is at now, and
/// what each step changed (none when it was already at the newest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpgradeReport {
    /// The version before.
    pub from: u32,
    /// The version now.
    pub to: u32,
    /// What each step changed, in order.
    pub steps: Vec<String>,
}

/// The format version a store records (`None`: no version, so not a tract store).
pub(crate) fn format_of(tx: &(impl ReadTx + ?Sized)) -> Result<Option<u32>> {
    Ok(tx
        .meta(META_FORMAT)?
        .and_then(|v| <[u8; 4]>::try_from(v.as_slice()).ok())
        .map(u32::from_le_bytes))
}

/// Brings the store `tx` writes to [`FORMAT_VERSION`] and commits. The version is read inside
/// the transaction, so of two processes upgrading at once the second finds nothing to do.
pub(crate) fn upgrade(tx: Box<dyn WriteTx>) -> Result<UpgradeReport> {
    upgrade_then(tx, &mut |_, _| Ok(()))
}

/// [`upgrade`], running `before_commit` with the version the store was at after the steps and
/// before the commit when there was anything to do (a store file makes or moves on its
/// journal there).
pub(crate) fn upgrade_then(
    mut tx: Box<dyn WriteTx>,
    before_commit: &mut dyn FnMut(&mut dyn WriteTx, u32) -> Result<()>,
) -> Result<UpgradeReport> {
    let from = format_of(tx.as_ref())?
        .ok_or_else(|| Error::corrupt("the store records no format version"))?;
    if from > FORMAT_VERSION {
        return Err(Error::NewerFormat {
            found: from,
            supported: FORMAT_VERSION,
        });
    }
    let mut steps = Vec::new();
    for step in STEPS.iter().filter(|s| s.from >= from) {
        (step.run)(tx.as_mut())?;
        steps.push(format!("{} to {}: {}", step.from, step.from + 1, step.what));
    }
    if from < FORMAT_VERSION {
        tx.set_meta(META_FORMAT, Some(FORMAT_VERSION.to_le_bytes().as_slice()))?;
        before_commit(tx.as_mut(), from)?;
        tx.commit()?;
    }
    Ok(UpgradeReport {
        from,
        to: FORMAT_VERSION,
        steps,
    })
}

/// The store's id, which its journal's segments name.
pub(crate) fn store_id_of(tx: &(impl ReadTx + ?Sized)) -> Result<[u8; 16]> {
    tx.meta(META_STORE_ID)?
        .and_then(|v| <[u8; 16]>::try_from(v.as_slice()).ok())
        .ok_or_else(|| Error::corrupt("the store's id is missing or not 16 bytes"))
}

/// What a new store records beside its format: everything the steps add, at once.
pub(crate) fn initialize(tx: &mut dyn WriteTx) -> Result<()> {
    tx.set_meta(META_FORMAT, Some(FORMAT_VERSION.to_le_bytes().as_slice()))?;
    add_store_id(tx)
}

/// 1 to 2: the store's id, random, so that a file that belongs to a store (its journal) can
/// say which, and a copy made by cloning differs from its source.
fn add_store_id(tx: &mut dyn WriteTx) -> Result<()> {
    if tx.meta(META_STORE_ID)?.is_none() {
        tx.set_meta(META_STORE_ID, Some(new_store_id().as_slice()))?;
    }
    Ok(())
}

/// 16 bytes no other store has: the hash of the time, the process, and the random keys the
/// standard library seeds its hash maps with from the operating system.
fn new_store_id() -> [u8; 16] {
    use std::hash::{BuildHasher, Hasher};
    let mut h = blake3::Hasher::new();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    h.update(&now.to_le_bytes());
    h.update(&std::process::id().to_le_bytes());
    for _ in 0..2 {
        let mut seeded = std::collections::hash_map::RandomState::new().build_hasher();
        seeded.write_u128(now);
        h.update(&seeded.finish().to_le_bytes());
    }
    let mut id = [0u8; 16];
    id.copy_from_slice(&h.finalize().as_bytes()[..16]);
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_steps_run_in_order_and_end_at_the_newest_version() {
        for (i, step) in STEPS.iter().enumerate() {
            assert_eq!(step.from, i as u32 + 1, "step {i}");
        }
        assert_eq!(STEPS.len() as u32 + 1, FORMAT_VERSION);
    }

    #[test]
    fn store_ids_differ() {
        let ids: std::collections::HashSet<[u8; 16]> = (0..1000).map(|_| new_store_id()).collect();
        assert_eq!(ids.len(), 1000);
    }
}
