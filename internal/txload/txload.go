// Package txload is what a transaction load is, whoever sends it: the
// pacing rule (Pacer.Pace, a pure step; Drive steps it on a clock) and
// the transactions (Maker). The runner sends them to real nodes' RPC; the
// simulator into its model's mempool.
package txload

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"
)

// Pacer is a load's pacing: Rate transactions a second, for Duration
// (0: no end).
type Pacer struct {
	Rate     float64
	Duration time.Duration
}

// Pace says, elapsed time into the load with sent already sent, how long
// to wait before the next one; stop once the load is over. A generator
// that fell behind gets no wait until it has caught up. It is pure (no
// clock): Drive and the sim's virtual time both step it.
func (p Pacer) Pace(elapsed time.Duration, sent uint64) (wait time.Duration, stop bool) {
	if p.Duration > 0 && elapsed >= p.Duration {
		return 0, true
	}
	// The next transaction is due at sent/rate: the first at once.
	due := time.Duration(float64(sent) / p.Rate * float64(time.Second))
	if due <= elapsed {
		return 0, false
	}
	if p.Duration > 0 && due >= p.Duration {
		return 0, true
	}
	return due - elapsed, false
}

// Pace is Pacer{rate, duration}.Pace.
func Pace(elapsed time.Duration, sent uint64, rate float64, duration time.Duration) (wait time.Duration, stop bool) {
	return Pacer{Rate: rate, Duration: duration}.Pace(elapsed, sent)
}

// Drive hands out transaction numbers 0, 1, ... at p's pace, elapsed time
// measured on clk from the call, until the load is over, ctx ends or hand
// returns false. hand may block (a generator whose senders are all busy):
// the time it takes counts, and the numbers due meanwhile follow without
// a wait. It returns how many numbers it handed out.
func (p Pacer) Drive(ctx context.Context, clk clockwork.Clock, hand func(n uint64) bool) uint64 {
	began := clk.Now()
	var sent uint64
	for {
		wait, stop := p.Pace(clk.Since(began), sent)
		if stop {
			return sent
		}
		if wait > 0 {
			if !Sleep(ctx, clk, wait) {
				return sent
			}
			continue
		}
		if ctx.Err() != nil || !hand(sent) {
			return sent
		}
		sent++
	}
}

// Sleep waits d on clk; false if ctx ended first.
func Sleep(ctx context.Context, clk clockwork.Clock, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.Chan():
		return true
	case <-ctx.Done():
		return false
	}
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
