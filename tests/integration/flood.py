# flood.py PORT STOP_FILE COUNT SOURCES: holds COUNT idle TCP connections to
# 127.0.0.1:PORT, from source addresses 127.0.0.2 .. 127.0.0.(SOURCES+1),
# reads (and ignores) what the server sends, opens a new one for each the
# server closes, until STOP_FILE exists
# (at most 120 s). Sends nothing. Prints what it did. For the flood tests.
import os, select, socket, sys, time

port, stop, count, sources = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
t_end = time.time() + 120
n_open = 0


def dial(i):
    global n_open
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((f"127.0.0.{2 + i % sources}", 0))
    s.setblocking(False)
    s.connect_ex(("127.0.0.1", port))
    n_open += 1
    return s


socks = {}
for i in range(count):
    s = dial(i)
    socks[s.fileno()] = (i, s)
print(f"idle connections open: {len(socks)}", flush=True)
p = select.poll()
for fd in socks:
    p.register(fd, select.POLLIN)
closed = 0
while time.time() < t_end and not os.path.exists(stop):
    for fd, ev in p.poll(200):
        i, s = socks[fd]
        try:
            gone = s.recv(4096) == b""  # what the server says is read, never answered
        except BlockingIOError:
            gone = False
        except OSError:
            gone = True
        if not gone:
            continue
        del socks[fd]
        p.unregister(fd)
        s.close()
        closed += 1
        n = dial(i)
        socks[n.fileno()] = (i, n)
        p.register(n.fileno(), select.POLLIN)
print(f"closed by the server: {closed}; connections opened: {n_open}", flush=True)
