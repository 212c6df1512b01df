//! tandem-server: the reference MessageProcessor (processes now; threads and turns later).

pub mod process;
