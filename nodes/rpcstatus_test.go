package nodes

import (
	"context"
	"errors"
	"testing"
	"time"
)

func statusAs(id, height string) *StatusResult {
	var st StatusResult
	st.Result.NodeInfo.ID = id
	st.Result.SyncInfo.LatestBlockHeight = height
	return &st
}

// WaitStatus waits for the node itself (not another process on its port),
// and gives up when the node is gone or the context ends.
func TestWaitStatus(t *testing.T) {
	errDown := errors.New("connection refused")
	errGone := errors.New("exited")
	for _, tc := range []struct {
		name    string
		answers []*StatusResult // nil: errDown; the last one repeats
		goneAt  int             // gone says errGone from this poll on; 0: never
		want    error           // nil: the node's answer
	}{
		{"up at once", []*StatusResult{statusAs("me", "3")}, 0, nil},
		{"down, another node, then up", []*StatusResult{nil, statusAs("other", "9"), statusAs("me", "3")}, 0, nil},
		{"exits during start", []*StatusResult{nil}, 2, errGone},
		{"never answers", []*StatusResult{statusAs("other", "9")}, 0, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			polls := 0
			status := func(context.Context) (*StatusResult, error) {
				st := tc.answers[min(polls, len(tc.answers)-1)]
				polls++
				if st == nil {
					return nil, errDown
				}
				return st, nil
			}
			gone := func() error {
				if tc.goneAt > 0 && polls >= tc.goneAt {
					return errGone
				}
				return nil
			}
			st, err := WaitStatus(ctx, status, "me", gone)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if tc.want == nil && (st == nil || st.Result.NodeInfo.ID != "me") {
				t.Fatalf("answer %+v, want the node's own", st)
			}
		})
	}
}

// A node that cannot answer keeps the height it last reported.
func TestLastHeight(t *testing.T) {
	var l LastHeight
	for _, tc := range []struct {
		st   *StatusResult
		err  error
		want int64
	}{
		{nil, errors.New("down"), 0},
		{statusAs("me", "5"), nil, 5},
		{nil, errors.New("paused"), 5},
		{statusAs("me", "not a number"), nil, 5},
		{statusAs("me", "7"), nil, 7},
	} {
		if got := l.Update(tc.st, tc.err); got != tc.want {
			t.Errorf("Update(%+v, %v) = %d, want %d", tc.st, tc.err, got, tc.want)
		}
	}
}
