#!/usr/bin/env python3
"""check_spec_refs.py — every spec citation in the tree must point at a section that exists.

The specs live in docs/spec/ (docs/ARCHITECTURE.md, "Specifications"). A citation is
"docs/spec/<file>.md" optionally followed by sections: "§4.4", "§1.2–1.4", "§1.1, §1.6–1.8".
A bare "§N.M" later in the same file refers to the spec cited last before it (inside
docs/spec/ to the file itself); sections of papers are written "the paper's §5.1", "DTE §4"
or "et al. 2026, §4.2" and are skipped. A section exists when the cited file has a Markdown
heading that starts with its number ("## 4.", "### 4.4 ...", "#### 12.1 ...").

It also fails on citations of the old out-of-tree specs (a bare "drafting.md" or
"verification.md" outside docs/spec/, or "DESIGN.md").

  usage: scripts/check_spec_refs.py [ROOT]      exit 0 = all good, 1 = bad references
"""
import os
import re
import sys

SCAN_DIRS = ["engine", "harness", "datasets", "tests", "docs", "scripts", "configs", "plots"]
SCAN_FILES = ["README.md", "meson.build", "meson_options.txt"]
EXTS = (".c", ".h", ".cu", ".cuh", ".md", ".py", ".sh", ".build", ".json", ".txt", ".in", ".gp")
SELF = "scripts/check_spec_refs.py"

NUM = r"\d+(?:\.\d+)*"
MENTION = re.compile(r"(docs/spec/)?\b([A-Za-z0-9_-]+\.md)\b")
# sections right after a mention: "§4.4", " §1.2–1.4", "`§11", ", §1.6-1.8", " and §3",
# possibly across a comment line break ("verification.md\n * §3.1")
SEC_LIST = re.compile(r"(?:[\s,`*/#()\]]|and\s)*§\s*(" + NUM + r")(?:\s*[–-]\s*(" + NUM + r"))?")
BARE = re.compile(r"§\s*(" + NUM + r")(?:\s*[–-]\s*(" + NUM + r"))?")
PAPER = re.compile(r"(?:paper'?s?|DTE|Appendix|al\.(?:\s*\d{4})?,?)\s*$")
HEADING = re.compile(r"^#{1,6}\s+(" + NUM + r")\.?(?:\s|$)", re.M)
LEGACY = re.compile(r"\b(drafting\.md|verification\.md|DESIGN\.md)\b")


def sections(path, cache={}):
    if path not in cache:
        try:
            with open(path, encoding="utf-8") as f:
                cache[path] = set(HEADING.findall(f.read()))
        except OSError:
            cache[path] = None
    return cache[path]


def files(root):
    for d in SCAN_DIRS:
        for base, dirs, names in os.walk(os.path.join(root, d)):
            dirs[:] = [x for x in dirs if not x.startswith(".") and x != "fixtures"]
            for n in sorted(names):
                if n.endswith(EXTS):
                    yield os.path.relpath(os.path.join(base, n), root)
    for n in SCAN_FILES:
        if os.path.exists(os.path.join(root, n)):
            yield n


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    root = os.path.abspath(root)
    errors, n_refs = [], 0
    for rel in files(root):
        if rel == SELF:
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            text = f.read()
        in_spec = rel.startswith("docs/spec/")
        line_of = lambda pos: text.count("\n", 0, pos) + 1

        def check(spec, sec, pos):
            nonlocal n_refs
            n_refs += 1
            have = sections(os.path.join(root, spec))
            if have is None:
                errors.append(f"{rel}:{line_of(pos)}: cites {spec}, which does not exist")
            elif sec is not None and sec not in have:
                errors.append(f"{rel}:{line_of(pos)}: cites {spec} §{sec}, which has no such heading")

        for m in LEGACY.finditer(text):
            pre = text[max(0, m.start() - 10):m.start()]
            if m.group(1) == "DESIGN.md":
                errors.append(f"{rel}:{line_of(m.start())}: cites DESIGN.md (outside the tree); "
                              "cite docs/ARCHITECTURE.md")
            elif not in_spec and not pre.endswith("docs/spec/"):
                errors.append(f"{rel}:{line_of(m.start())}: cites {m.group(1)} outside the tree; "
                              f"cite docs/spec/{m.group(1)}")

        # walk mentions and bare sections in order; `context` = the spec a bare § refers to
        context = rel if in_spec else None
        covered = set()  # positions of § already resolved by a mention's list
        events = []
        for m in MENTION.finditer(text):
            name = m.group(2)
            if m.group(1):
                spec = "docs/spec/" + name
            elif in_spec and os.path.exists(os.path.join(root, "docs/spec", name)):
                spec = "docs/spec/" + name
            else:
                continue
            events.append((m.start(), "mention", spec, m))
        for m in BARE.finditer(text):
            events.append((m.start(), "bare", None, m))
        events.sort(key=lambda e: e[0])
        for pos, kind, spec, m in events:
            if kind == "mention":
                check(spec, None, pos)
                end = m.end()
                while True:
                    s = SEC_LIST.match(text, end)
                    if not s:
                        break
                    sec_pos = text.index("§", end)
                    covered.add(sec_pos)
                    for sec in filter(None, (s.group(1), s.group(2))):
                        check(spec, sec, sec_pos)
                    end = s.end()
                if not in_spec:
                    context = spec
                continue
            if pos in covered or context is None:
                continue
            line_start = text.rfind("\n", 0, pos) + 1
            if PAPER.search(text[max(line_start, pos - 40):pos]):
                continue
            for sec in filter(None, (m.group(1), m.group(2))):
                check(context, sec, pos)

    for e in errors:
        print(e)
    print(f"check_spec_refs: {n_refs} references checked, {len(errors)} bad")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
