//! The store's secrets policy and fingerprint key as the store keeps them, and the scrubber a
//! write applies: the one the store's policy asks for, checked in each write transaction, so
//! every process and surface scrubs by the same rules.

use crate::error::{Error, Result};
use crate::object::Message;
use crate::secrets::detect::Detector;
use crate::secrets::policy::SecretsPolicy;
use crate::secrets::scrub::{self, Key};
use crate::storage::store::meta::{META_SECRETS_KEY, SECRETS_SETTING};
use crate::storage::store::writer::Writer;
use crate::storage::store::{Snapshot, Store};
use std::sync::{Arc, Mutex};

/// The store's policy: `None` for a store an older build made, which has none (it scrubs
/// nothing until `tract upgrade` or `config secrets` gives it one).
pub(crate) fn load(snap: &Snapshot) -> Result<Option<SecretsPolicy>> {
    snap.setting(SECRETS_SETTING)?
        .map(|bytes| parsed(&bytes))
        .transpose()
}

fn parsed(bytes: &[u8]) -> Result<SecretsPolicy> {
    serde_json::from_slice(bytes)
        .map_err(|e| Error::corrupt(format!("the stored secrets policy: {e}")))
}

/// Replaces the store's policy (durably), making the fingerprint key if the store has none. An
/// invalid policy is refused and the stored one kept.
pub(crate) fn store(store: &Store, policy: &SecretsPolicy) -> Result<()> {
    policy.validate()?;
    // Compiled before anything is written: a rule the regex engine refuses is the caller's
    // error, not a later write's.
    Detector::new(policy)?;
    let bytes = serde_json::to_vec(policy)
        .map_err(|e| Error::invalid_input(format!("the secrets policy cannot be stored: {e}")))?;
    let mut w = store.write()?;
    if w.meta(META_SECRETS_KEY)?.is_none() {
        let key = scrub::new_key()?;
        w.set_meta(META_SECRETS_KEY, Some(key.as_slice()))?;
    }
    w.set_setting(SECRETS_SETTING, Some(bytes.as_slice()))?;
    w.commit()?;
    // This process's next write reads the new policy before it prepares.
    store.attached(Kept::default).clear();
    Ok(())
}

/// The store's fingerprint key, if it has one.
pub(crate) fn key(snap: &Snapshot) -> Result<Option<Key>> {
    snap.meta(META_SECRETS_KEY)?.map(|b| key_of(&b)).transpose()
}

/// The store's fingerprint key as a write transaction sees it.
fn key_in(w: &Writer) -> Result<Option<Key>> {
    w.meta(META_SECRETS_KEY)?.map(|b| key_of(&b)).transpose()
}

fn key_of(bytes: &[u8]) -> Result<Key> {
    Key::try_from(bytes).map_err(|_| Error::corrupt("the store's secrets key is not 32 bytes"))
}

/// The detector a scan of what is stored uses: the store's rules, whether or not it scrubs as
/// it writes (the built-in rules for a store with no policy).
pub(crate) fn scan_detector(snap: &Snapshot) -> Result<Arc<Detector>> {
    match load(snap)? {
        Some(policy) => compiled(policy),
        None => Ok(Detector::builtin()),
    }
}

/// How many policies with rules of their own this process keeps compiled.
const COMPILED_KEPT: usize = 4;

/// The detector of `policy`: the built-in one, or one this process compiled for it already
/// (a write compiles a policy with rules of its own once, not at every write).
fn compiled(policy: SecretsPolicy) -> Result<Arc<Detector>> {
    let built_in = SecretsPolicy {
        enabled: policy.enabled,
        ..SecretsPolicy::default()
    };
    if policy == built_in {
        return Ok(Detector::builtin());
    }
    static COMPILED: Mutex<Vec<(SecretsPolicy, Arc<Detector>)>> = Mutex::new(Vec::new());
    let mut kept = COMPILED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, d)) = kept.iter().find(|(p, _)| *p == policy) {
        return Ok(d.clone());
    }
    let d = Arc::new(Detector::new(&policy)?);
    if kept.len() == COMPILED_KEPT {
        kept.remove(0);
    }
    kept.push((policy, d.clone()));
    Ok(d)
}

/// What a write does with secrets: replace each finding with its marker before the message is
/// hashed, or (scrubbing off) nothing.
///
/// A process keeps the scrubber of each store it writes ([`Scrubber::current`]) rather than
/// reading the policy before every write; each write transaction compares the policy it was
/// made from with the store's ([`Scrubber::in_write`]), and what was prepared with another is
/// scrubbed again there, so a write never follows an older policy than the one it commits
/// after.
#[derive(Clone, Default)]
pub(crate) struct Scrubber {
    on: Option<Arc<On>>,
    /// The stored policy's bytes this scrubber follows (`None`: the store has none).
    stamp: Option<Arc<[u8]>>,
}

struct On {
    detector: Arc<Detector>,
    key: Key,
}

impl std::fmt::Debug for Scrubber {
    // The key stays out of every debug print.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scrubber")
            .field("on", &self.on.is_some())
            .finish()
    }
}

/// The scrubber this process last saw a store's policy ask for.
#[derive(Default)]
struct Kept {
    last: Mutex<Option<Scrubber>>,
}

impl Kept {
    fn get(&self) -> Option<Scrubber> {
        self.last.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn clear(&self) {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    fn set(&self, scrubber: &Scrubber) {
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(scrubber.clone());
    }
}

impl Scrubber {
    /// The scrubbing the store's policy asks for, read from `snap`.
    pub(crate) fn of(snap: &Snapshot) -> Result<Self> {
        Scrubber::made(snap.setting(SECRETS_SETTING)?, || key(snap))
    }

    /// The scrubber this process keeps for `store`, read from a snapshot the first time. It
    /// may follow an older policy than the store's: the write transaction finds out.
    pub(crate) fn current(store: &Store) -> Result<Self> {
        let kept = store.attached(Kept::default);
        if let Some(s) = kept.get() {
            return Ok(s);
        }
        let s = Scrubber::of(&store.read()?)?;
        kept.set(&s);
        Ok(s)
    }

    /// The scrubber of the policy `w`'s transaction sees (kept for `store`'s next writes when
    /// it is not the one kept already).
    pub(crate) fn in_write(store: &Store, w: &Writer) -> Result<Self> {
        let bytes = w.setting(SECRETS_SETTING)?;
        let kept = store.attached(Kept::default);
        if let Some(s) = kept.get()
            && s.stamp.as_deref() == bytes.as_deref()
        {
            return Ok(s);
        }
        let s = Scrubber::made(bytes, || key_in(w))?;
        kept.set(&s);
        Ok(s)
    }

    /// Whether this scrubber follows the same stored policy as `other`.
    pub(crate) fn same(&self, other: &Scrubber) -> bool {
        self.stamp == other.stamp
    }

    /// The scrubber of the stored policy `bytes`, its key from `key` when it scrubs.
    fn made(bytes: Option<Vec<u8>>, key: impl FnOnce() -> Result<Option<Key>>) -> Result<Self> {
        let stamp: Option<Arc<[u8]>> = bytes.map(Arc::from);
        let policy: Option<SecretsPolicy> = match &stamp {
            None => None,
            Some(b) => Some(parsed(b)?),
        };
        let on = match policy {
            Some(policy) if policy.enabled => {
                let key = key()?.ok_or_else(|| {
                    Error::corrupt("the store scrubs secrets but has no fingerprint key")
                })?;
                Some(Arc::new(On {
                    detector: compiled(policy)?,
                    key,
                }))
            }
            _ => None,
        };
        Ok(Scrubber { on, stamp })
    }

    /// `message` with each finding replaced by its marker and what was scrubbed listed in its
    /// metadata; the message unchanged when nothing was found (or scrubbing is off).
    pub fn apply(&self, message: Message) -> Message {
        self.scrubbed(&message).unwrap_or(message)
    }

    /// `message` scrubbed, or `None` when nothing was found in it (or scrubbing is off).
    pub(crate) fn scrubbed(&self, message: &Message) -> Option<Message> {
        let on = self.on.as_ref()?;
        scrub::scrub(&on.detector, &on.key, message).map(|(m, _)| m)
    }

    /// A transcript record's carrier (its data JSON) with each finding inside its strings
    /// replaced by its marker and listed, or `None` when nothing was found (or scrubbing is
    /// off).
    pub(crate) fn scrubbed_record(&self, carrier: &Message) -> Option<Message> {
        let on = self.on.as_ref()?;
        scrub::scrub_record(&on.detector, &on.key, carrier).map(|(m, _)| m)
    }

    /// The detector, when scrubbing is on.
    pub(crate) fn detector(&self) -> Option<&Arc<Detector>> {
        self.on.as_ref().map(|on| &on.detector)
    }
}
