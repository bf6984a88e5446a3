//! The writes a PostgreSQL write transaction holds back until it next needs an answer from the
//! server (a read, or its commit), to send them in that same round trip as one set-based
//! statement per table, however many appends a group made.
//!
//! Statements are unnamed (a pooler in transaction mode cannot carry a prepared one), so the
//! server parses and plans each one every time, and each is a round trip if sent alone: an
//! append written statement by statement would cost a dozen of each. Held back and merged, a
//! group of appends costs the same few statements as one append, sent with the read or the
//! `COMMIT` that follows them.
//!
//! Merging keeps the transaction's meaning: objects are keyed by id (the last copy of an id
//! wins, as a later put would), a ref moved twice is one move from its first tip to its last,
//! reflog entries keep their order per ref, and counts and settings keep their last value.

use crate::storage::backend::{Key, ObjectTable};
use std::collections::BTreeMap;
use tokio_postgres::types::{ToSql, Type};

/// One statement to send (`@.` names the store's schema) with its parameters.
pub(crate) struct Statement {
    /// The SQL.
    pub sql: &'static str,
    /// Its parameters, owned, with their types.
    pub params: Vec<(Box<dyn ToSql + Sync + Send>, Type)>,
    /// For ref moves: each ref that must have moved (the statement returns the names it
    /// moved), with the tip it was moved from. A ref that did not move was not at that tip.
    pub moves: Vec<(String, Option<Key>)>,
}

impl Statement {
    fn new(sql: &'static str, params: Vec<(Box<dyn ToSql + Sync + Send>, Type)>) -> Self {
        Statement {
            sql,
            params,
            moves: Vec::new(),
        }
    }
}

/// An object record held back: its record and, for a commit, its first parent.
type HeldObject = (Vec<u8>, Option<Key>);

/// The writes held back, merged.
#[derive(Default)]
pub(crate) struct Writes {
    /// Per object table (commits, blobs, chunks), in id order: the order every writer stores
    /// rows in, so two storing the same objects never wait for each other in a cycle.
    objects: [BTreeMap<Key, HeldObject>; 3],
    /// At most one move per ref: its tip before this transaction moved it, and after.
    moves: Vec<(String, Option<Key>, Option<Key>)>,
    /// Reflog entries in the order they were logged.
    reflog: Vec<(String, Vec<u8>)>,
    /// Each branch's counts (`None` removes them).
    stats: BTreeMap<String, Option<Vec<u8>>>,
    /// Each setting (`None` removes it).
    meta: BTreeMap<String, Option<Vec<u8>>>,
}

fn slot(table: ObjectTable) -> usize {
    match table {
        ObjectTable::Commits => 0,
        ObjectTable::Blobs => 1,
        ObjectTable::Chunks => 2,
    }
}

/// Boxes a parameter for a [`Statement`].
fn param<T: ToSql + Sync + Send + 'static>(v: T, t: Type) -> (Box<dyn ToSql + Sync + Send>, Type) {
    (Box::new(v), t)
}

impl Writes {
    /// Whether nothing is held back.
    pub(crate) fn is_empty(&self) -> bool {
        self.objects.iter().all(BTreeMap::is_empty)
            && self.moves.is_empty()
            && self.reflog.is_empty()
            && self.stats.is_empty()
            && self.meta.is_empty()
    }

    /// Whether a statement held back may be refused (a ref move whose tip is not the one it
    /// names): such writes are sent, and their outcome checked, before a `COMMIT` is.
    pub(crate) fn may_be_refused(&self) -> bool {
        self.moves.iter().any(|(_, old, new)| old != new)
    }

    /// Holds back object records.
    pub(crate) fn put_object(
        &mut self,
        table: ObjectTable,
        key: Key,
        record: &[u8],
        parent: Option<Key>,
    ) {
        self.objects[slot(table)].insert(key, (record.to_vec(), parent));
    }

    /// Holds back a ref move from `old` to `new`, merged with an earlier move of the same ref.
    pub(crate) fn move_ref(&mut self, name: &str, old: Option<Key>, new: Option<Key>) {
        match self.moves.iter_mut().find(|(n, _, _)| n == name) {
            Some((_, _, last)) => *last = new,
            None => self.moves.push((name.to_string(), old, new)),
        }
    }

    /// Holds back a reflog entry.
    pub(crate) fn log(&mut self, name: &str, entry: &[u8]) {
        self.reflog.push((name.to_string(), entry.to_vec()));
    }

    /// Holds back a branch's counts.
    pub(crate) fn set_stats(&mut self, name: &str, stats: Option<&[u8]>) {
        self.stats
            .insert(name.to_string(), stats.map(<[u8]>::to_vec));
    }

    /// Holds back a setting.
    pub(crate) fn set_meta(&mut self, key: &str, value: Option<&[u8]>) {
        self.meta.insert(key.to_string(), value.map(<[u8]>::to_vec));
    }

    /// The statements that make the held-back writes, in a fixed order of tables.
    pub(crate) fn statements(self) -> Vec<Statement> {
        let mut out = Vec::new();
        let [commits, blobs, chunks] = self.objects;
        for (table, rows) in [
            (ObjectTable::Chunks, chunks),
            (ObjectTable::Blobs, blobs),
            (ObjectTable::Commits, commits),
        ] {
            if rows.is_empty() {
                continue;
            }
            let mut ids = Vec::with_capacity(rows.len());
            let mut records = Vec::with_capacity(rows.len());
            let mut parents = Vec::with_capacity(rows.len());
            for (id, (record, parent)) in rows {
                ids.push(id.to_vec());
                records.push(record);
                parents.push(parent.map(|p| p.to_vec()));
            }
            out.push(match table {
                ObjectTable::Commits => Statement::new(
                    "INSERT INTO @.commits (id, parent, record)
                     SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bytea[])
                     ON CONFLICT (id) DO UPDATE SET parent = excluded.parent, record = excluded.record",
                    vec![
                        param(ids, Type::BYTEA_ARRAY),
                        param(parents, Type::BYTEA_ARRAY),
                        param(records, Type::BYTEA_ARRAY),
                    ],
                ),
                ObjectTable::Blobs => Statement::new(
                    "INSERT INTO @.blobs (id, record) SELECT * FROM unnest($1::bytea[], $2::bytea[])
                     ON CONFLICT (id) DO UPDATE SET record = excluded.record",
                    vec![
                        param(ids, Type::BYTEA_ARRAY),
                        param(records, Type::BYTEA_ARRAY),
                    ],
                ),
                ObjectTable::Chunks => Statement::new(
                    "INSERT INTO @.chunks (id, record) SELECT * FROM unnest($1::bytea[], $2::bytea[])
                     ON CONFLICT (id) DO UPDATE SET record = excluded.record",
                    vec![
                        param(ids, Type::BYTEA_ARRAY),
                        param(records, Type::BYTEA_ARRAY),
                    ],
                ),
            });
        }
        let moves: Vec<_> = self
            .moves
            .into_iter()
            .filter(|(_, old, new)| old != new)
            .collect();
        out.extend(ref_moves(moves));
        if let [(name, entry)] = self.reflog.as_slice() {
            // One entry (an append's): the plain statement, cheaper to plan.
            out.push(Statement::new(
                "INSERT INTO @.reflog (name, seq, entry)
                 SELECT $1, COALESCE(MAX(seq) + 1, 0), $2 FROM @.reflog WHERE name = $1",
                vec![
                    param(name.clone(), Type::TEXT),
                    param(entry.clone(), Type::BYTEA),
                ],
            ));
        } else if !self.reflog.is_empty() {
            let (names, entries): (Vec<String>, Vec<Vec<u8>>) = self.reflog.into_iter().unzip();
            out.push(Statement::new(
                // Numbered after each ref's last entry, in the order they were logged.
                "INSERT INTO @.reflog (name, seq, entry)
                 SELECT d.name,
                        COALESCE((SELECT MAX(r.seq) FROM @.reflog r WHERE r.name = d.name), -1)
                          + row_number() OVER (PARTITION BY d.name ORDER BY d.ord),
                        d.entry
                 FROM unnest($1::text[], $2::bytea[]) WITH ORDINALITY AS d(name, entry, ord)",
                vec![
                    param(names, Type::TEXT_ARRAY),
                    param(entries, Type::BYTEA_ARRAY),
                ],
            ));
        }
        out.extend(named_values(
            self.stats,
            "INSERT INTO @.branch_stats (name, stats) SELECT * FROM unnest($1::text[], $2::bytea[])
             ON CONFLICT (name) DO UPDATE SET stats = excluded.stats",
            "DELETE FROM @.branch_stats WHERE name = ANY($1)",
        ));
        out.extend(named_values(
            self.meta,
            "INSERT INTO @.meta (key, value) SELECT * FROM unnest($1::text[], $2::bytea[])
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            "DELETE FROM @.meta WHERE key = ANY($1)",
        ));
        out
    }
}

/// The statements of ref moves (each from the tip it names), one per kind of move; each
/// returns the names of the refs it moved. A single update (an append's) has a plain
/// statement: planning a join on arrays costs the server more than the update itself.
fn ref_moves(moves: Vec<(String, Option<Key>, Option<Key>)>) -> Vec<Statement> {
    let (mut updated, mut created, mut deleted) = (Vec::new(), Vec::new(), Vec::new());
    for (name, old, new) in moves {
        match (old, new) {
            (Some(o), Some(n)) => updated.push((name, o, n)),
            (None, Some(n)) => created.push((name, n)),
            (Some(o), None) => deleted.push((name, o)),
            (None, None) => {}
        }
    }
    let mut out = Vec::new();
    if let [(name, old, new)] = updated.as_slice() {
        let mut s = Statement::new(
            "UPDATE @.refs SET tip = $3 WHERE name = $1 AND tip = $2 RETURNING name",
            vec![
                param(name.clone(), Type::TEXT),
                param(old.to_vec(), Type::BYTEA),
                param(new.to_vec(), Type::BYTEA),
            ],
        );
        s.moves = vec![(name.clone(), Some(*old))];
        out.push(s);
    } else if !updated.is_empty() {
        let mut s = Statement::new(
            "UPDATE @.refs r SET tip = d.new
             FROM unnest($1::text[], $2::bytea[], $3::bytea[]) AS d(name, old, new)
             WHERE r.name = d.name AND r.tip = d.old RETURNING r.name",
            vec![
                param(
                    updated
                        .iter()
                        .map(|(n, _, _)| n.clone())
                        .collect::<Vec<_>>(),
                    Type::TEXT_ARRAY,
                ),
                param(
                    updated
                        .iter()
                        .map(|(_, o, _)| o.to_vec())
                        .collect::<Vec<_>>(),
                    Type::BYTEA_ARRAY,
                ),
                param(
                    updated
                        .iter()
                        .map(|(_, _, n)| n.to_vec())
                        .collect::<Vec<_>>(),
                    Type::BYTEA_ARRAY,
                ),
            ],
        );
        s.moves = updated.into_iter().map(|(n, o, _)| (n, Some(o))).collect();
        out.push(s);
    }
    if !created.is_empty() {
        let mut s = Statement::new(
            "INSERT INTO @.refs (name, tip) SELECT * FROM unnest($1::text[], $2::bytea[])
             ON CONFLICT (name) DO NOTHING RETURNING name",
            vec![
                param(
                    created.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(),
                    Type::TEXT_ARRAY,
                ),
                param(
                    created.iter().map(|(_, t)| t.to_vec()).collect::<Vec<_>>(),
                    Type::BYTEA_ARRAY,
                ),
            ],
        );
        s.moves = created.into_iter().map(|(n, _)| (n, None)).collect();
        out.push(s);
    }
    if !deleted.is_empty() {
        let mut s = Statement::new(
            "DELETE FROM @.refs r USING unnest($1::text[], $2::bytea[]) AS d(name, old)
             WHERE r.name = d.name AND r.tip = d.old RETURNING r.name",
            vec![
                param(
                    deleted.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(),
                    Type::TEXT_ARRAY,
                ),
                param(
                    deleted.iter().map(|(_, o)| o.to_vec()).collect::<Vec<_>>(),
                    Type::BYTEA_ARRAY,
                ),
            ],
        );
        s.moves = deleted.into_iter().map(|(n, o)| (n, Some(o))).collect();
        out.push(s);
    }
    out
}

/// The statements of named values (a branch's counts, a setting): `upsert` (names and values)
/// for those set, `delete` (names) for those removed (`None`).
fn named_values(
    values: BTreeMap<String, Option<Vec<u8>>>,
    upsert: &'static str,
    delete: &'static str,
) -> Vec<Statement> {
    let (mut names, mut set, mut removed) = (Vec::new(), Vec::new(), Vec::new());
    for (name, value) in values {
        match value {
            Some(v) => {
                names.push(name);
                set.push(v);
            }
            None => removed.push(name),
        }
    }
    let mut out = Vec::new();
    if !names.is_empty() {
        out.push(Statement::new(
            upsert,
            vec![
                param(names, Type::TEXT_ARRAY),
                param(set, Type::BYTEA_ARRAY),
            ],
        ));
    }
    if !removed.is_empty() {
        out.push(Statement::new(
            delete,
            vec![param(removed, Type::TEXT_ARRAY)],
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ref_moved_twice_is_one_move_and_a_move_back_is_none() {
        let (a, b, c) = ([1u8; 32], [2u8; 32], [3u8; 32]);
        let mut w = Writes::default();
        w.move_ref("main", Some(a), Some(b));
        w.move_ref("main", Some(b), Some(c));
        w.move_ref("side", Some(a), Some(b));
        w.move_ref("side", Some(b), Some(a));
        assert!(w.may_be_refused());
        let s = w.statements();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].moves, vec![("main".to_string(), Some(a))]);
    }

    #[test]
    fn each_kind_of_ref_move_is_checked_by_name() {
        let (a, b) = ([1u8; 32], [2u8; 32]);
        let mut w = Writes::default();
        w.move_ref("up1", Some(a), Some(b));
        w.move_ref("up2", Some(b), Some(a));
        w.move_ref("new", None, Some(a));
        w.move_ref("gone", Some(b), None);
        let s = w.statements();
        let moves: Vec<_> = s.iter().map(|s| s.moves.clone()).collect();
        assert_eq!(
            moves,
            vec![
                vec![("up1".to_string(), Some(a)), ("up2".to_string(), Some(b))],
                vec![("new".to_string(), None)],
                vec![("gone".to_string(), Some(b))],
            ]
        );
    }

    #[test]
    fn nothing_held_back_makes_no_statement() {
        let w = Writes::default();
        assert!(w.is_empty() && !w.may_be_refused());
        assert!(w.statements().is_empty());
    }

    #[test]
    fn every_kind_of_write_is_one_statement_whatever_its_count() {
        let mut w = Writes::default();
        for i in 0..10u8 {
            w.put_object(ObjectTable::Blobs, [i; 32], b"blob", None);
            w.put_object(ObjectTable::Commits, [i; 32], b"commit", Some([0; 32]));
            w.log(&format!("b{i}"), b"entry");
            w.set_stats(&format!("b{i}"), Some(b"stats"));
        }
        w.set_stats("gone", None);
        w.set_meta("head", Some(b"main"));
        assert!(!w.may_be_refused());
        // blobs, commits, reflog, stats set, stats removed, meta set
        assert_eq!(w.statements().len(), 6);
    }
}
