//! `model/list`, `account/read`, `config/value/write`, `config/batchWrite` and
//! `thread/tokenUsage/updated` (docs/protocol.md sections 4 and 6): the shapes of the
//! reference app-server, so that clients typed from its schema decode Tandem's answers.

#[allow(unused_imports)]
use super::*;

/// `model/list` params. Every member may be omitted or `null`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ModelListParams {
    /// Opaque cursor returned by a previous call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Page size; all models when omitted (a `0` reads as `1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Include models hidden from the default picker (Tandem hides none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_hidden: Option<bool>,
    /// List this configured provider's models instead of the default provider's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_provider: Option<String>,
}

/// One reasoning effort a model accepts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ReasoningEffortOption {
    /// The effort's name (non-empty).
    pub reasoning_effort: String,
    /// What it means.
    pub description: String,
}

/// One model of `model/list`, member for member (and in the same order) as the reference
/// app-server writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct Model {
    /// The model's id; what `thread/start` and `turn/start` take as `model`.
    pub id: String,
    /// The model name sent to the provider (equal to `id`).
    pub model: String,
    /// The model to upgrade to; always `null`.
    pub upgrade: Option<String>,
    /// Upgrade details; always `null`.
    pub upgrade_info: Option<Value>,
    /// A notice shown when the model becomes available; always `null`.
    pub availability_nux: Option<Value>,
    /// Name to show.
    pub display_name: String,
    /// Where the model runs.
    pub description: String,
    /// Specialty tag; always `null`.
    pub model_specialty: Option<String>,
    /// Hidden from the default picker; always `false`.
    pub hidden: bool,
    /// The reasoning efforts accepted.
    pub supported_reasoning_efforts: Vec<ReasoningEffortOption>,
    /// The reasoning effort used when none is chosen.
    pub default_reasoning_effort: String,
    /// `text` and `image`.
    pub input_modalities: Vec<String>,
    /// Always `false` (deprecated upstream).
    pub supports_personality: bool,
    /// Multi-agent runtime; always `disabled`.
    pub multi_agent_version: Option<String>,
    /// Deprecated upstream; always `[]`.
    pub additional_speed_tiers: Vec<String>,
    /// Service tiers; always `[]`.
    pub service_tiers: Vec<Value>,
    /// Default service tier; always `null`.
    pub default_service_tier: Option<String>,
    /// Access programs; always `null`.
    pub available_access_programs: Option<Value>,
    /// Whether new threads use this model when they name none.
    pub is_default: bool,
}

/// `model/list` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ModelListResponse {
    /// This page of models.
    pub data: Vec<Model>,
    /// Cursor of the next page; `null` after the last.
    pub next_cursor: Option<String>,
}

/// `account/read` params.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct GetAccountParams {
    /// Ask for a token refresh first; Tandem has no account tokens, so it is ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<bool>,
}

/// `account/read` result. Tandem signs in to no account: the model provider's API key comes
/// from the environment variable its config names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct GetAccountResponse {
    /// The signed-in account; always `null`.
    pub account: Option<Value>,
    /// The account's user id; always `null`.
    pub user_id: Option<String>,
    /// Whether the client must sign in to OpenAI before turns can run; always `false`.
    pub requires_openai_auth: bool,
    /// Workspace routing; always `null`.
    pub workspace_routing: Option<Value>,
}

/// How a config write combines with what is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum MergeStrategy {
    /// The value replaces whatever the key held.
    Replace,
    /// A table value is merged key by key into the table there; any other value replaces.
    Upsert,
}

/// One edit of `config/batchWrite`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ConfigEdit {
    /// Dotted key (`model`, `model_providers.local.base_url`; quote a segment holding a dot).
    pub key_path: String,
    /// The JSON value to write; `null` removes the key.
    pub value: Value,
    /// How the value combines with what is there.
    pub merge_strategy: MergeStrategy,
}

/// `config/value/write` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ConfigValueWriteParams {
    /// Dotted key.
    pub key_path: String,
    /// The JSON value to write; `null` removes the key.
    pub value: Value,
    /// How the value combines with what is there.
    pub merge_strategy: MergeStrategy,
    /// The config file; only the home's `config.toml` is writable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_path: Option<String>,
    /// Write only if the file's `version` is still this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_version: Option<String>,
}

/// `config/batchWrite` params: every edit applies, or none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ConfigBatchWriteParams {
    /// The edits, applied in order.
    pub edits: Vec<ConfigEdit>,
    /// The config file; only the home's `config.toml` is writable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_path: Option<String>,
    /// Write only if the file's `version` is still this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_version: Option<String>,
    /// Accepted and ignored: the server always takes the written file as its configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reload_user_config: Option<bool>,
}

/// Whether the written value is the effective one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub enum WriteStatus {
    /// Written, and in effect.
    Ok,
    /// Written, but a `-c` override or the selected profile sets the key and wins.
    OkOverridden,
}

/// `config/value/write` and `config/batchWrite` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ConfigWriteResponse {
    /// Whether the value is in effect.
    pub status: WriteStatus,
    /// The file's new version, `sha256:<hex of its bytes>`: pass it as `expectedVersion`.
    pub version: String,
    /// The file written (absolute).
    pub file_path: String,
    /// What overrides the written value, with `okOverridden`; else `null`.
    pub overridden_metadata: Option<Value>,
}

/// Token counts of one model request, or of a whole thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct TokenUsageBreakdown {
    /// Every token, input and output.
    pub total_tokens: i64,
    /// Input (prompt) tokens, cached ones included.
    pub input_tokens: i64,
    /// Input tokens the provider served from its cache.
    pub cached_input_tokens: i64,
    /// Input tokens written to the provider's cache (0 where not reported).
    #[serde(default)]
    pub cache_write_input_tokens: i64,
    /// Output (completion) tokens, reasoning included.
    pub output_tokens: i64,
    /// Output tokens spent on reasoning.
    pub reasoning_output_tokens: i64,
}

impl TokenUsageBreakdown {
    /// Adds `other` to `self`, saturating.
    pub fn add(&mut self, other: &Self) {
        self.total_tokens = self.total_tokens.saturating_add(other.total_tokens);
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.cached_input_tokens = self
            .cached_input_tokens
            .saturating_add(other.cached_input_tokens);
        self.cache_write_input_tokens = self
            .cache_write_input_tokens
            .saturating_add(other.cache_write_input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.reasoning_output_tokens = self
            .reasoning_output_tokens
            .saturating_add(other.reasoning_output_tokens);
    }
}

/// A thread's token usage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadTokenUsage {
    /// Every model request of the thread since it was loaded in this server.
    pub total: TokenUsageBreakdown,
    /// The latest model request.
    pub last: TokenUsageBreakdown,
    /// The model's context window; `null` (providers do not report it).
    pub model_context_window: Option<i64>,
}

/// `thread/tokenUsage/updated` params: sent after each model request whose stream reported
/// usage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema, ts_rs::TS))]
#[serde(rename_all = "camelCase")]
pub struct ThreadTokenUsageUpdatedNotification {
    /// The thread.
    pub thread_id: String,
    /// The turn that made the request.
    pub turn_id: String,
    /// Usage so far.
    pub token_usage: ThreadTokenUsage,
}
