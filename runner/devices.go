package runner

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/valnet/valnet/results/eventlog"
	"github.com/valnet/valnet/signers"
)

// deviceEvery is how often a device's account is recorded while the
// network runs (cumulative, so a run cut short keeps the last one).
const deviceEvery = 5 * time.Second

// runDevices holds the run's shared signing devices. Every signer lives in
// the runner's process on every backend (remote-signing backends serve
// them to their nodes from here), so one in-memory queue per device is the
// device for inprocess, process and docker alike.
type runDevices struct {
	byName map[string]*signers.Device
	names  []string // sorted
	stop   func()   // ends the recording goroutine; nil before start
}

// openDevices makes the scenario's devices, each with its background
// load at the time of its profile. Nothing runs until start.
func (r *run) openDevices() error {
	r.devices = &runDevices{byName: map[string]*signers.Device{}}
	for name, dp := range r.plan.Devices {
		dev := signers.NewDevice(name)
		if bg := dp.Background; bg != nil {
			p, err := r.plan.DeviceProfile(dp.Profile)
			if err != nil {
				return fmt.Errorf("device %s: %w", name, err)
			}
			spec := signers.BackgroundSpec{Chains: bg.Chains, BlockTime: bg.BlockTime, ProposerShare: bg.ProposerShare,
				Spacing: bg.Spacing, Jitter: bg.Jitter}
			if err := dev.SetBackground(spec, p, r.seed); err != nil {
				return fmt.Errorf("device %s: %w", name, err)
			}
		}
		r.devices.byName[name] = dev
		r.devices.names = append(r.devices.names, name)
	}
	sort.Strings(r.devices.names)
	return nil
}

// device is the shared device a signer names, nil for none.
func (r *run) device(name string) *signers.Device {
	if name == "" || r.devices == nil {
		return nil
	}
	return r.devices.byName[name]
}

// startDevices starts every device's clock and background load with the
// network, and records their accounts every deviceEvery until stop.
func (r *run) startDevices(ctx context.Context) {
	ds := r.devices
	if ds == nil || len(ds.names) == 0 {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	for _, name := range ds.names {
		ds.byName[name].Start(ctx)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(deviceEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				r.recordDevices()
			}
		}
	}()
	ds.stop = func() { cancel(); wg.Wait() }
}

// recordDevices records one device event per device (dropped once the
// recorder is sealed).
func (r *run) recordDevices() {
	if r.devices == nil {
		return
	}
	now := time.Now()
	for _, name := range r.devices.names {
		st := r.devices.byName[name].Stats()
		dp := r.plan.Devices[name]
		smp := &eventlog.DeviceSample{Name: name, Profile: dp.Profile, Signatures: st.Signatures,
			BackgroundSignatures: st.Background, BusyMS: ms(st.Busy), WallMS: ms(st.Wall)}
		if dp.Background != nil {
			smp.BackgroundChains = dp.Background.Chains
		}
		r.rec.Emit(eventlog.Event{Time: now, Kind: eventlog.KindDevice, Device: smp})
	}
}

// stopDevices records the devices' last accounts, stops their background
// load and refuses every signature still queued, so no node waits on a
// device while it stops. Safe to call more than once.
func (r *run) stopDevices() {
	ds := r.devices
	if ds == nil {
		return
	}
	if ds.stop != nil {
		ds.stop()
		ds.stop = nil
		r.recordDevices()
	}
	for _, name := range ds.names {
		_ = ds.byName[name].Close()
	}
}
