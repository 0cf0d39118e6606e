"""A loopback SMTP server for the mail tests: aiosmtpd (Debian's python3-aiosmtpd) delivering
each message to a Maildir per recipient, BASE/<recipient>/{tmp,new,cur}.

usage: python3 smtpd.py PORT BASE                                    plain SMTP
       python3 smtpd.py PORT BASE starttls|tls CERT KEY USER PASSWORD   TLS and AUTH required
(prints "ready" once it accepts connections; stops with SIGTERM or when its parent goes away)
"""
import mailbox
import os
import signal
import ssl
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


def controller(port, base, tls):
    if not tls:
        return Controller(Deliver(base), hostname="127.0.0.1", port=port)
    from aiosmtpd.smtp import AuthResult, LoginPassword

    mode, cert, key, user, password = tls
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)

    def authenticator(server, session, envelope, mechanism, auth_data):
        ok = isinstance(auth_data, LoginPassword) and auth_data.login.decode() == user and auth_data.password.decode() == password
        return AuthResult(success=ok)

    common = dict(hostname="127.0.0.1", port=port, authenticator=authenticator, auth_required=True)
    if mode == "starttls":
        return Controller(Deliver(base), tls_context=ctx, require_starttls=True, auth_require_tls=True, **common)
    # Implicit TLS: the whole connection is TLS; aiosmtpd only tracks STARTTLS for auth_require_tls.
    return Controller(Deliver(base), ssl_context=ctx, server_hostname="localhost", auth_require_tls=False, **common)


def main():
    port, base = int(sys.argv[1]), sys.argv[2]
    os.makedirs(base, exist_ok=True)
    c = controller(port, base, sys.argv[3:8])
    c.start()
    print("ready", flush=True)
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    while not stop:
        time.sleep(0.1)
        if os.getppid() == 1:
            break
    c.stop()


if __name__ == "__main__":
    main()
