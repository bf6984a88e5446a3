"""Python port of Gemini CLI's session *read* path for resume: the reference side of
test_gemini_reader.py (Gemini CLI ships only on npm, so its rules are its source code).

Ports (google-gemini/gemini-cli @ 5411f113cafae26161b4969b0237b8e1e024e2c2, Apache-2.0):
  packages/core/src/services/chatRecordingService.ts
      hasProperty / isStringProperty / isObjectProperty / is*Record   (L51-101)
      isResumableMessageRecord                                          (L107-125)
      loadConversationRecord, full mode (options undefined)            (L133-400)
      parseLegacyRecordFallback, full mode                             (L1041-1102)
  packages/core/src/utils/partUtils.ts   partToString(verbose)          (L18-82)
  packages/core/src/core/geminiRequest.ts partListUnionToString         (L17-19)
  packages/core/src/utils/sessionUtils.ts
      ensurePartArray (L85-95), isIgnoredUserContent (L97-105),
      convertSessionToClientHistory (L110-228)

It is meant as the reference side of a differential test: feed it one session
file, get back exactly the list of turns (id, role, parts) that
`convertSessionToClientHistory(loadConversationRecord(file).messages)` yields.
JS `undefined` is modelled by the UNDEF sentinel; keys whose value is UNDEF are
dropped on output, exactly like JSON.stringify does.
"""

from __future__ import annotations

import json
import math
import re
import sys
from decimal import ROUND_HALF_UP, Decimal


class _Undef:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNDEF"


UNDEF = _Undef()


class JsTypeError(Exception):
    """Where the TypeScript would throw a TypeError."""


# --------------------------------------------------------------------------
# JS semantics helpers
# --------------------------------------------------------------------------

# String.prototype.trim: WhiteSpace (TAB VT FF SP NBSP ZWNBSP + Zs) and LineTerminators.
_JS_TRIM = (
    "\t\n\x0b\x0c\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
    "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def js_trim(s):
    if not isinstance(s, str):
        raise JsTypeError("x.trim is not a function")
    return s.strip(_JS_TRIM)


def is_obj(v) -> bool:
    """typeof v === 'object' && v !== null  (arrays included)."""
    return isinstance(v, (dict, list))


def js_in(obj, prop) -> bool:
    """`prop in obj` for JSON values (only own data keys matter here)."""
    if isinstance(obj, dict):
        return prop in obj
    if isinstance(obj, list):
        return prop == "length" or (prop.isdigit() and int(prop) < len(obj))
    return False


def js_get(obj, prop):
    """obj[prop] / obj.prop; TypeError on null/undefined like JS."""
    if obj is None or obj is UNDEF:
        raise JsTypeError(f"Cannot read properties of {obj!r} (reading '{prop}')")
    if isinstance(obj, dict):
        return obj.get(prop, UNDEF)
    if isinstance(obj, (list, str)) and prop == "length":
        return len(obj)
    return UNDEF


def js_truthy(v) -> bool:
    if v is UNDEF or v is None or v is False:
        return False
    if isinstance(v, bool):
        return True
    if isinstance(v, (int, float)):
        return not (v == 0 or (isinstance(v, float) and math.isnan(v)))
    if isinstance(v, str):
        return v != ""
    return True  # objects and arrays, even empty


def js_number_str(x) -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, int):
        return str(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == int(x) and abs(x) < 1e21:
        return str(int(x))
    r = repr(x)  # shortest round-trip, like JS; exponent spelling may differ
    return re.sub(r"e([+-])0*(\d)", r"e\1\2", r)


def js_string(v) -> str:
    """String(v) / template-literal interpolation."""
    if v is UNDEF:
        return "undefined"
    if v is None:
        return "null"
    if isinstance(v, str):
        return v
    if isinstance(v, (bool, int, float)):
        return js_number_str(v)
    if isinstance(v, list):
        return ",".join("" if (e is None or e is UNDEF) else js_string(e) for e in v)
    return "[object Object]"


def js_length_gt0(v) -> bool:
    """`v && v.length > 0` for the shapes JSON can produce."""
    if not js_truthy(v):
        return False
    n = js_get(v, "length")
    return isinstance(n, (int, float)) and not isinstance(n, bool) and n > 0


def js_iter(v):
    """for (const x of v): arrays and strings iterate, plain objects throw."""
    if isinstance(v, list):
        return list(v)
    if isinstance(v, str):
        return list(v)  # NB JS iterates code points; same as Python str
    raise JsTypeError("object is not iterable")


# --------------------------------------------------------------------------
# chatRecordingService.ts L51-101: record classification
# --------------------------------------------------------------------------

def has_property(obj, prop) -> bool:
    return is_obj(obj) and js_in(obj, prop)


def is_string_property(obj, prop) -> bool:
    return has_property(obj, prop) and isinstance(js_get(obj, prop), str)


def is_object_property(obj, prop) -> bool:
    return has_property(obj, prop) and is_obj(js_get(obj, prop))


def is_rewind_record(r) -> bool:
    return is_string_property(r, "$rewindTo")


def is_message_record(r) -> bool:
    return is_string_property(r, "id")


def is_metadata_update_record(r) -> bool:
    return is_object_property(r, "$set")


def is_partial_metadata_record(r) -> bool:
    return is_string_property(r, "sessionId") and is_string_property(r, "projectHash")


# --------------------------------------------------------------------------
# partUtils.ts L18-82 (verbose), geminiRequest.ts L17-19
# --------------------------------------------------------------------------

def _js_tofixed1(x: float) -> str:
    # Number.prototype.toFixed(1): nearest, ties -> larger n; x >= 0 here.
    if isinstance(x, float) and math.isnan(x):
        return "NaN"
    return str(Decimal(x).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


def part_to_string(value):
    """Returns a str, or (for a bare part whose .text is not a string) that raw value."""
    if not js_truthy(value):
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        out = []
        for p in value:
            s = part_to_string(p)
            out.append("" if (s is None or s is UNDEF) else js_string(s))
        return "".join(out)
    part = value
    if isinstance(part, dict):
        if js_get(part, "videoMetadata") is not UNDEF:
            return "[Video Metadata]"
        if js_get(part, "thought") is not UNDEF:
            return f"[Thought: {js_string(part['thought'])}]"
        if js_get(part, "codeExecutionResult") is not UNDEF:
            return "[Code Execution Result]"
        if js_get(part, "executableCode") is not UNDEF:
            return "[Executable Code]"
        if js_get(part, "fileData") is not UNDEF:
            return "[File Data]"
        if js_get(part, "functionCall") is not UNDEF:
            return f"[Function Call: {js_string(js_get(part['functionCall'], 'name'))}]"
        if js_get(part, "functionResponse") is not UNDEF:
            return f"[Function Response: {js_string(js_get(part['functionResponse'], 'name'))}]"
        if js_get(part, "inlineData") is not UNDEF:
            inline = part["inlineData"]
            mime = js_get(inline, "mimeType")
            mime = "unknown" if mime is None or mime is UNDEF else mime
            data = js_get(inline, "data")
            data = "" if data is None or data is UNDEF else data
            n = js_get(data, "length") if not isinstance(data, (int, float)) else UNDEF
            kb = "NaN" if not isinstance(n, int) else _js_tofixed1(math.ceil(n * 3 / 4) / 1024)
            if not isinstance(mime, str):
                raise JsTypeError("mimeType.startsWith is not a function")
            cat = ("Audio" if mime.startswith("audio/") else "Video" if mime.startswith("video/")
                   else "Image" if mime.startswith("image/") else "Media")
            return f"[{cat}: {mime}, {kb} KB]"
        text = part.get("text", UNDEF)
        return "" if text is None or text is UNDEF else text
    return ""  # numbers, true: (x).text is undefined


def part_list_union_to_string(value):
    return part_to_string(value)


# --------------------------------------------------------------------------
# sessionUtils.ts L85-105
# --------------------------------------------------------------------------

def is_ignored_user_content(trimmed: str) -> bool:
    return (
        len(trimmed) == 0
        or trimmed.startswith("/")
        or trimmed.startswith("?")
        or trimmed.startswith("<session_context>")
        or trimmed.startswith("<hook_context>")
    )


def ensure_part_array(content) -> list:
    if isinstance(content, list):
        return [{"text": p} if isinstance(p, str) else p for p in content]
    if isinstance(content, str):
        return [{"text": content}]
    return [content]


# --------------------------------------------------------------------------
# chatRecordingService.ts L107-125
# --------------------------------------------------------------------------

def is_resumable_message_record(message) -> bool:
    content = js_get(message, "content")
    content_string = part_list_union_to_string(content) if js_truthy(content) else ""
    mtype = js_get(message, "type")
    if mtype == "user":
        return not is_ignored_user_content(js_trim(content_string))
    if mtype == "gemini":
        if len(js_trim(content_string)) > 0:
            return True
        tc = js_get(message, "toolCalls")
        if tc is not None and tc is not UNDEF and js_length_gt0(tc):
            return True
        th = js_get(message, "thoughts")
        return th is not None and th is not UNDEF and js_length_gt0(th)
    return False


# --------------------------------------------------------------------------
# chatRecordingService.ts L133-400 (full mode) and L1041-1102
# --------------------------------------------------------------------------

def _split_lines_like_node_readline(text: str):
    # readline (crlfDelay: Infinity) ends a line at \r\n, \n or a lone \r.
    # NOT str.splitlines(): that also splits on \v \f \x1c-\x1e \x85 \u2028 \u2029.
    return re.split(r"\r\n|\n|\r", text)


def _reject_constant(name):
    raise ValueError(f"JSON.parse rejects {name}")


def js_json_parse(s: str):
    # JSON.parse: no NaN/Infinity; BOM is an error (Python also raises on BOM).
    return json.loads(s, parse_constant=_reject_constant)


def load_conversation_record(path: str):
    """Returns {'format', 'metadata', 'messages'} or None (where TS returns null)."""
    try:
        raw = open(path, "rb").read()
    except FileNotFoundError:
        return None  # fs.existsSync(filePath) is false
    text = raw.decode("utf-8", errors="replace")  # Node's StringDecoder substitutes U+FFFD

    metadata: dict = {}
    messages: dict = {}  # insertion-ordered: Map<string, MessageRecord>

    for line in _split_lines_like_node_readline(text):
        if not line.strip(_JS_TRIM):  # if (!line.trim()) continue;
            continue
        try:
            record = js_json_parse(line)
        except ValueError:
            continue  # parse error: line ignored
        try:
            if is_rewind_record(record):                                   # L172
                rewind_id = record["$rewindTo"]
                if rewind_id in messages:
                    keys = list(messages)
                    for k in keys[keys.index(rewind_id):]:
                        del messages[k]
                else:
                    messages.clear()
            elif is_message_record(record):                                # L203
                is_resumable_message_record(record)   # evaluated first; a throw drops the line
                messages[record["id"]] = record       # Map.set: replaces value, keeps position
            elif is_metadata_update_record(record):                        # L243
                upd = record["$set"]
                msgs = js_get(upd, "messages") if has_property(upd, "messages") else UNDEF
                if isinstance(msgs, list):                                 # checkpoint
                    messages.clear()
                    for m in msgs:
                        if is_message_record(m):
                            is_resumable_message_record(m)
                            messages[m["id"]] = m
                metadata = _spread(metadata, upd)
            elif is_partial_metadata_record(record):                       # L300
                metadata = _spread(metadata, record)
                msgs = record.get("messages", UNDEF)
                if isinstance(msgs, list):
                    for m in msgs:
                        if is_message_record(m):
                            is_resumable_message_record(m)
                            messages[m["id"]] = m
        except JsTypeError:
            continue  # the per-line try/catch swallows it; earlier effects of the line stay

    if not js_truthy(metadata.get("sessionId", UNDEF)) or not js_truthy(metadata.get("projectHash", UNDEF)):
        return _parse_legacy_record_fallback(raw)
    return {"format": "jsonl-replay", "metadata": metadata, "messages": list(messages.values())}


def _spread(base: dict, upd) -> dict:
    out = dict(base)
    if isinstance(upd, dict):
        out.update(upd)
    elif isinstance(upd, list):  # {...array} copies index keys
        out.update({str(i): v for i, v in enumerate(upd)})
    return out


def _parse_legacy_record_fallback(raw: bytes):
    try:
        parsed = js_json_parse(raw.decode("utf-8", errors="replace"))
    except ValueError:
        return None
    if not (isinstance(parsed, dict) and "sessionId" in parsed):
        return None
    msgs = parsed.get("messages", UNDEF)
    try:
        # full mode still evaluates these; any throw -> null (L1089-1098)
        if msgs is not None and msgs is not UNDEF:
            if not isinstance(msgs, list):
                raise JsTypeError("messages.filter is not a function")
            for m in msgs:
                js_get(m, "type")
            for m in msgs:
                if is_resumable_message_record(m):
                    break
    except JsTypeError:
        return None
    return {"format": "legacy-json", "metadata": {k: v for k, v in parsed.items() if k != "messages"},
            "messages": msgs}


# --------------------------------------------------------------------------
# sessionUtils.ts L110-228
# --------------------------------------------------------------------------

def convert_session_to_client_history(messages) -> list:
    history = []
    for msg in js_iter(messages):
        mtype = js_get(msg, "type")
        if mtype in ("info", "error", "warning"):
            continue
        if mtype == "user":
            content = msg.get("content", UNDEF)
            if is_ignored_user_content(js_trim(part_list_union_to_string(content))):
                continue
            history.append({"id": msg.get("id", UNDEF), "role": "user", "parts": ensure_part_array(content)})
        elif mtype == "gemini":
            content = msg.get("content", UNDEF)
            content_parts = ensure_part_array(content) if js_truthy(content) else []
            has_calls = any(js_truthy(js_get(p, "functionCall")) for p in content_parts)
            has_thoughts = any(js_truthy(js_get(p, "thought")) for p in content_parts)
            tool_calls = msg.get("toolCalls", UNDEF)
            model_parts = []
            if has_calls or has_thoughts:
                model_parts.extend(content_parts)              # "modern": content is the truth
            else:
                thoughts = msg.get("thoughts", UNDEF)
                if js_length_gt0(thoughts):
                    for t in js_iter(thoughts):
                        subj = js_get(t, "subject")
                        if js_truthy(subj):
                            text = f"**{js_string(subj)}** {js_string(js_get(t, 'description'))}"
                        else:
                            text = js_get(t, "description")
                        model_parts.append({"text": text, "thought": True})
                model_parts.extend(content_parts)
                if js_length_gt0(tool_calls):
                    for tc in js_iter(tool_calls):
                        model_parts.append({"functionCall": {
                            "id": js_get(tc, "id"), "name": js_get(tc, "name"), "args": js_get(tc, "args")}})
            if model_parts:
                history.append({"id": msg.get("id", UNDEF), "role": "model", "parts": model_parts})
                if js_length_gt0(tool_calls):
                    responses = []
                    for tc in js_iter(tool_calls):
                        result = js_get(tc, "result")
                        if not js_truthy(result):
                            continue
                        if isinstance(result, str):
                            responses.append({"functionResponse": {
                                "id": js_get(tc, "id"), "name": js_get(tc, "name"),
                                "response": {"output": result}}})
                        elif isinstance(result, list):
                            responses.extend(ensure_part_array(result))
                        else:
                            responses.append(result)
                    if responses:
                        history.append({"id": f"{js_string(msg.get('id', UNDEF))}_response",
                                        "role": "user", "parts": responses})
    return history


# --------------------------------------------------------------------------
# CLI: emit the same JSON shape as oracle/oracle.mjs
# --------------------------------------------------------------------------

def _drop_undef(v):
    if isinstance(v, dict):
        return {k: _drop_undef(x) for k, x in v.items() if x is not UNDEF}
    if isinstance(v, list):
        return [None if x is UNDEF else _drop_undef(x) for x in v]
    return v


def resume_view(path: str) -> dict:
    rec = load_conversation_record(path)
    if rec is None:
        return {"loaded": None}
    msgs = rec["messages"]
    ids = [js_get(m, "id") if is_obj(m) else None for m in msgs] if isinstance(msgs, list) else []
    try:
        hist, err = convert_session_to_client_history(msgs), None
    except JsTypeError as e:
        hist, err = None, f"TypeError: {e}"
    meta = rec["metadata"]
    return _drop_undef({
        "loaded": {"format": rec["format"], "sessionId": meta.get("sessionId", UNDEF), "messageIds": ids},
        "history": hist,
        "error": err,
    })


if __name__ == "__main__":
    print(json.dumps(resume_view(sys.argv[1])))
