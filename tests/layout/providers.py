"""providers — check_layout's rule that a provider lives in its own files.

A provider (coordinator/fleet/provider.h) is one row of the table, and
only its own files may name it: everywhere else the code calls through the
row. "Names" means: the provider's name appears, in any case, as a whole
word or as a part of an identifier split at '_' (`slurm`, `kf_slurm_x`,
`SLURM_JOB_ID`, "provider: slurm" in a string) in the code of a .c or .h
file of coordinator/, agent/ or common/, or of a .proto of proto/ (the
shared schema: a provider's own message, such as its block inside a launch
request, is a .proto among its files and travels as bytes). Comments are
left out (they may say why, with an example), and so are docs/, tests/ and
bench/.

The providers checked are the rows that coordinator/fleet/provider_*.c
define (`const kf_provider kf_provider_NAME`), but for UNCHECKED. Each
checked one needs its files in PROVIDER_FILES: a new row without an entry
fails, so adding a provider means saying which files are its. The table
(coordinator/fleet/provider.c), whose line per built-in row names it, is
the one other file that may.
"""
import os
import re
import tempfile

# Names also used for what every provider shares: SSH is the transport of
# every launch (fleet/ssh.c), so the word cannot single one provider out.
UNCHECKED = {"ssh": "SSH is the transport every provider's launch uses (fleet/ssh.c)",
             "local": "the word says 'this machine' throughout (local paths, local GPUs); "
                      "the row is internal, driven by kfleet run (cli/run.c) only"}

# A provider's own files beside its coordinator/fleet/provider_NAME.c
# (paths from the source root; a trailing '*' takes every file that starts
# so).
PROVIDER_FILES = {
    "slurm": ["coordinator/fleet/provider_slurm.c", "coordinator/fleet/fleet_slurm.*",
              "coordinator/fleet/launch_slurm.c", "coordinator/fleet/slurm_*"],
    "runpod": ["coordinator/fleet/provider_ssh.c"],
    "brev": ["coordinator/fleet/provider_ssh.c"],
    "shadeform": ["coordinator/fleet/provider_ssh.c"],
}

# The table: its one line per built-in row names each (provider.c).
TABLE = "coordinator/fleet/provider.c"

# Files outside a provider's own that still name it, each with its reason.
# The list is where the remaining debt is written down; an entry that no
# longer names the provider must leave it.
ALLOWED = {}

CODE_DIRS = ("coordinator", "agent", "common", "proto")
CODE_EXTS = (".c", ".h", ".proto")
ROW_RE = re.compile(r"\bconst\s+kf_provider\s+kf_provider_(\w+)")


def strip_comments(text):
    """text with its C comments blanked (newlines kept), string and
    character literals left as they are."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def name_re(name):
    return re.compile(r"(?<![A-Za-z0-9])" + re.escape(name) + r"(?![A-Za-z0-9])", re.I)


def rows(src):
    """The provider names that coordinator/fleet/provider_*.c define."""
    found = set()
    d = os.path.join(src, "coordinator", "fleet")
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if f.startswith("provider_") and f.endswith(".c"):
            with open(os.path.join(d, f), encoding="utf-8", errors="replace") as fh:
                found.update(ROW_RE.findall(fh.read()))
    return found


def owns(patterns, path):
    return any(path.startswith(p[:-1]) if p.endswith("*") else path == p for p in patterns)


def violations(files, names, provider_files=None, allowed=None):
    """[(provider, file, line number, line)] for each line of code (files:
    {path: text}) that names a provider outside its own files, and the
    allowed (provider, file) pairs that named nothing (stale)."""
    provider_files = PROVIDER_FILES if provider_files is None else provider_files
    allowed = ALLOWED if allowed is None else allowed
    out, used = [], set()
    for name in sorted(names):
        rx = name_re(name)
        for path, text in sorted(files.items()):
            if path in (TABLE, f"coordinator/fleet/provider_{name}.c") or \
                    owns(provider_files.get(name, ()), path):
                continue
            for no, line in enumerate(strip_comments(text).split("\n"), 1):
                if rx.search(line):
                    if (name, path) in allowed:
                        used.add((name, path))
                    else:
                        out.append((name, path, no, line.strip()))
    stale = sorted(k for k in allowed if k[0] in names and k not in used)
    return out, stale


def code_texts(src):
    texts = {}
    for top in CODE_DIRS:
        for dirpath, _, fs in os.walk(os.path.join(src, top)):
            for f in fs:
                if f.endswith(CODE_EXTS):
                    p = os.path.join(dirpath, f)
                    with open(p, encoding="utf-8", errors="replace") as fh:
                        texts[os.path.relpath(p, src)] = fh.read()
    return texts


def check(src, say=print):
    bad = 0
    names = rows(src) - set(UNCHECKED)
    if not names:
        say("layout: providers: no rows found in coordinator/fleet/provider_*.c")
        return 1
    for name in sorted(names - set(PROVIDER_FILES)):
        say(f"layout: provider {name} has no entry in PROVIDER_FILES "
            f"(tests/layout/providers.py): list its own files there")
        bad += 1
    found, stale = violations(code_texts(src), names)
    for name, path, no, line in found:
        say(f"layout: {path}:{no} names provider {name} outside its own files: {line[:100]}")
        say(f"    call through its row (coordinator/fleet/provider.h) instead, or move "
            f"the code into the provider's files")
        bad += 1
    for name, path in stale:
        say(f"layout: {path} no longer names provider {name}: take it off ALLOWED in "
            f"tests/layout/providers.py")
        bad += 1
    return bad


def self_test():
    """Failures of the rule's core on planted files, [] when it sees them."""
    failures = []
    files = {
        "coordinator/fleet/launch.c": 'if (h->slurm) go();\n',
        "coordinator/fleet/fleet.c": '/* a slurm host, for one */ x = 1; // slurm\n',
        "coordinator/cli/cmd_x.c": 'puts("use provider: Slurm");\n',
        "coordinator/fleet/sbatch.c": 'int abbreviation;\n',
        "coordinator/fleet/launch_slurm.c": 'kf_slurm_go();\n',
        "common/inventory.c": 'getenv("SLURM_JOB_ID");\n',
        "proto/control.proto": '  SlurmShape slurm = 7; // slurm\n',
    }
    pf = {"slurm": ["coordinator/fleet/launch_slurm.c"], "brev": []}
    found, stale = violations(files, {"slurm", "brev"}, pf,
                              {("slurm", "common/inventory.c"): "why",
                               ("slurm", "coordinator/daemon/gone.c"): "why"})
    where = sorted((n, p) for n, p, _, _ in found)
    if where != [("slurm", "coordinator/cli/cmd_x.c"), ("slurm", "coordinator/fleet/launch.c"),
                 ("slurm", "proto/control.proto")]:
        failures.append(f"providers: planted names not found as they are: {where}")
    if stale != [("slurm", "coordinator/daemon/gone.c")]:
        failures.append(f"providers: a stale allowed entry passed: {stale}")
    # The whole rule on a planted tree: a new row with no files listed, and
    # a daemon file that branches on it.
    with tempfile.TemporaryDirectory() as d:
        for path, text in (("coordinator/fleet/provider_kube.c",
                            "const kf_provider kf_provider_kube = {0};\n"),
                           ("coordinator/daemon/control.c", "if (is_kube(h)) go();\n")):
            os.makedirs(os.path.join(d, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(d, path), "w") as fh:
                fh.write(text)
        said = []
        if check(d, said.append) != 2 or not any("control.c:1 names provider kube" in x
                                                  for x in said):
            failures.append(f"providers: the planted tree passed: {said}")
    got = strip_comments('a("/*x*/"); /* b */ c // d\n')
    if got != 'a("/*x*/");' + ' ' * 9 + 'c \n':
        failures.append(f"providers: strip_comments gave {got!r}")
    return failures
