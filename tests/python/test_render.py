"""The model input rendered step after step: a handle reuses what it rendered before, and every
call still returns objects of its own, the same as a handle rendering the view for the first
time, through appends, edits, items and another process's redaction."""

import json
import os
import pathlib
import subprocess
import sys
import threading

import tract

ROOT = pathlib.Path(__file__).resolve().parents[2]
TRACT_BIN = pathlib.Path(os.environ.get("TRACT_BIN", ROOT / "target" / "debug" / "tract"))

RENDERS = {
    "openai": lambda c: c.to_openai(),
    "anthropic": lambda c: c.to_anthropic(),
    "responses": lambda c: c.to_responses(),
    "responses_tail": lambda c: c.to_responses(3),
}


def first_time(path: pathlib.Path) -> dict:
    """Each rendering as a new handle (nothing kept) makes it."""
    other = tract.Tract.open(path, branch="main")
    try:
        c = other.compile()
        return {k: json.dumps(r(c)) for k, r in RENDERS.items()}
    finally:
        other.close()


def renders(t: tract.Tract) -> dict:
    c = t.compile()
    return {k: json.dumps(r(c)) for k, r in RENDERS.items()}


def test_a_rendering_kept_across_steps_is_the_rendering_made_afresh(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "s.tract"
    t = tract.Tract.open(path, branch="main")
    steps = [
        lambda: t.system("You are careful."),
        lambda: t.user("find the config"),
        lambda: t.assistant("", tool_calls=[{"id": "g1", "name": "grep", "arguments": {"q": 1}},
                                            {"id": "r1", "name": "read", "arguments": "{}"}]),
        lambda: t.tool_result("r1", "read", "body"),
        lambda: t.system("a second system message\nwith a newline"),
        lambda: t.tool_result("g1", "grep", "config.py:42"),
        lambda: t.assistant("", tool_calls=[{"id": "x1", "name": "bash", "arguments": {}}]),
        # An empty user message, as a framework's items may hold one (a caller's is refused).
        lambda: t.append_items([{"role": "user", "content": ""}]),
        lambda: t.append({"role": "user", "content": [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}),
        lambda: t.append_items([
            {"type": "function_call", "call_id": "i1", "name": "grep", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "i1", "output": "found"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
        ]),
    ]
    for i, step in enumerate(steps):
        made = step()
        assert renders(t) == first_time(path), f"after step {i}"
        if i == 3:
            result = made
    t.edit(result.commit_hash, "body, edited")
    assert renders(t) == first_time(path), "after an edit"
    t.close()


def test_the_openai_rendering_is_the_json_the_cli_writes(tmp_path: pathlib.Path) -> None:
    """Python makes the chat-completions dicts from the messages' fields, not from the JSON the
    core writes: both are the same, key order included, first rendered and kept."""
    path = tmp_path / "s.tract"
    t = tract.Tract.open(path, branch="main")
    t.system("You are careful.")
    t.append({"role": "user", "name": "ada", "content": [
        {"type": "text", "text": "look", "cache_control": {"type": "ephemeral"}},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {"type": "thinking", "thinking": "not a part the chat format takes"}]})
    t.assistant("", tool_calls=[{"id": "g1", "name": "grep", "arguments": {"q": 1}},
                                {"id": "r1", "name": "read", "arguments": "not json"}])
    t.tool_result("g1", "grep", "config.py:42")
    t.tool_result("r1", "read", "denied", is_error=True)
    t.append({"role": "assistant", "name": "helper", "content": "It is in config.py."})
    t.append_items([
        {"type": "function_call", "call_id": "i1", "name": "grep", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "i1", "output": ""},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]},
    ])
    # A call never answered: the rendering sends a result of its own for it.
    t.assistant("and one more", tool_calls=[{"id": "x1", "name": "bash", "arguments": {}}])
    first = t.compile().to_openai()
    kept = t.compile().to_openai()
    run = subprocess.run([str(TRACT_BIN), "--store", str(path), "--branch", "main", "compile", "--format", "openai"],
                         capture_output=True, text=True, env={"PATH": os.environ.get("PATH", "")})
    assert run.returncode == 0, run.stderr
    cli = json.loads(run.stdout)
    assert len(cli) == 11, cli
    assert json.dumps(first) == json.dumps(cli)
    assert json.dumps(kept) == json.dumps(cli)
    t.close()


def test_what_a_call_returns_is_its_own(tmp_path: pathlib.Path) -> None:
    t = tract.Tract.open(tmp_path / "s.tract", branch="main")
    t.system("sys")
    t.user("hi")
    t.assistant("", tool_calls=[{"id": "c1", "name": "grep", "arguments": {"q": "x"}}])
    t.tool_result("c1", "grep", "found")
    t.append_items([{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}])
    before = renders(t)
    c = t.compile()
    oai = c.to_openai()
    oai[2]["tool_calls"][0]["function"]["name"] = "changed"
    oai[2]["tool_calls"].append({"id": "planted"})
    oai[1]["content"] = "changed"
    oai.append({"role": "user", "content": "planted"})
    anth = c.to_anthropic()
    anth["messages"][0]["content"][0]["text"] = "changed"
    anth["messages"][1]["content"][0]["input"]["q"] = "changed"
    anth["system"] = "changed"
    items = c.to_responses()
    items[-1]["content"][0]["text"] = "changed"
    items[-1]["content"].append({"planted": True})
    tail = c.to_responses(1)
    tail[0]["role"] = "changed"
    assert renders(t) == before
    t.close()


REDACT = """
import sys, tract
t = tract.Tract.open(sys.argv[1], branch="main")
t.redact(sys.argv[2], "a key")
t.close()
"""


def test_content_redacted_by_another_process_leaves_the_next_rendering(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "s.tract"
    t = tract.Tract.open(path, branch="main")
    # What scrubbing missed (here: it is off) is what a person redacts.
    t.set_secrets_policy({"enabled": False})
    t.user("cat .env")
    t.assistant("", tool_calls=[{"id": "c1", "name": "cat", "arguments": {}}])
    secret = "AWS_SECRET=AKIA-PLANTED-31337"
    leaked = t.tool_result("c1", "cat", secret)
    t.assistant("noted")
    assert all(secret in r for r in list(renders(t).values())[:3])
    subprocess.run([sys.executable, "-c", REDACT, str(path), leaked.commit_hash], check=True, timeout=60)
    after = renders(t)
    assert not any("AKIA" in r for r in after.values()), after
    assert after == first_time(path)
    t.close()


def test_threads_rendering_one_handle_at_once_each_get_the_whole_rendering(tmp_path: pathlib.Path) -> None:
    t = tract.Tract.open(tmp_path / "s.tract", branch="main")
    t.append_many([{"role": "user", "content": f"message {i} " + "x" * 200} for i in range(2000)])
    expected = renders(t)
    failures: list[str] = []

    def render() -> None:
        for _ in range(5):
            if renders(t) != expected:
                failures.append("a rendering differed")

    threads = [threading.Thread(target=render) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert failures == []
    t.close()


def test_a_first_rendering_of_a_long_view_read_in_batches_is_the_kept_one(tmp_path: pathlib.Path) -> None:
    # A handle's first rendering reads the text a batch of 2,048 messages at a time and keeps
    # nothing; later ones keep pieces. Over several batches, with calls answered after a user
    # message and a call never answered, they render alike.
    path = tmp_path / "s.tract"
    with tract.Tract.open(path, branch="main") as t:
        messages = []
        for k in range(1500):
            messages += [
                {"role": "user", "content": f"question {k}"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": f"c{k}", "name": "grep", "arguments": {"q": k}}]},
                {"role": "user", "content": f"and meanwhile {k}"},
                {"role": "tool", "tool_call_id": f"c{k}", "name": "grep", "content": f"found {k}"},
            ]
        messages.append({"role": "assistant", "content": "", "tool_calls": [
            {"id": "open", "name": "grep", "arguments": {}}]})
        t.append_many(messages)
    for name, render in RENDERS.items():
        with tract.Tract.open(path, branch="main") as t:
            made = [json.dumps(render(t.compile())) for _ in range(3)]
        assert made[0] == made[1] == made[2], name
    assert len(json.loads(made[0])) >= 3  # the last: the Responses tail
