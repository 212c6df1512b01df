//! The four figures, measured the same way on every target: sequential round trips of
//! `thread/loaded/list`, the same request with [`IN_FLIGHT`] outstanding, the bytes per
//! second of a streamed `process/spawn` of `head -c N /dev/zero`, timed from the spawn request
//! to `process/exited` with every delta decoded and counted, and sequential round trips of an
//! ephemeral `thread/start`, each timed until both its reply and the `thread/started` that
//! follows it have arrived. The last one is where a socket without `TCP_NODELAY` shows: the
//! notification's segment waits for the ACK of the reply's, which the peer delays (~40 ms).
//!
//! Over a wire ([`measure_wire`]) every message is encoded and decoded by the protocol crate's
//! codec; in-process ([`measure_in_process`]) the same requests are typed values through an
//! `InProcessClientHandle` to a `TandemServer`.

use std::sync::Arc;
use std::time::Instant;

use futures::StreamExt as _;
use futures::stream::FuturesUnordered;
use tandem_host::MessageProcessor;
use tandem_host::in_process::{self, InProcessClientHandle, InProcessServerEvent};
use tandem_protocol::wire::{ClientMessage, ServerMessage};
use tandem_protocol::{
    ClientRequest, ProcessSpawnParams, RequestId, ServerNotification, ThreadLoadedListParams,
    ThreadStartParams,
};
use tandem_server::{ServerOptions, TandemServer};

use crate::client::{WireClient, WireError, fresh_home, initialize_params};

/// Requests outstanding in the pipelined figure.
pub(crate) const IN_FLIGHT: usize = 64;
/// The process handle of the output figure.
const HANDLE: &str = "wire-bench";

/// How much each figure does.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sizes {
    /// Round trips of the sequential figure.
    pub(crate) sequential: usize,
    /// Requests of the pipelined figure.
    pub(crate) pipelined: usize,
    /// Bytes the child writes in the output figure.
    pub(crate) output_bytes: u64,
    /// Untimed round trips on every new connection, so that lazy setup (and a JIT) is done.
    pub(crate) warm_up: usize,
    /// Round trips of the notified figure (ephemeral `thread/start`).
    pub(crate) notified: usize,
}

/// One run's figures for one target.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Figures {
    /// Seconds per sequential round trip.
    pub(crate) round_trip: f64,
    /// Requests per second with [`IN_FLIGHT`] outstanding.
    pub(crate) pipelined: f64,
    /// Bytes per second of streamed process output.
    pub(crate) output: f64,
    /// Seconds per ephemeral `thread/start`, until its reply and `thread/started` arrived.
    pub(crate) notified_round_trip: f64,
}

fn ephemeral_thread_start(request_id: RequestId) -> ClientRequest {
    ClientRequest::ThreadStart {
        request_id,
        params: ThreadStartParams::new().ephemeral(true),
    }
}

fn loaded_list(request_id: RequestId) -> ClientRequest {
    ClientRequest::ThreadLoadedList {
        request_id,
        params: ThreadLoadedListParams::default(),
    }
}

/// `process/spawn` of `head -c N /dev/zero` as both servers accept it: streamed, no cap, no
/// timeout, in an absolute `cwd`.
fn spawn_request(request_id: RequestId, bytes: u64, cwd: &std::path::Path) -> ClientRequest {
    ClientRequest::ProcessSpawn {
        request_id,
        params: ProcessSpawnParams {
            process_handle: HANDLE.to_owned(),
            command: vec![
                "head".to_owned(),
                "-c".to_owned(),
                bytes.to_string(),
                "/dev/zero".to_owned(),
            ],
            cwd: Some(cwd.to_string_lossy().into_owned()),
            stream_stdout_stderr: Some(true),
            output_bytes_cap: Some(None),
            timeout_ms: Some(None),
            ..Default::default()
        },
    }
}

// ---- over a wire ---------------------------------------------------------------------------

/// The three figures on one connection.
/// `notified` false skips the notified figure (NaN): the floor has no threads to start.
pub(crate) async fn measure_wire(
    client: &mut WireClient,
    sizes: Sizes,
    notified_figure: bool,
) -> Result<Figures, WireError> {
    sequential(client, sizes.warm_up).await?;
    let began = Instant::now();
    sequential(client, sizes.sequential).await?;
    let round_trip = began.elapsed().as_secs_f64() / sizes.sequential as f64;

    let began = Instant::now();
    pipelined(client, sizes.pipelined).await?;
    let pipelined = sizes.pipelined as f64 / began.elapsed().as_secs_f64();

    let began = Instant::now();
    process_output(client, sizes.output_bytes).await?;
    let output = sizes.output_bytes as f64 / began.elapsed().as_secs_f64();

    let notified_round_trip = if notified_figure {
        let began = Instant::now();
        notified(client, sizes.notified).await?;
        began.elapsed().as_secs_f64() / sizes.notified as f64
    } else {
        f64::NAN
    };
    Ok(Figures {
        round_trip,
        pipelined,
        output,
        notified_round_trip,
    })
}

/// `count` ephemeral `thread/start`s, each sent once the previous one's reply and its
/// `thread/started` have both arrived.
async fn notified(client: &mut WireClient, count: usize) -> Result<(), WireError> {
    for _ in 0..count {
        let id = RequestId::Integer(client.next_request_id());
        client.queue(&ClientMessage::Request(ephemeral_thread_start(id.clone())));
        client.flush().await?;
        let (mut answered, mut started) = (false, false);
        while !(answered && started) {
            let message = client.next().await?;
            if matches!(
                message,
                ServerMessage::Notification {
                    notification: ServerNotification::ThreadStarted(_),
                    ..
                }
            ) {
                started = true;
            } else if is_answer(client, &message, |answered| *answered == id)? {
                answered = true;
            }
        }
    }
    Ok(())
}

/// `count` requests, each sent once the previous one is answered.
async fn sequential(client: &mut WireClient, count: usize) -> Result<(), WireError> {
    for _ in 0..count {
        let id = RequestId::Integer(client.next_request_id());
        client.queue(&ClientMessage::Request(loaded_list(id.clone())));
        client.flush().await?;
        loop {
            let message = client.next().await?;
            if is_answer(client, &message, |answered| *answered == id)? {
                break;
            }
        }
    }
    Ok(())
}

/// `count` requests with [`IN_FLIGHT`] outstanding: every answer that has arrived is replaced
/// by a new request, and the replacements go out in one write.
async fn pipelined(client: &mut WireClient, count: usize) -> Result<(), WireError> {
    if count == 0 {
        return Ok(());
    }
    let send_one = |client: &mut WireClient| {
        let id = RequestId::Integer(client.next_request_id());
        client.queue(&ClientMessage::Request(loaded_list(id)));
    };
    // Ids come from one counter on this task: this figure's are `first..first + count`.
    let first = client.next_request_id();
    client.queue(&ClientMessage::Request(loaded_list(RequestId::Integer(
        first,
    ))));
    let mut sent = 1;
    while sent < count.min(IN_FLIGHT) {
        send_one(client);
        sent += 1;
    }
    client.flush().await?;
    let ours = |id: &RequestId| matches!(id, RequestId::Integer(n) if (first..first + count as i64).contains(n));
    let mut answered = 0;
    while answered < count {
        let mut message = Some(client.next().await?);
        while let Some(got) = message {
            if is_answer(client, &got, ours)? {
                answered += 1;
                if sent < count {
                    send_one(client);
                    sent += 1;
                }
            }
            message = client.try_next();
        }
        client.flush().await?;
    }
    Ok(())
}

/// Whether `message` answers one of our requests (`expected`); a notification is not, an
/// error answer or a stray reply fails the figure.
fn is_answer(
    client: &WireClient,
    message: &ServerMessage,
    expected: impl Fn(&RequestId) -> bool,
) -> Result<bool, WireError> {
    match message {
        ServerMessage::Response { id, .. } if expected(id) => Ok(true),
        ServerMessage::Error { error, .. } => Err(client.protocol_error(format!(
            "a request failed: {} (code {})",
            error.message, error.code
        ))),
        ServerMessage::Response { id, .. } => {
            Err(client.protocol_error(format!("a response to a request not in flight: {id:?}")))
        }
        ServerMessage::Notification { .. } | ServerMessage::Request(_) => Ok(false),
    }
}

/// Spawns the child and reads until its `process/exited`, counting the stdout bytes.
async fn process_output(client: &mut WireClient, bytes: u64) -> Result<(), WireError> {
    let id = RequestId::Integer(client.next_request_id());
    let cwd = client.home().to_path_buf();
    client.queue(&ClientMessage::Request(spawn_request(
        id.clone(),
        bytes,
        &cwd,
    )));
    client.flush().await?;
    let mut received = 0u64;
    loop {
        match client.next().await? {
            ServerMessage::Notification {
                notification: ServerNotification::ProcessOutputDelta(delta),
                ..
            } if delta.process_handle == HANDLE => received += delta.delta.len() as u64,
            ServerMessage::Notification {
                notification: ServerNotification::ProcessExited(exited),
                ..
            } if exited.process_handle == HANDLE => {
                if exited.exit_code != 0 || received != bytes {
                    return Err(client.protocol_error(format!(
                        "the child exited with {} after {received} of {bytes} bytes \
                         ({} messages did not decode)",
                        exited.exit_code, client.undecodable
                    )));
                }
                return Ok(());
            }
            other => {
                is_answer(client, &other, |answered| *answered == id)?;
            }
        }
    }
}

// ---- the pipe read floor -------------------------------------------------------------------

/// The floor of the in-process output figure (issue 31): the same child (`head -c N
/// /dev/zero`), its stdout pipe read to EOF by a plain loop of 64 KiB reads on a blocking
/// thread of this process (a release build, like the host it is compared with), timed from
/// the spawn to the child's exit. Only the output figure; the others are NaN.
pub(crate) async fn measure_pipe_floor(sizes: Sizes) -> Result<Figures, String> {
    let bytes = sizes.output_bytes;
    let output = tokio::task::spawn_blocking(move || read_pipe(bytes))
        .await
        .map_err(|error| format!("the pipe reader panicked: {error}"))?
        .map_err(|error| format!("the pipe read floor: {error}"))?;
    Ok(Figures {
        round_trip: f64::NAN,
        pipelined: f64::NAN,
        output,
        notified_round_trip: f64::NAN,
    })
}

/// Bytes per second of `head -c bytes /dev/zero` read from its pipe.
fn read_pipe(bytes: u64) -> std::io::Result<f64> {
    use std::io::Read as _;
    let began = Instant::now();
    let mut child = std::process::Command::new("head")
        .args(["-c", &bytes.to_string(), "/dev/zero"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let mut buffer = vec![0u8; 64 * 1024];
    let mut received = 0u64;
    loop {
        match stdout.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => received += n as u64,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    let status = child.wait()?;
    if !status.success() || received != bytes {
        return Err(std::io::Error::other(format!(
            "the child exited with {status} after {received} of {bytes} bytes"
        )));
    }
    Ok(bytes as f64 / began.elapsed().as_secs_f64())
}

// ---- in-process ----------------------------------------------------------------------------

/// The three figures through an in-process host serving a `TandemServer`.
pub(crate) async fn measure_in_process(sizes: Sizes) -> Result<Figures, String> {
    let home = fresh_home().map_err(|error| format!("cannot create a home: {error}"))?;
    let options = {
        let home = home.clone();
        tokio::task::spawn_blocking(move || ServerOptions::new(home))
            .await
            .expect("loading options does not panic")
            .map_err(|error| format!("server options: {error}"))?
    };
    let args = in_process::InProcessStartArgs::new(
        move |outgoing| Arc::new(TandemServer::new(outgoing, options)) as Arc<dyn MessageProcessor>,
        initialize_params(),
    );
    let mut handle = in_process::start(args)
        .await
        .map_err(|error| format!("in-process host: {error}"))?;
    let measured = in_process_figures(&mut handle, sizes, &home).await;
    let shut = handle.shutdown().await;
    let _ = std::fs::remove_dir_all(&home);
    let figures = measured?;
    shut.map_err(|error| format!("in-process shutdown: {error}"))?;
    Ok(figures)
}

async fn in_process_figures(
    handle: &mut InProcessClientHandle,
    sizes: Sizes,
    home: &std::path::Path,
) -> Result<Figures, String> {
    let mut next_id = 0i64;
    let mut id = || {
        next_id += 1;
        RequestId::Integer(next_id)
    };
    let call = |handle: &InProcessClientHandle, request: ClientRequest| {
        let reply = handle.request(request);
        async move {
            match reply.await {
                Ok(Ok(_)) => Ok(()),
                Ok(Err(error)) => Err(format!("a request failed: {}", error.message)),
                Err(error) => Err(format!("in-process host: {error}")),
            }
        }
    };

    for _ in 0..sizes.warm_up {
        call(handle, loaded_list(id())).await?;
    }
    let began = Instant::now();
    for _ in 0..sizes.sequential {
        call(handle, loaded_list(id())).await?;
    }
    let round_trip = began.elapsed().as_secs_f64() / sizes.sequential as f64;

    let began = Instant::now();
    let mut in_flight = FuturesUnordered::new();
    let mut sent = 0;
    while sent < sizes.pipelined.min(IN_FLIGHT) {
        in_flight.push(call(handle, loaded_list(id())));
        sent += 1;
    }
    while let Some(result) = in_flight.next().await {
        result?;
        if sent < sizes.pipelined {
            in_flight.push(call(handle, loaded_list(id())));
            sent += 1;
        }
    }
    let pipelined = sizes.pipelined as f64 / began.elapsed().as_secs_f64();

    let began = Instant::now();
    call(handle, spawn_request(id(), sizes.output_bytes, home)).await?;
    let mut received = 0u64;
    loop {
        match handle.next_event().await {
            Some(InProcessServerEvent::ServerNotification(
                ServerNotification::ProcessOutputDelta(delta),
            )) => received += delta.delta.len() as u64,
            Some(InProcessServerEvent::ServerNotification(ServerNotification::ProcessExited(
                exited,
            ))) => {
                if exited.exit_code != 0 || received != sizes.output_bytes {
                    return Err(format!(
                        "the child exited with {} after {received} of {} bytes",
                        exited.exit_code, sizes.output_bytes
                    ));
                }
                break;
            }
            Some(_) => {}
            None => return Err("the in-process host stopped".to_owned()),
        }
    }
    let output = sizes.output_bytes as f64 / began.elapsed().as_secs_f64();

    let began = Instant::now();
    for _ in 0..sizes.notified {
        call(handle, ephemeral_thread_start(id())).await?;
        loop {
            match handle.next_event().await {
                Some(InProcessServerEvent::ServerNotification(
                    ServerNotification::ThreadStarted(_),
                )) => break,
                Some(_) => {}
                None => return Err("the in-process host stopped".to_owned()),
            }
        }
    }
    let notified_round_trip = began.elapsed().as_secs_f64() / sizes.notified as f64;
    Ok(Figures {
        round_trip,
        pipelined,
        output,
        notified_round_trip,
    })
}
