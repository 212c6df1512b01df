"""codex-app-server-client 0.1.0: `SyncCodexClient` (stdio)."""

import json
import threading

from codex_app_server_client import SyncCodexClient
from codex_app_server_client.types.threads import (
    ThreadCompactStartParams,
    ThreadReadParams,
    ThreadStartParams,
    ThreadUnarchiveParams,
    TurnStartParams,
)
from codex_app_server_client.types.misc import CommandExecParams

from harness import APPROVAL_MARKER, APPROVAL_PROMPT, UNKNOWN_THREAD, check

NAME = "codex-app-server-client"
TRANSPORTS = ["stdio"]


class Driver:
    def __init__(self, ctx):
        self.ctx = ctx

    def client(self) -> SyncCodexClient:
        client = SyncCodexClient(codex_bin=self.ctx.server, env=self.ctx.env)
        client.start()
        return client

    def start_thread(self, client, **extra):
        return client.thread_start(ThreadStartParams(cwd=self.ctx.home, **extra)).thread.id

    def scenario_thread_lifecycle(self):
        client = self.client()
        try:
            thread_id = self.start_thread(client)
            client.thread_set_name(thread_id, "compat")
            read = client.thread_read(ThreadReadParams(thread_id=thread_id))
            check(read.thread.id == thread_id, f"thread/read: {read}")
            client.thread_list()
        finally:
            client.close()

    def scenario_turn_with_approval(self):
        self.ctx.needs_model("a turn")
        client = self.client()
        try:
            approvals = []
            completed = threading.Event()
            events = []

            def approve(method, params):
                approvals.append(params)
                return {"decision": "accept"}

            def on_event(method, event):
                events.append((method, event))
                if method == "turn/completed":
                    completed.set()

            client.on_server_request("item/commandExecution/requestApproval", approve)
            client.on_notification(None, on_event)
            thread_id = self.start_thread(client, approval_policy="on-request")
            client.turn_start(
                TurnStartParams(thread_id=thread_id, input=[{"type": "text", "text": APPROVAL_PROMPT}])
            )
            check(completed.wait(30), "no turn/completed within 30 s")
            check(len(approvals) == 1, f"expected one approval, got {len(approvals)}")
            dumped = json.dumps([str(e) for e in events])
            check(APPROVAL_MARKER in dumped, "the approved command's output is missing")
        finally:
            client.close()

    def scenario_command_exec(self):
        client = self.client()
        try:
            result = client.command_exec(CommandExecParams(command=["sh", "-c", "echo out; echo err >&2; exit 3"]))
            check((result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n"), f"{result}")
        finally:
            client.close()

    def scenario_model_list(self):
        client = self.client()
        try:
            # Raw `request`: the typed `model_list` rejects the reference's reasoning effort
            # `max`, so it fails against the reference itself.
            models = client.request("model/list", {})
            check(len(models["data"]) > 0, f"no models: {models}")
        finally:
            client.close()

    def scenario_archive_unarchive(self):
        client = self.client()
        try:
            thread_id = self.start_thread(client)
            client.thread_archive(thread_id)
            client.thread_unarchive(ThreadUnarchiveParams(thread_id=thread_id))
        finally:
            client.close()

    def scenario_compact(self):
        client = self.client()
        try:
            thread_id = self.start_thread(client)
            client.thread_compact_start(ThreadCompactStartParams(thread_id=thread_id))
        finally:
            client.close()

    def scenario_error_path(self):
        client = self.client()
        try:
            try:
                client.thread_read(ThreadReadParams(thread_id=UNKNOWN_THREAD))
            except Exception as error:  # the client raises its JSON-RPC error type
                check("timed out" not in str(error), f"no answer: {error}")
                return
            raise AssertionError("reading an unknown thread succeeded")
        finally:
            client.close()
