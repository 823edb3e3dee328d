from greet import greeting


def test_english_is_the_default():
    assert greeting("Ada") == "Hello, Ada!"


def test_unknown_language_falls_back():
    assert greeting("Ada", "xx") == "Hello, Ada!"
