//! What a journal frame carries: the writes of one transaction, in the order they were made,
//! in a small binary layout (a tag, then each field; bytes and names with a 4-byte length).
//! Every write a backend's transaction can make has an op, so a frame replays the transaction
//! exactly; a reflog entry carries the sequence number it was given, so replaying a frame twice
//! changes nothing.

use crate::error::{Error, Result};
use crate::storage::backend::{Key, ObjectTable};

/// One write of a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Op {
    /// A record stored under its id.
    Put(ObjectTable, Key, Vec<u8>),
    /// A record removed.
    Remove(ObjectTable, Key),
    /// A metadata value set, or removed.
    Meta(String, Option<Vec<u8>>),
    /// A branch moved, or removed.
    Tip(String, Option<Key>),
    /// A reflog entry, under its sequence number.
    Reflog(String, u64, Vec<u8>),
    /// A reflog entry removed.
    RemoveReflog(String, u64),
    /// A branch's row of counts set, or removed.
    Stats(String, Option<Vec<u8>>),
    /// Every row of counts removed.
    ClearStats,
}

fn table_tag(t: ObjectTable) -> u8 {
    match t {
        ObjectTable::Commits => 0,
        ObjectTable::Blobs => 1,
        ObjectTable::Chunks => 2,
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u32).to_le_bytes());
    out.extend_from_slice(b);
}

fn put_opt(out: &mut Vec<u8>, b: Option<&[u8]>) {
    match b {
        Some(b) => {
            out.push(1);
            put_bytes(out, b);
        }
        None => out.push(0),
    }
}

/// The frame payload of `ops`. A value longer than 4 GiB has no layout: an error.
pub(crate) fn encode(ops: &[Op]) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(ops.iter().map(Op::size).sum::<usize>() + 16);
    for op in ops {
        if op.size() > u32::MAX as usize {
            return Err(Error::invalid_input("a value of 4 GiB or more"));
        }
        match op {
            Op::Put(t, k, v) => {
                out.extend_from_slice(&[1, table_tag(*t)]);
                out.extend_from_slice(k);
                put_bytes(&mut out, v);
            }
            Op::Remove(t, k) => {
                out.extend_from_slice(&[2, table_tag(*t)]);
                out.extend_from_slice(k);
            }
            Op::Meta(name, v) => {
                out.push(3);
                put_bytes(&mut out, name.as_bytes());
                put_opt(&mut out, v.as_deref());
            }
            Op::Tip(name, k) => {
                out.push(4);
                put_bytes(&mut out, name.as_bytes());
                put_opt(&mut out, k.as_ref().map(|k| k.as_slice()));
            }
            Op::Reflog(name, n, entry) => {
                out.push(5);
                put_bytes(&mut out, name.as_bytes());
                out.extend_from_slice(&n.to_le_bytes());
                put_bytes(&mut out, entry);
            }
            Op::RemoveReflog(name, n) => {
                out.push(6);
                put_bytes(&mut out, name.as_bytes());
                out.extend_from_slice(&n.to_le_bytes());
            }
            Op::Stats(name, v) => {
                out.push(7);
                put_bytes(&mut out, name.as_bytes());
                put_opt(&mut out, v.as_deref());
            }
            Op::ClearStats => out.push(8),
        }
    }
    Ok(out)
}

impl Op {
    /// About how many bytes the op takes in a frame.
    fn size(&self) -> usize {
        match self {
            Op::Put(_, _, v) => 38 + v.len(),
            Op::Remove(..) => 34,
            Op::Meta(n, v) | Op::Stats(n, v) => 10 + n.len() + v.as_ref().map_or(0, Vec::len),
            Op::Tip(n, _) => 42 + n.len(),
            Op::Reflog(n, _, e) => 17 + n.len() + e.len(),
            Op::RemoveReflog(n, _) => 13 + n.len(),
            Op::ClearStats => 1,
        }
    }
}

/// Reads a payload written by [`encode`].
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let out = self
            .bytes
            .get(self.at..self.at.saturating_add(n))
            .ok_or_else(|| Error::corrupt("a journal frame ends inside an op"))?;
        self.at += n;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn u64(&mut self) -> Result<u64> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(b))
    }

    fn key(&mut self) -> Result<Key> {
        let mut k = [0u8; 32];
        k.copy_from_slice(self.take(32)?);
        Ok(k)
    }

    fn bytes(&mut self) -> Result<Vec<u8>> {
        let mut b = [0u8; 4];
        b.copy_from_slice(self.take(4)?);
        Ok(self.take(u32::from_le_bytes(b) as usize)?.to_vec())
    }

    fn name(&mut self) -> Result<String> {
        String::from_utf8(self.bytes()?)
            .map_err(|_| Error::corrupt("a name in a journal frame is not UTF-8"))
    }

    fn opt(&mut self) -> Result<Option<Vec<u8>>> {
        match self.u8()? {
            0 => Ok(None),
            1 => Ok(Some(self.bytes()?)),
            t => Err(Error::corrupt(format!(
                "an option tagged {t} in a journal frame"
            ))),
        }
    }

    fn table(&mut self) -> Result<ObjectTable> {
        match self.u8()? {
            0 => Ok(ObjectTable::Commits),
            1 => Ok(ObjectTable::Blobs),
            2 => Ok(ObjectTable::Chunks),
            t => Err(Error::corrupt(format!("table {t} in a journal frame"))),
        }
    }
}

/// The ops of a frame's payload. A payload this build cannot read is an error (a frame that
/// checks was written by a tract, so this is a newer layout or a bug, never a torn write).
pub(crate) fn decode(payload: &[u8]) -> Result<Vec<Op>> {
    let mut r = Reader {
        bytes: payload,
        at: 0,
    };
    let mut ops = Vec::new();
    while r.at < payload.len() {
        let op = match r.u8()? {
            1 => Op::Put(r.table()?, r.key()?, r.bytes()?),
            2 => Op::Remove(r.table()?, r.key()?),
            3 => Op::Meta(r.name()?, r.opt()?),
            4 => {
                let name = r.name()?;
                let tip =
                    match r.opt()? {
                        None => None,
                        Some(k) => Some(<Key>::try_from(k.as_slice()).map_err(|_| {
                            Error::corrupt("a tip in a journal frame is not 32 bytes")
                        })?),
                    };
                Op::Tip(name, tip)
            }
            5 => Op::Reflog(r.name()?, r.u64()?, r.bytes()?),
            6 => Op::RemoveReflog(r.name()?, r.u64()?),
            7 => Op::Stats(r.name()?, r.opt()?),
            8 => Op::ClearStats,
            t => return Err(Error::corrupt(format!("op {t} in a journal frame"))),
        };
        ops.push(op);
    }
    Ok(ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_reads_back_as_written() {
        let ops = vec![
            Op::Put(ObjectTable::Commits, [1; 32], b"record".to_vec()),
            Op::Put(ObjectTable::Chunks, [2; 32], vec![]),
            Op::Remove(ObjectTable::Blobs, [3; 32]),
            Op::Meta("HEAD".into(), Some(b"main".to_vec())),
            Op::Meta("setting.x".into(), None),
            Op::Tip("feature/é".into(), Some([4; 32])),
            Op::Tip("gone".into(), None),
            Op::Reflog("main".into(), 41, b"entry".to_vec()),
            Op::RemoveReflog("main".into(), 3),
            Op::Stats("main".into(), Some(vec![9, 9])),
            Op::Stats("old".into(), None),
            Op::ClearStats,
        ];
        let bytes = encode(&ops).unwrap();
        assert_eq!(decode(&bytes).unwrap(), ops);
        // Cut anywhere inside, it is an error, never other ops.
        for cut in 1..bytes.len() {
            if let Ok(got) = decode(&bytes[..cut]) {
                assert!(
                    ops.starts_with(&got) && got.len() < ops.len(),
                    "cut at {cut}"
                );
            }
        }
        assert!(decode(&[9]).is_err());
    }
}
