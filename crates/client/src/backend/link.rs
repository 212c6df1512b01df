//! The frame layer under the wire backend: where frames go and come from ([`FrameSink`],
//! [`FrameSource`]), how a link ends beyond its streams ([`LinkControl`]) and how to open one
//! ([`Connector`]). A transport (stdio child, websocket) only moves frames; everything about
//! requests, replies and reconnecting is above this.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::child::{ChildCommand, ChildLink};
use super::websocket::{WebSocketLink, WebSocketTarget};

/// One frame for the writer, with the flag it sets once the frame is written.
pub(crate) struct OutFrame {
    pub(crate) bytes: Vec<u8>,
    pub(crate) written: Option<Arc<AtomicBool>>,
}

/// Where frames go: a child's stdin, or a websocket.
pub(crate) enum FrameSink {
    Child(super::child::ChildSink),
    WebSocket(super::websocket::WebSocketSink),
}

impl FrameSink {
    pub(crate) async fn write(&mut self, frame: Vec<u8>) -> Result<(), String> {
        trace_frame("out", &frame);
        match self {
            Self::Child(sink) => sink.write(frame).await,
            Self::WebSocket(sink) => sink.write(frame).await,
        }
    }

    /// Ends the stream politely: stdin EOF, or a websocket close frame.
    pub(crate) async fn finish(self) {
        match self {
            Self::Child(sink) => sink.finish().await,
            Self::WebSocket(sink) => sink.finish().await,
        }
    }
}

/// Where frames come from.
pub(crate) enum FrameSource {
    Child(super::child::ChildSource),
    WebSocket(super::websocket::WebSocketSource),
}

impl FrameSource {
    /// The next frame; `Err` with the reason once the stream ended.
    pub(crate) async fn next(&mut self) -> Result<Vec<u8>, String> {
        let frame = match self {
            Self::Child(source) => source.next().await,
            Self::WebSocket(source) => source.next().await,
        }?;
        trace_frame("in ", &frame);
        Ok(frame)
    }
}

/// The client's side of the wire trace (the server's is in `tandem_host::transport`): every
/// frame, under the same `tracing` target, so `TANDEM_LOG=tandem::wire=trace` shows both ends.
fn trace_frame(direction: &str, frame: &[u8]) {
    use tandem_host::transport::WIRE_TRACE_TARGET;
    if tracing::enabled!(target: WIRE_TRACE_TARGET, tracing::Level::TRACE) {
        tracing::trace!(
            target: WIRE_TRACE_TARGET,
            "client {direction} {}",
            String::from_utf8_lossy(frame).trim_end()
        );
    }
}

/// What a transport hands back when it connects.
pub(crate) struct Link {
    pub(crate) sink: FrameSink,
    pub(crate) source: FrameSource,
    pub(crate) control: LinkControl,
}

/// How to end a link beyond closing its streams.
pub(crate) enum LinkControl {
    Child(Box<ChildLink>),
    WebSocket(WebSocketLink),
}

/// How to reach the server.
pub(crate) enum Connector {
    Child(ChildCommand),
    WebSocket(WebSocketTarget),
}

impl Connector {
    /// Opens a new link: starts the child, or connects the websocket.
    pub(crate) async fn open(&self) -> Result<Link, String> {
        match self {
            Self::Child(command) => {
                let (sink, source, control) = command.spawn().await?;
                Ok(Link {
                    sink: FrameSink::Child(sink),
                    source: FrameSource::Child(source),
                    control: LinkControl::Child(Box::new(control)),
                })
            }
            Self::WebSocket(target) => {
                let (sink, source) = target.connect().await?;
                Ok(Link {
                    sink: FrameSink::WebSocket(sink),
                    source: FrameSource::WebSocket(source),
                    control: LinkControl::WebSocket(WebSocketLink),
                })
            }
        }
    }
}

impl LinkControl {
    pub(crate) async fn shut_down(&self, step: Duration) {
        match self {
            Self::Child(child) => child.shut_down(step).await,
            Self::WebSocket(link) => link.shut_down(step).await,
        }
    }

    pub(crate) fn kill_now(&self) {
        match self {
            Self::Child(child) => child.kill_now(),
            Self::WebSocket(_) => {}
        }
    }

    /// The child's pid (child links only).
    pub(crate) fn pid(&self) -> Option<u32> {
        match self {
            Self::Child(child) => child.pid(),
            Self::WebSocket(_) => None,
        }
    }
}
