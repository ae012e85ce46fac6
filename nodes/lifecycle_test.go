package nodes

import (
	"errors"
	"strings"
	"testing"
)

// A node's Stop runs once and says the same every time; control after it
// is refused; the cleanup of a node nobody stopped runs only if nobody did.
func TestLifecycle(t *testing.T) {
	errStop := errors.New("stop failed")
	var l Lifecycle
	ran := 0
	if err := l.Control("v0", func() error { ran++; return nil }); err != nil || ran != 1 {
		t.Fatalf("Control before Stop: %v, ran %d", err, ran)
	}
	for range 2 {
		if err := l.Stop(func() error { ran++; return errStop }); err != errStop {
			t.Fatalf("Stop: %v, want %v", err, errStop)
		}
	}
	if err := l.Control("v0", func() error { ran++; return nil }); err == nil || !strings.Contains(err.Error(), "already stopped") {
		t.Errorf("Control after Stop: %v", err)
	}
	if err := l.Discard(func() error { ran++; return nil }); err != nil {
		t.Errorf("Discard after Stop: %v", err)
	}
	if ran != 2 {
		t.Errorf("ran %d times, want 2 (Control, Stop once)", ran)
	}

	var d Lifecycle
	if err := d.Discard(func() error { return errStop }); err != errStop {
		t.Errorf("Discard: %v", err)
	}
	if err := d.Stop(func() error { t.Error("Stop ran after Discard"); return nil }); err != nil {
		t.Errorf("Stop after Discard: %v, want nil", err)
	}
}

// An incarnation, once ended (even by a failed kill), is gone; a restart
// starts the next only after the current one ended well; stop ends the
// current one and then releases the node.
func TestIncarnations(t *testing.T) {
	type run struct{ id int }
	errEnd := errors.New("end failed")
	errStart := errors.New("start failed")
	for _, tc := range []struct {
		name     string
		cur      *run
		op       func(in *incarnations[run], log *[]string) error
		want     string // in the error; "" none
		wantCur  int    // the id of the current incarnation after; 0 none
		wantCall string
	}{
		{"end without an incarnation", nil, func(in *incarnations[run], log *[]string) error {
			return in.end("v0", "kill", func(r *run) error { *log = append(*log, "end"); return nil })
		}, "", 0, ""},
		{"end fails: gone all the same", &run{1}, func(in *incarnations[run], log *[]string) error {
			return in.end("v0", "kill", func(r *run) error { *log = append(*log, "end"); return errEnd })
		}, "node v0: kill: end failed", 0, "end"},
		{"restart", &run{1}, func(in *incarnations[run], log *[]string) error {
			return in.restart("v0",
				func(r *run) error { *log = append(*log, "end"); return nil },
				func() (*run, error) { *log = append(*log, "start"); return &run{2}, nil })
		}, "", 2, "end start"},
		{"restart: the end fails, no start", &run{1}, func(in *incarnations[run], log *[]string) error {
			return in.restart("v0",
				func(r *run) error { *log = append(*log, "end"); return errEnd },
				func() (*run, error) { *log = append(*log, "start"); return &run{2}, nil })
		}, "restart: end failed", 0, "end"},
		{"restart: the start fails", nil, func(in *incarnations[run], log *[]string) error {
			return in.restart("v0",
				func(r *run) error { *log = append(*log, "end"); return nil },
				func() (*run, error) { *log = append(*log, "start"); return nil, errStart })
		}, "restart: start failed", 0, "start"},
		{"stop: end, then release; the end's error first", &run{1}, func(in *incarnations[run], log *[]string) error {
			return in.stop(
				func(r *run) error { *log = append(*log, "end"); return errEnd },
				func() error { *log = append(*log, "release"); return errStart })
		}, "end failed", 0, "end release"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &incarnations[run]{cur: tc.cur}
			var log []string
			err := tc.op(in, &log)
			if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			if got := strings.Join(log, " "); got != tc.wantCall {
				t.Errorf("calls %q, want %q", got, tc.wantCall)
			}
			got := 0
			if in.cur != nil {
				got = in.cur.id
			}
			if got != tc.wantCur {
				t.Errorf("current incarnation %d, want %d", got, tc.wantCur)
			}
		})
	}
}
