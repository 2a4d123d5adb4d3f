"""Table-driven tests for the four judge parsers: every rule of the output grammar (issue #2)."""

from __future__ import annotations

import pickle

import pytest

from j1.formats import FORMATS, Verdict, get_format

A, B, TIE, INV = Verdict.A, Verdict.B, Verdict.TIE, Verdict.INVALID

PAV_CASES = [
    # (text, expected verdict, why)
    ("<think>A is right.</think><answer>[[A]]</answer>", A, "plain A"),
    ("<think>B is right.</think>\n<answer>[[B]]</answer>", B, "plain B"),
    ("<think>x</think> <answer> [[ b ]] </answer> trailing words", B, "spaces, lower case, trailing text"),
    ("<THINK>x</THINK><ANSWER>[[A]]</ANSWER>", A, "upper-case tags"),
    ("< think >x</ think ><Answer >[[A]]</ answer>", A, "spaces inside tag brackets"),
    ("thought with no opening tag</think><answer>[[A]]</answer>", A, "pre-filled <think>"),
    ("", INV, "empty"),
    ("[[A]]", INV, "bare verdict, no tags"),
    ("<think>x</think> [[A]]", INV, "bare verdict after thought"),
    ("<answer>[[A]]</answer>", INV, "no thought at all"),
    ("<think>I pick <answer>[[A]]</answer>", INV, "think never closed"),
    ("<think>x <answer>[[B]]</answer></think>", INV, "verdict only inside the thought"),
    ("<think>x <answer>[[B]]</answer></think><answer>[[A]]</answer>", A, "thought verdict ignored"),
    ("<think>x</think><answer>[[A]]</answer><answer>[[B]]</answer>", INV, "two answers disagree"),
    ("<think>x</think><answer>[[A]]</answer> so <answer>[[A]]</answer>", A, "two answers agree"),
    ("<think>x</think><answer>[[A]]", INV, "answer never closed"),
    ("<think>x</think><answer>[[A]]</answer><answer>", INV, "dangling second answer"),
    ("<think>x</think><answer>A</answer>", INV, "no brackets"),
    ("<think>x</think><answer>[A]</answer>", INV, "single brackets"),
    ("<think>x</think><answer>[[C]]</answer>", INV, "unknown letter"),
    ("<think>x</think><answer>[[A]] or [[B]]</answer>", INV, "both letters in one answer"),
    ("<think>x</think><answer>Response [[A]]</answer>", INV, "extra words in the answer"),
    ("<think>x</think><answer>[[TIE]]</answer>", INV, "pav has no tie"),
    ("<think>x</think><answer></answer>", INV, "empty answer"),
    ("<think>ünïcödé 思考 🤔</think><answer>[[B]]</answer>", B, "unicode thought"),
    ("<think>x</think><answer>［［A］］</answer>", INV, "full-width brackets are not the grammar"),
    ("<think>a</think><think>b</think><answer>[[A]]</answer>", A, "two think blocks; text after the last"),
    ("<think>x</think><answer>[[A]]</answer></think><answer>[[B]]</answer>", B, "only text after the LAST </think>"),
    ("<think>" + "blah " * 200_000 + "</think><answer>[[A]]</answer>", A, "huge input"),
    ("<think>" + "<answer>" * 10_000, INV, "huge malformed input"),
]


@pytest.mark.parametrize(("text", "expected", "why"), PAV_CASES, ids=[c[2] for c in PAV_CASES])
def test_pav(text, expected, why):
    parsed = get_format("pav").parse(text)
    assert parsed.verdict is expected, why
    assert parsed.valid == (expected is not INV)
    assert (parsed.error is None) == parsed.valid  # every invalid parse says why
    assert parsed.scores is None


PAS_CASES = [
    ("<think>x</think><score_A>7</score_A><score_B>3.5</score_B>", A, {"A": 7.0, "B": 3.5}, "A higher"),
    ("<think>x</think><score_A>2</score_A> <score_B>9/10</score_B>", B, {"A": 2.0, "B": 9.0}, "/10 suffix"),
    ("<think>x</think><score_a>5</score_a><score_b>5.0</score_b>", TIE, {"A": 5.0, "B": 5.0}, "equal is tie"),
    ("<think>x</think><score_A>0</score_A><score_B>10</score_B>", B, {"A": 0.0, "B": 10.0}, "range ends"),
    ("<think>x</think><score_A> 8 / 10 </score_A><score_B>.5</score_B>", A, {"A": 8.0, "B": 0.5}, "spaces, .5"),
    ("<think>x</think><score_B>1</score_B><score_A>2</score_A>", A, {"A": 2.0, "B": 1.0}, "B tag first"),
    ("<think>x</think><score_A>11</score_A><score_B>3</score_B>", INV, None, "above 10"),
    ("<think>x</think><score_A>-1</score_A><score_B>3</score_B>", INV, None, "negative"),
    ("<think>x</think><score_A>seven</score_A><score_B>3</score_B>", INV, None, "not a number"),
    ("<think>x</think><score_A>1e1</score_A><score_B>3</score_B>", INV, None, "exponent not allowed"),
    ("<think>x</think><score_A>7/100</score_A><score_B>3</score_B>", INV, None, "other denominators"),
    ("<think>x</think><score_A>nan</score_A><score_B>3</score_B>", INV, None, "nan"),
    ("<think>x</think><score_A>7</score_A>", INV, None, "missing score_B"),
    ("<think>x</think><score_A>7</score_A><score_B>3</score_B><score_A>8</score_A>", INV, None, "scores disagree"),
    ("<think>x</think><score_A>7</score_A><score_B>3</score_B><score_A>7.0</score_A>", A, {"A": 7.0, "B": 3.0}, "repeat agrees"),
    ("<think><score_A>1</score_A><score_B>9</score_B></think><score_A>7</score_A><score_B>3</score_B>", A,
     {"A": 7.0, "B": 3.0}, "scores in thought ignored"),
    ("<think><score_A>1</score_A><score_B>9</score_B></think>", INV, None, "scores only in thought"),
    ("<think>x<score_A>7</score_A><score_B>3</score_B>", INV, None, "think not closed"),
    ("<think>x</think><score_A>7<score_B>3</score_B>", INV, None, "score_A not closed"),
    ("<think>x</think><answer>[[A]]</answer>", INV, None, "verdict instead of scores"),
]


@pytest.mark.parametrize(("text", "expected", "scores", "why"), PAS_CASES, ids=[c[3] for c in PAS_CASES])
def test_pas(text, expected, scores, why):
    parsed = get_format("pas").parse(text)
    assert parsed.verdict is expected, why
    assert parsed.scores == scores


PAVS_CASES = [
    ("<think>x</think><score_A>7</score_A><score_B>3</score_B><answer>[[A]]</answer>", A, {"A": 7.0, "B": 3.0},
     "agreeing"),
    # The verdict comes from the answer tag even when the scores point the other way (as in J1).
    ("<think>x</think><score_A>7</score_A><score_B>3</score_B><answer>[[B]]</answer>", B, {"A": 7.0, "B": 3.0},
     "answer tag wins"),
    ("<think>x</think><score_A>5</score_A><score_B>5</score_B><answer>[[B]]</answer>", B, {"A": 5.0, "B": 5.0},
     "equal scores, verdict B"),
    ("<think>x</think><answer>[[A]]</answer>", INV, None, "scores missing"),
    ("<think>x</think><score_A>7</score_A><score_B>3</score_B>", INV, None, "answer missing"),
    ("<think>x</think><score_A>70</score_A><score_B>3</score_B><answer>[[A]]</answer>", INV, None, "bad score"),
    ("<think>x</think><score_A>7</score_A><score_B>3</score_B><answer>[[A]]</answer><answer>[[B]]</answer>",
     INV, None, "answers disagree"),
]


@pytest.mark.parametrize(("text", "expected", "scores", "why"), PAVS_CASES, ids=[c[3] for c in PAVS_CASES])
def test_pavs(text, expected, scores, why):
    parsed = get_format("pavs").parse(text)
    assert parsed.verdict is expected, why
    assert parsed.scores == scores


POS_CASES = [
    ("<think>fine</think><score>8</score>", 8.0, "integer"),
    ("<think>fine</think><score>8/10</score>", 8.0, "/10"),
    ("<think>fine</think> <SCORE> 6.25 </SCORE> done", 6.25, "case, spaces, trailing"),
    ("<think>fine</think><score>0</score>", 0.0, "zero is a valid score"),
    ("<think>fine</think><score>10.0</score>", 10.0, "ten"),
    ("<think>fine</think><score>10.5</score>", None, "above range"),
    ("<think>fine</think><score></score>", None, "empty"),
    ("<think>fine</think><score>8</score><score>9</score>", None, "two scores disagree"),
    ("<think>fine</think><score>8</score><score>8</score>", 8.0, "two scores agree"),
    ("<think><score>8</score></think>", None, "score only in thought"),
    ("<score>8</score>", None, "no thought"),
    ("<think>x</think><score_A>8</score_A>", None, "pairwise tag"),
    ("<think>x</think><answer>[[A]]</answer>", None, "verdict instead of score"),
    ("<think>x</think><score>٨</score>", None, "non-ASCII digit"),
]


@pytest.mark.parametrize(("text", "score", "why"), POS_CASES, ids=[c[2] for c in POS_CASES])
def test_pos(text, score, why):
    parsed = get_format("pos").parse(text)
    if score is None:
        assert parsed.verdict is INV, why
        assert parsed.scores is None
    else:
        assert parsed.verdict is A, why  # pointwise: the single response is "A"
        assert parsed.scores == {"A": score}


def test_thought_is_returned():
    parsed = get_format("pav").parse("<think>  weigh both  </think><answer>[[A]]</answer>")
    assert parsed.thought == "weigh both"
    assert get_format("pav").parse("no tags at all").thought is None


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_parsers_are_total(name):
    """Any string maps to one of the four verdicts: no exception, no None."""
    fmt = get_format(name)
    weird = ["", " ", "\x00", "</think>", "<think>", "<answer>", "</answer>", "[[A]]" * 3, "<" * 1000,
             "<think></think><answer>[[A]]</answer>" * 2, "\ud800", "<score>", "<score_A>"]
    for text in weird:
        assert fmt.parse(text).verdict in set(Verdict)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_parsed_pickles(name):
    parsed = get_format(name).parse("<think>x</think><score_A>1</score_A><score_B>2</score_B><answer>[[B]]</answer>")
    assert pickle.loads(pickle.dumps(parsed)) == parsed


def test_unknown_format():
    with pytest.raises(ValueError, match="unknown format 'xyz'"):
        get_format("xyz")
