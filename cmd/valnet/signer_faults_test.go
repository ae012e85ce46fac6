package main

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	cmtproto "github.com/cometbft/cometbft/api/cometbft/types/v1"
	"github.com/cometbft/cometbft/types"

	"github.com/valnet/valnet/internal/nettest"
	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/signers"
)

// statusLog collects what the timeline logs.
type statusLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *statusLog) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *statusLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// request is a prevote request at height h as the signer serves it: the
// timeline hears its height first, then it goes through the chain. It
// returns how it failed ("" signed, "drop", "error") and how long it took.
func request(t *testing.T, tl *serveFaults, fs *signers.Faults, h int64) (string, time.Duration) {
	t.Helper()
	start := time.Now()
	tl.Reached(h)
	err := fs.SignVote("c", &cmtproto.Vote{Type: types.PrevoteType, Height: h, Timestamp: time.Now()}, false)
	took := time.Since(start)
	var fe *signers.ErrFault
	switch {
	case err == nil:
		return "", took
	case errors.As(err, &fe):
		return string(fe.Mode), took
	}
	t.Fatalf("h=%d: %v", h, err)
	return "", 0
}

func serveFault(t *testing.T, text string) scenarios.FaultPlan {
	t.Helper()
	f, err := scenarios.ParseServeFault("test", text)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestServeFaultsStartWithTheFirstRequestAtTheirHeight(t *testing.T) {
	tests := []struct {
		name    string
		fault   string
		heights []int64
		want    []string // outcome per height
		log     string
	}{
		{"drop at one height hits that height only, even when reached late",
			"{action: signer-drop, at: {height: 3}}", []int64{1, 2, 4, 3, 5}, []string{"", "", "", "drop", ""},
			"fault 0 (signer-drop at h=3): drops proposal, prevote, precommit signatures at height 3"},
		{"a window starts with the first request at or above its height",
			"{action: signer-error, at: {height: 3}, duration: 1h}", []int64{1, 4, 2, 9}, []string{"", "error", "error", "error"},
			"fault 0 (signer-error at h=3) started at h=4: fails proposal, prevote, precommit signatures for 1h0m0s"},
		{"phases it does not cover sign",
			"{action: signer-drop, at: {height: 2}, phases: [precommit]}", []int64{2}, []string{""},
			"fault 0 (signer-drop at h=2): drops precommit signatures at height 2"},
		{"a delay slows the request that starts it",
			"{action: signer-delay, at: {height: 2}, latency: 50ms}", []int64{1, 2}, []string{"", "slow"},
			"fault 0 (signer-delay at h=2) started at h=2: adds fixed 50ms to proposal, prevote, precommit until the signer stops"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := signers.WithFaults(types.NewMockPV())
			tl := newServeFaults([]scenarios.FaultPlan{serveFault(t, tc.fault)}, 1)
			var log statusLog
			tl.Arm(fs, log.logf)
			defer tl.Stop()
			for i, h := range tc.heights {
				got, took := request(t, tl, fs, h)
				if took >= 50*time.Millisecond {
					got = "slow"
				}
				if got != tc.want[i] {
					t.Errorf("h=%d: %q, want %q", h, got, tc.want[i])
				}
			}
			if !strings.Contains(log.String(), tc.log) {
				t.Errorf("log:\n%s\nwant a line %q", log.String(), tc.log)
			}
		})
	}
}

func TestServeFaultWindowEndsByItself(t *testing.T) {
	fs := signers.WithFaults(types.NewMockPV())
	tl := newServeFaults([]scenarios.FaultPlan{serveFault(t, "{action: signer-error, at: {height: 2}, duration: 200ms}")}, 1)
	var log statusLog
	tl.Arm(fs, log.logf)
	defer tl.Stop()
	if got, _ := request(t, tl, fs, 2); got != "error" {
		t.Fatalf("inside the window: %q", got)
	}
	// No request comes: the timer ends the window.
	nettest.WaitFor(t, 5*time.Second, "the window to end", func() bool {
		return strings.Contains(log.String(), "fault 0 (signer-error at h=2) ended")
	})
	if got, _ := request(t, tl, fs, 3); got != "" {
		t.Errorf("after the window: %q", got)
	}
}

func TestServeFaultsStop(t *testing.T) {
	fs := signers.WithFaults(types.NewMockPV())
	tl := newServeFaults([]scenarios.FaultPlan{serveFault(t, "{action: signer-error, at: {height: 2}, duration: 1h}")}, 1)
	var log statusLog
	tl.Arm(fs, log.logf)
	tl.Stop()
	if got, _ := request(t, tl, fs, 2); got != "" {
		t.Errorf("a stopped timeline started a fault: %q", got)
	}
}
