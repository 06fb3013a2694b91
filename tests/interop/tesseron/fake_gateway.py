"""A tiny stand-in for the Tesseron gateway, to check app.py (and the wire facts in WIRE.md)
before our own gateway role (AbpClient, dialect 'tesseron') exists.

    python fake_gateway.py                 # starts app.py itself, drives it, stops it
    python fake_gateway.py ws://127.0.0.1:PORT/   # drives an app that is already listening

It dials the app with the `tesseron-gateway` subprotocol (as the real gateway does), answers
`tesseron/hello`, then runs the scenario below, printing every frame it sends (>>) and
receives (<<) with milliseconds since the dial, and checks each answer. Exit status 0 when
every check passed. Only the `websockets` package (a tesseron dependency) is needed.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

HERE = os.path.dirname(os.path.abspath(__file__))
T0 = time.monotonic()
failures: list[str] = []


def ms() -> str:
    return f"{(time.monotonic() - T0) * 1000:7.0f}ms"


def check(ok: bool, what: str) -> None:
    print(f"  {'ok  ' if ok else 'FAIL'} {what}", flush=True)
    if not ok:
        failures.append(what)


class Gateway:
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.next_id = 100

    async def send(self, frame: Any) -> None:
        text = frame if isinstance(frame, str) else json.dumps(frame)
        print(f"{ms()} >> {text}", flush=True)
        await self.ws.send(text)

    async def recv(self, timeout: float = 3.0) -> dict[str, Any] | None:
        try:
            text = await asyncio.wait_for(self.ws.recv(), timeout)
        except TimeoutError:
            return None
        print(f"{ms()} << {text}", flush=True)
        return json.loads(text)

    async def silence(self, seconds: float) -> bool:
        frame = await self.recv(seconds)
        return frame is None

    async def invoke(self, name: str, input: Any, invocation_id: str) -> int:  # noqa: A002
        self.next_id += 1
        await self.send(
            {
                "jsonrpc": "2.0",
                "id": self.next_id,
                "method": "actions/invoke",
                "params": {"name": name, "input": input, "invocationId": invocation_id},
            }
        )
        return self.next_id

    async def response(self, request_id: int, timeout: float = 3.0) -> tuple[dict, list[dict]]:
        """Reads until the response to request_id; returns it and the notifications before it."""
        seen: list[dict] = []
        while True:
            frame = await self.recv(timeout)
            if frame is None:
                return {}, seen
            if frame.get("id") == request_id and "method" not in frame:
                return frame, seen
            seen.append(frame)


async def scenario(url: str) -> None:
    print(f"# refusal: a dial without the subprotocol", flush=True)
    try:
        async with connect(url):
            check(False, "a dial without tesseron-gateway is refused")
    except InvalidStatus as refused:
        check(refused.response.status_code == 400, f"no subprotocol -> HTTP {refused.response.status_code}")

    print(f"# dial {url} with subprotocol tesseron-gateway", flush=True)
    async with connect(url, subprotocols=[websockets.Subprotocol("tesseron-gateway")]) as ws:
        check(ws.subprotocol == "tesseron-gateway", f"negotiated subprotocol {ws.subprotocol!r}")
        gw = Gateway(ws)

        print("# handshake: the app speaks first", flush=True)
        hello = await gw.recv()
        assert hello is not None, "no tesseron/hello"
        params = hello.get("params", {})
        check(hello.get("method") == "tesseron/hello" and "id" in hello, "hello is a request")
        check(params.get("protocolVersion") == "1.2.0", "protocolVersion 1.2.0")
        names = [a["name"] for a in params.get("actions", [])]
        check(names == ["echo", "add", "slow", "timeout", "fail"], f"actions {names}")
        timeouts = {a["name"]: a.get("timeoutMs") for a in params.get("actions", [])}
        check(timeouts.get("timeout") == 300, "per-action timeoutMs travels in the hello")
        await gw.send(
            {
                "jsonrpc": "2.0",
                "id": hello["id"],
                "result": {
                    "sessionId": "s_fake_0001",
                    "protocolVersion": "1.2.0",
                    "capabilities": {
                        "streaming": True,
                        "subscriptions": False,
                        "sampling": False,
                        "elicitation": False,
                    },
                    "agent": {"id": "pending", "name": "Awaiting agent"},
                    "claimCode": "AB3X-7K",
                    # No resumeToken: with one, the app would send tesseron/resume on the next dial.
                },
            }
        )
        await gw.send(
            {
                "jsonrpc": "2.0",
                "method": "tesseron/claimed",
                "params": {"agent": {"id": "abp", "name": "abp fake gateway"}, "claimedAt": 0},
            }
        )

        print("# echo", flush=True)
        echo_input = {"text": "héllo", "n": [1, 2.5, None, True], "nested": {"k": "v"}}
        rid = await gw.invoke("echo", echo_input, "inv-echo")
        reply, _ = await gw.response(rid)
        check(
            reply.get("result") == {"invocationId": "inv-echo", "output": echo_input},
            "echo -> result {invocationId, output}",
        )

        print("# slow, cancelled after two progress notifications", flush=True)
        rid = await gw.invoke("slow", {"steps": 20, "intervalMs": 300}, "inv-slow")
        progress: list[dict] = []
        while len(progress) < 2:
            frame = await gw.recv()
            assert frame is not None, "no progress"
            if frame.get("method") == "actions/progress":
                progress.append(frame)
        check(all("id" not in p for p in progress), "progress is a notification (no id)")
        percents = [p["params"].get("percent") for p in progress]
        check(percents == sorted(percents), f"percent rising {percents}")
        cancel_at = time.monotonic()
        await gw.send({"jsonrpc": "2.0", "method": "actions/cancel", "params": {"invocationId": "inv-slow"}})
        reply, after = await gw.response(rid)
        took = (time.monotonic() - cancel_at) * 1000
        check(reply.get("error", {}).get("code") == -32001, f"cancel -> -32001 ({took:.0f} ms after cancel)")
        check("result" not in reply, "no result alongside the cancel error")

        print("# cancel for an invocation that is not running: ignored", flush=True)
        await gw.send({"jsonrpc": "2.0", "method": "actions/cancel", "params": {"invocationId": "inv-slow"}})
        check(await gw.silence(0.3), "no answer to a stale actions/cancel")

        print("# timeout (the action's own 300 ms timeoutMs)", flush=True)
        started = time.monotonic()
        rid = await gw.invoke("timeout", {}, "inv-timeout")
        reply, _ = await gw.response(rid)
        took = (time.monotonic() - started) * 1000
        check(reply.get("error", {}).get("code") == -32002, f"timeout -> -32002 after {took:.0f} ms")

        print("# unknown action", flush=True)
        rid = await gw.invoke("nope", {}, "inv-nope")
        reply, _ = await gw.response(rid)
        check(reply.get("error", {}).get("code") == -32003, "unknown action -> -32003")

        print("# bad input (Pydantic model)", flush=True)
        rid = await gw.invoke("add", {"a": "not-a-number"}, "inv-bad")
        reply, _ = await gw.response(rid)
        error = reply.get("error", {})
        check(error.get("code") == -32004 and isinstance(error.get("data"), list), "bad input -> -32004 with data issues")
        rid = await gw.invoke("add", {"a": 1, "b": 2}, "inv-add")
        reply, _ = await gw.response(rid)
        check(reply.get("result", {}).get("output") == {"sum": 3.0}, "add 1+2 -> {sum: 3.0}")

        print("# handler errors", flush=True)
        rid = await gw.invoke("fail", {"kind": "handler"}, "inv-fail-h")
        reply, _ = await gw.response(rid)
        check(reply.get("error", {}).get("code") == -32005, "ActionError.handler -> -32005")
        rid = await gw.invoke("fail", {"kind": "internal"}, "inv-fail-i")
        reply, _ = await gw.response(rid)
        check(reply.get("error") == {"code": -32603, "message": "Internal error"}, "uncaught exception -> bare -32603")

        print("# malformed traffic", flush=True)
        await gw.send({"jsonrpc": "2.0", "id": "bad-1", "method": "actions/invoke", "params": {"name": "echo"}})
        reply = await gw.recv()
        check(bool(reply) and reply.get("error", {}).get("code") == -32602, "invoke without invocationId -> -32602")
        await gw.send({"jsonrpc": "2.0", "id": "bad-2", "method": "no/such"})
        reply = await gw.recv()
        check(bool(reply) and reply.get("error", {}).get("code") == -32601, "unknown method -> -32601")
        await gw.send({"id": "bad-3", "method": "actions/invoke"})
        reply = await gw.recv()
        check(bool(reply) and reply.get("error", {}).get("code") == -32600, "missing jsonrpc -> -32600")
        await gw.send("this is not json")
        check(await gw.silence(0.3), "unparsable text frame -> dropped, no -32700")
        await gw.send('[{"jsonrpc":"2.0","id":"b1","method":"actions/invoke","params":{"name":"echo","input":1,"invocationId":"x"}}]')
        check(await gw.silence(0.3), "a batch (JSON array) -> dropped, not answered")
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": "bin-1", "method": "actions/invoke",
                                  "params": {"name": "echo", "input": "bin", "invocationId": "inv-bin"}}).encode())
        print(f"{ms()} >> (binary frame) invoke echo inv-bin", flush=True)
        reply = await gw.recv()
        check(bool(reply) and reply.get("result", {}).get("output") == "bin", "binary frame is parsed as text")

        print("# disconnect with an invocation in flight", flush=True)
        await gw.invoke("slow", {"steps": 20, "intervalMs": 300}, "inv-orphan")
        await asyncio.sleep(0.1)
    print(f"{ms()} -- closed", flush=True)


async def main() -> int:
    app: subprocess.Popen[str] | None = None
    events: list[dict] = []
    if len(sys.argv) > 1:
        url = sys.argv[1]
    else:
        app = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "app.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert app.stdout is not None
        line = app.stdout.readline().strip()
        assert line.startswith("READY "), f"app said {line!r}"
        url = line.split(" ", 1)[1]
    try:
        await scenario(url)
    finally:
        if app is not None:
            await asyncio.sleep(0.5)
            app.terminate()
            out, _ = app.communicate(timeout=10)
            print("# app.py said", flush=True)
            for line in out.splitlines():
                print("   ", line, flush=True)
                if line.startswith("EVENT "):
                    events.append(json.loads(line[6:]))
    if app is not None:
        slow = [e for e in events if e["event"] == "cancelled" and e.get("invocationId") == "inv-slow"]
        check(bool(slow) and slow[0].get("via") == "ctx.cancellation", "slow's handler saw ctx.cancellation")
        tmo = [e for e in events if e["event"] == "cancelled" and e.get("invocationId") == "inv-timeout"]
        check(bool(tmo) and tmo[0].get("ctxCancelled") is True, "timeout's handler was cancelled, ctx.is_cancelled true")
        orphan = [e for e in events if e["event"] == "cancelled" and e.get("invocationId") == "inv-orphan"]
        check(bool(orphan), "a dropped socket cancels the running handler")
        check(any(e["event"] == "claimed" for e in events), "tesseron/claimed reached the app")
    print(f"\n{'PASS' if not failures else 'FAIL: ' + '; '.join(failures)}", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
