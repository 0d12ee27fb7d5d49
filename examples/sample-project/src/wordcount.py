"""Counts words in the files named on the command line (or stdin)."""

import sys
from collections import Counter


def count_words(text: str) -> Counter:
    return Counter(word.lower().strip(".,;:!?\"'()") for word in text.split() if word.strip())


def main(paths: list[str]) -> int:
    texts = [open(p, encoding="utf-8").read() for p in paths] if paths else [sys.stdin.read()]
    counts = count_words("\n".join(texts))
    for word, n in counts.most_common(10):
        print(f"{n:5}  {word}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
