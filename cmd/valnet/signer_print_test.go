package main

import (
	"errors"
	"regexp"
	"testing"
	"time"

	"github.com/valnet/valnet/internal/phase"
	"github.com/valnet/valnet/signers"
)

// blockedWriter blocks every write until released, like a stdout piped
// into a pager that nobody reads.
type blockedWriter struct {
	release chan struct{}
	serveOutput
}

func (b *blockedWriter) Write(p []byte) (int, error) {
	<-b.release
	return b.serveOutput.Write(p)
}

func TestSignPrinterDoesNotHoldUpSignatures(t *testing.T) {
	out := &blockedWriter{release: make(chan struct{})}
	p := newSignPrinter(out)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for h := int64(1); h <= 3; h++ {
			p.SignDone(signers.SignRecord{Phase: phase.Prevote, Height: h, Latency: time.Millisecond})
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("signatures waited for stdout")
	}
	close(out.release)
	p.close(time.Second)
	for _, re := range []string{`(?m)^prevote h=1 r=0 1\.00ms$`, `(?m)^prevote h=3 r=0 1\.00ms$`, `(?m)^summary: 3 signature requests, 0 refused, in 1s$`} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("output lacks %s:\n%s", re, out.String())
		}
	}
}

func TestSignPrinterSummary(t *testing.T) {
	var out serveOutput
	p := newSignPrinter(&out)
	// 1..100 ms: nearest rank p50 = 50ms, p99 = 99ms.
	for i := 100; i >= 1; i-- {
		p.SignDone(signers.SignRecord{Phase: phase.Precommit, Height: int64(i), Latency: time.Duration(i) * time.Millisecond})
	}
	p.SignDone(signers.SignRecord{Phase: phase.Precommit, Height: 101, Err: errors.New("signer error injected")})
	p.close(2 * time.Second)
	p.SignDone(signers.SignRecord{Phase: phase.Prevote, Height: 1}) // after close: dropped
	for _, re := range []string{
		`(?m)^precommit h=101 r=0 ERROR signer error injected$`,
		`(?m)^summary: 101 signature requests, 1 refused, in 2s$`,
		`(?m)^phase +count +errors +p50 +p99 +max$`,
		`(?m)^proposal +0 +0 +- +- +-$`,
		`(?m)^prevote +0 +0 +- +- +-$`,
		`(?m)^precommit +100 +1 +50\.00ms +99\.00ms +100\.00ms$`,
	} {
		if !regexp.MustCompile(re).MatchString(out.String()) {
			t.Errorf("output lacks %s:\n%s", re, out.String())
		}
	}
}
