#!/usr/bin/env python3
"""Reading a conversation thread back from PostgreSQL: tract against LangGraph's PostgresSaver.

A thread of N turns (a user message and an answer of about 200 tokens, different each turn) is
written to the same PostgreSQL server as each store's users write it:

- LangGraph: a compiled ``StateGraph`` over ``MessagesState`` with ``PostgresSaver`` as its
  checkpointer, one ``graph.invoke`` per turn whose single node returns the answer; a thread
  per (N, run).
- tract: ``t.user(text)`` then ``t.assistant(answer)`` through the Python API, in a schema of
  its own per (N, run) (``?schema=NAME`` on the URL).

Then each is read in a fresh process, after it has connected (LangGraph:
``PostgresSaver.from_conn_string``; tract: ``Tract.open``, timed as its own column):
``saver.get_tuple(config)`` against ``t.compile().messages`` (the messages as the model sees
them; ``compile()`` alone is reported too), each checked to hold 2N messages; the server's
cache is warm for both, as it is for a thread just written. With ``--reads K`` each thread is
read K times (in turns, each time in a fresh process) and the median of each figure kept. Also
reported: the time to write
the N turns, and the bytes each store holds for the thread (the sum of ``pg_column_size`` over
its rows: LangGraph's checkpoint tables for the thread, every table of tract's schema).

Prints JSON on stdout (medians of ``--runs`` runs, in milliseconds, and the ratio
LangGraph / tract) and a markdown table on stderr. The threads and schemas it made are removed.

    python scripts/bench-langgraph-postgres.py [--turns 50,100,500] [--runs 5] [--reads 1] [--url URL]

Needs the tract wheel and ``langgraph-checkpoint-postgres``, ``psycopg[binary]``; the URL
defaults to ``$TRACT_TEST_POSTGRES`` (``scripts/postgres.sh start DIR`` starts a server).
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

SUBJECTS = [
    "the retry loop", "the connection pool", "your migration script", "the cache layer",
    "the billing worker", "the search index", "the upload handler", "the session store",
    "the nightly export", "the rate limiter", "the config loader", "the webhook consumer",
    "the report generator", "the auth middleware", "the queue consumer", "the scheduler",
]
VERBS = [
    "reads", "rewrites", "skips", "retries", "caches", "validates", "drops", "batches",
    "serializes", "locks", "forwards", "logs", "compresses", "re-orders", "deduplicates",
]
OBJECTS = [
    "every pending row", "the stale entries", "the request headers", "the last checkpoint",
    "each failed job", "the user's settings", "the whole payload", "the partial results",
    "the expired tokens", "the oldest segment", "the incoming events", "the error counts",
]
WHEN = [
    "before the transaction commits", "after the first timeout", "whenever the lock is free",
    "once per deployment", "on every cold start", "while the worker drains its queue",
    "only when the flag is on", "at the end of each batch", "as soon as the socket closes",
    "during the weekly backfill", "under heavy load", "when the disk is nearly full",
]
OPENERS = [
    "In practice,", "As it stands,", "Looking at the trace,", "From the logs,",
    "In this version,", "After the last change,", "On the staging cluster,", "Most of the time,",
]
ADVICE = [
    "I would move that call out of the hot path and measure again.",
    "A small test that reproduces it would make the fix much safer.",
    "Adding a timeout there keeps one slow peer from stalling everything.",
    "It is worth logging the key as well, so the next failure is easier to trace.",
    "Splitting the function in two would make the failure mode obvious.",
    "Keeping the old behaviour behind a flag lets you roll back without a deploy.",
    "The simplest fix is to make the operation idempotent and retry it.",
    "Check the metrics for the last week before changing the limit.",
]
QUESTIONS = [
    "I see that {s} {v} {o} {w}. Why?",
    "Is it safe that {s} {v} {o} {w}?",
    "What happens if {s} {v} {o} {w}, and how do I test it?",
    "Can you explain why {s} {v} {o} {w} in step {k}?",
    "Who decided that {s} {v} {o} {w}?",
]


def user_text(k: int) -> str:
    r = random.Random(2 * k)
    q = r.choice(QUESTIONS).format(s=r.choice(SUBJECTS), v=r.choice(VERBS), o=r.choice(OBJECTS), w=r.choice(WHEN), k=k)
    return f"{q[0].upper()}{q[1:]} This is on ticket {1000 + k}; the failure started after release {k % 17}.{k % 5}."


def answer_text(k: int) -> str:
    # About 800 characters (about 200 tokens) of sentences drawn with a fixed seed per turn.
    r = random.Random(2 * k + 1)
    parts = [f"Here is what I found for ticket {1000 + k}."]
    while sum(len(p) + 1 for p in parts) < 800:
        if r.random() < 0.25:
            parts.append(r.choice(ADVICE))
        else:
            parts.append(f"{r.choice(OPENERS)} {r.choice(SUBJECTS)} {r.choice(VERBS)} {r.choice(OBJECTS)} {r.choice(WHEN)}.")
    return " ".join(parts)


def with_schema(url: str, schema: str) -> str:
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "schema"] + [("schema", schema)]
    return urlunsplit(parts._replace(query=urlencode(query)))


def config(thread: str) -> dict:
    return {"configurable": {"thread_id": thread}}


def ms(start: float) -> float:
    return (time.perf_counter() - start) * 1000


# ---- reading, in a child process -------------------------------------------------------------


def read_langgraph(url: str, thread: str, turns: int) -> dict:
    from langgraph.checkpoint.postgres import PostgresSaver

    start = time.perf_counter()
    with PostgresSaver.from_conn_string(url) as saver:
        connect = ms(start)
        start = time.perf_counter()
        got = saver.get_tuple(config(thread))
        read = ms(start)
        assert got is not None and len(got.checkpoint["channel_values"]["messages"]) == 2 * turns
        start = time.perf_counter()
        saver.get_tuple(config(thread))
        warm = ms(start)
    return {"connect_ms": connect, "read_ms": read, "read_warm_ms": warm}


def read_tract(url: str, thread: str, turns: int) -> dict:
    import tract

    start = time.perf_counter()
    t = tract.Tract.open(url, branch=thread)
    opened = ms(start)
    start = time.perf_counter()
    compiled = t.compile()
    compile_ = ms(start)
    # A compile holds what each message is; its text is read from the store when first rendered.
    messages = compiled.messages
    read = ms(start)
    assert len(messages) == 2 * turns, len(messages)
    start = time.perf_counter()
    t.compile().messages
    warm = ms(start)
    tokens = compiled.token_count
    t.close()
    return {"open_ms": opened, "compile_ms": compile_, "read_ms": read, "read_warm_ms": warm, "tokens": tokens}


def read_in_child(which: str, url: str, thread: str, turns: int) -> dict:
    # A fresh interpreter: no pool, connection, cache or imported state of the parent's is there.
    out = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--read", which, "--url", url, "--thread", thread, "--turns", str(turns)],
        capture_output=True, text=True,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{which} read failed:\n{out.stderr}")
    return json.loads(out.stdout)


# ---- writing, in this process ----------------------------------------------------------------


def write_langgraph(saver, thread: str, turns: int) -> float:
    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import END, START, MessagesState, StateGraph

    def answer(state: MessagesState) -> dict:
        k = len(state["messages"]) // 2
        return {"messages": [AIMessage(content=answer_text(k), id=f"a{k}")]}

    builder = StateGraph(MessagesState)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    graph = builder.compile(checkpointer=saver)
    start = time.perf_counter()
    for k in range(turns):
        graph.invoke({"messages": [HumanMessage(content=user_text(k), id=f"u{k}")]}, config(thread))
    return ms(start)


def write_tract(url: str, thread: str, turns: int) -> float:
    import tract

    start = time.perf_counter()
    with tract.Tract.open(url, branch=thread) as t:
        for k in range(turns):
            t.user(user_text(k))
            t.assistant(answer_text(k))
    return ms(start)


def stored_bytes(conn, schema: str, tables: list, thread=None) -> int:
    # pg_column_size of each column, not of the row: a whole-row value would be detoasted first.
    from psycopg import sql

    total = 0
    for table in tables:
        cols = [r[0] for r in conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s",
            (schema, table),
        )]
        size = sql.SQL(" + ").join(sql.SQL("coalesce(pg_column_size({}), 0)").format(sql.Identifier(c)) for c in cols)
        query = sql.SQL("SELECT coalesce(sum({}), 0) FROM {}").format(size, sql.Identifier(schema, table))
        if thread is None:
            total += conn.execute(query).fetchone()[0]
        else:
            total += conn.execute(query + sql.SQL(" WHERE thread_id = %s"), (thread,)).fetchone()[0]
    return int(total)


def one(saver, admin, url: str, prefix: str, turns: int, run: int, reads: int) -> dict:
    thread = f"{prefix}_n{turns}_r{run}"
    tract_url = with_schema(url, thread)
    lg_write = write_langgraph(saver, thread, turns)
    tr_write = write_tract(tract_url, thread, turns)
    lg_bytes = stored_bytes(admin, "public", ["checkpoints", "checkpoint_blobs", "checkpoint_writes"], thread)
    tr_tables = [r[0] for r in admin.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (thread,))]
    tr_bytes = stored_bytes(admin, thread, tr_tables)
    # Alternate which store is read first, so neither always reads after the other; each is
    # read `reads` times, in turns, and the median of each figure kept (a noisy machine moves
    # one read by more than the difference measured).
    order = ["langgraph", "tract"] if run % 2 == 0 else ["tract", "langgraph"]
    samples: dict = {w: [] for w in order}
    for _ in range(reads):
        for w in order:
            samples[w].append(read_in_child(w, url if w == "langgraph" else tract_url, thread, turns))
    reads = {w: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for w, rs in samples.items()}
    saver.delete_thread(thread)
    admin.execute(f'DROP SCHEMA "{thread}" CASCADE')
    return {
        "langgraph": {**reads["langgraph"], "write_ms": lg_write, "bytes": lg_bytes},
        "tract": {**reads["tract"], "write_ms": tr_write, "bytes": tr_bytes},
    }


def medians(runs: list, turns: int) -> dict:
    part = {}
    for name in ("langgraph", "tract"):
        part[name] = {k: round(statistics.median(r[name][k] for r in runs), 2) for k in runs[0][name]}
    lg, tr = part["langgraph"], part["tract"]
    # tract's count of the whole request, so the ~200-token answers can be checked.
    tr["tokens_per_turn"] = round(tr.pop("tokens") / turns, 1)
    part["ratio_langgraph_to_tract"] = {
        "read": round(lg["read_ms"] / tr["read_ms"], 2),
        "read_warm": round(lg["read_warm_ms"] / tr["read_warm_ms"], 2),
        "connect_plus_read": round((lg["connect_ms"] + lg["read_ms"]) / (tr["open_ms"] + tr["read_ms"]), 2),
        "write": round(lg["write_ms"] / tr["write_ms"], 2),
        "bytes": round(lg["bytes"] / tr["bytes"], 2),
    }
    return part


def table(result: dict) -> str:
    rows = [
        "| turns | LangGraph read | tract read | ratio | LangGraph connect | tract open | tract compile() | LangGraph bytes | tract bytes |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for n, part in result["turns"].items():
        lg, tr = part["langgraph"], part["tract"]
        rows.append(
            f"| {n} | {lg['read_ms']:.2f} ms | {tr['read_ms']:.2f} ms | {part['ratio_langgraph_to_tract']['read']:.2f} "
            f"| {lg['connect_ms']:.2f} ms | {tr['open_ms']:.2f} ms | {tr['compile_ms']:.2f} ms "
            f"| {lg['bytes'] / 1e6:.2f} MB | {tr['bytes'] / 1e6:.2f} MB |"
        )
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", default="50,100,500")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--reads", type=int, default=1, help="fresh-process reads of each thread per run (their median)")
    parser.add_argument("--url", default=os.environ.get("TRACT_TEST_POSTGRES"))
    parser.add_argument("--read", choices=["langgraph", "tract"], help=argparse.SUPPRESS)
    parser.add_argument("--thread", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if not args.url:
        parser.error("no PostgreSQL URL: pass --url or set TRACT_TEST_POSTGRES")
    if args.read:
        reader = read_langgraph if args.read == "langgraph" else read_tract
        print(json.dumps(reader(args.url, args.thread, int(args.turns))))
        return

    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver

    import tract  # noqa: F401  (fails here, not in a child, when the wheel is missing)

    sizes = [int(n) for n in args.turns.split(",")]
    # Names unique to this invocation: a thread id and a tract schema per (N, run).
    prefix = f"bench_lg_{os.getpid()}"
    runs: dict = {n: [] for n in sizes}
    with PostgresSaver.from_conn_string(args.url) as saver, psycopg.connect(args.url, autocommit=True) as admin:
        saver.setup()
        # Runs outermost, so a noisy minute spreads over every N instead of spoiling one.
        for run in range(args.runs):
            for n in sizes:
                runs[n].append(one(saver, admin, args.url, prefix, n, run, args.reads))
        server = admin.execute("SHOW server_version").fetchone()[0]
    result = {
        "runs": args.runs,
        "reads": args.reads,
        "versions": {**versions(), "postgresql": server},
        "turns": {str(n): medians(runs[n], n) for n in sizes},
    }
    print(json.dumps(result, indent=2))
    print(table(result), file=sys.stderr)


def versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in ("tract-context", "langgraph", "langgraph-checkpoint-postgres", "psycopg", "psycopg-binary"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            pass
    return out


if __name__ == "__main__":
    main()
