package scenarios

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// LoadPlan is the `load:` key: transactions sent into the nodes' mempools
// during the run, as a client would (CometBFT's RPC broadcast_tx_sync).
type LoadPlan struct {
	Rate     float64       // transactions per second, > 0
	RateText string        // as written, e.g. "200/s"
	Size     int           // bytes per transaction, MinTxSize..MaxTxSize
	To       string        // LoadToAll or one validator's name
	Start    time.Duration // after the first block is committed
	Duration time.Duration // 0: to the end of the run
}

// LoadToAll sends round robin over the validators whose node runs.
const LoadToAll = "all"

// Transaction sizes. A load transaction is a kvstore `key=value`: a
// 16-character key, '=' and at least one byte of value. The largest is
// CometBFT's default mempool.max_tx_bytes (1 MiB); a larger one would
// be refused by every node.
const (
	MinTxSize       = 18
	MaxTxSize       = 1 << 20
	defaultLoadSize = 1 << 10
)

// rateUnits are the time units a load rate is written per; the number
// before the slash is a plain decimal.
var (
	rateUnitNames  = []string{"s", "min"}
	rateUnits      = map[string]float64{"s": 1, "min": 60}
	decimalPattern = regexp.MustCompile(`^` + decimal + `$`)
)

// resolveLoad checks the load key; nil when there is none.
func (d *decoder) resolveLoad(rl *rawLoad, vals validatorSet) *LoadPlan {
	const key = "load"
	if rl == nil {
		return nil
	}
	lp := &LoadPlan{Size: defaultLoadSize, To: LoadToAll}
	switch rk := key + ".rate"; {
	case d.failed(rk):
	case rl.Rate == nil:
		d.fail(d.valuePos(key), rk, "required: how many transactions to send, e.g. rate: 200/s or rate: 30/min")
	default:
		lp.RateText = strings.TrimSpace(*rl.Rate)
		lp.Rate = d.resolveRate(rk, lp.RateText)
	}
	if rl.Size != nil {
		lp.Size = d.resolveTxSize(key+".size", *rl.Size)
	}
	if rl.To != nil && *rl.To != LoadToAll {
		if _, ok := d.validatorRef(key+".to", *rl.To, vals); ok {
			lp.To = *rl.To
		}
	}
	if rl.Start != nil {
		lp.Start = *rl.Start
		if d.maxDuration > 0 && lp.Start >= d.maxDuration {
			d.fail(d.valuePos(key+".start"), key+".start", fmt.Sprintf("%v is at or after run.max_duration (%v): the load would never start", lp.Start, d.maxDuration))
		}
	}
	if rl.Duration != nil {
		lp.Duration = *rl.Duration
		if lp.Duration == 0 {
			d.fail(d.valuePos(key+".duration"), key+".duration", "must be greater than 0 (remove the key to send until the end of the run)")
		}
	}
	return lp
}

// resolveRate reads "200/s", "1.5/s" or "30/min" as transactions per second.
func (d *decoder) resolveRate(key, v string) float64 {
	num, unit, found := strings.Cut(v, "/")
	num, unit = strings.TrimSpace(num), strings.TrimSpace(unit)
	n, err := strconv.ParseFloat(num, 64)
	if !decimalPattern.MatchString(num) {
		err = strconv.ErrSyntax // 1e3, inf, NaN, -5: not a plain count
	}
	per, known := rateUnits[unit]
	switch {
	case !found && err == nil:
		d.fail(d.valuePos(key), key, fmt.Sprintf("%s has no unit; write e.g. %s/s (per second) or %s/min", v, num, num), rateUnitNames...)
	case !found || err != nil:
		d.fail(d.valuePos(key), key, fmt.Sprintf("%q is not a rate; write a number of transactions per second or minute, e.g. 200/s or 30/min", v), rateUnitNames...)
	case !known:
		d.fail(d.valuePos(key), key, fmt.Sprintf("unknown rate unit %q", unit)+didYouMean(unit, rateUnitNames), rateUnitNames...)
	case n <= 0:
		d.fail(d.valuePos(key), key, "must be greater than 0 (remove load for a run without transactions)")
	default:
		return n / per
	}
	return 0
}

// resolveTxSize reads a transaction size in bytes ("1KiB", "512B"): byte
// units as network.bandwidth writes them, without bits.
func (d *decoder) resolveTxSize(key, v string) int {
	v = strings.TrimSpace(v)
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		d.fail(d.valuePos(key), key, fmt.Sprintf("%s has no unit; write e.g. %sB", v, v), byteUnitNames...)
		return 0
	}
	n, unit, ok := parseAmount(v)
	per, known := byteUnits[unit]
	switch {
	case !ok:
		d.fail(d.valuePos(key), key, fmt.Sprintf("%q is not a size; write a number and a unit, e.g. 1KiB or 512B", v), byteUnitNames...)
	case bitUnits[unit] > 0:
		d.fail(d.valuePos(key), key, fmt.Sprintf("a transaction's size is in bytes, not %s; write e.g. 1KiB", unit), byteUnitNames...)
	case !known:
		d.fail(d.valuePos(key), key, fmt.Sprintf("unknown size unit %q", unit)+didYouMean(unit, byteUnitNames), byteUnitNames...)
	case n*per < MinTxSize:
		d.fail(d.valuePos(key), key, fmt.Sprintf("%s is %g bytes; a load transaction is at least %d bytes (a 16-character key, '=' and a value)", v, n*per, MinTxSize))
	case n*per > MaxTxSize:
		d.fail(d.valuePos(key), key, fmt.Sprintf("%s is more than 1MiB, CometBFT's default mempool.max_tx_bytes: every node would refuse it", v))
	case n*per != float64(int(n*per)):
		d.fail(d.valuePos(key), key, fmt.Sprintf("%s is %g bytes; a size is a whole number of bytes", v, n*per))
	default:
		return int(n * per)
	}
	return 0
}
