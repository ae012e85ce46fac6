package profiles

import (
	"fmt"
	"sort"
	"time"

	"github.com/valnet/valnet/latency"
)

const ms = time.Millisecond

// Where the numbers come from. The seeds are the articles under
// /work/shared/seeds; the text names the original publication so a reader
// can check it without them.
const (
	srcGnokms = "seeds/000: gnokms signing-latency benchmark (gno val-scenarios, branch chore/ledger-benchmarks)"
	srcPQ     = "seeds/001: Blockstream Research, \"Hardware wallets can generate post-quantum signatures\" " +
		"(blog.blockstream.com/hardware-wallets-post-quantum-signatures), SigGen table, mean of 100 runs"
)

// base holds the hand-written profiles; the post-quantum grid is added by
// init from pqSchemes x pqDevices.
var base = []Profile{
	{
		Name: "yubihsm2",
		Description: "MODEL of a YubiHSM 2 signing EdDSA-25519 on-device, time by payload size " +
			"(vendor averages; no host, connector or PKCS#11 overhead)",
		Source: "Yubico YubiHSM 2 performance table, EdDSA-25519 average signing duration by payload, " +
			"as quoted in " + srcGnokms,
		ByPayload: []Point{
			{32, 105 * ms}, {64, 121 * ms}, {128, 137 * ms},
			{256, 168 * ms}, {512, 229 * ms}, {1024, 353 * ms},
		},
	},
	{
		Name: "ledger-nano-s-plus",
		Description: "MODEL of a Ledger Nano S Plus signing Ed25519 through gnokms with large-chunk APDUs " +
			"(on-device ~525 ms + ~51 ms host stall + ~3 ms wire per exchange)",
		// The published per-phase averages are 527-584 ms (range ~526-602);
		// a lognormal with p50 550 / p99 605 covers them with a right tail,
		// as device stalls are. The per-phase differences are not modelled.
		Source: srcGnokms + ": gnokms+ledger table after increasing the APDU chunk size " +
			"(proposal ~565, prevote ~584, precommit ~527 ms) and the Wireshark breakdown; " +
			"Ledger Nano S Plus, firmware 1.6.0, app gnoverse/tm-ledger-validator, USB HID via zondax/ledger-go",
		Latency: &latency.Spec{Dist: latency.Lognormal, P50: 550 * ms, P99: 605 * ms},
	},
	{
		Name: "gnokey-bcrypt12",
		Description: "MODEL of gnokms+gnokey signing with an encrypted key file, " +
			"one bcrypt cost-12 key decryption per signature on the author's CPU",
		// The time is bcrypt on the publishing author's host; a slower host
		// (or this machine, bcrypt-12 ~266 ms here) would differ.
		Source: srcGnokms + ": gnokms+gnokey table (proposal ~197, prevote ~193-196, precommit ~173-186 ms; " +
			"bcrypt cost 12 ~174 ms/op), tm2 crypto/keys/armor bcryptSecurityParameter = 12",
		Latency: &latency.Spec{Dist: latency.Lognormal, P50: 190 * ms, P99: 200 * ms},
	},
}

// pqScheme is one row of the seeds/001 SigGen table.
type pqScheme struct {
	name, long string
	// times per device, in pqDevices order: Jade, Trezor, Ledger, BitBox02.
	times [4]time.Duration
}

type pqDevice struct{ name, long string }

var pqDevices = [4]pqDevice{
	{"jade", "Blockstream Jade Plus"},
	{"trezor", "Trezor Safe 3"},
	{"ledger", "Ledger Nano (gen5/S+)"},
	{"bitbox02", "BitBox02 Nova"},
}

var pqSchemes = []pqScheme{
	{"slh-dsa-128s", "SLH-DSA-SHA2-128s (FIPS 205, 7856 B signature)",
		[4]time.Duration{52850 * ms, 65310 * ms, 120120 * ms, 100100 * ms}},
	{"sphincs-2e40", "SPHINCS+ with 2^40 signatures (5776 B signature)",
		[4]time.Duration{43280 * ms, 53450 * ms, 94980 * ms, 78400 * ms}},
	{"shrincs-l", "SHRINCS-L stateful part, swn=96 (1092 B signature)",
		[4]time.Duration{3310 * ms, 3010 * ms, 8040 * ms, 5500 * ms}},
	{"uxmss-shrincs-l-140", "UXMSS SHRINCS-L stateful part, swn=140 (1092 B signature)",
		[4]time.Duration{225630 * ms, 264740 * ms, 572780 * ms, 334600 * ms}},
	{"shrincs-b", "UXMSS SHRINCS-B stateful part (324 B signature)",
		[4]time.Duration{21750 * ms, 25820 * ms, 41830 * ms, 30900 * ms}},
	{"xmss-2e10", "XMSS with 2^10 signatures (696 B signature)",
		[4]time.Duration{57800 * ms, 75630 * ms, 118200 * ms, 79600 * ms}},
}

// pqSpread is the assumed relative standard deviation of the post-quantum
// profiles: the article published only means, so the spread is a guess.
const pqSpread = 0.02

var catalog = map[string]Profile{}

func init() {
	for _, p := range base {
		add(p)
	}
	for _, s := range pqSchemes {
		for i, d := range pqDevices {
			mean := s.times[i]
			add(Profile{
				Name: s.name + "-" + d.name,
				Description: fmt.Sprintf("MODEL of %s signing %s on-device, cold mode (no caching); time only",
					d.long, s.long),
				Source: fmt.Sprintf("%s: %s on %s = %v. Only means were published: the 2%% stddev is assumed",
					srcPQ, s.long, d.long, mean),
				Latency: &latency.Spec{Dist: latency.Normal, Mean: mean, Stddev: time.Duration(float64(mean) * pqSpread)},
			})
		}
	}
}

func add(p Profile) {
	if _, dup := catalog[p.Name]; dup {
		panic("profiles: duplicate built-in " + p.Name)
	}
	if err := p.Validate(); err != nil {
		panic("profiles: bad built-in: " + err.Error())
	}
	catalog[p.Name] = p
}

// Builtin returns the built-in profile called name (a copy: changing it
// does not change the catalog).
func Builtin(name string) (Profile, bool) {
	p, ok := catalog[name]
	if !ok {
		return Profile{}, false
	}
	return p.clone(), true
}

// Builtins returns every built-in profile, sorted by name.
func Builtins() []Profile {
	out := make([]Profile, 0, len(catalog))
	for _, n := range Names() {
		out = append(out, catalog[n].clone())
	}
	return out
}

// Names returns the names of the built-in profiles, sorted.
func Names() []string {
	names := make([]string, 0, len(catalog))
	for n := range catalog {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
