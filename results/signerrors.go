package results

import (
	"github.com/valnet/valnet/results/eventlog"
	"strconv"
	"strings"
	"time"

	"github.com/valnet/valnet/internal/action"
	"github.com/valnet/valnet/internal/signfail"
)

// SignFailures counts a validator's sign errors by why the signature did
// not reach the node (internal/signfail). A struct rather than a map so
// that every key is always present in summary.json.
type SignFailures struct {
	SignerFailed       int `json:"signer-failed"`
	SignatureInvalid   int `json:"signature-invalid"`
	SignerConflict     int `json:"signer-conflict"`
	SignerNotAnswering int `json:"signer-not-answering"`
}

func (f *SignFailures) add(kind string) {
	switch signfail.Of(kind) {
	case signfail.SignatureInvalid:
		f.SignatureInvalid++
	case signfail.SignerConflict:
		f.SignerConflict++
	case signfail.SignerNotAnswering:
		f.SignerNotAnswering++
	default:
		f.SignerFailed++
	}
}

// String lists the non-zero kinds ("signature-invalid 31"), "-" for none.
func (f SignFailures) String() string {
	var parts []string
	for _, p := range []struct {
		k string
		n int
	}{{signfail.SignerFailed, f.SignerFailed}, {signfail.SignatureInvalid, f.SignatureInvalid},
		{signfail.SignerConflict, f.SignerConflict}, {signfail.SignerNotAnswering, f.SignerNotAnswering}} {
		if p.n > 0 {
			parts = append(parts, p.k+" "+strconv.Itoa(p.n))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// faultGrace is how long after a fault on a validator ends a sign error of
// that validator is still its doing: a request under way when the fault
// ended may time out (CometBFT's privval read timeout, 5 s) after the node
// retried it (50 tries, 100 ms apart: another 5 s).
const faultGrace = 10 * time.Second

// faultSpans follows, by validator, the windows of every fault aimed at
// it, its signer or its cosigners (targets "v", "v.signer",
// "v.cosigner-2"): a sign error inside one (or within faultGrace after
// it) was injected; any other is the signer's own, which a run must not
// pass over in silence (the sign_errors_unexplained expectation).
type faultSpans struct {
	spans map[string][]faultSpan
}

type faultSpan struct {
	start, end time.Time
	open       bool
	action     string
}

func faultOwner(target string) string {
	if i := strings.IndexByte(target, '.'); i > 0 {
		return target[:i]
	}
	return target
}

func (f *faultSpans) observe(e *eventlog.Event) {
	if e.Kind != eventlog.KindFault || e.Validator == "" {
		return
	}
	v := faultOwner(e.Validator)
	switch e.State {
	case eventlog.FaultStart:
		switch e.Action {
		case action.NodeStart, action.NodeResume, action.Heal:
			return // they only end other windows, which send their own end
		}
		if f.spans == nil {
			f.spans = map[string][]faultSpan{}
		}
		f.spans[v] = append(f.spans[v], faultSpan{start: e.Time, open: true, action: e.Action})
	case eventlog.FaultEnd:
		ws := f.spans[v]
		for i := len(ws) - 1; i >= 0; i-- {
			if ws[i].open && ws[i].action == e.Action {
				ws[i].end, ws[i].open = e.Time, false
				break
			}
		}
	}
}

// explains reports whether some fault on v covers a sign error at t.
func (f *faultSpans) explains(v string, t time.Time) bool {
	for _, s := range f.spans[v] {
		if !s.start.After(t) && (s.open || !s.end.Add(faultGrace).Before(t)) {
			return true
		}
	}
	return false
}
