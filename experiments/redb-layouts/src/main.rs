//! How many bytes redb's file takes for a store's records under three layouts, per byte of the
//! items' text (docs/decisions.md, "Store bytes on redb's B-trees, and what 1.3 would take").
//!
//! Each item is the records `scripts/bench-appends.py`'s items make on average: a blob of 300
//! bytes and a commit of 81, keyed by 32-byte content hashes, 383 bytes of item text. The
//! layouts, each written `PER_TXN` items to a transaction as a fold writes them:
//!
//! - `hash`: the records in tables keyed by their hash (the store today);
//! - `sequence`: the records in a table keyed by a sequence number, and a hash → sequence
//!   index beside it;
//! - `log`: the records appended to a log file as a journal writes them (with a 37-byte op
//!   header each), only a hash → (offset, length) index in redb.
//!
//! ```sh
//! cargo run --release --manifest-path experiments/redb-layouts/Cargo.toml -- [ITEMS...]
//! ```

use redb::{ConcurrencyMode, Database, ReadableDatabase, TableDefinition};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

type Key = [u8; 32];

const COMMITS: TableDefinition<Key, &[u8]> = TableDefinition::new("commits");
const BLOBS: TableDefinition<Key, &[u8]> = TableDefinition::new("blobs");
const RECORDS: TableDefinition<u64, &[u8]> = TableDefinition::new("records");
const BY_HASH: TableDefinition<Key, u64> = TableDefinition::new("by_hash");
const IN_LOG: TableDefinition<Key, (u64, u32)> = TableDefinition::new("in_log");

const BLOB: usize = 300;
const COMMIT: usize = 81;
const ITEM_TEXT: f64 = 383.0;
const OP_HEADER: usize = 37;
const PER_TXN: u64 = 10_000;

/// A hash-like key: the bits of `i` and `salt` mixed.
fn key(i: u64, salt: u64) -> Key {
    let mut k = [0u8; 32];
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ salt;
    for chunk in k.chunks_mut(8) {
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
        x ^= x >> 29;
        chunk.copy_from_slice(&x.to_le_bytes());
    }
    k
}

/// Writes `n` items in `layout` into a new database (and log) in `dir`; the file sizes per
/// byte of item text, and the time the transactions took.
fn measure(
    dir: &Path,
    layout: &str,
    n: u64,
) -> Result<(f64, f64, f64), Box<dyn std::error::Error>> {
    let path = dir.join(format!("{layout}.redb"));
    let log_path = dir.join(format!("{layout}.log"));
    let mut builder = Database::builder();
    builder.set_concurrency_mode(ConcurrencyMode::MultiWriter);
    let db = builder.create(&path)?;
    let mut log = std::fs::File::create(&log_path)?;
    let (blob, commit) = (vec![7u8; BLOB], vec![9u8; COMMIT]);
    let mut at = 0u64;
    let started = Instant::now();
    for first in (0..n).step_by(PER_TXN as usize) {
        let w = db.begin_write()?;
        {
            let items = first..(first + PER_TXN).min(n);
            match layout {
                "hash" => {
                    let mut blobs = w.open_table(BLOBS)?;
                    let mut commits = w.open_table(COMMITS)?;
                    for i in items {
                        blobs.insert(key(i, 1), blob.as_slice())?;
                        commits.insert(key(i, 2), commit.as_slice())?;
                    }
                }
                "sequence" => {
                    let mut records = w.open_table(RECORDS)?;
                    let mut by_hash = w.open_table(BY_HASH)?;
                    for i in items {
                        for (salt, record) in [(1, &blob), (2, &commit)] {
                            let seq = 2 * i + salt;
                            records.insert(seq, record.as_slice())?;
                            by_hash.insert(key(i, salt), seq)?;
                        }
                    }
                }
                _ => {
                    let mut in_log = w.open_table(IN_LOG)?;
                    for i in items {
                        for (salt, record) in [(1, &blob), (2, &commit)] {
                            log.write_all(&[0u8; OP_HEADER])?;
                            log.write_all(record)?;
                            at += OP_HEADER as u64;
                            in_log.insert(key(i, salt), (at, record.len() as u32))?;
                            at += record.len() as u64;
                        }
                    }
                    log.sync_data()?;
                }
            }
        }
        w.commit()?;
    }
    let took = started.elapsed().as_secs_f64();
    let text = n as f64 * ITEM_TEXT;
    let file = std::fs::metadata(&path)?.len() as f64 / text;
    let log = std::fs::metadata(&log_path)?.len() as f64 / text;
    drop(db.begin_read()?);
    Ok((file, log, took))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sizes: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let sizes = if sizes.is_empty() {
        vec![10_000, 100_000, 300_000]
    } else {
        sizes
    };
    let dir = tempfile::tempdir()?;
    println!("items\tlayout\tredb file / text\tlog / text\ttotal / text\tseconds");
    for n in sizes {
        for layout in ["hash", "sequence", "log"] {
            let (file, log, took) = measure(dir.path(), layout, n)?;
            println!(
                "{n}\t{layout}\t{file:.2}\t{log:.2}\t{:.2}\t{took:.2}",
                file + log
            );
            for ext in ["redb", "log"] {
                std::fs::remove_file(dir.path().join(format!("{layout}.{ext}")))?;
            }
        }
    }
    Ok(())
}
