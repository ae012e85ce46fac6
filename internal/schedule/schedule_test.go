package schedule

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

const s = time.Second

// step is one call of Step: at begin+after, consensus at height; want lists
// what is due, e.g. "0 start", "1 end".
type step struct {
	after  time.Duration
	height int64
	want   []string
}

func TestStep(t *testing.T) {
	tests := []struct {
		name    string
		entries []Entry
		steps   []step
	}{
		{"height: starts when consensus is at it, i.e. the height before is committed",
			[]Entry{{Height: 3}},
			[]step{{0, 1, nil}, {s, 2, nil}, {2 * s, 3, []string{"0 start"}}, {3 * s, 4, nil}}},
		{"height already passed starts at the first step",
			[]Entry{{Height: 2}},
			[]step{{0, 7, []string{"0 start"}}, {s, 8, nil}}},
		{"height 1 starts at once",
			[]Entry{{Height: 1}},
			[]step{{0, 1, []string{"0 start"}}}},
		{"time: counts from begin, whatever the height",
			[]Entry{{Time: 2 * s}},
			[]step{{s, 50, nil}, {2*s - 1, 50, nil}, {2 * s, 1, []string{"0 start"}}, {3 * s, 1, nil}}},
		{"duration: ends that long after the step that started it",
			[]Entry{{Height: 2, Duration: 2 * s}},
			[]step{{0, 1, nil}, {s, 2, []string{"0 start"}}, {2 * s, 3, nil}, {3*s - 1, 3, nil}, {3 * s, 3, []string{"0 end"}}, {9 * s, 9, nil}}},
		{"no duration: no end",
			[]Entry{{Height: 1}},
			[]step{{0, 1, []string{"0 start"}}, {time.Hour, 100, nil}}},
		{"a late step gets the start and, later, the end",
			[]Entry{{Time: s, Duration: s}},
			[]step{{10 * s, 1, []string{"0 start"}}, {11 * s, 1, []string{"0 end"}}}},
		{"starts in entry order, then ends in the order they fall due",
			[]Entry{{Height: 1, Duration: 3 * s}, {Height: 1, Duration: s}, {Height: 2}, {Time: s}},
			[]step{
				{0, 1, []string{"0 start", "1 start"}},
				{s, 2, []string{"2 start", "3 start", "1 end"}},
				{5 * s, 2, []string{"0 end"}},
			}},
		{"ends due together keep their start order",
			[]Entry{{Height: 1, Duration: s}, {Height: 1, Duration: s}},
			[]step{{0, 1, []string{"0 start", "1 start"}}, {2 * s, 1, []string{"0 end", "1 end"}}}},
		{"nothing", nil, []step{{0, 1, nil}, {time.Hour, 1000, nil}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			begin := time.Unix(1_700_000_000, 0)
			sch := New(begin, tc.entries)
			for i, st := range tc.steps {
				var got []string
				for _, a := range sch.Step(begin.Add(st.after), st.height) {
					got = append(got, fmt.Sprintf("%d %s", a.Entry, a.Kind))
				}
				if !slices.Equal(got, st.want) {
					t.Fatalf("step %d (+%v, height %d): %v, want %v", i, st.after, st.height, got, st.want)
				}
			}
		})
	}
}

func TestNext(t *testing.T) {
	begin := time.Unix(1_700_000_000, 0)
	sch := New(begin, []Entry{{Height: 5, Duration: 4 * s}, {Time: 10 * s}, {Time: 3 * s, Duration: s}})
	next := func() string {
		at, ok := sch.Next()
		if !ok {
			return "none"
		}
		return at.Sub(begin).String()
	}
	var log []string
	log = append(log, next())    // the earliest start at a time
	sch.Step(begin.Add(s), 5)    // entry 0 starts, ends at 5s
	log = append(log, next())    // entry 2 starts at 3s
	sch.Step(begin.Add(3*s), 5)  // entry 2 starts, ends at 4s
	log = append(log, next())    // 4s
	sch.Step(begin.Add(5*s), 5)  // both end
	log = append(log, next())    // entry 1 at 10s
	sch.Step(begin.Add(10*s), 5) // entry 1 starts
	log = append(log, next())    // nothing left
	if got, want := strings.Join(log, " "), "3s 3s 4s 10s none"; got != want {
		t.Errorf("Next over the steps: %s, want %s", got, want)
	}
	if _, ok := New(begin, []Entry{{Height: 3}}).Next(); ok {
		t.Error("a schedule of heights only has a next time")
	}
}
