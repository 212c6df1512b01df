// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.

/**
 * The status of one step of a plan (`turn/plan/updated`).
 */
export type TurnPlanStepStatus = "pending" | "inProgress" | "completed";
