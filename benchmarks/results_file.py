"""The one writer of ``benchmarks/RESULTS.md``: every benchmark's ``--write`` replaces its
own marked section (``<!-- name:start -->`` ... ``<!-- name:end -->``) and keeps the rest.
"""

from pathlib import Path

RESULTS = Path(__file__).resolve().with_name("RESULTS.md")


def markers(name):
    """``(start, end)`` HTML comments that delimit the section ``name``."""
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def replace_section(text, start, end, path=RESULTS):
    """Put ``text`` between the markers ``start`` and ``end`` of ``path`` (the markers and
    everything between them replaced; appended with its markers where the file has no such
    section). ``text`` without its own markers gets them. Returns the path."""
    path = Path(path)
    block = text if text.startswith(start) else f"{start}\n{text}\n{end}"
    old = path.read_text() if path.exists() else "# Benchmark results\n"
    if start in old and end in old:
        new = old[: old.index(start)] + block + old[old.index(end) + len(end) :]
    else:
        new = old.rstrip("\n") + "\n\n" + block + "\n"
    path.write_text(new)
    return path
