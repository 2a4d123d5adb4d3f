"""What every judge format shares: the message layout, forge-proof delimiters, and what a judge may read
besides the request and the responses (``Guidance``: criteria and a reference answer)."""

from __future__ import annotations

import hashlib
import random
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar

from j1.formats.templates import get_template, quote_parts
from j1.formats.verdict import Parsed

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


# The inputs a judge may read besides the request and the responses (issue 54), in the order a prompt shows them.
INPUTS = ("criteria", "reference")


@dataclass(frozen=True)
class Guidance:
    """What a judge reads besides the request and the responses: ``criteria`` to judge by (free text, or a
    rubric's text: ``j1.formats.templates.rubric_text``) and ``reference``, a gold answer to the request.

    Both are data: each is rendered in its own fence, under the same content-hash nonce as the request and the
    responses, so none of them can close or forge another's fence. A blank text counts as not given.

    >>> Guidance(criteria="Be brief.", reference="  ").inputs
    ('criteria',)
    >>> Guidance("c", "r").keep(["reference"])
    Guidance(criteria=None, reference='r')
    """

    criteria: str | None = None
    reference: str | None = None

    def __post_init__(self) -> None:
        for name in INPUTS:
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{name} must be a string, got {type(value).__name__}")
            if value is not None and not value.strip():
                object.__setattr__(self, name, None)

    @property
    def inputs(self) -> tuple[str, ...]:
        """The names of the inputs given, in ``INPUTS`` order."""
        return tuple(n for n in INPUTS if getattr(self, n) is not None)

    def keep(self, names: Iterable[str]) -> Guidance:
        """Only the inputs named in ``names`` (what a run sends, or a judge is trained with)."""
        names = set(names)
        return Guidance(**{n: getattr(self, n) if n in names else None for n in INPUTS})

    def texts(self) -> tuple[str, ...]:
        """The given texts, in ``INPUTS`` order (what the fence nonce must also avoid)."""
        return tuple(getattr(self, n) for n in self.inputs)

    def __bool__(self) -> bool:
        return bool(self.inputs)


NO_GUIDANCE = Guidance()


def guidance_of(value: Guidance | None) -> Guidance:
    """``value``, or no guidance for None.

    >>> guidance_of(None).inputs
    ()
    """
    return NO_GUIDANCE if value is None else value


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
    def render(self, prompt: Prompt, response_a: str, response_b: str | None = None,
               guidance: Guidance | None = None) -> Messages:
        """Chat messages asking the judge about the responses, in the positions given (A shown first);
        a conversation ``prompt`` is shown as its transcript (``request_text``); ``guidance``'s criteria and
        reference, when given, are fenced after the request (``_user``)."""

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

    def _messages(self, intro: str, request: str, shown: list[tuple[str, str]], guidance: Guidance | None,
                  quote: str | None = None) -> Messages:
        """The system and user messages: intro, the fenced request, the fenced criteria and reference (when
        given), each shown response fenced under its label (``shown``: ``[(label, text)]``), a line per
        input given on how to read it, the task, and (``digest`` template) a fenced ``quote`` of each part's
        first words last, nearest the judge's answer (default: ``quote_parts`` of the request and responses).

        One nonce covers every part: it occurs in none of them, so no part can close or forge another's fence.
        Without guidance the prompt is the one j1 rendered before criteria and references existed."""
        guidance = guidance_of(guidance)
        texts = [t for _, t in shown]
        nonce = fence_nonce(request, *texts, *guidance.texts())
        fences = [fenced("request", request, nonce)]
        fences += [fenced(name, getattr(guidance, name), nonce) for name in guidance.inputs]
        fences += [fenced(label, text, nonce) for label, text in shown]
        notes = [self.template.input_notes[name] for name in guidance.inputs]
        parts = [intro, *fences, *notes, self.task]
        if self.template.quote_words:
            quote = quote if quote is not None else quote_parts(request, texts, self.template.quote_words)
            parts.append(fenced("starts", quote, nonce))
        return [{"role": "system", "content": self.template.system}, {"role": "user", "content": "\n\n".join(parts)}]

    def _check_arity(self, response_b: str | None) -> None:
        if self.arity == 2 and response_b is None:
            raise ValueError(f"format {self.name!r} is pairwise: it needs response_b")
        if self.arity == 1 and response_b is not None:
            raise ValueError(f"format {self.name!r} is pointwise: it takes one response")

