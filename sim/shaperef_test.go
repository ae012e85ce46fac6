package sim_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"os"
	"strings"
	"testing"

	"github.com/valnet/valnet/results/eventlog"
)

// hashSink encodes every event as eventlog.Writer does into a hash.
type hashSink struct {
	h             hash.Hash
	events, bytes int64
}

func (s *hashSink) Emit(e eventlog.Event) {
	line, err := eventlog.EncodeEvent(&e)
	if err != nil {
		panic(err)
	}
	s.events++
	s.bytes += int64(len(line)) + 1
	s.h.Write(line)
	s.h.Write([]byte{'\n'})
}

// TestShapeHashes pins the events of the bench shapes (simShapes) at
// fewer heights by hash, so an optimisation of the model can be checked
// to give the same events byte for byte on realistic shapes (the golden
// file's runs are small). Off unless VALNET_SHAPE_REF names a file: it
// writes the hashes there when it does not exist, else compares.
func TestShapeHashes(t *testing.T) {
	ref := os.Getenv("VALNET_SHAPE_REF")
	if ref == "" {
		t.Skip("VALNET_SHAPE_REF not set")
	}
	heights := map[string]int64{"global175_h1000": 120, "random1000_zones_h100": 12, "partition_slow175_zones_h1000": 340}
	only := os.Getenv("VALNET_SHAPE_ONLY")
	var got strings.Builder
	for _, sh := range simShapes {
		if only != "" && !strings.Contains(sh.name, only) {
			continue
		}
		plan := sh.plan(t)
		plan.Run.Heights = heights[sh.name]
		h := sha256.New()
		s := &hashSink{h: h}
		simulate(t, plan, plan.Run.Seed, s)
		fmt.Fprintf(&got, "%s %d %d %s\n", sh.name, s.events, s.bytes, hex.EncodeToString(h.Sum(nil)))
		t.Logf("%s %d events", sh.name, s.events)
	}
	want, err := os.ReadFile(ref)
	if os.IsNotExist(err) {
		if err := os.WriteFile(ref, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(got.String()), "\n") {
		if !strings.Contains(string(want), line+"\n") {
			t.Errorf("not in %s: %s\nwant:\n%s", ref, line, want)
		}
	}
}
