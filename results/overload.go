package results

import (
	"fmt"
	"github.com/valnet/valnet/results/eventlog"
	"time"
)

// CauseHostOverload is the cause of a missed precommit, a round change or
// a halt that happened while the host running the network was saturated
// (see Saturated): every node was slowed at once, so neither the network
// nor a validator can be blamed.
const CauseHostOverload = "host-overload"

// hostSamplePeriod is the time one host sample covers, ending at its
// event time (the runner measures every second).
const hostSamplePeriod = time.Second

// hostMark is one host event: the second that ends at t.
type hostMark struct {
	t      time.Time
	sample eventlog.HostSample
}

// saturatedDuring reports whether a host sample covering [from, to] was
// saturated, and describes the worst one for a detail.
func (x *index) saturatedDuring(from, to time.Time) (detail string, ok bool) {
	x.looked(lookHost, from, to)
	covering, saturated := 0, 0
	var worst eventlog.HostSample
	for _, m := range x.hosts {
		if m.t.Before(from) || !m.t.Add(-hostSamplePeriod).Before(to) {
			continue
		}
		covering++
		if Saturated(m.sample) {
			saturated++
			if m.sample.SchedLagP99MS+m.sample.TickLagMS > worst.SchedLagP99MS+worst.TickLagMS {
				worst = m.sample
			}
		}
	}
	if saturated == 0 {
		return "", false
	}
	return fmt.Sprintf("the host was saturated (%d of %d host seconds covering it; CPU %s %% busy, scheduling lag p99 %s ms, ticker %s ms late)",
		saturated, covering, formatMS(100*worst.CPUBusy), formatMS(worst.SchedLagP99MS), formatMS(worst.TickLagMS)), true
}
