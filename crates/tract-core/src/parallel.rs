//! Work split across the machine's cores: many independent items (records to decode, blobs
//! to read), each part on a scoped thread, the caller's thread doing one part itself.

use crate::error::{Error, Result};

/// The most threads one call uses.
const MAX_THREADS: usize = 8;

/// `f` of each of `items`, in order: split across the machine's cores when there are at least
/// `min` of them, on the caller's thread otherwise (threads cost more than a few items save).
/// The first error in order is returned.
pub(crate) fn map<T: Send, R: Send>(
    items: Vec<T>,
    min: usize,
    f: impl Fn(T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let threads = cores().min(MAX_THREADS);
    if threads < 2 || items.len() < min.max(2) {
        return items.into_iter().map(f).collect();
    }
    let size = items.len().div_ceil(threads);
    let total = items.len();
    let mut rest = items.into_iter();
    let mut parts: Vec<Vec<T>> = (0..threads)
        .map(|_| rest.by_ref().take(size).collect())
        .filter(|p: &Vec<T>| !p.is_empty())
        .collect();
    let own = parts.remove(0);
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = parts
            .into_iter()
            .map(|part| scope.spawn(move || part.into_iter().map(f).collect::<Result<Vec<R>>>()))
            .collect();
        let mut out = Vec::with_capacity(total);
        out.extend(own.into_iter().map(f).collect::<Result<Vec<R>>>()?);
        for h in handles {
            let part = h
                .join()
                .map_err(|_| Error::corrupt("a record could not be decoded"))??;
            out.extend(part);
        }
        Ok(out)
    })
}

/// The cores this process may use, asked once: the standard library reads the cgroup's
/// quota files each time it is asked (a dozen system calls), and a cold read asks several
/// times.
pub(crate) fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Lowers the calling thread's priority (nice 10), for a thread that works beside the appends
/// (the one that folds and merges, the search index's, the token splitter's builder): on a
/// machine with few cores it competes with the appending threads, and a thread leading a
/// group commit that a fold's compression preempts for a time slice holds up every append of
/// its group (docs/performance.md, "The folding thread yields to appends"). A niced thread
/// still runs whenever the appends leave a core free, and a fold that falls behind folds
/// more segments at once. Linux only: elsewhere `setpriority` names a whole process.
pub(crate) fn yield_to_appends() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid and setpriority read no memory of ours; a failure leaves the priority.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 10);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_back_in_order_split_or_not() {
        for (n, min) in [(0, 1), (1, 1), (7, 100), (1000, 10), (1001, 2)] {
            let items: Vec<u64> = (0..n).collect();
            let out = map(items, min, |i| Ok(i * 3)).unwrap();
            assert_eq!(out, (0..n).map(|i| i * 3).collect::<Vec<_>>(), "{n} items");
        }
    }

    #[test]
    fn the_first_error_in_order_is_returned() {
        let out = map((0..1000u32).collect(), 10, |i| match i {
            700 => Err(Error::corrupt("seven hundred")),
            900 => Err(Error::corrupt("nine hundred")),
            _ => Ok(i),
        });
        let e = out.unwrap_err().to_string();
        assert!(e.contains("seven hundred"), "{e}");
    }
}
