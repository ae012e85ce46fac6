package network

import "time"

// releaseAt is the link's timing rule for one chunk, with no clock in it:
// the writer waits until release and then hands the chunk to the receiver.
//
// Serialisation comes before propagation: the chunk starts transmitting
// once it has arrived, the previous chunk is out (prevTxEnd) and the link
// has healed from its last partition (healAt: bytes held through it go
// again from the heal, as TCP retransmits them); it takes len/rate to
// transmit, then propagates for its drawn delay. The release is never
// before the previous chunk's, so jitter cannot reorder the stream. An EOF
// chunk has no bytes and goes the same way: delayed, held, in order.
//
// Zero times (no previous chunk, never healed) impose nothing.
func releaseAt(c chunk, prevTxEnd, prevRelease, healAt time.Time) (txEnd, release time.Time) {
	txEnd = latest(c.arrival, prevTxEnd, healAt)
	if c.rate > 0 {
		txEnd = txEnd.Add(time.Duration(float64(len(c.data)) / c.rate * float64(time.Second)))
	}
	return txEnd, latest(prevRelease, txEnd.Add(c.delay))
}

func latest(ts ...time.Time) time.Time {
	m := ts[0]
	for _, t := range ts[1:] {
		if t.After(m) {
			m = t
		}
	}
	return m
}
