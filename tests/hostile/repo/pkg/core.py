"""Core helpers."""


def parse_size(text):
    """Parse '10k' style sizes."""
    text = text.strip()
    if text.endswith("k"):
        return int(text[:-1]) * 1000
    return int(text)


def clamp(x, lo, hi):
    """Clamp x into [lo, hi]."""
    return max(lo, min(x, hi))
