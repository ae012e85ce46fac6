package results

import (
	"fmt"
	"github.com/valnet/valnet/results/eventlog"
	"math"
	"slices"
	"strconv"
	"strings"
)

// DeviceSummary is one entry of summary.json's devices. Utilisation is
// busy / wall; the counters are nil when the run recorded no device event
// (it ended before the first): valnet cannot tell them.
type DeviceSummary struct {
	Profile              string   `json:"profile"`
	Validators           []string `json:"validators"` // this chain's validators on it, in run_start order
	BackgroundChains     int      `json:"background_chains"`
	Utilisation          *float64 `json:"utilisation"`
	Signatures           *int64   `json:"signatures"`
	BackgroundSignatures *int64   `json:"background_signatures"`
	BusyMS               *float64 `json:"busy_ms"`
	WallMS               *float64 `json:"wall_ms"`
}

// summarizeDevices lists the devices of run_start's validators and of
// device events, each with its last device event's counters (last: the
// last device event of each device named by one).
func summarizeDevices(start *eventlog.Event, last map[string]eventlog.DeviceSample) map[string]*DeviceSummary {
	out := map[string]*DeviceSummary{}
	get := func(name string) *DeviceSummary {
		d, ok := out[name]
		if !ok {
			d = &DeviceSummary{Validators: []string{}}
			out[name] = d
		}
		return d
	}
	if start != nil {
		for _, v := range start.Validators {
			if v.Device != "" {
				d := get(v.Device)
				d.Validators = append(d.Validators, v.Name)
			}
		}
	}
	for name, smp := range last {
		d := get(name)
		d.Profile, d.BackgroundChains = smp.Profile, smp.BackgroundChains
		d.Signatures, d.BackgroundSignatures = &smp.Signatures, &smp.BackgroundSignatures
		busy, wall := roundMS(smp.BusyMS), roundMS(smp.WallMS)
		d.BusyMS, d.WallMS = &busy, &wall
		d.Utilisation = nil
		if smp.WallMS > 0 {
			u := math.Round(smp.BusyMS/smp.WallMS*1e4) / 1e4
			d.Utilisation = &u
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// signQueue is the validator's queue waits; zero stats when it is on no
// device (an expectation then notes "no samples").
func (v *ValidatorSummary) signQueue() LatencyStats { return statsOrZero(v.SignQueueMS) }

// statsOrZero is *st, or zero stats (no samples) for nil.
func statsOrZero(st *LatencyStats) LatencyStats {
	if st == nil {
		return LatencyStats{}
	}
	return *st
}

// deviceTables are the shared-device sections of the text table,
// summary.md and report.html, built once: the devices, then the queue
// waits of the validators on them. Empty without devices.
type deviceTables struct {
	Note    string
	Devices textTable
	Queue   textTable // empty when no validator signs on a device
}

// textTable is a header and rows of cells, written alike by the text
// table, summary.md and report.html.
type textTable struct {
	Head []string
	Rows [][]string
}

// Tables are the device sections' tables in order, those with rows only.
func (t *deviceTables) Tables() []textTable {
	out := []textTable{t.Devices}
	if len(t.Queue.Rows) > 0 {
		out = append(out, t.Queue)
	}
	return out
}

// ID and Title head the section in report.html.
func (t *deviceTables) ID() string    { return "devices" }
func (t *deviceTables) Title() string { return "Shared signing devices" }

// lines is the header followed by the rows.
func (t textTable) lines() [][]string { return append([][]string{t.Head}, t.Rows...) }

// deviceNote explains the columns, and what is a MODEL.
const deviceNote = "one queue per device, one signature at a time, first come first served; utilisation = time signing / time since the network started; " +
	"background = other chains' signatures (a MODEL load); queue = wait before the device started on a signature (part of sign latency), ms; " +
	"service = sign latency - queue: the device's time plus the guard and any signer.latency around it, ms"

func newDeviceTables(s *Summary) *deviceTables {
	if len(s.Devices) == 0 {
		return nil
	}
	t := &deviceTables{Note: deviceNote,
		Devices: textTable{Head: []string{"device", "profile", "utilisation", "signatures", "background signatures", "background chains", "validators"}},
		Queue:   textTable{Head: []string{"validator", "device", "queue p50", "queue p95", "queue p99", "queue max", "service p50/p99", "sign p50/p99", "missed"}}}
	names := make([]string, 0, len(s.Devices))
	for name := range s.Devices {
		names = append(names, name)
	}
	slices.Sort(names)
	unknown := "? (no device event)"
	for _, name := range names {
		d := s.Devices[name]
		util, sigs, bg := unknown, unknown, unknown
		if d.Utilisation != nil {
			util = strconv.FormatFloat(*d.Utilisation*100, 'f', 1, 64) + " %"
		}
		if d.Signatures != nil {
			sigs = strconv.FormatInt(*d.Signatures, 10)
		}
		if d.BackgroundSignatures != nil {
			bg = strconv.FormatInt(*d.BackgroundSignatures, 10)
		}
		t.Devices.Rows = append(t.Devices.Rows, []string{name, orDash(d.Profile), util, sigs, bg,
			strconv.Itoa(d.BackgroundChains), orDash(strings.Join(d.Validators, ", "))})
	}
	for _, v := range s.Validators {
		if v.SignQueueMS == nil {
			continue
		}
		q := *v.SignQueueMS
		ms := func(x float64) string {
			if q.Count == 0 {
				return "-"
			}
			return formatLatency(x)
		}
		t.Queue.Rows = append(t.Queue.Rows, []string{v.Name, orDash(v.Device), ms(q.P50), ms(q.P95), ms(q.P99), ms(q.Max),
			p50p99(statsOrZero(v.SignServiceMS)), p50p99(v.SignLatencyMS.All), fmt.Sprintf("%d/%d", v.MissedPrecommits, v.PrecommitsCounted)})
	}
	return t
}
