package network

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/valnet/valnet/latency"
)

// The release rule, with no clock and no sockets: every case is exact.
func TestReleaseAt(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Millisecond))) }
	var never time.Time // no previous chunk, never healed
	bytes := func(n int) []byte { return make([]byte, n) }
	for _, tc := range []struct {
		name                         string
		c                            chunk
		prevTxEnd, prevRelease, heal time.Time
		wantTxEnd, wantRelease       time.Time
	}{
		{name: "zero delay: out on arrival",
			c: chunk{data: bytes(100), arrival: t0}, wantTxEnd: t0, wantRelease: t0},
		{name: "latency: out after the drawn delay",
			c:         chunk{data: bytes(100), arrival: t0, delay: 50 * time.Millisecond},
			wantTxEnd: t0, wantRelease: ms(50)},
		{name: "bandwidth: transmit time len/rate",
			c:         chunk{data: bytes(5000), arrival: t0, rate: 1e6},
			wantTxEnd: ms(5), wantRelease: ms(5)},
		{name: "bandwidth: starts when the previous chunk is out",
			c:         chunk{data: bytes(5000), arrival: t0, rate: 1e6},
			prevTxEnd: ms(5), prevRelease: ms(5),
			wantTxEnd: ms(10), wantRelease: ms(10)},
		{name: "bandwidth: an idle link starts on arrival",
			c:         chunk{data: bytes(5000), arrival: ms(20), rate: 1e6},
			prevTxEnd: ms(5), prevRelease: ms(5),
			wantTxEnd: ms(25), wantRelease: ms(25)},
		{name: "bandwidth then latency: the delay adds to the transmit time",
			c:         chunk{data: bytes(250_000), arrival: t0, rate: 1e6, delay: 100 * time.Millisecond},
			wantTxEnd: ms(250), wantRelease: ms(350)},
		{name: "latency overlaps the next transmit: it waits for the previous transmit, not its release",
			c:         chunk{data: bytes(5000), arrival: t0, rate: 1e6, delay: 100 * time.Millisecond},
			prevTxEnd: ms(5), prevRelease: ms(105),
			wantTxEnd: ms(10), wantRelease: ms(110)},
		{name: "jitter: a shorter draw waits for the previous release",
			c:         chunk{data: bytes(100), arrival: ms(1), delay: 10 * time.Millisecond},
			prevTxEnd: t0, prevRelease: ms(80),
			wantTxEnd: ms(1), wantRelease: ms(80)},
		{name: "jitter: a longer draw keeps its own",
			c:         chunk{data: bytes(100), arrival: ms(1), delay: 50 * time.Millisecond},
			prevTxEnd: t0, prevRelease: ms(5),
			wantTxEnd: ms(1), wantRelease: ms(51)},
		{name: "held through a partition: goes from the heal and takes the full delay after it",
			c:    chunk{data: bytes(1), arrival: t0, delay: 100 * time.Millisecond},
			heal: ms(300), wantTxEnd: ms(300), wantRelease: ms(400)},
		{name: "held through a partition on a slow link: transmits after the heal",
			c:    chunk{data: bytes(5000), arrival: t0, rate: 1e6, delay: 100 * time.Millisecond},
			heal: ms(300), wantTxEnd: ms(305), wantRelease: ms(405)},
		{name: "held behind a held chunk: serialised after it from the heal",
			c:         chunk{data: bytes(5000), arrival: t0, rate: 1e6, delay: 100 * time.Millisecond},
			prevTxEnd: ms(305), prevRelease: ms(405), heal: ms(300),
			wantTxEnd: ms(310), wantRelease: ms(410)},
		{name: "a heal before the arrival changes nothing",
			c:         chunk{data: bytes(100), arrival: t0, delay: 20 * time.Millisecond},
			prevTxEnd: ms(-500), prevRelease: ms(-480), heal: ms(-300),
			wantTxEnd: t0, wantRelease: ms(20)},
		{name: "EOF: takes its delay",
			c:         chunk{eof: true, arrival: t0, delay: 10 * time.Millisecond},
			wantTxEnd: t0, wantRelease: ms(10)},
		{name: "EOF: not before the data ahead of it",
			c:         chunk{eof: true, arrival: ms(1), delay: 10 * time.Millisecond},
			prevTxEnd: ms(5), prevRelease: ms(30),
			wantTxEnd: ms(5), wantRelease: ms(30)},
		{name: "EOF: held through a partition like data",
			c:    chunk{eof: true, arrival: t0, delay: 10 * time.Millisecond},
			heal: ms(200), wantTxEnd: ms(200), wantRelease: ms(210)},
		{name: "zero previous times impose nothing",
			c:         chunk{data: bytes(100), arrival: t0, delay: time.Millisecond},
			prevTxEnd: never, prevRelease: never, heal: never,
			wantTxEnd: t0, wantRelease: ms(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			txEnd, release := releaseAt(tc.c, tc.prevTxEnd, tc.prevRelease, tc.heal)
			if !txEnd.Equal(tc.wantTxEnd) || !release.Equal(tc.wantRelease) {
				t.Fatalf("txEnd %v, release %v; want %v, %v",
					txEnd.Sub(t0), release.Sub(t0), tc.wantTxEnd.Sub(t0), tc.wantRelease.Sub(t0))
			}
		})
	}
}

// A stream of chunks with heavy jitter on a slow link, chained as write()
// chains them: releases never go backwards, each is at least its own
// transmit end plus delay, and transmits never overlap.
func TestReleaseAtStream(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var prevTxEnd, prevRelease time.Time
	arrival := t0
	reordered := 0
	for i := range 10_000 {
		arrival = arrival.Add(time.Duration(rng.Int64N(int64(2 * time.Millisecond))))
		c := chunk{data: make([]byte, 1+rng.IntN(5000)), arrival: arrival, rate: 2e6,
			delay: time.Duration(rng.Int64N(int64(50 * time.Millisecond)))}
		txEnd, release := releaseAt(c, prevTxEnd, prevRelease, time.Time{})
		tx := time.Duration(float64(len(c.data)) / c.rate * float64(time.Second))
		switch {
		case release.Before(prevRelease):
			t.Fatalf("chunk %d released at %v, before the previous one at %v", i, release.Sub(t0), prevRelease.Sub(t0))
		case release.Before(txEnd.Add(c.delay)):
			t.Fatalf("chunk %d released at %v, before its transmit end %v + delay %v", i, release.Sub(t0), txEnd.Sub(t0), c.delay)
		case txEnd.Sub(latest(arrival, prevTxEnd)) != tx:
			t.Fatalf("chunk %d transmits %v, want %v from max(arrival, previous transmit end)", i, txEnd.Sub(latest(arrival, prevTxEnd)), tx)
		}
		if txEnd.Add(c.delay).Before(prevRelease) {
			reordered++ // would have overtaken without the rule
		}
		prevTxEnd, prevRelease = txEnd, release
	}
	if reordered < 100 {
		t.Fatalf("only %d chunks would have overtaken: the jitter did not exercise the rule", reordered)
	}
}

// A draw below zero (a wide normal's tail) is no delay, never a negative one.
func TestDrawClampsAtZero(t *testing.T) {
	if d := draw(negative{}); d != 0 {
		t.Fatalf("negative draw gave %v, want 0", d)
	}
	if d := draw(nil); d != 0 {
		t.Fatalf("no model gave %v, want 0", d)
	}
	if d := draw(latency.Constant(7 * time.Millisecond)); d != 7*time.Millisecond {
		t.Fatalf("constant 7ms gave %v", d)
	}
}
