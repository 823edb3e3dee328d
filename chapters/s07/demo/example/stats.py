"""Small statistics helpers for the weekly report."""


def mean(values):
    """The arithmetic mean of values."""
    return sum(values) / len(values)


def median(values):
    """The middle value of values."""
    values.sort()
    return values[len(values) // 2]


def spread(values):
    """The difference between the largest and the smallest value."""
    return max(values) - min(values)
