#!/usr/bin/env python3
"""delayproxy — a TCP relay that holds every chunk DELAY_MS before passing it on.

The tests' stand-in for `tc qdisc ... netem delay`, which this kernel lacks
(no sch_netem): listen on LISTEN_HOST:LISTEN_PORT, relay to UPSTREAM_HOST:PORT,
each direction delayed, order kept. Packet loss is made separately by
nftables on the link (tests/chaos/netns.sh).

  delayproxy.py LISTEN_HOST LISTEN_PORT UPSTREAM_HOST UPSTREAM_PORT DELAY_MS
"""

import asyncio
import sys


async def pump(reader, writer, delay):
    queue = asyncio.Queue()

    async def deliver():
        loop = asyncio.get_running_loop()
        while True:
            due, data = await queue.get()
            if data is None:
                break
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        writer.close()

    task = asyncio.create_task(deliver())
    loop = asyncio.get_running_loop()
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            queue.put_nowait((loop.time() + delay, data))
    except (ConnectionError, OSError):
        pass
    queue.put_nowait((0, None))
    try:
        await task
    except (ConnectionError, OSError):
        pass


async def main():
    host, port, up_host, up_port, delay_ms = sys.argv[1:6]
    delay = int(delay_ms) / 1000.0

    async def handle(r, w):
        try:
            ur, uw = await asyncio.open_connection(up_host, int(up_port))
        except OSError:
            w.close()
            return
        await asyncio.gather(pump(r, uw, delay), pump(ur, w, delay))

    server = await asyncio.start_server(handle, host, int(port))
    print(f"delayproxy {host}:{port} -> {up_host}:{up_port} +{delay_ms} ms", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
