//! tandem-server: the reference MessageProcessor (processes now; threads and turns later).

pub mod config;
pub mod options;
pub mod process;
pub mod server;
pub mod store;

pub use options::{ServerOptions, ServerOptionsError};
pub use server::TandemServer;
