"""codex-python-sdk 0.2.1: `AsyncCodexAgenticClient` (stdio).

Its defaults add `--enable guardian_approval` and `-c web_search="live"` to the server's
command line (its own review of approvals, and web search); the drivers turn both off through
its constructor, since the approval must reach the client here.
"""

import json

from codex_python_sdk.async_client import AsyncCodexAgenticClient

from harness import APPROVAL_MARKER, APPROVAL_PROMPT, UNKNOWN_THREAD, check

NAME = "codex-python-sdk"
TRANSPORTS = ["stdio"]


class Driver:
    def __init__(self, ctx):
        self.ctx = ctx
        self.approvals = []

    async def client(self) -> AsyncCodexAgenticClient:
        def approve(params):
            self.approvals.append(params)
            return {"decision": "accept"}

        client = AsyncCodexAgenticClient(
            codex_command=self.ctx.server,
            env=self.ctx.env,
            process_cwd=self.ctx.home,
            automatic_approval_review=False,
            enable_web_search=False,
            on_command_approval=approve,
        )
        await client.connect()
        return client

    async def start_thread(self, client, **extra):
        started = await client.thread_start(params={"cwd": self.ctx.home, **extra})
        return started["thread"]["id"]

    async def scenario_thread_lifecycle(self):
        client = await self.client()
        try:
            thread_id = await self.start_thread(client)
            await client.thread_name_set(thread_id, "compat")
            read = await client.thread_read(thread_id)
            check(read["id"] == thread_id, f"thread/read: {read}")
            await client.thread_list()
        finally:
            await client.close()

    async def scenario_turn_with_approval(self):
        self.ctx.needs_model("a turn")
        client = await self.client()
        try:
            response = await client.responses_create(
                prompt=APPROVAL_PROMPT,
                thread_params={"cwd": self.ctx.home, "approvalPolicy": "on-request"},
                include_events=True,
            )
            check(len(self.approvals) == 1, f"expected one approval, got {len(self.approvals)}")
            dumped = json.dumps([str(event) for event in response.events or []])
            check(APPROVAL_MARKER in dumped, "the approved command's output is missing")
        finally:
            await client.close()

    async def scenario_command_exec(self):
        client = await self.client()
        try:
            result = await client.command_exec(["sh", "-c", "echo out; echo err >&2; exit 3"])
            check(result == {"exitCode": 3, "stdout": "out\n", "stderr": "err\n"}, f"{result}")
        finally:
            await client.close()

    async def scenario_model_list(self):
        client = await self.client()
        try:
            models = await client.model_list()
            check(len(models["data"]) > 0, f"no models: {models}")
        finally:
            await client.close()

    async def scenario_archive_unarchive(self):
        client = await self.client()
        try:
            thread_id = await self.start_thread(client)
            await client.thread_archive(thread_id)
            await client.thread_unarchive(thread_id)
        finally:
            await client.close()

    async def scenario_compact(self):
        client = await self.client()
        try:
            thread_id = await self.start_thread(client)
            await client.thread_compact_start(thread_id)
        finally:
            await client.close()

    async def scenario_error_path(self):
        client = await self.client()
        try:
            try:
                await client.thread_read(UNKNOWN_THREAD)
            except Exception as error:  # its AppServer error types
                check("timed out" not in str(error).lower(), f"no answer: {error}")
                return
            raise AssertionError("reading an unknown thread succeeded")
        finally:
            await client.close()
