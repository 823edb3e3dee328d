"""Greetings in a few languages."""

GREETINGS = {"en": "Hello", "fr": "Bonjour", "zh": "你好"}


def greeting(name: str, lang: str = "en") -> str:
    """The greeting for `name` in `lang`, falling back to English."""
    return f"{GREETINGS.get(lang, GREETINGS['en'])}, {name}!"
