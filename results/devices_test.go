package results

import (
	"bytes"
	"github.com/valnet/valnet/results/eventlog"
	"path/filepath"
	"testing"

	"github.com/valnet/valnet/internal/phase"
)

func queued(ev eventlog.Event, ms float64) eventlog.Event { ev.QueueMS = &ms; return ev }

func deviceEv(ms float64, smp eventlog.DeviceSample) eventlog.Event {
	return eventlog.Event{Time: at(ms), Kind: eventlog.KindDevice, Device: &smp}
}

func devicesEvents() []eventlog.Event {
	start := runStart("hsm", "v1")
	start.Validators[0].Device = "hsm"
	start.Expect = []eventlog.Expectation{{Metric: "sign_queue_p50_ms", Validator: "hsm", Min: ptrF(100)},
		{Metric: "sign_queue_max_ms", Validator: "v1", Max: ptrF(0)}}
	return []eventlog.Event{start,
		queued(withLatency(signEv("hsm", phase.Prevote, 1, 0, "aa"), 150, 130), 0),
		queued(withLatency(signEv("hsm", phase.Precommit, 1, 0, "aa"), 400, 130), 250),
		queued(withLatency(signEv("hsm", phase.Prevote, 2, 0, "bb"), 320, 130), 150),                   // served in 170
		queued(withError(signEv("hsm", phase.Precommit, 2, 0, "bb"), "signing device is closed"), 900), // failed: no sample
		withLatency(signEv("v1", phase.Prevote, 1, 0, "aa"), 1, 0),
		deviceEv(5000, eventlog.DeviceSample{Name: "hsm", Profile: "yubihsm2", Signatures: 2, BackgroundSignatures: 20, BackgroundChains: 5, BusyMS: 2500, WallMS: 5000}),
		deviceEv(9000, eventlog.DeviceSample{Name: "hsm", Profile: "yubihsm2", Signatures: 4, BackgroundSignatures: 40, BackgroundChains: 5, BusyMS: 8100, WallMS: 9000}),
		runEnd(9000, eventlog.StopHeights)}
}

func ptrF(v float64) *float64 { return &v }

func TestDevicesSummary(t *testing.T) {
	s := Summarize(devicesEvents())
	d := s.Devices["hsm"]
	if d == nil || len(s.Devices) != 1 {
		t.Fatalf("devices %+v, want hsm only", s.Devices)
	}
	if d.Profile != "yubihsm2" || d.BackgroundChains != 5 || *d.Signatures != 4 || *d.BackgroundSignatures != 40 || *d.Utilisation != 0.9 {
		t.Errorf("hsm %+v, want the last device event's account (utilisation 0.9)", d)
	}
	if len(d.Validators) != 1 || d.Validators[0] != "hsm" {
		t.Errorf("validators on hsm %v", d.Validators)
	}
	hsm, v1 := vByName(t, s, "hsm"), vByName(t, s, "v1")
	if hsm.Device != "hsm" || hsm.SignQueueMS == nil || hsm.SignQueueMS.Count != 3 || hsm.SignQueueMS.P50 != 150 || hsm.SignQueueMS.Max != 250 {
		t.Errorf("hsm sign_queue_ms %+v (device %q), want 3 samples, p50 150, max 250", hsm.SignQueueMS, hsm.Device)
	}
	// sign_service_ms: latency - queue of the same signatures (150, 150, 170).
	if sv := hsm.SignServiceMS; sv == nil || sv.Count != 3 || sv.P50 != 150 || sv.Max != 170 {
		t.Errorf("hsm sign_service_ms %+v, want 3 samples, p50 150, max 170", sv)
	}
	if v1.Device != "" || v1.SignQueueMS != nil || v1.SignServiceMS != nil {
		t.Errorf("v1 is on no device, got device %q queue %+v", v1.Device, v1.SignQueueMS)
	}
	for _, e := range s.Expectations {
		if !e.OK && e.Validator == "hsm" {
			t.Errorf("expectation %+v failed", e)
		}
	}
}

// A device named by run_start but never reported: its counters are
// unknown (null), not zero.
func TestDeviceWithoutEventsIsUnknown(t *testing.T) {
	start := runStart("hsm")
	start.Validators[0].Device = "hsm"
	s := Summarize([]eventlog.Event{start, runEnd(100, eventlog.StopError)})
	d := s.Devices["hsm"]
	if d == nil || d.Utilisation != nil || d.Signatures != nil {
		t.Fatalf("device %+v, want listed with unknown counters", d)
	}
	if s := Summarize([]eventlog.Event{runStart("v1"), runEnd(100, eventlog.StopHeights)}); s.Devices != nil {
		t.Errorf("a run without devices has devices %+v", s.Devices)
	}
}

// summary.json rebuilt from events.jsonl (what `valnet report` does) is the
// summary of the events as emitted.
func TestDevicesSummarySurvivesEventsFile(t *testing.T) {
	events := devicesEvents()
	path := filepath.Join(t.TempDir(), "events.jsonl")
	w, err := eventlog.NewWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		w.Emit(e)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	back, err := eventlog.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := WriteSummaryJSON(&a, Summarize(events)); err != nil {
		t.Fatal(err)
	}
	if err := WriteSummaryJSON(&b, Summarize(back)); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("summary from events.jsonl differs:\n%s\nwant\n%s", b.String(), a.String())
	}
	if !bytes.Contains(a.Bytes(), []byte(`"sign_queue_ms"`)) || !bytes.Contains(a.Bytes(), []byte(`"sign_service_ms"`)) || !bytes.Contains(a.Bytes(), []byte(`"background_signatures": 40`)) {
		t.Errorf("summary.json lacks the device keys:\n%s", a.String())
	}
}

// The table, summary.md and report.html show the devices section only for
// a run with a device, with the queue and the utilisation.
func TestDevicesInReports(t *testing.T) {
	with, without := devicesEvents(), []eventlog.Event{runStart("v1"), runEnd(100, eventlog.StopHeights)}
	for _, tc := range []struct {
		name  string
		write func(*bytes.Buffer, *Summary, []eventlog.Event) error
	}{
		{"table", func(b *bytes.Buffer, s *Summary, _ []eventlog.Event) error { return WriteTable(b, s) }},
		{"markdown", func(b *bytes.Buffer, s *Summary, _ []eventlog.Event) error { return WriteMarkdown(b, s) }},
		{"html", func(b *bytes.Buffer, s *Summary, ev []eventlog.Event) error { return WriteHTMLReport(b, s, ev) }},
	} {
		var a, b bytes.Buffer
		if err := tc.write(&a, Summarize(with), with); err != nil {
			t.Fatal(err)
		}
		if err := tc.write(&b, Summarize(without), without); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Shared signing devices", "90.0 %", "yubihsm2", "MODEL", "queue p50", "service p50/p99", "150/170"} {
			if !bytes.Contains(a.Bytes(), []byte(want)) {
				t.Errorf("%s with a device lacks %q", tc.name, want)
			}
		}
		if bytes.Contains(b.Bytes(), []byte("Shared signing devices")) {
			t.Errorf("%s without a device shows a devices section", tc.name)
		}
	}
}
