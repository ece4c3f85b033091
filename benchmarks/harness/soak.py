#!/usr/bin/env python3
"""Process-level soak with faults: the built Sluice jar as its own process, mixed load, and the faults
that only a real process on a real file system shows.

Load (WORKERS threads, each request with a unique path): plain HTTP through the proxy, a denied host, a
malformed request, a CONNECT tunnel with a request inside, an intercepted HTTPS POST carrying a fake
credential (redaction on), an origin that resets mid-body, a slow reader of a 512 KiB answer, a slow
writer of a request head.

Faults, all at once while the load runs:
  * the policy file rewritten every 2 s, alternately valid and broken, each time followed by SIGHUP;
  * SIGHUP storms: 50 signals in half a second, every 5 s;
  * the audit disk filling up: the audit log lives on its own small tmpfs (root only; skipped with a
    note otherwise); a third into the run a filler file takes every free byte, it stays full for 4 s,
    then the filler is deleted.

Afterwards (after SIGTERM and a clean exit):
  * every request the clients sent has exactly one audit record (matched by its unique path; tunnels
    and malformed requests by count), the hash chain verifies (`sluice audit verify`);
  * every client got a complete answer or a clean error (a status line, or a close/reset for the
    reset-mid-body origin), none hung;
  * while the disk was full Sluice answered 503 audit_unavailable, and nothing it had accepted was lost;
  * no Netty leak report in Sluice's log (the jar runs with -Dio.netty.leakDetection.level=paranoid);
  * RSS sampled every second; descriptors back near their baseline after the load stops.

Usage: benchmarks/harness/soak.py [--seconds 60] [--workers 6] [--out DIR]
Needs the jar (mvn -q -B -DskipTests package), python3, openssl. Exit 1 when a check fails.
"""

import argparse
import http.client
import json
import os
import random
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
JAR = os.path.join(REPO, "proxy", "target", "sluice.jar")
FAKE_KEY = "sk-proj-" + "Zq3" * 16 + "T3BlbkFJ" + "x9Lm" * 5  # fake, random-looking, never real
BIG = 512 * 1024


def log(msg):
    print("[soak] " + msg, file=sys.stderr, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Origin(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def do_GET(self):
        if self.path.startswith("/soak/reset/"):
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"r" * 3000)
            self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            self.connection.close()
            self.close_connection = True
            return
        body = b"b" * BIG if self.path.startswith("/soak/slowread/") else b"soak ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        got = self._body()
        self.server.received.append(got)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")


def serve(server):
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    return server


class Soak:
    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="sluice-soak-")
        self.data = os.path.join(self.work, "data")
        self.audit_dir = os.path.join(self.work, "audit")
        os.makedirs(self.data)
        os.makedirs(self.audit_dir)
        self.mounted = False
        self.lock = threading.Lock()
        self.sent = {}          # kind -> list of unique paths (or ids)
        self.outcomes = {}      # kind -> {outcome: count}
        self.failures = []
        self.full_503 = 0
        self.full_window = [None, None]
        self.rss = []
        self.millis = {}        # kind -> durations of answered requests, ms
        self.stop = threading.Event()
        self.proc = None

    # ---- setup -------------------------------------------------------------------------------------
    def setup(self):
        if os.geteuid() == 0:
            r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m,mode=0700", "tmpfs", self.audit_dir],
                               capture_output=True, text=True)
            self.mounted = r.returncode == 0
            if not self.mounted:
                log("tmpfs mount failed (" + r.stderr.strip() + "): the disk-full fault is skipped")
        else:
            log("not root: the audit disk is not a tmpfs and the disk-full fault is skipped")
        cert = os.path.join(self.work, "origin.crt")
        key = os.path.join(self.work, "origin.key")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                        "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=inspected.test",
                        "-addext", "subjectAltName=DNS:inspected.test"], check=True, capture_output=True)
        self.plain = serve(ThreadingHTTPServer(("127.0.0.1", 0), Origin))
        self.plain.received = []
        self.tls = ThreadingHTTPServer(("127.0.0.1", 0), Origin)
        self.tls.received = []
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        self.tls.socket = ctx.wrap_socket(self.tls.socket, server_side=True)
        serve(self.tls)
        self.proxy_port = free_port()
        self.admin_port = free_port()
        self.policy_file = os.path.join(self.work, "policy.yaml")
        self.good = f"""version: 1
extensions:
  default:
    allow:
      - host: plain.test
        ports: [{self.plain.server_port}]
      - host: inspected.test
        ports: [{self.tls.server_port}]
network:
  allow_private: ["127.0.0.1/32"]
  hosts:
    plain.test: 127.0.0.1
    inspected.test: 127.0.0.1
inspect:
  inspected.test: {{ redact: true }}
tls:
  extra_trust: ["{cert}"]
limits:
  header_timeout: 2s
audit:
  path: {os.path.join(self.audit_dir, "audit.jsonl")}
  max_file_bytes: 4MiB
  keep_files: 20
listen:
  proxy: 127.0.0.1:{self.proxy_port}
  admin: 127.0.0.1:{self.admin_port}
"""
        with open(self.policy_file, "w") as f:
            f.write(self.good)
        self.stderr = open(os.path.join(self.work, "sluice.log"), "w")
        self.proc = subprocess.Popen(
            ["java", "--add-modules", "jdk.incubator.vector", "-Dio.netty.leakDetection.level=paranoid",
             "-Xmx512m", "-jar", JAR, "run", "--policy", self.policy_file, "--data-dir", self.data],
            stdout=subprocess.DEVNULL, stderr=self.stderr, cwd=self.work)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.admin_port, timeout=2)
                c.request("GET", "/readyz")
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise SystemExit("soak: sluice exited at start; see " + self.stderr.name)
            time.sleep(0.1)
        else:
            raise SystemExit("soak: sluice not ready within 60 s")
        self.ca = ssl.create_default_context(cafile=os.path.join(self.data, "ca.crt.pem"))

    # ---- one request of each kind ------------------------------------------------------------------
    def note(self, kind, ident, outcome):
        with self.lock:
            self.sent.setdefault(kind, []).append(ident)
            self.outcomes.setdefault(kind, {}).setdefault(outcome, 0)
            self.outcomes[kind][outcome] += 1
            if outcome == "503 audit_unavailable":
                self.full_503 += 1

    def fail(self, kind, ident, why):
        with self.lock:
            self.failures.append(f"{kind} {ident}: {why}")

    def proxy(self, timeout=15):
        return http.client.HTTPConnection("127.0.0.1", self.proxy_port, timeout=timeout)

    @staticmethod
    def outcome(resp, body=None):
        reason = resp.getheader("X-Sluice-Reason")
        return f"{resp.status} {reason}" if reason else str(resp.status)

    def plain_get(self, ident):
        c = self.proxy()
        path = f"/soak/plain/{ident}"
        c.request("GET", f"http://plain.test:{self.plain.server_port}{path}")
        r = c.getresponse()
        body = r.read()
        if r.status == 200 and body != b"soak ok\n":
            raise AssertionError(f"incomplete body {len(body)} bytes")
        c.close()
        return path, self.outcome(r)

    def denied(self, ident):
        c = self.proxy()
        path = f"/soak/denied/{ident}"
        c.request("GET", f"http://denied.test{path}")
        r = c.getresponse()
        r.read()
        c.close()
        return path, self.outcome(r)

    def malformed(self, ident):
        s = socket.create_connection(("127.0.0.1", self.proxy_port), timeout=15)
        s.sendall(b"GET http://exa mple.test/soak/malformed/" + ident.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        head = s.recv(4096).split(b"\r\n", 1)[0].decode(errors="replace")
        s.close()
        return None, head.split(" ", 2)[1] if head.startswith("HTTP/1.1 ") else "closed"

    def tunnel(self, ident):
        c = self.proxy()
        c.set_tunnel("plain.test", self.plain.server_port)
        path = f"/soak/tunnel/{ident}"
        try:
            c.request("GET", path, headers={"Host": "plain.test"})
        except OSError as e:
            if "503" in str(e):
                return None, "503 tunnel refused"
            raise
        r = c.getresponse()
        body = r.read()
        if body != b"soak ok\n":
            raise AssertionError("incomplete tunnelled body")
        c.close()
        return None, "200 tunnel"

    def intercepted(self, ident):
        c = http.client.HTTPSConnection("127.0.0.1", self.proxy_port, timeout=15, context=self.ca)
        c.set_tunnel("inspected.test", self.tls.server_port)
        path = f"/soak/intercepted/{ident}"
        body = json.dumps({"messages": [{"role": "user", "content": "key " + FAKE_KEY + " " + ident}]})
        try:
            c.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        except OSError as e:
            if "503" in str(e):
                return None, "503 tunnel refused"
            raise
        r = c.getresponse()
        r.read()
        c.close()
        return path, self.outcome(r)

    def reset(self, ident):
        c = self.proxy()
        path = f"/soak/reset/{ident}"
        c.request("GET", f"http://plain.test:{self.plain.server_port}{path}")
        try:
            r = c.getresponse()
            r.read()
            out = self.outcome(r)
            if r.status == 200:
                raise AssertionError("a reset mid-body arrived as a complete 200")
        except (http.client.IncompleteRead, ConnectionError):
            out = "cut after head"
        c.close()
        return path, out

    def slow_read(self, ident):
        s = socket.create_connection(("127.0.0.1", self.proxy_port), timeout=15)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        path = f"/soak/slowread/{ident}"
        s.sendall(f"GET http://plain.test:{self.plain.server_port}{path} HTTP/1.1\r\nHost: plain.test\r\n"
                  f"Connection: close\r\n\r\n".encode())
        got = 0
        head = b""
        while True:
            chunk = s.recv(8192)
            if not chunk:
                break
            got += len(chunk)
            if len(head) < 200:
                head += chunk[:200]
            time.sleep(0.005)  # the fault: a reader slower than the origin, not a wait for a condition
        s.close()
        status = head.split(b"\r\n", 1)[0].decode(errors="replace")
        if status.startswith("HTTP/1.1 200") and got < BIG:
            raise AssertionError(f"slow reader got {got} bytes of a {BIG}-byte answer")
        return path, status.split(" ", 2)[1] if status.startswith("HTTP/1.1 ") else "closed"

    def slow_write(self, ident):
        s = socket.create_connection(("127.0.0.1", self.proxy_port), timeout=15)
        path = f"/soak/slowwrite/{ident}"
        req = (f"GET http://plain.test:{self.plain.server_port}{path} HTTP/1.1\r\nHost: plain.test\r\n"
               f"Connection: close\r\n\r\n").encode()
        try:
            for i in range(0, len(req), 8):
                s.sendall(req[i:i + 8])
                time.sleep(0.01)  # the fault: a slow writer
        except OSError:
            pass
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionError:
                break
            if not chunk:
                break
            data += chunk
        s.close()
        status = data.split(b"\r\n", 1)[0].decode(errors="replace")
        return path, status.split(" ", 2)[1] if status.startswith("HTTP/1.1 ") else "closed"

    KINDS = ["plain", "plain", "plain", "denied", "malformed", "tunnel", "intercepted", "intercepted", "reset",
             "slowwrite"]

    def worker(self, w):
        rnd = random.Random(w)
        n = 0
        while not self.stop.is_set():
            kind = "slowread" if n % 50 == 7 else rnd.choice(self.KINDS)
            ident = f"w{w}-{n}"
            n += 1
            fn = {"plain": self.plain_get, "denied": self.denied, "malformed": self.malformed,
                  "tunnel": self.tunnel, "intercepted": self.intercepted, "reset": self.reset,
                  "slowread": self.slow_read, "slowwrite": self.slow_write}[kind]
            started = time.monotonic()
            try:
                path, out = fn(ident)
                self.note(kind, path or ident, out)
                with self.lock:
                    self.millis.setdefault(kind, []).append((time.monotonic() - started) * 1000)
            except socket.timeout:
                self.fail(kind, ident, "no answer within 15 s (hang)")
                self.note(kind, ident, "hang")
            except AssertionError as e:
                self.fail(kind, ident, str(e))
                self.note(kind, ident, "bad")
            except (ConnectionError, http.client.HTTPException, OSError) as e:
                self.note(kind, ident, "closed: " + type(e).__name__)

    # ---- faults ------------------------------------------------------------------------------------
    def reloads(self):
        broken = False
        while not self.stop.wait(2.0):
            tmp = self.policy_file + ".tmp"
            with open(tmp, "w") as f:
                f.write(self.good.replace("allow:", "alow:") if broken else self.good)
            os.replace(tmp, self.policy_file)
            self.proc.send_signal(signal.SIGHUP)
            broken = not broken
        with open(self.policy_file + ".tmp", "w") as f:
            f.write(self.good)
        os.replace(self.policy_file + ".tmp", self.policy_file)
        self.proc.send_signal(signal.SIGHUP)

    def storms(self):
        self.storms_sent = 0
        while not self.stop.wait(5.0):
            for _ in range(50):
                self.proc.send_signal(signal.SIGHUP)
                self.storms_sent += 1
                time.sleep(0.01)

    def disk_full(self):
        if not self.mounted:
            return
        if self.stop.wait(self.args.seconds / 3):
            return
        filler = os.path.join(self.audit_dir, "filler")
        self.full_window[0] = time.time()
        with open(filler, "wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass
        log("audit disk full")
        self.stop.wait(4.0)
        os.remove(filler)
        self.full_window[1] = time.time()
        log("audit disk freed")

    def sample(self):
        while not self.stop.wait(1.0):
            self.rss.append((time.time(), self.rss_kib(), self.fds()))

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return -1

    def fds(self):
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    # ---- run and check -----------------------------------------------------------------------------
    def run(self):
        self.setup()
        self.warm_connects = 0
        for i in range(3):  # warm-up of every kind, then the baseline
            for fn in (self.plain_get, self.tunnel, self.intercepted):
                fn(f"warm{i}")
            self.warm_connects += 2
        self.sent.clear()
        time.sleep(1.0)  # let the warm-up's connections close before the baseline; a settle, not a condition
        fd_base, rss_base = self.fds(), self.rss_kib()
        log(f"baseline: {fd_base} descriptors, RSS {rss_base // 1024} MiB; running {self.args.seconds} s")
        threads = [threading.Thread(target=self.worker, args=(w,), daemon=True) for w in range(self.args.workers)]
        threads += [threading.Thread(target=t, daemon=True) for t in (self.reloads, self.storms, self.disk_full,
                                                                      self.sample)]
        for t in threads:
            t.start()
        time.sleep(self.args.seconds)  # the soak's duration
        self.stop.set()
        for t in threads:
            t.join(60)
            if t.is_alive():
                self.failures.append("a client thread did not finish within 60 s after the stop")
        # Descriptors back near the baseline once the clients are gone (connections close asynchronously).
        fd_end = None
        deadline = time.time() + 20
        while time.time() < deadline:
            fd_end = self.fds()
            if fd_end <= fd_base + 8:
                break
            time.sleep(0.2)
        rss_end = self.rss_kib()
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = "killed after 60 s"
        self.stderr.close()
        return self.check(fd_base, fd_end, rss_base, rss_end, code)

    def records(self):
        files = sorted((f for f in os.listdir(self.audit_dir) if f.startswith("audit.jsonl")),
                       key=lambda f: -int(f.rsplit(".", 1)[1]) if f[-1].isdigit() else 1)
        out = []
        for f in files:
            with open(os.path.join(self.audit_dir, f), encoding="utf-8") as fh:
                for line in fh:
                    out.append(json.loads(line))
        return out, files

    def check(self, fd_base, fd_end, rss_base, rss_end, code):
        problems = list(self.failures)
        if code not in (0, 143):  # 143: the JVM's status after SIGTERM and its shutdown hooks
            problems.append(f"sluice exit status {code}")
        recs, files = self.records()
        rotated_away = len(files) == 1 + 20  # with keep_files 20, the oldest records may be gone
        by_path = {}
        for r in recs:
            p = r.get("url.path")
            if p and p.startswith("/soak/"):
                by_path[p] = by_path.get(p, 0) + 1
        missing, doubled = [], []
        for kind in ("plain", "denied", "intercepted", "reset", "slowread", "slowwrite"):
            for p in self.sent.get(kind, []):
                if not p.startswith("/soak/"):
                    continue  # a client error before the request was sent
                n = by_path.get(p, 0)
                if n == 0:
                    missing.append(p)
                elif n > 1:
                    doubled.append(p)
        connects = sum(1 for r in recs if r.get("http.request.method") == "CONNECT")
        sent_connects = len(self.sent.get("tunnel", [])) + len(self.sent.get("intercepted", [])) + self.warm_connects
        if connects != sent_connects and not rotated_away:
            problems.append(f"{sent_connects} CONNECTs sent, {connects} CONNECT records")
        malformed = sum(1 for r in recs if r.get("reason") in ("malformed_request", "malformed_target"))
        if malformed != len(self.sent.get("malformed", [])) and not rotated_away:
            problems.append(f"{len(self.sent.get('malformed', []))} malformed requests sent, {malformed} records")
        leaked = sum(1 for b in self.tls.received if FAKE_KEY.encode() in b)
        if leaked:
            problems.append(f"{leaked} intercepted bodies reached the origin with the fake credential unredacted")
        if missing and not rotated_away:
            problems.append(f"{len(missing)} requests without an audit record, e.g. {missing[:5]}")
        if doubled:
            problems.append(f"{len(doubled)} requests with more than one record, e.g. {doubled[:5]}")
        verify = subprocess.run(["java", "-jar", JAR, "audit", "verify", "--data-dir", self.data,
                                 "--file", os.path.join(self.audit_dir, "audit.jsonl")], capture_output=True, text=True)
        if verify.returncode != 0:
            problems.append("audit verify failed: " + (verify.stdout + verify.stderr).strip()[-500:])
        if self.mounted and self.full_503 == 0:
            problems.append("the audit disk was full but no client saw 503 audit_unavailable")
        leak = [l for l in open(self.stderr.name, encoding="utf-8", errors="replace") if "LEAK:" in l]
        if leak:
            problems.append(f"{len(leak)} Netty leak reports, first: {leak[0].strip()[:300]}")
        if fd_end is None or fd_end > fd_base + 8:
            problems.append(f"descriptors {fd_end} after the load, baseline {fd_base}")
        rss_peak = max((s[1] for s in self.rss), default=rss_end)
        result = {
            "seconds": self.args.seconds, "workers": self.args.workers,
            "requests": {k: len(v) for k, v in self.sent.items()},
            "outcomes": self.outcomes,
            "median_ms": {k: round(sorted(v)[len(v) // 2], 1) for k, v in self.millis.items() if v},
            "audit_records": len(recs), "audit_files": files,
            "intercepted_bodies_at_origin": len(self.tls.received),
            "disk_full": "skipped (not root or no tmpfs)" if not self.mounted else {
                "seconds": round((self.full_window[1] or 0) - (self.full_window[0] or 0), 1),
                "clients_answered_503_audit_unavailable": self.full_503},
            "sighup_storm_signals": getattr(self, "storms_sent", 0),
            "descriptors": {"baseline": fd_base, "after": fd_end},
            "rss_mib": {"baseline": round(rss_base / 1024, 1), "peak": round(rss_peak / 1024, 1),
                        "after": round(rss_end / 1024, 1)},
            "rss_series_mib": [round(s[1] / 1024, 1) for s in self.rss],
            "verify": verify.stdout.strip(),
            "problems": problems,
        }
        return result

    def cleanup(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
        if self.mounted:
            subprocess.run(["umount", self.audit_dir], capture_output=True)
        for s in (getattr(self, "plain", None), getattr(self, "tls", None)):
            if s:
                s.shutdown()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--workers", type=int, default=6)
    ap.add_argument("--out", default=os.path.join(REPO, "benchmarks", "target", "soak"))
    args = ap.parse_args()
    if not os.path.exists(JAR):
        raise SystemExit("soak: build the jar first: mvn -q -B -DskipTests package")
    soak = Soak(args)
    try:
        result = soak.run()
    finally:
        soak.cleanup()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "soak.json"), "w") as f:
        json.dump(result, f, indent=2)
    summary = {k: v for k, v in result.items() if k != "rss_series_mib"}
    print(json.dumps(summary, indent=2))
    if result["problems"]:
        log("FAILED: " + "; ".join(result["problems"]))
        sys.exit(1)
    log("ok")


if __name__ == "__main__":
    main()
