"""mitmdump addon for the side-by-side harness: regex redaction of request bodies, so that mitmproxy does
work comparable to Sluice's redactor (find credential-shaped strings in a request body and replace them).

The patterns are the ones the harness's SseLoad body carries (AWS access key id, GitHub token, Anthropic
key) plus a generic `sk-` key; each match becomes [REDACTED]. Event streams are passed on as they arrive
(flow.response.stream), as an operator would configure for LLM streaming answers.
"""
import re

PATTERNS = [
    re.compile(rb"AKIA[0-9A-Z]{16}"),
    re.compile(rb"gh[pousr]_[A-Za-z0-9]{36}"),
    re.compile(rb"sk-ant-[A-Za-z0-9_\-]{20,}"),
    re.compile(rb"sk-[A-Za-z0-9]{32,}"),
]


def request(flow):
    body = flow.request.raw_content
    if not body:
        return
    for pattern in PATTERNS:
        body = pattern.sub(b"[REDACTED]", body)
    flow.request.content = body


def responseheaders(flow):
    if flow.response.headers.get("content-type", "").startswith("text/event-stream"):
        flow.response.stream = True
