"""What every judge format shares: the message layout and forge-proof response delimiters."""

from __future__ import annotations

import hashlib
import random
import re
from abc import ABC, abstractmethod
from typing import ClassVar

from j1.formats.templates import get_template, quote_parts
from j1.pairs import Parsed

Messages = list[dict[str, str]]
# What a judge is asked about: the user's request as text, or the conversation that led to the responses.
Prompt = str | Messages

_CLOSE_TAG = re.compile(r"</[^<>]+>")
POSITIONS = ("A", "B", "C", "D")
# The roles of OpenAI's chat format (which TRL's and the engines' chat templates read).
ROLES = ("system", "developer", "user", "assistant", "tool")  # the letters shown responses go by, first shown first


def _nonce(texts: tuple[str, ...], salt: int) -> str:
    digest = hashlib.sha256("\x00".join((str(salt), *texts)).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:8]


def fence_nonce(*texts: str) -> str:
    """A short tag suffix that occurs in none of ``texts``.

    Responses are wrapped as ``<response_A-3f9a2c1b> … </response_A-3f9a2c1b>``. The suffix is a
    hash of the content, so a response cannot close or forge its own fence (it would have to contain
    a hash of itself), and the same inputs always render the same prompt. On the astronomically rare
    collision we re-hash with a salt.

    >>> n = fence_nonce("hello", "world")
    >>> len(n), n == fence_nonce("hello", "world")
    (8, True)
    """
    for salt in range(1000):
        nonce = _nonce(texts, salt)
        if not any(nonce in t for t in texts):
            return nonce
    raise ValueError("could not find a delimiter absent from the texts")  # needs ~16^8 adversarial texts


def request_text(prompt: Prompt) -> str:
    """The request as the judge reads it: a string as it is; a conversation (chat messages) as its
    transcript, one ``role: text`` block per turn (one user message is just its text), so a multi-turn
    request keeps its turns inside the request fence.

    Raises:
        ValueError: not a string nor a non-empty list of ``{"role": str, "content": str}`` with a chat role
            (``ROLES``), naming the message.

    >>> request_text([{"role": "user", "content": "hi"}])
    'hi'
    >>> print(request_text([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"},
    ...                     {"role": "user", "content": "and?"}]))
    user: hi
    <BLANKLINE>
    assistant: yo
    <BLANKLINE>
    user: and?
    """
    if isinstance(prompt, str):
        return prompt
    if not isinstance(prompt, list):
        raise ValueError(f"must be a string or a list of chat messages, got {type(prompt).__name__}")
    if not prompt:
        raise ValueError("is an empty list; give a string or a list of chat messages")
    for n, m in enumerate(prompt, start=1):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            shown = repr(m) if len(repr(m)) <= 80 else repr(m)[:77] + "..."
            raise ValueError(f"message {n} must be an object with string 'role' and 'content', got {shown}")
        if m["role"] not in ROLES:
            raise ValueError(f"message {n} has role {m['role'][:40]!r}; a chat message's role is one of "
                             f"{', '.join(ROLES)}")
    if len(prompt) == 1 and prompt[0]["role"] == "user":
        return prompt[0]["content"]
    return "\n\n".join(f"{m['role']}: {m['content']}" for m in prompt)


def fenced(label: str, text: str, nonce: str) -> str:
    return f"<{label}-{nonce}>\n{text}\n</{label}-{nonce}>"


class JudgeFormat(ABC):
    """A judge formulation: how to ask (``render``), how to read the answer (``parse``), and its shape:
    how many responses a prompt shows (``arity``), the verdicts it can give (``positions``), the tags
    around its answer (``answer_tags``) and how to write a valid answer (``write_answer``). Callers
    use these, never the format's name (issue 44)."""

    name: ClassVar[str]
    # Responses one prompt shows: 1 (pointwise), 2 (a pair) or 4 (the four-way pick).
    arity: ClassVar[int]
    # Output grammar the prompt asks for (the wording of the prompt; ``write_answer`` fills it in).
    answer_template: ClassVar[str]
    # The opening tag that starts the answer grammar and the closing tag that ends it.
    answer_tags: ClassVar[tuple[str, str]]
    # Whether the answer names a position as ``[[X]]`` (verdict formats) or only gives scores.
    names_position: ClassVar[bool]

    def __init__(self, template: str = "full") -> None:
        # The wording around the grammar (j1.formats.templates); parse() does not depend on it.
        self.template = get_template(template)
        self.template_name = template

    @property
    def task(self) -> str:
        return self.template.tasks[self.name]

    @property
    def pairwise(self) -> bool:
        """Whether a prompt shows a pair (judged in both orders, ``j1.pairs``)."""
        return self.arity == 2

    @property
    def positions(self) -> tuple[str, ...]:
        """The letters the shown responses go by (A first): a verdict names one of them.

        >>> from j1.formats import get_format
        >>> get_format("pos").positions, get_format("pav").positions, get_format("fourway").positions
        (('A',), ('A', 'B'), ('A', 'B', 'C', 'D'))
        """
        return POSITIONS[: self.arity]

    def verdict_token(self, letter: str) -> str | None:
        """How the answer names ``letter`` (``[[A]]``), None when the format gives scores only.

        >>> from j1.formats import get_format
        >>> get_format("pavs").verdict_token("B"), get_format("pas").verdict_token("B")
        ('[[B]]', None)
        """
        return f"[[{self._position(letter)}]]" if self.names_position else None

    @abstractmethod
    def write_answer(self, winner: str | None = None, rng: random.Random | None = None) -> str:
        """A valid answer in this format's grammar (no thought): it names ``winner`` (a shown position)
        or, without one, a verdict drawn from ``rng``. Scores are drawn from ``rng`` (the winner's
        higher), or are 10 for the winner and 0 for the rest without one. A format draws from ``rng``
        the same way whether or not ``winner`` is given, so a seed gives the same draws either way."""

    def _position(self, letter: str | None) -> str | None:
        if letter is not None and letter not in self.positions:
            raise ValueError(f"format {self.name!r} shows {self.arity} response(s), as {', '.join(self.positions)}: "
                             f"{letter!r} is none of them")
        return letter

    def _pick(self, winner: str | None, rng: random.Random | None) -> str:
        """``winner``, else a position drawn from ``rng`` (drawn whenever ``rng`` is given)."""
        drawn = rng.choice(self.positions) if rng is not None else None
        pick = self._position(winner) or drawn
        if pick is None:
            raise ValueError(f"format {self.name!r}: name a winner or pass an rng to draw one")
        return pick

    @abstractmethod
    def render(self, prompt: Prompt, response_a: str, response_b: str | None = None) -> Messages:
        """Chat messages asking the judge about the responses, in the positions given (A shown first);
        a conversation ``prompt`` is shown as its transcript (``request_text``)."""

    @abstractmethod
    def parse(self, text: str) -> Parsed:
        """Total, strict parse of one completion (positions as shown)."""

    def answer_end(self, text: str) -> int | None:
        r"""Where a completion's answer ends: the end of the first closing tag at which the text so far
        is a complete, valid answer (None if it never is). A judge stops there, as a server stops at a
        stop string: what a model writes after its answer is not part of it.

        >>> from j1.formats import get_format
        >>> get_format("pav").answer_end("<think>x</think> <answer>[[A]]</answer>\n<answer")
        39
        """
        for m in _CLOSE_TAG.finditer(text):
            if self.parse(text[: m.end()]).valid:
                return m.end()
        return None

    def _user(self, intro: str, fences: list[str], request: str, shown: list[str], nonce: str) -> str:
        """The user message: intro, the fenced parts, the task, and (``digest`` template) a fenced
        quote of each part's first words last, nearest the judge's answer."""
        parts = [intro, *fences, self.task]
        if self.template.quote_words:
            parts.append(fenced("starts", quote_parts(request, shown, self.template.quote_words), nonce))
        return "\n\n".join(parts)

    def _check_arity(self, response_b: str | None) -> None:
        if self.arity == 2 and response_b is None:
            raise ValueError(f"format {self.name!r} is pairwise: it needs response_b")
        if self.arity == 1 and response_b is not None:
            raise ValueError(f"format {self.name!r} is pointwise: it takes one response")

