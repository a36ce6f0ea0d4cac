"""textkit: tiny text utilities (the example repository bundled with dei)."""

from .words import capitalize_words, word_count

__all__ = ["capitalize_words", "word_count"]
