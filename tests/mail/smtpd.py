"""A loopback SMTP server for the mail tests: aiosmtpd (Debian's python3-aiosmtpd) delivering
each message to a Maildir per recipient, BASE/<recipient>/{tmp,new,cur}.

usage: python3 smtpd.py PORT BASE   (prints "ready" once it accepts connections; stop with SIGTERM)
"""
import mailbox
import os
import signal
import sys
import time

from aiosmtpd.controller import Controller


class Deliver:
    def __init__(self, base):
        self.base = base

    async def handle_DATA(self, server, session, envelope):
        data = envelope.original_content or envelope.content
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogateescape")
        for rcpt in envelope.rcpt_tos:
            box = mailbox.Maildir(os.path.join(self.base, rcpt.lower()), factory=None, create=True)
            box.add(mailbox.MaildirMessage(data))
        return "250 OK delivered"


def main():
    port, base = int(sys.argv[1]), sys.argv[2]
    os.makedirs(base, exist_ok=True)
    controller = Controller(Deliver(base), hostname="127.0.0.1", port=port)
    controller.start()
    print("ready", flush=True)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    # Also stop when the test that started us goes away (stdin closed).
    while not stop:
        time.sleep(0.1)
        if os.getppid() == 1:
            break
    controller.stop()


if __name__ == "__main__":
    main()
