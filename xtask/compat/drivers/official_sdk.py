"""openai-codex 0.163.0, the official SDK: `Codex` (sync, stdio). It has no `command/exec`."""

from openai_codex import ApprovalMode, Codex, CodexConfig, CodexError

from harness import APPROVAL_MARKER, APPROVAL_PROMPT, UNKNOWN_THREAD, check

NAME = "openai-codex"
TRANSPORTS = ["stdio"]


class Driver:
    def __init__(self, ctx):
        self.ctx = ctx

    def codex(self) -> Codex:
        return Codex(CodexConfig(codex_bin=self.ctx.server, env=self.ctx.env, cwd=self.ctx.home))

    def scenario_thread_lifecycle(self):
        with self.codex() as codex:
            thread = codex.thread_start(cwd=self.ctx.home)
            thread.set_name("compat")
            read = thread.read()
            check(read.thread.id == thread.id, f"thread/read: {read}")
            check(read.thread.name == "compat", f"name not set: {read.thread.name}")
            codex.thread_list()

    def scenario_turn_with_approval(self):
        self.ctx.needs_model("a turn")
        with self.codex() as codex:
            # The SDK answers approvals itself ("accept") when the caller gives no handler.
            thread = codex.thread_start(cwd=self.ctx.home, approval_mode=ApprovalMode.auto_review)
            result = thread.run(APPROVAL_PROMPT)
            dumped = str(result)
            check(APPROVAL_MARKER in dumped, f"the approved command's output is missing: {dumped[:300]}")

    def scenario_model_list(self):
        with self.codex() as codex:
            models = codex.models()
            check(len(models.data) > 0, "no models")
            check(sum(1 for m in models.data if m.is_default) == 1, "not exactly one default model")

    def scenario_archive_unarchive(self):
        with self.codex() as codex:
            thread = codex.thread_start(cwd=self.ctx.home)
            codex.thread_archive(thread.id)
            codex.thread_unarchive(thread.id)

    def scenario_compact(self):
        with self.codex() as codex:
            thread = codex.thread_start(cwd=self.ctx.home)
            thread.compact()

    def scenario_error_path(self):
        with self.codex() as codex:
            try:
                codex.thread_resume(UNKNOWN_THREAD)
            except CodexError:
                return
            raise AssertionError("resuming an unknown thread succeeded")
