//! Group commit: writes from many threads that arrive while one transaction is being made
//! durable join the next one, so one fsync serves them all.
//!
//! The first writer to arrive leads: it takes every queued job, runs them in order inside one
//! write transaction, commits, and hands the results back. Writers that arrived meanwhile wait;
//! when the leader is done, the oldest of them leads the next group. Each call still returns only
//! once its own writes are durable. A job refused before it wrote anything (a compare-and-swap
//! that failed) fails alone; a failure of the transaction itself fails every job of the group.

use crate::error::{Error, Result};
use crate::storage::backend::WriteScope;
use std::any::Any;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// Why a job did not succeed.
#[derive(Debug)]
pub(crate) enum JobError {
    /// Refused before writing anything: only this job fails.
    Refused(Error),
    /// Failed part way: the whole transaction is abandoned.
    Fatal(Error),
}

type Output = Box<dyn Any + Send>;
type Job<W> = Box<dyn FnOnce(&mut W) -> Result<Output, JobError> + Send>;

/// Where one waiting writer learns its outcome, or that it leads the next group. Each writer
/// waits on its own slot, so finishing a group wakes only the writers it concerns.
#[derive(Default)]
struct Slot {
    state: Mutex<SlotState>,
    wake: Condvar,
}

#[derive(Default)]
struct SlotState {
    outcome: Option<Result<Output>>,
    lead: bool,
}

impl Slot {
    fn lock(&self) -> MutexGuard<'_, SlotState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn finish(&self, outcome: Result<Output>) {
        self.lock().outcome = Some(outcome);
        self.wake.notify_one();
    }

    fn lead(&self) {
        self.lock().lead = true;
        self.wake.notify_one();
    }
}

/// A queued job: where its outcome goes, what it may move, and the job.
type Queued<W> = (Arc<Slot>, WriteScope, Job<W>);

struct State<W> {
    queue: VecDeque<Queued<W>>,
    /// Whether a group is being written (or handed to its next leader) now.
    running: bool,
}

/// The queue of one store's writes in this process. `W` is the write transaction.
pub(crate) struct GroupCommit<W> {
    state: Mutex<State<W>>,
}

impl<W> Default for GroupCommit<W> {
    fn default() -> Self {
        GroupCommit {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                running: false,
            }),
        }
    }
}

impl<W> std::fmt::Debug for GroupCommit<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit").finish_non_exhaustive()
    }
}

impl<W> GroupCommit<W> {
    fn lock(&self) -> MutexGuard<'_, State<W>> {
        // Jobs run outside the lock, so a poisoned lock only means a panic between two
        // bookkeeping steps; the state is still consistent.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `job` in a write transaction shared with the jobs queued beside it: `begin` starts
    /// the transaction for what the group may move (every job's `scope`), `commit` makes it
    /// durable. Returns when this job's writes are durable.
    pub(crate) fn submit<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut W) -> Result<T, JobError> + Send + 'static,
        scope: WriteScope,
        begin: &dyn Fn(&WriteScope) -> Result<W>,
        commit: &dyn Fn(W) -> Result<()>,
    ) -> Result<T> {
        let job: Job<W> = Box::new(move |w| job(w).map(|t| Box::new(t) as Output));
        let slot = Arc::new(Slot::default());
        let leads_now = {
            let mut st = self.lock();
            st.queue.push_back((Arc::clone(&slot), scope, job));
            !std::mem::replace(&mut st.running, true)
        };
        let mut leads = leads_now;
        loop {
            if leads {
                self.lead(begin, commit);
            }
            let mut s = slot.lock();
            loop {
                if let Some(outcome) = s.outcome.take() {
                    return outcome.and_then(|b| {
                        b.downcast::<T>().map(|t| *t).map_err(|_| {
                            Error::invalid_op("a grouped write returned the wrong type")
                        })
                    });
                }
                if std::mem::take(&mut s.lead) {
                    leads = true;
                    break;
                }
                s = slot.wake.wait(s).unwrap_or_else(|e| e.into_inner());
            }
        }
    }

    /// Writes every queued job as one group, hands out the outcomes, and passes the lead to
    /// the oldest writer that queued meanwhile (or marks the queue idle).
    fn lead(&self, begin: &dyn Fn(&WriteScope) -> Result<W>, commit: &dyn Fn(W) -> Result<()>) {
        let batch: Vec<Queued<W>> = self.lock().queue.drain(..).collect();
        let scope = WriteScope::union(batch.iter().map(|(_, s, _)| s));
        let (slots, jobs): (Vec<_>, Vec<_>) = batch.into_iter().map(|(s, _, j)| (s, j)).unzip();
        for (slot, outcome) in slots.iter().zip(run(jobs, &|| begin(&scope), commit)) {
            slot.finish(outcome);
        }
        let mut st = self.lock();
        match st.queue.front() {
            Some((next, _, _)) => next.lead(),
            None => st.running = false,
        }
    }
}

/// Runs a group in one transaction; every job gets its outcome, in order.
fn run<W>(
    jobs: Vec<Job<W>>,
    begin: &dyn Fn() -> Result<W>,
    commit: &dyn Fn(W) -> Result<()>,
) -> Vec<Result<Output>> {
    let n = jobs.len();
    let all_fail = |e: Error| (0..n).map(|_| Err(e.clone())).collect();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut w = begin()?;
        let mut out = Vec::with_capacity(n);
        for job in jobs {
            match job(&mut w) {
                Ok(v) => out.push(Ok(v)),
                Err(JobError::Refused(e)) => out.push(Err(e)),
                // Dropping the transaction uncommitted undoes every job of the group.
                Err(JobError::Fatal(e)) => return Err(e),
            }
        }
        commit(w)?;
        Ok(out)
    }));
    match outcome {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => all_fail(e),
        Err(_) => all_fail(Error::invalid_op(
            "a write panicked; its group was not committed",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A "transaction" that collects values; commits count, and can be told to fail.
    #[derive(Default)]
    struct Fake {
        commits: AtomicUsize,
        log: Mutex<Vec<u32>>,
    }

    #[test]
    fn concurrent_jobs_share_commits_and_each_gets_its_own_outcome() {
        let group = Arc::new(GroupCommit::<Vec<u32>>::default());
        let fake = Arc::new(Fake::default());
        let threads: Vec<_> = (0..16u32)
            .map(|t| {
                let (group, fake) = (Arc::clone(&group), Arc::clone(&fake));
                std::thread::spawn(move || {
                    for i in 0..50u32 {
                        let v = t * 1000 + i;
                        let begin = |_: &WriteScope| Ok(Vec::new());
                        let commit = |w: Vec<u32>| {
                            std::thread::sleep(std::time::Duration::from_micros(200));
                            fake.commits.fetch_add(1, Ordering::SeqCst);
                            fake.log.lock().unwrap().extend(w);
                            Ok(())
                        };
                        let job = move |w: &mut Vec<u32>| {
                            if v % 7 == 3 {
                                return Err(JobError::Refused(Error::invalid_op("refused")));
                            }
                            w.push(v);
                            Ok(v * 2)
                        };
                        match group.submit(job, WriteScope::Store, &begin, &commit) {
                            Ok(doubled) => assert_eq!(doubled, v * 2),
                            Err(_) => assert_eq!(v % 7, 3),
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let log = fake.log.lock().unwrap();
        let expected = (0..16u32)
            .flat_map(|t| (0..50u32).map(move |i| t * 1000 + i))
            .filter(|v| v % 7 != 3)
            .count();
        assert_eq!(
            log.len(),
            expected,
            "every accepted job written exactly once"
        );
        let commits = fake.commits.load(Ordering::SeqCst);
        assert!(commits < expected, "{commits} commits for {expected} jobs");
    }

    #[test]
    fn a_failed_commit_fails_every_job_of_the_group() {
        let group = GroupCommit::<()>::default();
        let begin = |_: &WriteScope| Ok(());
        let commit = |_: ()| Err(Error::corrupt("disk gone"));
        let out = group.submit(|_| Ok(1), WriteScope::Store, &begin, &commit);
        assert!(matches!(out, Err(Error::Corrupt { .. })));
        // The queue is usable again afterwards.
        let ok = group.submit(|_| Ok(2), WriteScope::Store, &begin, &|_| Ok(()));
        assert_eq!(ok.unwrap(), 2);
        let fatal = group.submit(
            |_| Err::<u8, _>(JobError::Fatal(Error::corrupt("half written"))),
            WriteScope::Store,
            &begin,
            &|_| Ok(()),
        );
        assert!(fatal.is_err());
        let panicked = group.submit(
            |_| -> Result<u8, JobError> { panic!("bug") },
            WriteScope::Store,
            &begin,
            &|_| Ok(()),
        );
        assert!(panicked.is_err());
        assert_eq!(
            group
                .submit(|_| Ok(3), WriteScope::Store, &begin, &|_| Ok(()))
                .unwrap(),
            3
        );
    }
}
