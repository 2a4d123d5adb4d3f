"""Where synthesis prompts come from: local files or Hugging Face datasets, with schema detection.

A source is a local ``.jsonl``/``.json``/``.parquet`` file, or, when no such path exists, a Hugging
Face dataset id (``openai/gsm8k``, ``openai/gsm8k:main`` for a config) loaded with
``datasets.load_dataset`` (cached datasets work offline; a missing one fails with a clear error).

Schemas recognised by themselves (``--prompt-field``/``--answer-field`` override them):

- math: GSM8K ``question`` + ``answer`` ending ``#### x``; MATH ``problem`` + ``answer`` (or
  ``solution`` with a ``\\boxed{}``); for mismatch pairs also Alpaca ``instruction`` (+ ``input``, as
  below) + ``output``.
- chat: ``messages``/``conversation`` (first user turn; WildChat, ShareGPT-like ``conversations``
  with ``from``/``value``), Alpaca ``instruction`` + ``input`` (input appended after a blank line;
  the self-instruct seed tasks keep it in ``instances[0].input``), Arena-Hard ``prompt`` (a string or
  a list of turns), or ``question``/``query``/``text``.

Every problem carries ``where`` (``file:line``) so a bad row is reported at its place.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from j1.schema import RowError, read_json_rows, require

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Problem:
    """One synthesis input: ``prompt`` as the source gives it; ``answer`` the gold (math only)."""

    id: str
    prompt: str
    where: str
    answer: str | None = None


def source_name(source: str) -> str:
    """The ``source`` recorded in pairs: a local file's name (so moving the file keeps ids), or the HF id.

    >>> import tempfile
    >>> local = Path(tempfile.mkdtemp()) / "gsm8k_train.jsonl"
    >>> _ = local.write_text("")
    >>> source_name(str(local)), source_name("openai/gsm8k")
    ('gsm8k_train.jsonl', 'openai/gsm8k')
    """
    path = Path(source)
    return path.name if path.exists() else source


def pair_id(source: str, prompt: str) -> str:
    """A deterministic id from the source name and the prompt text (16 hex digits of SHA-256).

    >>> pair_id("gsm8k_train.jsonl", "1+1?") == pair_id("gsm8k_train.jsonl", "1+1?")
    True
    """
    return hashlib.sha256(f"{source}\x00{prompt}".encode()).hexdigest()[:16]


def iter_source_rows(source: str, split: str = "train") -> Iterator[tuple[str, dict]]:
    """``(where, row)`` for every row of a local file or a HF dataset.

    Raises:
        FileNotFoundError: a path that looks local does not exist (the hub is not asked: it would retry
            for half a minute), or no HF dataset of that name could be loaded.
    """
    path = Path(source)
    if path.exists():
        for lineno, row in read_json_rows(path):
            yield f"{path}:{lineno}", row
        return
    if looks_local(source):
        raise FileNotFoundError(f"source {source}: no such file")
    name, _, config = source.partition(":")
    try:
        import datasets

        ds = datasets.load_dataset(name, config or None, split=split)
    except Exception as exc:  # noqa: BLE001 - datasets raises many types for "not available"
        raise FileNotFoundError(
            f"source {source!r} is neither a local file nor a loadable Hugging Face dataset "
            f"(split {split!r}): {type(exc).__name__}: {exc}. Offline, give a local .jsonl/.json/.parquet path."
        ) from exc
    for i, row in enumerate(ds, start=1):
        yield f"{source}[{split}]:{i}", dict(row)


def looks_local(source: str) -> bool:
    """Whether ``source`` reads as a file path rather than a Hugging Face id (``owner/name[:config]``):
    a data-file suffix, a leading ``/``, ``.`` or ``~``, or more than one ``/``.

    >>> [looks_local(s) for s in ("data/x.jsonl", "./gsm8k", "/tmp/a", "a/b/c", "openai/gsm8k:main", "gsm8k")]
    [True, True, True, True, False, False]
    """
    name = source.partition(":")[0] if not source.startswith(("/", ".", "~")) else source
    return (Path(source).suffix.lower() in {".jsonl", ".ndjson", ".json", ".parquet", ".csv", ".txt"}
            or source.startswith(("/", ".", "~")) or name.count("/") > 1 or "\\" in source)


# --- math ---------------------------------------------------------------------------------------

_MATH_PROMPT_FIELDS = ("question", "problem")


def detect_math_fields(row: dict, where: str) -> tuple[str, str]:
    """``(prompt_field, answer_field)`` of a GSM8K- or MATH-like row.

    >>> detect_math_fields({"question": "q", "answer": "x\\n#### 3"}, "f:1")
    ('question', 'answer')
    >>> detect_math_fields({"problem": "p", "solution": "so \\\\boxed{2}"}, "f:1")
    ('problem', 'solution')
    >>> detect_math_fields({"instruction": "i", "input": "", "output": "o"}, "f:1")
    ('instruction', 'output')
    """
    if "instruction" in row and "output" in row and not any(f in row for f in _MATH_PROMPT_FIELDS):
        return "instruction", "output"  # Alpaca: instructions with their reference outputs
    prompt_field = next((f for f in _MATH_PROMPT_FIELDS if f in row), None)
    if prompt_field is None:
        raise RowError(
            f"{where}: no problem field (looked for {', '.join(_MATH_PROMPT_FIELDS)}); "
            f"fields are {sorted(row)}; name it with --prompt-field"
        )
    # MATH copies often carry both `answer` (the boxed content) and `solution`; the short one wins.
    answer_field = next((f for f in ("answer", "solution", "final_answer") if f in row), None)
    if answer_field is None:
        raise RowError(f"{where}: no answer field (looked for answer, solution, final_answer); name it with --answer-field")
    return prompt_field, answer_field


def load_math_problems(
    source: str,
    *,
    prompt_field: str | None = None,
    answer_field: str | None = None,
    split: str = "train",
    limit: int | None = None,
) -> list[Problem]:
    """The first ``limit`` problems of a source (all when None), with gold answers, de-duplicated by id.

    Raises:
        RowError: a row lacks the prompt/answer field or it is not a string (names ``file:line``), or
            the source has no rows.
    """
    name = source_name(source)
    problems: dict[str, Problem] = {}
    fields: tuple[str, str] | None = None
    for where, row in iter_source_rows(source, split):
        if limit is not None and len(problems) >= limit:
            break
        if fields is None:  # detect once, from the first row; every later row must match it
            pf, af = detect_math_fields(row, where) if not (prompt_field and answer_field) else (None, None)
            fields = (prompt_field or pf, answer_field or af)
            log.info("%s: problem field %r, answer field %r", name, *fields)
        # An Alpaca instruction without its input ("Sort the following list.") is not the question.
        prompt = chat_prompt(row, where) if fields[0] == "instruction" else require(row, fields[0], str, where)
        answer = row.get(fields[1])
        if isinstance(answer, (int, float)) and not isinstance(answer, bool):
            answer = str(answer)
        if not isinstance(answer, str):
            answer = require(row, fields[1], str, where)
        pid = pair_id(name, prompt)
        if pid not in problems:
            problems[pid] = Problem(pid, prompt, where, answer)
    if not problems:
        raise RowError(f"source {source}: no problems (it has no rows)")
    return list(problems.values())


# --- chat ---------------------------------------------------------------------------------------


def _first_user_turn(turns: list, where: str, field: str) -> str:
    for turn in turns:
        if isinstance(turn, dict):
            role = turn.get("role", turn.get("from"))
            content = turn.get("content", turn.get("value"))
            if isinstance(role, str) and role in {"user", "human"} and isinstance(content, str):
                return content
        elif isinstance(turn, str):  # Arena-Hard v0.1 style list of user turns
            return turn
    raise RowError(f"{where}: field {field!r} has no user turn")


def chat_prompt(row: dict, where: str, prompt_field: str | None = None) -> str:
    """The user request in a chat-prompt row (see the module docstring for the schemas).

    >>> chat_prompt({"instruction": "Sum these.", "input": "2, 3"}, "f:1")
    'Sum these.\\n\\n2, 3'
    >>> chat_prompt({"conversation": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}, "f:1")
    'hi'
    """
    if prompt_field:
        value = require(row, prompt_field, (str, list), where)
        return value if isinstance(value, str) else _first_user_turn(value, where, prompt_field)
    for key in ("messages", "conversation", "conversations"):
        if isinstance(row.get(key), list):
            return _first_user_turn(row[key], where, key)
    if "instruction" in row:
        instruction = require(row, "instruction", str, where)
        extra = row.get("input")
        if extra is None and isinstance(row.get("instances"), list) and row["instances"]:
            first = row["instances"][0]  # self-instruct seed tasks
            if first is not None and not isinstance(first, dict):
                raise RowError(f"{where}: field 'instances' must hold objects, got {type(first).__name__}")
            extra = (first or {}).get("input")
        if extra is not None and not isinstance(extra, str):
            raise RowError(f"{where}: field 'input' must be str, got {type(extra).__name__}")
        return f"{instruction}\n\n{extra}" if extra and extra.strip() else instruction
    if "prompt" in row:
        value = require(row, "prompt", (str, list), where)
        return value if isinstance(value, str) else _first_user_turn(value, where, "prompt")
    for key in ("question", "query", "text"):
        if key in row:
            return require(row, key, str, where)
    raise RowError(
        f"{where}: no prompt field (looked for messages, conversation, instruction, prompt, question, "
        f"query, text); fields are {sorted(row)}; name it with --prompt-field"
    )


def load_chat_prompts(
    source: str, *, prompt_field: str | None = None, split: str = "train", limit: int | None = None,
    max_words: int | None = None,
) -> list[Problem]:
    """The first ``limit`` non-empty chat prompts of a source, de-duplicated by id, skipping prompts of
    more than ``max_words`` whitespace-separated words (a judge prompt holds the request and two answers,
    and must fit the trainer's context: ``j1 train`` drops what does not)."""
    name = source_name(source)
    problems: dict[str, Problem] = {}
    too_long = 0
    for where, row in iter_source_rows(source, split):
        if limit is not None and len(problems) >= limit:
            break
        prompt = chat_prompt(row, where, prompt_field)
        if not prompt.strip():
            log.warning("%s: empty prompt, skipped", where)
            continue
        if max_words is not None and len(prompt.split()) > max_words:
            too_long += 1
            continue
        pid = pair_id(name, prompt)
        if pid not in problems:
            problems[pid] = Problem(pid, prompt, where)
    if too_long:
        log.warning("source %s: %d prompts over %d words skipped (--max-prompt-words)", source, too_long, max_words)
    if not problems:
        over = f" or prompts over {max_words} words (--max-prompt-words)" if too_long else ""
        raise RowError(f"source {source}: no prompts (it has no rows, or only empty prompts{over})")
    return list(problems.values())
