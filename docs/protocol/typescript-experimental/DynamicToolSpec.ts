// Generated from tandem-protocol (ts-rs); do not edit. Regenerate with `cargo xtask codegen`.
import type { DynamicToolType } from "./DynamicToolType";
import type { JsonValue } from "./JsonValue";

/**
 * A tool the client provides for a thread (`thread/start.dynamicTools`, experimental). Calls
 * arrive at the client as `item/tool/call`.
 */
export type DynamicToolSpec = {
/**
 * Always `function`. Existing clients omit `type`, so it defaults on input.
 */
type: DynamicToolType,
/**
 * Tool name.
 */
name: string,
/**
 * What the tool does, for the model.
 */
description: string,
/**
 * JSON schema of the arguments.
 */
inputSchema: JsonValue,
/**
 * Whether the tool's definition may be loaded lazily.
 */
deferLoading?: boolean | null, };
