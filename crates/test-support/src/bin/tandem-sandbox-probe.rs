//! `tandem-sandbox-probe`: tries what a sandbox must allow or deny, and prints one line per
//! attempt, `NAME: ok` or `NAME: denied (ERROR)`, for the sandbox acceptance tests
//! (docs/security.md).
//!
//! `tandem-sandbox-probe --inside FILE --outside FILE --tcp PORT --udp PORT`: writes `FILE`
//! inside the writable root and outside it, connects to 127.0.0.1:`PORT` over TCP and sends
//! one datagram to 127.0.0.1:`PORT` over UDP. Each attempt is independent, and the exit code
//! is 0 whatever they found: the test reads the lines.

use std::io::Write as _;
use std::net::{TcpStream, UdpSocket};
use std::time::Duration;

/// What the test writes: recognizable in a listener's log and in a file.
const PAYLOAD: &[u8] = b"tandem-sandbox-probe\n";

fn main() {
    let mut args = std::env::args().skip(1);
    let mut lines = Vec::new();
    while let (Some(flag), Some(value)) = (args.next(), args.next()) {
        let outcome = match flag.as_str() {
            "--inside" | "--outside" => std::fs::write(&value, PAYLOAD),
            "--tcp" => TcpStream::connect_timeout(
                &format!("127.0.0.1:{value}").parse().expect("a port number"),
                Duration::from_secs(5),
            )
            .and_then(|mut stream| stream.write_all(PAYLOAD)),
            "--udp" => UdpSocket::bind("127.0.0.1:0")
                .and_then(|socket| socket.send_to(PAYLOAD, format!("127.0.0.1:{value}")))
                .map(drop),
            other => {
                eprintln!("tandem-sandbox-probe: unknown flag {other}");
                std::process::exit(2);
            }
        };
        let name = flag.trim_start_matches("--");
        lines.push(match outcome {
            Ok(()) => format!("{name}: ok"),
            Err(error) => format!("{name}: denied ({error})"),
        });
    }
    println!("{}", lines.join("\n"));
}
