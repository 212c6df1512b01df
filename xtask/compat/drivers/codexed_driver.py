"""codexed 1.2.2: `CodexClient` (async), over stdio and websocket."""

from codexed import CodexClient
from codexed.models.responses import CommandExecutionRequestApprovalResponse
from codexed.transport import WebSocketTransport

from harness import APPROVAL_MARKER, APPROVAL_PROMPT, UNKNOWN_THREAD, check

NAME = "codexed"
TRANSPORTS = ["stdio", "ws"]


class Driver:
    def __init__(self, ctx):
        self.ctx = ctx
        self.approvals = []

    def client(self) -> CodexClient:
        async def approve(params):
            self.approvals.append(params)
            # codexed's own vocabulary, as its users write it (its models refuse "accept").
            return CommandExecutionRequestApprovalResponse(decision="allow")

        if self.ctx.transport == "ws":
            return CodexClient(transport=WebSocketTransport(url=self.ctx.ws_url), on_approval=approve)
        return CodexClient(codex_command=self.ctx.server, env_vars=self.ctx.env, on_approval=approve)

    async def scenario_thread_lifecycle(self):
        async with self.client() as client:
            session = await client.thread_start(cwd=self.ctx.home)
            await session.set_name("compat")
            read = await session.read()
            check(read.thread.id == session.thread_id, f"thread/read: {read}")
            await client.thread_list()

    async def scenario_turn_with_approval(self):
        self.ctx.needs_model("a turn")
        async with self.client() as client:
            session = await client.thread_start(cwd=self.ctx.home, approval_policy="on-request")
            events = []
            async for event in session.turn_stream(APPROVAL_PROMPT):
                events.append(repr(event))
                if type(event).__name__ == "TurnCompletedEvent":
                    break
            check(len(self.approvals) == 1, f"expected one approval, got {len(self.approvals)}")
            check(APPROVAL_MARKER in "".join(events), "the approved command's output is missing")

    async def scenario_command_exec(self):
        async with self.client() as client:
            result = await client.command_exec(["sh", "-c", "echo out; echo err >&2; exit 3"],
                                               cwd=self.ctx.home)
            check((result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n"), f"{result}")

    async def scenario_model_list(self):
        async with self.client() as client:
            # Its public `dispatch`: the typed `model_list` rejects the reference's reasoning
            # effort `max`, so it fails against the reference itself.
            models = await client.dispatch.send_request("model/list")
            check(len(models["data"]) > 0, f"no models: {models}")

    async def scenario_archive_unarchive(self):
        async with self.client() as client:
            session = await client.thread_start(cwd=self.ctx.home)
            await session.archive()
            await session.unarchive()

    async def scenario_compact(self):
        async with self.client() as client:
            session = await client.thread_start(cwd=self.ctx.home)
            await session.compact_start()

    async def scenario_error_path(self):
        async with self.client() as client:
            try:
                await client.thread_resume(UNKNOWN_THREAD)
            except Exception as error:  # its CodexError types
                check("timed out" not in str(error).lower(), f"no answer: {error}")
                return
            raise AssertionError("resuming an unknown thread succeeded")
