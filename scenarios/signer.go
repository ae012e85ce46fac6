package scenarios

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
)

// Closed sets of signer values, in documentation order. Signer types are
// in resolve.go, beside the planned ones.
var (
	keyTypes     = []string{KeyEd25519, KeySecp256k1}
	vias         = []string{ViaDirect, ViaTCP, ViaUnix}
	decryptModes = []string{DecryptEverySign, DecryptOnce}
)

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
}

// envNamePattern is what a POSIX shell accepts as a variable name.
var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (d *decoder) resolveSigner(key string, rs *rawSigner, profiles profileSet) SignerPlan {
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
		sp.Profile = d.resolveSignerProfile(key, rs.Profile, profiles)
	}
	return sp
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
	envKey, fileKey := key+".passphrase_env", key+".passphrase_file"
	switch hasEnv, hasFile := d.written(envKey), d.written(fileKey); {
	case hasEnv && hasFile:
		later := fileKey
		if before(d.keyPos(fileKey), d.keyPos(envKey)) {
			later = envKey
		}
		d.fail(d.keyPos(later), later, "give only one of passphrase_env and passphrase_file")
	case !hasEnv && !hasFile:
		d.fail(d.valuePos(key), key, "type keyfile needs the key file's passphrase: set passphrase_env (the name of an environment variable holding it) or passphrase_file (a file holding it)")
	}
	if rs.PassphraseEnv != nil {
		kp.PassphraseEnv = *rs.PassphraseEnv
		if !envNamePattern.MatchString(kp.PassphraseEnv) {
			d.fail(d.valuePos(envKey), envKey, fmt.Sprintf("%q is not an environment variable name: use letters, digits and '_', not starting with a digit (the variable holds the passphrase; the scenario only names it)", kp.PassphraseEnv))
		}
	}
	if rs.PassphraseFile != nil {
		if *rs.PassphraseFile == "" {
			d.fail(d.valuePos(fileKey), fileKey, "must not be empty: name the file that holds the passphrase")
		} else {
			kp.PassphraseFile = d.filePath(*rs.PassphraseFile)
		}
	}
	return kp
}

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
		msg := fmt.Sprintf("unknown profile %q", *name)
		if s := suggest(*name, profiles.allowed()); s != "" {
			msg += fmt.Sprintf("; did you mean %q?", s)
		}
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
