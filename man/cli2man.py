#!/usr/bin/env python3
"""Generate the scdoc sources of the man pages from docs/CLI.md (the one source of both).

    cli2man.py docs/CLI.md OUTDIR VERSION src/cli/main.c

docs/CLI.md is written in a small markdown subset: "# title", the synopsis code block, then one
"## NAME" section per command (a command is a NAME the synopsis block starts a line
"raidkit NAME" with) and other "##" sections; "###" subsections; paragraphs; tables; fenced or
4-space-indented code; "- " lists. Each command section becomes raidkit-NAME(8); everything else
(the introduction, the non-command sections: exit status, environment, files, ...) becomes
raidkit(8). The NAME line of a page is the command's line of `raidkit --help` (main.c). OUTDIR gets raidkit.8.scd and raidkit-NAME.8.scd; scdoc(1) turns them into roff.
Exit status 1 with a message naming the line when the markdown is outside the subset.
"""
import os
import re
import sys

CODE = re.compile(r"`([^`]+)`")
BOLD = re.compile(r"\*\*([^*]+)\*\*")
ITAL = re.compile(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])")
LINK = re.compile(r"\[([^\]]+)\]\([^)]+\)")


def esc(s):
    """Escape scdoc's formatting characters in literal text."""
    return s.replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_")


def inline(s):
    """Markdown inline markup to scdoc: `code` and **bold** -> bold, *em* -> underline."""
    s = s.replace("\\|", "|")
    out, pos = [], 0
    for m in CODE.finditer(s):
        out.append(prose(s[pos:m.start()]))
        out.append("*" + esc(m.group(1)) + "*")
        pos = m.end()
    out.append(prose(s[pos:]))
    return "".join(out)


def prose(s):
    s = LINK.sub(r"\1", s)
    marks = []

    def keep(fmt):
        def f(m):
            marks.append(fmt % esc(m.group(1)))
            return "\0%d\0" % (len(marks) - 1)
        return f

    s = BOLD.sub(keep("*%s*"), s)
    s = ITAL.sub(keep("_%s_"), s)
    s = esc(s)
    return re.sub(r"\0(\d+)\0", lambda m: marks[int(m.group(1))], s)


def table(rows):
    """A markdown table: the first column as a term, the others as its indented description."""
    out = []
    cells = [split_row(r) for r in rows]
    head, body = cells[0], cells[2:]
    for c in body:
        out.append(inline(c[0]))
        for i, text in enumerate(c[1:], 1):
            label = "" if len(c) == 2 else inline(head[i]) + ": "
            if i > 1:
                out.append("")
            out.append("\t" + label + inline(text))
        out.append("")
    return out


def split_row(r):
    r = r.strip().strip("|")
    return [c.strip() for c in re.split(r"(?<!\\)\|", r)]


def body(lines, where):
    """Convert the markdown lines of one section to scdoc lines."""
    out, i = [], 0
    while i < len(lines):
        ln = lines[i]
        if ln.startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            if j == len(lines):
                sys.exit("cli2man: %s: unterminated code block" % where)
            out += ["```"] + lines[i + 1:j] + ["```", ""]
            i = j + 1
        elif ln.startswith("    ") and (i == 0 or not lines[i - 1].strip()):
            j = i
            while j < len(lines) and (lines[j].startswith("    ") or not lines[j].strip()):
                j += 1
            block = [l[4:] for l in lines[i:j]]
            while block and not block[-1].strip():
                block.pop()
            out += ["```"] + block + ["```", ""]
            i = j
        elif ln.startswith("|"):
            j = i
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            out += table(lines[i:j])
            i = j
        elif ln.startswith("### "):
            out += ["## " + esc(ln[4:].strip().upper()), ""]
            i += 1
        elif ln.startswith("- "):
            item = [ln[2:]]
            i += 1
            while i < len(lines) and lines[i].startswith("  ") and lines[i].strip():
                item.append(lines[i].strip())
                i += 1
            out.append("- " + inline(" ".join(item)))
            if i < len(lines) and not lines[i].startswith("- "):
                out.append("")
        elif not ln.strip():
            if out and out[-1] != "":
                out.append("")
            i += 1
        else:
            para = []
            while i < len(lines) and lines[i].strip() and not re.match(r"(```|\||#|- |    )",
                                                                       lines[i]):
                para.append(lines[i].strip())
                i += 1
            text = " ".join(para)
            # Notes for developers stay in docs/CLI.md: the paragraph about this generator and
            # pointers into the source tree, "(src/...)" or "(`src/...`)".
            if text.startswith("This file is the source of the man pages"):
                continue
            text = re.sub(r" \(`?src/[^()]*\)", "", text)
            out += [inline(text), ""]
    return out


def synopsis_entries(block):
    """The synopsis code block's lines grouped per `raidkit NAME ...` entry."""
    entries = []
    for ln in block:
        m = re.match(r"raidkit (\w[\w-]*)", ln)
        if m and not ln.startswith("raidkit --"):
            entries.append((m.group(1), [ln]))
        elif entries and ln.startswith(" "):
            entries[-1][1].append(ln)
        else:
            entries.append(("", [ln]))
    return entries


def first_sentence(lines):
    text = " ".join(l.strip() for l in lines if l.strip() and not l.startswith(("|", "`", " ")))
    text = LINK.sub(r"\1", text).replace("`", "").replace("**", "")
    m = re.match(r"(.+?\.)(\s|$)", text)
    s = (m.group(1) if m else text)[:200].rstrip(".")
    return s[0].lower() + s[1:] if s else "raidkit command"


def summaries(main_c):
    """The one-line command summaries of `raidkit --help` (the Commands: list in main.c)."""
    out = {}
    for m in re.finditer(r'"  (\w[\w-]*) +([^"\\]+)\\n"', open(main_c, encoding="utf-8").read()):
        out.setdefault(m.group(1), m.group(2).strip())
    return out


def main():
    src, outdir, version, main_c = sys.argv[1:5]
    summary = summaries(main_c)
    lines = open(src, encoding="utf-8").read().split("\n")
    if not lines[0].startswith("# "):
        sys.exit("cli2man: %s:1: expected '# title'" % src)
    sections, cur = [("", [])], None
    for ln in lines[1:]:
        if ln.startswith("## "):
            sections.append((ln[3:].strip(), []))
        else:
            sections[-1][1].append(ln)
    intro = sections[0][1]
    start = next(i for i, l in enumerate(intro) if l.startswith("```"))
    end = next(i for i, l in enumerate(intro) if i > start and l.startswith("```"))
    syn = synopsis_entries(intro[start + 1:end])
    commands = {name for name, _ in syn if name}
    footer = 'raidkit %s; generated from docs/CLI.md' % version
    pages, main_sections = [], []
    for title, sec in sections[1:]:
        name = title.split()[0] if title else ""
        if title == name and name in commands:
            pages.append((name, sec))
        else:
            main_sections.append((title, sec))
    os.makedirs(outdir, exist_ok=True)
    see = ", ".join("*raidkit-%s*(8)" % n for n, _ in pages)
    for name, sec in pages:
        entry = [l for n, ls in syn if n == name for l in ls]
        with open(os.path.join(outdir, "raidkit-%s.8.scd" % name), "w") as f:
            w = lambda s="": f.write(s + "\n")
            w('raidkit-%s(8) "%s"' % (name, footer))
            w()
            w("# NAME")
            w()
            w("raidkit-%s - %s" % (name, esc(summary.get(name) or first_sentence(sec))))
            w()
            w("# SYNOPSIS")
            w()
            w("```")
            for l in entry:
                w(l)
            w("```")
            w()
            w("# DESCRIPTION")
            w()
            for l in body(sec, "%s: ## %s" % (src, name)):
                w(l)
            w("# SEE ALSO")
            w()
            w("*raidkit*(8), %s" % see)
    with open(os.path.join(outdir, "raidkit.8.scd"), "w") as f:
        w = lambda s="": f.write(s + "\n")
        w('raidkit(8) "%s"' % footer)
        w()
        w("# NAME")
        w()
        w("raidkit - software RAID volumes over member files and block devices, served over NBD")
        w()
        w("# SYNOPSIS")
        w()
        w("```")
        for l in intro[start + 1:end]:
            w(l)
        w("```")
        w()
        w("# DESCRIPTION")
        w()
        for l in body(intro[:start] + intro[end + 1:], src):
            w(l)
        w("# COMMANDS")
        w()
        for name, sec in pages:
            w("*%s*" % name)
            w("\t%s; see *raidkit-%s*(8)." % (esc(summary.get(name) or first_sentence(sec)), name))
            w()
        for title, sec in main_sections:
            w("# " + esc(title.upper()))
            w()
            for l in body(sec, "%s: ## %s" % (src, title)):
                w(l)
        w("# SEE ALSO")
        w()
        w(see + ", *nbdinfo*(1), *nbdcopy*(1), *nbdfuse*(1), *mdadm*(8)")


if __name__ == "__main__":
    main()
