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


def machine_line(*peers, load=None, extra=""):
    """The ``- Machine: ...`` line of a RESULTS section: processor model and count, platform,
    Python, numpy and numba versions, the ``peers`` (strings such as ``"pin 3.1.0"``),
    the load average (``load``: one value, ``(start, end)``, or None for the current one;
    the machine is shared) and today's date; ``extra`` is appended after a ``;``."""
    import datetime
    import os
    import platform

    import numba
    import numpy as np

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(x.split(":", 1)[1].strip() for x in f if x.startswith("model name"))
    except (OSError, StopIteration):
        pass
    if load is None:
        load = os.getloadavg()[0]
    avg = (
        f"load average {load[0]:.2f} / {load[1]:.2f} (start / end)"
        if isinstance(load, tuple | list)
        else f"load average {load:.2f}"
    )
    versions = ", ".join(
        (f"Python {platform.python_version()}", f"numpy {np.__version__}")
        + (f"numba {numba.__version__}",)
        + peers
    )
    line = (
        f"- Machine: {cpu}, nproc {os.cpu_count()}, {platform.platform()}; {versions}; {avg} "
        f"(shared machine); date {datetime.date.today().isoformat()}"
    )
    return line + (f"; {extra}" if extra else "")
