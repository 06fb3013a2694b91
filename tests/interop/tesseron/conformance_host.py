"""Stands up the app a Tesseron conformance fixture describes, with the PyPI `tesseron` SDK.

    python conformance_host.py path/to/fixture.json

Prints `READY ws://127.0.0.1:PORT/` and serves until SIGTERM or stdin EOF. It exists to prove
conformance_runner.py against the reference Python SDK, so the same runner can then be trusted
against our AbpApp. The fixture's `fixture` block (see WIRE.md §11) is interpreted here:
actions {name, description?, inputSchema?, returns?, blocksUntilCancelled?, progress?,
confirms?, returnsConfirmResult?, assertHandlerNotCalled?} and resources {name, description?,
value, subscribable?, emits?}.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import threading
from typing import Any

from tesseron import ActionContext, ManifestPublication, TesseronApp, ValidationIssue

JSON_TYPES: dict[str, tuple[type, ...]] = {
    "number": (int, float),
    "integer": (int,),
    "string": (str,),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def schema_validator(schema: dict[str, Any]):  # type: ignore[no-untyped-def]
    """The few JSON Schema keywords the fixtures use: type object, properties' types, required."""

    def validate(value: Any) -> list[ValidationIssue]:
        if schema.get("type") == "object" and not isinstance(value, dict):
            return [ValidationIssue(message="expected an object", path=[])]
        issues = []
        value = value if isinstance(value, dict) else {}
        for key in schema.get("required", []):
            if key not in value:
                issues.append(ValidationIssue(message="required", path=[key]))
        for key, sub in schema.get("properties", {}).items():
            want = JSON_TYPES.get(sub.get("type", ""))
            got = value.get(key)
            if key in value and want and (not isinstance(got, want) or isinstance(got, bool) and bool not in want):
                issues.append(ValidationIssue(message=f"expected {sub['type']}", path=[key]))
        return issues

    return validate


def build(fixture: dict[str, Any]) -> TesseronApp:
    app = TesseronApp(
        id="conformance",
        name="conformance host (python tesseron)",
        origin="http://127.0.0.1",
        manifest=ManifestPublication.disabled(),
    )
    spec = fixture.get("fixture", {})
    for action in spec.get("actions", []):
        register_action(app, action)
    for resource in spec.get("resources", []):
        register_resource(app, resource)
    return app


def register_action(app: TesseronApp, action: dict[str, Any]) -> None:
    async def handler(input: Any, ctx: ActionContext) -> Any:  # noqa: A002
        if action.get("assertHandlerNotCalled"):
            print(f"HANDLER-CALLED {action['name']}", file=sys.stderr, flush=True)
        for update in action.get("progress", []):
            await ctx.progress(percent=update.get("percent"), message=update.get("message"))
            await asyncio.sleep(0.01)
        if action.get("blocksUntilCancelled"):
            await ctx.cancellation.wait()
        if "confirms" in action:
            confirmed = await ctx.confirm(action["confirms"])
            if action.get("returnsConfirmResult"):
                return {"confirmed": confirmed}
        return action.get("returns")

    schema = action.get("inputSchema")
    app.action(
        action["name"],
        description=action.get("description", ""),
        input_schema=schema,
        validate=schema_validator(schema) if schema else None,
    )(handler)


def register_resource(app: TesseronApp, resource: dict[str, Any]) -> None:
    value = resource.get("value")

    async def read() -> Any:
        return value

    def subscribe(emit: Any) -> Any:
        handles = [
            asyncio.get_running_loop().call_later(0.05, emit, item["value"])
            for item in resource.get("emits", [])
        ]
        return lambda: [handle.cancel() for handle in handles]

    app.resource(
        resource["name"],
        read=read,
        description=resource.get("description", ""),
        subscribable=bool(resource.get("subscribable")),
        subscribe=subscribe if resource.get("emits") else None,
    )


async def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as file:
        fixture = json.load(file)
    host = await build(fixture).listen()
    print(f"READY {host.url}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)

    def watch_stdin() -> None:
        sys.stdin.read()
        loop.call_soon_threadsafe(stop.set)

    if not sys.stdin.isatty():
        threading.Thread(target=watch_stdin, daemon=True).start()
    await stop.wait()
    await host.shutdown()


if __name__ == "__main__":
    asyncio.run(main())
