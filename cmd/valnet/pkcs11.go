package main

import (
	"encoding/base64"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"

	"github.com/cometbft/cometbft/crypto"
	"github.com/spf13/cobra"

	"github.com/valnet/valnet/signers/pkcs11"
)

func init() { commands = append(commands, newPKCS11Cmd) }

func newPKCS11Cmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pkcs11",
		Short: "Look into PKCS#11 tokens (HSMs, SoftHSM2) and make Ed25519 validator keys in them",
		Long: `Commands for the tokens a pkcs11 signer uses (docs/pkcs11.md).

--module is the token's PKCS#11 library; without it, the SoftHSM2 module
installed on this host. SoftHSM2 finds its tokens through SOFTHSM2_CONF: to
look into the tokens a run provisioned, set it to <run>/hsm/softhsm2.conf.
A PIN is read from --pin-env (an environment variable's name) or --pin-file,
never from the command line.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newPKCS11ListCmd(), newPKCS11KeygenCmd())
	return cmd
}

// pkcs11Flags are the flags both subcommands take.
type pkcs11Flags struct {
	module, token, pinEnv, pinFile string
	slot                           int64
}

func (f *pkcs11Flags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.module, "module", "", "the token's PKCS#11 library (default: the SoftHSM2 module on this host)")
	fl.StringVar(&f.token, "token", "", "the token's label")
	fl.Int64Var(&f.slot, "slot", -1, "the token's slot number, instead of --token")
	fl.StringVar(&f.pinEnv, "pin-env", "", "name of the environment variable holding the user PIN")
	fl.StringVar(&f.pinFile, "pin-file", "", "file holding the user PIN (mode 0600)")
}

// config turns the flags into a token config; the PIN is read only when
// needPIN or a PIN source is given.
func (f *pkcs11Flags) config(needPIN bool) (pkcs11.Config, error) {
	cfg := pkcs11.Config{Module: f.module, Token: f.token}
	if cfg.Module == "" {
		m, err := pkcs11.FindSoftHSM()
		if err != nil {
			return cfg, fmt.Errorf("--module: name the token's PKCS#11 library (%v)", err)
		}
		cfg.Module = m
	}
	switch {
	case f.slot >= 0 && f.token != "":
		return cfg, fmt.Errorf("give --token or --slot, not both")
	case f.slot > math.MaxUint32:
		return cfg, fmt.Errorf("--slot %d is out of range", f.slot)
	case f.slot >= 0:
		cfg.Slot, cfg.HasSlot = uint(f.slot), true
	}
	switch {
	case f.pinEnv != "" && f.pinFile != "":
		return cfg, fmt.Errorf("give --pin-env or --pin-file, not both")
	case f.pinEnv != "":
		v := os.Getenv(f.pinEnv)
		if v == "" {
			return cfg, fmt.Errorf("--pin-env %s: the variable is not set", f.pinEnv)
		}
		cfg.PIN = []byte(v)
	case f.pinFile != "":
		pin, err := pkcs11.ReadPIN("", f.pinFile)
		if err != nil {
			return cfg, fmt.Errorf("--pin-file: %w", err)
		}
		cfg.PIN = pin
	case needPIN:
		return cfg, fmt.Errorf("the token's PIN is needed: give --pin-env VAR or --pin-file FILE")
	}
	return cfg, nil
}

func newPKCS11ListCmd() *cobra.Command {
	var f pkcs11Flags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List a module's slots, tokens and keys",
		Long: `Lists the slots of a PKCS#11 module, the token in each, and the token's
objects (class, label, key type; for Ed25519 public keys the key and the
CometBFT address it gives). Without a PIN, only public objects are shown.
A PIN is tried on one token only, --token or --slot, or the only initialised
token: every wrong PIN counts towards locking a real token.`,
		Example: `  valnet pkcs11 list
  SOFTHSM2_CONF=runs/hsm-vs-local-<time>/hsm/softhsm2.conf valnet pkcs11 list \
      --token valnet-hsm --pin-file runs/hsm-vs-local-<time>/hsm/valnet-hsm.pin
  valnet pkcs11 list --module /usr/lib/x86_64-linux-gnu/pkcs11/yubihsm_pkcs11.so --slot 0 --pin-env YUBIHSM_PIN`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.config(false)
			if err != nil {
				return &exitError{exitBadInput, err}
			}
			token := cfg.Token
			if cfg.HasSlot && len(cfg.PIN) > 0 {
				// List logs in by label: find the label of the slot's token.
				slots, err := pkcs11.List(cfg.Module, "", nil)
				if err != nil {
					return &exitError{exitBadInput, err}
				}
				token = ""
				for _, s := range slots {
					if s.ID == cfg.Slot && s.HasToken && s.Token.Initialized {
						token = s.Token.Label
					}
				}
				if token == "" {
					return &exitError{exitBadInput, fmt.Errorf("no initialised token in slot %d of %s", cfg.Slot, cfg.Module)}
				}
			}
			slots, err := pkcs11.List(cfg.Module, token, cfg.PIN)
			if err != nil {
				return &exitError{exitBadInput, err}
			}
			printSlots(cmd.OutOrStdout(), cfg.Module, slots)
			return nil
		},
	}
	f.register(cmd)
	return cmd
}

func printSlots(w io.Writer, module string, slots []pkcs11.SlotInfo) {
	fmt.Fprintf(w, "module %s: %d slot(s)\n", module, len(slots))
	for _, s := range slots {
		if !s.HasToken {
			fmt.Fprintf(w, "\nslot %d (%s): no token\n", s.ID, s.Description)
			continue
		}
		t := s.Token
		if !t.Initialized {
			fmt.Fprintf(w, "\nslot %d: token not initialised\n", s.ID)
			continue
		}
		eddsa := "no"
		if t.EdDSA {
			eddsa = "yes"
		}
		fmt.Fprintf(w, "\nslot %d: token %q (%s %s, serial %s), Ed25519 signing (CKM_EDDSA): %s", s.ID, t.Label, t.Manufacturer, t.Model, t.Serial, eddsa)
		if t.LoggedIn {
			fmt.Fprint(w, ", logged in")
		}
		fmt.Fprintln(w)
		if t.Note != "" {
			fmt.Fprintf(w, "  (%s)\n", t.Note)
		}
		if len(t.Objects) == 0 {
			fmt.Fprintln(w, "  no objects")
		}
		for _, o := range t.Objects {
			fmt.Fprintf(w, "  %-12s %-24q %s\n", o.Class, o.Label, o.KeyType)
			if o.PubKey != nil {
				printPubKey(w, "    ", "key", o.PubKey)
			}
		}
	}
}

// printPubKey prints an Ed25519 key as hex and as genesis.json has it,
// and the CometBFT address it gives, each line led by indent and a label.
func printPubKey(w io.Writer, indent, label string, pub crypto.PubKey) {
	fmt.Fprintf(w, "%s%-10s %X (base64, as in genesis.json: %s)\n", indent, label, pub.Bytes(), base64.StdEncoding.EncodeToString(pub.Bytes()))
	fmt.Fprintf(w, "%s%-10s %s\n", indent, "address", pub.Address())
}

func newPKCS11KeygenCmd() *cobra.Command {
	var (
		f   pkcs11Flags
		key string
	)
	cmd := &cobra.Command{
		Use:   "keygen",
		Short: "Generate an Ed25519 validator key pair on a token",
		Long: `Generates an Ed25519 key pair (CKM_EC_EDWARDS_KEY_PAIR_GEN) on an existing
token: the private key is sensitive and not extractable; both halves carry
the label --key. Prints the public key and the CometBFT address, and the
scenario keys that sign with it. A label that any object of the token
already has is refused: valnet never replaces a key.`,
		Example: `  valnet pkcs11 keygen --module /usr/lib/softhsm/libsofthsm2.so --token my-token --key consensus --pin-env HSM_PIN`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if key == "" {
				return &exitError{exitBadInput, fmt.Errorf("--key: name the key pair (its CKA_LABEL), e.g. --key consensus")}
			}
			if f.token == "" && f.slot < 0 {
				return &exitError{exitBadInput, fmt.Errorf("name the token: --token LABEL or --slot N")}
			}
			cfg, err := f.config(true)
			if err != nil {
				return &exitError{exitBadInput, err}
			}
			cfg.KeyLabel = key
			pub, err := pkcs11.Keygen(cfg)
			if err != nil {
				return &exitError{exitBadInput, err}
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "generated Ed25519 key pair %q on token %s\n", key, cfg.Name())
			printPubKey(w, "", "public key", pub)
			where := "token: " + yamlString(cfg.Token)
			if cfg.HasSlot {
				where = fmt.Sprintf("slot: %d", cfg.Slot)
			}
			pin := "pin_env: " + f.pinEnv
			if f.pinFile != "" {
				pin = "pin_file: " + yamlString(f.pinFile)
			}
			fmt.Fprintf(w, "scenario: signer: {type: pkcs11, module: %s, %s, key: %s, %s}\n", yamlString(cfg.Module), where, yamlString(key), pin)
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&key, "key", "", "label of the new key pair (CKA_LABEL)")
	return cmd
}

// plainYAML is what can stand unquoted in a YAML flow mapping.
var plainYAML = regexp.MustCompile(`^[A-Za-z0-9_./][A-Za-z0-9_./-]*$`)

// yamlString quotes s for a YAML flow mapping when it has to be.
func yamlString(s string) string {
	if plainYAML.MatchString(s) {
		return s
	}
	return strconv.Quote(s)
}
