package scenarios

import (
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/valnet/valnet/internal/cmtversion"
)

// Closed sets of signer values, in documentation order. Signer types are
// in resolve.go, beside the planned ones.
var (
	keyTypes     = []string{KeyEd25519, KeySecp256k1}
	vias         = []string{ViaDirect, ViaTCP, ViaUnix}
	decryptModes = []string{DecryptEverySign, DecryptOnce}
	provisions   = []string{ProvisionSoftHSM}
)

// PINs are refused as keys, like passphrases.
func init() {
	for _, k := range []string{"pin", "user_pin", "so_pin"} {
		unknownKeyHints[reflect.TypeFor[rawSigner]()][k] = "PINs never go in a scenario; use pin_env or pin_file"
	}
}

// Keyfile defaults and bcrypt's own limits on the cost.
const (
	defaultBcryptCost = 12
	minBcryptCost     = 4
	maxBcryptCost     = 31
)

// signerTypeKeys are the signer keys that belong to one signer type; every
// other key of rawSigner applies to any type. TestSignerKeysCovered keeps
// this table in step with rawSigner's yaml tags.
var signerTypeKeys = map[string][]string{
	SignerKeyfile:   {"path", "decrypt", "bcrypt_cost", "passphrase_env", "passphrase_file"},
	SignerSimulated: {"profile"},
	SignerPKCS11:    {"module", "token", "slot", "key", "pin_env", "pin_file", "provision"},
	SignerLedger:    {"connection", "serial", "chunk_size", "confirm_delay", "host_stall", "wire", "device_sign"},
	SignerExternal:  {"address", "wait", "identity"},
	SignerThreshold: {"cosigners", "threshold", "links", "regions", "timeout"},
}

// envNamePattern is what a POSIX shell accepts as a variable name.
var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// PKCS#11 token labels are at most 32 bytes (CK_TOKEN_INFO.label). A
// provisioned token's label also names its PIN file, hence the alphabet.
const maxTokenLabel = 32

var provisionLabelPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

func (d *decoder) resolveSigner(key string, rs *rawSigner, profiles profileSet, devices deviceSet) SignerPlan {
	sp := SignerPlan{Type: SignerLocal, KeyType: KeyEd25519, Via: ViaDirect, CPUScale: 1}
	if rs == nil {
		return sp
	}
	typeOK := !d.failed(key + ".type")
	if rs.Type != nil {
		sp.Type = *rs.Type
		typeOK = d.checkChoice(key+".type", "signer type", sp.Type, signerTypes, plannedSignerTypes)
	}
	if rs.KeyType != nil {
		sp.KeyType = *rs.KeyType
		d.checkChoice(key+".key_type", "key type", sp.KeyType, keyTypes, nil)
	}
	if rs.Via != nil {
		sp.Via = *rs.Via
		d.checkChoice(key+".via", "transport", sp.Via, vias, nil)
	}
	sp.Latency = d.resolveLatency(key+".latency", rs.Latency)
	if rs.CPUScale != nil {
		sp.CPUScale = *rs.CPUScale
		if sp.CPUScale <= 0 {
			k := key + ".cpu_scale"
			d.fail(d.valuePos(k), k, fmt.Sprintf("must be greater than 0, got %g: it multiplies the time software signing takes (1: this machine; 10: a host ten times slower, such as a Raspberry Pi)", sp.CPUScale))
		}
	}
	if rs.Link != nil {
		sp.Link = d.resolveSignerLink(key+".link", rs, sp)
	}
	if rs.Dialect != nil && *rs.Dialect != "auto" {
		k := key + ".dialect"
		if l, err := cmtversion.Lookup(*rs.Dialect); err != nil {
			d.fail(d.valuePos(k), k, fmt.Sprintf("unknown privval dialect %q: auto, or the CometBFT line whose layout to speak", *rs.Dialect), "auto", "v0.38", "v1")
		} else {
			sp.Dialect = l.Dialect
		}
	}
	if !typeOK {
		return sp // the type's own keys cannot be judged against a type we do not know
	}
	for _, t := range signerTypes {
		if t == sp.Type {
			continue
		}
		for _, k := range signerTypeKeys[t] {
			if k := key + "." + k; d.written(k) {
				d.fail(d.keyPos(k), k, fmt.Sprintf("only for type %s; this signer is type %s", t, sp.Type))
			}
		}
	}
	switch sp.Type {
	case SignerKeyfile:
		sp.Keyfile = d.resolveKeyfile(key, rs)
	case SignerSimulated:
		if rs.Device == nil {
			sp.Profile = d.resolveSignerProfile(key, rs.Profile, profiles)
		}
	case SignerPKCS11:
		sp.PKCS11 = d.resolvePKCS11(key, rs, sp.KeyType)
	case SignerLedger:
		sp.Ledger = d.resolveLedger(key, rs, sp.KeyType)
	case SignerExternal:
		sp.External = d.resolveExternal(key, rs)
		return sp
	case SignerThreshold:
		sp.Threshold = d.resolveThreshold(key, rs, sp.KeyType)
		return sp
	}
	d.resolveSignerDevice(key, &sp, rs.Device, devices)
	return sp
}

// resolveSignerLink reads a signer link; it needs via tcp (the node and
// its signer then talk over TCP, which the fabric shapes).
func (d *decoder) resolveSignerLink(key string, rs *rawSigner, sp SignerPlan) *LinkPlan {
	rl, via := rs.Link, sp.Via
	l := &LinkPlan{Latency: d.resolveLatencyNoPhases(key+".latency", rl.Latency, linkLatencyNoPhases),
		Bandwidth: d.resolveBandwidth(key+".bandwidth", rl.Bandwidth)}
	if rl.Jitter != nil {
		l.Jitter = *rl.Jitter // >= 0: the decoder refuses a negative duration
	}
	switch {
	case sp.Type == SignerExternal:
		// The address's scheme is an external signer's transport.
		if rs.Address != nil && !strings.HasPrefix(*rs.Address, "tcp://") {
			d.fail(d.keyPos(key), key, fmt.Sprintf("a signer link needs a tcp:// address (your signer dials it through the link fabric); this signer's address is %s", *rs.Address))
		}
	case via != ViaTCP:
		d.fail(d.keyPos(key), key, fmt.Sprintf("a signer link needs via: tcp (the node and its signer talk over TCP through the link fabric); this signer is via %s", via))
	}
	return l
}

// resolveKeyfile applies the keyfile defaults and checks its keys.
func (d *decoder) resolveKeyfile(key string, rs *rawSigner) *KeyfilePlan {
	kp := &KeyfilePlan{Decrypt: DecryptEverySign, BcryptCost: defaultBcryptCost}
	if rs.Path != nil {
		if k := key + ".path"; *rs.Path == "" {
			d.fail(d.valuePos(k), k, "must not be empty; remove the key to keep the key file in the validator's home")
		} else {
			kp.Path = d.filePath(*rs.Path)
		}
	}
	if rs.Decrypt != nil {
		kp.Decrypt = *rs.Decrypt
		d.checkChoice(key+".decrypt", "decrypt mode", kp.Decrypt, decryptModes, nil)
	}
	if rs.BcryptCost != nil {
		k := key + ".bcrypt_cost"
		if c := *rs.BcryptCost; c < minBcryptCost || c > maxBcryptCost {
			d.fail(d.valuePos(k), k, fmt.Sprintf("must be between %d and %d (bcrypt's limits), got %d", minBcryptCost, maxBcryptCost, c))
		} else {
			kp.BcryptCost = int(c)
		}
	}
	kp.PassphraseEnv, kp.PassphraseFile = d.secretKeys(key, "passphrase", "passphrase_env", "passphrase_file",
		rs.PassphraseEnv, rs.PassphraseFile,
		"type keyfile needs the key file's passphrase: set passphrase_env (the name of an environment variable holding it) or passphrase_file (a file holding it)")
	return kp
}

// resolvePKCS11 checks a pkcs11 signer's keys. With provision: softhsm
// the run creates the token, so only module, token and key may be given
// (the token's default, "valnet-<validator>", is applied per validator by
// the runner); without it the token, key and PIN source must be named.
func (d *decoder) resolvePKCS11(key string, rs *rawSigner, keyType string) *PKCS11Plan {
	pp := &PKCS11Plan{}
	if k := key + ".key_type"; d.written(k) && keyType != KeyEd25519 && !d.failed(k) {
		d.fail(d.valuePos(k), k, "type pkcs11 signs with Ed25519 only (CKM_EDDSA); remove key_type")
	}
	written := false
	for _, k := range signerTypeKeys[SignerPKCS11] {
		written = written || d.written(key+"."+k)
	}
	if !written { // one message rather than one per missing key
		d.fail(d.valuePos(key), key, "type pkcs11 needs a token and key: provision: softhsm (the run makes a throwaway SoftHSM2 token), or module, token (or slot), key, and pin_env (or pin_file)")
		return pp
	}
	provision := d.written(key + ".provision")
	if rs.Provision != nil && d.checkChoice(key+".provision", "provisioning", *rs.Provision, provisions, nil) {
		pp.Provision = *rs.Provision
	}
	const provisionNote = "not with provision: softhsm"
	if rs.Module != nil {
		if k := key + ".module"; *rs.Module == "" {
			d.fail(d.valuePos(k), k, "must not be empty: the path of the token's PKCS#11 library")
		} else {
			pp.Module = d.filePath(*rs.Module)
		}
	} else if !provision {
		d.fail(d.valuePos(key), key+".module", "required for type pkcs11: the path of the token's PKCS#11 library, e.g. /usr/lib/softhsm/libsofthsm2.so (or provision: softhsm for a throwaway SoftHSM2 token)")
	}

	tokenKey, slotKey := key+".token", key+".slot"
	hasToken, hasSlot := d.written(tokenKey), d.written(slotKey)
	switch {
	case hasToken && hasSlot:
		later := d.laterKey(tokenKey, slotKey)
		d.fail(d.keyPos(later), later, "give only one of token and slot")
	case !hasToken && !hasSlot && !provision:
		d.fail(d.valuePos(key), tokenKey, "type pkcs11 needs its token: set token (the token's label) or slot (its number)")
	}
	if rs.Token != nil {
		pp.Token = *rs.Token
		switch l := pp.Token; {
		case l == "":
			d.fail(d.valuePos(tokenKey), tokenKey, "must not be empty: the token's label")
		case len(l) > maxTokenLabel:
			d.fail(d.valuePos(tokenKey), tokenKey, fmt.Sprintf("%q is %d bytes long; PKCS#11 token labels have at most %d", l, len(l), maxTokenLabel))
		case provision && !provisionLabelPattern.MatchString(l):
			d.fail(d.valuePos(tokenKey), tokenKey, fmt.Sprintf("%q cannot name a provisioned token: use letters, digits, '.', '_' and '-', starting with a letter or digit (it also names the PIN file)", l))
		}
	}
	if rs.Slot != nil {
		switch v := *rs.Slot; {
		case provision:
			d.fail(d.keyPos(slotKey), slotKey, provisionNote+": the run creates its own token (name it with token)")
		case v < 0 || v > math.MaxUint32:
			d.fail(d.valuePos(slotKey), slotKey, fmt.Sprintf("must be between 0 and %d, got %d", uint32(math.MaxUint32), v))
		default:
			pp.Slot, pp.HasSlot = uint(v), true
		}
	}

	keyKey := key + ".key"
	switch {
	case rs.Key != nil && *rs.Key == "":
		d.fail(d.valuePos(keyKey), keyKey, "must not be empty: the label (CKA_LABEL) of the signing key")
	case rs.Key != nil:
		pp.Key = *rs.Key
	case provision:
		pp.Key = defaultPKCS11Key
	default:
		d.fail(d.valuePos(key), keyKey, "required for type pkcs11: the label (CKA_LABEL) of the Ed25519 signing key on the token")
	}

	if provision {
		for _, k := range []string{key + ".pin_env", key + ".pin_file"} {
			if d.written(k) {
				d.fail(d.keyPos(k), k, provisionNote+": the run gives its throwaway token a random PIN (kept in the run directory)")
			}
		}
		return pp
	}
	pp.PinEnv, pp.PinFile = d.secretKeys(key, "PIN", "pin_env", "pin_file", rs.PinEnv, rs.PinFile,
		"type pkcs11 needs the token's PIN: set pin_env (the name of an environment variable holding it) or pin_file (a file holding it); PINs never go in a scenario")
	return pp
}

// defaultPKCS11Key is the key label of a provisioned token.
const defaultPKCS11Key = "consensus"

// filePath resolves a path written in the scenario against the scenario
// file's directory. Absolute paths, and every path when there is no file
// (a builtin, or Parse), are kept as written.
func (d *decoder) filePath(p string) string {
	if d.dir == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(d.dir, p)
}

// resolveSignerProfile checks a simulated signer's profile name.
func (d *decoder) resolveSignerProfile(key string, name *string, profiles profileSet) string {
	k := key + ".profile"
	switch {
	case d.failed(k):
		return ""
	case name == nil:
		d.fail(d.valuePos(key), k, "required for type simulated: the device profile to simulate, built-in or defined under the top-level profiles key", profiles.allowed()...)
		return ""
	case !profiles.has(*name):
		msg := fmt.Sprintf("unknown profile %q", *name) + didYouMean(*name, profiles.allowed())
		d.fail(d.valuePos(k), k, msg, profiles.allowed()...)
	}
	return *name
}

// clone gives each expanded validator its own latency model and key file
// settings, so that a change to one validator's plan cannot leak into its
// siblings.
func (s SignerPlan) clone() SignerPlan {
	if s.Latency != nil {
		s.Latency = s.Latency.clone()
	}
	if s.Keyfile != nil {
		k := *s.Keyfile
		s.Keyfile = &k
	}
	if s.PKCS11 != nil {
		p := *s.PKCS11
		s.PKCS11 = &p
	}
	if s.Ledger != nil {
		l := *s.Ledger
		s.Ledger = &l
	}
	if s.External != nil {
		e := *s.External
		s.External = &e
	}
	return s
}

// clone copies a latency model, phases included.
func (l *LatencyPlan) clone() *LatencyPlan {
	c := *l
	c.Phases = slices.Clone(l.Phases)
	return &c
}

// before reports whether a comes before b in the file.
func before(a, b Pos) bool {
	return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
}

// secretKeys checks where a signer's secret comes from: exactly one of
// the two keys (envName, fileName under key), a real variable name, a
// file that is named. needs is the message when neither is written. The
// secret itself is read only at run time (internal/secret).
func (d *decoder) secretKeys(key, what, envName, fileName string, env, file *string, needs string) (envVar, path string) {
	envKey, fileKey := key+"."+envName, key+"."+fileName
	switch hasEnv, hasFile := d.written(envKey), d.written(fileKey); {
	case hasEnv && hasFile:
		later := d.laterKey(envKey, fileKey)
		d.fail(d.keyPos(later), later, fmt.Sprintf("give only one of %s and %s", envName, fileName))
	case !hasEnv && !hasFile:
		d.fail(d.valuePos(key), key, needs)
	}
	if env != nil {
		envVar = *env
		if !envNamePattern.MatchString(envVar) {
			d.fail(d.valuePos(envKey), envKey, fmt.Sprintf("%q is not an environment variable name: use letters, digits and '_', not starting with a digit (the variable holds the %s; the scenario only names it)", envVar, what))
		}
	}
	if file != nil {
		if *file == "" {
			d.fail(d.valuePos(fileKey), fileKey, "must not be empty: name the file that holds the "+what)
		} else {
			path = d.filePath(*file)
		}
	}
	return envVar, path
}
