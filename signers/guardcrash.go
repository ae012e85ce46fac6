package signers

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// A hidden fault knob for the double-sign guard's crash test
// (docs/reliability.md): with VALNET_FAULT_GUARD_CRASH set, the process
// kills itself with SIGKILL - no deferred function, no flush, as kill -9 -
// at one point of one new signature:
//
//	before-save[@H]  the backend has signed, the high-water mark is not
//	                 yet persisted, nothing was returned
//	after-save[@H]   the high-water mark is persisted, the signature not
//	                 yet returned
//
// at the first new signature (one the backend is asked for) of a height
// >= H (no @H: the first new signature of the process). A stored signature
// handed out again is not a new signature. It is read once per process;
// unset (always, outside that test) it costs one branch per signature.
const GuardCrashEnv = "VALNET_FAULT_GUARD_CRASH"

// Points of the guard crash knob.
const (
	CrashBeforeSave = "before-save"
	CrashAfterSave  = "after-save"
)

type guardCrash struct {
	point  string // "" when off
	height int64
}

var (
	crashOnce sync.Once
	crashPlan guardCrash
)

// ParseGuardCrash reads the knob's value: POINT[@HEIGHT].
func ParseGuardCrash(v string) (point string, height int64, err error) {
	point, h, hasH := strings.Cut(v, "@")
	if point != CrashBeforeSave && point != CrashAfterSave {
		return "", 0, fmt.Errorf("%s=%q: point %q (allowed: %s, %s)", GuardCrashEnv, v, point, CrashBeforeSave, CrashAfterSave)
	}
	if hasH {
		if height, err = strconv.ParseInt(h, 10, 64); err != nil || height < 1 {
			return "", 0, fmt.Errorf("%s=%q: height %q is not a height >= 1", GuardCrashEnv, v, h)
		}
	}
	return point, height, nil
}

// crashKnob is the process's knob, read once. A bad value kills nothing
// and is said on stderr once: the test that sets it then fails because no
// crash happened.
func crashKnob() guardCrash {
	crashOnce.Do(func() {
		v := os.Getenv(GuardCrashEnv)
		if v == "" {
			return
		}
		p, h, err := ParseGuardCrash(v)
		if err != nil {
			fmt.Fprintln(os.Stderr, "valnet:", err)
			return
		}
		crashPlan = guardCrash{point: p, height: h}
	})
	return crashPlan
}

// crashAt kills the process if the knob names point and a new signature
// of height h is being made.
func crashAt(point string, h int64) {
	if c := crashKnob(); c.point == point && h >= c.height {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is delivered before anything else runs
	}
}
