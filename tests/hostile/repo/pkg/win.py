def banner():
    """Say hello."""
    return "hello"
