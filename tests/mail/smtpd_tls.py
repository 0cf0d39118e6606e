"""A loopback SMTP server with TLS and AUTH for the transport tests: aiosmtpd delivering to a
Maildir per recipient, BASE/<recipient>/{tmp,new,cur}.

usage: python3 smtpd_tls.py PORT BASE starttls|tls CERT KEY USER PASSWORD
(prints "ready" once it accepts connections; stops with SIGTERM or when its parent goes away)
"""
import mailbox
import os
import signal
import ssl
import sys
import time

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


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
    port, base, mode, cert, key, user, password = sys.argv[1:8]
    os.makedirs(base, exist_ok=True)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)

    def authenticator(server, session, envelope, mechanism, auth_data):
        ok = isinstance(auth_data, LoginPassword) and auth_data.login.decode() == user and auth_data.password.decode() == password
        return AuthResult(success=ok)

    common = dict(hostname="127.0.0.1", port=int(port), authenticator=authenticator, auth_required=True)
    if mode == "starttls":
        controller = Controller(Deliver(base), tls_context=ctx, require_starttls=True, auth_require_tls=True, **common)
    else:
        # The whole connection is TLS; aiosmtpd only tracks STARTTLS for auth_require_tls.
        controller = Controller(Deliver(base), ssl_context=ctx, server_hostname="localhost", auth_require_tls=False, **common)
    controller.start()
    print("ready", flush=True)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    while not stop:
        time.sleep(0.1)
        if os.getppid() == 1:
            break
    controller.stop()


if __name__ == "__main__":
    main()
