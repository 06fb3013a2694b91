"""Replays the Tesseron conformance fixtures (hub repo `conformance/fixtures`, CC BY 4.0, not
vendored here) against a Tesseron app ("host"), playing the gateway. Format: WIRE.md §11.

Two ways to reach the host under test:

    # dial: start a host per fixture (its command gets the fixture path appended), read its
    # `READY ws://…` line, dial it with subprotocol tesseron-gateway, stop it afterwards
    python conformance_runner.py FIXTURES_DIR --host-cmd "python conformance_host.py"

    # listen: for a host that dials (our AbpApp in a browser). For each fixture the runner
    # prints `FIXTURE <id> <path>` and accepts the next WebSocket on 127.0.0.1:PORT
    # (any subprotocol; it selects tesseron-gateway if offered); `reconnect` steps accept
    # the next one. Prints `LISTENING ws://127.0.0.1:PORT/` first.
    python conformance_runner.py FIXTURES_DIR --listen 0

    --lacks resume,elicitation   capabilities the host does not implement: those fixtures are
                                 reported as SKIP, never as PASS (README "Runner contract" 2)
    --only actions/cancel        run one fixture id (repeatable)

Exit 1 if any fixture failed. Failures name the fixture id, the step index, the expected shape
and the actual frame (README "Runner contract" 5).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection, connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed

Connection = ClientConnection | ServerConnection
TYPES = {
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "any": lambda v: True,
}


class StepFailure(Exception):
    pass


def match(expected: Any, actual: Any, captures: dict[str, Any], path: str = "$") -> None:
    """Structural match: objects assert only the keys they name; `~` strings are matchers."""
    if isinstance(expected, str) and expected.startswith("~"):
        token = expected[1:]
        if token in TYPES:
            if not TYPES[token](actual):
                raise StepFailure(f"{path}: expected {token}, got {json.dumps(actual)}")
        elif token.startswith("regex:"):
            if not isinstance(actual, str) or not re.search(token[6:], actual):
                raise StepFailure(f"{path}: {json.dumps(actual)} does not match /{token[6:]}/")
        elif token.startswith("capture:"):
            captures[token[8:]] = actual
        elif token.startswith("ref:"):
            if token[4:] not in captures or captures[token[4:]] != actual:
                raise StepFailure(f"{path}: expected captured {token[4:]}={json.dumps(captures.get(token[4:]))}, got {json.dumps(actual)}")
        else:
            raise StepFailure(f"{path}: unknown matcher {expected}")
        return
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            raise StepFailure(f"{path}: expected an object, got {json.dumps(actual)}")
        for key, want in expected.items():
            if want == "~absent":
                if key in actual:
                    raise StepFailure(f"{path}.{key}: must be absent, got {json.dumps(actual[key])}")
                continue
            if key not in actual:
                raise StepFailure(f"{path}.{key}: missing")
            match(want, actual[key], captures, f"{path}.{key}")
        return
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            raise StepFailure(f"{path}: expected an array of {len(expected)}, got {json.dumps(actual)}")
        for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
            match(want, got, captures, f"{path}[{index}]")
        return
    if expected != actual or isinstance(expected, bool) != isinstance(actual, bool):
        raise StepFailure(f"{path}: expected {json.dumps(expected)}, got {json.dumps(actual)}")


def resolve(frame: Any, captures: dict[str, Any]) -> Any:
    """A send frame with `~ref:` replaced and `~absent` keys left out."""
    if isinstance(frame, dict):
        return {k: resolve(v, captures) for k, v in frame.items() if v != "~absent"}
    if isinstance(frame, list):
        return [resolve(v, captures) for v in frame]
    if isinstance(frame, str) and frame.startswith("~ref:"):
        return captures[frame[5:]]
    return frame


class Endpoint:
    """How the runner reaches the host: dial its URL, or accept its dials."""

    async def open(self) -> Connection: ...
    async def close(self) -> None: ...


class Dialer(Endpoint):
    def __init__(self, host_cmd: str, fixture_path: Path) -> None:
        self.cmd = [*shlex.split(host_cmd), str(fixture_path)]
        self.process: asyncio.subprocess.Process | None = None
        self.url = ""

    async def open(self) -> Connection:
        if self.process is None:
            self.process = await asyncio.create_subprocess_exec(
                *self.cmd, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
            )
            assert self.process.stdout is not None
            line = (await asyncio.wait_for(self.process.stdout.readline(), 15)).decode().strip()
            if not line.startswith("READY "):
                raise StepFailure(f"host did not say READY: {line!r}")
            self.url = line.split(" ", 1)[1]
        return await connect(self.url, subprotocols=[websockets.Subprotocol("tesseron-gateway")])

    async def close(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            await asyncio.wait_for(self.process.wait(), 10)


class Listener(Endpoint):
    def __init__(self, queue: asyncio.Queue[ServerConnection]) -> None:
        self.queue = queue

    async def open(self) -> Connection:
        try:
            return await asyncio.wait_for(self.queue.get(), 30)
        except TimeoutError:
            raise StepFailure("no host dialed in within 30 s") from None


async def recv(ws: Connection, timeout: float) -> Any:
    text = await asyncio.wait_for(ws.recv(), timeout)
    if isinstance(text, bytes):
        text = text.decode()
    print(f"      << {text}", flush=True)
    return json.loads(text)


async def run_fixture(fixture: dict[str, Any], endpoint: Endpoint) -> None:
    captures: dict[str, Any] = {}
    ws = await endpoint.open()
    try:
        for index, step in enumerate(fixture["steps"]):
            timeout = step.get("timeoutMs", 2000) / 1000
            try:
                if "recv" in step:
                    try:
                        frame = await recv(ws, timeout)
                    except TimeoutError:
                        raise StepFailure(f"nothing arrived within {timeout * 1000:.0f} ms") from None
                    except ConnectionClosed:
                        raise StepFailure("the host closed the connection") from None
                    try:
                        match(step["recv"], frame, captures)
                    except StepFailure as problem:
                        raise StepFailure(f"{problem}\n      actual frame: {json.dumps(frame)}") from None
                    # `notBefore` holds by construction: steps run in order.
                elif "send" in step:
                    text = json.dumps(resolve(step["send"], captures))
                    print(f"      >> {text}", flush=True)
                    await ws.send(text)
                elif "expectClosed" in step:
                    try:
                        frame = await recv(ws, timeout)
                        raise StepFailure(f"expected the host to close, it sent {json.dumps(frame)}")
                    except ConnectionClosed:
                        pass
                    except TimeoutError:
                        raise StepFailure(f"the host did not close within {timeout * 1000:.0f} ms") from None
                elif "expectSilence" in step:
                    method = step["expectSilence"].get("method") if isinstance(step["expectSilence"], dict) else None
                    deadline = asyncio.get_running_loop().time() + timeout
                    while (left := deadline - asyncio.get_running_loop().time()) > 0:
                        try:
                            frame = await recv(ws, left)
                        except TimeoutError:
                            break
                        if method is None or frame.get("method") == method:
                            raise StepFailure(f"expected silence, got {json.dumps(frame)}")
                elif "dropTransport" in step:
                    await ws.close()
                    print("      -- dropped transport", flush=True)
                elif "reconnect" in step:
                    ws = await endpoint.open()
                    print("      -- reconnected", flush=True)
                else:
                    raise StepFailure(f"unknown step kind {sorted(step)}")
            except StepFailure as problem:
                kind = next((k for k in ("recv", "send", "expectClosed", "expectSilence") if k in step), "?")
                raise StepFailure(
                    f"step {index} ({kind}): {problem}\n      expected: {json.dumps(step.get(kind))}"
                ) from None
    finally:
        await ws.close()
        await endpoint.close()


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("fixtures", type=Path)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--host-cmd")
    group.add_argument("--listen", type=int)
    parser.add_argument("--lacks", default="")
    parser.add_argument("--only", action="append", default=[])
    args = parser.parse_args()
    lacks = {tag for tag in args.lacks.split(",") if tag}

    paths = sorted(args.fixtures.rglob("*.json"))
    if not paths:
        print(f"no fixtures under {args.fixtures}", file=sys.stderr)
        return 2

    queue: asyncio.Queue[ServerConnection] = asyncio.Queue()
    server = None
    if args.listen is not None:
        async def accept(connection: ServerConnection) -> None:
            await queue.put(connection)
            await connection.wait_closed()

        def select(connection: ServerConnection, offered: list[websockets.Subprotocol]) -> websockets.Subprotocol | None:
            # A browser tab dials without a subprotocol (as @tesseron/web does); accept both.
            return websockets.Subprotocol("tesseron-gateway") if "tesseron-gateway" in offered else None

        server = await serve(accept, "127.0.0.1", args.listen, select_subprotocol=select)
        port = next(iter(server.sockets)).getsockname()[1]
        print(f"LISTENING ws://127.0.0.1:{port}/", flush=True)

    passed, failed, skipped = [], [], []
    for path in paths:
        fixture = json.loads(path.read_text(encoding="utf-8"))
        fid = fixture["id"]
        if args.only and fid not in args.only:
            continue
        missing = sorted(set(fixture.get("requires", [])) & lacks)
        if missing:
            skipped.append(f"{fid} (requires {', '.join(missing)})")
            continue
        print(f"FIXTURE {fid} {path}", flush=True)
        endpoint: Endpoint = Dialer(args.host_cmd, path) if args.host_cmd else Listener(queue)
        try:
            await run_fixture(fixture, endpoint)
        except Exception as problem:  # noqa: BLE001 - every failure is reported, none is fatal
            failed.append(fid)
            print(f"  FAIL {fid}: {problem}", flush=True)
        else:
            passed.append(fid)
            print(f"  PASS {fid}", flush=True)

    if server is not None:
        server.close()
    print(f"\n{len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped")
    for fid in failed:
        print(f"  failed:  {fid}")
    for fid in skipped:
        print(f"  skipped: {fid}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
