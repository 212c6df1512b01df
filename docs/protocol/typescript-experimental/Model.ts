// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { JsonValue } from "./JsonValue";
import type { ReasoningEffortOption } from "./ReasoningEffortOption";

/**
 * One model of `model/list`, member for member (and in the same order) as the reference
 * app-server writes it.
 */
export type Model = {
/**
 * The model's id; what `thread/start` and `turn/start` take as `model`.
 */
id: string,
/**
 * The model name sent to the provider (equal to `id`).
 */
model: string,
/**
 * The model to upgrade to; always `null`.
 */
upgrade: string | null,
/**
 * Upgrade details; always `null`.
 */
upgradeInfo: JsonValue | null,
/**
 * A notice shown when the model becomes available; always `null`.
 */
availabilityNux: JsonValue | null,
/**
 * Name to show.
 */
displayName: string,
/**
 * Where the model runs.
 */
description: string,
/**
 * Specialty tag; always `null`.
 */
modelSpecialty: string | null,
/**
 * Hidden from the default picker; always `false`.
 */
hidden: boolean,
/**
 * The reasoning efforts accepted.
 */
supportedReasoningEfforts: Array<ReasoningEffortOption>,
/**
 * The reasoning effort used when none is chosen.
 */
defaultReasoningEffort: string,
/**
 * `text` and `image`.
 */
inputModalities: Array<string>,
/**
 * Always `false` (deprecated upstream).
 */
supportsPersonality: boolean,
/**
 * Multi-agent runtime; always `disabled`.
 */
multiAgentVersion: string | null,
/**
 * Deprecated upstream; always `[]`.
 */
additionalSpeedTiers: Array<string>,
/**
 * Service tiers; always `[]`.
 */
serviceTiers: Array<JsonValue>,
/**
 * Default service tier; always `null`.
 */
defaultServiceTier: string | null,
/**
 * Access programs; always `null`.
 */
availableAccessPrograms: JsonValue | null,
/**
 * Whether new threads use this model when they name none.
 */
isDefault: boolean, };
