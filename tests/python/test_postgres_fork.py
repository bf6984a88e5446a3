"""A process that forks after opening a PostgreSQL store: the child never shares its parent's
connections (a use of the parent's handle is a clear error) and a store opened again in the
child works, while the parent's handle goes on working."""

import os

import pytest

import tract
from conftest import fresh_schema_url, postgres_url

pytestmark = pytest.mark.skipif(
    postgres_url() is None, reason="no PostgreSQL server (scripts/test.sh starts one)"
)


def test_a_forked_child_opens_the_store_again_and_never_uses_the_parents_connections() -> None:
    url = fresh_schema_url()
    parent = tract.Tract.open(url, branch="parent")
    parent.user("before the fork")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report through the pipe, never raise past here
        os.close(read)
        verdict = "ok"
        try:
            try:
                parent.user("from the child, on the parent's handle")
                verdict = "the parent's handle wrote from the child"
            except tract.DatabaseError as e:
                if "forked" not in str(e):
                    verdict = f"unclear error: {e}"
            with tract.Tract.open(url, branch="child") as child:
                child.user("from the child")
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            verdict = f"{type(e).__name__}: {e}"
        os.write(write, verdict.encode())
        os._exit(0)
    os.close(write)
    verdict = b""
    while chunk := os.read(read, 4096):
        verdict += chunk
    os.close(read)
    os.waitpid(pid, 0)
    assert verdict.decode() == "ok"
    parent.user("after the fork")
    with tract.Tract.open(url, branch="child") as child:
        assert [c.content for c in reversed(child.log())] == ["from the child"]
    assert [c.content for c in reversed(parent.log())] == ["before the fork", "after the fork"]
    parent.close()
