package scenarios

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Background load defaults and limits (a MODEL of other chains' requests;
// signers/device_background.go runs it).
const (
	defaultBackgroundBlockTime = 6 * time.Second
	defaultProposerShare       = 0.25 // one validator of four
	defaultBackgroundSpacing   = 100 * time.Millisecond
	defaultBackgroundJitter    = 50 * time.Millisecond
	maxBackgroundChains        = 1000
)

// deviceSignerTypes may join a shared device: their signatures are made
// by a device (modelled or real). local and keyfile sign in this process.
var deviceSignerTypes = []string{SignerSimulated, SignerPKCS11, SignerLedger}

// deviceSet is the scenario's devices, for signers to join.
type deviceSet struct {
	plans   map[string]DevicePlan // nil when the scenario defines none
	defined []string              // every name written under devices, sorted
	used    map[string]bool       // names some signer joined
}

func (ds deviceSet) has(name string) bool { return contains(ds.defined, name) }

// resolveDevices checks the top-level devices map.
func (d *decoder) resolveDevices(raws map[string]rawDevice, profiles profileSet) deviceSet {
	ds := deviceSet{used: map[string]bool{}}
	if len(raws) == 0 {
		return ds
	}
	ds.plans = make(map[string]DevicePlan, len(raws))
	ds.defined = slices.Sorted(maps.Keys(raws))
	for _, name := range ds.defined {
		key := "devices." + name
		d.checkKeyName(key, name, "device")
		ds.plans[name] = d.resolveDevice(key, name, raws[name], profiles)
	}
	return ds
}

func (d *decoder) resolveDevice(key, name string, rd rawDevice, profiles profileSet) DevicePlan {
	dp := DevicePlan{Name: name}
	if d.failed(key) {
		return dp
	}
	if rd.Profile != nil {
		k := key + ".profile"
		if !profiles.has(*rd.Profile) {
			d.fail(d.valuePos(k), k, fmt.Sprintf("unknown profile %q", *rd.Profile)+didYouMean(*rd.Profile, profiles.allowed()), profiles.allowed()...)
		}
		dp.Profile = *rd.Profile
	}
	if rd.Background != nil {
		dp.Background = d.resolveBackground(key+".background", rd.Background)
		if rd.Profile == nil && !d.failed(key+".background") {
			d.fail(d.valuePos(key), key+".profile", "required with background: the other chains' signatures take the device's time, so the device needs a profile (e.g. profile: yubihsm2, or one of the top-level profiles)")
		}
	}
	return dp
}

func (d *decoder) resolveBackground(key string, rb *rawBackground) *BackgroundPlan {
	bp := &BackgroundPlan{BlockTime: defaultBackgroundBlockTime, ProposerShare: defaultProposerShare,
		Spacing: defaultBackgroundSpacing, Jitter: defaultBackgroundJitter}
	if d.failed(key) {
		return bp
	}
	switch k := key + ".chains"; {
	case d.failed(k):
		// already reported (a wrong type, or a bad --set value)
	case rb.Chains == nil:
		d.fail(d.valuePos(key), k, "required: how many other chains this device serves, e.g. chains: 9")
	case *rb.Chains < 0 || *rb.Chains > maxBackgroundChains:
		d.fail(d.valuePos(k), k, fmt.Sprintf("must be between 0 and %d, got %d", maxBackgroundChains, *rb.Chains))
	default:
		bp.Chains = int(*rb.Chains)
	}
	if rb.BlockTime != nil {
		bp.BlockTime = *rb.BlockTime
		if k := key + ".block_time"; bp.BlockTime <= 0 {
			d.fail(d.valuePos(k), k, "must be greater than 0: the other chains' block time, e.g. 6s")
		}
	}
	if rb.ProposerShare != nil {
		bp.ProposerShare = *rb.ProposerShare
		if k := key + ".proposer_share"; bp.ProposerShare < 0 || bp.ProposerShare > 1 {
			d.fail(d.valuePos(k), k, fmt.Sprintf("must be between 0 and 1, got %g: the share of a chain's blocks its validator on this device proposes (0.25: one of four equal validators)", bp.ProposerShare))
		}
	}
	if rb.Spacing != nil {
		bp.Spacing = *rb.Spacing
	}
	if rb.Jitter != nil {
		bp.Jitter = *rb.Jitter
	}
	if span := 2*bp.Spacing + bp.Jitter; bp.BlockTime > 0 && span >= bp.BlockTime {
		k := key + ".spacing"
		if !d.written(k) {
			k = key + ".block_time"
		}
		d.fail(d.valuePos(k), k, fmt.Sprintf("two spacings plus jitter (%v) must be shorter than block_time (%v): a block's three requests would run into the next block's", span, bp.BlockTime))
	}
	return bp
}

// resolveSignerDevice checks a signer's device key: the device exists and
// the signer type can sign on one. A simulated signer takes the device's
// profile (its own profile key is refused by resolveSigner).
func (d *decoder) resolveSignerDevice(key string, sp *SignerPlan, name *string, devices deviceSet) {
	k := key + ".device"
	if name == nil || d.failed(k) {
		return
	}
	switch {
	case sp.Type == SignerLedger && (*name == LedgerHID || *name == LedgerEmulator) && !devices.has(*name):
		d.fail(d.valuePos(k), k, fmt.Sprintf("device names a shared signing device of the top-level devices; the Ledger's hid|emulator choice is now \"connection: %s\"", *name))
		return
	case !contains(deviceSignerTypes, sp.Type):
		d.fail(d.keyPos(k), k, fmt.Sprintf("only for types %s: a %s key signs in valnet's own process, not on a device", strings.Join(deviceSignerTypes, ", "), sp.Type))
		return
	case len(devices.defined) == 0:
		d.fail(d.valuePos(k), k, fmt.Sprintf("unknown device %q: no devices are defined; define it under the top-level devices key, e.g. devices: {%s: {profile: yubihsm2}}", *name, *name))
		return
	case !devices.has(*name):
		d.fail(d.valuePos(k), k, fmt.Sprintf("unknown device %q", *name)+didYouMean(*name, devices.defined), devices.defined...)
		return
	}
	sp.Device = *name
	devices.used[*name] = true
	if sp.Type != SignerSimulated {
		return
	}
	dp := devices.plans[*name]
	switch {
	case d.written(key + ".profile"):
		pk := key + ".profile"
		d.fail(d.keyPos(pk), pk, fmt.Sprintf("a simulated signer on a device takes the device's profile; leave profile out (set devices.%s.profile instead)", *name))
	case dp.Profile == "":
		if !d.failed("devices." + *name) {
			d.fail(d.valuePos(k), k, fmt.Sprintf("device %s has no profile, and a simulated signer on it takes its time from the device's profile: set devices.%s.profile (e.g. yubihsm2)", *name, *name))
		}
	default:
		sp.Profile = dp.Profile
	}
}

// checkDevicesUsed refuses a device that does nothing: no signer joins it
// and it has no background load.
func (d *decoder) checkDevicesUsed(devices deviceSet) {
	for _, name := range devices.defined {
		key := "devices." + name
		if devices.used[name] || devices.plans[name].Background != nil || d.failed(key) {
			continue
		}
		d.fail(d.keyPos(key), key, fmt.Sprintf("no signer uses this device and it has no background load, so it would do nothing: join it with device: %s in a signer (simulated, pkcs11 or ledger), give it background, or remove it", name))
	}
}
