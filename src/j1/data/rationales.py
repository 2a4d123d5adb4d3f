"""Thoughts by construction: for a pair whose winner is known, a short thought per order that says *why*.

A judge that is only ever shown a verdict learns the verdict, not a reason (results/train). Every pair j1
makes knows why it has its winner, and that knowledge is written here as a thought a small model can learn
to write from what it is shown, in the judge's own words:

- **Math with a reference** (a gold answer the judge is shown): each response's final answer, whether it
  matches the reference, and the conclusion.
- **Math without one** (``math``: right vs wrong answers to one problem): each final answer, the solved
  answer, the conclusion.
- **Mismatch** (``*-mismatch``: a request's answer vs another request's): how the request and each
  response begin, which response answers the request, the conclusion.
- **Chat x/x'** (``chat``: the answer to x vs the answer to a rewritten x'): what x asks that x' changed,
  which response follows x, the conclusion.

A thought is *checkable*: every fact in it is read off the shown texts (terms, openings, final answers) or
known by construction (which request a response was written for), and it is
kept only when those facts favour the known winner (``Rationale.supported``); a pair whose facts do not is
left without thoughts and counted, never given a thought that argues one way and concludes the other.

Thoughts are keyed by the letter the better response is shown under (``"A"``: chosen shown first), so
they hold for any placement of the pair (``j1.schema.PlacedPair``) and either order. All functions here
are pure.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from j1.data.mathcheck import final_answer, same_answer
from j1.formats.templates import first_words

if TYPE_CHECKING:
    from j1.schema import PairRecord

# Function words, and words every request or answer uses: a term is a word that says what a text is about.
_STOP = frozenset("""
a about above after again against all also am an and any are as at be because been before being below
between both but by can could did do does doing done down during each either else even every few for from
further get gets got had has have having he her here hers herself him himself his how however i if in into
is it its itself just let like make makes many may me might more most much must my myself need no nor not
now of off often on once one only or other our ours out over own per please put same say says she should
so some such than that the their theirs them then there these they this those through thus to too two
under until up upon us use used using very want was we were what when where which while who whom whose why
will with would write you your yours yourself also answer answers question questions response responses
following given give find many much total each number numbers three four five many whole first second
another sentence word words text example examples provide provided describe explain list create name
come hello state trying tell show
""".split())
_TOKEN = re.compile(r"[^\W\d_](?:[^\W\d_]|['-])*[^\W\d_]|\d+(?:[.,]\d+)*")  # words of any script, numbers
MAX_TERMS = 4  # terms named per text: enough to say what it is about, short enough for a CPU budget
OPENING_WORDS = 6  # words quoted of each text: what it is about, and a copy of the digest's quote


def terms(text: str) -> list[str]:
    """The text's content terms in order of first use: words of 3+ letters that are not function words
    (lower case, a plural's ``s`` dropped) and numbers (thousands commas dropped), each once.

    >>> terms("Natalia sold clips to 48 of her friends in April, and 1,200 clips in May.")
    ['natalia', 'sold', 'clip', '48', 'friend', 'april', '1200']
    >>> terms("")
    []
    """
    out: list[str] = []
    for tok in _TOKEN.findall(text):
        if tok[0].isdigit():
            word = tok.replace(",", "").rstrip(".")
        else:
            word = tok.lower().removesuffix("'s").strip("'-")  # "Tom's" is about Tom
            if len(word) < 3 or word in _STOP:
                continue
            if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
                word = word[:-1]
        if word and word not in out:
            out.append(word)
    return out


def _listing(words: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``.

    >>> _listing(["x"]), _listing(["x", "y"]), _listing(["x", "y", "z"])
    ('x', 'x and y', 'x, y and z')
    """
    words = list(words)
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


@dataclass(frozen=True)
class Rationale:
    """The thoughts of one pair: ``thoughts`` maps the letter the better response is shown under to its
    thought (None when the facts do not favour the winner), ``reads`` the judge inputs the thoughts use
    (``("reference",)`` when they quote it), ``why`` which construction made them, or why none was made."""

    thoughts: dict[str, str] | None
    reads: tuple[str, ...]
    why: str

    @property
    def supported(self) -> bool:
        return self.thoughts is not None


def _both(make: Callable[[str, str], str], chosen_fact: str, rejected_fact: str, reads: tuple[str, ...],
          why: str) -> Rationale:
    """The two orders' thoughts from one fact per response: ``make(first, second)`` writes the thought
    from the facts of the responses shown as A and B; the verdict names the chosen response's letter."""
    thoughts = {}
    for winner in ("A", "B"):
        first, second = (chosen_fact, rejected_fact) if winner == "A" else (rejected_fact, chosen_fact)
        thoughts[winner] = make(first, second) + f" So response {winner} is better."
    return Rationale(thoughts, reads, why)


def math_reference(chosen: str, rejected: str, reference: str) -> Rationale:
    """Each final answer against the reference: supported when the chosen response's matches and the
    rejected one's does not (or it has none).

    >>> r = math_reference("2+2=4\\nThe answer is 4", "The answer is 5", "4")
    >>> r.thoughts["B"]
    "The reference answer is 4. Response A's final answer is 5, which does not match it. Response B's final answer is 4, which matches it. So response B is better."
    >>> math_reference("The answer is 5", "The answer is 4", "4").why
    'the chosen final answer does not match the reference'
    """
    got = {"chosen": final_answer(chosen), "rejected": final_answer(rejected)}
    if got["chosen"] is None or not same_answer(got["chosen"], reference):
        return Rationale(None, ("reference",), "the chosen final answer does not match the reference")
    if got["rejected"] is not None and same_answer(got["rejected"], reference):
        return Rationale(None, ("reference",), "both final answers match the reference")

    def fact(answer: str | None) -> str:
        if answer is None:
            return "gives no final answer"
        verdict = "matches it" if same_answer(answer, reference) else "does not match it"
        return f"final answer is {answer}, which {verdict}"

    def make(first: str, second: str) -> str:
        return f"The reference answer is {reference}. Response A's {first}. Response B's {second}."

    return _both(make, fact(got["chosen"]), fact(got["rejected"]), ("reference",), "math: final answers against the reference")


def math_solved(chosen: str, rejected: str, gold: str) -> Rationale:
    """Right vs wrong answers to one problem, with no reference shown: each final answer and the solved
    one (the gold answer the pair was checked against).

    >>> math_solved("The answer is 4", "The answer is 5", "4").thoughts["A"]
    "Response A's final answer is 4. Response B's final answer is 5. Solving the problem gives 4. So response A is better."
    """
    got = final_answer(chosen), final_answer(rejected)
    if got[0] is None or not same_answer(got[0], gold):
        return Rationale(None, (), "the chosen final answer is not the gold answer")
    if got[1] is not None and same_answer(got[1], gold):
        return Rationale(None, (), "both final answers are the gold answer")

    def fact(answer: str | None) -> str:
        return "gives no final answer" if answer is None else f"final answer is {answer}"

    def make(first: str, second: str) -> str:
        return f"Response A's {first}. Response B's {second}. Solving the problem gives {gold}."

    return _both(make, fact(got[0]), fact(got[1]), (), "math: final answers against the solved answer")


def mismatch(prompt: str, chosen: str, rejected: str) -> Rationale:
    """The answer to the request vs an answer to another: how the request and each response begin (the words
    the ``digest`` prompt quotes), and which of them answers the request. The winner is known by construction
    (the other response was written for another request), so every such pair has a thought; the thought
    names what each response addresses, and the judge must tell which of the two fits the request.

    >>> r = mismatch("How many legs does a spider have?", "A spider has eight legs.", "Boil the pasta for ten minutes, then drain it.")
    >>> r.thoughts["A"]
    'The request begins "How many legs does a spider". Response A begins "A spider has eight legs.", which answers it. Response B begins "Boil the pasta for ten minutes,", which answers another request. So response A is better.'
    >>> mismatch("   ", "a", "b").why
    'the request is empty'
    """
    if not prompt.strip():
        return Rationale(None, (), "the request is empty")

    def fact(text: str, answers: str) -> str:
        return f'begins "{first_words(text, OPENING_WORDS)}", which {answers}'

    def make(first: str, second: str) -> str:
        return f'The request begins "{first_words(prompt, OPENING_WORDS)}". Response A {first}. Response B {second}.'

    return _both(make, fact(chosen, "answers it"), fact(rejected, "answers another request"), (),
                 "mismatch: how each response begins, and which answers the request")


def rewrite(prompt: str, noisy_prompt: str, chosen: str, rejected: str) -> Rationale:
    """The answer to x vs the answer to a rewritten x': the terms x has and x' changed, which response uses
    them, and the rewrite's terms the other uses instead. Supported when the chosen response uses more of
    x's changed terms, or fewer of x''s.

    >>> r = rewrite("List three red fruits.", "List three green fruits.", "Cherry, strawberry, red apple.", "Lime, kiwi, green apple.")
    >>> r.thoughts["A"]
    'The request asks for red, where a different request would ask for green. Response A uses red. Response B uses green instead. So response A is better.'
    """
    mine, theirs = terms(prompt), terms(noisy_prompt)
    changed = [t for t in mine if t not in theirs]
    swapped = [t for t in theirs if t not in mine]
    if not changed:
        return Rationale(None, (), "the rewrite changed none of the request's terms")
    words = {side: set(terms(text)) for side, text in (("chosen", chosen), ("rejected", rejected))}
    hits = {side: [t for t in changed if t in w] for side, w in words.items()}
    wrong = {side: [t for t in swapped if t in w] for side, w in words.items()}
    score = {side: len(hits[side]) - len(wrong[side]) for side in words}
    if score["chosen"] <= score["rejected"]:
        return Rationale(None, (), "the chosen response does not follow the request's changed terms more closely")

    def fact(side: str) -> str:
        if hits[side]:
            return f"uses {_listing(hits[side][:MAX_TERMS - 1])}"
        if wrong[side]:
            return f"uses {_listing(wrong[side][:MAX_TERMS - 1])} instead"
        return "uses none of them"

    other = f", where a different request would ask for {_listing(swapped[:2])}" if swapped else ""

    def make(first: str, second: str) -> str:
        return f"The request asks for {_listing(changed[:MAX_TERMS - 1])}{other}. Response A {first}. Response B {second}."

    return _both(make, fact("chosen"), fact("rejected"), (), "chat: the request's changed terms in each response")


def rationale(prompt: str, chosen: str, rejected: str, kind: str, *, reference: str | None = None,
              meta: dict | None = None) -> Rationale:
    """The thoughts of one pair, by its kind and what it carries (the module docstring's constructions):
    a reference decides first where both responses have a final answer to hold against it; then the
    kind's own construction.

    >>> rationale("What is 2 + 2?", "2 + 2 = 4. The answer is 4", "The answer is 5", "math", reference="4").why
    'math: final answers against the reference'
    >>> rationale("q", "a", "b", "chat").why
    "chat pair without meta 'noisy_prompt'"
    """
    meta = meta or {}
    if reference is not None and reference.strip() and final_answer(chosen) is not None:
        return math_reference(chosen, rejected, reference.strip())
    if kind.endswith("mismatch"):
        return mismatch(prompt, chosen, rejected)
    if kind == "math":
        gold = meta.get("gold")
        if not isinstance(gold, str) or not gold.strip():
            return Rationale(None, (), "math pair without a reference or meta 'gold'")
        return math_solved(chosen, rejected, gold.strip())
    if kind == "chat":
        noisy = meta.get("noisy_prompt")
        if not isinstance(noisy, str) or not noisy.strip():
            return Rationale(None, (), "chat pair without meta 'noisy_prompt'")
        return rewrite(prompt, noisy, chosen, rejected)
    return Rationale(None, (), f"no construction for kind {kind!r}")


def in_share(share: float, key: str) -> bool:
    """Whether the item named by ``key`` (seed, purpose and id) is in a ``share`` of items: a coin seeded by
    the key alone, so the answer does not depend on the file's order or on other items.

    >>> in_share(1.0, "0:x:p1"), in_share(0.0, "0:x:p1")
    (True, False)
    """
    return share >= 1.0 or (share > 0.0 and random.Random(key).random() < share)


def keeps_reference(pair_id: str, share: float, seed: int) -> bool:
    """Whether a pair keeps its reference when only ``share`` of pairs should (a coin seeded by the pair id):
    one judge then learns to think both with a reference and without one.

    >>> keeps_reference("p1", 1.0, 0), keeps_reference("p1", 0.0, 0)
    (True, False)
    """
    return in_share(share, f"{seed}:reference:{pair_id}")


def with_thoughts(pair: PairRecord, *, reference_share: float = 1.0, seed: int = 0) -> tuple[PairRecord | None, str]:
    """``pair`` with its thoughts (its reference dropped first where ``keeps_reference`` says so), or None
    when its facts do not favour its winner; and which construction was used, or why none was.

    >>> from j1.schema import PairRecord
    >>> p = PairRecord("i", "What is 2 + 2?", "2 + 2 = 4. The answer is 4", "The answer is 5", "math", "s", reference="4")
    >>> out, why = with_thoughts(p)
    >>> out.thoughts["reads"], why
    (['reference'], 'math: final answers against the reference')
    >>> with_thoughts(p, reference_share=0.0)
    (None, "math pair without a reference or meta 'gold'")
    """
    import dataclasses

    if pair.reference is not None and not keeps_reference(pair.id, reference_share, seed):
        pair = dataclasses.replace(pair, reference=None)
    made = rationale(pair.prompt, pair.chosen, pair.rejected, pair.kind, reference=pair.reference, meta=pair.meta)
    if not made.supported:
        return None, made.why
    return dataclasses.replace(pair, thoughts={**made.thoughts, "reads": list(made.reads)}), made.why


def beside(pair: PairRecord) -> PairRecord:
    """``pair`` with its thoughts where its facts favour its winner, else as it is: what ``j1 synth math``,
    ``chat`` and ``mismatch`` write (``j1 synth thoughts`` converts older files and leaves unsupported pairs out).

    >>> from j1.schema import PairRecord
    >>> beside(PairRecord("i", "Tom has 5 apples.", "5 apples", "pasta", "chat-mismatch", "s")).thoughts["reads"]
    []
    >>> beside(PairRecord("i", "Tom has 5 apples.", "pasta", "5 apples", "chat", "s")).thoughts is None  # no x'
    True
    """
    made, _ = with_thoughts(pair)
    return pair if made is None else made
