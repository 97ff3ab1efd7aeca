"""Reading kernel.explain() text in tests: one entry (a tile op's or loop's line and its
indented reasons)."""


def entry(text, what):
    """The lines of the first entry whose header contains `what`."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("line ") and what in line:
            out = [line]
            for nxt in lines[i + 1:]:
                if not nxt.startswith("    "):
                    break
                out.append(nxt)
            return "\n".join(out)
    raise AssertionError(f"no entry for {what!r} in:\n{text}")
