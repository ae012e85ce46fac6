package signers

import (
	"time"

	"github.com/jonboulle/clockwork"
)

// realClock is the default of every clock in this package: one value, so
// that a chain built without a clock shares it.
var realClock = clockwork.NewRealClock()

// clockOr is c, or the real clock when c is nil.
func clockOr(c clockwork.Clock) clockwork.Clock {
	if c == nil {
		return realClock
	}
	return c
}

// sleepOn waits d on clock, or until stop is closed; false when stopped
// first. Stopped already, it starts no timer; a timer (not clock.After)
// so that a wait cut short leaves no waiter behind on a fake clock.
func sleepOn(clock clockwork.Clock, d time.Duration, stop <-chan struct{}) bool {
	select {
	case <-stop:
		return false
	default:
	}
	t := clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.Chan():
		return true
	case <-stop:
		return false
	}
}
