package scenarios

import (
	"fmt"
	"time"
)

// Ledger defaults: those of signers/ledger (DefaultChunkSize, MaxChunkSize
// and the NanoSPlus timing of the ledger-nano-s-plus model), written out
// here so that parsing a scenario does not pull in the HID stack.
// TestLedgerDefaults keeps the two in step.
const (
	defaultLedgerChunk      = 250
	maxLedgerChunk          = 255
	defaultLedgerHostStall  = 51 * time.Millisecond
	defaultLedgerWire       = 3 * time.Millisecond
	defaultLedgerDeviceSign = 525 * time.Millisecond
)

// ledgerDevices in documentation order, the default first.
var ledgerDevices = []string{LedgerEmulator, LedgerHID}

// ledgerDeviceKeys are the ledger keys that apply to one device only.
var ledgerDeviceKeys = map[string][]string{
	LedgerHID:      {"serial"},
	LedgerEmulator: {"confirm_delay", "host_stall", "wire", "device_sign"},
}

// resolveLedger checks a ledger signer's keys and applies the defaults: an
// emulator gets the ledger-nano-s-plus timing unless told otherwise.
func (d *decoder) resolveLedger(key string, rs *rawSigner, keyType string) *LedgerPlan {
	lp := &LedgerPlan{Connection: LedgerEmulator, ChunkSize: defaultLedgerChunk}
	if k := key + ".key_type"; d.written(k) && keyType != KeyEd25519 && !d.failed(k) {
		d.fail(d.valuePos(k), k, "type ledger signs with Ed25519 only (the Tendermint validator app); remove key_type")
	}
	deviceOK := !d.failed(key + ".connection")
	if rs.Connection != nil {
		lp.Connection = *rs.Connection
		deviceOK = d.checkChoice(key+".connection", "Ledger connection", lp.Connection, ledgerDevices, nil)
	}
	if rs.ChunkSize != nil {
		k := key + ".chunk_size"
		if c := *rs.ChunkSize; c < 1 || c > maxLedgerChunk {
			d.fail(d.valuePos(k), k, fmt.Sprintf("must be between 1 and %d, got %d: the bytes of payload per APDU packet (the default, %d, fits every CometBFT vote and proposal in one)", maxLedgerChunk, c, defaultLedgerChunk))
		} else {
			lp.ChunkSize = int(c)
		}
	}
	if !deviceOK {
		return lp
	}
	for _, dev := range ledgerDevices {
		if dev == lp.Connection {
			continue
		}
		for _, k := range ledgerDeviceKeys[dev] {
			if k := key + "." + k; d.written(k) {
				d.fail(d.keyPos(k), k, fmt.Sprintf("only with connection: %s; this Ledger is connection: %s", dev, lp.Connection))
			}
		}
	}
	if lp.Connection == LedgerHID {
		if rs.Serial != nil {
			lp.Serial = *rs.Serial
		}
		return lp
	}
	if rs.ConfirmDelay != nil {
		lp.ConfirmDelay = *rs.ConfirmDelay
	}
	for _, t := range []struct {
		key  string
		raw  *time.Duration
		dst  *time.Duration
		def  time.Duration
		what string
	}{
		{"host_stall", rs.HostStall, &lp.HostStall, defaultLedgerHostStall, "the host's share of each APDU exchange"},
		{"wire", rs.Wire, &lp.Wire, defaultLedgerWire, "the USB transfer of each APDU exchange"},
		{"device_sign", rs.DeviceSign, &lp.DeviceSign, defaultLedgerDeviceSign, "the device's own signing time"},
	} {
		*t.dst = t.def
		if t.raw == nil {
			continue
		}
		if *t.raw == 0 {
			k := key + "." + t.key
			d.fail(d.valuePos(k), k, fmt.Sprintf("must be greater than 0: %s in the model (remove the key for the ledger-nano-s-plus value, %s)", t.what, t.def))
			continue
		}
		*t.dst = *t.raw
	}
	return lp
}

// checkLedgerShared refuses two validators on one Ledger device: a device
// holds one validator key, and CometBFT refuses a key twice in a validator
// set. Emulators are one per validator, each with its own key.
func (d *decoder) checkLedgerShared(k string, entry int, count int64, signer SignerPlan, devices map[string]int) {
	lp := signer.Ledger
	if lp == nil || lp.Connection != LedgerHID || d.failed(k+".signer") {
		return
	}
	key := k + ".signer.connection"
	if d.written(k + ".signer.serial") {
		key = k + ".signer.serial"
	}
	if count > 1 {
		d.fail(d.valuePos(key), key, fmt.Sprintf("with count %d, every expanded validator would sign on this one Ledger (a device holds one validator key); write one entry per device, each with its serial", count))
		return
	}
	if j, taken := devices[lp.Serial]; taken {
		which := fmt.Sprintf("the Ledger with serial %q", lp.Serial)
		if lp.Serial == "" {
			which = `the first Ledger found (serial "")`
		}
		d.fail(d.valuePos(key), key, fmt.Sprintf("%s is already used by validators[%d] (line %d); each validator needs its own device: give each its serial", which, j, d.valuePos(fmt.Sprintf("validators[%d]", j)).Line))
		return
	}
	devices[lp.Serial] = entry
}
