// Package txload is what a transaction load is, whoever sends it: the
// pacing rule (Pace) and the transactions (Maker). The runner sends them
// to real nodes' RPC; the simulator into its model's mempool.
package txload

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"
)

// Pace says, elapsed time into a load of rate transactions per second
// lasting duration (0: no end), with sent already sent, how long to wait
// before the next one; stop once the load is over. A generator that fell
// behind gets no wait until it has caught up.
func Pace(elapsed time.Duration, sent uint64, rate float64, duration time.Duration) (wait time.Duration, stop bool) {
	if duration > 0 && elapsed >= duration {
		return 0, true
	}
	// The next transaction is due at sent/rate: the first at once.
	due := time.Duration(float64(sent) / rate * float64(time.Second))
	if due <= elapsed {
		return 0, false
	}
	if duration > 0 && due >= duration {
		return 0, true
	}
	return due - elapsed, false
}

// Maker writes the load's transactions: kvstore `key=value`, the key 8
// hex digits from the run seed and 8 of the transaction's number (unique
// in a run, the same for the same seed), the value padding to size.
type Maker struct {
	prefix string
	size   int
}

func NewMaker(seed int64, size int) Maker {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(seed))
	sum := sha256.Sum256(append([]byte("valnet load "), b[:]...))
	return Maker{prefix: fmt.Sprintf("%x", sum[:4]), size: size}
}

func (m Maker) Make(n uint64) []byte {
	tx := make([]byte, 0, m.size)
	tx = fmt.Appendf(tx, "%s%08x=", m.prefix, uint32(n))
	for len(tx) < m.size {
		tx = append(tx, 'v')
	}
	return tx
}
