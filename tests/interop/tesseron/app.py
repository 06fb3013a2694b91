"""A small Tesseron app built with the PyPI `tesseron` package (0.2.x), for the interop tests.

The Python SDK can only *listen*: the app binds a loopback WebSocket and the gateway dials it
with the `tesseron-gateway` subprotocol (see WIRE.md). So this script does not take a gateway
URL; it binds 127.0.0.1 and announces the URL the gateway (our AbpClient, or fake_gateway.py)
must dial.

    python app.py [--port N] [--host 127.0.0.1]

stdout, one line each, flushed (a test runner parses these):
    READY ws://127.0.0.1:PORT/          once, when listening
    EVENT {json}                       what the app saw: welcome, claimed, disconnected,
                                       and every handler start/finish/cancellation
Runs until SIGTERM/SIGINT (or stdin closing, so a killed parent does not leak it).

Actions:
    echo     raw JSON in, the same JSON out
    add      {a: number, b: number} (Pydantic model, so bad input is -32004) -> {sum}
    slow     {steps?: int = 20, intervalMs?: int = 500} progress every intervalMs (percent
             rising), honours cancellation; records how the handler saw it
    timeout  per-action timeoutMs 300, sleeps 5 s -> the SDK answers -32002
    fail     {kind: "handler" | "internal"} -> -32005 with message+data, or -32603
    events   what the handlers saw so far
    exit     {afterMs?: int = 100} ends the process (the test script restarts it)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import threading
import time

from pydantic import BaseModel

from tesseron import (
    ActionContext,
    ActionError,
    ClaimedEvent,
    DisconnectedEvent,
    HandshakeFailedEvent,
    HostEvent,
    ManifestPublication,
    TesseronApp,
    WelcomeEvent,
)

TIMEOUT_ACTION_MS = 300


class AddInput(BaseModel):
    # Module level: the SDK resolves the handler's annotations with typing.get_type_hints,
    # which cannot see a class defined inside build() under `from __future__ import annotations`.
    a: float
    b: float


# Every event, also kept for the `events` action (a browser test cannot read this process's stdout).
EVENTS: list[dict[str, object]] = []


def emit(kind: str, **fields: object) -> None:
    line = {"event": kind, "t": round(time.monotonic(), 3), **fields}
    EVENTS.append(json.loads(json.dumps(line, default=str)))
    print("EVENT " + json.dumps(line, default=str), flush=True)


def build(port: int, host: str) -> TesseronApp:
    app = TesseronApp(
        id="abp_interop",
        name="ABP interop app",
        description="The Python side of abp-wasm's Tesseron interop tests",
        origin="http://127.0.0.1",
        version="0.0.0",
        # Never write ~/.tesseron/instances: the test gateway dials the printed URL directly.
        manifest=ManifestPublication.disabled(),
        bind_host=host,
        bind_port=port,
    )

    @app.action("echo", description="Returns its input unchanged")
    async def echo(input: object, ctx: ActionContext) -> object:  # noqa: A002
        emit("handler-start", action="echo", invocationId=ctx.invocation_id)
        return input

    @app.action("add", description="Adds two numbers")
    async def add(input: AddInput, ctx: ActionContext) -> dict[str, float]:  # noqa: A002
        emit("handler-start", action="add", invocationId=ctx.invocation_id)
        return {"sum": input.a + input.b}

    @app.action(
        "slow",
        description="Reports progress until done or cancelled",
        input_schema={
            "type": "object",
            "properties": {"steps": {"type": "integer"}, "intervalMs": {"type": "integer"}},
        },
    )
    async def slow(input: object, ctx: ActionContext) -> object:  # noqa: A002
        params = input if isinstance(input, dict) else {}
        steps = int(params.get("steps", 20))
        interval = int(params.get("intervalMs", 500)) / 1000
        emit("handler-start", action="slow", invocationId=ctx.invocation_id)
        done = 0
        seen_signal = False
        try:
            for done in range(1, steps + 1):
                # Wake on cancellation as well as on the tick, the way a handler should.
                try:
                    await asyncio.wait_for(ctx.cancellation.wait(), timeout=interval)
                except TimeoutError:
                    pass
                if ctx.is_cancelled:
                    seen_signal = True
                    emit(
                        "cancelled",
                        action="slow",
                        invocationId=ctx.invocation_id,
                        via="ctx.cancellation",
                        step=done,
                    )
                    raise asyncio.CancelledError
                await ctx.progress(
                    percent=round(done * 100 / steps), message=f"step {done}/{steps}"
                )
        except asyncio.CancelledError:
            # The SDK also task.cancel()s the handler right after setting ctx.cancellation, so
            # a handler that is not waiting on the signal sees CancelledError at its next await.
            if ctx.is_cancelled and done and seen_signal:
                raise
            emit(
                "cancelled",
                action="slow",
                invocationId=ctx.invocation_id,
                via="asyncio.CancelledError",
                ctxCancelled=ctx.is_cancelled,
                step=done,
            )
            raise
        emit("handler-done", action="slow", invocationId=ctx.invocation_id)
        return {"done": True, "steps": steps}

    @app.action(
        "timeout",
        description=f"Sleeps 5 s under a {TIMEOUT_ACTION_MS} ms action timeout",
        timeout_ms=TIMEOUT_ACTION_MS,
    )
    async def timeout(input: object, ctx: ActionContext) -> object:  # noqa: A002
        emit("handler-start", action="timeout", invocationId=ctx.invocation_id)
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            emit(
                "cancelled",
                action="timeout",
                invocationId=ctx.invocation_id,
                via="asyncio.CancelledError",
                ctxCancelled=ctx.is_cancelled,
            )
            raise
        return {"slept": 5}

    @app.action("fail", description="Fails: kind handler -> -32005, internal -> -32603")
    async def fail(input: object, ctx: ActionContext) -> object:  # noqa: A002
        kind = input.get("kind") if isinstance(input, dict) else None
        if kind == "internal":
            raise RuntimeError("secret internal detail")
        raise ActionError.handler("the handler refused", {"kind": kind})

    @app.action("events", description="What the handlers saw so far (for tests that cannot read stdout)")
    async def events(input: object, ctx: ActionContext) -> object:  # noqa: A002
        return list(EVENTS)

    @app.action("exit", description="Ends this process a moment later (tests: the app goes away mid-call)")
    async def exit_(input: object, ctx: ActionContext) -> object:  # noqa: A002
        delay = float(input.get("afterMs", 100)) / 1000 if isinstance(input, dict) else 0.1
        # A thread, not the event loop: the process must end even while a handler holds the loop.
        threading.Timer(delay, lambda: os._exit(3)).start()
        return {"exiting": True}

    def on_event(event: HostEvent) -> None:
        if isinstance(event, WelcomeEvent):
            emit("welcome", welcome=event.welcome.model_dump(by_alias=True))
        elif isinstance(event, ClaimedEvent):
            emit("claimed", claimed=event.claimed.model_dump(by_alias=True))
        elif isinstance(event, HandshakeFailedEvent):
            emit("handshake-failed", code=event.error.code, message=event.error.message)
        elif isinstance(event, DisconnectedEvent):
            emit("disconnected")

    app.add_event_listener(on_event)
    return app


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args()

    host = await build(args.port, args.host).listen()
    print(f"READY {host.url}", flush=True)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    # Also stop when the parent goes away (stdin EOF), unless stdin is a terminal.
    if not sys.stdin.isatty():
        def watch_stdin() -> None:
            sys.stdin.read()
            loop.call_soon_threadsafe(stop.set)

        threading.Thread(target=watch_stdin, daemon=True).start()
    await stop.wait()
    await host.shutdown()
    emit("stopped")


if __name__ == "__main__":
    asyncio.run(main())
