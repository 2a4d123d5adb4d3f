"""What every judge format shares: the message layout and forge-proof response delimiters."""

from __future__ import annotations

import hashlib
import re
from abc import ABC, abstractmethod
from typing import ClassVar

from j1.formats.templates import get_template, quote_parts
from j1.pairs import Parsed

Messages = list[dict[str, str]]

_CLOSE_TAG = re.compile(r"</[^<>]+>")


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


def fenced(label: str, text: str, nonce: str) -> str:
    return f"<{label}-{nonce}>\n{text}\n</{label}-{nonce}>"


class JudgeFormat(ABC):
    """A judge formulation: how to ask (``render``) and how to read the answer (``parse``)."""

    name: ClassVar[str]
    pairwise: ClassVar[bool]
    # Output grammar the prompt asks for; also used by the format warm-up to write targets.
    answer_template: ClassVar[str]

    def __init__(self, template: str = "full") -> None:
        # The wording around the grammar (j1.formats.templates); parse() does not depend on it.
        self.template = get_template(template)
        self.template_name = template

    @property
    def task(self) -> str:
        return self.template.tasks[self.name]

    @abstractmethod
    def render(self, prompt: str, response_a: str, response_b: str | None = None) -> Messages:
        """Chat messages asking the judge about the responses, in the positions given (A shown first)."""

    @abstractmethod
    def parse(self, text: str) -> Parsed:
        """Total, strict parse of one completion (positions as shown)."""

    def answer_end(self, text: str) -> int | None:
        """Where a completion's answer ends: the end of the first closing tag at which the text so far
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
        if self.pairwise and response_b is None:
            raise ValueError(f"format {self.name!r} is pairwise: it needs response_b")
        if not self.pairwise and response_b is not None:
            raise ValueError(f"format {self.name!r} is pointwise: it takes one response")
