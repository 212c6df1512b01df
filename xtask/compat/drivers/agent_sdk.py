"""codex-python-sdk-unofficial 0.128.0 (`codex_agent_sdk`): `AppServerClient` (async, stdio).

Threads start through its public `request` (its low-level JSON-RPC API), not the typed
`thread_start`: that one validates `serviceTier` against `fast`/`flex`, and the reference
(0.169) answers `"default"`, so the typed call fails against the reference itself. So do
`thread/read` (its typed form sends `includeTurns: null`, refused by the reference), and
`command/exec`, `model/list` and `thread/compact/start`, which it has no typed method for.
"""

from codex_agent_sdk import AppServerClient
from codex_agent_sdk.options import AppServerConfig

from harness import APPROVAL_MARKER, APPROVAL_PROMPT, UNKNOWN_THREAD, check

NAME = "codex-python-sdk-unofficial"
TRANSPORTS = ["stdio"]


class Driver:
    def __init__(self, ctx):
        self.ctx = ctx

    async def client(self) -> AppServerClient:
        client = AppServerClient(
            AppServerConfig(codex_bin=self.ctx.server, env=self.ctx.env, cwd=self.ctx.home)
        )
        await client.initialize()
        return client

    async def start_thread(self, client, **extra) -> str:
        started = await client.request("thread/start", {"cwd": self.ctx.home, **extra})
        return started["thread"]["id"]

    async def scenario_thread_lifecycle(self):
        client = await self.client()
        try:
            thread_id = await self.start_thread(client)
            await client.thread_set_name(thread_id=thread_id, name="compat")
            # Raw too: the typed `thread_read` sends `includeTurns: null`, which the reference
            # refuses ("expected a boolean").
            read = await client.request("thread/read", {"threadId": thread_id})
            check(read["thread"]["id"] == thread_id, f"thread/read: {read}")
            await client.thread_list()
        finally:
            await client.close()

    async def scenario_turn_with_approval(self):
        self.ctx.needs_model("a turn")
        client = await self.client()
        try:
            approvals = []

            # The raw handler: the typed approval API validates `command` as a list, which the
            # reference (0.169) sends as a string, so it cannot parse any server's request.
            async def approve(request):
                approvals.append(request)
                return {"decision": "accept"}

            client.register_server_request_handler("item/commandExecution/requestApproval", approve)
            thread_id = await self.start_thread(client, approvalPolicy="on-request")
            turn = await client.turn_start(thread_id=thread_id, input=APPROVAL_PROMPT)
            await client.wait_for_turn_completed(thread_id=thread_id, turn_id=turn.turn.id)
            check(len(approvals) == 1, f"expected one approval, got {len(approvals)}")
            read = await client.request(
                "thread/read", {"threadId": thread_id, "includeTurns": True}
            )
            check(APPROVAL_MARKER in str(read), "the approved command's output is missing")
        finally:
            await client.close()

    async def scenario_command_exec(self):
        client = await self.client()
        try:
            result = await client.request(
                "command/exec", {"command": ["sh", "-c", "echo out; echo err >&2; exit 3"]}
            )
            check(result == {"exitCode": 3, "stdout": "out\n", "stderr": "err\n"}, f"{result}")
        finally:
            await client.close()

    async def scenario_model_list(self):
        client = await self.client()
        try:
            models = await client.request("model/list", {})
            check(len(models["data"]) > 0, f"no models: {models}")
        finally:
            await client.close()

    async def scenario_archive_unarchive(self):
        client = await self.client()
        try:
            thread_id = await self.start_thread(client)
            await client.thread_archive(thread_id=thread_id)
            await client.thread_unarchive(thread_id=thread_id)
        finally:
            await client.close()

    async def scenario_compact(self):
        client = await self.client()
        try:
            thread_id = await self.start_thread(client)
            await client.request("thread/compact/start", {"threadId": thread_id})
        finally:
            await client.close()

    async def scenario_error_path(self):
        client = await self.client()
        try:
            try:
                await client.request("thread/read", {"threadId": UNKNOWN_THREAD})
            except Exception as error:  # its RPC error types
                check("timed out" not in str(error).lower(), f"no answer: {error}")
                return
            raise AssertionError("reading an unknown thread succeeded")
        finally:
            await client.close()
