//! Revisions and branch names: parsed once where a user or a program names a commit, resolved
//! once against a snapshot of the store.
//!
//! A revision is `HEAD` (or `@`), a branch name, a hex prefix of a commit id (4 to 63 digits),
//! a full id (64 digits), a commit id a program already holds, or `NAME@{N}`: where the ref
//! `NAME` (a branch or `HEAD`) was N moves ago, by its reflog (`main@{0}` is where it is,
//! `main@{1}` where it was before its last move); each optionally followed by `~N`: N first
//! parents back (`~` alone is `~1`; `~2~1` is `~3`).

use crate::error::{Error, Result};
use crate::id::{CommitId, HexPrefix, MIN_PREFIX};
use crate::refs::Head;
use crate::storage::store::snapshot::Snapshot;
use std::fmt;
use std::str::FromStr;

/// How many candidates an ambiguous prefix error lists.
const CANDIDATES_SHOWN: usize = 6;

/// A parsed revision.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Rev {
    base: Base,
    back: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Base {
    /// `HEAD` / `@`.
    Head,
    /// A commit named by its full id.
    Commit(CommitId),
    /// A branch name, else (when it is hex) a prefix of a commit id.
    Symbol(String),
    /// `NAME@{N}`: the N-th entry of the reflog of ref `NAME`, newest first.
    Reflog(String, usize),
}

impl Rev {
    /// `HEAD`.
    pub fn head() -> Self {
        Rev {
            base: Base::Head,
            back: 0,
        }
    }

    /// The revision `N` first parents before this one.
    pub fn ancestor(mut self, n: usize) -> Self {
        // No history is that long: a saturated count resolves to `HistoryTooShort`.
        self.back = self.back.saturating_add(n);
        self
    }

    /// Parses `HEAD`, `@`, a branch name, a hex prefix or a full id, with optional `~N`
    /// suffixes (`main~2~1` is `main~3`, `@~~` is `HEAD~2`).
    pub fn parse(text: &str) -> Result<Self> {
        let invalid = |reason: &str| Error::InvalidRevision {
            rev: text.to_string(),
            reason: reason.to_string(),
        };
        // Every `~N` is taken off, so no name keeps a `~` and the revision prints as text
        // that parses back to it.
        let mut base = text.trim();
        let mut back = 0usize;
        while let Some((b, n)) = base.rsplit_once('~') {
            let n = match n {
                "" => 1,
                n => n
                    .parse::<usize>()
                    .map_err(|_| invalid("~ takes a number"))?,
            };
            back = back.saturating_add(n);
            base = b.trim_end();
        }
        if let Some((name, n)) = base.strip_suffix('}').and_then(|b| b.rsplit_once("@{")) {
            let n = n
                .trim()
                .parse::<usize>()
                .map_err(|_| invalid("@{N} takes a number of moves back"))?;
            let name = match name.trim() {
                "" | "@" => "HEAD",
                name => name,
            };
            if name != "HEAD" {
                BranchName::new(name).map_err(|_| invalid("@{N} follows a branch name or HEAD"))?;
            }
            return Ok(Rev {
                base: Base::Reflog(name.to_string(), n),
                back,
            });
        }
        let base = match base {
            "" => return Err(invalid("an empty commit reference")),
            "HEAD" | "@" => Base::Head,
            name => match CommitId::from_hex(name) {
                Some(id) => Base::Commit(id),
                None => Base::Symbol(name.to_string()),
            },
        };
        Ok(Rev { base, back })
    }

    /// The commit this revision names when it names one by id and goes back nowhere: such a
    /// revision needs no lookup to know its commit.
    pub fn as_commit(&self) -> Option<CommitId> {
        match (&self.base, self.back) {
            (Base::Commit(id), 0) => Some(*id),
            _ => None,
        }
    }

    /// Whether this is `HEAD` itself.
    pub fn is_head(&self) -> bool {
        self.base == Base::Head && self.back == 0
    }

    /// The branch this revision names, when it is a plain name (no `~N`) that could be one.
    pub fn as_branch_name(&self) -> Option<&str> {
        match (&self.base, self.back) {
            (Base::Symbol(name), 0) => Some(name),
            _ => None,
        }
    }

    /// The branch this revision starts from, when it names one (`main`, `main~3`,
    /// `main@{2}`): where a view of it may start from that branch's checkpoint.
    pub fn branch_base(&self) -> Option<&str> {
        match &self.base {
            Base::Symbol(name) | Base::Reflog(name, _) if name != "HEAD" => Some(name),
            _ => None,
        }
    }

    /// The commit this revision names in `snap`, `HEAD` being what `head` gives (a handle's
    /// position).
    pub(crate) fn resolve(
        &self,
        snap: &Snapshot,
        head: &dyn Fn() -> Result<Head>,
    ) -> Result<CommitId> {
        let mut id = self.resolve_base(snap, head)?;
        for _ in 0..self.back {
            id = snap
                .commit(&id)?
                .parent()
                .ok_or_else(|| Error::HistoryTooShort {
                    rev: self.to_string(),
                })?;
        }
        Ok(id)
    }

    fn resolve_base(&self, snap: &Snapshot, head: &dyn Fn() -> Result<Head>) -> Result<CommitId> {
        match &self.base {
            Base::Head => {
                let head = head()?;
                head.commit.ok_or_else(|| Error::UnbornBranch {
                    branch: head.branch().unwrap_or("HEAD").to_string(),
                })
            }
            Base::Commit(id) => {
                if snap.has_commit(id)? {
                    Ok(*id)
                } else {
                    Err(Error::UnknownRevision { rev: id.to_hex() })
                }
            }
            Base::Reflog(name, n) => {
                let entries = snap.reflog(name, Some(n.saturating_add(1)))?;
                let too_short = || Error::ReflogTooShort {
                    rev: self.to_string(),
                    name: name.clone(),
                    entries: entries.len(),
                };
                match entries.get(*n) {
                    None if entries.is_empty()
                        && name != "HEAD"
                        && snap.branch(name)?.is_none() =>
                    {
                        Err(unknown(snap, name))
                    }
                    None => Err(too_short()),
                    Some(e) => e.new.ok_or_else(|| Error::InvalidRevision {
                        rev: self.to_string(),
                        reason: format!("{name} was deleted by that move"),
                    }),
                }
            }
            Base::Symbol(name) => {
                if let Some(id) = snap.branch(name)? {
                    return Ok(id);
                }
                let unknown = || unknown(snap, name);
                let is_hex = name.chars().all(|c| c.is_ascii_hexdigit());
                if is_hex && name.len() < MIN_PREFIX {
                    // Too short to name a commit by luck-free prefix: a mistake, not a miss.
                    return Err(Error::InvalidRevision {
                        rev: name.clone(),
                        reason: format!(
                            "a commit id prefix needs {MIN_PREFIX} to 64 hex digits (or give a branch name)"
                        ),
                    });
                }
                let prefix = HexPrefix::new(name).ok_or_else(unknown)?;
                let found = snap.commits_with_prefix(&prefix, CANDIDATES_SHOWN)?;
                match found.as_slice() {
                    [] => Err(unknown()),
                    [one] => Ok(*one),
                    many => Err(Error::AmbiguousPrefix {
                        prefix: name.clone(),
                        candidates: many.to_vec(),
                    }),
                }
            }
        }
    }
}

/// The error for `name`, which names no branch and no commit: the branches close to it when
/// there are any (a mistyped branch name, said as `switch` says it), else not found.
fn unknown(snap: &Snapshot, name: &str) -> Error {
    match snap.require_branch(name) {
        Err(e @ Error::UnknownBranch { .. }) if matches!(&e, Error::UnknownBranch { similar, .. } if !similar.is_empty()) => {
            e
        }
        _ => Error::UnknownRevision {
            rev: name.to_string(),
        },
    }
}

impl From<CommitId> for Rev {
    fn from(id: CommitId) -> Self {
        Rev {
            base: Base::Commit(id),
            back: 0,
        }
    }
}

impl From<&CommitId> for Rev {
    fn from(id: &CommitId) -> Self {
        Rev::from(*id)
    }
}

impl FromStr for Rev {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Rev::parse(s)
    }
}

impl fmt::Display for Rev {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.base {
            Base::Head => f.write_str("HEAD")?,
            Base::Commit(id) => write!(f, "{id}")?,
            Base::Symbol(s) => f.write_str(s)?,
            Base::Reflog(name, n) => write!(f, "{name}@{{{n}}}")?,
        }
        match self.back {
            0 => Ok(()),
            n => write!(f, "~{n}"),
        }
    }
}

/// A valid branch name: letters, digits and `- _ . /`, not `HEAD`, not a full commit id, no
/// leading `-`, `.` or `/`, no trailing `/` or `.`, no `..` or `//`, at most 200 bytes.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BranchName(String);

impl BranchName {
    /// Checks `name` against the rules.
    pub fn new(name: &str) -> Result<Self> {
        let ok_chars = name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
        // A full id as a branch name would make `Rev::parse` of that id ambiguous.
        let full_id = name.len() == 64 && name.chars().all(|c| c.is_ascii_hexdigit());
        if name.is_empty()
            || name.len() > 200
            || !ok_chars
            || full_id
            || name == "HEAD"
            || name.starts_with(['-', '.', '/'])
            || name.ends_with(['/', '.'])
            || name.contains("..")
            || name.contains("//")
        {
            return Err(Error::InvalidBranchName {
                name: name.to_string(),
            });
        }
        Ok(BranchName(name.to_string()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for BranchName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for BranchName {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        BranchName::new(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_heads_names_ids_and_ancestry() {
        assert!(Rev::parse("HEAD").unwrap().is_head());
        assert!(Rev::parse(" @ ").unwrap().is_head());
        assert_eq!(Rev::parse("HEAD~").unwrap(), Rev::head().ancestor(1));
        assert_eq!(Rev::parse("main~3").unwrap().to_string(), "main~3");
        let id = CommitId::of(b"x");
        assert_eq!(Rev::parse(&id.to_hex()).unwrap().as_commit(), Some(id));
        assert_eq!(Rev::from(id).to_string(), id.to_hex());
        assert_eq!(Rev::parse("abcd").unwrap().as_branch_name(), Some("abcd"));
    }

    /// Found by fuzzing (revision_parse): only the last `~N` was taken off, so `a~b~0` was
    /// the name `a~b` and printed as `a~b`, which does not parse (and `x ~0` printed as `x `,
    /// which parses as `x`).
    #[test]
    fn every_ancestry_suffix_is_read_and_printing_round_trips() {
        assert_eq!(
            Rev::parse("main~2~1").unwrap(),
            Rev::parse("main~3").unwrap()
        );
        assert_eq!(Rev::parse("@~~").unwrap(), Rev::head().ancestor(2));
        assert_eq!(Rev::parse("x ~0").unwrap().as_branch_name(), Some("x"));
        for text in ["a~b~0", "a~~b", "x~1~y"] {
            assert!(
                matches!(Rev::parse(text), Err(Error::InvalidRevision { .. })),
                "{text:?}"
            );
        }
        let far = format!("main~{}~1", usize::MAX);
        let rev = Rev::parse(&far).unwrap();
        assert_eq!(Rev::parse(&rev.to_string()).unwrap(), rev);
        assert_eq!(
            Rev::head().ancestor(usize::MAX).ancestor(1),
            Rev::head().ancestor(usize::MAX)
        );
    }

    #[test]
    fn reflog_entries_parse_and_print_back() {
        let r = Rev::parse("main@{2}~1").unwrap();
        assert_eq!(r.to_string(), "main@{2}~1");
        assert_eq!(r.branch_base(), Some("main"));
        assert_eq!(Rev::parse(&r.to_string()).unwrap(), r);
        assert_eq!(Rev::parse("@{1}").unwrap().to_string(), "HEAD@{1}");
        assert_eq!(Rev::parse("HEAD@{0}").unwrap().branch_base(), None);
        assert_eq!(
            Rev::parse("feature/x@{ 3 }").unwrap().to_string(),
            "feature/x@{3}"
        );
        for bad in ["main@{x}", "main@{-1}", "ma in@{1}", "main@{}"] {
            assert!(
                matches!(Rev::parse(bad), Err(Error::InvalidRevision { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn bad_revisions_are_errors() {
        for bad in ["", "  ", "~2", "HEAD~x", "main~-1"] {
            assert!(
                matches!(Rev::parse(bad), Err(Error::InvalidRevision { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn branch_name_rules() {
        for ok in ["main", "feature/x", "v1.2", "a_b-c", "beef"] {
            assert!(BranchName::new(ok).is_ok(), "{ok}");
        }
        let full = "a".repeat(64);
        for bad in [
            "", "HEAD", "-x", ".x", "/x", "x/", "x.", "a..b", "a//b", "a b", "é", &full,
        ] {
            assert!(
                matches!(BranchName::new(bad), Err(Error::InvalidBranchName { .. })),
                "{bad:?}"
            );
        }
    }
}
