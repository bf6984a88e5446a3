//! A store file's bytes, damaged in any way: opening and reading never panics, hangs or
//! allocates without bound; damage is an error.
//!
//! tract-core turns a panic of the storage engine while opening into `Error::Corrupt` (it
//! catches the unwind), so the panic hook here only remembers the message and an unresolved
//! backtrace instead of aborting; a panic that escapes the library is reported as a crash with
//! both. The backtrace is resolved only then: resolving it reads the binary's debug info,
//! which took over the timeout for some of the many panics the library catches.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::backtrace::Backtrace;
use std::cell::RefCell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;
use tract_core::{Bind, LogQuery, Role, SearchQuery, Store, StoreOptions, Tract};

thread_local! {
    static LAST_PANIC: RefCell<Option<(String, Backtrace)>> = const { RefCell::new(None) };
}

fn remember_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        panic::set_hook(Box::new(|info| {
            let trace = Backtrace::capture();
            LAST_PANIC.with(|p| *p.borrow_mut() = Some((info.to_string(), trace)));
        }));
    });
}

fn exercise(data: &[u8]) {
    let Ok(store) = Store::from_bytes(data, StoreOptions::default()) else {
        return;
    };
    let Ok(tract) = Tract::from_store(store, &Bind::HeadAtOpen) else {
        return;
    };
    if let Ok(compiled) = tract.compile() {
        let _ = compiled.to_openai();
        let _ = compiled.to_anthropic();
    }
    let _ = tract.log(&LogQuery {
        limit: Some(50),
        ..LogQuery::default()
    });
    let _ = tract.branches();
    let _ = tract.status();
    let _ = tract.find_tool_turns(None);
    let _ = tract.search(&SearchQuery {
        query: "e".into(),
        history: true,
        limit: Some(20),
        ..SearchQuery::default()
    });
    let _ = tract.search(&SearchQuery {
        query: "a".into(),
        role: Some(Role::Tool),
        limit: Some(20),
        ..SearchQuery::default()
    });
    let _ = tract.log(&LogQuery {
        limit: Some(50),
        graph: true,
        ..LogQuery::default()
    });
}

fuzz_target!(|data: &[u8]| {
    remember_panics();
    if panic::catch_unwind(AssertUnwindSafe(|| exercise(data))).is_err() {
        LAST_PANIC.with(|p| match &*p.borrow() {
            Some((message, trace)) => eprintln!("panic escaped tract-core: {message}\n{trace}"),
            None => eprintln!("panic escaped tract-core"),
        });
        std::process::abort();
    }
});
