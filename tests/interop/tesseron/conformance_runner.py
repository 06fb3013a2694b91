"""Replays the Tesseron conformance fixtures (CC BY 4.0; see ATTRIBUTION.md beside them) against a
Tesseron app ("host"), playing the gateway. Format: WIRE.md §11.

Two ways to reach the host under test:

    # dial: start a host per fixture (its command gets the fixture path appended), read its
    # `READY ws://…` line, dial it with subprotocol tesseron-gateway, stop it afterwards
    python conformance_runner.py FIXTURES_DIR --host-cmd "python conformance_host.py"

    # listen: for a host that dials (our AbpApp in a browser). Listens on 127.0.0.1:PORT and prints
    # `LISTENING ws://127.0.0.1:PORT/` first. The host learns what to stand up over plain HTTP on the
    # same port (CORS open, so a test page on another origin can read it):
    #   GET /fixtures        → [{ id, fixture }] of the fixtures to run, in order (skips left out)
    #   GET /result/<id>     → { id, status: "pass" | "fail", detail }, once that fixture has ended
    # and dials ws://127.0.0.1:PORT/<id> for each (any subprotocol; tesseron-gateway is selected if
    # offered). A dial for any other fixture than the one running is refused (HTTP 409), so a
    # reconnecting host of an earlier fixture cannot take a later one's place; `reconnect` steps
    # accept the next dial for the same fixture.
    python conformance_runner.py FIXTURES_DIR --listen 0

    --lacks TAG[=REASON]   a capability the host does not implement (repeatable, or comma-separated
                           without reasons): fixtures that need it are reported as SKIP with the
                           reason, never as PASS. A fixture needs its `requires` tags, and `resources`
                           when the app it describes declares resources.
    --only actions/cancel  run one fixture id (repeatable)

Prints one line per fixture (PASS, FAIL with the step, the expected shape and the actual frame, SKIP
with the reason) and the totals. Exit 1 if any fixture failed.
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
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

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


class Board:
    """What --listen mode serves over HTTP: the fixtures to run, which one is running, and results."""

    def __init__(self, fixtures: list[dict[str, Any]]) -> None:
        self.fixtures = fixtures
        self.current: str | None = None
        self.results: dict[str, dict[str, str]] = {}
        self.changed = asyncio.Condition()
        # Set once the host has asked for the fixtures: only then does a fixture's wait for its dial begin (a
        # browser may take a minute to build and load the page).
        self.asked = asyncio.Event()

    async def finish(self, fid: str, status: str, detail: str) -> None:
        async with self.changed:
            self.results[fid] = {"id": fid, "status": status, "detail": detail}
            self.changed.notify_all()

    async def result(self, fid: str) -> dict[str, str]:
        async with self.changed:
            await self.changed.wait_for(lambda: fid in self.results)
            return self.results[fid]

    async def answer(self, connection: ServerConnection, request: Request) -> Response | None:
        path = request.path.split("?", 1)[0]
        if path == "/fixtures":
            body = [{"id": f["id"], "fixture": f.get("fixture", {})} for f in self.fixtures]
            self.asked.set()
            return json_response(connection, 200, body)
        if path.startswith("/result/"):
            fid = path[len("/result/"):]
            if fid not in {f["id"] for f in self.fixtures}:
                return json_response(connection, 404, {"error": f"no fixture {fid} runs here"})
            return json_response(connection, 200, await self.result(fid))
        if request.headers.get("Upgrade", "").lower() != "websocket":
            return json_response(connection, 404, {"error": f"no such path: {path}"})
        if path.strip("/") != self.current:
            return json_response(connection, 409, {"error": f"{path} is not the running fixture ({self.current})"})
        return None


def json_response(connection: ServerConnection, status: int, body: Any) -> Response:
    response = connection.respond(status, json.dumps(body))
    response.headers = Headers(
        [
            ("Content-Type", "application/json"),
            ("Access-Control-Allow-Origin", "*"),
            ("Content-Length", str(len(response.body))),
            ("Connection", "close"),
        ]
    )
    return response


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


def needs(fixture: dict[str, Any]) -> set[str]:
    """The capability tags a fixture needs: its `requires`, and `resources` when its app declares any."""
    tags = set(fixture.get("requires", []))
    if fixture.get("fixture", {}).get("resources"):
        tags.add("resources")
    return tags


def parse_lacks(values: list[str]) -> dict[str, str]:
    lacks: dict[str, str] = {}
    for value in values:
        if "=" in value:
            tag, reason = value.split("=", 1)
            lacks[tag.strip()] = reason.strip()
        else:
            for tag in filter(None, (t.strip() for t in value.split(","))):
                lacks[tag] = "the host does not implement it"
    return lacks


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("fixtures", type=Path)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--host-cmd")
    group.add_argument("--listen", type=int)
    parser.add_argument("--lacks", action="append", default=[])
    parser.add_argument("--only", action="append", default=[])
    args = parser.parse_args()
    lacks = parse_lacks(args.lacks)

    paths = sorted(args.fixtures.rglob("*.json"))
    if not paths:
        print(f"no fixtures under {args.fixtures}", file=sys.stderr)
        return 2

    passed, failed, skipped = [], [], []
    runnable: list[tuple[Path, dict[str, Any]]] = []
    for path in paths:
        fixture = json.loads(path.read_text(encoding="utf-8"))
        fid = fixture["id"]
        if args.only and fid not in args.only:
            continue
        missing = sorted(needs(fixture) & set(lacks))
        if missing:
            why = "; ".join(f"requires {tag}: {lacks[tag]}" for tag in missing)
            skipped.append(fid)
            print(f"  SKIP {fid}: {why}", flush=True)
            continue
        runnable.append((path, fixture))

    queue: asyncio.Queue[ServerConnection] = asyncio.Queue()
    board = Board([fixture for _, fixture in runnable])
    server = None
    if args.listen is not None:
        async def accept(connection: ServerConnection) -> None:
            await queue.put(connection)
            await connection.wait_closed()

        def select(connection: ServerConnection, offered: list[websockets.Subprotocol]) -> websockets.Subprotocol | None:
            # A browser tab dials without a subprotocol (as @tesseron/web does); accept both.
            return websockets.Subprotocol("tesseron-gateway") if "tesseron-gateway" in offered else None

        server = await serve(
            accept, "127.0.0.1", args.listen, select_subprotocol=select, process_request=board.answer,
            open_timeout=None,
        )
        port = next(iter(server.sockets)).getsockname()[1]
        print(f"LISTENING ws://127.0.0.1:{port}/", flush=True)
        try:
            await asyncio.wait_for(board.asked.wait(), 600)
        except TimeoutError:
            print("no host asked for the fixtures within 600 s", flush=True)
            return 1

    for path, fixture in runnable:
        fid = fixture["id"]
        board.current = fid
        print(f"FIXTURE {fid} {path}", flush=True)
        endpoint: Endpoint = Dialer(args.host_cmd, path) if args.host_cmd else Listener(queue)
        try:
            await run_fixture(fixture, endpoint)
        except Exception as problem:  # noqa: BLE001 - every failure is reported, none is fatal
            failed.append(fid)
            print(f"  FAIL {fid}: {problem}", flush=True)
            status, detail = "fail", str(problem)
        else:
            passed.append(fid)
            print(f"  PASS {fid}", flush=True)
            status, detail = "pass", ""
        board.current = None
        # A stale dial (the host reconnecting after the fixture closed it) is not the next one's.
        while not queue.empty():
            await queue.get_nowait().close()
        await board.finish(fid, status, detail)

    if server is not None:
        # Let the host read the last result before the port goes.
        await asyncio.sleep(0.5)
        server.close()
    print(f"\n{len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped")
    for fid in failed:
        print(f"  failed:  {fid}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
