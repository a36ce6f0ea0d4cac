"""Counting and reshaping words."""


def word_count(text):
    """Return the number of words in ``text``."""
    if not text:
        return 0
    return len(text.split(" "))


def capitalize_words(text):
    """Capitalize the first letter of every word, keeping the spacing."""
    return " ".join(word[:1].upper() + word[1:] for word in text.split(" "))


def longest_word(text):
    """Return the longest word, or an empty string."""
    words = text.split()
    if not words:
        return ""
    return max(words, key=len)
