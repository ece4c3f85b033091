#!/usr/bin/env python3
"""Side-by-side load harness: one loopback origin, then the same loads through each system in turn.

Run it through run.sh (which installs the peers and checks the jars); see benchmarks/README.md.
Systems: direct (no proxy), sluice, littleproxy, squid, tinyproxy; mitmproxy (mitmdump) and
sluice-intercept only take part in the interception load. Each round runs every load once for every
system, in turn (A B C A B C ...; the order rotates by one each round), so drift on a shared machine
hits every system alike. The tables report, per system, the median over the rounds of each figure.
The native-TLS loads (tls_keepalive, tls_new, tls_new_full, sse_native) use NettyTlsLoad (Netty +
BoringSSL) as the client and nginx (generated config in the temp dir) as the origin; they are skipped
with a note when nginx or openssl is missing, and are not in --quick unless asked for with --loads.

Exit status: 0 when Sluice and the direct baseline ran every load; 1 when Sluice failed to start or a
Sluice or direct run produced no successful request (a harness bug or Sluice not working); peers that
cannot be installed, started or that fail are skipped with a note and never change the exit status.
"""
import argparse
import json
import os
import platform
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH_JAR = ROOT / "benchmarks" / "target" / "benchmarks.jar"
SLUICE = ROOT / "sluice"
LUA = ROOT / "benchmarks" / "scripts" / "absolute-form.lua"
REDACT = ROOT / "benchmarks" / "harness" / "redact.py"
BENCH_HOST = "llm.bench.test"

PROXIES = ["sluice", "littleproxy", "squid", "tinyproxy"]
ALL_SYSTEMS = ["direct"] + PROXIES + ["mitmproxy"]
CLASSIC_LOADS = ["plain", "https_new", "https_keepalive", "bulk", "sse", "idle"]
# Loads on native TLS at both ends: the Netty + BoringSSL client (NettyTlsLoad) and nginx as the origin.
# Not in --quick unless asked for with --loads (CI's smoke run stays what it was).
NATIVE_LOADS = ["tls_keepalive", "tls_new", "tls_new_full", "sse_native"]
LOADS = CLASSIC_LOADS + NATIVE_LOADS
# sluice-intercept-base: another build's jar (--sluice-base-jar), intercepting, for before/after in one run.
NATIVE_SYSTEMS = ["direct", "sluice", "sluice-intercept", "sluice-intercept-base", "mitmproxy"]
LOAD_SYSTEMS = {
    "plain": ["direct"] + PROXIES + ["sluice-nio"],
    "https_new": ["direct"] + PROXIES,
    "https_keepalive": ["direct"] + PROXIES,
    "bulk": ["direct"] + PROXIES + ["sluice-nio", "relay-copy", "relay-splice"],
    "idle": PROXIES,
    "sse": ["direct", "sluice", "mitmproxy", "sluice-intercept"],
    "tls_keepalive": NATIVE_SYSTEMS,
    "tls_new": NATIVE_SYSTEMS,
    "tls_new_full": NATIVE_SYSTEMS,
    "sse_native": NATIVE_SYSTEMS,
}
INTERCEPT_LOADS = ["sse"] + NATIVE_LOADS
LOAD_TITLES = {
    "plain": "1. Plain HTTP, absolute-form, 13-byte responses, keep-alive, 64 connections (wrk)",
    "https_new": "2a. HTTPS through CONNECT, a new connection + CONNECT + TLS handshake per request, 16 workers (ConnectLoad --mode new)",
    "https_keepalive": "2b. HTTPS through CONNECT, keep-alive, 64 tunnels (ConnectLoad --mode keepalive)",
    "bulk": "3. One bulk download through a CONNECT tunnel (BulkDownload)",
    "idle": "4. Idle CONNECT tunnels held open: the proxy's RSS (IdleTunnels)",
    "sse": "5. 64 KiB JSON POST answered by an SSE stream, over TLS (SseLoad): interception with redaction vs blind tunnel",
    "tls_keepalive": "6a. Native TLS at both ends (NettyTlsLoad on BoringSSL, nginx origin): HTTPS keep-alive GETs, 64 connections",
    "tls_new": "6b. Native TLS: a new connection + CONNECT + TLS handshake per request, session resumption offered, 16 workers",
    "tls_new_full": "6c. Native TLS: a new connection + CONNECT + full TLS handshake per request (no resumption), 16 workers",
    "sse_native": "6d. Native TLS: 64 KiB JSON POST answered by an SSE body (nginx), 8 connections: interception with redaction vs blind tunnel",
}


def log(msg):
    print(f"[harness {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc=None, timeout=30.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def cpu_seconds(pid):
    """User + system CPU time of a process, all its threads, in seconds (from /proc/PID/stat)."""
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


class RssSampler:
    """Samples VmRSS of one process every 0.2 s while a load runs; keeps the maximum (KiB)."""

    def __init__(self, pid):
        self.pid = pid
        self.max = None
        self._stop = threading.Event()
        self._thread = None

    def __enter__(self):
        if self.pid:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def _run(self):
        while not self._stop.is_set():
            v = rss_kib(self.pid)
            if v is not None and (self.max is None or v > self.max):
                self.max = v
            self._stop.wait(0.2)

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread:
            self._thread.join()


class System:
    """A running system under test: its name, the port clients use (0 = direct) and the process to watch."""

    def __init__(self, name, port=0, proc=None, note=None, ca=None):
        self.name = name
        self.port = port
        self.proc = proc
        self.note = note
        self.ca = ca

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def alive(self):
        return self.proc is None or self.proc.poll() is None


class Harness:
    def __init__(self, args):
        self.args = args
        self.quick = args.quick
        self.work = Path(tempfile.mkdtemp(prefix="sluice-harness-"))
        os.chmod(self.work, 0o777)
        self.out = Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.procs = []
        self.systems = {}
        self.skipped = {}
        self.runs = []
        self.failures = []
        self.seconds = args.seconds if args.seconds else (2 if self.quick else 10)
        # Quick mode's warm-up is 3 s: a request counts only if it starts after the warm-up, and 64 keep-alive
        # TLS connections whose first request (the handshake) outlasts a 1 s warm-up on a loaded 2-core machine
        # left a round with no measured request at all (seen once for `direct`, with no error).
        self.warmup = args.warmup if args.warmup is not None else (3 if self.quick else 2)
        self.bulk_bytes = args.bulk_mib * 1024 * 1024 if args.bulk_mib else (
            (256 if self.quick else 1024) * 1024 * 1024)
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass
        self.fd_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        wanted = args.tunnels if args.tunnels else (1000 if self.quick else 10000)
        # A proxy holds two sockets per tunnel (downstream and upstream), plus its own files.
        self.tunnels = min(wanted, (self.fd_limit - 300) // 2)
        self.tunnels_wanted = wanted
        self.nginx_port = 0
        self.nginx_note = None
        self.native_warmup = args.native_warmup if args.native_warmup is not None else (
            self.warmup if self.quick else max(self.warmup, 5))
        self.native_warmup_pass = args.native_warmup_pass if args.native_warmup_pass is not None else (
            max(self.warmup, 1) if self.quick else 20)

    # ---------------------------------------------------------------- processes

    def spawn(self, cmd, name, env=None, stdout=None, cwd=None):
        logf = open(self.work / f"{name}.log", "ab")
        proc = subprocess.Popen(cmd, stdout=stdout if stdout is not None else logf, stderr=logf,
                                stdin=subprocess.DEVNULL, env=env, cwd=cwd, start_new_session=True)
        self.procs.append(proc)
        return proc

    def stop_all(self):
        for proc in reversed(self.procs):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except OSError:
                    pass
        deadline = time.time() + 10
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except OSError:
                    pass

    def log_tail(self, name, lines=15):
        p = self.work / f"{name}.log"
        if not p.exists():
            return ""
        return "\n".join(p.read_text(errors="replace").splitlines()[-lines:])

    # ---------------------------------------------------------------- origin and systems

    def start_origin(self):
        self.http_port, self.https_port, self.sse_port, self.bulk_port = (free_port() for _ in range(4))
        self.origin_cert = self.work / "origin.pem"
        proc = self.spawn(["java", "-cp", str(BENCH_JAR), "dev.sluice.benchmarks.LoopbackOrigin",
                           f"http={self.http_port}", f"https={self.https_port}", f"sse={self.sse_port}",
                           f"bulk={self.bulk_port}:{self.bulk_bytes}", "--cert-out", str(self.origin_cert)],
                          "origin")
        for port in (self.http_port, self.https_port, self.sse_port, self.bulk_port):
            if not wait_port(port, proc, 60):
                raise SystemExit("harness: the loopback origin did not start:\n" + self.log_tail("origin"))
        self.origin_ports = [self.http_port, self.https_port, self.sse_port, self.bulk_port]
        log(f"origin: http {self.http_port}, https {self.https_port}, sse {self.sse_port}, "
            f"bulk {self.bulk_port} ({self.bulk_bytes} bytes)")

    def start_nginx(self):
        """nginx as the native-TLS origin (the Debian package, run as-is with a generated config): one TLS
        listener on an ephemeral loopback port with a leaf for BENCH_HOST, localhost and 127.0.0.1 signed by
        a CA made here; `/small` answers 13 bytes, `/v1/messages` (a POST) a fixed text/event-stream body
        of 33 events. Everything (config, pid, logs, temp paths) lives in the run's temp dir. Returns None,
        or why nginx is not available (the native loads are then skipped with that note)."""
        self.nginx_port = 0
        exe = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
        openssl = shutil.which("openssl")
        if not exe:
            return "nginx is not installed"
        if not openssl:
            return "openssl (to make nginx's certificate) is not installed"
        d = self.work / "nginx"
        d.mkdir()
        os.chmod(d, 0o777)
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        (d / "leaf.ext").write_text(f"subjectAltName=DNS:{BENCH_HOST},DNS:localhost,IP:127.0.0.1\n"
                                    "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                                    "extendedKeyUsage=serverAuth\n")
        steps = [
            [openssl, "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=sluice-bench-nginx-ca", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
            [openssl, "req", *ec, "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", f"/CN={BENCH_HOST}"],
            [openssl, "x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "leaf.pem", "-days", "2", "-extfile", "leaf.ext"],
        ]
        for cmd in steps:
            out = subprocess.run(cmd, cwd=d, capture_output=True, text=True)
            if out.returncode != 0:
                return f"openssl failed making nginx's certificate: {(out.stderr or out.stdout).strip()[-200:]}"
        for sub in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (d / sub).mkdir()
            os.chmod(d / sub, 0o777)
        events = "".join(
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":" + str(i)
            + ",\"delta\":{\"type\":\"text_delta\",\"text\":\"token " + str(i) + "\"}}\n\n" for i in range(32))
        events += "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
        port = free_port()
        conf = d / "nginx.conf"
        conf.write_text(f"""# nginx as the harness's native-TLS origin; generated, everything under {d}.
daemon off;
master_process on;
worker_processes 2;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 8192; }}
http {{
  access_log off;
  client_body_temp_path {d}/body;
  proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi;
  scgi_temp_path {d}/scgi;
  client_body_buffer_size 128k;
  client_max_body_size 1m;
  keepalive_requests 10000000;
  keepalive_timeout 600s;
  server {{
    listen 127.0.0.1:{port} ssl;
    server_name {BENCH_HOST} localhost;
    ssl_certificate {d}/leaf.pem;
    ssl_certificate_key {d}/leaf.key;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_session_cache shared:bench:8m;
    ssl_session_tickets on;
    location = /small {{
      default_type text/plain;
      return 200 'hello, world\n';
    }}
    location = /v1/messages {{
      default_type text/event-stream;
      return 200 '{events}';
    }}
  }}
}}
""")
        proc = self.spawn([exe, "-p", str(d) + "/", "-e", str(d / "error.log"), "-c", str(conf)], "nginx")
        if not wait_port(port, proc, 30):
            err = (d / "error.log").read_text(errors="replace")[-400:] if (d / "error.log").exists() else ""
            return "nginx did not start: " + (self.log_tail("nginx", 5) + " " + err).strip()
        self.nginx_port = port
        self.nginx_dir = d
        self.nginx_ca = d / "ca.pem"
        self.origin_ports.append(port)
        log(f"nginx origin: TLS on {port} ({version_of([exe, '-v'])})")
        return None

    def sluice_policy(self, port, inspect):
        ports = ", ".join(str(p) for p in self.origin_ports)
        text = f"""version: 1
extensions:
  default:
    allow:
      - cidr: 127.0.0.1/32
        ports: [{ports}]
      - host: {BENCH_HOST}
        ports: [{", ".join(str(p) for p in [self.sse_port] + ([self.nginx_port] if self.nginx_port else []))}]
network:
  allow_private: ["127.0.0.1/32"]
  hosts:
    {BENCH_HOST}: 127.0.0.1
listen:
  proxy: 127.0.0.1:{port}
  admin: 127.0.0.1:0
limits:
  idle_timeout: 600s
  max_connections_per_extension: 30000
audit:
  path: audit.jsonl
"""
        if inspect:
            text += f"""inspect:
  {BENCH_HOST}: {{ redact: true }}
redaction:
  action: redact
  builtin: all
tls:
  extra_trust: [{", ".join(str(c) for c in [self.origin_cert] + ([self.nginx_ca] if self.nginx_port else []))}]
"""
        return text

    def sluice_cmd(self, name):
        """The command that runs Sluice: the ./sluice script, or for sluice-intercept-base the jar given
        with --sluice-base-jar (run as the script runs its own)."""
        if name == "sluice-intercept-base":
            return ["java", "--add-modules", "jdk.incubator.vector", *self.args.sluice_java_opts.split(),
                    "-jar", str(Path(self.args.sluice_base_jar).resolve())]
        return [str(SLUICE)]

    def start_sluice(self, name="sluice", inspect=False):
        port = free_port()
        data = self.work / f"{name}-data"
        data.mkdir()
        policy = self.work / f"{name}-policy.yaml"
        policy.write_text(self.sluice_policy(port, inspect))
        if inspect:
            check = subprocess.run(self.sluice_cmd(name) + ["check", str(policy)], capture_output=True, text=True)
            if check.returncode != 0:
                first = (check.stdout + check.stderr).strip().splitlines()
                why = (first[0] if first else "check failed").replace(str(policy), policy.name)
                return None, "not available in this build: the policy loader rejects `inspect:` (" + why + ")"
        env = dict(os.environ)
        env["SLUICE_JAVA_OPTS"] = self.args.sluice_java_opts
        # sluice-nio: the same build on the NIO fallback transport, to compare with the default (epoll).
        env["SLUICE_TRANSPORT"] = "nio" if name == "sluice-nio" else "epoll"
        proc = self.spawn(self.sluice_cmd(name) + ["run", "--policy", str(policy), "--data-dir", str(data)], name, env=env)
        if not wait_port(port, proc, 60):
            return None, "did not start: " + self.log_tail(name, 5)
        ca = None
        if inspect:
            ca = self.work / f"{name}-ca.pem"
            exp = subprocess.run(self.sluice_cmd(name) + ["ca", "export", "--data-dir", str(data)], capture_output=True)
            if exp.returncode != 0 or b"BEGIN CERTIFICATE" not in exp.stdout:
                return None, "not available in this build: `sluice ca export` gave no CA certificate"
            ca.write_bytes(exp.stdout)
        self.sluice_data = getattr(self, "sluice_data", {})
        self.sluice_data[name] = data
        return System(name, port, proc, ca=ca), None

    def start_littleproxy(self):
        port = free_port()
        proc = self.spawn(["java", "-cp", str(BENCH_JAR), "dev.sluice.benchmarks.LittleProxyLauncher", str(port)],
                          "littleproxy")
        if not wait_port(port, proc, 60):
            return None, "did not start: " + self.log_tail("littleproxy", 5)
        return System("littleproxy", port, proc), None

    def start_relay(self, mode):
        """A bare CONNECT relay (RelayLauncher: no policy, audit or counts) that prices the relay alone:
        copy through the JVM, or splice(2) on epoll."""
        port = free_port()
        name = "relay-" + mode
        proc = self.spawn(["java", "-cp", str(BENCH_JAR), "dev.sluice.benchmarks.RelayLauncher", mode, str(port)],
                          name)
        if not wait_port(port, proc, 60):
            return None, "did not start: " + self.log_tail(name, 5)
        return System(name, port, proc), None

    def start_squid(self):
        exe = shutil.which("squid") or ("/usr/sbin/squid" if os.path.exists("/usr/sbin/squid") else None)
        if not exe:
            return None, "not installed (apt-get install squid failed or was skipped)"
        port = free_port()
        d = self.work / "squid"
        d.mkdir()
        os.chmod(d, 0o777)
        ports = " ".join(str(p) for p in self.origin_ports)
        conf = d / "squid.conf"
        conf.write_text(f"""# Minimal forward proxy for the harness: loopback clients only, no cache, no access log.
http_port 127.0.0.1:{port}
visible_hostname sluice-bench
pid_filename none
cache deny all
cache_mem 8 MB
access_log none
cache_store_log none
cache_log {d}/cache.log
coredump_dir {d}
max_filedescriptors {self.fd_limit}
shutdown_lifetime 0 seconds
acl bench_ports port {ports}
acl bench_connect method CONNECT
http_access deny bench_connect !bench_ports
http_access allow localhost
http_access deny all
""")
        proc = self.spawn([exe, "-N", "-f", str(conf)], "squid")
        if not wait_port(port, proc, 30):
            return None, "did not start: " + self.log_tail("squid", 5) + (d / "cache.log").read_text(errors="replace")[-500:] \
                if (d / "cache.log").exists() else "did not start: " + self.log_tail("squid", 5)
        return System("squid", port, proc), None

    def start_tinyproxy(self):
        exe = shutil.which("tinyproxy") or ("/usr/bin/tinyproxy" if os.path.exists("/usr/bin/tinyproxy") else None)
        if not exe:
            return None, "not installed (apt-get install tinyproxy failed or was skipped)"
        port = free_port()
        d = self.work / "tinyproxy"
        d.mkdir()
        os.chmod(d, 0o777)
        connect_ports = "\n".join(f"ConnectPort {p}" for p in self.origin_ports)
        conf = d / "tinyproxy.conf"
        conf.write_text(f"""User nobody
Group nogroup
Port {port}
Listen 127.0.0.1
Timeout 600
MaxClients {self.tunnels + 1000}
Allow 127.0.0.1
{connect_ports}
LogFile "{d}/tinyproxy.log"
LogLevel Critical
""")
        proc = self.spawn([exe, "-d", "-c", str(conf)], "tinyproxy")
        if not wait_port(port, proc, 30):
            return None, "did not start: " + self.log_tail("tinyproxy", 5)
        return System("tinyproxy", port, proc), None

    def start_mitmproxy(self):
        exe = shutil.which("mitmdump")
        if not exe:
            return None, "not installed (apt-get install mitmproxy failed or was skipped)"
        port = free_port()
        confdir = self.work / "mitmproxy"
        confdir.mkdir()
        proc = self.spawn([exe, "--listen-host", "127.0.0.1", "-p", str(port), "--set", "ssl_insecure=true",
                           "--set", f"confdir={confdir}", "--set", "termlog_verbosity=error",
                           "--set", "flow_detail=0", "-s", str(REDACT)], "mitmproxy")
        if not wait_port(port, proc, 60):
            return None, "did not start: " + self.log_tail("mitmproxy", 5)
        ca = confdir / "mitmproxy-ca-cert.pem"
        for _ in range(50):
            if ca.exists():
                break
            time.sleep(0.1)
        if not ca.exists():
            return None, "started but wrote no CA certificate"
        return System("mitmproxy", port, proc, ca=ca), None

    def start_systems(self, wanted):
        starters = {
            "sluice": self.start_sluice,
            "littleproxy": self.start_littleproxy,
            "squid": self.start_squid,
            "tinyproxy": self.start_tinyproxy,
            "mitmproxy": self.start_mitmproxy,
        }
        self.systems["direct"] = System("direct")
        for name in wanted:
            if name == "direct":
                continue
            if name in ("sluice-intercept", "sluice-intercept-base"):
                system, why = self.start_sluice(name, inspect=True)
            elif name == "sluice-nio":
                system, why = self.start_sluice("sluice-nio")
            elif name in ("relay-copy", "relay-splice"):
                system, why = self.start_relay(name.split("-", 1)[1])
            else:
                system, why = starters[name]()
            if system is None:
                self.skipped[name] = why
                log(f"{name}: skipped: {why}")
                if name == "sluice":
                    self.failures.append(f"sluice did not start: {why}")
            else:
                self.systems[name] = system
                log(f"{name}: listening on 127.0.0.1:{system.port} (pid {system.pid})")
        time.sleep(0.5)

    # ---------------------------------------------------------------- loads

    def java(self, main, *args, timeout):
        cmd = ["java", "-cp", str(BENCH_JAR), f"dev.sluice.benchmarks.{main}", *map(str, args)]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
        if out.returncode != 0 or not lines:
            raise RuntimeError(f"{main} exited {out.returncode}: {(out.stderr or out.stdout).strip()[-400:]}")
        return json.loads(lines[-1])

    def run_plain(self, system):
        env = dict(os.environ, ORIGIN=f"127.0.0.1:{self.http_port}")
        if system.port:
            base = ["wrk", "-t1", "-c64", "--latency", "-s", str(LUA), f"http://127.0.0.1:{system.port}/"]
        else:
            base = ["wrk", "-t1", "-c64", "--latency", f"http://127.0.0.1:{self.http_port}/small"]
        if self.warmup > 0:
            subprocess.run(base[:3] + [f"-d{wrk_seconds(self.warmup)}"] + base[3:], env=env, capture_output=True,
                           timeout=self.warmup + 30)
        cpu_before = cpu_seconds(system.pid)
        out = subprocess.run(base[:3] + [f"-d{wrk_seconds(self.seconds)}"] + base[3:], env=env, capture_output=True, text=True,
                             timeout=self.seconds + 60)
        if out.returncode != 0:
            raise RuntimeError(f"wrk exited {out.returncode}: {(out.stderr + out.stdout).strip()[-300:]}")
        try:
            result = parse_wrk(out.stdout)
        except (AttributeError, ValueError) as e:
            raise RuntimeError(f"unreadable wrk output ({e}): {out.stdout[-300:]}")
        if result["requests"] == 0:
            raise RuntimeError("no request succeeded: " + " ".join(out.stdout.split())[-200:])
        cpu_after = cpu_seconds(system.pid)
        if cpu_before is not None and cpu_after is not None:
            result["cpu_seconds"] = round(cpu_after - cpu_before, 3)
        return result

    def run_https(self, system, mode):
        conns = 16 if mode == "new" else 64
        return self.java("ConnectLoad", "--origin", self.https_port, "--proxy", system.port, "--mode", mode,
                         "--connections", conns, "--seconds", self.seconds, "--warmup", self.warmup,
                         "--ca", self.origin_cert, timeout=self.seconds + self.warmup + 90)

    def run_bulk(self, system):
        cmd = ["java", "-cp", str(BENCH_JAR), "dev.sluice.benchmarks.BulkDownload", str(self.bulk_port)]
        if system.port:
            cmd.append(str(system.port))
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        m = re.search(r"bytes=(\d+) seconds=([\d.]+) MBps=([\d.]+)", out.stdout)
        if out.returncode != 0 or not m:
            raise RuntimeError(f"BulkDownload exited {out.returncode}: {(out.stderr or out.stdout).strip()[-300:]}")
        received = int(m.group(1))
        # relay-splice (Netty's spliceTo, benchmark only) loses the tail at the origin's FIN (see
        # RESULTS.md); its rate is still recorded, with the loss in the note.
        if received < self.bulk_bytes * (0.5 if system.name == "relay-splice" else 0.99):
            raise RuntimeError(f"received {received} of {self.bulk_bytes} bytes")
        # A proxy that drops the last bytes at close still gets its rate, with the loss in the note.
        return {"bytes": received, "seconds": float(m.group(2)), "mbps": float(m.group(3)),
                "lost_bytes": self.bulk_bytes - received}

    def run_sse(self, system):
        ca = system.ca if system.ca else self.origin_cert
        host = BENCH_HOST if system.name.startswith("sluice") else "127.0.0.1"
        return self.java("SseLoad", "--origin", self.sse_port, "--proxy", system.port, "--ca", ca,
                         "--host", host, "--connections", 8, "--seconds", self.seconds, "--warmup", self.warmup,
                         timeout=self.seconds + self.warmup + 90)

    def run_native(self, system, load, seconds=None, warmup=None):
        """The native-TLS loads: NettyTlsLoad (Netty + BoringSSL) to nginx, directly or through a proxy.
        The client's warm-up is --native-warmup (a fresh client JVM needs a few seconds of JIT and its
        first handshakes before its own cost is small)."""
        seconds = self.seconds if seconds is None else seconds
        warmup = self.native_warmup if warmup is None else warmup
        if not self.nginx_port:
            raise RuntimeError("no nginx origin: " + (self.nginx_note or "not started"))
        mode = {"tls_keepalive": "keepalive", "tls_new": "new", "tls_new_full": "new", "sse_native": "sse"}[load]
        conns = {"keepalive": 64, "new": 16, "sse": 8}[mode]
        ca = system.ca if system.ca else self.nginx_ca
        # mitmproxy cannot resolve the bench name; the others reach BENCH_HOST (Sluice maps it in
        # network.hosts; direct dials 127.0.0.1 with SNI BENCH_HOST).
        host = "127.0.0.1" if system.name == "mitmproxy" else BENCH_HOST
        args = ["--target", f"{host}:{self.nginx_port}", "--address", "127.0.0.1", "--proxy", system.port,
                "--ca", ca, "--mode", mode, "--connections", conns, "--seconds", seconds,
                "--warmup", warmup, "--threads", self.args.client_threads]
        if mode == "keepalive" and self.args.tls_pipeline > 1:
            args += ["--pipeline", self.args.tls_pipeline]
        if load == "tls_new_full":
            args += ["--resume", "false"]
        result = self.java("NettyTlsLoad", *args, timeout=seconds + warmup + 90)
        if result.get("handshakes") and result.get("resumed", -1) >= 0:
            result["resumed_pct"] = round(100.0 * result["resumed"] / result["handshakes"], 1)
        return result

    def run_idle(self, system):
        before = rss_kib(system.pid)
        cmd = ["java", "-Xss256k", "-cp", str(BENCH_JAR), "dev.sluice.benchmarks.IdleTunnels", "--proxy",
               str(system.port), "--origin", str(self.http_port), "--count", str(self.tunnels), "--hold", "120",
               "--open-timeout", "60" if self.quick else "120"]
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            line = proc.stdout.readline()
            if not line.startswith("{"):
                raise RuntimeError("IdleTunnels: " + (line + proc.stderr.read())[-300:])
            result = json.loads(line)
            time.sleep(1.0)  # let the proxy settle (tunnel records, buffers) before reading RSS
            samples = []
            for _ in range(5):
                v = rss_kib(system.pid)
                if v is not None:
                    samples.append(v)
                time.sleep(0.2)
            result["rss_before_kib"] = before
            result["rss_kib"] = max(samples) if samples else None
            if result["opened"] and before is not None and result["rss_kib"] is not None:
                per = (result["rss_kib"] - before) / result["opened"]
                result["kib_per_tunnel"] = per
                result["rss_at_10000_kib"] = before + per * 10000
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        time.sleep(1.0 if self.quick else 3.0)  # let the proxy and the origin close 2 x N sockets
        if result["opened"] == 0:
            raise RuntimeError(f"no tunnel opened: {result.get('first_error')}")
        return result

    def warm_up(self):
        """One unrecorded pass of the request-rate loads through every system: JIT-compiles the origin
        and the JVM proxies before anything is measured, so that the first system in round 1 does not
        pay for the origin's warm-up."""
        if self.warmup <= 0:
            return
        seconds, self.seconds = self.seconds, self.warmup
        saved, self.warmup = self.warmup, 0
        try:
            for load in [l for l in ("plain", "https_keepalive", "sse") if l in self.loads]:
                for name in [s for s in LOAD_SYSTEMS[load] if s in self.systems]:
                    try:
                        {"plain": self.run_plain, "https_keepalive": lambda s: self.run_https(s, "keepalive"),
                         "sse": self.run_sse}[load](self.systems[name])
                    except Exception as e:  # noqa: BLE001 - a warm-up failure shows again in the real run
                        log(f"warm-up {load} / {name}: {str(e)[:200]}")
            # Every native load through every proxy for --native-warmup-pass seconds: cold, Sluice's
            # interception path runs at a few requests per second (the first 64 KiB redactions take tens
            # of ms of CPU each), so a short pass leaves it cold and its first round measures the JIT.
            # Seen on the loaded 2-core machine: 2 s passes, then 10 s runs settling only after 30-40 s.
            # (nginx and the client JVM, fresh in every run, need none of this.)
            for load in [l for l in NATIVE_LOADS if l in self.loads and self.nginx_port]:
                for name in [s for s in LOAD_SYSTEMS[load] if s in self.systems and s != "direct"]:
                    try:
                        self.run_native(self.systems[name], load, seconds=self.native_warmup_pass,
                                        warmup=self.native_warmup)
                    except Exception as e:  # noqa: BLE001 - a warm-up failure shows again in the real run
                        log(f"warm-up {load} / {name}: {str(e)[:200]}")
        finally:
            self.seconds, self.warmup = seconds, saved
        log("warm-up pass done")

    def run_one(self, load, system, rnd):
        record = self.run_once(load, system, rnd)
        if not record["ok"] and system.name in ("direct", "sluice") and system.alive():
            log(f"retrying {load} / {system.name} once")
            self.runs.pop()
            record = self.run_once(load, system, rnd)
        if not record["ok"] and system.name in ("direct", "sluice"):
            self.failures.append(f"{load} / {system.name} round {rnd}: {record['error']}")
        return record

    def run_once(self, load, system, rnd):
        record = {"round": rnd, "load": load, "system": system.name}
        t0 = time.time()
        try:
            if not system.alive():
                raise RuntimeError("process has exited: " + self.log_tail(system.name, 5))
            cpu_before = cpu_seconds(system.pid)
            with RssSampler(system.pid) as sampler:
                if load == "plain":
                    result = self.run_plain(system)
                elif load == "https_new":
                    result = self.run_https(system, "new")
                elif load == "https_keepalive":
                    result = self.run_https(system, "keepalive")
                elif load == "bulk":
                    result = self.run_bulk(system)
                elif load == "sse":
                    result = self.run_sse(system)
                elif load == "idle":
                    result = self.run_idle(system)
                elif load in NATIVE_LOADS:
                    result = self.run_native(system, load)
                else:
                    raise ValueError(load)
            cpu_after = cpu_seconds(system.pid)
            if load != "idle":
                result["rss_max_kib"] = sampler.max
            if cpu_before is not None and cpu_after is not None and "cpu_seconds" not in result:
                # CPU the system spent over the whole run, warm-up included: per-request figures divide
                # it by every request completed (all_requests), per-GB figures by the bytes moved.
                result["cpu_seconds"] = round(cpu_after - cpu_before, 3)
            if result.get("cpu_seconds") is not None:
                if "rps" in result:
                    n = result.get("all_requests", result["requests"])
                    result["cpu_us_per_request"] = round(result["cpu_seconds"] * 1e6 / n, 1) if n else None
                elif "mbps" in result:
                    result["cpu_s_per_gb"] = round(result["cpu_seconds"] / (result["bytes"] / 1e9), 3)
            if "rps" in result and result["requests"] == 0:
                raise RuntimeError(f"no request succeeded: {result.get('first_error')}")
            record.update(result)
            record["ok"] = True
        except Exception as e:  # noqa: BLE001 - every failure becomes a note in the record
            record["ok"] = False
            record["error"] = str(e)[-500:]
        record["wall_seconds"] = round(time.time() - t0, 2)
        self.runs.append(record)
        self.print_record(record)
        return record

    def print_record(self, r):
        head = f"round {r['round']} {r['load']:<16} {r['system']:<16}"
        if not r["ok"]:
            log(f"{head} FAILED: {r['error'][:300]}")
        elif "rps" in r:
            extra = ""
            if "handshakes" in r:
                extra = (f"  proxy CPU {r.get('cpu_us_per_request')} µs/req  client CPU "
                         f"{r.get('client_cpu_us_per_request')} µs/req  resumed {r.get('resumed')}/{r['handshakes']}")
            log(f"{head} {r['rps']:>10.1f} req/s  p50 {r['p50_ms']:.2f} ms  p99 {r['p99_ms']:.2f} ms"
                f"  errors {r.get('errors', 0)}  rss {fmt_mib(r.get('rss_max_kib'))} MiB{extra}")
        elif "mbps" in r:
            log(f"{head} {r['mbps']:>10.1f} MB/s  rss {fmt_mib(r.get('rss_max_kib'))} MiB")
        else:
            log(f"{head} {r['opened']} tunnels (failed {r['failed']}) in {r['seconds']:.1f}s  rss "
                f"{fmt_mib(r.get('rss_before_kib'))} -> {fmt_mib(r.get('rss_kib'))} MiB")

    def run(self):
        wanted = self.args.systems.split(",") if self.args.systems else ALL_SYSTEMS + ["sluice-intercept"]
        loads = self.args.loads.split(",") if self.args.loads else (CLASSIC_LOADS if self.quick else LOADS)
        unknown = [l for l in loads if l not in LOADS]
        if unknown:
            raise SystemExit(f"harness: unknown load(s) {', '.join(unknown)} (expected: {', '.join(LOADS)})")
        intercepting = any(l in INTERCEPT_LOADS for l in loads)
        if intercepting and "sluice-intercept" not in wanted and not self.args.systems:
            wanted.append("sluice-intercept")
        if self.args.sluice_base_jar and intercepting and "sluice-intercept-base" not in wanted:
            wanted.append("sluice-intercept-base")
        if not self.args.sluice_base_jar:
            wanted = [w for w in wanted if w != "sluice-intercept-base"]
        if "direct" not in wanted:
            wanted.insert(0, "direct")
        if not intercepting:
            wanted = [w for w in wanted if w not in ("mitmproxy", "sluice-intercept", "sluice-intercept-base")]
        self.wanted = wanted
        self.loads = loads
        self.start_origin()
        if any(l in NATIVE_LOADS for l in loads):
            self.nginx_note = self.start_nginx()
            if self.nginx_note:
                log(f"native-TLS loads skipped: {self.nginx_note}")
        self.start_systems(wanted)
        if self.tunnels < self.tunnels_wanted:
            log(f"idle tunnels: {self.tunnels} instead of {self.tunnels_wanted}: the open-files limit is "
                f"{self.fd_limit} and a proxy holds two sockets per tunnel; RSS is also given extrapolated to 10,000")
        rounds = self.args.rounds if self.args.rounds else (1 if self.quick else 3)
        self.rounds = rounds
        self.started = time.strftime("%Y-%m-%d %H:%M:%S %Z")
        self.warm_up()
        for rnd in range(1, rounds + 1):
            for load in loads:
                if load in NATIVE_LOADS and not self.nginx_port:
                    continue  # no nginx: noted in the results, not a failure
                members = [s for s in LOAD_SYSTEMS[load] if s in self.systems]
                shift = (rnd - 1) % max(1, len(members))
                order = members[shift:] + members[:shift]
                for name in order:
                    self.run_one(load, self.systems[name], rnd)
        for name in ("sluice", "sluice-intercept", "sluice-intercept-base", "sluice-nio"):
            data = getattr(self, "sluice_data", {}).get(name)
            if data is not None and name in self.systems:
                audit = data / "audit.jsonl"
                time.sleep(1.5)
                self.audit_lines = self.__dict__.get("audit_lines", {})
                self.audit_lines[name] = sum(1 for _ in open(audit)) if audit.exists() else 0
        self.write_results()

    # ---------------------------------------------------------------- results

    def medians(self, load, system, key):
        vals = [r[key] for r in self.runs if r["load"] == load and r["system"] == system and r["ok"]
                and r.get(key) is not None]
        return statistics.median(vals) if vals else None

    def write_results(self):
        info = machine_info()
        info["harness_args"] = " ".join(sys.argv[1:])
        payload = {
            "started": self.started,
            "finished": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "quick": self.quick,
            "rounds": self.rounds,
            "seconds_per_run": self.seconds,
            "warmup_seconds": self.warmup,
            "bulk_bytes": self.bulk_bytes,
            "idle_tunnels": self.tunnels,
            "fd_limit": self.fd_limit,
            "machine": info,
            "skipped": self.skipped,
            "audit_lines": getattr(self, "audit_lines", {}),
            "runs": self.runs,
            "failures": self.failures,
        }
        (self.out / "results.json").write_text(json.dumps(payload, indent=1))
        md = self.markdown(payload)
        (self.out / "results.md").write_text(md)
        print(md)
        log(f"wrote {self.out / 'results.json'} and {self.out / 'results.md'}")

    def markdown(self, payload):
        L = []
        L.append(f"Rounds: {self.rounds} (systems take turns within each load; order rotates each round), "
                 f"{self.seconds}s measured + {self.warmup}s warm-up per request-rate run; bulk "
                 f"{self.bulk_bytes // (1024 * 1024)} MiB; {self.tunnels} idle tunnels. Figures are medians over the "
                 f"rounds; ×direct is the ratio to the direct run's median. Proxy CPU is the user + system CPU "
                 f"time of the proxy process (all threads) per request or per GB moved: less sensitive to the "
                 f"other tenants of the machine than the rates.")
        L.append("")
        for load in self.loads:
            L.append(f"### {LOAD_TITLES[load]}")
            L.append("")
            systems = [s for s in LOAD_SYSTEMS[load] if s in self.wanted]
            if load in ("plain", "https_new", "https_keepalive", "sse"):
                L.append("| system | req/s | ×direct | p50 ms | ×direct | p99 ms | ×direct | proxy CPU µs/req | max RSS MiB | errors | note |")
                L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
                d_rps, d50, d99 = (self.medians(load, "direct", k) for k in ("rps", "p50_ms", "p99_ms"))
                for s in systems:
                    note = self.note(load, s)
                    rps, p50, p99, rss, cpu = (self.medians(load, s, k) for k in
                                               ("rps", "p50_ms", "p99_ms", "rss_max_kib", "cpu_us_per_request"))
                    errs = sum(r.get("errors", 0) for r in self.runs if r["load"] == load and r["system"] == s and r["ok"])
                    if rps is None:
                        L.append(f"| {s} | — | | | | | | | | | {note} |")
                        continue
                    L.append(f"| {s} | {rps:,.0f} | {ratio(rps, d_rps)} | {p50:.2f} | {ratio(p50, d50)} | {p99:.2f} | "
                             f"{ratio(p99, d99)} | {'—' if cpu is None else f'{cpu:,.0f}'} | {fmt_mib(rss)} | {errs} | {note} |")
            elif load in NATIVE_LOADS:
                if not self.nginx_port:
                    L.append(f"Skipped: {self.nginx_note}.")
                    L.append("")
                    continue
                L.extend(self.native_table(load, systems))
            elif load == "bulk":
                L.append("| system | MB/s | ×direct | proxy CPU s/GB | max RSS MiB | note |")
                L.append("|---|---:|---:|---:|---:|---|")
                d = self.medians(load, "direct", "mbps")
                for s in systems:
                    note = self.note(load, s)
                    v, rss, cpu = (self.medians(load, s, k) for k in ("mbps", "rss_max_kib", "cpu_s_per_gb"))
                    L.append(f"| {s} | {v:,.0f} | {ratio(v, d)} | {'—' if cpu is None else f'{cpu:.2f}'} | "
                             f"{fmt_mib(rss)} | {note} |" if v is not None else f"| {s} | — | | | | {note} |")
            elif load == "idle":
                L.append(f"| system | tunnels open | RSS before MiB | RSS with tunnels MiB | KiB per tunnel | "
                         f"RSS at 10,000 MiB (extrapolated) | note |")
                L.append("|---|---:|---:|---:|---:|---:|---|")
                for s in systems:
                    note = self.note(load, s)
                    opened = self.medians(load, s, "opened")
                    if opened is None:
                        L.append(f"| {s} | — | | | | | {note} |")
                        continue
                    b, a, per, at = (self.medians(load, s, k) for k in
                                     ("rss_before_kib", "rss_kib", "kib_per_tunnel", "rss_at_10000_kib"))
                    L.append(f"| {s} | {opened:,.0f} | {fmt_mib(b)} | {fmt_mib(a)} | "
                             f"{per:.1f} | {fmt_mib(at)} | {note} |" if per is not None else
                             f"| {s} | {opened:,.0f} | {fmt_mib(b)} | {fmt_mib(a)} | | | {note} |")
                L.append("")
                L.append("(direct has no proxy process; there is no RSS to compare with.)")
            L.append("")
        L.append("### Targets")
        L.append("")
        if self.quick:
            L.append("Quick mode: smoke figures (one short round, small sizes), not measurements; targets are not judged.")
        else:
            L.extend(self.targets())
        L.append("")
        if self.skipped:
            L.append("### Skipped")
            L.append("")
            for k, v in self.skipped.items():
                L.append(f"- **{k}**: {v}")
            L.append("")
        audit = payload.get("audit_lines") or {}
        if audit:
            L.append("Audit log on for Sluice: " + ", ".join(f"{k} wrote {v:,} records" for k, v in audit.items()) + ".")
            L.append("")
        return "\n".join(L)

    def native_table(self, load, systems):
        """The table of one native-TLS load: rates and latencies, the proxy's CPU per request (and, for new
        connections, connections per second of one core of proxy CPU), the client's own CPU per request
        (to show the client is not the bottleneck) and the client's resumed TLS handshakes."""
        L = ["| system | req/s | ×direct | p50 ms | p99 ms | proxy CPU µs/req | per proxy CPU-s | "
             "client CPU µs/req | resumed / handshakes | max RSS MiB | errors | note |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        d_rps = self.medians(load, "direct", "rps")
        for s in systems:
            note = self.note(load, s)
            rps, p50, p99, rss, cpu, ccpu = (self.medians(load, s, k) for k in (
                "rps", "p50_ms", "p99_ms", "rss_max_kib", "cpu_us_per_request", "client_cpu_us_per_request"))
            if rps is None:
                L.append(f"| {s} | — | | | | | | | | | | {note} |")
                continue
            ok = [r for r in self.runs if r["load"] == load and r["system"] == s and r["ok"]]
            errs = sum(r.get("errors", 0) for r in ok)
            hs = sum(r.get("handshakes", 0) for r in ok)
            res = sum(r.get("resumed", 0) for r in ok if r.get("resumed", -1) >= 0)
            resumed = f"{res:,} / {hs:,}" if any(r.get("resumed", -1) >= 0 for r in ok) else f"? / {hs:,}"
            per_cpu = f"{1e6 / cpu:,.0f}" if cpu else "—"
            L.append(f"| {s} | {rps:,.0f} | {ratio(rps, d_rps)} | {p50:.2f} | {p99:.2f} | "
                     f"{'—' if cpu is None else f'{cpu:,.0f}'} | {per_cpu} | {'—' if ccpu is None else f'{ccpu:,.1f}'} | "
                     f"{resumed} | {fmt_mib(rss)} | {errs} | {note} |")
        L.append("")
        L.append("Per proxy CPU-s: requests (for 6b/6c: new connections, each with its own handshake) per second "
                 "of one core of the proxy process's CPU, 10⁶ / proxy CPU µs per request. Client CPU: "
                 "NettyTlsLoad's own JVM over the measured period. Resumed: the client's TLS handshakes that "
                 "resumed a session (BoringSSL `SSL_session_reused`), summed over the rounds; through an "
                 "intercepting proxy these are the proxy's downstream (client-facing) handshakes. Sluice counts "
                 "them too (sluice_tls_downstream_handshakes_total{result}) and its leaf-cache look-ups "
                 "(sluice_tls_leaf_cache_total{result}), not read here; with one intercepted host every handshake "
                 "after the first uses the cached leaf. sluice-intercept-base: the jar given with --sluice-base-jar, "
                 "intercepting, for before/after in the same run.")
        return L

    def note(self, load, s):
        if s in self.skipped:
            return "skipped: " + self.skipped[s]
        bad = [r for r in self.runs if r["load"] == load and r["system"] == s and not r["ok"]]
        notes = []
        if bad:
            notes.append(f"{len(bad)} failed run(s): " + bad[0]["error"][:160].replace("|", "/").replace("\n", " "))
        lost = [r.get("lost_bytes", 0) for r in self.runs if r["load"] == load and r["system"] == s and r["ok"]]
        if lost and max(lost) > 0:
            notes.append(f"the download came short by up to {max(lost):,} bytes at the end, in "
                         f"{sum(1 for x in lost if x)} of {len(lost)} run(s)")
        seen = [r for r in self.runs if r["load"] == load and r["system"] == s and r["ok"]
                and r.get("origin_received_bytes") is not None]
        if seen and seen[-1]["origin_received_bytes"] != seen[-1].get("body_bytes"):
            notes.append(f"the origin received {seen[-1]['origin_received_bytes']:,} of {seen[-1]['body_bytes']:,} "
                         f"body bytes (credentials redacted)")
        closes = [r.get("server_closes", 0) for r in self.runs if r["load"] == load and r["system"] == s and r["ok"]]
        if closes and max(closes) > 0:
            notes.append(f"closed the client connection after {max(closes):,} responses (no client keep-alive; wrk reconnects)")
        return "; ".join(notes)

    def targets(self):
        out = []

        def line(name, value, goal, ok_when):
            if value is None:
                out.append(f"- {name}: not measured")
            else:
                out.append(f"- {name}: {value:.2f} (target {goal}) — {'met' if ok_when(value) else 'NOT met'}")

        s = self.medians("plain", "sluice", "rps")
        lp = self.medians("plain", "littleproxy", "rps")
        sq = self.medians("plain", "squid", "rps")
        line("plain HTTP, Sluice / LittleProxy req/s", s / lp if s and lp else None, "≥ 3", lambda v: v >= 3)
        line("plain HTTP, Sluice / Squid req/s", s / sq if s and sq else None, "≥ 2", lambda v: v >= 2)
        b, d = self.medians("bulk", "sluice", "mbps"), self.medians("bulk", "direct", "mbps")
        line("CONNECT bulk, Sluice / direct MB/s", b / d if b and d else None, "≥ 0.9", lambda v: v >= 0.9)
        at = self.medians("idle", "sluice", "rss_at_10000_kib")
        raw = self.medians("idle", "sluice", "rss_kib")
        if at is None:
            out.append("- 10,000 idle tunnels, Sluice RSS: not measured")
        else:
            mib = (raw if self.tunnels >= 10000 else at) / 1024
            how = "measured" if self.tunnels >= 10000 else f"extrapolated from {self.tunnels} tunnels"
            out.append(f"- 10,000 idle tunnels, Sluice RSS: {mib:.0f} MiB, {how} (target ≤ 512 MB) — "
                       f"{'met' if mib * 1.048576 <= 512 else 'NOT met'}")
        if any(l in self.loads for l in NATIVE_LOADS):
            out.extend(self.native_targets(line))
        si, mi = self.medians("sse", "sluice-intercept", "rps"), self.medians("sse", "mitmproxy", "rps")
        if "sse" not in self.loads:
            pass
        elif si is None:
            out.append("- interception with redaction, Sluice / mitmproxy req/s (target ≥ 10): not measured — "
                       + self.skipped.get("sluice-intercept", "no Sluice interception run"))
        else:
            line("interception with redaction, Sluice / mitmproxy req/s", si / mi if mi else None, "≥ 10",
                 lambda v: v >= 10)
        return out

    def native_targets(self, line):
        """Issue 15's interception targets, judged on the native-TLS loads (client and origin off the JDK)."""
        out = []
        if not self.nginx_port:
            return [f"- native-TLS interception targets: not measured ({self.nginx_note})"]
        for load, what in (("sse_native", "SSE POST with redaction"), ("tls_keepalive", "keep-alive GET")):
            if load not in self.loads:
                continue
            si, mi = self.medians(load, "sluice-intercept", "rps"), self.medians(load, "mitmproxy", "rps")
            if si is None or mi is None:
                out.append(f"- interception ({what}), Sluice / mitmproxy req/s (target ≥ 10): not measured")
            else:
                out.append(f"- interception ({what}), Sluice / mitmproxy req/s: {si / mi:.2f} ({si:,.0f} / {mi:,.0f}; "
                           f"target ≥ 10) — {'met' if si / mi >= 10 else 'NOT met'}")
        for load, what in (("tls_keepalive", "keep-alive GET"), ("sse_native", "SSE POST, 64 KiB redacted")):
            if load not in self.loads:
                continue
            cpu = self.medians(load, "sluice-intercept", "cpu_us_per_request")
            if cpu is None:
                out.append(f"- proxy CPU per intercepted request ({what}) (target ≤ 300 µs): not measured")
            else:
                out.append(f"- proxy CPU per intercepted request ({what}): {cpu:,.0f} µs (target ≤ 300 µs) — "
                           f"{'met' if cpu <= 300 else 'NOT met'}")
        for load, what in (("tls_new", "resumption offered"), ("tls_new_full", "full handshakes")):
            if load not in self.loads:
                continue
            cpu = self.medians(load, "sluice-intercept", "cpu_us_per_request")
            if cpu is None:
                out.append(f"- new intercepted connections per second per core of proxy CPU ({what}) "
                           f"(target ≥ 1,000): not measured")
            else:
                v = 1e6 / cpu
                out.append(f"- new intercepted connections per second per core of proxy CPU ({what}): {v:,.0f} "
                           f"({cpu:,.0f} µs each; target ≥ 1,000) — {'met' if v >= 1000 else 'NOT met'}")
        if "tls_keepalive" in self.loads:
            si, bl = self.medians("tls_keepalive", "sluice-intercept", "rps"), self.medians("tls_keepalive", "sluice", "rps")
            line("keep-alive intercepted / blind tunnel req/s (Sluice, tls_keepalive)", si / bl if si and bl else None,
                 "≥ 0.6", lambda v: v >= 0.6)
        return out


def parse_wrk(text):
    def dur_ms(v):
        m = re.match(r"([\d.]+)(us|ms|s|m)", v)
        n, u = float(m.group(1)), m.group(2)
        return {"us": n / 1000, "ms": n, "s": n * 1000, "m": n * 60000}[u]

    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    p50 = dur_ms(re.search(r"^\s+50%\s+(\S+)", text, re.M).group(1))
    p99 = dur_ms(re.search(r"^\s+99%\s+(\S+)", text, re.M).group(1))
    requests = int(re.search(r"(\d+) requests in", text).group(1))
    errors = 0
    closed = 0
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    if m:
        connect, read, write, timeout = (int(x) for x in m.groups())
        errors += connect + write + timeout
        closed = read  # the server closed a connection (tinyproxy has no client keep-alive); wrk reconnects
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    if m:
        errors += int(m.group(1))
    return {"requests": requests, "rps": rps, "p50_ms": p50, "p99_ms": p99, "errors": errors,
            "server_closes": closed}


def wrk_seconds(seconds):
    """wrk takes whole seconds or milliseconds ("2s", "1500ms"), not "2.0s"."""
    return f"{int(seconds)}s" if float(seconds).is_integer() else f"{int(seconds * 1000)}ms"


def ratio(v, d):
    if v is None or not d:
        return ""
    return f"{v / d:.2f}"


def fmt_mib(kib):
    return "—" if kib is None else f"{kib / 1024:.0f}"


def version_of(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
        return ((out.stdout or "") + (out.stderr or "")).strip().splitlines()[0]
    except Exception:  # noqa: BLE001
        return "not installed"


def machine_info():
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = "unknown"
    try:
        mem = open("/proc/meminfo").readline().split(":", 1)[1].strip()
    except OSError:
        pass
    return {
        "kernel": platform.release(),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "memory": mem,
        "java": version_of(["java", "-version"]),
        "wrk": version_of(["wrk", "-v"]),
        "squid": version_of(["squid", "-v"]),
        "tinyproxy": version_of(["tinyproxy", "-v"]),
        "mitmdump": version_of(["mitmdump", "--version"]),
        "littleproxy": "2.8.0 (io.github.littleproxy:littleproxy, default settings, own JVM)",
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smoke mode: 1 round, 3 s warm-up + 2 s per run, 256 MiB bulk, 1,000 tunnels")
    p.add_argument("--rounds", type=int, default=0)
    p.add_argument("--seconds", type=float, default=0, help="measured seconds per request-rate run")
    p.add_argument("--warmup", type=float, default=None, help="warm-up seconds before each request-rate run")
    p.add_argument("--bulk-mib", type=int, default=0)
    p.add_argument("--tunnels", type=int, default=0, help="idle tunnels to hold (default 10,000; 1,000 quick)")
    p.add_argument("--systems", default="", help="comma list from: " + ",".join(ALL_SYSTEMS + ["sluice-intercept", "sluice-intercept-base", "sluice-nio", "relay-copy", "relay-splice"]))
    p.add_argument("--loads", default="", help="comma list from: " + ",".join(LOADS))
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "target" / "harness"))
    p.add_argument("--sluice-java-opts", default=os.environ.get("SLUICE_JAVA_OPTS", ""))
    p.add_argument("--sluice-base-jar", default="",
                   help="another build's sluice.jar (e.g. main's, before a change): adds the system "
                        "sluice-intercept-base, intercepting like sluice-intercept, to the native-TLS loads")
    p.add_argument("--native-warmup", type=float, default=None,
                   help="client warm-up seconds of the native-TLS loads (default max(--warmup, 5); quick: --warmup)")
    p.add_argument("--native-warmup-pass", type=float, default=None,
                   help="seconds each proxy runs each native-TLS load in the unrecorded warm-up pass (default 20; quick: --warmup)")
    p.add_argument("--client-threads", type=int, default=1, help="event-loop threads of NettyTlsLoad")
    p.add_argument("--tls-pipeline", type=int, default=1,
                   help="requests in flight per connection in tls_keepalive (HTTP/1.1 pipelining when > 1)")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (configs, logs, audit)")
    args = p.parse_args()
    h = Harness(args)
    try:
        h.run()
    finally:
        h.stop_all()
        if args.keep:
            log(f"kept {h.work}")
        else:
            shutil.rmtree(h.work, ignore_errors=True)
    if h.failures:
        log("FAILED (Sluice or the direct baseline): " + "; ".join(h.failures))
        sys.exit(1)
    log("ok")


if __name__ == "__main__":
    main()
