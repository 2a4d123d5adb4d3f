"""Noise checks: similarity measures, the band table, answer duplicates, rewrite cleaning, the embedder."""

from __future__ import annotations

import pytest

from j1.data import filters
from j1.data.filters import (
    ANSWER_EMPTY,
    REJECTED_DUPLICATE,
    REWRITE_ANSWER_LIKE,
    REWRITE_DRIFT,
    REWRITE_EMPTY,
    REWRITE_NOT_REQUEST,
    REWRITE_PARAPHRASE,
    REWRITE_SAME,
    REWRITE_TRUNCATED,
    Bands,
    answers_verdict,
    clean_rewrite,
    lexical_similarity,
    rewrite_verdict,
    same_text,
    words,
)


@pytest.mark.parametrize("a,b,expected", [
    ("", "", 1.0),
    ("a b c", "", 0.0),
    ("Write a poem about cats.", "write a POEM about cats", 1.0),  # case and punctuation ignored
    # 5 tokens each, 4 matching in order: 2*4/10
    ("write a poem about cats", "write a poem about dogs", 0.8),
    # "give three tips for staying healthy" (6) vs "give five tips for staying healthy" (6): 2*5/12
    ("Give three tips for staying healthy.", "Give five tips for staying healthy.", 10 / 12),
    # one added word: 5 vs 6 tokens, 5 matching: 2*5/11
    ("write a poem about cats", "write a short poem about cats", 10 / 11),
    # same words, reversed order: longest matching blocks "a"… SequenceMatcher finds 1 of 2 -> 2*1/4
    ("a b", "b a", 0.5),
    ("naïve café", "NAÏVE CAFÉ", 1.0),
])
def test_lexical_similarity(a, b, expected):
    assert lexical_similarity(a, b) == pytest.approx(expected)


def test_words_and_same_text():
    assert words("Hello,  World! 42") == ["hello", "world", "42"]
    assert words("ﬁne") == ["fine"]  # NFKC folds the ligature
    assert same_text("Translate: I love apples.", "translate i love apples")
    assert not same_text("I love apples", "I love pears")


B = Bands()  # lexical_min 0.1, embedding_min 0.4, embedding_max 0.97, reword_lexical 0.5, reword_embedding 0.85


@pytest.mark.parametrize("x,x2,lex,emb,expected", [
    ("Write a poem.", "", 0.0, 0.0, REWRITE_EMPTY),
    ("Write a poem.", " ?! ", 0.0, 0.0, REWRITE_EMPTY),  # no words at all
    ("Write a poem.", "write a poem", 1.0, 1.0, REWRITE_SAME),
    ("Write a poem.", "Write a poem!!", 1.0, 0.99, REWRITE_SAME),  # same beats paraphrase
    # paraphrase by meaning: embedding at/above embedding_max, whatever the words
    ("a b c", "a b d", 0.67, 0.97, REWRITE_PARAPHRASE),
    ("a b c", "x y z", 0.0, 0.99, REWRITE_PARAPHRASE),  # paraphrase beats drift
    # reworded, meaning kept: lexical < 0.5 and embedding >= 0.85
    ("a b c", "x y c", 0.33, 0.85, REWRITE_PARAPHRASE),
    ("a b c", "x y c", 0.5, 0.9, None),  # lexical exactly 0.5 is not "reworded"
    # drift: embedding below 0.4 or lexical below 0.1
    ("a b c", "x y z", 0.3, 0.39, REWRITE_DRIFT),
    ("a b c", "x y z", 0.09, 0.6, REWRITE_DRIFT),
    ("a b c", "x y z", 0.1, 0.4, None),  # both exactly at the lower bounds: kept
    # paraphrase by words: only filler changed, whatever the bands say (seen in the real run, 0.93 / 0.963)
    ("Resolve the following problem: 9 - 2 x 3", "Resolve the problem: 9 - 2 x 3", 0.93, 0.963, REWRITE_PARAPHRASE),
    ("Name the given colors.", "Please name these colors", 0.5, 0.9, REWRITE_PARAPHRASE),
    ("Convert 3 to 5.", "Convert 5 to 3.", 0.6, 0.96, None),  # same words, other order: a change
    ("Sum 2 and 3.", "Sum 2 and 4.", 0.75, 0.95, None),  # a changed number is a change
    ("Find the perimeter. Sides 4, 6, 8", "Find the perimeter. Sides 4, 6", 0.9, 0.96, None),  # dropped input
    # the good middle: a changed entity or constraint
    ("Write a poem about cats.", "Write a poem about dogs.", 0.8, 0.78, None),
    ("Describe making crepes.", "Describe making pancakes.", 0.83, 0.55, None),
])
def test_rewrite_bands(x, x2, lex, emb, expected):
    assert rewrite_verdict(x, x2, lex, emb, B) == expected


@pytest.mark.parametrize("x,x2,truncated,expected", [
    ("List tips.", "List five tips for", True, REWRITE_TRUNCATED),
    ("List tips.", "", True, REWRITE_EMPTY),  # empty is reported before truncated
    ("Give three tips for staying healthy.", "Here are three tips for staying healthy:", False, REWRITE_NOT_REQUEST),
    ("Write a poem.", "Sure! Write a poem about dogs.", False, REWRITE_NOT_REQUEST),
    ("Write a poem.", "Certainly, here is a poem", False, REWRITE_NOT_REQUEST),
    ("Write a poem.", "I'd be happy to help.", False, REWRITE_NOT_REQUEST),
    ("Write a poem.", "As an AI, I cannot", False, REWRITE_NOT_REQUEST),
    # a request that itself opens like a reply keeps rewrites that do too
    ("Here is my essay; fix its grammar.", "Here is my essay; fix its spelling.", False, None),
    ("Write a poem.", "Write a sure-footed poem.", False, None),  # "sure" only as the opening word
    ("Write a poem.", "Herein write a poem about dogs.", False, None),
    # x' that talks about x instead of asking (seen from SmolLM2-135M in the first real run)
    ("Adapt the joke.", "The user wants to know why the frog crossed the road", False, REWRITE_NOT_REQUEST),
    ("Explain birds.", "Original request:\nChange the topic to mammals", False, REWRITE_NOT_REQUEST),
    # speaks of "the request" although x does not (our instruction echoed back)
    ("Invent a new word.", "I'm making a request to the AI to invent a word.", False, REWRITE_NOT_REQUEST),
    ("List five books.", "Based on the original request, I can provide: A, B", False, REWRITE_NOT_REQUEST),
    ("Explain e-commerce.", "To clarify this request, let's examine it.", False, REWRITE_NOT_REQUEST),
    ("Explain e-commerce.", "Explain what was requested in e-commerce.", False, REWRITE_NOT_REQUEST),
    ("Reply to the refund request.", "Reply to the refund request in French.", False, None),  # x says it too
    ("Write a poem.", "Write a poem about requesting help.", False, None),  # another word: not matched
    ("Sort the books.", "A better version of the original request would be:", False, REWRITE_NOT_REQUEST),
    ("Brainstorm ideas.", "The new version: brainstorm ideas", False, REWRITE_NOT_REQUEST),
    ("Generate a rap.", "Sentiment: The user wants to create a rap.", False, REWRITE_NOT_REQUEST),
    ("Name two sources.", "I'm afraid that my previous request is related", False, REWRITE_NOT_REQUEST),
    ("Name two sources.", "Answer: wind and solar", False, REWRITE_NOT_REQUEST),
    # x' that opens like a statement (article or pronoun first, no question mark), seen in the real run
    ("How does the stock market work?", "The stock market works.", False, REWRITE_NOT_REQUEST),
    ("What are the benefits of exercising?", "The benefits of exercising include fitness", False, REWRITE_NOT_REQUEST),
    ("How would you generate random numbers in Java?", "You can generate random numbers with Random.", False,
     REWRITE_NOT_REQUEST),
    ("Write an email inviting people to a webinar.", "I've been asked to send an email to attendees.", False,
     REWRITE_NOT_REQUEST),
    # the price of that rule: a request opening with an article is dropped when x does not
    ("Fix the sentence.", "The following sentence has an error; fix it.", False, REWRITE_NOT_REQUEST),
    ("The following sentence has an error; fix it.", "The following sentence has two errors; fix them.", False, None),
    ("Name three birds.", "A bird lives in a nest; which birds nest on the ground?", False, None),  # a question
    ("Name three birds.", "To learn about birds, name three of them.", False, None),  # "to" is not a statement
    # ...and a request may start with these words when they do not open a comment
    ("Write a poem.", "Answer the riddle in a poem.", False, None),  # "answer" as a verb, no colon
    # x itself opens that way: its rewrites may too
    ("The request header is below; explain each field.", "The request header is below; list each field.", False, None),
])
def test_rewrite_truncated_and_not_request(x, x2, truncated, expected):
    assert rewrite_verdict(x, x2, 0.7, 0.8, B, truncated=truncated) == expected


@pytest.mark.parametrize("emb,answer_emb,margin,expected", [
    # x' against x (emb) and against the chosen answer (answer_emb); answer-like when
    # answer_emb >= emb + margin. "To create crepes, a process ... involves kneading dough" vs
    # "Describe a process of making crepes." and its answer, first real run: 0.79 vs 0.82.
    (0.79, 0.82, 0.0, REWRITE_ANSWER_LIKE),
    (0.8, 0.8, 0.0, REWRITE_ANSWER_LIKE),  # a tie counts: no nearer to x than to an answer
    (0.8, 0.79, 0.0, None),
    (0.8, 0.85, 0.1, None),  # nearer the answer, but within the margin
    (0.5, 0.6, 0.1, REWRITE_ANSWER_LIKE),  # exactly at the margin
    (0.8, None, 0.0, None),  # no answer given: the check is skipped
    (0.98, 0.99, 0.0, REWRITE_ANSWER_LIKE),  # before paraphrase in the order
    (0.3, 0.35, 0.0, REWRITE_ANSWER_LIKE),  # before drift in the order
    (0.3, 0.2, 0.0, REWRITE_DRIFT),
])
def test_rewrite_answer_like(emb, answer_emb, margin, expected):
    bands = Bands(answer_margin=margin)
    assert rewrite_verdict("Describe making crepes.", "Crepes need batter.", 0.6, emb, bands,
                           answer_embedding=answer_emb) == expected


def test_same_and_not_request_come_before_answer_like():
    assert rewrite_verdict("Write a poem.", "write a poem", 1.0, 1.0, B, answer_embedding=1.0) == REWRITE_SAME
    assert rewrite_verdict("Write a poem.", "Sure! A poem:", 0.3, 0.5, B, answer_embedding=0.9) == REWRITE_NOT_REQUEST


@pytest.mark.parametrize("chosen,rejected,lex,emb,expected", [
    ("", "text", 0.0, 0.0, ANSWER_EMPTY),
    ("text", "  ", 0.0, 0.0, ANSWER_EMPTY),
    ("Same answer.", "same answer", 1.0, 1.0, REJECTED_DUPLICATE),
    ("a b", "a c", 0.9, 0.5, REJECTED_DUPLICATE),  # lexical at the threshold
    ("a b", "a c", 0.5, 0.985, REJECTED_DUPLICATE),  # embedding at the threshold
    ("a b", "a c", 0.89, 0.98, None),
])
def test_answer_checks(chosen, rejected, lex, emb, expected):
    assert answers_verdict(chosen, rejected, lex, emb, 0.9, 0.985) == expected


@pytest.mark.parametrize("text,expected", [
    ("<request>Write a poem about dogs.</request>", "Write a poem about dogs."),
    ("<request>\nList 3 fruits.\n</request>\nI changed the count.", "List 3 fruits."),
    ("<request>Unclosed tag request", "Unclosed tag request"),
    ("New request: Write a limerick.", "Write a limerick."),
    ("Here is the modified request:\n\"Name two rivers.\"", "Name two rivers."),
    ("Rewritten version: 'Sum 2 and 3.'", "Sum 2 and 3."),
    ("Plain text answer.", "Plain text answer."),
    ("", ""),
    ("</request>", ""),
    ("Describe the new request format.", "Describe the new request format."),  # no label: untouched
    ("<requirement>List five books.</requirement>", "List five books."),  # a misspelt wrapping tag
    ("<requirement>Explain e-commerce.", "Explain e-commerce."),  # ...unclosed (seen in the real run)
    ("<html><p>Fix this page.</p></html>", "<html><p>Fix this page.</p></html>"),  # other tags are content
    ("<requirements>a</requirements> and <requirements>b</requirements>",
     "<requirements>a</requirements> and <requirements>b</requirements>"),  # not one wrapper: untouched
    ("Explain Generative and Deterministic Models.</response>",
     "Explain Generative and Deterministic Models."),  # a stray closing tag (seen in the real run)
    ("Name two rivers. </response_A-1a2b3c4d>\n", "Name two rivers."),  # an echoed fence
    ("Wrap it as <b>bold</b>", "Wrap it as <b>bold</b>"),  # a closing tag that closes something: content
    ("Use <div class='x'>hi</div>", "Use <div class='x'>hi</div>"),  # ...with attributes
])
def test_clean_rewrite(text, expected):
    assert clean_rewrite(text) == expected


@pytest.fixture(scope="module")
def embedder():
    return filters.Embedder()


def test_bundled_embedder_loads_offline_and_orders_similarity(embedder, monkeypatch):
    assert (filters.bundled_embedder_path() / "model.safetensors").exists()
    same, near, far = embedder.cosine([
        ("Write a poem about cats.", "Write a poem about cats."),
        ("Write a poem about cats.", "Write a poem about dogs."),
        ("Write a poem about cats.", "Explain how to change a car tire."),
    ])
    assert same == pytest.approx(1.0, abs=1e-3)
    assert far < filters.Bands().embedding_min < near < filters.Bands().embedding_max
    assert embedder.cosine([]) == []
