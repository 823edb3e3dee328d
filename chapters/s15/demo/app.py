VERSION = "1.2"


def greet(name):
    return f"Hello, {name}!"
