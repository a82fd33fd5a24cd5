"""Every document a docstring or comment names is in the repository.

The package, examples, benchmarks and scripts refer to documentation by path
(``docs/design/conventions.rst``) or by file name (``README.md``,
``benchmarks/RESULTS.md``); a reference to a file that is not shipped is a dead end
for the reader (issue 17, point 4). Output files the examples write (lower-case ``*.md``
tables in ``examples/out/``) are not references.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(
    p
    for d in ("flexmbd", "examples", "benchmarks", "scripts", "meshes", "tests")
    for p in (ROOT / d).rglob("*.py")
    if p.name != Path(__file__).name
)
DOC_PATH = re.compile(r"\bdocs/[\w/.-]+\.(?:rst|md)\b")
MD_NAME = re.compile(r"\b([A-Z][A-Z_]+)\.md\b")  # README.md, RESULTS.md, ...


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_named_documents_exist(path):
    text = path.read_text(encoding="utf-8")
    missing = [ref for ref in DOC_PATH.findall(text) if not (ROOT / ref).exists()]
    for name in MD_NAME.findall(text):
        if not any(ROOT.glob(f"**/{name}.md")):
            missing.append(f"{name}.md")
    assert not missing, f"{path.relative_to(ROOT)} names documents not in the repository: {missing}"


def test_the_design_pages_docstrings_cite_exist():
    cited = set()
    for p in SOURCES:
        cited.update(DOC_PATH.findall(p.read_text(encoding="utf-8")))
    assert "docs/design/conventions.rst" in cited  # the reaction convention is cited
    for ref in cited:
        assert (ROOT / ref).is_file(), ref
