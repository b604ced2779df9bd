// SPDX-License-Identifier: GPL-2.0

//! What a responder's answer to a valid call carries, for the targets that answer one
//! (`v1_decode`, `v2msg`): included with `#[path]`, not a target of its own.

use rpcrdma_proto::v1::Chunks;

/// The payload written to each Write chunk of `c` and the length written to its Reply chunk,
/// each at most `seed`: a Reply chunk that gets bytes takes the whole reply, and then no Write
/// chunk is used.
pub(crate) fn sizes(c: &Chunks<'_>, seed: u32) -> (Vec<u32>, Option<u32>) {
    let reply_len = c.reply.and_then(|r| {
        let n = u32::try_from(r.length()).unwrap_or(u32::MAX).min(seed);
        (n != 0).then_some(n)
    });
    if reply_len.is_some() {
        return (Vec::new(), reply_len);
    }
    let payloads = c
        .writes
        .chunks()
        .map(|w| u32::try_from(w.length()).unwrap_or(u32::MAX).min(seed))
        .collect();
    (payloads, None)
}
