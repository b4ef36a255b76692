# A panel webhook receiver in Python 3 (standard library only).
#   WEBHOOK_SECRET=... PORT=8443 TLS_CERT=cert.pem TLS_KEY=key.pem python3 webhook_receiver.py
# Without TLS_CERT/TLS_KEY it serves plain HTTP (put it behind a TLS proxy: the panel only
# delivers to https:// URLs).
import hashlib
import hmac
import json
import os
import ssl
import sys
import threading
from collections import OrderedDict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = os.environ["WEBHOOK_SECRET"].encode()


def verify_signature(raw_body: bytes, header: str | None, secret: bytes) -> bool:
    """True when header is sha256=<hex HMAC-SHA256 of raw_body keyed with secret>."""
    if not header or not header.startswith("sha256="):
        return False
    expected = hmac.new(secret, raw_body, hashlib.sha256).hexdigest()
    # Constant-time comparison, on bytes (a str with non-ASCII characters would raise).
    return hmac.compare_digest(header[len("sha256="):].encode(), expected.encode())


def verify_delivery(raw_body: bytes, headers, secret: bytes) -> bool:
    """True when either signature header verifies with secret. During a secret rotation the
    panel signs with the new secret (X-Webhook-Signature) and, for the overlap it was given,
    with the previous one too (X-Webhook-Signature-Previous): a receiver still holding the old
    secret and one already holding the new accept the same deliveries."""
    return verify_signature(raw_body, headers.get("X-Webhook-Signature"), secret) or verify_signature(
        raw_body, headers.get("X-Webhook-Signature-Previous"), secret
    )


# Deliveries already handled, by X-Webhook-Delivery (a retry carries the same id). Keep this
# in your database (a unique key) in production; here: the last 10 000.
seen: "OrderedDict[str, None]" = OrderedDict()
seen_lock = threading.Lock()


def first_time(delivery_id: str) -> bool:
    with seen_lock:
        if delivery_id in seen:
            return False
        seen[delivery_id] = None
        if len(seen) > 10_000:
            seen.popitem(last=False)
        return True


def handle(payload: dict, delivery_id: str) -> None:
    # Your work goes here, after the answer (the panel waits at most 10 s). Make it idempotent:
    # the same event can arrive again, so key side effects on the event's data.
    print(f"handled {delivery_id} {payload['event']} {json.dumps(payload['data'], separators=(',', ':'))}", flush=True)


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        if length > 1024 * 1024:
            return self.answer(413, "too large")
        raw = self.rfile.read(length)  # the raw bytes: verify before parsing
        if not verify_delivery(raw, self.headers, SECRET):
            return self.answer(403, "bad signature")
        delivery_id = self.headers.get("X-Webhook-Delivery", "")
        try:
            payload = json.loads(raw)
        except ValueError:
            return self.answer(400, "bad json")
        is_new = first_time(delivery_id)
        self.answer(200, "ok" if is_new else "duplicate")  # answer first, then work
        if is_new:
            threading.Thread(target=handle, args=(payload, delivery_id), daemon=True).start()

    def answer(self, status: int, text: str) -> None:
        body = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer((os.environ.get("HOST", "127.0.0.1"), int(os.environ.get("PORT", "8443"))), Receiver)
    if os.environ.get("TLS_CERT") and os.environ.get("TLS_KEY"):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(os.environ["TLS_CERT"], os.environ["TLS_KEY"])
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(f"listening on {server.server_address[1]}", flush=True)
    sys.stdout.flush()
    server.serve_forever()
