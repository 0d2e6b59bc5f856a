"""SMTP client benchmark: the reply sender's client (net/smtp.py) against aiosmtplib, the client it replaced, as the
baseline, in the same run: the client's CPU per mail, sending the same mail over kept connections.

    python bench/smtp_client.py [--mails 4000] [--connections 8] [--rounds 3]

The server is bench/helpdesk_replies.py's mailbox (every command answered with success, each mail counted) in a
child process of its own, so the CPU measured (`time.process_time` of this process) is the client's alone; one
mailbox offers PIPELINING, one does not. Each round runs, one after another on this process's event loop (uvloop,
as the processors'): aiosmtplib (`SMTP.sendmail`, the options the sender gave it), net/smtp.py against the mailbox
without PIPELINING (each command's answer awaited), and net/smtp.py pipelined. `--connections` sessions each send
their share of `--mails`, one mail at a time. Prints each client's CPU per mail and mails a second, of the last round,
and their ratios to the baseline. Not a test: it exits 0 when it ran.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiosmtplib
import uvloop

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from net.smtp import Session  # noqa: E402

MAIL = (
    b"From: Support <help@example.test>\r\nTo: ada@example.com\r\nSubject: Re: Where is my order? [Ticket #42]\r\n"
    b"Message-ID: <reply.1@example.test>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n"
    + b"It ships today; the tracking number follows by mail once the carrier has it.\r\n"
    * 20
)
SERVE = """
import asyncio, sys
sys.path.insert(0, {bench!r})
from helpdesk_replies import Mailbox
async def main():
    box = Mailbox(pipelining={pipelining})
    await box.start()
    print(box.port, flush=True)
    await asyncio.sleep(3600)
asyncio.run(main())
"""

Send = Callable[[], Awaitable[None]]


async def aiosmtplib_senders(port: int, connections: int) -> list[Send]:
    clients = []
    for _ in range(connections):
        client = aiosmtplib.SMTP(hostname="127.0.0.1", port=port, timeout=30)
        await client.connect()
        clients.append(client)

    def sender(client: aiosmtplib.SMTP) -> Send:
        async def send() -> None:
            await client.sendmail("help@example.test", ["ada@example.com"], MAIL, mail_options=["BODY=8BITMIME"])

        return send

    return [sender(client) for client in clients]


async def our_senders(port: int, connections: int) -> list[Send]:
    sessions = [await Session.open("127.0.0.1", port, timeout_s=30) for _ in range(connections)]

    def sender(session: Session) -> Send:
        async def send() -> None:
            await session.send("help@example.test", "ada@example.com", MAIL, ["BODY=8BITMIME"])

        return send

    return [sender(session) for session in sessions]


async def timed(senders: list[Send], mails: int) -> tuple[float, float]:
    """CPU seconds a mail, mails a second."""

    async def loop(send: Send, count: int) -> None:
        for _ in range(count):
            await send()

    each = mails // len(senders)
    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(loop(send, each) for send in senders))
    return (time.process_time() - cpu) / (each * len(senders)), each * len(senders) / (time.perf_counter() - wall)


def mailbox(pipelining: bool) -> tuple[subprocess.Popen[str], int]:
    code = SERVE.format(bench=str(HERE), pipelining=pipelining)
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    return process, int(process.stdout.readline())


async def main(mails: int, connections: int, rounds: int) -> None:
    (plain, plain_port), (piped, piped_port) = mailbox(False), mailbox(True)
    try:
        figures: dict[str, tuple[float, float]] = {}
        for _ in range(rounds):
            figures = {
                "aiosmtplib (baseline)": await timed(await aiosmtplib_senders(piped_port, connections), mails),
                "net/smtp.py, one by one": await timed(await our_senders(plain_port, connections), mails),
                "net/smtp.py, pipelined": await timed(await our_senders(piped_port, connections), mails),
            }
        print(f"\nSMTP clients, {mails} mails of {len(MAIL)} bytes over {connections} connections (round {rounds})\n")
        baseline_cpu, baseline_rate = figures["aiosmtplib (baseline)"]
        print(f"{'client':26} {'CPU us/mail':>12} {'mails/s':>9} {'CPU / baseline':>15} {'rate / baseline':>16}")
        for name, (cpu, rate) in figures.items():
            print(f"{name:26} {cpu * 1e6:12.0f} {rate:9.0f} {cpu / baseline_cpu:15.2f} {rate / baseline_rate:16.2f}")
    finally:
        plain.kill()
        piped.kill()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mails", type=int, default=4000)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    uvloop.run(main(args.mails, args.connections, args.rounds))
