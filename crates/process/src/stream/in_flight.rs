//! The credit window of one stream: the deltas handed to the sink and not yet delivered.
//!
//! A delivery is looked at, not waited for, unless the pump has a reason to wait for it
//! ([`InFlight::progress`]'s `wait_for_delivery`). The task that confirms a delivery
//! in-process (the host's runtime task) also wakes the consumer; a pump it woke as well went
//! to the other worker, so every delta crossed between the two, and in-process output ran at
//! 0.75-0.8x of a plain pipe read where a pump woken by its pipe alone runs at 1.1-1.4x
//! (docs/performance.md, issue 31: the same figures in a four-task model of the path).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;

use super::super::{BYTES_IN_FLIGHT, DELTA_MERGE_BYTES, DELTAS_IN_FLIGHT, DeltaDelivery};

/// A delta being handed to the sink; resolves to what resolves on its delivery.
pub(super) type Handing = Pin<Box<dyn Future<Output = DeltaDelivery> + Send>>;

/// The deltas of one stream handed over and not yet delivered, oldest first: the credit
/// window, bounded by [`DELTAS_IN_FLIGHT`] and [`BYTES_IN_FLIGHT`].
pub(super) struct InFlight {
    /// The sink's window in deltas, at most [`DELTAS_IN_FLIGHT`].
    pub(super) limit: usize,
    /// At most one delta being handed over: the next is handed over only once this one is
    /// queued, which is what keeps the stream in order.
    handing: Option<(Handing, usize)>,
    /// Deltas queued by the sink, oldest first. Some may be delivered already: deliveries are
    /// only noticed by [`Self::settle`] and by a wait in [`Self::progress`].
    pending: VecDeque<(DeltaDelivery, usize)>,
    bytes: usize,
}

impl InFlight {
    pub(super) fn new(limit: usize) -> Self {
        Self {
            limit: limit.clamp(1, DELTAS_IN_FLIGHT),
            handing: None,
            pending: VecDeque::new(),
            bytes: 0,
        }
    }

    /// Nothing being handed over and nothing queued that was not seen delivered.
    pub(super) fn is_empty(&self) -> bool {
        self.handing.is_none() && self.pending.is_empty()
    }

    /// Whether another delta may be handed over now.
    pub(super) fn has_room(&self) -> bool {
        // Room for a whole delta, so the bytes in flight never exceed the bound.
        self.handing.is_none()
            && self.pending.len() < self.limit
            && self.bytes + DELTA_MERGE_BYTES <= BYTES_IN_FLIGHT
    }

    pub(super) fn hand_over(&mut self, handing: Handing, len: usize) {
        self.bytes += len;
        self.handing = Some((handing, len));
    }

    /// Takes the deltas delivered by now off the front, without asking to be woken by the
    /// ones that are not: the window's room is current, and the pump stays asleep on its pipe.
    pub(super) fn settle(&mut self) {
        while let Some((delivery, len)) = self.pending.front_mut() {
            if !delivery.poll_done() {
                break;
            }
            self.bytes -= *len;
            self.pending.pop_front();
        }
    }

    /// Whether [`Self::progress`] has anything to wait for: a delta being handed over, or,
    /// with `wait_for_delivery`, the oldest one queued.
    pub(super) fn can_progress(&self, wait_for_delivery: bool) -> bool {
        self.handing.is_some() || (wait_for_delivery && !self.pending.is_empty())
    }

    /// Waits for the delta being handed over to be queued or, with `wait_for_delivery`, for
    /// the oldest to be delivered, and accounts for it. Pending forever when
    /// [`Self::can_progress`] says there is nothing to wait for.
    pub(super) async fn progress(&mut self, wait_for_delivery: bool) {
        let Self {
            handing,
            pending,
            bytes,
            ..
        } = self;
        tokio::select! {
            biased;
            delivery = async {
                match handing.as_mut() {
                    Some((handing, _)) => handing.as_mut().await,
                    None => std::future::pending().await,
                }
            }, if handing.is_some() => {
                let (_, len) = handing.take().expect("the branch ran on a handing delta");
                if delivery.is_done() {
                    *bytes -= len;
                } else {
                    pending.push_back((delivery, len));
                }
            }
            () = async {
                match pending.front_mut() {
                    Some((delivery, _)) => delivery.wait().await,
                    None => std::future::pending().await,
                }
            }, if wait_for_delivery && !pending.is_empty() => {
                let (_, len) = pending.pop_front().expect("the branch ran on a pending delta");
                *bytes -= len;
            }
        }
    }
}
