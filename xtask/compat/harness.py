"""Shared plumbing of the compatibility drivers (`cargo xtask compat`).

Each driver module (one per PyPI client) defines `TRANSPORTS` and a `Driver` class whose
`scenario_<name>` methods drive the server through that client's public API only. This module
runs one (driver, transport) pair against one server binary and prints one JSON line per
scenario: {"client", "transport", "scenario", "status": "pass"|"fail"|"skip", "detail"}.

A scenario gets a fresh home (TANDEM_HOME and CODEX_HOME both point at it) and a fresh server.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import inspect
import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import time
import traceback

SCENARIOS = [
    "thread_lifecycle",
    "turn_with_approval",
    "command_exec",
    "model_list",
    "archive_unarchive",
    "compact",
    "error_path",
]

# A thread id that no server knows (a valid UUID, so that it is "not found", not "malformed").
UNKNOWN_THREAD = "0190a5d0-0000-7000-8000-000000000000"

# What the scripted agent runs once approved; the marker is in the command's output only (the
# command text says `$((6*7))`), so finding it proves the command ran.
APPROVAL_PROMPT = "/sh echo $((6*7))-approved\nsay done"
APPROVAL_MARKER = "42-approved"


class Skip(Exception):
    """The scenario does not apply (the client has no API for it, or the server needs a model)."""


def check(condition: bool, what: str) -> None:
    if not condition:
        raise AssertionError(what)


class Context:
    """What a driver needs: the server binary, its home and how to reach it."""

    def __init__(self, server: str, home: str, transport: str, reference: bool):
        self.server = server
        self.real_server = server
        self.home = home
        self.transport = transport
        self.reference = reference
        self.env = dict(os.environ, TANDEM_HOME=home, CODEX_HOME=home)
        self.ws_url: str | None = None
        self._ws_process: subprocess.Popen | None = None
        if transport == "proxy":
            # The client launches "its server" as usual; the wrapper makes that launch
            # `tandem ... app-server ... proxy --lines`, which starts the home's daemon and
            # bridges the client's stdio to it (issue 32).
            self.server = os.path.join(home, "tandem-via-proxy")
            with open(self.server, "w") as wrapper:
                wrapper.write(f'#!/bin/sh\nexec {shlex.quote(server)} "$@" proxy --lines\n')
            os.chmod(self.server, 0o755)

    def stdio_argv(self) -> list[str]:
        if self.transport == "proxy":
            return [self.real_server, "app-server", "proxy", "--lines"]
        return [self.server, "app-server", "--listen", "stdio://"]

    def needs_model(self, what: str) -> None:
        """Skips a step that makes the reference call a model (none is configured here)."""
        if self.reference:
            raise Skip(f"the reference needs a model for {what}")

    def start_websocket_server(self) -> str:
        port = free_port()
        self._ws_process = subprocess.Popen(
            [self.server, "app-server", "--listen", f"ws://127.0.0.1:{port}"],
            env=self.env,
            cwd=self.home,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self._ws_process.poll() is not None:
                raise RuntimeError("the websocket server exited at start")
            with contextlib.suppress(OSError):
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                self.ws_url = f"ws://127.0.0.1:{port}"
                return self.ws_url
            time.sleep(0.05)
        raise RuntimeError("the websocket server did not listen within 30 s")

    def stop(self) -> None:
        if self.transport == "proxy":
            subprocess.run(
                [self.real_server, "app-server", "daemon", "stop"],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                timeout=30,
                check=False,
            )
        if self._ws_process is not None:
            self._ws_process.terminate()
            try:
                self._ws_process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._ws_process.kill()
                self._ws_process.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run_one(driver_cls, scenario: str, ctx: Context, timeout: float) -> tuple[str, str]:
    method = getattr(driver_cls, f"scenario_{scenario}", None)
    if method is None:
        return "skip", "no public API for it in this client"
    try:
        if ctx.transport == "ws":
            ctx.start_websocket_server()
        driver = driver_cls(ctx)
        if inspect.iscoroutinefunction(method):
            asyncio.run(asyncio.wait_for(method(driver), timeout))
        else:
            method(driver)
        return "pass", ""
    except Skip as skip:
        return "skip", str(skip)
    except BaseException as error:  # noqa: BLE001 - every failure is a result
        if isinstance(error, KeyboardInterrupt):
            raise
        last = traceback.extract_tb(error.__traceback__)[-1:]
        where = f" at {os.path.basename(last[0].filename)}:{last[0].lineno}" if last else ""
        return "fail", f"{type(error).__name__}: {error}{where}"[:400]
    finally:
        ctx.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--client", required=True, help="driver module name")
    parser.add_argument("--transport", default="stdio", choices=["stdio", "ws", "proxy"])
    parser.add_argument("--server", required=True, help="binary serving `app-server`")
    parser.add_argument("--reference", action="store_true", help="the server is the reference")
    parser.add_argument("--scenario", action="append", help="run only these")
    parser.add_argument("--timeout", type=float, default=60.0)
    args = parser.parse_args()

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "drivers"))
    module = importlib.import_module(args.client)
    # Through the line proxy, a stdio client is launched exactly as over stdio.
    offered = module.TRANSPORTS + (["proxy"] if "stdio" in module.TRANSPORTS else [])
    if args.transport not in offered:
        parser.error(f"{module.NAME} has no {args.transport} transport")
    for scenario in args.scenario or SCENARIOS:
        with tempfile.TemporaryDirectory(prefix="compat-") as home:
            ctx = Context(args.server, os.path.realpath(home), args.transport, args.reference)
            status, detail = run_one(module.Driver, scenario, ctx, args.timeout)
        print(
            json.dumps(
                {
                    "client": module.NAME,
                    "transport": args.transport,
                    "scenario": scenario,
                    "status": status,
                    "detail": detail,
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
