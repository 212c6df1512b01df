//! Declarative macros that turn one table row per method into the typed enums, their wire
//! conversions and the per-method marker types, so adding a method is a one-line change.

/// Generates a request enum (`ClientRequest` or `ServerRequest`), its conversions to and from
/// [`crate::JSONRPCRequest`], and one marker type per method implementing
/// [`crate::RequestMethod`].
macro_rules! request_enum {
    (
        $(#[$enum_meta:meta])*
        $enum:ident, markers = $markers:ident;
        $( $(#[$meta:meta])* $variant:ident => $method:literal ($params:ty) -> $response:ty; )*
    ) => {
        $(#[$enum_meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub enum $enum {
            $(
                $(#[$meta])*
                $variant {
                    /// The request id.
                    request_id: $crate::RequestId,
                    /// The decoded params.
                    params: $params,
                },
            )*
            /// A method this crate does not know: an embedder's own extension, carried
            /// through unchanged in the same wire shape.
            Custom {
                /// The request id.
                request_id: $crate::RequestId,
                /// The method name.
                method: String,
                /// The params exactly as sent (`{}` when omitted).
                params: serde_json::Value,
            },
        }

        impl $enum {
            /// Every method name this enum types, in docs/protocol.md order.
            pub const METHODS: &'static [&'static str] = &[$($method),*];

            /// The request id.
            pub fn id(&self) -> &$crate::RequestId {
                match self {
                    $( Self::$variant { request_id, .. } => request_id, )*
                    Self::Custom { request_id, .. } => request_id,
                }
            }

            /// The wire method name.
            pub fn method(&self) -> &str {
                match self {
                    $( Self::$variant { .. } => $method, )*
                    Self::Custom { method, .. } => method,
                }
            }

            /// Converts to the wire envelope.
            pub fn into_jsonrpc(self) -> Result<$crate::JSONRPCRequest, serde_json::Error> {
                let (id, method, params) = match self {
                    $(
                        Self::$variant { request_id, params } => {
                            (request_id, $method.to_owned(), serde_json::to_value(params)?)
                        }
                    )*
                    Self::Custom { request_id, method, params } => (request_id, method, params),
                };
                Ok($crate::JSONRPCRequest { id, method, params: Some(params) })
            }

            /// Serializes the params by reference, exactly as [`Self::into_jsonrpc`] puts them
            /// on the wire, without building a `serde_json::Value` first: the wire codec writes
            /// them straight into the transport's buffer.
            pub fn serialize_params<S: ::serde::Serializer>(
                &self,
                serializer: S,
            ) -> Result<S::Ok, S::Error> {
                match self {
                    $( Self::$variant { params, .. } => ::serde::Serialize::serialize(params, serializer), )*
                    Self::Custom { params, .. } => ::serde::Serialize::serialize(params, serializer),
                }
            }
        }

        impl TryFrom<$crate::JSONRPCRequest> for $enum {
            type Error = $crate::JSONRPCErrorError;

            /// Decodes the params of a known method; an unknown method becomes `Custom`.
            /// Params that do not decode give -32600 ``Invalid request: ...``.
            fn try_from(request: $crate::JSONRPCRequest) -> Result<Self, $crate::JSONRPCErrorError> {
                let $crate::JSONRPCRequest { id, method, params } = request;
                let params = $crate::jsonrpc::params_or_empty(params);
                match method.as_str() {
                    $(
                        $method => Ok(Self::$variant {
                            request_id: id,
                            params: $crate::messages::decode_params(params)?,
                        }),
                    )*
                    _ => Ok(Self::Custom { request_id: id, method, params }),
                }
            }
        }

        request_bindings!($enum; $( $variant => $method ($params) -> $response; )*);

        /// One marker type per method, tying its name to its params and result types.
        pub mod $markers {
            #[allow(unused_imports)]
            use super::*;
            $(
                $(#[$meta])*
                #[derive(Debug, Clone, Copy, PartialEq, Eq)]
                pub struct $variant;

                impl $crate::RequestMethod for $variant {
                    const METHOD: &'static str = $method;
                    type Params = $params;
                    type Response = $response;
                    type Request = super::$enum;

                    fn into_request(request_id: $crate::RequestId, params: $params) -> super::$enum {
                        super::$enum::$variant { request_id, params }
                    }
                }
            )*
        }
    };
}

/// Generates a notification enum (`ClientNotification` or `ServerNotification`) and its
/// conversions to and from [`crate::JSONRPCNotification`].
macro_rules! notification_enum {
    (
        $(#[$enum_meta:meta])*
        $enum:ident;
        $( $(#[$meta:meta])* $variant:ident => $method:literal ($params:ty); )*
    ) => {
        $(#[$enum_meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub enum $enum {
            $( $(#[$meta])* $variant($params), )*
            /// A method this crate does not know, carried through unchanged.
            Custom {
                /// The method name.
                method: String,
                /// The params exactly as sent (`{}` when omitted).
                params: serde_json::Value,
            },
        }

        impl $enum {
            /// Every method name this enum types, in docs/protocol.md order.
            pub const METHODS: &'static [&'static str] = &[$($method),*];

            /// The wire method name.
            pub fn method(&self) -> &str {
                match self {
                    $( Self::$variant(_) => $method, )*
                    Self::Custom { method, .. } => method,
                }
            }

            /// Converts to the wire envelope (without `emittedAtMs`; transports stamp it).
            pub fn into_jsonrpc(self) -> Result<$crate::JSONRPCNotification, serde_json::Error> {
                let (method, params) = match self {
                    $( Self::$variant(params) => ($method.to_owned(), serde_json::to_value(params)?), )*
                    Self::Custom { method, params } => (method, params),
                };
                Ok($crate::JSONRPCNotification { method, params: Some(params), emitted_at_ms: None })
            }

            /// Serializes the params by reference, exactly as [`Self::into_jsonrpc`] puts them
            /// on the wire, without building a `serde_json::Value` first: the wire codec writes
            /// them straight into the transport's buffer.
            pub fn serialize_params<S: ::serde::Serializer>(
                &self,
                serializer: S,
            ) -> Result<S::Ok, S::Error> {
                match self {
                    $( Self::$variant(params) => ::serde::Serialize::serialize(params, serializer), )*
                    Self::Custom { params, .. } => ::serde::Serialize::serialize(params, serializer),
                }
            }
        }

        impl TryFrom<$crate::JSONRPCNotification> for $enum {
            type Error = $crate::JSONRPCErrorError;

            // Spelled out rather than `Self::Error`, which is ambiguous with an `Error` variant
            // (the `error` notification).
            fn try_from(notification: $crate::JSONRPCNotification) -> Result<Self, $crate::JSONRPCErrorError> {
                let $crate::JSONRPCNotification { method, params, .. } = notification;
                let params = $crate::jsonrpc::params_or_empty(params);
                match method.as_str() {
                    $( $method => Ok(Self::$variant($crate::messages::decode_params(params)?)), )*
                    _ => Ok(Self::Custom { method, params }),
                }
            }
        }

        notification_bindings!($enum; $( $variant => $method ($params); )*);
    };
}
