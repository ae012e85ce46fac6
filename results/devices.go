package results

import "math"

// DeviceSample is a shared signing device's account since the network
// started, as the runner read it (cumulative).
type DeviceSample struct {
	Name    string `json:"name"`
	Profile string `json:"profile,omitempty"` // "" = none (real signers only)
	// Signatures of this chain's signers, and of the background chains (a
	// MODEL load; BackgroundChains of them), served by the device.
	Signatures           int64   `json:"signatures"`
	BackgroundSignatures int64   `json:"background_signatures"`
	BackgroundChains     int     `json:"background_chains,omitempty"`
	BusyMS               float64 `json:"busy_ms"` // time the device spent signing
	WallMS               float64 `json:"wall_ms"` // time since the network started
}

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
// device events, each with its last device event's counters.
func summarizeDevices(events []Event, start *Event) map[string]*DeviceSummary {
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
	for i := range events {
		ev := &events[i]
		if ev.Kind != KindDevice || ev.Device == nil || ev.Device.Name == "" {
			continue
		}
		d, smp := get(ev.Device.Name), *ev.Device
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
func (v *ValidatorSummary) signQueue() LatencyStats {
	if v.SignQueueMS == nil {
		return LatencyStats{}
	}
	return *v.SignQueueMS
}
