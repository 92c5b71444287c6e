#!/usr/bin/env python3
"""check_layout — the source tree's shape, checked by every `make test`.

    check_layout.py --src SRC --build BUILD [--self-test] [--only RULE]

The rules (docs/architecture.md, "What the build and the tests enforce"):

  includes  No include cycle between modules. A module is x.c with its x.h
            (and x_int.h, its private header): report.c including
            report_html.h while report_html.c includes report.h is a cycle.
            Every project header is included by its folder-qualified name
            ("report/report.h", "common/buf.h"), and a private header
            (x_int.h) only from its own folder (and from tests).
  calls     No call cycle between files. From the object files of BUILD (the
            test build), `nm` gives each file's defined and undefined global
            symbols; A -> B when A uses a symbol B defines; a strongly
            connected component of two files or more is a cycle, printed with
            the symbols on each edge. A component listed in ALLOWED_CYCLES
            (the daemon's; stage 2 breaks it) passes while it stays exactly
            as listed.
  lines     No source file over 800 lines outside tests/, bench/ and docs/
            but those on ALLOWED_LONG (stage 2 splits them). A listed file that
            has come under the limit must leave the list.
  kinds     A task kind is tested only through its row of the task-kind
            table (common/taskkind.h): no `==`/`!=` against a
            KFLEET__TASK_KIND__ value and no `case` of one in coordinator/,
            agent/ or common/ outside the table's own files. Naming a kind to
            make a task of it, or in a handler table's row, is fine.
  agent     `kfleet` links no agent code: its binary defines none of the
            symbols that libkfagent.a and libkfrunner.a define, and (with the
            Makefile generator) its link line names neither.
  forks     A child forked by the agent or `kfleet run` (both have other
            threads) calls nothing that may take a lock before its exec
            (tests/layout/forks.py says which calls are allowed, and which
            files' children do not exec, by design).
  providers No file outside a provider's own files names the provider (its
            name as a word or identifier part in code, comments aside):
            the rest calls through its row (tests/layout/providers.py says
            what "names" means and lists each provider's files).

Each broken rule prints what and where; the exit status is the number of
rules broken. --self-test first runs each rule's core on planted faults and
fails if one goes unseen. Needs python3, git and binutils' nm.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import forks  # noqa: E402  (beside this script)
import providers  # noqa: E402

LIMIT = 800

# Files over LIMIT that are allowed to be: none. A new one fails; the list
# stays as the place to name an exception, with its reason, if one is ever
# needed.
ALLOWED_LONG = set()

# Call cycles that remain, each allowed exactly as listed (one that grows or
# shrinks fails until the list says so). None: the daemon's loop hands the
# turn's transaction and send queue (daemon/turn.c) and the allow list
# (daemon/auth.c) to the scheduler and the control handlers, which no longer
# call back into the loop.
ALLOWED_CYCLES = []

# The folders whose code is checked, and the name each is included by.
CODE_TOPS = ("coordinator", "agent", "common")
# Other folders whose includes of project headers must be qualified too; their
# own headers, beside them, are included bare.
CLIENT_DIRS = ("tests/unit", "tests/fuzz", "bench/coord")
LONG_SKIP = ("tests/", "bench/", "docs/")
LONG_EXT = (".c", ".h", ".cu", ".cuh", ".py", ".sh", ".proto", ".cmake", ".txt")

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


# ---- graphs ----

def sccs(graph):
    """The strongly connected components of {node: set(nodes)} with more
    than one node (or a self-loop), each sorted; Tarjan's, iteratively."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        work = [(root, iter(sorted(graph.get(root, ()))))]
        while work:
            node, it = work[-1]
            pushed = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    pushed = True
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            if pushed:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1 or node in graph.get(node, ()):
                    out.append(sorted(comp))
    return out


def cycle_in(graph, comp):
    """One shortest cycle through comp[0] inside the component, as a list
    of nodes whose first and last are the same."""
    members, start = set(comp), comp[0]
    prev, queue = {start: None}, [start]
    while queue:
        node = queue.pop(0)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in members:
                continue
            if nxt == start:
                path = [node]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if nxt not in prev:
                prev[nxt] = node
                queue.append(nxt)
    return comp + [comp[0]]


def report_cycles(kind, graph, why, allowed=(), say=print):
    """Says each cycle that is not exactly one of allowed, and each allowed
    cycle that is not there as it is listed; returns how many."""
    bad = 0
    seen = set()
    for comp in sccs(graph):
        if frozenset(comp) in allowed:
            seen.add(frozenset(comp))
            say(f"layout: {kind} cycle allowed for now (stage 2): {', '.join(comp)}")
            continue
        bad += 1
        cyc = cycle_in(graph, comp)
        what = "modules (x.c + x.h)" if kind == "include" else "files"
        say(f"layout: {kind} cycle between {len(comp)} {what}: " + " -> ".join(cyc))
        for a, b in zip(cyc, cyc[1:]):
            detail = why(a, b)
            if detail:
                say(f"    {a} -> {b}: {detail}")
        rest = [c for c in comp if c not in cyc]
        if rest:
            say(f"    (the same cycle also takes in: {', '.join(rest)})")
    for a in allowed:
        if a not in seen:
            say(f"layout: the allowed {kind} cycle {', '.join(sorted(a))} is not there as "
                f"listed (gone or smaller): update ALLOWED_CYCLES in tests/layout/check_layout.py")
            bad += 1
    return bad


# ---- includes ----

def folder_names(src):
    """Include name -> folder, for every folder of CODE_TOPS that holds
    headers: the folder's last component (coordinator/report -> report)."""
    names = {}
    for top in CODE_TOPS:
        for dirpath, _, files in os.walk(os.path.join(src, top)):
            if any(f.endswith(".h") for f in files):
                rel = os.path.relpath(dirpath, src)
                names[os.path.basename(rel)] = rel
    return names


def module_of(path):
    base = os.path.splitext(path)[0]
    return base[: -len("_int")] if base.endswith("_int") else base


def scan_includes(src, files):
    """[(file, written name, resolved project header or None)]"""
    names = folder_names(src)
    known = set()
    for top in CODE_TOPS:
        for dirpath, _, fs in os.walk(os.path.join(src, top)):
            known.update(os.path.relpath(os.path.join(dirpath, f), src) for f in fs)
    out = []
    for f in files:
        with open(os.path.join(src, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for name in INCLUDE_RE.findall(text):
            head, _, rest = name.partition("/")
            target = None
            if rest and head in names and os.path.join(names[head], rest) in known:
                target = os.path.join(names[head], rest)
            else:
                beside = os.path.normpath(os.path.join(os.path.dirname(f), name))
                if beside in known:
                    target = beside
            out.append((f, name, target))
    return out, {v: k for k, v in names.items()}


def code_files(src, dirs, exts=(".c", ".h")):
    for top in dirs:
        for dirpath, _, names in os.walk(os.path.join(src, top)):
            for n in sorted(names):
                if n.endswith(exts):
                    yield os.path.relpath(os.path.join(dirpath, n), src)


def check_includes(src):
    bad = 0
    files = list(code_files(src, CODE_TOPS))
    incs, include_name = scan_includes(src, files + list(code_files(src, CLIENT_DIRS)))
    graph, why = {module_of(f): set() for f in files}, {}
    for f, name, target in incs:
        if target is None:
            continue  # a system, generated (proto/) or kernel ABI header, or a test's own
        folder = os.path.dirname(target)
        want = f"{include_name[folder]}/{os.path.basename(target)}"
        if name != want:
            print(f'layout: {f} includes "{name}": write "{want}"')
            bad += 1
        if target.endswith("_int.h") and os.path.dirname(f) != folder and \
                not f.startswith("tests/"):
            print(f'layout: {f} includes {target}, the private header of {folder}/')
            bad += 1
        a, b = module_of(f), module_of(target)
        if f.startswith(CODE_TOPS) and a != b:
            graph[a].add(b)
            why.setdefault((a, b), f'{f} includes "{name}"')
    return bad + report_cycles("include", graph, lambda a, b: why.get((a, b)))


# ---- calls ----

def objects(build, src):
    """(source relative to src, object file) of every object built from
    CODE_TOPS: the project's own code, not tests, bench or protobuf."""
    with open(os.path.join(build, "compile_commands.json")) as fh:
        cmds = json.load(fh)
    out = []
    for c in cmds:
        f = os.path.relpath(c["file"], src)
        if not f.startswith(tuple(t + "/" for t in CODE_TOPS)):
            continue
        args = shlex.split(c["command"]) if "command" in c else c["arguments"]
        obj = args[args.index("-o") + 1]
        out.append((f, os.path.normpath(os.path.join(c["directory"], obj))))
    return sorted(out)


def nm_symbols(path):
    """(defined, undefined) global symbols of an object, archive or binary."""
    res = subprocess.run(["nm", "-g", path], capture_output=True, text=True, check=True)
    defined, undefined = set(), set()
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in ("U", "w", "v"):
            undefined.add(parts[1])
        elif len(parts) == 3 and parts[1] not in ("U", "w", "v"):
            defined.add(parts[2])
    return defined, undefined


def call_graph(symbols):
    """symbols: {file: (defined, undefined)} -> (graph, the symbols of each edge)."""
    owner = {}
    for f, (d, _) in sorted(symbols.items()):
        for s in d:
            owner.setdefault(s, f)
    graph, why = {}, {}
    for f, (_, u) in symbols.items():
        graph.setdefault(f, set())
        for s in sorted(u):
            g = owner.get(s)
            if g and g != f:
                graph[f].add(g)
                why.setdefault((f, g), []).append(s)
    return graph, why


def check_calls(build, src):
    objs = objects(build, src)
    missing = [o for _, o in objs if not os.path.exists(o)]
    if not objs or missing:
        print(f"layout: calls: {len(missing)} of {len(objs)} object files missing under "
              f"{build} (e.g. {missing[:1]}): build it first")
        return 1
    graph, why = call_graph({f: nm_symbols(o) for f, o in objs})

    def edge(a, b):
        syms = why.get((a, b), [])
        more = f" and {len(syms) - 4} more" if len(syms) > 4 else ""
        return "uses " + ", ".join(syms[:4]) + more
    return report_cycles("call", graph, edge, ALLOWED_CYCLES)


# ---- long files ----

def tree_files(src):
    res = subprocess.run(["git", "-C", src, "ls-files", "-co", "--exclude-standard"],
                         capture_output=True, text=True)
    if res.returncode == 0:
        return sorted(set(res.stdout.split()))
    out = []  # not a git checkout: walk it, leaving build trees out
    for dirpath, dirs, names in os.walk(src):
        dirs[:] = [d for d in dirs if not d.startswith(("build", ".git", "bundle"))]
        out += [os.path.relpath(os.path.join(dirpath, n), src) for n in names]
    return sorted(out)


def long_files(src, files):
    out = {}
    for f in files:
        if f.startswith(LONG_SKIP) or not (f.endswith(LONG_EXT) or
                                            os.path.basename(f) == "Makefile"):
            continue
        p = os.path.join(src, f)
        if os.path.isfile(p):
            with open(p, "rb") as fh:
                n = fh.read().count(b"\n")
            if n > LIMIT:
                out[f] = n
    return out


def check_lines(src):
    bad = 0
    found = long_files(src, tree_files(src))
    for f, n in sorted(found.items()):
        if f in ALLOWED_LONG:
            print(f"layout: {f} has {n} lines, allowed for now (stage 2 splits it)")
        else:
            print(f"layout: {f} has {n} lines (limit {LIMIT}): split it; a file this long "
                  f"is usually two modules")
            bad += 1
    for f in sorted(ALLOWED_LONG - set(found)):
        print(f"layout: {f} is on ALLOWED_LONG but not over {LIMIT} lines (or gone): take it "
              f"off the list in tests/layout/check_layout.py")
        bad += 1
    return bad


# ---- task kinds only through the table ----

# The table's own files, where a kind's value may be compared.
KIND_TABLE = ("common/taskkind.c", "common/taskkind.h")
KIND = r"KFLEET__TASK_KIND__\w+"
KIND_TEST_RE = re.compile(r"(?:[!=]=\s*(?:\(\s*\w+\s*\)\s*)?" + KIND + r")|(?:" + KIND +
                          r"\s*[!=]=)|(?:\bcase\s+" + KIND + r")")
COMMENT_RE = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def kind_tests(text):
    """[(line, the test)] for each comparison of a task kind's value in C
    text, comments left out (their newlines kept, so lines still count)."""
    code = COMMENT_RE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return [(code.count("\n", 0, m.start()) + 1, m.group(0)) for m in KIND_TEST_RE.finditer(code)]


def check_kinds(src):
    bad = 0
    for f in code_files(src, CODE_TOPS):
        if f in KIND_TABLE:
            continue
        with open(os.path.join(src, f), encoding="utf-8", errors="replace") as fh:
            found = kind_tests(fh.read())
        for line, what in found:
            print(f"layout: {f}:{line}: tests a task kind by value ({what.strip()}): read its "
                  f"row instead (kf_task_kind_at(k)->builds, ->gated_by, ...; common/taskkind.h), "
                  f"adding a field to the table if none says it")
            bad += 1
    return bad


# ---- the CLI links no agent code ----

def check_agent(build):
    exe = os.path.join(build, "kfleet")
    libs = sorted(os.path.join(d, n) for d, _, names in os.walk(build) for n in names
                  if n in ("libkfagent.a", "libkfrunner.a") and "/tests/fuzz" not in d)
    if not os.path.exists(exe) or len(libs) != 2:
        print(f"layout: agent: need {exe}, libkfagent.a and libkfrunner.a under {build}")
        return 1
    agent = set()
    for lib in libs:
        agent |= nm_symbols(lib)[0]
    both = sorted(agent & nm_symbols(exe)[0])
    bad = 0
    if both:
        print(f"layout: kfleet links agent code: {len(both)} symbols that "
              f"libkfagent.a/libkfrunner.a define, e.g. {', '.join(both[:6])}")
        bad += 1
    link = os.path.join(build, "coordinator", "cli", "CMakeFiles", "kfleet.dir", "link.txt")
    if os.path.exists(link):
        with open(link) as fh:
            line = fh.read()
        for lib in ("libkfagent.a", "libkfrunner.a"):
            if lib in line:
                print(f"layout: kfleet's link line names {lib} ({link})")
                bad += 1
    return bad


# ---- self-test: each rule must be able to fail ----

def self_test():
    failures = []
    g = {"a.c": {"b.c"}, "b.c": {"c.c"}, "c.c": {"a.c"}, "d.c": {"a.c"}}
    if sccs(g) != [["a.c", "b.c", "c.c"]]:
        failures.append(f"sccs missed the planted cycle a->b->c->a: {sccs(g)}")
    cyc = cycle_in(g, ["a.c", "b.c", "c.c"])
    if cyc != ["a.c", "b.c", "c.c", "a.c"]:
        failures.append(f"cycle_in gave {cyc}")
    if sccs({"a": {"b"}, "b": set(), "c": {"a", "b"}}):
        failures.append("sccs saw a cycle in a DAG")
    syms = {"x.c": ({"f"}, {"g"}), "y.c": ({"g"}, {"f"}), "z.c": ({"h"}, {"f"})}
    graph, _ = call_graph(syms)
    if sccs(graph) != [["x.c", "y.c"]]:
        failures.append(f"call_graph + sccs missed x.c <-> y.c: {graph}")
    quiet = lambda *_: None
    if report_cycles("call", graph, lambda a, b: None, [frozenset({"x.c", "y.c", "w.c"})],
                     quiet) != 2:
        failures.append("a cycle that is not exactly the allowed one passed")
    if report_cycles("call", graph, lambda a, b: None, [frozenset({"x.c", "y.c"})], quiet) != 0:
        failures.append("the allowed cycle failed")
    if report_cycles("include", {"a.h": {"b.h"}, "b.h": {"a.h"}}, lambda a, b: None, (),
                     quiet) != 1:
        failures.append("an include cycle a.h <-> b.h passed")
    with tempfile.TemporaryDirectory() as d:
        for name, n in (("long.c", LIMIT + 1), ("ok.c", LIMIT)):
            with open(os.path.join(d, name), "w") as fh:
                fh.write("x\n" * n)
        if long_files(d, ["long.c", "ok.c"]) != {"long.c": LIMIT + 1}:
            failures.append(f"long_files: {long_files(d, ['long.c', 'ok.c'])}")
    planted = ("if (t->kind == KFLEET__TASK_KIND__BUILD)\n"
               "x = KFLEET__TASK_KIND__PROFILE != (int)k;\n"
               "switch (k) {\ncase KFLEET__TASK_KIND__VALIDATE: break; }\n"
               "w = want == (int)KFLEET__TASK_KIND__DOCTOR;\n")
    if [n for n, _ in kind_tests(planted)] != [1, 2, 4, 5]:
        failures.append(f"kind_tests missed a planted kind test: {kind_tests(planted)}")
    fine = ("/* t->kind == KFLEET__TASK_KIND__BUILD */ t->kind = KFLEET__TASK_KIND__BUILD;\n"
            "{KFLEET__TASK_KIND__PROFILE, run_profile}, // x == KFLEET__TASK_KIND__X\n")
    if kind_tests(fine):
        failures.append(f"kind_tests flagged a kind that is only named: {kind_tests(fine)}")
    if module_of("coordinator/report/report_int.h") != "coordinator/report/report":
        failures.append("module_of does not fold x_int.h into x")
    failures += providers.self_test()
    failures += forks.self_test()
    for f in failures:
        print(f"layout self-test: {f}")
    print(f"layout: self-test: {'ok' if not failures else 'FAILED'}")
    return len(failures)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--only",
                    choices=("includes", "calls", "lines", "kinds", "agent", "providers", "forks"))
    a = ap.parse_args()
    src, build = os.path.abspath(a.src), os.path.abspath(a.build)
    broken = 0
    if a.self_test and self_test():
        broken += 1
    rules = {
        "includes": lambda: check_includes(src),
        "calls": lambda: check_calls(build, src),
        "lines": lambda: check_lines(src),
        "kinds": lambda: check_kinds(src),
        "agent": lambda: check_agent(build),
        "providers": lambda: providers.check(src),
        "forks": lambda: forks.check(src),
    }
    for name, rule in rules.items():
        if a.only and name != a.only:
            continue
        n = rule()
        print(f"layout: {name}: {'ok' if n == 0 else 'FAILED'}")
        broken += 1 if n else 0
    return broken


if __name__ == "__main__":
    sys.exit(main())
