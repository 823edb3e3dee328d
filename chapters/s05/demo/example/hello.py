def greet(name):
    return "Hello, " + name + "!"


def add(a, b):
    return a + b


print(greet("World"))
print(add(2, 3))
