package scenarios

import (
	"fmt"
	"time"

	"github.com/valnet/valnet/network"
)

// Threshold signer limits and defaults (signer type threshold, a MODEL of
// horcrux's protocol). horcrux's default timeout is its grpcTimeout.
const (
	DefaultCosigners        = 3
	maxCosigners            = 9
	DefaultThresholdTimeout = 500 * time.Millisecond // horcrux v3.2.0+ (1500ms before)
)

// thresholdRefused are the signer keys that mean nothing for a threshold
// signer, with why.
var thresholdRefused = []struct{ key, why string }{
	{"device", "each cosigner holds its own share; the model has no shared device for them"},
}

// resolveThreshold checks a threshold signer's cosigners, threshold, the
// links between its cosigners and its timeout.
func (d *decoder) resolveThreshold(key string, rs *rawSigner, keyType string) *ThresholdPlan {
	tp := &ThresholdPlan{Cosigners: DefaultCosigners, Timeout: DefaultThresholdTimeout}
	for _, r := range thresholdRefused {
		if k := key + "." + r.key; d.written(k) {
			d.fail(d.keyPos(k), k, "not for type threshold: "+r.why)
		}
	}
	if k := key + ".key_type"; d.written(k) && keyType != KeyEd25519 && !d.failed(k) {
		d.fail(d.valuePos(k), k, "type threshold signs with Ed25519 only, as horcrux's threshold scheme does; remove key_type")
	}
	nOK := true
	if rs.Cosigners != nil {
		k := key + ".cosigners"
		if n := *rs.Cosigners; n < 2 || n > maxCosigners {
			d.fail(d.valuePos(k), k, fmt.Sprintf("must be between 2 and %d, got %d: the number of cosigners, each holding a share of the key", maxCosigners, n))
			nOK = false
		} else {
			tp.Cosigners = int(n)
		}
	}
	tp.Threshold = tp.Cosigners/2 + 1
	if rs.Threshold != nil && nOK {
		k := key + ".threshold"
		switch t := int(*rs.Threshold); {
		case t > tp.Cosigners:
			d.fail(d.valuePos(k), k, fmt.Sprintf("must be %d..%d (more than half of cosigners, %d, and at most all of them), got %d: only %d cosigners can take part in a signature", tp.Cosigners/2+1, tp.Cosigners, tp.Cosigners, t, tp.Cosigners))
		case t <= tp.Cosigners/2:
			d.fail(d.valuePos(k), k, fmt.Sprintf("must be %d..%d (more than half of cosigners, %d, and at most all of them), got %d: with %d of %d, two disjoint groups of cosigners could each sign a different block at one height", tp.Cosigners/2+1, tp.Cosigners, tp.Cosigners, t, t, tp.Cosigners))
		default:
			tp.Threshold = t
		}
	}
	if rs.Timeout != nil {
		k := key + ".timeout"
		if *rs.Timeout <= 0 {
			d.fail(d.valuePos(k), k, fmt.Sprintf("must be greater than 0, got %v: how long the leader waits for each cosigner's answer (default %v, horcrux's grpcTimeout)", *rs.Timeout, DefaultThresholdTimeout))
		} else {
			tp.Timeout = *rs.Timeout
		}
	}
	if rl := rs.Links; rl != nil {
		k := key + ".links"
		tp.Links = &LinkPlan{Latency: d.resolveLatencyNoPhases(k+".latency", rl.Latency, linkLatencyNoPhases),
			Bandwidth: d.resolveBandwidth(k+".bandwidth", rl.Bandwidth)}
		if rl.Jitter != nil {
			tp.Links.Jitter = *rl.Jitter
		}
	}
	if rs.Regions != nil {
		k := key + ".regions"
		switch {
		case rs.Links != nil:
			d.fail(d.keyPos(k), k, "give regions or links, not both: regions give every link between cosigners the region matrix's latency, links one setting for all")
		case nOK && len(rs.Regions) != tp.Cosigners:
			d.fail(d.valuePos(k), k, fmt.Sprintf("needs one region per cosigner: %d cosigners, %d regions", tp.Cosigners, len(rs.Regions)))
		}
		for i, r := range rs.Regions {
			ik := fmt.Sprintf("%s[%d]", k, i)
			canon, ok := network.CanonicalRegion(r)
			if !ok {
				d.failRegion(d.valuePos(ik), ik, r)
				continue
			}
			tp.Regions = append(tp.Regions, canon)
		}
	}
	return tp
}
