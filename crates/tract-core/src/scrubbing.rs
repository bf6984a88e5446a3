//! The store's secrets policy and fingerprint key as the store keeps them, and the scrubber a
//! write applies: read once per write, before the write lock, from the same snapshot every
//! process reads, so every process and surface scrubs by the same rules.

use crate::error::{Error, Result};
use crate::object::Message;
use crate::secrets::detect::Detector;
use crate::secrets::policy::SecretsPolicy;
use crate::secrets::scrub::{self, Key, Scrub};
use crate::storage::store::meta::{META_SECRETS_KEY, SECRETS_SETTING};
use crate::storage::store::{Snapshot, Store};
use std::sync::{Arc, Mutex};

/// The store's policy: `None` for a store an older build made, which has none (it scrubs
/// nothing until `tract upgrade` or `config secrets` gives it one).
pub(crate) fn load(snap: &Snapshot) -> Result<Option<SecretsPolicy>> {
    match snap.setting(SECRETS_SETTING)? {
        None => Ok(None),
        Some(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::corrupt(format!("the stored secrets policy: {e}"))),
    }
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
    w.commit()
}

/// The store's fingerprint key, if it has one.
pub(crate) fn key(snap: &Snapshot) -> Result<Option<Key>> {
    match snap.meta(META_SECRETS_KEY)? {
        None => Ok(None),
        Some(bytes) => Key::try_from(bytes.as_slice())
            .map(Some)
            .map_err(|_| Error::corrupt("the store's secrets key is not 32 bytes")),
    }
}

/// The detector a scan of what is stored uses: the store's rules, whether or not it scrubs as
/// it writes (the built-in rules for a store with no policy).
pub(crate) fn scan_detector(store: &Store, snap: &Snapshot) -> Result<Arc<Detector>> {
    match load(snap)? {
        Some(policy) => compiled(store, policy),
        None => Ok(Detector::builtin()),
    }
}

/// The detector of `policy`: the built-in one, or the one this process compiled last for it.
fn compiled(store: &Store, policy: SecretsPolicy) -> Result<Arc<Detector>> {
    let built_in = SecretsPolicy {
        enabled: policy.enabled,
        ..SecretsPolicy::default()
    };
    if policy == built_in {
        return Ok(Detector::builtin());
    }
    let compiled = store.attached(Compiled::default);
    let mut last = compiled.last.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((p, d)) = &*last
        && *p == policy
    {
        return Ok(d.clone());
    }
    let d = Arc::new(Detector::new(&policy)?);
    *last = Some((policy, d.clone()));
    Ok(d)
}

/// What a write does with secrets: replace each finding with its marker before the message is
/// hashed, or (scrubbing off, or content already in the store) nothing.
#[derive(Clone, Default)]
pub(crate) struct Scrubber {
    on: Option<Arc<On>>,
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

/// The detector compiled for the policy a process last read from a store: a write compiles a
/// policy with rules of its own once, not at every write.
#[derive(Default)]
struct Compiled {
    last: Mutex<Option<(SecretsPolicy, Arc<Detector>)>>,
}

impl Scrubber {
    /// Scrubs nothing: scrubbing is off, or what is written is already in the store.
    pub(crate) fn off() -> Self {
        Scrubber::default()
    }

    /// The scrubbing the store's policy asks for, read from `snap`.
    pub(crate) fn of(store: &Store, snap: &Snapshot) -> Result<Self> {
        let Some(policy) = load(snap)? else {
            return Ok(Scrubber::off());
        };
        if !policy.enabled {
            return Ok(Scrubber::off());
        }
        let key = key(snap)?
            .ok_or_else(|| Error::corrupt("the store scrubs secrets but has no fingerprint key"))?;
        let detector = compiled(store, policy)?;
        Ok(Scrubber {
            on: Some(Arc::new(On { detector, key })),
        })
    }

    /// `message` with each finding replaced by its marker and what was scrubbed listed in its
    /// metadata; the message unchanged when nothing was found (or scrubbing is off).
    pub fn apply(&self, message: Message) -> (Message, Vec<Scrub>) {
        match &self.on {
            Some(on) => match scrub::scrub(&on.detector, &on.key, &message) {
                Some((m, scrubs)) => (m, scrubs),
                None => (message, Vec::new()),
            },
            None => (message, Vec::new()),
        }
    }

    /// A transcript record's carrier (its data JSON) with each finding inside its strings
    /// replaced by its marker and listed; unchanged when nothing was found (or scrubbing is off).
    pub(crate) fn apply_record(&self, carrier: Message) -> (Message, Vec<Scrub>) {
        match &self.on {
            Some(on) => match scrub::scrub_record(&on.detector, &on.key, &carrier) {
                Some((m, scrubs)) => (m, scrubs),
                None => (carrier, Vec::new()),
            },
            None => (carrier, Vec::new()),
        }
    }

    /// The detector, when scrubbing is on.
    pub(crate) fn detector(&self) -> Option<&Arc<Detector>> {
        self.on.as_ref().map(|on| &on.detector)
    }
}
