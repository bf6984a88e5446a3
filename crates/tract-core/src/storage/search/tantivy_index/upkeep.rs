//! Bringing a tantivy index up to the store, holding its write lock: the redactions and
//! collections it has not applied, then the commits it does not hold (found by
//! [`catch_up::walk`]), each made a document.

use crate::error::Result;
use crate::id::{BlobId, CommitId};
use crate::storage::search::catch_up::{Caught, Doc, Indexed, doc_of, walk};
use crate::storage::search::lanes::{self, Place};
use crate::storage::search::state::{State, failed, id_of, key_of};
use crate::storage::search::tantivy_index::index::{Committed, Fields, Index, KEY0, PLACE, Writer};
use crate::storage::store::Store;
use crate::storage::store::snapshot::Snapshot;
use std::sync::Arc;
use tantivy::schema::IndexRecordOption;
use tantivy::{DocSet, Searcher, TERMINATED, TantivyDocument, Term};

/// The place of commit `id` in the index as `reading` has it, if it holds it.
pub(crate) fn locate(searcher: &Searcher, fields: &Fields, id: &CommitId) -> Result<Option<Place>> {
    let term = Term::from_field_bytes(fields.id, id.as_bytes());
    for seg in searcher.segment_readers() {
        let inverted = seg
            .inverted_index(fields.id)
            .map_err(|e| failed("reading its ids", e))?;
        let Some(mut postings) = inverted
            .read_postings(&term, IndexRecordOption::Basic)
            .map_err(|e| failed("reading its ids", e))?
        else {
            continue;
        };
        let alive = seg.alive_bitset();
        let mut doc = postings.doc();
        while doc != TERMINATED {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                let place = seg
                    .fast_fields()
                    .u64(PLACE)
                    .map_err(|e| failed("reading its places", e))?;
                if let Some(v) = place.first(doc) {
                    return Ok(Some(lanes::unpack(v)));
                }
            }
            doc = postings.advance();
        }
    }
    Ok(None)
}

/// The index's document of `doc`.
fn document(doc: &Doc, fields: &Fields) -> TantivyDocument {
    let mut d = TantivyDocument::new();
    d.add_bytes(fields.id, doc.id.as_bytes().as_slice());
    if let Some(b) = &doc.blob {
        d.add_bytes(fields.blob, b.as_bytes().as_slice());
    }
    d.add_text(fields.op, doc.op);
    d.add_u64(fields.time, doc.time);
    d.add_u64(fields.place, lanes::pack(doc.place));
    for (f, k) in fields.key.iter().zip(key_of(&doc.id)) {
        d.add_u64(*f, k);
    }
    if let Some(s) = &doc.said {
        d.add_text(fields.role, s.role.as_str());
        for t in &s.tools {
            d.add_text(fields.tool, t);
        }
        d.add_bool(fields.error, s.error);
        d.add_text(fields.text, &s.text);
    }
    d
}

/// Brings the index up to `store` holding its write lock `w`: the redactions and collections
/// it has not applied, then the commits it does not hold. `collected`: the commits the last
/// collection removed, when the caller knows them. Rebuilds it with `rebuild`, or when it
/// cannot tell what a redaction removed.
pub(crate) fn catch_up(
    index: &Index,
    w: &mut Writer,
    store: &Store,
    collected: Option<&[CommitId]>,
    rebuild: bool,
    indexed: Indexed<'_>,
) -> Result<Caught> {
    let reading = index.read()?;
    // The store is read after the index: it holds everything the index does.
    let snap = store.read()?;
    let mut state: State = (*reading.state).clone();
    let mut caught = Caught::default();
    let fields = index.fields;
    let redactions = snap.redactions()?;
    let mut redacted = Vec::new();
    let mut rebuild = rebuild || reading.stale || state.redactions > redactions;
    for n in state.redactions + 1..=redactions {
        match snap.redacted_blob(n)? {
            Some(b) => redacted.push(b),
            // A redaction this build did not record: what it removed is not known.
            None => rebuild = true,
        }
    }
    let before = reading.searcher.num_docs();
    let reading = if rebuild {
        w.tantivy
            .delete_all_documents()
            .map_err(|e| failed("emptying it", e))?;
        state = State::default();
        caught.rebuilt = true;
        Committed {
            searcher: reading.searcher,
            state: Arc::new(State::default()),
            stale: false,
        }
    } else {
        caught.removed += redact(&reading, &snap, w, &fields, &redacted)?;
        let collections = snap.collections()?;
        if state.collections < collections {
            caught.removed += match collected.filter(|_| state.collections + 1 == collections) {
                Some(ids) => forget(w, &fields, ids),
                None => reconcile(&reading.searcher, &snap, w, &fields)?,
            };
        }
        reading
    };
    let searcher = &reading.searcher;
    let mut at = |id: &CommitId| locate(searcher, &fields, id);
    let mut added = 0u64;
    let walked = walk(
        &snap,
        &reading.state,
        &mut at,
        &[],
        rebuild,
        None,
        &mut |docs| {
            added += docs.len() as u64;
            for d in docs {
                w.tantivy
                    .add_document(document(&d, &fields))
                    .map_err(|e| failed("adding a document", e))?;
            }
            if let Some(tell) = indexed {
                tell(added);
            }
            Ok(())
        },
    )?;
    caught.added = walked.commits;
    if caught.rebuilt {
        // Every document it held was dropped; `added` counts those made anew.
        caught.removed = before;
    }
    walked.applied_to(&mut state, redactions, snap.collections()?);
    if !caught.changed() && *reading.state == state {
        return Ok(caught);
    }
    index.commit(w, state)?;
    if caught.removed > 0 || caught.rebuilt {
        index.purge(w)?;
    }
    Ok(caught)
}

/// Rewrites the documents of the commits carrying `blobs` (redacted: their text is the
/// placeholder now). Returns how many.
fn redact(
    reading: &Committed,
    snap: &Snapshot,
    w: &mut Writer,
    fields: &Fields,
    blobs: &[BlobId],
) -> Result<u64> {
    let mut rewritten = 0;
    for blob in blobs {
        let term = Term::from_field_bytes(fields.blob, blob.as_bytes());
        let hits = docs_with(&reading.searcher, &term, fields)?;
        w.tantivy.delete_term(term);
        for (id, place) in hits {
            let doc = doc_of(snap, id, place)?;
            w.tantivy
                .add_document(document(&doc, fields))
                .map_err(|e| failed("adding a document", e))?;
            rewritten += 1;
        }
    }
    Ok(rewritten)
}

/// The commits (and places) of the live documents holding `term`.
fn docs_with(searcher: &Searcher, term: &Term, fields: &Fields) -> Result<Vec<(CommitId, Place)>> {
    let mut out = Vec::new();
    for seg in searcher.segment_readers() {
        let inverted = seg
            .inverted_index(term.field())
            .map_err(|e| failed("reading its terms", e))?;
        let Some(mut postings) = inverted
            .read_postings(term, IndexRecordOption::Basic)
            .map_err(|e| failed("reading its terms", e))?
        else {
            continue;
        };
        let ff = seg.fast_fields();
        let place = ff.u64(PLACE).map_err(|e| failed("reading its places", e))?;
        let keys = key_columns(seg, fields)?;
        let alive = seg.alive_bitset();
        let mut doc = postings.doc();
        while doc != TERMINATED {
            if alive.is_none_or(|a| a.is_alive(doc))
                && let Some(p) = place.first(doc)
            {
                out.push((key_at(&keys, doc), lanes::unpack(p)));
            }
            doc = postings.advance();
        }
    }
    Ok(out)
}

/// The four key columns of a segment.
pub(crate) fn key_columns(
    seg: &tantivy::SegmentReader,
    _fields: &Fields,
) -> Result<[tantivy::columnar::Column<u64>; 4]> {
    let ff = seg.fast_fields();
    let col = |n: &str| ff.u64(n).map_err(|e| failed("reading its ids", e));
    Ok([col(KEY0)?, col("k1")?, col("k2")?, col("k3")?])
}

/// The commit id of document `doc` from its key columns.
pub(crate) fn key_at(keys: &[tantivy::columnar::Column<u64>; 4], doc: u32) -> CommitId {
    id_of(std::array::from_fn(|i| keys[i].first(doc).unwrap_or(0)))
}

/// Deletes the documents of `ids`. Returns how many ids.
fn forget(w: &mut Writer, fields: &Fields, ids: &[CommitId]) -> u64 {
    for id in ids {
        w.tantivy
            .delete_term(Term::from_field_bytes(fields.id, id.as_bytes()));
    }
    ids.len() as u64
}

/// Deletes the documents of commits the store no longer holds (a collection this index did
/// not see). Returns how many.
fn reconcile(searcher: &Searcher, snap: &Snapshot, w: &mut Writer, fields: &Fields) -> Result<u64> {
    let mut ids = Vec::new();
    for seg in searcher.segment_readers() {
        let keys = key_columns(seg, fields)?;
        let alive = seg.alive_bitset();
        for doc in 0..seg.max_doc() {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                ids.push(key_at(&keys, doc));
            }
        }
    }
    let mut gone = Vec::new();
    for part in ids.chunks(4096) {
        for (id, held) in part.iter().zip(snap.has_commits(part)?) {
            if !held {
                gone.push(*id);
            }
        }
    }
    Ok(forget(w, fields, &gone))
}
