// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { UserInput } from "./UserInput";

/**
 * `turn/steer` params.
 */
export type TurnSteerParams = {
/**
 * The thread.
 */
threadId: string,
/**
 * The turn the client believes is active (must not be empty).
 */
expectedTurnId: string,
/**
 * Input to add to the active turn (must not be empty).
 */
input: Array<UserInput>,
/**
 * Echoed as `clientId` of the `userMessage` item.
 */
clientUserMessageId?: string | null, };
