"""codex-app-server-sdk 0.4.1: `CodexClient` (async), over stdio and websocket."""

import json

from codex_app_server_sdk import CodexClient, CodexProtocolError, ThreadConfig

from harness import APPROVAL_MARKER, APPROVAL_PROMPT, UNKNOWN_THREAD, check

NAME = "codex-app-server-sdk"
TRANSPORTS = ["stdio", "ws"]


class Driver:
    def __init__(self, ctx):
        self.ctx = ctx

    def client(self) -> CodexClient:
        if self.ctx.transport == "ws":
            return CodexClient.connect_websocket(url=self.ctx.ws_url)
        return CodexClient.connect_stdio(
            command=self.ctx.stdio_argv(), cwd=self.ctx.home, env=self.ctx.env
        )

    async def scenario_thread_lifecycle(self):
        async with self.client() as client:
            await client.initialize()
            thread = await client.start_thread(ThreadConfig(cwd=self.ctx.home))
            await thread.set_name("compat")
            read = await thread.read(include_turns=False)
            check(thread.thread_id in json.dumps(read), f"thread/read: {read}")
            listed = await client.list_threads()
            # The reference lists a thread only once it has a turn, so only the shape is checked.
            check(isinstance(listed.get("data"), list), f"thread/list: {listed}")

    async def scenario_turn_with_approval(self):
        self.ctx.needs_model("a turn")
        async with self.client() as client:
            await client.initialize()

            async def accept(_request):
                return "accept"

            client.set_approval_handler(accept)
            thread = await client.start_thread(
                ThreadConfig(cwd=self.ctx.home, approval_policy="on-request")
            )
            result = await thread.chat_once(APPROVAL_PROMPT)
            events = json.dumps(result.raw_events)
            check("requestApproval" in events or "serverRequest/resolved" in events,
                  "no approval was asked")
            check(APPROVAL_MARKER in events, f"the approved command's output is missing: {events[:300]}")

    async def scenario_command_exec(self):
        async with self.client() as client:
            await client.initialize()
            result = await client.exec_command(["sh", "-c", "echo out; echo err >&2; exit 3"],
                                               cwd=self.ctx.home)
            check(result == {"exitCode": 3, "stdout": "out\n", "stderr": "err\n"}, f"{result}")

    async def scenario_model_list(self):
        async with self.client() as client:
            await client.initialize()
            models = await client.list_models()
            check(len(models["data"]) > 0, f"no models: {models}")
            check(sum(1 for m in models["data"] if m.get("isDefault")) == 1,
                  "not exactly one default model")

    async def scenario_archive_unarchive(self):
        async with self.client() as client:
            await client.initialize()
            thread = await client.start_thread(ThreadConfig(cwd=self.ctx.home))
            await thread.archive()
            await thread.unarchive()

    async def scenario_compact(self):
        async with self.client() as client:
            await client.initialize()
            thread = await client.start_thread(ThreadConfig(cwd=self.ctx.home))
            await thread.compact()

    async def scenario_error_path(self):
        async with self.client() as client:
            await client.initialize()
            try:
                await client.read_thread(UNKNOWN_THREAD)
            except CodexProtocolError:
                return
            raise AssertionError("reading an unknown thread succeeded")
