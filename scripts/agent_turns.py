"""The items of one OpenAI Agents SDK turn, as the SDK stores them, for the benchmarks beside
``SQLiteSession`` (``bench-appends.py``, ``bench-integrations.py``): a user message, a
``function_call``, its ``function_call_output`` and an assistant message."""

import json


def turn(k: int, output: str) -> list[dict]:
    """Turn ``k``: a question about setting ``k``, a grep for it that returned ``output``, and
    the answer. Ids and text carry ``k``, so no two turns repeat each other."""
    return [
        {"role": "user", "content": f"question {k}: where is setting {k} read?"},
        {
            "type": "function_call",
            "id": f"fc_{k}",
            "call_id": f"call_{k}",
            "name": "grep",
            "arguments": json.dumps({"pattern": f"SETTING_{k}"}),
            "status": "completed",
        },
        {"type": "function_call_output", "call_id": f"call_{k}", "output": output},
        {
            "type": "message",
            "id": f"msg_{k}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": f"Setting {k} is read in src/config_{k}.py.", "annotations": []}],
        },
    ]
