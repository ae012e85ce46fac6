package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/valnet/valnet/scenarios"
	"github.com/valnet/valnet/signers"
	"github.com/valnet/valnet/signers/pkcs11"
)

// Problem is something a run of the plan would fail on, found before
// anything starts: an unset environment variable, a missing file, an
// engine that does not answer.
type Problem struct {
	Key     string // the scenario key, e.g. validators[slow].signer.passphrase_env
	Message string
	// Pos is where the key was written, when the plan kept it (node.config
	// entries, which only the node binary can check).
	Pos scenarios.Pos
}

func (p Problem) String() string {
	if p.Pos.File != "" {
		return p.Pos.String() + ": " + p.Key + ": " + p.Message
	}
	return p.Key + ": " + p.Message
}

// Problems is every problem Preflight found.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return "the run cannot start:\n  " + strings.Join(lines, "\n  ")
}

// Preflight checks what the scenario alone cannot: the machine it is about
// to run on (secrets in the environment or files, PKCS#11 modules, node
// binaries, the backend's engine). valnet validate prints these as
// warnings; valnet run refuses to start, before any run directory exists.
// It reads secrets with the same functions the signers use, so it accepts
// and refuses exactly what the run would, and forgets them at once.
func Preflight(ctx context.Context, plan *scenarios.Plan) Problems {
	var ps Problems
	add := func(key string, err error) {
		if err != nil {
			ps = append(ps, Problem{Key: key, Message: err.Error()})
		}
	}
	if check := backendChecks[plan.Run.Backend]; check != nil {
		add("run.backend", check(ctx, plan))
	}
	binaryOK := map[string]bool{}
	if b := plan.Node.Binary; b != "" {
		err := checkBinary(b)
		add("node.binary", err)
		binaryOK[b] = err == nil
	}
	if plan.App != nil {
		add("app.command", checkExecutable(plan.App.Command[0], "app command"))
	}
	for _, v := range plan.Validators {
		at := "validators[" + v.Name + "]"
		if b := v.Node.Binary; b != "" {
			if _, seen := binaryOK[b]; !seen {
				err := checkBinary(b)
				add(at+".node.binary", err)
				binaryOK[b] = err == nil
			}
		}
		s := v.Signer
		if e := s.External; e != nil {
			add(at+".signer.address", checkExternalAddress(e))
		}
		if k := s.Keyfile; k != nil {
			key := at + ".signer.passphrase_file"
			if k.PassphraseEnv != "" {
				key = at + ".signer.passphrase_env"
			}
			add(key, forget(signers.ReadPassphrase(k.PassphraseEnv, k.PassphraseFile)))
		}
		if p := s.PKCS11; p != nil {
			if p.Module != "" {
				add(at+".signer.module", checkFile(p.Module, "PKCS#11 module"))
			} else if p.Provision == scenarios.ProvisionSoftHSM {
				_, err := pkcs11.FindSoftHSM()
				add(at+".signer.provision", err)
			}
			if p.Provision != scenarios.ProvisionSoftHSM {
				key := at + ".signer.pin_file"
				if p.PinEnv != "" {
					key = at + ".signer.pin_env"
				}
				add(key, forget(pkcs11.ReadPIN(p.PinEnv, p.PinFile)))
			}
		}
	}
	if !slices.Contains(slices.Collect(maps.Values(binaryOK)), false) {
		_, fps := resolveFlavors(ctx, plan)
		ps = append(ps, fps...)
	}
	return ps
}

// forget drops a secret read only to see that it can be.
func forget(secret []byte, err error) error {
	clear(secret)
	return err
}

// cause is what a path error says without repeating the path.
func cause(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}

func checkFile(path, what string) error {
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Errorf("%s %s: %w", what, path, cause(err))
	case st.IsDir():
		return fmt.Errorf("%s %s is a directory", what, path)
	}
	return nil
}

// checkBinary: a node binary given by path must exist and be executable;
// a bare name must be on PATH.
func checkBinary(bin string) error { return checkExecutable(bin, "node binary") }

// checkExecutable: what (a node binary, an app command) given by path
// must exist and be executable; a bare name must be on PATH.
func checkExecutable(bin, what string) error {
	if !strings.Contains(bin, "/") {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s %s: not found on PATH", what, bin)
		}
		return nil
	}
	if err := checkFile(bin, what); err != nil {
		return err
	}
	if st, _ := os.Stat(bin); st.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s %s is not executable (chmod +x)", what, bin)
	}
	return nil
}
