// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { TurnPlanStep } from "./TurnPlanStep";

/**
 * `turn/plan/updated` params: the whole plan as the agent last set it.
 */
export type TurnPlanUpdatedNotification = {
/**
 * The thread.
 */
threadId: string,
/**
 * The turn.
 */
turnId: string,
/**
 * Why the plan changed, if the agent said.
 */
explanation: string | null,
/**
 * Every step, in order.
 */
plan: Array<TurnPlanStep>, };
