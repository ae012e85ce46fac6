//go:build cgo

package ledger

import (
	"fmt"
	"strings"

	"github.com/zondax/hid"
	ledger_go "github.com/zondax/ledger-go"
)

// HIDSupported reports whether this build can reach a device over USB HID.
const HIDSupported = true

// OpenHID connects to a Ledger over USB HID: the first one, or the one
// whose serial number or HID path equals serial. The app is not checked
// here; Open does that (GET_VERSION).
func OpenHID(serial string) (Device, error) {
	admin := ledger_go.NewLedgerAdmin()
	n := admin.CountDevices()
	if n == 0 {
		return nil, ErrNoDevice
	}
	idx := 0
	if serial != "" {
		// ledger-go v1.0.1's ListDevices only logs, so find the index in
		// the same enumeration Connect walks.
		var seen []string
		idx = -1
		for _, d := range ledgerHIDDevices() {
			if d.Serial == serial || d.Path == serial {
				idx = len(seen)
				break
			}
			seen = append(seen, d.Serial)
		}
		if idx < 0 {
			return nil, fmt.Errorf("no Ledger device with serial or path %q (found serials: %s)",
				serial, strings.Join(seen, ", "))
		}
	}
	dev, err := admin.Connect(idx)
	if err != nil {
		return nil, fmt.Errorf("ledger: connect to device %d of %d: %w", idx, n, err)
	}
	return dev, nil
}

// ledgerHIDDevices enumerates as ledger-go's Connect does (vendor 0x2c97,
// then its isLedgerDevice filter), so an index here is an index there.
func ledgerHIDDevices() []hid.DeviceInfo {
	var out []hid.DeviceInfo
	for _, d := range hid.Enumerate(ledger_go.VendorLedger, 0) {
		if isLedgerHID(d) {
			out = append(out, d)
		}
	}
	return out
}

// isLedgerHID mirrors ledger-go v1.0.1's unexported isLedgerDevice.
func isLedgerHID(d hid.DeviceInfo) bool {
	if d.UsagePage == ledger_go.UsagePageLedgerNanoS {
		return true
	}
	switch uint8(d.ProductID >> 8) {
	case 0x10, 0x40, 0x50, 0x60, 0x70: // Nano S, Nano X, Nano S Plus, Stax, Flex
		return d.Interface == 0
	}
	return false
}
