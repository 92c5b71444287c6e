"""forks — check_layout's rule that a forked child only execs.

The agent (libzmq's I/O thread) and `kfleet run` (the embedded
coordinator's threads) fork with other threads running. A lock one of them
held at the fork (the allocator's, stdio's, the locale's) stays held in the
child forever, so between fork() and its exec a child may call only what
takes no lock: system calls and a few helpers reviewed for it. A local agent
once hung there with an empty log (8fc0edb), in setenv; a8a4109 moved the
runners' environment before the fork (common/execenv.h).

For each fork() in a .c file of agent/, coordinator/ or common/, the
child's code is found (the block of `if (X == 0) {`, or what follows
`if (X != 0) ...` to the end of the function) and every call in it must be
on ALLOWED. Files whose children do not exec, by design and with their
own care, are on NO_EXEC with the reason.
"""
import os
import re

TOPS = ("agent", "coordinator", "common")

# System calls and helpers that take no lock (each helper reviewed: it
# makes system calls only, or writes from a table).
ALLOWED = {
    "setpgid", "setsid", "prctl", "getppid", "getpid", "open", "close", "dup", "dup2",
    "fcntl", "chdir", "write", "read", "kill", "nanosleep", "execve", "execv", "execl",
    "execvp", "_exit", "kf_sandbox_place_fds", "kf_sandbox_close_fds", "kf_exec_say",
    "kf_exec_why", "kf_execenv_array", "contain_child", "kf_contain_enter",
}

NO_EXEC = {
    # The warm runner forks candidates' runners that go on in its Python
    # (pykernel.h's fork hooks; it has no other thread: warm.ready says so).
    "agent/runner/warm.c",
    # The tool host is forked by a runner before its sandbox and CUDA, with
    # no other thread, and serves tools from there (toolhost.h).
    "agent/runner/toolhost.c",
}

# Calls reviewed where they are, with why no other thread can be running.
REVIEWED = {
    # The sandbox's probe: forked once in the agent's start, before its
    # ZeroMQ context (agent.c), and never exec'd: it enters the sandbox.
    ("agent/runner/sandbox.c", "kf_sandbox_new"),
    ("agent/runner/sandbox.c", "kf_sandbox_enter"),
    # A tool's sandbox, set only in a build runner (kf_proc_sandbox), which
    # starts no CUDA and no thread; the agent's own uses set none.
    ("agent/runner/proc.c", "kf_sandbox_enter"),
}

KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof"}
COMMENT_OR_STRING = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'', re.S)
FORK = re.compile(r"\bfork\s*\(\s*\)")
CHILD_IF = re.compile(r"if\s*\(\s*(\w+)\s*(==|!=)\s*0\s*\)\s*")
CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")


def blank(text):
    """C text with comments and string and char literals blanked (newlines
    kept), so that lines still count and no literal reads as code."""
    return COMMENT_OR_STRING.sub(
        lambda m: "".join(c if c == "\n" else " " for c in m.group(0)) if m.group(0)[0] == "/"
        else '""', text)


def block_end(code, start):
    """The index just past the brace block opening at code[start] == '{'."""
    return enclosing_end(code, start + 1) + 1


def enclosing_end(code, pos):
    """The index of the '}' that closes the block holding code[pos]."""
    depth = 0
    for i in range(pos, len(code)):
        if code[i] == "{":
            depth += 1
        elif code[i] == "}":
            if depth == 0:
                return i
            depth -= 1
    return len(code)


def children(code):
    """[(start, end)] of each fork's child code in blanked C text."""
    out = []
    for f in FORK.finditer(code):
        m = CHILD_IF.search(code, f.end())
        if not m or code.count("\n", f.end(), m.start()) > 40:
            continue
        after = m.end()
        if m.group(2) == "==":
            if code[after:after + 1] == "{":
                out.append((after, block_end(code, after)))
            else:
                out.append((after, code.index(";", after) + 1))
        else:  # `if (pid != 0) PARENT;` and the child is the rest
            end = block_end(code, after) if code[after:after + 1] == "{" else \
                code.index(";", after) + 1
            out.append((end, enclosing_end(code, end)))
    return sorted(set(out))


def forbidden(text, path=""):
    """[(line, name)] of each call in a fork's child that is not ALLOWED
    (nor REVIEWED in `path`)."""
    code = blank(text)
    bad = []
    for start, end in children(code):
        for c in CALL.finditer(code, start, end):
            name = c.group(1)
            if name not in KEYWORDS and name not in ALLOWED and (path, name) not in REVIEWED:
                bad.append((code.count("\n", 0, c.start()) + 1, name))
    return bad


def check(src):
    bad = 0
    for top in TOPS:
        for d, _, names in os.walk(os.path.join(src, top)):
            for n in sorted(names):
                if not n.endswith(".c"):
                    continue
                f = os.path.relpath(os.path.join(d, n), src)
                if f in NO_EXEC:
                    continue
                with open(os.path.join(src, f), encoding="utf-8", errors="replace") as fh:
                    found = forbidden(fh.read(), f)
                for line, name in found:
                    print(f"layout: {f}:{line}: {name}() between fork and exec: another thread "
                          f"may hold a lock it takes. Make it before the fork (an environment: "
                          f"common/execenv.h; a message: kf_exec_say) or, if it takes none, add "
                          f"it to ALLOWED in tests/layout/forks.py")
                    bad += 1
    return bad


def self_test():
    failures = []
    planted = ('pid_t pid = fork();\nif (pid < 0)\n    return -1;\nif (pid == 0) {\n'
               '    setenv("A", "b", 1); /* strerror( in a comment */\n'
               '    dprintf(2, "x(%s)", strerror(errno));\n    execv(p, argv);\n    _exit(127);\n}\n'
               'setenv("after", "parent", 1);\n')
    got = forbidden(planted)
    if got != [(5, "setenv"), (6, "dprintf"), (6, "strerror")]:
        failures.append(f"forks: the planted child's calls: {got}")
    rest = ('static pid_t f(void)\n{\n    pid_t pid = fork();\n    if (pid != 0) {\n'
            '        free(env);\n        return pid;\n    }\n    prctl(1, 2);\n'
            '    snprintf(b, 4, "x");\n    execve(a, v, e);\n    _exit(1);\n}\n'
            'static void g(void) { malloc(1); }\n')
    got = forbidden(rest)
    if got != [(9, "snprintf")]:
        failures.append(f"forks: the child after `if (pid != 0)`: {got}")
    fine = ('pid = fork();\nif (pid == 0) {\n    setpgid(0, 0);\n    dup2(fd, 0);\n'
            '    execve(exe, argv, kf_execenv_array(env));\n'
            '    kf_exec_say(2, "cannot exec ", exe, kf_exec_why(errno));\n    _exit(127);\n}\n')
    if forbidden(fine):
        failures.append(f"forks: flagged a child that only execs: {forbidden(fine)}")
    return failures
