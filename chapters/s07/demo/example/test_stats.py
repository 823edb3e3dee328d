from stats import mean, spread


def test_mean():
    assert mean([1, 2, 3, 4]) == 2.5


def test_spread():
    assert spread([3, 1, 4, 1, 5]) == 4
