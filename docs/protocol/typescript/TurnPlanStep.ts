// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { TurnPlanStepStatus } from "./TurnPlanStepStatus";

/**
 * One step of a plan: `{step, status}`.
 */
export type TurnPlanStep = {
/**
 * What the step does.
 */
step: string,
/**
 * Where it stands.
 */
status: TurnPlanStepStatus, };
