// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JsonValue } from "./JsonValue";

/**
 * `account/read` result. Tandem signs in to no account: the model provider's API key comes
 * from the environment variable its config names.
 */
export type GetAccountResponse = {
/**
 * The signed-in account; always `null`.
 */
account: JsonValue | null,
/**
 * The account's user id; always `null`.
 */
userId: string | null,
/**
 * Whether the client must sign in to OpenAI before turns can run; always `false`.
 */
requiresOpenaiAuth: boolean,
/**
 * Workspace routing; always `null`.
 */
workspaceRouting: JsonValue | null, };
