from textkit import capitalize_words, word_count


def test_word_count_simple():
    assert word_count("one two three") == 3


def test_word_count_empty():
    assert word_count("") == 0


def test_capitalize_words():
    assert capitalize_words("hello world") == "Hello World"
