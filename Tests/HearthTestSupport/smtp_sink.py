#!/usr/bin/python3
"""A real SMTP server for the tests (Debian's python3-aiosmtpd): accepts every message and
writes each, decoded by Python's email package, as JSON into a folder.

    smtp_sink.py OUT_DIR [--tls CERT KEY] [--auth USER:PASSWORD] [--reject-rcpt | --hang-up-after-data]
                 [--hang-for ADDRESS] [--content-reply-delay SECONDS] [--no-pipelining]

--reject-rcpt answers every recipient 550 (nothing is sent); --hang-up-after-data keeps each
message, then closes the connection instead of answering (the client cannot know it arrived);
--hang-for keeps a message to ADDRESS and never answers it (the connection stays open);
--content-reply-delay keeps every message and answers it that much later (a content filter).
It offers PIPELINING (RFC 2920) in its EHLO reply, as mail relays do, unless --no-pipelining;
it reads pipelined commands either way.

Prints "PORT <n>" once it listens on a free loopback port; runs until its standard input
closes (so it never outlives the test process that started it) or it is killed.
"""
import argparse, asyncio, email, email.policy, json, os, socket, ssl, sys, time

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


class Sink:
    def __init__(self, out, reject_rcpt=False, hang_up_after_data=False, hang_for=None, content_reply_delay=0,
                 pipelining=True):
        self.out = out
        self.pipelining = pipelining
        self.content_reply_delay = content_reply_delay
        self.count = 0
        self.reject_rcpt = reject_rcpt
        self.hang_up_after_data = hang_up_after_data
        self.hang_for = hang_for

    async def handle_EHLO(self, server, session, envelope, hostname, responses):
        session.host_name = hostname
        if self.pipelining:
            responses.insert(len(responses) - 1, "250-PIPELINING")
        return responses

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if self.reject_rcpt:
            return "550 5.1.1 No such user here"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        message = email.message_from_bytes(envelope.original_content, policy=email.policy.default)
        body = message.get_body(preferencelist=("plain",))
        record = {
            "mail_from": envelope.mail_from,
            "rcpt_tos": envelope.rcpt_tos,
            "subject": str(message["subject"]),
            "raw_subject": message.get("subject", "").__str__(),
            "raw": envelope.original_content.decode("utf-8", "replace"),
            "from": str(message["from"]),
            "to": str(message["to"]),
            "date": str(message["date"]),
            "message_id": str(message["message-id"]),
            "content_type": message.get_content_type(),
            "charset": body.get_content_charset() if body else None,
            "body": body.get_content() if body else None,
            "tls": session.ssl is not None,
            "authenticated": bool(session.authenticated),
            "received_at": time.time(),
        }
        self.count += 1
        path = os.path.join(self.out, f"{time.time_ns()}-{self.count}.json")
        with open(path + ".tmp", "w") as f:
            json.dump(record, f)
        os.rename(path + ".tmp", path)
        if self.hang_up_after_data:
            server.transport.close()
        if self.hang_for in envelope.rcpt_tos:
            await asyncio.sleep(3600)
        await asyncio.sleep(self.content_reply_delay)
        return "250 Message accepted for delivery"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--tls", nargs=2)
    parser.add_argument("--auth")
    parser.add_argument("--reject-rcpt", action="store_true")
    parser.add_argument("--hang-up-after-data", action="store_true")
    parser.add_argument("--hang-for")
    parser.add_argument("--content-reply-delay", type=float, default=0)
    parser.add_argument("--no-pipelining", action="store_true")
    args = parser.parse_args()
    kwargs = {}
    if args.tls:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(*args.tls)
        kwargs["tls_context"] = context
        kwargs["require_starttls"] = True
    if args.auth:
        user, password = args.auth.split(":", 1)

        def authenticator(server, session, envelope, mechanism, auth_data):
            ok = isinstance(auth_data, LoginPassword) and auth_data.login.decode() == user \
                and auth_data.password.decode() == password
            return AuthResult(success=ok, handled=False)

        kwargs["authenticator"] = authenticator
        kwargs["auth_required"] = True
        kwargs["auth_require_tls"] = bool(args.tls)
    # aiosmtpd's controller cannot listen on port 0: take a free port, and another if it was
    # taken in between.
    for attempt in range(20):
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        sink = Sink(args.out, args.reject_rcpt, args.hang_up_after_data, args.hang_for, args.content_reply_delay,
                    not args.no_pipelining)
        controller = Controller(sink, hostname="127.0.0.1", port=port, **kwargs)
        try:
            controller.start()
            break
        except Exception:
            if attempt == 19:
                raise
    print(f"PORT {port}", flush=True)
    try:
        sys.stdin.read()
    finally:
        controller.stop()


if __name__ == "__main__":
    main()
