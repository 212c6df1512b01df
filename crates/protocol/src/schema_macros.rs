//! The `schema` feature's half of the message-enum macros: the method tables and the JSON
//! Schema and TypeScript impls of `ClientRequest`, `ServerRequest`, `ClientNotification` and
//! `ServerNotification`, whose wire conversions are hand-written and so cannot be derived.
//!
//! Kept apart from `macros.rs` so that the wire half and the bindings half change
//! independently; each expands to nothing without the feature.

/// Implements the bindings of a request enum; invoked by `request_enum!`.
macro_rules! request_bindings {
    ($enum:ident; $( $variant:ident => $method:literal ($params:ty) -> $response:ty; )*) => {
        #[cfg(feature = "schema")]
        impl $enum {
            /// The typed methods with their params and result types (not `Custom`).
            pub(crate) fn bindings() -> Vec<$crate::schema::MethodBinding> {
                vec![$(
                    $crate::schema::MethodBinding::request::<$params, $response>(
                        $method,
                        stringify!($variant),
                    ),
                )*]
            }
        }

        message_binding_impls!($enum; $( $params, $response, )* $crate::RequestId,);
    };
}

/// Implements the bindings of a notification enum; invoked by `notification_enum!`.
macro_rules! notification_bindings {
    ($enum:ident; $( $variant:ident => $method:literal ($params:ty); )*) => {
        #[cfg(feature = "schema")]
        impl $enum {
            /// The typed methods with their params types (not `Custom`).
            pub(crate) fn bindings() -> Vec<$crate::schema::MethodBinding> {
                vec![$(
                    $crate::schema::MethodBinding::notification::<$params>(
                        $method,
                        stringify!($variant),
                    ),
                )*]
            }
        }

        message_binding_impls!($enum; $( $params, )*);
    };
}

/// `JsonSchema` and `TS` for a message enum, with every method (experimental ones included):
/// one object per method with a constant `method`. `$dep` lists every type a variant refers to.
macro_rules! message_binding_impls {
    ($enum:ident; $( $dep:ty, )*) => {
        #[cfg(feature = "schema")]
        impl schemars::JsonSchema for $enum {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                std::borrow::Cow::Borrowed(stringify!($enum))
            }

            fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
                $crate::schema::union_json_schema(generator, stringify!($enum))
            }
        }

        #[cfg(feature = "schema")]
        impl ts_rs::TS for $enum {
            type WithoutGenerics = Self;
            type OptionInnerType = Self;

            fn docs() -> Option<String> {
                $crate::schema::union_typescript_docs(stringify!($enum))
            }

            fn name(_: &ts_rs::Config) -> String {
                stringify!($enum).to_owned()
            }

            fn inline(cfg: &ts_rs::Config) -> String {
                $crate::schema::union_typescript(stringify!($enum), cfg)
            }

            fn decl(cfg: &ts_rs::Config) -> String {
                format!("type {} = {};", stringify!($enum), Self::inline(cfg))
            }

            fn decl_concrete(cfg: &ts_rs::Config) -> String {
                Self::decl(cfg)
            }

            fn visit_dependencies(visitor: &mut impl ts_rs::TypeVisitor) {
                $( visitor.visit::<$dep>(); )*
            }

            fn output_path() -> Option<std::path::PathBuf> {
                Some(std::path::PathBuf::from(concat!(stringify!($enum), ".ts")))
            }
        }
    };
}
