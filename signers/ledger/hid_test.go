package ledger

import (
	"errors"
	"testing"
)

// No Ledger is attached where this runs: OpenHID must say so plainly
// (cgo build) or say that HID needs cgo (CGO_ENABLED=0).
func TestOpenHIDNoDevice(t *testing.T) {
	for _, serial := range []string{"", "0001"} {
		dev, err := OpenHID(serial)
		if dev != nil {
			dev.Close()
			t.Skip("a Ledger device is attached")
		}
		want := ErrNoHID
		if HIDSupported {
			want = ErrNoDevice
		}
		if !errors.Is(err, want) {
			t.Fatalf("serial %q: got %v, want %v", serial, err, want)
		}
	}
	if ErrNoDevice.Error() != "no Ledger device found (connect it, unlock it, open the Tendermint validator app)" {
		t.Errorf("message changed: %q", ErrNoDevice)
	}
}
