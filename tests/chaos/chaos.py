#!/usr/bin/env python3
"""chaos — kfleet's proof that nothing is lost and nothing is stored twice.

Runs a real coordinator (`kfleet serve`) and N real agents, each agent in its
own network namespace joined to the host by a veth pair, on a sweep of cheap
CPU tasks. While the sweep runs, a seeded RNG picks faults:

  agent-kill   SIGKILL an agent, restart it (same work dir, same outbox) soon after
  coord-kill   SIGKILL the coordinator, restart it on the same home and port
  partition    drop every packet of one agent's link (nft, in its namespace) for
               0.5-3x the heartbeat timeout, then heal it

At the end every fault is healed, the sweep must complete, and the store is
checked twice: by `kfleet verify --format json`, and by this script reading
the LMDB tables itself (mdb_dump): every task has exactly one terminal record,
no late (superseded) record repeats the terminal result, every
attempt's sample sequence numbers are contiguous from 0, and a successful
attempt has exactly the samples its agent sent. The summary it prints is what
docs/reliability.md quotes.

Without root (no namespaces) it runs on loopback and skips partitions.

  python3 tests/chaos/chaos.py --bin BUILD_DIR [--tasks 2000] [--agents 4]
                               [--seed N] [--max-seconds 900] [--keep]
"""

import argparse
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HB_INTERVAL = 0.5
HB_TIMEOUT = 2.0


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def sh(*cmd, check=True):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return r


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Net:
    """One namespace and veth pair per agent; nft rules in the namespace cut its link."""

    def __init__(self, n, tag):
        self.n = n
        self.tag = tag
        self.ns = [f"kfc{tag}a{i}" for i in range(n)]
        self.up = []

    def net(self, i):
        # Per run and agent, so that a run's leftovers never shadow another's.
        return f"10.{100 + self.tag % 150}.{i + 1}"

    def host_ip(self, i):
        return f"{self.net(i)}.1"

    def setup(self):
        for i, ns in enumerate(self.ns):
            host, peer = f"kfc{self.tag}h{i}", f"kfc{self.tag}p{i}"
            sh("ip", "netns", "add", ns)
            self.up.append(ns)
            sh("ip", "link", "add", host, "type", "veth", "peer", "name", peer)
            sh("ip", "link", "set", peer, "netns", ns)
            sh("ip", "addr", "add", f"{self.host_ip(i)}/24", "dev", host)
            sh("ip", "link", "set", host, "up")
            sh("ip", "netns", "exec", ns, "ip", "addr", "add", f"{self.net(i)}.2/24", "dev", peer)
            sh("ip", "netns", "exec", ns, "ip", "link", "set", peer, "up")
            sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
            sh("ip", "netns", "exec", ns, "nft", "add table inet kfchaos")
            for chain, hook in (("in", "input"), ("out", "output")):
                sh("ip", "netns", "exec", ns, "nft",
                   f"add chain inet kfchaos {chain} {{ type filter hook {hook} priority 0; }}")

    def cut(self, i):
        for chain in ("in", "out"):
            sh("ip", "netns", "exec", self.ns[i], "nft", f"add rule inet kfchaos {chain} drop")

    def heal(self, i):
        sh("ip", "netns", "exec", self.ns[i], "nft", "flush table inet kfchaos")

    def teardown(self):
        for i, ns in enumerate(self.up):
            # The host end first: a namespace outlives its name while anything
            # (a closing socket) still holds it, and its veth with it.
            sh("ip", "link", "del", f"kfc{self.tag}h{i}", check=False)
            sh("ip", "netns", "del", ns, check=False)


class Fleet:
    def __init__(self, args, tmp):
        self.args = args
        self.tmp = tmp
        self.bin = args.bin
        self.home = os.path.join(tmp, "home")
        self.env = dict(os.environ, KFLEET_HOME=self.home)
        # A SIGKILLed process leaks by design; do not let ASan count it.
        self.env.setdefault("ASAN_OPTIONS", "detect_leaks=0")
        self.port = free_port()
        self.net = None
        self.serve = None
        self.agents = [None] * args.agents
        self.serve_log = open(os.path.join(tmp, "serve.log"), "ab")

    def kfleet(self, *a, timeout=60):
        return subprocess.run([os.path.join(self.bin, "kfleet"), *a], env=self.env,
                              capture_output=True, text=True, timeout=timeout)

    def endpoint(self, i):
        host = self.net.host_ip(i) if self.net else "127.0.0.1"
        return f"tcp://{host}:{self.port}"

    def start_serve(self):
        epf = os.path.join(self.home, "run", "agent-endpoint")
        if os.path.exists(epf):
            os.unlink(epf)
        bind = f"tcp://{'0.0.0.0' if self.net else '127.0.0.1'}:{self.port}"
        self.serve = subprocess.Popen(
            [os.path.join(self.bin, "kfleet"), "--log-level", "info", "serve", "--bind", bind,
             "--heartbeat-interval", f"{int(HB_INTERVAL * 1000)}ms",
             "--heartbeat-timeout", f"{int(HB_TIMEOUT)}s"],
            env=self.env, stdout=subprocess.DEVNULL, stderr=self.serve_log)
        for _ in range(400):
            if os.path.exists(epf) and os.path.getsize(epf) > 0:
                return
            if self.serve.poll() is not None:
                raise RuntimeError("kfleet serve exited at start; see serve.log")
            time.sleep(0.05)
        raise RuntimeError("kfleet serve did not start")

    def start_agent(self, i):
        cmd = [os.path.join(self.bin, "kfleet-agent"), "--coordinator", self.endpoint(i),
               "--workdir", os.path.join(self.tmp, "agents", f"x{i}"), "--name", f"x{i}",
               "--log-level", os.environ.get("KF_CHAOS_AGENT_LOG", "info")]
        if self.net:
            cmd = ["ip", "netns", "exec", self.net.ns[i]] + cmd  # execs: the pid is the agent's
        with open(os.path.join(self.tmp, f"agent-x{i}.log"), "ab") as lf:
            self.agents[i] = subprocess.Popen(cmd, env=self.env, stdout=subprocess.DEVNULL,
                                              stderr=lf)

    def kill(self, p):
        if p and p.poll() is None:
            p.send_signal(signal.SIGKILL)
            p.wait()

    def stop_all(self):
        for a in self.agents:
            self.kill(a)
        self.kill(self.serve)


def sweep_yaml(path, tasks):
    configs = max(1, tasks // 2)
    with open(path, "w") as f:
        f.write(f"""# generated by tests/chaos/chaos.py: {configs} configurations,
# a validate and a profile each; attempts: 100 so that no task runs out of tries.
name: chaos{tasks}
kernels:
  - name: triad
    params:
      n: {{from: 1K, to: {configs}K, step: 1K}}
tasks: [validate, profile]
attempts: 100
measure:
  min_samples: 5
  min_time: 10ms
  max_noise: 100
  precision: 50
  timeout: 500ms
  seeds: 1
""")


# ---- the store, read by us ----

def mdb_table(store, name):
    """(key bytes, value bytes) of one LMDB table, through mdb_dump."""
    r = sh("mdb_dump", "-s", name, store)
    rows, lines, data = [], r.stdout.splitlines(), False
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln == "HEADER=END":
            data = True
        elif ln == "DATA=END":
            break
        elif data and ln.startswith(" "):
            rows.append((bytes.fromhex(ln[1:]), bytes.fromhex(lines[i + 1][1:])))
            i += 1
        i += 1
    return rows


def pb_varints(buf):
    """The varint fields of a protobuf message: {field: value} (last wins)."""
    out, i = {}, 0
    while i < len(buf):
        key, i = _varint(buf, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            out[field], i = _varint(buf, i)
        elif wt == 1:
            i += 8
        elif wt == 2:
            n, i = _varint(buf, i)
            i += n
        elif wt == 5:
            i += 4
        else:
            raise ValueError("bad wire type")
    return out


def _varint(buf, i):
    v, shift = 0, 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


SUCCEEDED = 10  # TaskState.SUCCEEDED (kfleet.proto)


def check_store(store, sweep_id):
    """Our own reading of the store. Returns (records checked, duplicates, lost, notes)."""
    prefix = sweep_id.to_bytes(4, "big")
    tasks = {k for k, _ in mdb_table(store, "tasks") if k[:4] == prefix}
    results = [(k, pb_varints(v)) for k, v in mdb_table(store, "results") if k[:4] == prefix]
    late = [(k, pb_varints(v)) for k, v in mdb_table(store, "late") if k[:4] == prefix]
    samples = {}
    nsamples = 0
    seen = set()
    dups = 0
    for k, _ in mdb_table(store, "samples"):
        if k[:4] != prefix:
            continue
        nsamples += 1
        if k in seen:
            dups += 1
        seen.add(k)
        samples.setdefault((k[:8], int.from_bytes(k[8:12], "big")), []).append(
            int.from_bytes(k[12:16], "big"))
    notes = []
    lost = 0
    terminal = {}
    for k, r in results:
        if k in terminal:
            dups += 1
            notes.append(f"task {k.hex()}: two terminal records")
        terminal[k] = r
    for t in tasks - terminal.keys():
        lost += 1
        notes.append(f"task {t.hex()}: no terminal record")
    for k, r in late:
        tr = terminal.get(k[:8])
        if (tr and tr.get(2, 0) == int.from_bytes(k[8:12], "big")
                and tr.get(12, 0) == r.get(12, 0)):
            # The terminal result itself (same attempt, same finish time)
            # stored again as a superseded late record.
            dups += 1
            notes.append(f"task {k[:8].hex()}: late record of the terminal attempt")
    for (tk, att), seqs in samples.items():
        seqs.sort()
        if seqs != list(range(len(seqs))):
            notes.append(f"task {tk.hex()} attempt {att}: sample seqs not contiguous")
            lost += 1
    for k, r in terminal.items():
        if r.get(3) != SUCCEEDED:
            continue
        want = r.get(11, 0)
        have = len(samples.get((k, r.get(2, 0)), []))
        if have < want:
            lost += want - have
            notes.append(f"task {k.hex()}: {have} of {want} samples stored")
        elif have > want:
            dups += have - want
            notes.append(f"task {k.hex()}: {have} samples stored, the agent sent {want}")
    records = len(tasks) + len(results) + len(late) + nsamples
    return records, dups, lost, notes, len(tasks), len(results), len(late), nsamples


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="build dir holding kfleet and kfleet-agent")
    ap.add_argument("--tasks", type=int, default=2000)
    ap.add_argument("--agents", type=int, default=4)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--max-seconds", type=float, default=900)
    ap.add_argument("--min-faults", type=int, default=0,
                    help="fail unless at least this many faults were injected")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (logs, store)")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    rng = random.Random(seed)
    print(f"chaos: seed {seed} (rerun with --seed {seed})", flush=True)

    tmp = tempfile.mkdtemp(prefix="kf-chaos.")
    fleet = Fleet(args, tmp)
    counts = {"agent_kills": 0, "coord_kills": 0, "partitions": 0}
    started = time.monotonic()
    rc = 1
    try:
        if os.geteuid() == 0 and shutil.which("nft") and shutil.which("ip"):
            fleet.net = Net(args.agents, os.getpid() % 10000)
            try:
                fleet.net.setup()
            except RuntimeError as e:
                log(f"no namespaces here ({e}); partitions skipped")
                fleet.net.teardown()
                fleet.net = None
        else:
            log("not root or no nft/ip: agents on loopback, partitions skipped")
        fleet.start_serve()
        for i in range(args.agents):
            fleet.start_agent(i)
        yaml = os.path.join(tmp, "sweep.yaml")
        sweep_yaml(yaml, args.tasks)
        for _ in range(100):
            st = fleet.kfleet("status", "--format", "json")
            if st.returncode == 0 and st.stdout.count('"state": "ok"') >= args.agents:
                break
            time.sleep(0.2)
        else:
            raise RuntimeError("agents did not register")
        sub = fleet.kfleet("submit", yaml)
        if sub.returncode != 0:
            raise RuntimeError(f"submit failed: {sub.stderr}")
        sweep_id = int(sub.stdout.split("submitted sweep ")[1].split()[0])
        log(f"sweep {sweep_id}: {args.tasks} tasks on {args.agents} agents"
            f"{' in namespaces' if fleet.net else ''}")

        # Faults until the sweep is done. Each fault is healed before the next
        # one starts, except that a partition may outlast a kill elsewhere.
        cut = {}  # agent -> heal time
        down = {}  # killed agent -> restart time
        done = False
        verify = None
        while not done:
            if time.monotonic() - started > args.max_seconds:
                raise RuntimeError(f"the sweep did not finish in {args.max_seconds:.0f} s")
            time.sleep(rng.uniform(0.3, 1.5))
            now = time.monotonic()
            for i, until in list(cut.items()):
                if now >= until:
                    fleet.net.heal(i)
                    del cut[i]
            for i, when in list(down.items()):
                if now >= when:
                    fleet.start_agent(i)
                    del down[i]
            v = fleet.kfleet("verify", str(sweep_id), "--format", "json")
            if v.returncode == 0:
                verify = json.loads(v.stdout)
                done = True
                break
            try:
                progress = json.loads(v.stdout).get("terminal", 0)
            except ValueError:
                progress = 0
            actions = ["agent", "coord"] + (["partition"] if fleet.net else [])
            what = rng.choice(actions)
            if what == "agent":
                up = [i for i in range(args.agents) if i not in down]
                if len(up) < 2:
                    continue  # keep one agent working
                i = rng.choice(up)
                fleet.kill(fleet.agents[i])
                counts["agent_kills"] += 1
                # Back after up to twice the heartbeat timeout: sometimes
                # before it is declared lost, sometimes after.
                down[i] = time.monotonic() + rng.uniform(0, 2 * HB_TIMEOUT)
                log(f"agent x{i} SIGKILLed ({progress} tasks ended)")
            elif what == "coord":
                fleet.kill(fleet.serve)
                counts["coord_kills"] += 1
                time.sleep(rng.uniform(0, 1.0))
                fleet.start_serve()
                log(f"coordinator SIGKILLed and restarted ({progress} tasks ended)")
            else:
                free = [i for i in range(args.agents) if i not in cut]
                if not free:
                    continue
                i = rng.choice(free)
                span = rng.uniform(0.5, 3.0) * HB_TIMEOUT
                fleet.net.cut(i)
                cut[i] = time.monotonic() + span
                counts["partitions"] += 1
                log(f"agent x{i} partitioned for {span:.1f} s ({progress} tasks ended)")
        elapsed = time.monotonic() - started
        # Heal everything and give the agents a resend period: results held
        # back by a partition arrive now, after the sweep ended, and must
        # change nothing. Then the store is read with everything stopped.
        for i in list(cut):
            fleet.net.heal(i)
        for i in list(down):
            fleet.start_agent(i)
        time.sleep(6)
        fleet.stop_all()
        v = fleet.kfleet("verify", str(sweep_id), "--format", "json")
        verify = json.loads(v.stdout)
        if v.returncode != 0:
            print(f"chaos: verify after the late arrivals: {v.stderr.strip()}")

        store = os.path.join(fleet.home, "state", "store")
        records, dups, lost, notes, ntasks, nres, nlate, nsamp = check_store(store, sweep_id)
        for n in notes[:30]:
            print(f"  problem: {n}")
        faults = counts["agent_kills"] + counts["coord_kills"] + counts["partitions"]
        print(f"""chaos summary (seed {seed})
  tasks:              {verify['tasks']} ({verify['succeeded']} succeeded, {verify['failed']} failed, {verify['cancelled']} cancelled)
  agents:             {args.agents}{' (each in its own network namespace)' if fleet.net else ' (loopback)'}
  agent kills:        {counts['agent_kills']}
  coordinator kills:  {counts['coord_kills']}
  partitions:         {counts['partitions']}
  attempts:           {verify['attempts']} ({verify['requeued']} requeued, {verify['late_results']} late results kept)
  records checked:    {records} ({ntasks} tasks, {nres} terminal records, {nlate} late records, {nsamp} samples)
  verify violations:  {verify['violations']}
  duplicates found:   {dups}
  lost:               {lost}
  wall time:          {elapsed:.0f} s""", flush=True)
        ok = (verify["violations"] == 0 and dups == 0 and lost == 0 and nres == ntasks
              and faults >= args.min_faults)
        if faults < args.min_faults:
            print(f"chaos: only {faults} faults injected (wanted {args.min_faults})")
        rc = 0 if ok else 1
        print("chaos: PASS" if ok else "chaos: FAIL", flush=True)
    except Exception as e:  # report, clean up, fail
        print(f"chaos: FAIL: {e}", flush=True)
        for f in sorted(os.listdir(tmp)):
            if f.endswith(".log"):
                with open(os.path.join(tmp, f), errors="replace") as lf:
                    tail = lf.readlines()[-15:]
                print(f"=== {f}\n{''.join(tail)}", end="")
        rc = 1
    finally:
        fleet.stop_all()
        if fleet.net:
            fleet.net.teardown()
        if args.keep or rc:
            print(f"chaos: logs and store kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
