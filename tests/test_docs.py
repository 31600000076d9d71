"""The documentation runs: every ```python block of README.md and docs/*.md is executed, each file's blocks
in order in one namespace (a later block may use an earlier one's names), in a temporary directory; a
block preceded by a ``<!-- not run: reason -->`` line is left out, visibly. Every relative link of those
pages and of benchmarks/README.md names a file that exists and, with an anchor into a Markdown file, a
heading of it (GitHub's anchors)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINKED = [*PAGES, ROOT / "benchmarks" / "README.md"]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
NOT_RUN = re.compile(r"<!--\s*not run:\s*(\S.*?)\s*-->\s*$")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def python_blocks(path):
    """[(line, code, reason it is not run or None)] of the file's ```python blocks."""
    text = path.read_text()
    blocks = []
    for m in FENCE.finditer(text):
        if m.group(1) != "python":
            continue
        before = [line for line in text[: m.start()].splitlines() if line.strip()]
        marker = NOT_RUN.match(before[-1]) if before else None
        if before and "not run" in before[-1] and not marker:
            raise ValueError(f"{path.name}: the marker {before[-1]!r} gives no reason (<!-- not run: reason -->)")
        blocks.append((text.count("\n", 0, m.start(2)) + 1, m.group(2), marker.group(1) if marker else None))
    return blocks


def anchors(path):
    """GitHub's anchors of a Markdown file's headings: lower case, punctuation dropped, spaces to hyphens,
    a repeated heading numbered -1, -2, ..."""
    seen, out = {}, set()
    for heading in re.findall(r"^#{1,6}\s+(.*?)\s*#*\s*$", FENCE.sub("", path.read_text()), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        out.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return out


def links(path):
    """[(target, anchor)] of the relative links of a Markdown file, outside code blocks and code spans."""
    text = re.sub(r"`[^`\n]*`", "", FENCE.sub("", path.read_text()))
    out = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:, ...
            continue
        file, _, anchor = target.partition("#")
        out.append((file, anchor))
    return out


@pytest.mark.parametrize("path", [p for p in PAGES if python_blocks(p)], ids=lambda p: p.name)
def test_snippets_run(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # snippets that write files write them here
    namespace = {"__name__": f"docs_{path.stem}"}
    for line, code, reason in python_blocks(path):
        if reason is None:
            exec(compile(code, f"{path.relative_to(ROOT)}:{line}", "exec"), namespace)


def test_the_front_page_runs_code_and_every_block_left_out_says_why():
    """Blocks left out are the exception (a GPU, hours, an excerpt of the library's source), each with its reason."""
    assert any(reason is None for _, _, reason in python_blocks(ROOT / "README.md"))
    for path in PAGES:
        python_blocks(path)  # raises on a marker without a reason


@pytest.mark.parametrize("path", LINKED, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path):
    broken = []
    for file, anchor in links(path):
        target = (path.parent / file).resolve() if file else path
        if not target.exists():
            broken.append(f"{file}: no such file")
        elif anchor and target.suffix == ".md" and anchor not in anchors(target):
            broken.append(f"{file}#{anchor}: no such heading in {target.relative_to(ROOT)}")
    assert not broken, f"{path.relative_to(ROOT)}: {broken}"


def test_the_link_checker_finds_a_broken_link_and_anchor(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A title\n\n## Its `part`: one\n\n[ok](#its-part-one) [bad](#nothing) [gone](none.md)\n")
    assert anchors(page) == {"a-title", "its-part-one"}
    assert links(page) == [("", "its-part-one"), ("", "nothing"), ("none.md", "")]
