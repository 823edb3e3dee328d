"""A tiny command-line tool that greets people listed in a JSON file."""

import json
import sys

from greet import greeting


def main(path: str) -> None:
    with open(path) as f:
        people = json.load(f)["people"]
    for person in people:
        print(greeting(person["name"], person.get("lang", "en")))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "people.json")
