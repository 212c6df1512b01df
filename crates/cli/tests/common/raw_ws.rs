//! A websocket client written straight onto a TCP socket, for tests about peers that stop
//! reading: a websocket library may read on its own (to answer a ping, to see a close), and
//! here nothing is read unless the test reads it. It does the upgrade, writes text frames, and
//! reads the server's frames only when asked. It also finds its connection's kernel queues in
//! `/proc/net/tcp`, which say how many bytes the server's socket accepted that nobody read.

use std::net::SocketAddr;

use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::{PROMPT, within};

/// A websocket connection on a raw socket.
pub(crate) struct RawWs {
    tcp: TcpStream,
    /// Bytes read past what was parsed.
    buffered: Vec<u8>,
}

impl RawWs {
    /// Connects and upgrades; nothing of the server's is read beyond the upgrade response.
    pub(crate) async fn connect(address: SocketAddr) -> Self {
        within(PROMPT, "a raw websocket upgrade", async {
            let mut tcp = TcpStream::connect(address).await.expect("connect");
            let upgrade = format!(
                "GET / HTTP/1.1\r\nHost: {address}\r\nUpgrade: websocket\r\n\
                 Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
                 Sec-WebSocket-Version: 13\r\n\r\n"
            );
            tcp.write_all(upgrade.as_bytes()).await.expect("upgrade");
            let mut response = Vec::new();
            // Byte by byte, so that nothing after the response's end is taken off the socket.
            while !response.ends_with(b"\r\n\r\n") {
                response.push(tcp.read_u8().await.expect("upgrade response"));
            }
            let response = String::from_utf8_lossy(&response);
            assert!(
                response.starts_with("HTTP/1.1 101"),
                "upgrade refused: {response}"
            );
            Self {
                tcp,
                buffered: Vec::new(),
            }
        })
        .await
    }

    /// The local port, which names this connection in `/proc/net/tcp`.
    pub(crate) fn local_port(&self) -> u16 {
        self.tcp.local_addr().expect("local address").port()
    }

    /// Writes `value` as one text frame (masked, as a client must; the key is zero, which
    /// leaves the payload as it is).
    pub(crate) async fn send(&mut self, value: &Value) -> std::io::Result<()> {
        let payload = value.to_string().into_bytes();
        let mut frame = vec![0x81];
        match payload.len() {
            len @ 0..=125 => frame.push(0x80 | len as u8),
            len @ 126..=0xffff => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(len as u16).to_be_bytes());
            }
            len => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(len as u64).to_be_bytes());
            }
        }
        frame.extend_from_slice(&[0; 4]);
        frame.extend_from_slice(&payload);
        self.tcp.write_all(&frame).await
    }

    /// Reads `n` bytes past what was already parsed.
    async fn take(&mut self, n: usize) -> Vec<u8> {
        while self.buffered.len() < n {
            let mut chunk = [0u8; 16 * 1024];
            let read = self.tcp.read(&mut chunk).await.expect("read a frame");
            assert!(read > 0, "the server closed the connection");
            self.buffered.extend_from_slice(&chunk[..read]);
        }
        self.buffered.drain(..n).collect()
    }

    /// The next text message, as JSON (the server sends each message in one frame).
    pub(crate) async fn recv(&mut self) -> Value {
        within(PROMPT, "a websocket frame", async {
            loop {
                let head = self.take(2).await;
                let len = match head[1] & 0x7f {
                    126 => u16::from_be_bytes(self.take(2).await.try_into().expect("2")) as usize,
                    127 => u64::from_be_bytes(self.take(8).await.try_into().expect("8")) as usize,
                    len => usize::from(len),
                };
                let payload = self.take(len).await;
                match head[0] & 0x0f {
                    0x1 => return serde_json::from_slice(&payload).expect("a JSON text frame"),
                    0x8 => panic!("closed by the server: {payload:?}"),
                    // Pings and pongs.
                    _ => {}
                }
            }
        })
        .await
    }

    /// Reads until the answer to request `id`, dropping what comes before it.
    pub(crate) async fn answer(&mut self, id: &Value) -> Value {
        loop {
            let message = self.recv().await;
            if message.get("id") == Some(id) && message.get("method").is_none() {
                return message;
            }
        }
    }

    /// Reads and discards everything until the server's end of the stream (or a reset);
    /// returns how many bytes that was.
    pub(crate) async fn drain_to_end(&mut self) -> usize {
        let mut total = self.buffered.len();
        let mut chunk = vec![0u8; 1024 * 1024];
        loop {
            match self.tcp.read(&mut chunk).await {
                Ok(0) | Err(_) => return total,
                Ok(read) => total += read,
            }
        }
    }
}

/// One socket's line of `/proc/net/tcp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TcpQueues {
    /// Bytes written and not yet acknowledged by the peer.
    pub(crate) tx: u64,
    /// Bytes received and not yet read.
    pub(crate) rx: u64,
    /// Still `ESTABLISHED` (the owner has not closed it).
    pub(crate) established: bool,
}

/// The kernel's view of the loopback TCP socket bound to port `local` and connected to port
/// `remote`, from `/proc/net/tcp`; `None` once the socket is gone.
pub(crate) fn tcp_queues(local: u16, remote: u16) -> Option<TcpQueues> {
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    let port = |address: &str| {
        address
            .rsplit_once(':')
            .and_then(|(_, port)| u16::from_str_radix(port, 16).ok())
    };
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 5 || port(fields[1])? != local || port(fields[2])? != remote {
            return None;
        }
        let (tx, rx) = fields[4].split_once(':')?;
        Some(TcpQueues {
            tx: u64::from_str_radix(tx, 16).ok()?,
            rx: u64::from_str_radix(rx, 16).ok()?,
            // `01` is TCP_ESTABLISHED.
            established: fields[3] == "01",
        })
    })
}
