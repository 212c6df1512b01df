//! The byte ring a replay window keeps its text deltas' strings in (see [`super`]): appending
//! is a copy into memory allocated once, evicting is an index moving forward, and neither
//! allocates, frees or touches the evicted bytes. `VecDeque<u8>` does the same in principle,
//! but its generic append and drain cost several times the copy itself, on the path of every
//! thread event.

/// Bytes in arrival order, oldest first, in a buffer reused as a ring.
#[derive(Debug, Default)]
pub(super) struct TextRing {
    /// The ring; its whole length is usable (it is grown, never shrunk, by replacing it).
    buf: Vec<u8>,
    /// Where the oldest byte is.
    head: usize,
    len: usize,
}

impl TextRing {
    /// Bytes held.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// Bytes allocated.
    #[cfg(test)]
    pub(super) fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Appends `first` and then `second`, growing the ring (doubling, but never beyond `cap`
    /// unless the bytes held and the new ones alone are more) when they do not fit.
    #[inline]
    pub(super) fn push(&mut self, first: &[u8], second: &[u8], cap: usize) {
        let needed = first.len() + second.len();
        let wanted = self.len + needed;
        if wanted > self.buf.len() {
            self.grow((self.buf.len() * 2).max(wanted).min(cap.max(wanted)));
        }
        let size = self.buf.len();
        let mut tail = self.head + self.len;
        if tail >= size {
            tail -= size;
        }
        self.len = wanted;
        if let Some(room) = self.buf.get_mut(tail..tail + needed) {
            // The usual case: the room is in one piece. (A copy of no bytes is skipped: it
            // would still be a call.)
            let (into_first, into_second) = room.split_at_mut(first.len());
            if !first.is_empty() {
                into_first.copy_from_slice(first);
            }
            into_second.copy_from_slice(second);
            return;
        }
        // It wraps around the end of the buffer (once per trip around it).
        let mut bytes = first.iter().chain(second);
        let (front, back) = self.buf.split_at_mut(tail);
        for (byte, next) in back.iter_mut().chain(front).zip(&mut bytes) {
            *byte = *next;
        }
    }

    /// Forgets the oldest `count` bytes.
    pub(super) fn pop_front(&mut self, count: usize) {
        debug_assert!(count <= self.len);
        self.len -= count;
        self.head += count;
        if self.head >= self.buf.len() {
            self.head -= self.buf.len();
        }
    }

    /// Forgets every byte (the allocation stays for the next ones).
    pub(super) fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
    }

    /// Every byte held, oldest first, as one slice (rotating the ring if it wraps).
    pub(super) fn contiguous(&mut self) -> &[u8] {
        if self.head + self.len > self.buf.len() {
            self.buf.rotate_left(self.head);
            self.head = 0;
        }
        &self.buf[self.head..self.head + self.len]
    }

    /// Replaces the buffer by one of `size` bytes holding the same bytes from its start.
    fn grow(&mut self, size: usize) {
        let mut buf = vec![0; size];
        let held = self.contiguous();
        buf[..held.len()].copy_from_slice(held);
        self.buf = buf;
        self.head = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_come_back_in_order_across_wrap_around_and_growth() {
        let mut ring = TextRing::default();
        let mut model = std::collections::VecDeque::new();
        let mut counter = 0u8;
        for round in 0..500usize {
            let part: String = (0..round % 11)
                .map(|_| {
                    counter = counter.wrapping_add(1);
                    char::from(b'a' + counter % 26)
                })
                .collect();
            // An empty first part is the usual text delta (its thread id is the stream's name).
            let first = if round % 3 == 0 { "" } else { part.as_str() };
            ring.push(first.as_bytes(), part.as_bytes(), 64);
            model.extend(first.bytes().chain(part.bytes()));
            while model.len() > 40 {
                let count = (round % 5 + 1).min(model.len());
                ring.pop_front(count);
                model.drain(..count);
            }
            assert_eq!(ring.len(), model.len());
            assert!(ring.capacity() <= 64, "{}", ring.capacity());
            if round % 7 == 0 {
                let expected: Vec<u8> = model.iter().copied().collect();
                assert_eq!(ring.contiguous(), expected.as_slice(), "round {round}");
            }
        }
        ring.clear();
        assert_eq!((ring.len(), ring.contiguous()), (0, &[][..]));
    }
}
